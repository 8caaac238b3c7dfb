//! A client release nobody recorded (issues 30, 40). Claude Code ships every few days,
//! so the release a session runs is often newer than any the-loop recorded. Its screen
//! is read with the newest recorded release's rules, and a paste goes out only when
//! that reading and the harness's hooks agree ([`witnesses`](super::witnesses)):
//! [`Sessions::hear_witnesses`] judges, records what was seen live of the release
//! ([`ClientReleases`]) and, where the two disagree, keeps the screen and what each said
//! in the record (`hold.unread`) — the delivery is held `screen-unread`.
//!
//! Such a hold goes out by itself once the witnesses agree. The operator may also let
//! one delivery out by hand ([`Sessions::deliver_by_hand`]: `sessions deliver REF`, the
//! TUI's key), and even then a paste goes out only while the hooks report its turn
//! ended and no permission pending. The release is a mark in the record
//! (`hold.release_one`), taken under the paste lock by the next try of whatever waits
//! first (the held event lane or a held reply), so exactly one delivery goes out for
//! it; a mark nobody could take in time is removed again.

use super::deliver::{deliver, submit};
use super::hold::{Held, HoldReason, UnreadScreen};
use super::paste::{Delivered, Stopped};
use super::screen::Screen;
use super::seen_live::{ClientReleases, Sight};
use super::witnesses::{Disagreement, HooksSay, ScreenSays, Verdict, Witnessed, judge};
use crate::harness::Harness;
use crate::session::hooks::{Reported, ReportedState};
use crate::session::registry::{RegistryError, SessionRecord};
use crate::session::sessions::Sessions;
use crate::tmux::{PaneId, Tmux};
use crate::work_item::WorkItemRef;
use std::time::Duration;

/// How long the witnesses must disagree before the hold says so (`screen-unread`,
/// notified at once): until then it waits as `not-ready`, unannounced. Claude Code's
/// footer names no mode for a moment after some keys (Ctrl-U, Ctrl-C).
pub const UNREAD_AFTER: Duration = Duration::from_secs(5);

/// Why a delivery by hand was refused.
#[derive(Debug, thiserror::Error)]
pub enum ByHandError {
    #[error("no session for {0}")]
    NoSession(WorkItemRef),
    #[error(
        "nothing is held on {0} because its hooks and screen disagree (deliveries held for another reason go out by themselves once it clears)"
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

    /// The screen of the client `record`'s session runs, as [`Self::screen_of`] reads
    /// it; a harness that no longer resolves is not read.
    pub(crate) async fn client_screen(&self, record: &SessionRecord) -> Screen {
        match Harness::resolve(&record.harness, &self.settings().sessions) {
            Ok(harness) => self.screen_of(&harness, record).await,
            Err(_) => Screen::NotRead,
        }
    }

    /// Where what was seen live of client releases is kept: the state root's
    /// `clients/`, beside the sessions' records.
    pub fn client_releases(&self) -> ClientReleases {
        let sessions = self.registry.dir();
        let root = crate::paths::StatePaths::new(sessions.parent().unwrap_or(sessions));
        ClientReleases::new(root.clients_dir())
    }

    /// How the-loop reads the screen of the client release `record`'s session runs, for
    /// people: `Claude Code 2.1.337 · read with 2.1.332's rules · seen live: idle ✓
    /// dialog – draft –`, `Claude Code 2.1.332 · recorded`. `None` for a harness whose
    /// screen is not read, or whose release is not known yet.
    pub fn client_reading(&self, record: &SessionRecord) -> Option<String> {
        let harness = Harness::resolve(&record.harness, &self.settings().sessions).ok()?;
        let reader = super::screen::Reader::of(harness.screen())?;
        let version = record.harness_version.as_deref()?;
        let seen = self.client_releases().seen(reader, version);
        Some(format!(
            "{} {version} · {}",
            reader.client(),
            super::seen_live::describe(reader, version, &seen)
        ))
    }

