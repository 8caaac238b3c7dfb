//! The one way a process builds its [`Sessions`]: tmux from the config, the registry
//! and the event log of the state root, the settings in force, and the poll-ledger
//! hook `reset` forgets an item's ledger entry through. The supervisor and every
//! command that works on sessions in-process (`sessions`, `reply`, a viewer `tui`)
//! build theirs here, so a session behaves the same whichever process touches it.
//!
//! It lives with the supervisor because the ledger hook does ([`PollLedgerHook`]);
//! `session` itself knows only the `LedgerHook` trait.

use super::PollLedgerHook;
use crate::config::{Config, LoadedConfig};
use crate::events::{EventLog, Source};
use crate::ingress::ledger::LedgerStore;
use crate::paths::StatePaths;
use crate::routing::prompt::PromptError;
use crate::session::{Registry, Sessions, Settings};
use crate::tmux::RealTmux;
use crate::tmux::env_handoff::EnvHandoff;
use std::sync::Arc;

impl Sessions {
    /// The sessions of a process without a poller of its own: its own handle on the
    /// event log, the ledger hook that leaves the poller a note. `source` signs the
    /// registry's events. Fails on a broken prompt template.
    pub fn open(
        loaded: &LoadedConfig,
        paths: &StatePaths,
        source: Source,
    ) -> Result<Self, PromptError> {
        let settings = Settings::new(&loaded.config, loaded.path.clone(), paths)?;
        let events = EventLog::open(paths);
        Ok(Self::wire(
            &loaded.config,
            paths,
            source,
            settings,
            events,
            None,
        ))
    }

    /// [`Sessions::open`] from parts the caller already has: the supervisor's settings
    /// (checked before it takes its lock), its event log (the one that rotates) and the
    /// poller's in-memory ledgers.
    pub(crate) fn wire(
        config: &Config,
        paths: &StatePaths,
        source: Source,
        settings: Settings,
        events: EventLog,
        ledgers: Option<&LedgerStore>,
    ) -> Self {
        let ledger = match ledgers {
            Some(store) => PollLedgerHook::with_store(paths.clone(), store.clone()),
            None => PollLedgerHook::new(paths.clone()),
        };
        let handoff = EnvHandoff::new(settings.bin.clone(), paths.spawn_env_dir());
        let tmux = RealTmux::from_config(config).with_env_handoff(handoff);
        let registry = Registry::new(paths, events.clone(), source);
        let hosts = crate::tmux::Hosts::from_config(config, &paths.ssh_dir());
        Self::new(Arc::new(tmux), registry, events, settings)
            .with_ledger(Arc::new(ledger))
            .with_hosts(hosts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingress::ledger;
    use crate::session::{Origin, SessionRecord};
    use crate::work_item::WorkItemRef;

    /// Sessions opened by any command leave the poller its note on a reset (the `reply`
    /// and viewer-TUI sessions had no ledger hook before there was one wiring).
    #[tokio::test]
    async fn sessions_opened_by_any_command_forget_a_reset_item_in_the_poll_ledger() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        let mut config = Config::default();
        // A tmux server nobody runs: the reset finds no pane there and starts none.
        config.sessions.tmux.socket = format!("the-loop-wiring-{}", std::process::id());
        let loaded = LoadedConfig {
            config,
            path: None,
            warnings: Vec::new(),
            placeholders: Vec::new(),
        };
        let item = WorkItemRef::new("octo", "repo", 15);
        for source in [Source::Cli, Source::Tui] {
            let sessions = Sessions::open(&loaded, &paths, source).unwrap();
            let record = SessionRecord::new(&item, "agent", dir.path().to_path_buf());
            sessions.registry().put(&record).unwrap();
            let ended = sessions.reset(&item, &Origin::cli()).await.unwrap();
            assert!(!ended.tmux_killed);
            assert!(sessions.registry().get(&item).unwrap().is_none());
        }
        assert_eq!(ledger::pending_forgets(&paths, "octo/repo").len(), 2);
    }
}
