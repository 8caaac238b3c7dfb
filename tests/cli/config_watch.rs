//! Live config reload (SPEC §2) against the real file system watcher: edits in place,
//! editor-style replace by rename, invalid edits, a deleted file. Each step waits for the
//! event it expects (a generous timeout guards against a hang; nothing is timed).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use the_loop::config::watch::ConfigWatch;
use the_loop::config::{LoadedConfig, load_file};
use the_loop::events::{Event, EventLog, EventType, Level, Source};
use tokio::sync::broadcast;

const WAIT: Duration = Duration::from_secs(30);

struct Fixture {
    path: PathBuf,
    watch: ConfigWatch,
    events: broadcast::Receiver<Event>,
    _dir: tempfile::TempDir,
}

const INITIAL: &str = "routing:\n  authorizedUsers: [alice]\npolling:\n  intervalSeconds: 30\n";

fn start() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, INITIAL).unwrap();
    let log = EventLog::open_path(dir.path().join("state/events.jsonl"));
    let events = log.subscribe();
    let watch = ConfigWatch::start_with(
        load_file(&path).unwrap(),
        log,
        Source::Cli,
        Duration::from_millis(100),
    )
    .unwrap();
    Fixture {
        path,
        watch,
        events,
        _dir: dir,
    }
}

impl Fixture {
    /// The next `config.*` event.
    async fn next_config_event(&mut self) -> Event {
        tokio::time::timeout(WAIT, async {
            loop {
                let event = self.events.recv().await.unwrap();
                if matches!(
                    event.event,
                    EventType::ConfigReloaded | EventType::ConfigReloadFailed
                ) {
                    return event;
                }
            }
        })
        .await
        .expect("no config event within 30 s")
    }

    fn current(&self) -> Arc<LoadedConfig> {
        self.watch.config().borrow().clone()
    }

    fn error(&self) -> Option<String> {
        self.watch.error().borrow().clone()
    }

    /// Puts the first file back (unchanged): the error clears, no section changed.
    async fn restore(&mut self) {
        std::fs::write(&self.path, INITIAL).unwrap();
        let event = self.next_config_event().await;
        assert_eq!(event.event, EventType::ConfigReloaded);
        assert_eq!(event.fields["sections"], serde_json::json!([]));
        assert_eq!(self.error(), None);
    }
}

