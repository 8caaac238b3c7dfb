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
        let tmux = RealTmux::from_config(config);
        let registry = Registry::new(paths, events.clone(), source);
        Self::new(Arc::new(tmux), registry, events, settings).with_ledger(Arc::new(ledger))
    }
}
