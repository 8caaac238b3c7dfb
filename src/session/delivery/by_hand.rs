//! A client whose screen the-loop has not recorded (issue 30): Claude Code ships weekly,
//! and a release whose input box and dialogs were never seen cannot be looked at before
//! a paste. Its deliveries are **held** (`screen-unknown`), never pasted on a guess;
//! the operator releases them one at a time ([`Sessions::deliver_by_hand`]: `sessions
//! deliver REF`, the TUI's key), and even then a paste goes out only while the harness's
//! hooks report its turn ended and no permission pending — the hooks are the one thing
//! still known about such a client.
//!
//! The release is a mark in the record (`hold.release_one`), taken under the paste
//! lock by the next try of whatever waits first (the held event lane or a held reply),
//! so exactly one delivery goes out for it; a mark nobody could take in time is removed
//! again.

use super::deliver::{deliver, submit};
use super::hold::{Held, HoldReason};
use super::paste::{Delivered, Stopped};
use super::screen::Screen;
use crate::harness::Harness;
use crate::session::hooks::{Reported, ReportedState};
use crate::session::registry::{RegistryError, SessionRecord};
use crate::session::sessions::Sessions;
use crate::tmux::{PaneId, Tmux};
use crate::work_item::WorkItemRef;
use std::time::Duration;

/// Why a delivery by hand was refused.
#[derive(Debug, thiserror::Error)]
pub enum ByHandError {
    #[error("no session for {0}")]
    NoSession(WorkItemRef),
    #[error(
        "nothing is held on {0} for an unknown screen (deliveries held for another reason go out by themselves once it clears)"
    )]
    NothingHeld(WorkItemRef),
    #[error(
        "{item}: its hooks do not report the turn ended ({state}): a paste now could land in a dialog or a draft; try again once it is idle"
    )]
    NotIdle { item: WorkItemRef, state: String },
    #[error("{0}: a permission is pending: answer it first (`the-loop sessions approve|deny`)")]
    PermissionPending(WorkItemRef),
    #[error(
        "{0}: nothing went out within the wait (the supervisor delivers it: is `the-loop run` or `tui` running?); the release was taken back"
    )]
    NotTaken(WorkItemRef),
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

/// Whether the hooks allow a paste into a client whose screen cannot be read: the
/// turn ended (`idle`) and no permission request is open.
fn hooks_allow(item: &WorkItemRef, reported: Option<&Reported>) -> Result<(), ByHandError> {
    let Some(reported) = reported else {
        return Err(ByHandError::NotIdle {
            item: item.clone(),
            state: "nothing reported yet".into(),
        });
    };
    if reported.permission.is_some() || reported.state == ReportedState::AwaitingPermission {
        return Err(ByHandError::PermissionPending(item.clone()));
    }
    if reported.state != ReportedState::Idle {
        return Err(ByHandError::NotIdle {
            item: item.clone(),
            state: reported.state.as_str().to_string(),
        });
    }
    Ok(())
}

impl Sessions {
    /// Whether the-loop reads the screen of the client `record`'s session runs. A
    /// record from before releases were recorded is asked about now (the binary's
    /// answer is cached; only a client whose screen is read is asked), so an upgrade
    /// of the-loop does not hold a known client.
    pub(super) async fn screen_of(&self, harness: &Harness, record: &SessionRecord) -> Screen {
        let version = match &record.harness_version {
            Some(version) => Some(version.clone()),
            None => {
                let settings = self.settings();
                let program = harness.locate(settings.search_path.as_deref()).ok();
                let version = match program {
                    Some(program) => {
                        crate::session::spawn::client_version(harness, &program, &record.work_item)
                            .await
                    }
                    None => None,
                };
                if let Some(found) = &version {
                    let found = found.clone();
                    let _ = self
                        .registry
                        .update(&record.work_item, |r| r.harness_version = Some(found));
                }
                version
            }
        };
        Screen::of(harness, version.as_deref())
    }

