//! The simulated GitHub's clock.

use std::time::Duration;
use time::OffsetDateTime;

/// Timestamps with GitHub's precision (whole seconds) that strictly increase per
/// write, so `since` cursors see every write exactly once even when many land in the
/// same wall-clock second (the simulated clock then runs slightly ahead).
#[derive(Debug)]
pub(crate) struct SimClock {
    last: OffsetDateTime,
    /// Added to wall time; tests move time forward with `advance_clock`.
    offset: time::Duration,
}

impl SimClock {
    pub fn new() -> Self {
        Self {
            last: OffsetDateTime::UNIX_EPOCH,
            offset: time::Duration::ZERO,
        }
    }

    fn wall(&self) -> OffsetDateTime {
        let t = OffsetDateTime::now_utc() + self.offset;
        t.replace_nanosecond(0).unwrap_or(t)
    }

    /// The current time (never before the last write).
    pub fn now(&self) -> OffsetDateTime {
        self.wall().max(self.last)
    }

    /// The timestamp of a new write: strictly after every earlier one.
    pub fn tick(&mut self) -> OffsetDateTime {
        let t = self.wall().max(self.last + time::Duration::SECOND);
        self.last = t;
        t
    }

    pub fn advance(&mut self, by: Duration) {
        self.offset += time::Duration::try_from(by).unwrap_or(time::Duration::ZERO);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_strictly_increases_per_write() {
        let mut c = SimClock::new();
        let a = c.tick();
        let b = c.tick();
        let d = c.tick();
        assert!(a < b && b < d);
        assert_eq!(a.nanosecond(), 0);
        assert!(c.now() >= d);
        let before = c.now();
        c.advance(Duration::from_secs(3600));
        assert!(c.now() >= before + time::Duration::minutes(59));
    }
}
