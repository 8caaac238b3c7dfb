//! Keymap parsing, merging and lookups.
use super::*;
use crossterm::event::{KeyCode, KeyModifiers};

fn key(spec: &str) -> KeyEvent {
    let k = Key::parse(spec).unwrap();
    KeyEvent::new(k.code, k.mods)
}

#[test]
fn the_shipped_keymap_parses_and_covers_every_mode() {
    let raw = parse(DEFAULT_KEYMAP, "default").unwrap();
    let mut map = Keymap {
        groups: BTreeMap::new(),
    };
    map.apply(raw, "default", false).unwrap();
    assert_eq!(map, Keymap::builtin());
    for group in Group::ALL {
        assert!(!map.bindings(group).is_empty(), "{group:?} has no bindings");
        for b in map.bindings(group) {
            assert!(
                !b.desc.is_empty(),
                "{group:?} {:?} lacks a description",
                b.command
            );
        }
    }
    assert_eq!(map.lookup(Group::Global, &key("q")), Some(Command::Quit));
    assert_eq!(map.lookup(Group::Sessions, &key("r")), Some(Command::Reply));
    assert_eq!(
        map.lookup(Group::Reply, &key("ctrl-s")),
        Some(Command::Send)
    );
    assert_eq!(map.lookup(Group::Reply, &key("esc")), Some(Command::Cancel));
}

#[test]
fn no_key_is_bound_twice_in_one_group() {
    let map = Keymap::builtin();
    for group in Group::ALL {
        let mut seen = Vec::new();
        for b in map.bindings(group) {
            for k in &b.keys {
                assert!(!seen.contains(k), "{group:?}: {k} bound twice");
                seen.push(*k);
            }
        }
    }
}

#[test]
fn a_patch_takes_over_its_keys_and_keeps_the_rest() {
    let mut map = Keymap::builtin();
    let raw = parse(
        "sessions:\n  - { on: [r], run: attach, desc: mine }\n  - { on: y, run: reply }\nglobal:\n  - { on: [ctrl-c], run: noop }\n",
        "user",
    )
    .unwrap();
    map.apply(raw, "user", true).unwrap();
    assert_eq!(
        map.lookup(Group::Sessions, &key("r")),
        Some(Command::Attach)
    );
    assert_eq!(map.lookup(Group::Sessions, &key("y")), Some(Command::Reply));
    // `enter` was bound with `r` to reply; it keeps that binding.
    assert_eq!(
        map.lookup(Group::Sessions, &key("enter")),
        Some(Command::Reply)
    );
    assert_eq!(map.lookup(Group::Global, &key("ctrl-c")), None);
    assert_eq!(map.lookup(Group::Global, &key("q")), Some(Command::Quit));
}

#[test]
fn bad_files_are_refused_with_a_reason() {
    let cases = [
        (
            "sesions:\n  - { on: r, run: reply }\n",
            "unknown variant `sesions`",
        ),
        (
            "sessions:\n  - { on: r, run: replyy }\n",
            "unknown variant `replyy`",
        ),
        (
            "sessions:\n  - { on: [hyperkey], run: reply }\n",
            "unknown key `hyperkey`",
        ),
        (
            "sessions:\n  - { on: r, run: reply, colour: red }\n",
            "unknown field `colour`",
        ),
        (
            "reply:\n  - { on: [esc], run: noop }\n",
            "no key for `cancel`",
        ),
        ("sessions: [\n", "line 2 column 1"),
    ];
    for (text, expected) in cases {
        let mut map = Keymap::builtin();
        let err = parse(text, "user.yaml")
            .and_then(|raw| map.apply(raw, "user.yaml", true))
            .unwrap_err();
        assert!(err.contains(expected), "{text:?}: {err}");
        assert!(err.starts_with("user.yaml"), "{err}");
    }
}

#[test]
fn hints_come_from_the_group_then_global() {
    let map = Keymap::builtin();
    let hints = map.hints(Group::Sessions);
    let labels: Vec<&str> = hints.iter().map(|h| h.label.as_str()).collect();
    assert_eq!(labels.first(), Some(&"reply"));
    assert!(labels.contains(&"critic") && labels.contains(&"help"));
    assert_eq!(
        map.key_label(Group::Sessions, Command::Help).as_deref(),
        Some("?")
    );
    let k = Key::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
    assert!(map.keys_for(Group::Reply, Command::Send).contains(&k));
}

#[test]
fn names_match_the_file_spelling() {
    assert_eq!(command_name(Command::TogglePause), "toggle_pause");
    assert_eq!(group_name(Group::Sessions), "sessions");
}
