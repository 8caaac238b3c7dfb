//! Key bindings as data (SPEC §11.5): `keymaps/default.yaml` is embedded in the binary;
//! `<config dir>/keymap.yaml` patches it key by key. The help popup and the footer are
//! generated from the keymap in use, so they never disagree with what the keys do.
//!
//! File shape (helix/yazi style): a map from group (a pane or a mode) to entries
//! `{ on: [keys], run: command, desc: "…", hint: "…" }`. A user entry takes its keys
//! over within its group; every default it does not name stays. `run: noop` unbinds.

use super::keys::Key;
use crossterm::event::KeyEvent;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The built-in keymap.
pub const DEFAULT_KEYMAP: &str = include_str!("../../keymaps/default.yaml");

/// Where a binding applies: a pane (consulted before `global` while it has focus) or a
/// mode that captures the keyboard (reply box, filter, popups).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    Global,
    Sessions,
    Pane,
    Questions,
    Events,
    Critics,
    Reply,
    Comment,
    Filter,
    Picker,
    Output,
    Diff,
    Help,
    Confirm,
}

impl Group {
    pub const ALL: [Group; 14] = [
        Group::Global,
        Group::Sessions,
        Group::Pane,
        Group::Questions,
        Group::Events,
        Group::Critics,
        Group::Reply,
        Group::Comment,
        Group::Filter,
        Group::Picker,
        Group::Output,
        Group::Diff,
        Group::Help,
        Group::Confirm,
    ];

    /// The heading in the help popup.
    pub fn title(self) -> &'static str {
        match self {
            Group::Global => "Everywhere",
            Group::Sessions => "Sessions",
            Group::Pane => "Pane",
            Group::Questions => "Questions",
            Group::Events => "Events",
            Group::Critics => "Critics",
            Group::Reply => "Reply box",
            Group::Comment => "Comment box",
            Group::Filter => "Events filter",
            Group::Picker => "Critic picker",
            Group::Output => "Critic output",
            Group::Diff => "Worktree diff",
            Group::Help => "Help",
            Group::Confirm => "Confirmation",
        }
    }

    /// Commands a mode cannot do without: a keymap that loses one would trap the
    /// operator, so it is refused.
    fn required(self) -> &'static [Command] {
        match self {
            Group::Global => &[Command::Quit],
            Group::Reply | Group::Comment => &[Command::Send, Command::Cancel],
            Group::Filter => &[Command::Apply, Command::Cancel],
            Group::Picker => &[Command::Select, Command::Close],
            Group::Output | Group::Diff | Group::Help => &[Command::Close],
            Group::Confirm => &[Command::Confirm, Command::Close],
            _ => &[],
        }
    }
}