/// How an editor saves: write a sibling temp file, then rename it over the original.
fn replace_by_rename(path: &Path, text: &str) {
    let tmp = path.with_file_name(".config.yaml.swp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[tokio::test]
async fn a_valid_edit_is_published_and_logged() {
    let mut f = start();
    let mut config = f.watch.config();
    std::fs::write(
        &f.path,
        "routing:\n  authorizedUsers: [alice, bob]\npolling:\n  intervalSeconds: 60\n",
    )
    .unwrap();

    let event = f.next_config_event().await;
    assert_eq!(event.event, EventType::ConfigReloaded);
    assert_eq!(event.source, Source::Cli);
    assert_eq!(
        event.fields["sections"],
        serde_json::json!(["routing", "polling"])
    );
    assert_eq!(event.fields["authorized_users"], 2);
    assert_eq!(
        event.str_field("path"),
        Some(f.path.display().to_string().as_str())
    );

    tokio::time::timeout(WAIT, config.changed())
        .await
        .unwrap()
        .unwrap();
    let now = config.borrow_and_update().clone();
    assert_eq!(now.config.polling.interval_seconds, 60);
    assert_eq!(now.config.routing.authorized_users, ["alice", "bob"]);
    assert_eq!(f.error(), None);
}

#[tokio::test]
async fn an_invalid_edit_keeps_the_old_config_until_fixed() {
    let mut f = start();
    std::fs::write(&f.path, "polling:\n  intervalSeconds: 2\n").unwrap();
    let failed = f.next_config_event().await;
    assert_eq!(failed.event, EventType::ConfigReloadFailed);
    assert_eq!(failed.level, Level::Error);
    let error = failed.str_field("error").unwrap().to_string();
    let located = format!("{}:2:", f.path.display());
    assert!(error.contains(&located), "{error}");
    assert!(error.contains("at least 5 seconds"), "{error}");
    assert_eq!(f.error().as_deref(), Some(error.as_str()));
    assert_eq!(f.current().config.polling.interval_seconds, 30);
    assert_eq!(f.current().config.routing.authorized_users, ["alice"]);

    // A typo'd key: reported with its line and column, old config still in force.
    std::fs::write(&f.path, "polling:\n  intervalSecs: 40\n").unwrap();
    let failed = f.next_config_event().await;
    assert_eq!(failed.event, EventType::ConfigReloadFailed);
    let error = failed.str_field("error").unwrap();
    assert!(
        error.contains(&format!("{}:2:3:", f.path.display())),
        "{error}"
    );
    assert_eq!(f.current().config.polling.interval_seconds, 30);

    std::fs::write(
        &f.path,
        "routing:\n  authorizedUsers: [alice]\npolling:\n  intervalSeconds: 40\n",
    )
    .unwrap();
    let fixed = f.next_config_event().await;
    assert_eq!(fixed.event, EventType::ConfigReloaded);
    assert_eq!(fixed.fields["sections"], serde_json::json!(["polling"]));
    assert_eq!(f.error(), None);
    assert_eq!(f.current().config.polling.interval_seconds, 40);
}

#[tokio::test]
async fn an_editor_style_replace_is_seen() {
    let mut f = start();
    replace_by_rename(
        &f.path,
        "tui:\n  theme: light\nrouting:\n  authorizedUsers: [alice]\n",
    );
    let event = f.next_config_event().await;
    assert_eq!(event.event, EventType::ConfigReloaded);
    // `polling` went back to its defaults (30), so only `tui` changed.
    assert_eq!(event.fields["sections"], serde_json::json!(["tui"]));
    assert_eq!(f.current().config.tui.theme, "light");

    // The watch follows the name, not the replaced inode: a second replace is seen too.
    replace_by_rename(
        &f.path,
        "tui:\n  theme: high-contrast\nrouting:\n  authorizedUsers: [alice]\n",
    );
    let event = f.next_config_event().await;
    assert_eq!(event.event, EventType::ConfigReloaded);
    assert_eq!(f.current().config.tui.theme, "high-contrast");
}

/// A file emptied (a write in place truncates it first) is valid YAML that trusts no one:
/// not taken while the running config trusts someone (issue 42).
#[tokio::test]
async fn an_emptied_file_keeps_the_old_config_and_says_so() {
    let mut f = start();
    std::fs::write(&f.path, "").unwrap();
    let event = f.next_config_event().await;
    assert_eq!(event.event, EventType::ConfigReloadFailed);
    let error = event.str_field("error").unwrap();
    assert!(error.contains("authorizedUsers is empty"), "{error}");
    assert_eq!(f.error().as_deref(), Some(error));
    assert_eq!(f.current().config.routing.authorized_users, ["alice"]);
    f.restore().await;
}

#[tokio::test]
async fn a_deleted_file_keeps_the_old_config_and_says_so() {
    let mut f = start();
    std::fs::remove_file(&f.path).unwrap();
    let event = f.next_config_event().await;
    assert_eq!(event.event, EventType::ConfigReloadFailed);
    assert!(
        event.str_field("error").unwrap().contains("removed"),
        "{event:?}"
    );
    assert!(f.error().unwrap().contains("keeping the last good config"));
    assert_eq!(f.current().config.routing.authorized_users, ["alice"]);

    // Putting it back (unchanged) clears the error without any section changing.
    f.restore().await;
}

#[test]
fn a_config_without_a_file_cannot_be_watched() {
    let defaults = LoadedConfig {
        config: Default::default(),
        path: None,
        warnings: Vec::new(),
        placeholders: Vec::new(),
    };
    let log = EventLog::open_path("/nonexistent/events.jsonl");
    let err = ConfigWatch::start(defaults, log, Source::Cli).unwrap_err();
    assert!(err.to_string().contains("config init"), "{err}");
}
