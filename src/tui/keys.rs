//! One key as the keymap names it (`q`, `A`, `ctrl-s`, `alt-enter`, `shift-tab`) and as
//! crossterm reports it, normalized so the two compare equal.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    /// Only CONTROL, ALT and SHIFT; SHIFT never accompanies a character (the character's
    /// case carries it) nor back-tab.
    pub mods: KeyModifiers,
}

const MODS: KeyModifiers = KeyModifiers::CONTROL
    .union(KeyModifiers::ALT)
    .union(KeyModifiers::SHIFT);

impl Key {
    pub fn new(code: KeyCode, mods: KeyModifiers) -> Self {
        let mut mods = mods & MODS;
        let code = match code {
            KeyCode::Char(c) => {
                mods.remove(KeyModifiers::SHIFT);
                // Terminals report ctrl-shift-a as ctrl-A; ctrl bindings are caseless.
                if mods.contains(KeyModifiers::CONTROL) {
                    KeyCode::Char(c.to_ascii_lowercase())
                } else {
                    KeyCode::Char(c)
                }
            }
            KeyCode::BackTab => {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            other => other,
        };
        Self { code, mods }
    }

    pub fn plain(code: KeyCode) -> Self {
        Self::new(code, KeyModifiers::NONE)
    }

    pub fn from_event(event: &KeyEvent) -> Self {
        Self::new(event.code, event.modifiers)
    }

    /// Parses the keymap notation; the error says what is accepted.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "unknown key `{spec}`: expected a character (`q`, `A`, `?`) or a name (enter, esc, tab, backtab, space, backspace, delete, insert, up, down, left, right, home, end, pageup, pagedown, f1…f12), optionally after ctrl-, alt- or shift-"
            )
        };
        let mut mods = KeyModifiers::NONE;
        let mut rest = spec.trim();
        if rest.is_empty() {
            return Err(bad());
        }
        // A lone `-` is the minus key, not a separator.
        while rest.chars().count() > 1 {
            let lower = rest.to_ascii_lowercase();
            let (m, len) = if lower.starts_with("ctrl-") {
                (KeyModifiers::CONTROL, 5)
            } else if lower.starts_with("alt-") {
                (KeyModifiers::ALT, 4)
            } else if lower.starts_with("shift-") {
                (KeyModifiers::SHIFT, 6)
            } else {
                break;
            };
            mods |= m;
            rest = &rest[len..];
        }
        let mut chars = rest.chars();
        let code = match (chars.next(), chars.next()) {
            (Some(c), None) => {
                if mods.contains(KeyModifiers::SHIFT) && !mods.contains(KeyModifiers::CONTROL) {
                    KeyCode::Char(c.to_ascii_uppercase())
                } else {
                    KeyCode::Char(c)
                }
            }
            _ => match rest.to_ascii_lowercase().as_str() {
                "enter" | "return" => KeyCode::Enter,
                "esc" | "escape" => KeyCode::Esc,
                "tab" if mods.contains(KeyModifiers::SHIFT) => KeyCode::BackTab,
                "tab" => KeyCode::Tab,
                "backtab" => KeyCode::BackTab,
                "space" => KeyCode::Char(' '),
                "backspace" => KeyCode::Backspace,
                "delete" | "del" => KeyCode::Delete,
                "insert" | "ins" => KeyCode::Insert,
                "up" => KeyCode::Up,
                "down" => KeyCode::Down,
                "left" => KeyCode::Left,
                "right" => KeyCode::Right,
                "home" => KeyCode::Home,
                "end" => KeyCode::End,
                "pageup" | "pgup" => KeyCode::PageUp,
                "pagedown" | "pgdn" => KeyCode::PageDown,
                f if f.starts_with('f') => match f[1..].parse::<u8>() {
                    Ok(n @ 1..=12) => KeyCode::F(n),
                    _ => return Err(bad()),
                },
                _ => return Err(bad()),
            },
        };
        Ok(Self::new(code, mods))
    }
}