/// Everything a key can do. The names are the `run:` values in keymap files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Command {
    Quit,
    Help,
    FocusNext,
    FocusPrev,
    FocusSessions,
    FocusPane,
    FocusQuestions,
    FocusEvents,
    FocusCritics,
    Zoom,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    Reply,
    Attach,
    AttachReadOnly,
    Critic,
    Start,
    Pause,
    Resume,
    TogglePause,
    Stop,
    OpenUrl,
    Dismiss,
    /// Approve, once, the permission dialog the selected session waits on.
    Approve,
    /// Deny the permission dialog the selected session waits on.
    Deny,
    /// Deliver one delivery held because the session's client has a screen the-loop
    /// has not recorded (issue 30).
    DeliverHeld,
    Filter,
    ClearFilter,
    Open,
    PostCritic,
    /// The session's worktree diff against its base (SPEC §16.4).
    Diff,
    /// Ship the session's work: push its branch and open its pull request, after a
    /// confirmation (SPEC §19.4).
    Ship,
    /// Diff view: write a comment on the selected line (SPEC §21.2).
    Comment,
    /// Diff view: send the pending review to the agent as one note.
    SendReview,
    /// Diff view: drop the pending review, unsent (asks first).
    DiscardReview,
    /// Diff view: the next line with a critic's finding (SPEC §21.3).
    NextFinding,
    /// Diff view: the previous line with a critic's finding.
    PrevFinding,
    /// Diff view: add the selected line's finding to the pending review.
    TakeFinding,
    Send,
    Cancel,
    Apply,
    Select,
    Confirm,
    Close,
    /// Binds nothing: a user file uses it to take a key away.
    Noop,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    pub keys: Vec<Key>,
    pub command: Command,
    pub desc: String,
    /// A short label; bindings with one are offered in the footer.
    pub hint: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Keymap {
    groups: BTreeMap<Group, Vec<Binding>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    on: OneOrMany,
    run: Command,
    #[serde(default)]
    desc: Option<String>,
    #[serde(default)]
    hint: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

type RawKeymap = BTreeMap<Group, Vec<RawEntry>>;

impl Keymap {
    /// The embedded default. It is tested to parse, so this cannot fail at run time.
    pub fn builtin() -> Self {
        let mut map = Keymap {
            groups: BTreeMap::new(),
        };
        match parse(DEFAULT_KEYMAP, "keymaps/default.yaml") {
            Ok(raw) => {
                if let Err(e) = map.apply(raw, "keymaps/default.yaml", false) {
                    tracing::error!("built-in keymap: {e}");
                }
            }
            Err(e) => tracing::error!("built-in keymap: {e}"),
        }
        map
    }

    /// The keymap `tui.keymap` names, with the user's patches. Problems are returned as
    /// warnings (for the status bar and the log) and the defaults kept.
    ///
    /// `default` is the built-in; another name is `<config dir>/keymaps/<name>.yaml`
    /// patched over it. `<config dir>/keymap.yaml`, when present, patches either.
    pub fn load(name: &str, config_dir: Option<&Path>) -> (Self, Vec<String>) {
        let mut map = Self::builtin();
        let mut warnings = Vec::new();
        let mut files = Vec::new();
        if name != "default" && !name.is_empty() {
            match config_dir.map(|d| d.join("keymaps").join(format!("{name}.yaml"))) {
                Some(path) if path.is_file() => files.push(path),
                other => warnings.push(format!(
                    "keymap `{name}` not found{}; using the default keymap",
                    other
                        .map(|p| format!(" (looked for {})", p.display()))
                        .unwrap_or_default()
                )),
            }
        }
        if let Some(path) = config_dir.map(|d| d.join("keymap.yaml"))
            && path.is_file()
        {
            files.push(path);
        }
        for path in files {
            let shown = path.display().to_string();
            let patched = std::fs::read_to_string(&path)
                .map_err(|e| format!("{shown}: cannot read: {e}"))
                .and_then(|text| parse(&text, &shown))
                .and_then(|raw| {
                    let mut next = map.clone();
                    next.apply(raw, &shown, true).map(|()| next)
                });
            match patched {
                Ok(next) => map = next,
                Err(e) => {
                    tracing::warn!("{e}");
                    warnings.push(format!("{e} — keeping the previous key bindings"));
                }
            }
        }
        (map, warnings)
    }

    /// Merges a parsed file: each entry takes its keys over within its group. A patch's
    /// entries go before the defaults they join, so its hints and help lines come first.
    fn apply(&mut self, raw: RawKeymap, origin: &str, patch: bool) -> Result<(), String> {
        for (group, entries) in raw {
            let mut at = 0;
            for (i, entry) in entries.into_iter().enumerate() {
                let specs = match entry.on {
                    OneOrMany::One(s) => vec![s],
                    OneOrMany::Many(v) => v,
                };
                let keys = specs
                    .iter()
                    .map(|s| Key::parse(s))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| format!("{origin}: {}[{i}].on: {e}", group_name(group)))?;
                if keys.is_empty() {
                    return Err(format!(
                        "{origin}: {}[{i}].on: list at least one key",
                        group_name(group)
                    ));
                }
                let list = self.groups.entry(group).or_default();
                for b in list.iter_mut() {
                    b.keys.retain(|k| !keys.contains(k));
                }
                list.retain(|b| !b.keys.is_empty());
                if entry.run != Command::Noop {
                    let binding = Binding {
                        keys,
                        command: entry.run,
                        desc: entry.desc.unwrap_or_else(|| default_desc(entry.run)),
                        hint: entry.hint,
                    };
                    if patch {
                        list.insert(at.min(list.len()), binding);
                        at += 1;
                    } else {
                        list.push(binding);
                    }
                }
            }
        }
        for group in Group::ALL {
            for cmd in group.required() {
                if self.keys_for(group, *cmd).is_empty() {
                    return Err(format!(
                        "{origin}: `{}` would have no key for `{}`; bind one (it cannot be left out)",
                        group_name(group),
                        command_name(*cmd)
                    ));
                }
            }
        }
        Ok(())
    }

    /// The command a key runs in this group alone.
    pub fn lookup(&self, group: Group, key: &KeyEvent) -> Option<Command> {
        let key = Key::from_event(key);
        self.groups
            .get(&group)?
            .iter()
            .find(|b| b.keys.contains(&key))
            .map(|b| b.command)
    }

    pub fn bindings(&self, group: Group) -> &[Binding] {
        self.groups.get(&group).map(Vec::as_slice).unwrap_or(&[])
    }

    pub fn keys_for(&self, group: Group, command: Command) -> Vec<Key> {
        self.bindings(group)
            .iter()
            .filter(|b| b.command == command)
            .flat_map(|b| b.keys.iter().copied())
            .collect()
    }

    /// The first key for a command: looked up in `group`, then `global`.
    pub fn key_for(&self, group: Group, command: Command) -> Option<Key> {
        self.keys_for(group, command)
            .into_iter()
            .chain(self.keys_for(Group::Global, command))
            .next()
    }

    /// The first key for a command, as shown: looked up in `group`, then `global`.
    pub fn key_label(&self, group: Group, command: Command) -> Option<String> {
        self.key_for(group, command).map(|k| k.to_string())
    }

    /// Footer hints: the group's hinted bindings, then global's (a command bound in the
    /// group is not repeated from global).
    pub fn hints(&self, group: Group) -> Vec<Hint> {
        let globals = if matches!(
            group,
            Group::Sessions | Group::Pane | Group::Questions | Group::Events | Group::Critics
        ) {
            self.bindings(Group::Global)
        } else {
            &[]
        };
        let mut out: Vec<Hint> = Vec::new();
        for b in self.bindings(group).iter().chain(globals) {
            if let (Some(label), Some(key)) = (&b.hint, b.keys.first())
                && !out.iter().any(|h| h.command == b.command)
            {
                out.push(Hint {
                    command: b.command,
                    on: *key,
                    key: key.to_string(),
                    label: label.clone(),
                });
            }
        }
        out
    }
}

