//! The one paste path (SPEC §7.4): sanitize, load a fresh buffer from stdin and paste
//! it bracketed, wait, then submit with a separate unbracketed `\r` paste.
//!
//! Never `send-keys`: it resolves a client and fails when a read-only client is
//! attached. Per-session FIFO order is the caller's job (one delivery at a time per
//! pane); deliveries to different panes may run concurrently, which is why every
//! delivery uses its own buffer names.

use super::screen::Reader;
use crate::tmux::{self, BufferName, PaneId, Paste, Tmux};
use std::time::Duration;

/// What a successful delivery pasted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    /// Bytes pasted (after sanitizing), not counting the submitting `\r`.
    pub bytes: usize,
    /// Characters the sanitizer removed.
    pub removed: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum DeliverError {
    #[error("nothing to deliver: the text is empty once control characters are removed")]
    Empty,
    #[error("could not paste into pane {pane}: {error}")]
    Paste {
        pane: String,
        #[source]
        error: tmux::Error,
    },
    /// The paste never showed in an empty, ready input box: nothing is in the box, so
    /// delivering again later pastes it once.
    #[error(
        "the paste into pane {pane} did not show in the agent's input box; nothing was submitted"
    )]
    NotShown { pane: String },
    /// The text is in the agent's input box but was not submitted: re-delivering would
    /// paste it twice.
    #[error(
        "the text was pasted into pane {pane} but not submitted ({error}); press Enter in the pane instead of re-delivering"
    )]
    Submit {
        pane: String,
        #[source]
        error: tmux::Error,
    },
}

impl DeliverError {
    /// The session's host could not be reached before the text reached the pane.
    pub fn host_away(&self) -> bool {
        !self.pasted() && matches!(self.tmux_error(), Some(tmux::Error::Unreachable { .. }))
    }

    /// The pane died or vanished before the text reached it (respawn, when liveness is
    /// known).
    pub fn pane_gone(&self) -> bool {
        !self.pasted()
            && matches!(
                self.tmux_error(),
                Some(tmux::Error::PaneDead { .. } | tmux::Error::SessionMissing { .. })
            )
    }

    /// The tmux failure behind this error, to decide between respawn and retry.
    pub fn tmux_error(&self) -> Option<&tmux::Error> {
        match self {
            Self::Empty | Self::NotShown { .. } => None,
            Self::Paste { error, .. } | Self::Submit { error, .. } => Some(error),
        }
    }

    /// Whether the text reached the pane (only the submit failed).
    pub fn pasted(&self) -> bool {
        matches!(self, Self::Submit { .. })
    }

    /// The buffer of a paste the dropped connection to its host left in doubt, loaded
    /// there until it is settled.
    pub fn in_doubt(&self) -> Option<&BufferName> {
        match self {
            Self::Paste {
                error: tmux::Error::InDoubt { buffer, .. },
                ..
            } => Some(buffer),
            _ => None,
        }
    }
}

/// Pastes `text` into `pane` as one bracketed paste, then submits it: the path for a
/// harness whose screen the-loop does not know (SPEC §18.2 `screen: unknown`). One whose
/// screen it knows is pasted with [`paste_text`] and submitted with [`submit`] only after
/// a look at the pane (`Sessions::paste_into`).
pub async fn deliver<T: Tmux + ?Sized>(
    tmux: &T,
    pane: &PaneId,
    text: &str,
    submit_delay: Duration,
) -> Result<Delivery, DeliverError> {
    let delivery = paste_text(tmux, pane, text).await?;
    if !submit_delay.is_zero() {
        tokio::time::sleep(submit_delay).await;
    }
    submit(tmux, pane).await?;
    Ok(delivery)
}

/// Sanitizes `text` and pastes it into `pane` as one bracketed paste, not submitted.
pub async fn paste_text<T: Tmux + ?Sized>(
    tmux: &T,
    pane: &PaneId,
    text: &str,
) -> Result<Delivery, DeliverError> {
    let clean = crate::guard::sanitize(text);
    if clean.is_empty() {
        return Err(DeliverError::Empty);
    }
    let delivery = Delivery {
        bytes: clean.len(),
        removed: text.chars().count() - clean.chars().count(),
    };
    paste_once(tmux, clean.as_bytes(), pane, Paste::Bracketed)
        .await
        .map_err(|error| DeliverError::Paste {
            pane: pane.to_string(),
            error,
        })?;
    Ok(delivery)
}

/// The submitting Enter, a separate unbracketed `\r` paste. A failure means the text
/// is in the box unsubmitted ([`DeliverError::pasted`]).
pub async fn submit<T: Tmux + ?Sized>(tmux: &T, pane: &PaneId) -> Result<(), DeliverError> {
    paste_once(tmux, b"\r", pane, Paste::Plain)
        .await
        .map_err(|error| DeliverError::Submit {
            pane: pane.to_string(),
            error,
        })
}

/// How often a submit that was not taken is pressed again.
pub const MAX_RESUBMITS: u32 = 2;

