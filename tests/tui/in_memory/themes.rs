//! Themes on screen: each built-in's styles snapshotted, key cells checked by color, a
//! user override applied per style, a bad user file reported, NO_COLOR honoured.

use crate::support::tui_app::*;
use ratatui::style::{Color, Modifier};
use the_loop::tui::app::AppSettings;
use the_loop::tui::run::RunOptions;
use the_loop::tui::sample;
use the_loop::tui::theme::Theme;

fn themed(name: &str, no_color: bool) -> the_loop::tui::app::App {
    let settings = AppSettings {
        theme: Theme::builtin(name)
            .map(|t| if no_color { t.without_color() } else { t })
            .unwrap(),
        ..settings()
    };
    let mut app = app_from(settings, sample::snapshot(NOW), 100, 24);
    capture(&mut app);
    app
}

#[test]
fn each_theme_styles_the_screen() {
    for name in ["default", "light", "high-contrast"] {
        let app = themed(name, false);
        snap(&format!("theme_{name}_styles"), styles(&buffer(&app)));
    }
    snap(
        "theme_no_color_styles",
        styles(&buffer(&themed("default", true))),
    );
}

#[test]
fn key_cells_take_the_theme_colors() {
    for name in ["default", "light", "high-contrast"] {
        let app = themed(name, false);
        let theme = Theme::builtin(name).unwrap();
        let buf = buffer(&app);
        // The working glyph, the awaiting glyph, the focused border, the selected row.
        let (x, y) = find(&buf, "● octo/repo#15").unwrap();
        assert_eq!(
            buf[(x, y)].fg,
            theme.working.fg.unwrap(),
            "{name}: working glyph"
        );
        assert_eq!(
            buf[(x + 2, y)].bg,
            theme.selected.bg.unwrap(),
            "{name}: selection"
        );
        let (x, y) = find(&buf, "? octo/repo#18").unwrap();
        assert_eq!(
            buf[(x, y)].fg,
            theme.awaiting.fg.unwrap(),
            "{name}: awaiting glyph"
        );
        assert_eq!(
            buf[(0, 1)].fg,
            theme.border_focused.fg.unwrap(),
            "{name}: focused border"
        );
        let (x, y) = find(&buf, "⊘ unauthorized-actor").unwrap();
        assert_eq!(
            buf[(x, y)].fg,
            theme.ev_dropped.fg.unwrap(),
            "{name}: dropped event"
        );
        assert_eq!(
            buf[(1, 0)].bg,
            theme.status_bar.bg.unwrap(),
            "{name}: status bar"
        );
    }
}

#[test]
fn no_color_leaves_no_color_but_keeps_the_selection_visible() {
    let app = themed("default", true);
    let buf = buffer(&app);
    for cell in buf.content() {
        assert!(
            matches!(cell.fg, Color::Reset),
            "fg {:?} at {:?}",
            cell.fg,
            cell.symbol()
        );
        assert!(matches!(cell.bg, Color::Reset), "bg {:?}", cell.bg);
    }
    let (x, y) = find(&buf, "● octo/repo#15").unwrap();
    assert!(buf[(x + 2, y)].modifier.contains(Modifier::REVERSED));
    // The pane capture's own colors are dropped too.
    let (x, y) = find(&buf, "ok. 14 passed").unwrap();
    assert_eq!(buf[(x, y)].fg, Color::Reset);
}

fn options(dir: &std::path::Path, theme: &str, no_color: bool) -> RunOptions {
    let mut o = RunOptions::new(Default::default());
    o.tui.theme = theme.into();
    o.config_dir = Some(dir.to_path_buf());
    o.no_color = no_color;
    o
}

#[test]
fn a_user_theme_overrides_only_the_styles_it_names() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("themes")).unwrap();
    std::fs::write(
        dir.path().join("themes/default.yaml"),
        "styles:\n  working: { fg: \"#ff8800\", bold: true }\n",
    )
    .unwrap();
    let app = options(dir.path(), "default", false).app(NOW);
    assert!(app.warnings.is_empty(), "{:?}", app.warnings);
    let builtin = Theme::builtin("default").unwrap();
    assert_eq!(app.theme.working.fg, Some(Color::Rgb(255, 136, 0)));
    assert_eq!(app.theme.idle, builtin.idle);

    // A new name patches the default theme.
    std::fs::write(
        dir.path().join("themes/mine.yaml"),
        "styles:\n  accent: { fg: magenta }\n",
    )
    .unwrap();
    let app = options(dir.path(), "mine", false).app(NOW);
    assert_eq!(app.theme.accent.fg, Some(Color::Magenta));
    assert_eq!(app.theme.dead, builtin.dead);
}

#[test]
fn a_bad_user_theme_is_reported_and_the_builtin_kept() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("themes")).unwrap();
    std::fs::write(
        dir.path().join("themes/light.yaml"),
        "styles:\n  working: { fg: not-a-color }\n",
    )
    .unwrap();
    let app = options(dir.path(), "light", false).app(NOW);
    assert_eq!(app.theme, Theme::builtin("light").unwrap());
    assert_eq!(app.warnings.len(), 1, "{:?}", app.warnings);
    assert!(app.warnings[0].contains("styles.working.fg: unknown color `not-a-color`"));
    assert!(app.warnings[0].contains("keeping the built-in styles"));

    let app = options(dir.path(), "solarized", false).app(NOW);
    assert_eq!(app.theme, Theme::builtin("default").unwrap());
    assert!(
        app.warnings[0].contains("theme `solarized` not found"),
        "{:?}",
        app.warnings
    );

    // The warning is on screen.
    let mut app = app_from(
        AppSettings {
            warnings: app.warnings.clone(),
            ..settings()
        },
        sample::snapshot(NOW),
        140,
        20,
    );
    capture(&mut app);
    assert!(screen(&app).contains("⚠ theme `solarized` not found"));
}

#[test]
fn no_color_from_options_applies_to_any_theme() {
    let dir = tempfile::tempdir().unwrap();
    let app = options(dir.path(), "high-contrast", true).app(NOW);
    assert_eq!(app.theme.selected.fg, None);
    assert!(app.theme.selected.add_modifier.contains(Modifier::REVERSED));
}
