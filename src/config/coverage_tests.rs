//! Keeps `docs/config.md` and the starter file complete: every key of [`Config`] must be
//! documented and shown in the starter, and the docs must not describe keys that do not
//! exist.

use super::*;
use std::collections::BTreeSet;
use std::path::Path;

/// A config with one entry in each open-ended collection, so their keys are walked too.
fn sample() -> Config {
    let mut config = Config::default();
    config.repos.push(RepoConfig {
        name: "octo/repo".into(),
        path: Some("~/src/repo".into()),
        label: default_label(),
        issues: true,
        pull_requests: true,
        host: Some("build".into()),
        ..RepoConfig::named("")
    });
    config.hosts.push(HostConfig {
        ssh_config: Some("~/.ssh/config".into()),
        ..HostConfig::new("build", "dev@build-1")
    });
    config
        .sessions
        .harnesses
        .insert("mine".into(), HarnessConfig::default());
    config.pricing.models.insert(
        "my-model".into(),
        ModelPrice {
            cache_write5m: Some(0.0),
            cache_write1h: Some(0.0),
            cache_read: Some(0.0),
            ..ModelPrice::default()
        },
    );
    config
}

/// Key paths in doc notation: list items as `[]`, harness names as `<name>`.
fn key_paths(value: &serde_json::Value) -> BTreeSet<String> {
    fn walk(value: &serde_json::Value, path: &str, out: &mut BTreeSet<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, child) in map {
                    let key = if path == "sessions.harnesses" {
                        "<name>"
                    } else if path == "pricing.models" {
                        "<id>"
                    } else {
                        key.as_str()
                    };
                    let child_path = if path.is_empty() {
                        key.to_string()
                    } else {
                        format!("{path}.{key}")
                    };
                    out.insert(child_path.clone());
                    walk(child, &child_path, out);
                }
            }
            serde_json::Value::Array(items) => {
                for item in items.iter().filter(|i| i.is_object()) {
                    walk(item, &format!("{path}[]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(value, "", &mut out);
    out
}

fn config_key_paths() -> BTreeSet<String> {
    let paths = key_paths(&serde_json::to_value(sample()).unwrap());
    // Guard the walker itself: nested, list and map keys must all be there.
    for expected in [
        "routing.keywords.start",
        "repos[].pullRequests",
        "sessions.harnesses.<name>.oneshotArgs",
        "sessions.tmux.probeTimeoutSeconds",
        "hosts[].stateDir",
        "repos[].host",
        "critics",
    ] {
        assert!(paths.contains(expected), "walker missed {expected}");
    }
    paths
}

fn docs() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/config.md");
    std::fs::read_to_string(&path).unwrap()
}

#[test]
fn every_config_key_is_documented() {
    let docs = docs();
    let missing: Vec<String> = config_key_paths()
        .into_iter()
        .filter(|path| !docs.contains(&format!("| `{path}` |")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/config.md has no reference row (| `key` | …) for: {missing:#?}"
    );
}

#[test]
fn documented_keys_exist() {
    let known = config_key_paths();
    let docs = docs();
    let reference = docs
        .split_once("\n## Reference\n")
        .map(|(_, rest)| rest)
        .unwrap();
    let stale: Vec<String> = reference
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once("` |").map(|(key, _)| key.to_string()))
        // Critic entries stay raw in `Config`; the critic module owns their schema.
        .filter(|key| !key.starts_with("critics[]."))
        .filter(|key| !known.contains(key))
        .collect();
    assert!(
        stale.is_empty(),
        "docs/config.md documents keys that do not exist: {stale:#?}"
    );
}

#[test]
fn the_starter_is_valid_and_shows_every_key_with_its_default() {
    let config = parse_str(starter::STARTER_YAML, Path::new("starter.yaml")).unwrap();
    assert!(validate::warnings(&config).is_empty());

    // Every key is written out (harness, price and host entries are examples in comments).
    let raw: serde_json::Value = serde_norway::from_str(starter::STARTER_YAML).unwrap();
    let shown = key_paths(&raw);
    let missing: Vec<String> = config_key_paths()
        .into_iter()
        .filter(|p| !p.starts_with("sessions.harnesses.<name>"))
        .filter(|p| !p.starts_with("pricing.models.<id>"))
        .filter(|p| !p.starts_with("hosts[]."))
        .filter(|p| !shown.contains(p))
        .collect();
    assert!(missing.is_empty(), "the starter omits {missing:#?}");

    // Apart from the two placeholders the operator must edit, the values are the defaults.
    assert_eq!(config.repos.len(), 1);
    assert_eq!(config.repos[0].label, default_label());
    assert!(config.repos[0].issues && config.repos[0].pull_requests);
    assert_eq!(config.routing.authorized_users.len(), 1);
    let mut rest = config;
    rest.repos.clear();
    rest.routing.authorized_users.clear();
    assert_eq!(rest, Config::default());
}

#[test]
fn each_placeholder_of_the_starter_is_named_at_its_line() {
    let origin = Path::new("starter.yaml");
    let text = starter::STARTER_YAML;
    let config = parse_str(text, origin).unwrap();
    let found = parse::locate_all(text, origin, validate::placeholders(&config));
    let line_of = |needle: &str| {
        text.lines()
            .position(|l| l.contains(needle))
            .map(|i| i + 1)
            .unwrap()
    };
    let named: Vec<(usize, &str)> = found
        .iter()
        .map(|d| (d.position.unwrap().line, d.key_path.as_str()))
        .collect();
    assert_eq!(
        named,
        [
            (line_of("name: your-github-user/your-repo"), "repos[0].name"),
            (line_of("path: ~/src/your-repo"), "repos[0].path"),
            (line_of("- your-github-login"), "routing.authorizedUsers[0]"),
        ]
    );
    for d in &found {
        assert!(
            d.message.contains("placeholder from the starter: put "),
            "{d}"
        );
    }
}

#[test]
fn only_whole_placeholder_names_count() {
    let flagged = |name: &str, path: &str, login: &str| {
        let mut config = sample();
        config.repos[0].name = name.into();
        config.repos[0].path = Some(path.into());
        config.routing.authorized_users = vec![login.into()];
        validate::placeholders(&config)
            .into_iter()
            .map(|p| p.path.to_string())
            .collect::<Vec<_>>()
    };
    let none: Vec<String> = Vec::new();
    assert_eq!(flagged("octo/repo", "~/src/repo", "alice"), none);
    assert_eq!(
        flagged(
            "acme/your-repo-tools",
            "~/src/your-repository",
            "your-github-login2"
        ),
        none
    );
    assert_eq!(
        flagged(
            "octo/Your-Repo",
            "/home/me/your-repo/",
            "@Your-GitHub-Login"
        ),
        [
            "repos[0].name",
            "repos[0].path",
            "routing.authorizedUsers[0]"
        ]
    );
    assert_eq!(
        flagged("your-github-user/tools", "~/src/tools", "alice"),
        ["repos[0].name"]
    );
}