    /// The two witnesses' verdict on a paste into `record`'s session, which runs a
    /// release nobody recorded; what they agreed on is marked seen live of that
    /// release, and where they disagree the screen is kept and what each said goes in
    /// the record (`hold.unread`, cleared once they agree again).
    pub(super) async fn hear_witnesses(
        &self,
        record: &SessionRecord,
        said: &Witnessed<'_>,
    ) -> Verdict {
        let started = record.permission_mode;
        let hooks = HooksSay::of(said.reported);
        let screen = ScreenSays::of(
            said.look,
            || super::screen::blank(said.screen),
            || said.reader.shown_mode(said.screen),
            started,
        );
        let verdict = judge(hooks, &screen, started);
        let sight = match (&verdict, hooks) {
            (Verdict::Paste, _) => Some(Sight::Idle),
            (Verdict::Wait(HoldReason::PermissionDialog), HooksSay::PermissionPending) => {
                Some(Sight::Dialog)
            }
            (Verdict::Wait(HoldReason::OperatorDraft), HooksSay::Idle) => Some(Sight::Draft),
            _ => None,
        };
        if let (Some(sight), Some(version)) = (sight, said.version) {
            let (releases, reader, version) =
                (self.client_releases(), said.reader, version.to_string());
            let _ =
                tokio::task::spawn_blocking(move || releases.mark(reader, &version, sight)).await;
        }
        match &verdict {
            // Held `screen-unread` once it lasts: a screen caught between two states (a
            // footer redrawn after a keystroke) is waited out as `not-ready`.
            Verdict::Unread(disagreement)
                if !self.note_unread(record, said, disagreement).await =>
            {
                return Verdict::Wait(HoldReason::NotReady);
            }
            Verdict::Unread(_) => {}
            _ if record.hold.unread.is_some() => {
                let cleared = self
                    .registry
                    .update_async(&record.work_item, |r| r.hold.unread = None)
                    .await;
                if let Err(error) = cleared {
                    tracing::warn!(work_item = %record.work_item, "{error}");
                }
            }
            _ => {}
        }
        verdict
    }

    /// Records what each witness said; when they have said the same for
    /// [`UNREAD_AFTER`] (returns `true`: confirmed), keeps the screen (once per
    /// disagreement).
    async fn note_unread(
        &self,
        record: &SessionRecord,
        said: &Witnessed<'_>,
        disagreement: &Disagreement,
    ) -> bool {
        let hash = screen_hash(said.screen);
        let before = record
            .hold
            .unread
            .as_ref()
            .filter(|u| u.said == *disagreement);
        let since = before.map_or_else(crate::time::now_ts, |u| u.since.clone());
        let lasted = crate::time::parse_ts(&since)
            .and_then(|at| Duration::try_from(time::OffsetDateTime::now_utc() - at).ok())
            .is_some_and(|age| age >= UNREAD_AFTER);
        let confirmed = before.is_some() && lasted;
        // One screen kept per disagreement (a spinner would make each look a new screen),
        // and nothing rewritten while it waits to be confirmed.
        if before.is_some_and(|u| u.kept.is_some() || !confirmed) {
            return confirmed;
        }
        let kept = match (before.filter(|_| confirmed), said.version) {
            (None, _) => None,
            (_, Some(version)) => {
                let (releases, reader) = (self.client_releases(), said.reader);
                let (version, slug, screen) = (
                    version.to_string(),
                    record.work_item.slug(),
                    said.screen.to_string(),
                );
                tokio::task::spawn_blocking(move || {
                    releases.keep_screen(reader, &version, &slug, &screen)
                })
                .await
                .ok()
                .flatten()
            }
            (_, None) => None,
        };
        if confirmed {
            tracing::warn!(
                work_item = %record.work_item,
                "held screen-unread: {}",
                disagreement.describe()
            );
        }
        let unread = UnreadScreen {
            said: disagreement.clone(),
            kept,
            screen_hash: hash,
            since,
        };
        let saved = self
            .registry
            .update_async(&record.work_item, |r| r.hold.unread = Some(unread))
            .await;
        if let Err(error) = saved {
            tracing::warn!(work_item = %record.work_item, "{error}");
        }
        confirmed
    }

    /// A paste into a session whose witnesses disagree: held, unless the operator
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
            reason: HoldReason::ScreenUnread,
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
            channel: None,
        })
    }

    /// Lets one delivery held `screen-unread` go out (`sessions deliver REF`),
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
        if held.as_ref().map(|h| h.reason) != Some(HoldReason::ScreenUnread) {
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

/// A short hash of a screen: the same screen is kept once.
fn screen_hash(screen: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    screen.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

#[cfg(test)]
#[path = "unrecorded_tests.rs"]
mod tests;
