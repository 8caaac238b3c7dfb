//! Themes (SPEC §11.5): named styles for every role on the screen. `default`, `light`
//! and `high-contrast` ship in `themes/` and are embedded; `<config dir>/themes/<name>.yaml`
//! patches the built-in of the same name (or `default` for a new name) style by style.
//! A bad file is reported and the built-in kept. `NO_COLOR` strips every color and keeps
//! the attributes, so focus and selection stay visible without color.

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use std::path::Path;
use std::str::FromStr;

pub const BUILTIN_THEMES: [(&str, &str); 3] = [
    ("default", include_str!("../../themes/default.yaml")),
    ("light", include_str!("../../themes/light.yaml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.yaml"),
    ),
];

/// One style as written in a theme file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StyleSpec {
    pub fg: Option<String>,
    pub bg: Option<String>,
    pub bold: bool,
    pub dim: bool,
    pub italic: bool,
    pub underlined: bool,
    pub reversed: bool,
}

impl StyleSpec {
    fn to_style(&self, role: &str) -> Result<Style, String> {
        let color = |c: &Option<String>, which: &str| -> Result<Option<Color>, String> {
            c.as_deref()
                .map(|s| {
                    Color::from_str(s.trim()).map_err(|_| {
                        format!(
                            "styles.{role}.{which}: unknown color `{s}`; expected a name (red, lightblue, darkgray, reset, …), an index 0-255, or #rrggbb"
                        )
                    })
                })
                .transpose()
        };
        let mut style = Style::default();
        if let Some(fg) = color(&self.fg, "fg")? {
            style = style.fg(fg);
        }
        if let Some(bg) = color(&self.bg, "bg")? {
            style = style.bg(bg);
        }
        for (on, m) in [
            (self.bold, Modifier::BOLD),
            (self.dim, Modifier::DIM),
            (self.italic, Modifier::ITALIC),
            (self.underlined, Modifier::UNDERLINED),
            (self.reversed, Modifier::REVERSED),
        ] {
            if on {
                style = style.add_modifier(m);
            }
        }
        Ok(style)
    }
}

macro_rules! theme_roles {
    ($($role:ident: $doc:literal,)*) => {
        /// Every styled role on the screen.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Theme {
            pub name: String,
            /// `NO_COLOR` applied: pane captures lose their colors too.
            pub colorless: bool,
            $(#[doc = $doc] pub $role: Style,)*
        }

        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct RawStyles {
            $(#[serde(default)] $role: Option<StyleSpec>,)*
        }

        impl Theme {
            /// The names of every role, as written under `styles:`.
            pub const ROLES: &'static [&'static str] = &[$(stringify!($role),)*];

            fn patch(&mut self, raw: RawStyles) -> Result<(), String> {
                $(if let Some(spec) = raw.$role {
                    self.$role = spec.to_style(stringify!($role))?;
                })*
                Ok(())
            }

            /// Every role's style, in declaration order (for tests and NO_COLOR).
            pub fn styles_mut(&mut self) -> Vec<&mut Style> {
                vec![$(&mut self.$role,)*]
            }

            /// Every role unstyled: the base a built-in file fills in.
            fn plain(name: &str) -> Self {
                Theme { name: name.to_string(), colorless: false, $($role: Style::default(),)* }
            }

            fn missing(raw: &RawStyles) -> Vec<&'static str> {
                let mut out = Vec::new();
                $(if raw.$role.is_none() { out.push(stringify!($role)); })*
                out
            }
        }
    };
}

