use super::*;
use std::fs;

fn env_with(dir: &Path) -> Environment {
    Environment {
        default_file: Some(dir.join("xdg/the-loop/config.yaml")),
        ..Environment::default()
    }
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

#[test]
fn resolution_prefers_flag_then_env_then_default() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = env_with(dir.path());
    let flag = dir.path().join("flag.yaml");
    let from_env = dir.path().join("env.yaml");

    let default = env.resolve(None).unwrap();
    assert_eq!(default.source, PathSource::Default);
    assert_eq!(default.path, dir.path().join("xdg/the-loop/config.yaml"));

    env.config_file = Some(from_env.clone().into());
    assert_eq!(
        env.resolve(None),
        Some(ResolvedPath {
            path: from_env,
            source: PathSource::Env
        })
    );
    assert_eq!(
        env.resolve(Some(&flag)),
        Some(ResolvedPath {
            path: flag,
            source: PathSource::Flag
        })
    );

    let nowhere = Environment::default();
    assert_eq!(nowhere.resolve(None), None);
    let loaded = nowhere.load(None).unwrap();
    assert_eq!(loaded.path, None);
    assert_eq!(loaded.config, Config::default());
}

#[test]
fn a_missing_default_file_means_defaults_with_the_allowlist_warning() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = env_with(dir.path()).load(None).unwrap();
    assert_eq!(loaded.path, None);
    assert_eq!(loaded.config, Config::default());
    assert_eq!(
        loaded.warnings,
        [
            "routing.authorizedUsers: empty: nothing human-authored will be acted on; add the GitHub logins allowed to steer the agents"
        ]
    );
}

#[test]
fn a_missing_named_file_is_an_error_that_suggests_init() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.yaml");
    let mut env = env_with(dir.path());

    let err = env.load(Some(&missing)).unwrap_err();
    assert!(
        matches!(&err, ConfigError::NotFound { path, named_by: PathSource::Flag } if path == &missing)
    );
    let msg = err.to_string();
    assert!(msg.contains("named by --config"), "{msg}");
    assert!(
        msg.contains(&format!(
            "the-loop config init --path {}",
            missing.display()
        )),
        "{msg}"
    );

    env.config_file = Some(missing.clone().into());
    let err = env.load(None).unwrap_err();
    assert!(
        err.to_string().contains("named by $THE_LOOP_CONFIG"),
        "{err}"
    );
}

#[test]
fn the_default_file_is_used_when_present() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_with(dir.path());
    let file = env.default_file.clone().unwrap();
    write(&file, "routing:\n  authorizedUsers: [alice]\n");
    let loaded = env.load(None).unwrap();
    assert_eq!(loaded.path.as_deref(), Some(file.as_path()));
    assert_eq!(loaded.config.routing.authorized_users, ["alice"]);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn environment_overrides_win_over_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.yaml");
    write(
        &file,
        "github: {apiUrl: 'https://ghe.example/api/v3'}\nsessions: {tmux: {socket: mine}}\n",
    );
    let mut env = env_with(dir.path());
    let loaded = env.load(Some(&file)).unwrap();
    assert_eq!(loaded.config.github.api_url, "https://ghe.example/api/v3");
    assert_eq!(loaded.config.sessions.tmux.socket, "mine");

    env.api_url = Some("http://127.0.0.1:9999".into());
    env.tmux_socket = Some("test-sock".into());
    let loaded = env.load(Some(&file)).unwrap();
    assert_eq!(loaded.config.github.api_url, "http://127.0.0.1:9999");
    assert_eq!(loaded.config.sessions.tmux.socket, "test-sock");

    // Overrides apply to the defaults too.
    let defaults = env.load(None).unwrap();
    assert_eq!(defaults.config.github.api_url, "http://127.0.0.1:9999");
}

#[test]
fn risky_settings_warn_with_their_position() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.yaml");
    write(
        &file,
        "server:\n  listen: 0.0.0.0:8787\n  exposed: true\n  allowUnsigned: true\n",
    );
    let loaded = env_with(dir.path()).load(Some(&file)).unwrap();
    let f = file.display();
    assert_eq!(loaded.warnings.len(), 3, "{:?}", loaded.warnings);
    assert!(loaded.warnings[0].starts_with(&format!("{f}:1:1: routing.authorizedUsers: empty")));
    assert!(loaded.warnings[1].starts_with(&format!("{f}:3:12: server.exposed: true")));
    assert!(loaded.warnings[2].starts_with(&format!("{f}:4:18: server.allowUnsigned: true")));
}

#[test]
fn errors_name_the_file_and_unreadable_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    write(&file, "polling:\n  intervalSeconds: 1\n");
    let err = load_file(&file).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}:2:20: polling.intervalSeconds: must be at least 5 seconds, got 1; faster polling only spends the GitHub rate limit",
            file.display()
        )
    );

    // A directory where a file should be: reported, never replaced by defaults.
    let err = load_file(dir.path()).unwrap_err();
    assert!(matches!(err, ConfigError::Read { .. }), "{err:?}");
    assert!(err.to_string().contains("cannot read config file"), "{err}");
}
