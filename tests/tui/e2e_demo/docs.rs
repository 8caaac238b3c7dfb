//! The docs stay true to the code: the guide's key tables are generated from the
//! built-in keymap, and the README's command table lists exactly the visible commands.
//! Run with `UPDATE_DOCS=1` to rewrite the generated part of the guide.

use std::path::PathBuf;
use the_loop::tui::keymap::{Group, Keymap};

fn repo_file(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

const BEGIN: &str =
    "<!-- keys:begin (generated from keymaps/default.yaml by tests/tui/e2e_demo/docs.rs) -->";
const END: &str = "<!-- keys:end -->";

/// One table per group, in the help popup's order, with its heading.
fn key_tables(keymap: &Keymap) -> String {
    let mut out = String::new();
    for group in Group::ALL {
        let bindings = keymap.bindings(group);
        if bindings.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n**{}**\n\n| keys | does |\n|---|---|\n",
            group.title()
        ));
        for b in bindings {
            let keys: Vec<String> = b.keys.iter().map(|k| format!("`{k}`")).collect();
            out.push_str(&format!("| {} | {} |\n", keys.join(" "), b.desc));
        }
    }
    out.push('\n');
    out
}

#[test]
fn the_guide_lists_the_built_in_keys() {
    let path = repo_file("docs/guide.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text
        .find(BEGIN)
        .expect("the guide has the keys:begin marker")
        + BEGIN.len();
    let end = text.find(END).expect("the guide has the keys:end marker");
    let expected = key_tables(&Keymap::builtin());
    if text[start..end] != expected {
        if std::env::var_os("UPDATE_DOCS").is_some() {
            let updated = format!("{}{expected}{}", &text[..start], &text[end..]);
            std::fs::write(&path, updated).unwrap();
        } else {
            panic!(
                "docs/guide.md's key tables differ from keymaps/default.yaml; \
                 run `UPDATE_DOCS=1 cargo test --test tui the_guide_lists` to regenerate"
            );
        }
    }
}

#[test]
fn the_readme_lists_every_visible_command() {
    use clap::CommandFactory;
    let readme = std::fs::read_to_string(repo_file("README.md")).unwrap();
    let cli = the_loop::cli::Cli::command();
    let visible: Vec<String> = cli
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect();
    // Table rows look like `| `the-loop NAME …` | … |`.
    let listed: Vec<String> = readme
        .lines()
        .filter_map(|l| l.strip_prefix("| `the-loop "))
        .filter_map(|rest| rest.split([' ', '`']).next())
        .map(str::to_string)
        .collect();
    for name in &visible {
        assert!(
            listed.contains(name),
            "README.md's command table lacks `the-loop {name}`"
        );
    }
    for name in &listed {
        assert!(
            visible.contains(name),
            "README.md lists `the-loop {name}`, which is not a command"
        );
    }
    assert!(!visible.contains(&"demo-critic".to_string()), "hidden");
}

#[test]
fn the_readme_links_only_to_files_that_exist() {
    let readme = std::fs::read_to_string(repo_file("README.md")).unwrap();
    let links = readme
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .filter(|target| !target.starts_with("http") && !target.starts_with('#'));
    for target in links {
        let file = target.split('#').next().unwrap_or(target);
        assert!(
            repo_file(file).exists(),
            "README.md links to {target}, which does not exist"
        );
    }
}
