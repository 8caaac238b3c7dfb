//! What is known of a host's connection, the one way it is put into words (the
//! `hosts list` line, the screen's status bar), and the one place it changes
//! ([`StateCell`]), which reports each change.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// A host's connection as last seen: what `hosts list` and the status bar show.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum HostState {
    /// Not tried yet.
    #[default]
    Unknown,
    /// Connected; `rtt` is the last round trip of a command through the connection.
    Up { rtt: Duration },
    /// The last attempt failed; calls fail fast until it is tried again.
    Unreachable { reason: String },
}

impl HostState {
    /// `up`, `unreachable`, `unknown`.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Up { .. } => "up",
            Self::Unreachable { .. } => "unreachable",
        }
    }

    /// The last round trip in whole milliseconds, while up.
    pub fn rtt_ms(&self) -> Option<u64> {
        match self {
            Self::Up { rtt } => Some(u64::try_from(rtt.as_millis()).unwrap_or(u64::MAX)),
            _ => None,
        }
    }

    /// Why the host is unreachable.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::Unreachable { reason } => Some(reason),
            _ => None,
        }
    }

    /// `up 4 ms`, `unreachable: …`, `not tried`: the whole state in one line.
    pub fn describe(&self) -> String {
        match self {
            Self::Unknown => "not tried".into(),
            Self::Up { .. } => format!("up {} ms", self.rtt_ms().unwrap_or_default()),
            Self::Unreachable { reason } => format!("unreachable: {reason}"),
        }
    }
}

/// A transport's state, and the one place its changes are reported: whoever moves it —
/// a ping, a command that failed or got through, a connect — the subscriber hears of
/// each change once, in order.
#[derive(Debug, Default)]
pub(super) struct StateCell {
    state: Mutex<HostState>,
    changes: Mutex<Option<UnboundedSender<HostState>>>,
}

impl StateCell {
    pub(super) fn get(&self) -> HostState {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Each change from now on — unknown, up, unreachable; a new round trip or another
    /// reason is no change. The state now comes first when it is known. One
    /// subscriber: subscribing again replaces the previous one.
    pub(super) fn changes(&self) -> UnboundedReceiver<HostState> {
        let (tx, rx) = unbounded_channel();
        // Under the state's lock, so no change slips between the read and the subscription.
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if *state != HostState::Unknown {
            let _ = tx.send(state.clone());
        }
        *self.changes.lock().unwrap_or_else(PoisonError::into_inner) = Some(tx);
        rx
    }

    /// The one way the state moves: a change is reported as it is made.
    pub(super) fn set(&self, state: HostState) {
        let mut current = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let changed = current.label() != state.label();
        *current = state;
        if changed
            && let Some(changes) = &*self.changes.lock().unwrap_or_else(PoisonError::into_inner)
        {
            let _ = changes.send(current.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_has_a_label_a_figure_and_a_line() {
        let up = HostState::Up {
            rtt: Duration::from_micros(4_700),
        };
        assert_eq!(
            (up.label(), up.rtt_ms(), up.reason()),
            ("up", Some(4), None)
        );
        assert_eq!(up.describe(), "up 4 ms");
        let down = HostState::Unreachable {
            reason: "no route".into(),
        };
        assert_eq!(
            (down.label(), down.rtt_ms(), down.reason()),
            ("unreachable", None, Some("no route"))
        );
        assert_eq!(down.describe(), "unreachable: no route");
        assert_eq!(HostState::Unknown.label(), "unknown");
        assert_eq!(HostState::Unknown.describe(), "not tried");
    }

    #[test]
    fn each_change_of_state_is_reported_once_in_order() {
        let host = StateCell::default();
        let up = |ms| HostState::Up {
            rtt: Duration::from_millis(ms),
        };
        let down = |why: &str| HostState::Unreachable { reason: why.into() };
        let mut changes = host.changes();
        host.set(up(4));
        host.set(up(9)); // another round trip: no change
        host.set(down("refused"));
        host.set(down("timed out")); // another reason: no change
        host.set(up(5));
        host.set(HostState::Unknown);
        let mut seen = Vec::new();
        while let Ok(state) = changes.try_recv() {
            seen.push(state);
        }
        assert_eq!(seen, [up(4), down("refused"), up(5), HostState::Unknown]);

        // A subscriber that comes later hears the state as it is first, when it is known.
        host.set(down("no route"));
        let mut later = host.changes();
        assert_eq!(later.try_recv().unwrap(), down("no route"));
        host.set(up(1));
        assert_eq!(later.try_recv().unwrap(), up(1));
        assert_eq!(changes.try_recv().unwrap(), down("no route"));
        assert!(
            changes.try_recv().is_err(),
            "replaced: the first hears no more"
        );
    }
}
