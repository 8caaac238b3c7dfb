//! Critics (SPEC §9): one-shot reviewers declared in the operator config (never in a
//! repository), run once as a subprocess over review material, answering with one JSON
//! envelope.
//!
//! The flow, one module per step: [`spec`] validates the raw `critics[]` entries;
//! [`round`] checks a request, substitutes [`placeholders`] and builds the argv (a
//! harness critic's comes from the harness adapter); [`run`] runs the process in its own
//! group with capped capture; [`envelope`] reads the result and [`findings`] the places
//! it names that hold in the worktree; [`results`] saves it and
//! logs `critic.*` events; [`post`] puts the round on GitHub, marked (a review with line
//! comments for the [`findings`] on a pull request's diff).
//!
//! The CLI (`the-loop critic …`) and the TUI call the same functions:
//! [`results::run_round`] is the whole round, cancellable by dropping its future. The
//! TUI is handed a [`CriticRunner`] ([`service`]): the round and the posting, built with
//! the client by whoever wires the screen.

pub mod envelope;
pub mod findings;
pub mod placeholders;
pub mod post;
mod remote;
pub mod results;
pub mod round;
pub mod run;
pub mod service;
pub mod spec;

pub use envelope::{Envelope, Header, Usage};
pub use findings::{Finding, Severity};
pub use post::Posted;
pub use results::{Recorder, run_round, run_round_until};
pub use round::{Prompt, Request, RunError, prepare};
pub use service::{CriticRunner, PostError};
pub use spec::{CriticSpec, parse_all};

use spec::CriticEntry;

use crate::config::Config;
use serde::Serialize;
use std::path::PathBuf;

/// Every `critics[]` entry of `config`, validated.
pub fn entries(config: &Config) -> Vec<CriticEntry> {
    parse_all(&config.critics, &config.sessions)
}

/// The runnable critic called `name`: an unknown name, an invalid entry (or one sharing
/// its name) is a [`RunError`].
pub fn find<'a>(entries: &'a [CriticEntry], name: &str) -> Result<&'a CriticSpec, RunError> {
    let entry = entries
        .iter()
        .find(|e| e.name.as_deref() == Some(name))
        .ok_or_else(|| RunError::NoSuchCritic {
            name: name.to_string(),
            known: entries.iter().filter_map(|e| e.name.clone()).collect(),
        })?;
    entry
        .spec
        .as_ref()
        .map_err(|e| RunError::Invalid(e.clone()))
}

/// One row of `critic list`: what the entry runs and whether it can.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Listing {
    pub index: usize,
    pub name: Option<String>,
    pub valid: bool,
    pub enabled: bool,
    pub harness: Option<String>,
    pub model: Option<String>,
    /// The executable it starts (a `command`, or the harness's binary).
    pub program: Option<String>,
    /// Where that executable was found on PATH.
    pub path: Option<PathBuf>,
    /// Valid, enabled and its executable found.
    pub available: bool,
    pub error: Option<String>,
}

/// The `critic list` rows, in config order.
pub fn listing(entries: &[CriticEntry]) -> Vec<Listing> {
    entries.iter().map(listing_row).collect()
}

fn listing_row(entry: &CriticEntry) -> Listing {
    match &entry.spec {
        Err(e) => Listing {
            index: entry.index,
            name: entry.name.clone(),
            valid: false,
            enabled: false,
            harness: None,
            model: None,
            program: None,
            path: None,
            available: false,
            error: Some(e.to_string()),
        },
        Ok(spec) => {
            let path = spec.locate();
            let error = if !spec.enabled {
                Some("disabled (enabled: false)".to_string())
            } else if path.is_none() {
                Some(format!(
                    "`{}` is not on PATH: install it or give its full path",
                    spec.program()
                ))
            } else {
                None
            };
            Listing {
                index: entry.index,
                name: Some(spec.name.clone()),
                valid: true,
                enabled: spec.enabled,
                harness: spec.harness.clone(),
                model: spec.model.clone(),
                program: Some(spec.program().to_string()),
                available: error.is_none(),
                path,
                error,
            }
        }
    }
}