theme_roles! {
    text: "Ordinary text.",
    dim: "Secondary text: counts, hints, placeholders, dimmed rows.",
    accent: "Refs and highlights.",
    ok: "Success: ✓, ok runs, healthy poll.",
    warn: "Warnings: old questions, unsigned webhooks, low rate limit.",
    error: "Failures.",
    status_bar: "The top status line's base.",
    brand: "`the-loop` and the role in the status line.",
    border: "Pane borders.",
    border_focused: "The focused pane's border.",
    title: "Pane titles.",
    title_focused: "The focused pane's title.",
    selected: "The selected row in the focused pane.",
    selected_unfocused: "The selected row in other panes.",
    working: "Session state: working.",
    idle: "Session state: idle.",
    awaiting: "Session state: awaiting input.",
    paused: "Session state: paused.",
    dead: "Session state: dead.",
    no_session: "A watched item without a session.",
    ev_routed: "Events: routed.",
    ev_dropped: "Events: dropped (with reason).",
    ev_delivered: "Events: delivered, replies sent.",
    ev_failed: "Events: failures.",
    ev_session: "Events: session lifecycle.",
    ev_question: "Events: questions.",
    ev_critic: "Events: critics.",
    ev_note: "Events: results of your own actions.",
    time: "Timestamps and ages.",
    spinner: "The running-critic spinner.",
    cost: "Critic cost.",
    key: "Key names in the footer and help.",
    hint: "Footer labels.",
    popup: "Popup body.",
    popup_border: "Popup border.",
    popup_title: "Popup title.",
    input: "The reply box text.",
    section: "Headings inside popups.",
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTheme {
    #[serde(default)]
    #[allow(dead_code)] // documents the file; the name it is loaded under wins
    name: Option<String>,
    #[serde(default)]
    styles: RawStyles,
}

fn parse(text: &str, origin: &str) -> Result<RawStyles, String> {
    let de = serde_norway::Deserializer::from_str(text);
    serde_path_to_error::deserialize::<_, RawTheme>(de)
        .map(|t| t.styles)
        .map_err(|e| super::keymap::located(origin, &e))
}

impl Theme {
    /// A critic finding's colour, by its severity (the diff gutter, the Critics pane).
    pub fn severity(&self, severity: crate::critic::Severity) -> Style {
        use crate::critic::Severity;
        match severity {
            Severity::Error => self.error,
            Severity::Warning => self.warn,
            Severity::Note => self.accent,
        }
    }

    /// A built-in theme by name. The shipped files are tested to define every role.
    pub fn builtin(name: &str) -> Option<Self> {
        let (_, text) = BUILTIN_THEMES.iter().find(|(n, _)| *n == name)?;
        let mut theme = Self::plain(name);
        match parse(text, &format!("themes/{name}.yaml")).and_then(|raw| theme.patch(raw)) {
            Ok(()) => Some(theme),
            Err(e) => {
                tracing::error!("built-in theme: {e}");
                None
            }
        }
    }

    fn fallback() -> Self {
        Self::builtin("default").unwrap_or_else(|| Self::plain("default"))
    }

    /// The theme `tui.theme` names, patched by `<config dir>/themes/<name>.yaml`, with
    /// `NO_COLOR` applied. Problems come back as warnings and the built-in is kept.
    pub fn load(name: &str, config_dir: Option<&Path>, no_color: bool) -> (Self, Vec<String>) {
        let mut warnings = Vec::new();
        let builtin = Self::builtin(name);
        let user = config_dir
            .map(|d| d.join("themes").join(format!("{name}.yaml")))
            .filter(|p| p.is_file());
        let mut theme = match (&builtin, &user) {
            (Some(t), _) => t.clone(),
            (None, Some(_)) => {
                let mut t = Self::fallback();
                t.name = name.to_string();
                t
            }
            (None, None) => {
                warnings.push(format!(
                    "theme `{name}` not found (built-in: default, light, high-contrast; or add {}); using default",
                    config_dir
                        .map(|d| d.join("themes").join(format!("{name}.yaml")).display().to_string())
                        .unwrap_or_else(|| format!("themes/{name}.yaml in the config dir"))
                ));
                Self::fallback()
            }
        };
        if let Some(path) = user {
            let shown = path.display().to_string();
            let mut next = theme.clone();
            let result = std::fs::read_to_string(&path)
                .map_err(|e| format!("{shown}: cannot read: {e}"))
                .and_then(|text| parse(&text, &shown))
                .and_then(|raw| next.patch(raw));
            match result {
                Ok(()) => theme = next,
                Err(e) => {
                    tracing::warn!("{e}");
                    warnings.push(format!("{e} — keeping the built-in styles"));
                }
            }
        }
        if no_color {
            theme = theme.without_color();
        }
        (theme, warnings)
    }

    /// NO_COLOR (<https://no-color.org>): colors go, attributes stay. The roles that
    /// relied on a background to stand out get an attribute instead: the selection is
    /// reversed (bold when its pane is not focused), the focused pane's title and the
    /// status bar reversed.
    pub fn without_color(mut self) -> Self {
        for style in self.styles_mut() {
            style.fg = None;
            style.bg = None;
            style.underline_color = None;
        }
        self.selected = self
            .selected
            .add_modifier(Modifier::REVERSED | Modifier::BOLD);
        self.selected_unfocused = self.selected_unfocused.add_modifier(Modifier::BOLD);
        self.status_bar = self.status_bar.add_modifier(Modifier::REVERSED);
        self.colorless = true;
        self.brand = self.brand.add_modifier(Modifier::REVERSED | Modifier::BOLD);
        self.title_focused = self
            .title_focused
            .add_modifier(Modifier::REVERSED | Modifier::BOLD);
        self
    }

    /// Roles a built-in file leaves out (each must define all).
    pub fn missing_roles(text: &str) -> Result<Vec<&'static str>, String> {
        parse(text, "theme").map(|raw| Self::missing(&raw))
    }
}