    /// A paste into a client whose screen is unknown: held, unless the operator
    /// released one and the hooks say the turn ended; then pasted and submitted as for
    /// a harness whose screen the-loop does not read, and the release is used up.
    pub(super) async fn paste_by_hand(
        &self,
        tmux: &dyn Tmux,
        pane: &PaneId,
        text: &str,
        record: &SessionRecord,
        in_box: bool,
    ) -> Result<Delivered, Stopped> {
        let held = Stopped::Held(Held {
            reason: HoldReason::ScreenUnknown,
            pasted: false,
        });
        if record.hold.release_one.is_none() {
            return Err(held);
        }
        // As the screen path does: a turn that just ended is still running its hooks.
        let reported = self.settled_report(&record.work_item).await;
        if hooks_allow(&record.work_item, reported.as_ref()).is_err() {
            return Err(held);
        }
        // Used up before the paste: a failure after it must not let a second one out.
        // Not recorded as used up, nothing goes out (it stays held).
        if let Err(error) = self
            .registry
            .update(&record.work_item, |r| r.hold.release_one = None)
        {
            tracing::warn!(work_item = %record.work_item, "release by hand not taken: {error}");
            return Err(held);
        }
        let in_box = in_box.then_some(&record.work_item);
        self.paste_blind(tmux, pane, text, in_box).await
    }

    /// Paste and submit after `submitDelayMs`, looking at nothing: a harness whose
    /// screen the-loop does not read. `in_box`: the session whose text is in the box
    /// already (its paste in doubt, settled): only its Enter is pressed.
    pub(super) async fn paste_blind(
        &self,
        tmux: &dyn Tmux,
        pane: &PaneId,
        text: &str,
        in_box: Option<&WorkItemRef>,
    ) -> Result<Delivered, Stopped> {
        let bytes = if let Some(item) = in_box {
            tokio::time::sleep(self.submit_delay()).await;
            submit(tmux, pane).await?;
            self.set_unsubmitted(item, None).await;
            crate::guard::sanitize(text).len()
        } else {
            deliver(tmux, pane, text, self.submit_delay()).await?.bytes
        };
        Ok(Delivered {
            pane: pane.clone(),
            bytes,
            respawned: None,
        })
    }

    /// Lets one delivery held for an unknown screen go out (`sessions deliver REF`),
    /// waiting up to `wait` for the supervisor's next try to take it. Refused while
    /// the hooks do not report the turn ended, or a permission is pending; the release
    /// is taken back when nothing took it in time. Returns how many deliveries still
    /// wait.
    pub async fn deliver_by_hand(
        &self,
        item: &WorkItemRef,
        wait: Duration,
    ) -> Result<usize, ByHandError> {
        let record = self
            .registry
            .get(item)?
            .ok_or_else(|| ByHandError::NoSession(item.clone()))?;
        let item = record.work_item.clone();
        let held = record.hold.summary();
        if held.as_ref().map(|h| h.reason) != Some(HoldReason::ScreenUnknown) {
            return Err(ByHandError::NothingHeld(item));
        }
        hooks_allow(&item, record.reported.as_ref())?;
        let before = held.map_or(0, |h| h.count);
        let now = crate::time::now_ts();
        self.registry
            .update(&item, |r| r.hold.release_one = Some(now))?;
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let record = self.registry.get(&item)?;
            let taken = record.as_ref().is_none_or(|r| r.hold.release_one.is_none());
            if taken {
                return Ok(record.and_then(|r| r.hold.summary()).map_or(0, |h| h.count));
            }
            if tokio::time::Instant::now() >= deadline {
                self.registry.update(&item, |r| r.hold.release_one = None)?;
                // Taken at the last moment: it went out after all.
                let left = self.registry.get(&item)?.and_then(|r| r.hold.summary());
                return match left.map_or(0, |h| h.count) {
                    n if n < before => Ok(n),
                    _ => Err(ByHandError::NotTaken(item)),
                };
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[cfg(test)]
#[path = "by_hand_tests.rs"]
mod tests;