/// One footer hint: `r reply`. A click on it presses `on` (SPEC §21.1), so a hint does
/// exactly what its key does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    pub command: Command,
    pub on: Key,
    pub key: String,
    pub label: String,
}

fn parse(text: &str, origin: &str) -> Result<RawKeymap, String> {
    let de = serde_norway::Deserializer::from_str(text);
    match serde_path_to_error::deserialize::<_, Option<RawKeymap>>(de) {
        Ok(raw) => Ok(raw.unwrap_or_default()),
        Err(e) => Err(located(origin, &e)),
    }
}

/// `file: key.path: message (line L column C)`; the path is left out when the parser
/// failed before reaching a key.
pub(super) fn located(origin: &str, e: &serde_path_to_error::Error<serde_norway::Error>) -> String {
    let path = e.path().to_string();
    if path.is_empty() || path == "?" || path == "." {
        format!("{origin}: {}", e.inner())
    } else {
        format!("{origin}: {path}: {}", e.inner())
    }
}

fn group_name(group: Group) -> String {
    command_like(&format!("{group:?}"))
}

fn command_name(command: Command) -> String {
    command_like(&format!("{command:?}"))
}

/// `TogglePause` → `toggle_pause`, the spelling used in files.
fn command_like(debug: &str) -> String {
    let mut out = String::new();
    for (i, c) in debug.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn default_desc(command: Command) -> String {
    command_name(command).replace('_', " ")
}

#[cfg(test)]
#[path = "keymap_tests.rs"]
mod tests;