/// How long a harness gets to take a submit before its input box is looked at.
pub const SUBMIT_CHECK_WAIT: Duration = Duration::from_millis(300);

/// How long a paste may stay in the box after the Enter before it is taken as lost.
pub const SUBMIT_GRACE: Duration = Duration::from_secs(2);

/// How long [`confirm_submitted`] waits, and how often it looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubmitCheck {
    /// Before the first look.
    pub wait: Duration,
    /// How long the paste may stay in the box, the harness reporting no prompt,
    /// before Enter is pressed again.
    pub grace: Duration,
    /// Between looks.
    pub poll: Duration,
}

impl SubmitCheck {
    /// One look after `wait`, no grace: the paste still in the box is pressed again.
    pub fn once(wait: Duration) -> Self {
        Self {
            wait,
            grace: Duration::ZERO,
            poll: Duration::ZERO,
        }
    }
}

/// Makes sure a delivery's submit was taken, for a harness whose input box shows a
/// paste folded until it is submitted (`Reader::paste_marker`: Claude Code's `[Pasted
/// text #1 +12 lines]`, Codex's `[Pasted Content 2030 chars]`).
/// A harness busy with the paste when the `\r` arrives (a loaded machine) can take the
/// `\r` on an empty box and keep the paste unsubmitted. While the box still shows the
/// marker for `check.grace`, Enter is pressed again, at most [`MAX_RESUBMITS`] times.
///
/// `taken` says whether the harness reported a prompt submitted since the Enter
/// (its hooks): then nothing is pressed, whatever the box shows. Claude Code 2.1.197
/// takes an Enter that lands while its turn is ending, and still shows the paste in
/// the box; a second Enter would send it twice (decision `2026-12-02-submit-check`).
/// Returns how often it pressed; a screen that cannot be read is left alone.
pub async fn confirm_submitted<T: Tmux + ?Sized>(
    tmux: &T,
    pane: &PaneId,
    reader: Reader,
    check: SubmitCheck,
    mut taken: impl FnMut() -> bool,
) -> u32 {
    let mut pressed = 0;
    loop {
        tokio::time::sleep(check.wait).await;
        let deadline = tokio::time::Instant::now() + check.grace;
        loop {
            let screen = match tmux.capture_pane(pane, false).await {
                Ok(screen) => screen,
                Err(error) => {
                    tracing::debug!(%pane, "submit not checked: {error}");
                    return pressed;
                }
            };
            if !reader.holds_paste(&screen) {
                return pressed;
            }
            if taken() {
                tracing::warn!(%pane, "the harness took the submit but still shows the paste in its input box; not pressing Enter again (clear the box by hand)");
                return pressed;
            }
            if tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(check.poll).await;
        }
        if pressed == MAX_RESUBMITS {
            tracing::warn!(%pane, "the paste is still in the input box after {pressed} more Enter presses; press Enter in the pane");
            return pressed;
        }
        tracing::warn!(%pane, "the submit was not taken (the paste is still in the input box); pressing Enter again");
        if let Err(error) = press(tmux, pane, Key::Enter).await {
            tracing::warn!(%pane, "could not press Enter again: {error}");
            return pressed;
        }
        pressed += 1;
    }
}

/// A fixed keystroke for a harness's own dialog (SPEC §17.4): never text from anywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// Chooses the selected option (Claude's "1. Yes").
    Enter,
    /// Dismisses the dialog (Claude's deny).
    Escape,
}

/// Sends `key` to `pane` as one unbracketed paste (like the submitting `\r`: no
/// `send-keys`, which fails while a read-only client is attached).
pub async fn press<T: Tmux + ?Sized>(tmux: &T, pane: &PaneId, key: Key) -> Result<(), tmux::Error> {
    let bytes: &[u8] = match key {
        Key::Enter => b"\r",
        Key::Escape => b"\x1b",
    };
    paste_once(tmux, bytes, pane, Paste::Plain).await
}

/// Loads `data` into a fresh buffer and pastes it. On failure the buffer is deleted,
/// best effort, so a failed delivery leaves nothing on the server — except a text's paste
/// in doubt ([`tmux::Error::InDoubt`]), whose buffer is what settles it (a key's is
/// not settled: its submit fails, and the operator is told to look).
async fn paste_once<T: Tmux + ?Sized>(
    tmux: &T,
    data: &[u8],
    pane: &PaneId,
    paste: Paste,
) -> Result<(), tmux::Error> {
    let buffer = BufferName::unique();
    let result = tmux.paste_text(&buffer, data, pane, paste).await;
    let settles_later =
        paste == Paste::Bracketed && matches!(result, Err(tmux::Error::InDoubt { .. }));
    if result.is_err() && !settles_later {
        // Usually there is nothing to delete (the load failed); then this fails quietly.
        if let Err(error) = tmux.delete_buffer(&buffer).await {
            tracing::debug!(%buffer, "buffer cleanup after a failed delivery: {error}");
        }
    }
    result
}

#[cfg(test)]
#[path = "deliver_tests.rs"]
mod tests;