/// True when `NO_COLOR` is set to anything non-empty.
pub fn no_color_from_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_defines_every_role() {
        for (name, text) in BUILTIN_THEMES {
            assert_eq!(
                Theme::missing_roles(text).unwrap(),
                Vec::<&str>::new(),
                "{name}"
            );
            let theme = Theme::builtin(name).unwrap();
            assert_eq!(theme.name, name);
        }
        assert_eq!(Theme::ROLES.len(), Theme::fallback().styles_mut().len());
    }

    #[test]
    fn the_themes_differ_where_it_matters() {
        let dark = Theme::builtin("default").unwrap();
        let light = Theme::builtin("light").unwrap();
        let hc = Theme::builtin("high-contrast").unwrap();
        assert_ne!(dark.selected, light.selected);
        assert_ne!(dark.border_focused, hc.border_focused);
        assert!(hc.border_focused.add_modifier.contains(Modifier::BOLD));
    }

    #[test]
    fn no_color_keeps_attributes_and_reverses_backgrounds() {
        let theme = Theme::builtin("default").unwrap().without_color();
        let mut t = theme.clone();
        for s in t.styles_mut() {
            assert_eq!((s.fg, s.bg), (None, None));
        }
        assert!(theme.selected.add_modifier.contains(Modifier::REVERSED));
        assert!(theme.title_focused.add_modifier.contains(Modifier::BOLD));
    }

    #[test]
    fn bad_styles_are_refused_with_the_role() {
        let mut theme = Theme::fallback();
        let err = parse("styles:\n  accent: { fg: chartreuse }\n", "t.yaml")
            .and_then(|raw| theme.patch(raw))
            .unwrap_err();
        assert!(
            err.contains("styles.accent.fg: unknown color `chartreuse`"),
            "{err}"
        );
        let err = parse("styles:\n  acent: { fg: red }\n", "t.yaml").unwrap_err();
        assert!(err.contains("unknown field `acent`"), "{err}");
        let err = parse("styles:\n  accent: { fg: red, blink: true }\n", "t.yaml").unwrap_err();
        assert!(err.starts_with("t.yaml: styles.accent"), "{err}");
    }

    #[test]
    fn colors_parse_in_every_notation() {
        let spec = StyleSpec {
            fg: Some("#ff8800".into()),
            bg: Some("236".into()),
            bold: true,
            ..StyleSpec::default()
        };
        let s = spec.to_style("x").unwrap();
        assert_eq!(s.fg, Some(Color::Rgb(255, 136, 0)));
        assert_eq!(s.bg, Some(Color::Indexed(236)));
        assert!(s.add_modifier.contains(Modifier::BOLD));
    }
}
