//! What is known of a host's connection, and the one way it is put into words (the
//! `hosts list` line, the screen's status bar).

use std::time::Duration;

/// A host's connection as last seen: what `hosts list` and the status bar show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostState {
    /// Not tried yet.
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
}