impl fmt::Display for Key {
    /// Short and readable, for the help popup and the footer: `ctrl-s`, `A`, `↑`, `pgdn`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mods.contains(KeyModifiers::CONTROL) {
            f.write_str("ctrl-")?;
        }
        if self.mods.contains(KeyModifiers::ALT) {
            f.write_str("alt-")?;
        }
        if self.mods.contains(KeyModifiers::SHIFT) {
            f.write_str("shift-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Enter => f.write_str("enter"),
            KeyCode::Esc => f.write_str("esc"),
            KeyCode::Tab => f.write_str("tab"),
            KeyCode::BackTab => f.write_str("shift-tab"),
            KeyCode::Backspace => f.write_str("backspace"),
            KeyCode::Delete => f.write_str("delete"),
            KeyCode::Insert => f.write_str("insert"),
            KeyCode::Up => f.write_str("↑"),
            KeyCode::Down => f.write_str("↓"),
            KeyCode::Left => f.write_str("←"),
            KeyCode::Right => f.write_str("→"),
            KeyCode::Home => f.write_str("home"),
            KeyCode::End => f.write_str("end"),
            KeyCode::PageUp => f.write_str("pgup"),
            KeyCode::PageDown => f.write_str("pgdn"),
            KeyCode::F(n) => write!(f, "f{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyEventKind;

    fn ev(code: KeyCode, mods: KeyModifiers) -> Key {
        Key::from_event(&KeyEvent::new_with_kind(code, mods, KeyEventKind::Press))
    }

    #[test]
    fn parses_characters_names_and_modifiers() {
        assert_eq!(Key::parse("q"), Ok(Key::plain(KeyCode::Char('q'))));
        assert_eq!(Key::parse("A"), Ok(Key::plain(KeyCode::Char('A'))));
        assert_eq!(Key::parse("shift-a"), Ok(Key::plain(KeyCode::Char('A'))));
        assert_eq!(Key::parse("-"), Ok(Key::plain(KeyCode::Char('-'))));
        assert_eq!(
            Key::parse("ctrl-s"),
            Ok(Key::new(KeyCode::Char('s'), KeyModifiers::CONTROL))
        );
        assert_eq!(
            Key::parse("Alt-Enter"),
            Ok(Key::new(KeyCode::Enter, KeyModifiers::ALT))
        );
        assert_eq!(Key::parse("shift-tab"), Ok(Key::plain(KeyCode::BackTab)));
        assert_eq!(Key::parse("pgdn"), Ok(Key::plain(KeyCode::PageDown)));
        assert_eq!(Key::parse("f12"), Ok(Key::plain(KeyCode::F(12))));
        for bad in ["", "f13", "ctrl-", "hyper-x", "enterr"] {
            let err = Key::parse(bad).unwrap_err();
            assert!(err.contains("expected a character"), "{bad}: {err}");
        }
    }

    #[test]
    fn events_normalize_to_the_parsed_form() {
        // Terminals send an uppercase letter with SHIFT set.
        assert_eq!(
            ev(KeyCode::Char('A'), KeyModifiers::SHIFT),
            Key::parse("A").unwrap()
        );
        assert_eq!(
            ev(KeyCode::BackTab, KeyModifiers::SHIFT),
            Key::parse("backtab").unwrap()
        );
        assert_eq!(
            ev(
                KeyCode::Char('S'),
                KeyModifiers::CONTROL | KeyModifiers::SHIFT
            ),
            Key::parse("ctrl-s").unwrap()
        );
        assert_ne!(
            ev(KeyCode::Char('a'), KeyModifiers::NONE),
            Key::parse("A").unwrap()
        );
    }

    #[test]
    fn displays_round_trip() {
        for spec in [
            "q",
            "A",
            "ctrl-s",
            "alt-enter",
            "esc",
            "space",
            "f1",
            "pgup",
        ] {
            let key = Key::parse(spec).unwrap();
            assert_eq!(Key::parse(&key.to_string()), Ok(key), "{spec}");
        }
        assert_eq!(Key::parse("down").unwrap().to_string(), "↓");
    }
}
