//! Every recorded critic round (SPEC §17.7), read from the event log: a round started
//! from another screen, or by `the-loop critic run --work-item`, is listed in the
//! Critics pane as well as this screen's own. A round is its `critic.started` and, once
//! it ends, the `critic.finished` of the same process, critic and work item; the saved
//! envelope (`path`) has its output. The last [`KEPT`] rounds are kept.

use crate::events::{Event, EventType};
use crate::work_item::WorkItemRef;
use serde_json::Value;
use std::collections::VecDeque;
use std::path::PathBuf;
use time::OffsetDateTime;

/// Rounds beyond this many (oldest first) are forgotten.
pub const KEPT: usize = 50;

#[derive(Debug, Clone, PartialEq)]
pub struct LoggedRound {
    pub critic: String,
    pub work_item: WorkItemRef,
    /// The process that ran it.
    pub pid: u32,
    pub started_at: OffsetDateTime,
    /// `ts` of the `critic.started` line: with `pid`, names the round.
    pub started_ts: String,
    pub finished: Option<Finished>,
}

/// What `critic.finished` says.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    pub ok: bool,
    pub exit_code: i32,
    pub duration_secs: f64,
    pub cost_usd: Option<f64>,
    pub error: Option<String>,
    /// The saved envelope.
    pub path: Option<PathBuf>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoundLog {
    rounds: VecDeque<LoggedRound>,
}

impl RoundLog {
    /// Applies one event (feed them in log order). Rounds without a work item are not
    /// about a session and are not kept.
    pub fn observe(&mut self, event: &Event) {
        let Some(work_item) = event.work_item().and_then(|w| w.parse().ok()) else {
            return;
        };
        let critic = event.str_field("critic").unwrap_or_default().to_string();
        match event.event {
            EventType::CriticStarted => {
                let Some(started_at) = crate::time::parse_ts(&event.ts) else {
                    return;
                };
                self.rounds.push_back(LoggedRound {
                    critic,
                    work_item,
                    pid: event.pid,
                    started_at,
                    started_ts: event.ts.clone(),
                    finished: None,
                });
                while self.rounds.len() > KEPT {
                    self.rounds.pop_front();
                }
            }
            EventType::CriticFinished => {
                let round = self.rounds.iter_mut().find(|r| {
                    r.finished.is_none()
                        && r.pid == event.pid
                        && r.critic == critic
                        && r.work_item == work_item
                });
                if let Some(round) = round {
                    let num = |k: &str| event.fields.get(k).and_then(Value::as_f64);
                    round.finished = Some(Finished {
                        ok: event.fields.get("ok") == Some(&Value::Bool(true)),
                        exit_code: event
                            .fields
                            .get("exit_code")
                            .and_then(Value::as_i64)
                            .and_then(|c| i32::try_from(c).ok())
                            .unwrap_or(-1),
                        duration_secs: num("duration_seconds").unwrap_or(0.0),
                        cost_usd: num("cost_usd"),
                        error: event.str_field("error").map(str::to_string),
                        path: event.str_field("path").map(PathBuf::from),
                    });
                }
            }
            _ => {}
        }
    }

    /// Oldest first.
    pub fn rounds(&self) -> impl Iterator<Item = &LoggedRound> {
        self.rounds.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Source;

    fn started(pid: u32, critic: &str, item: &str) -> Event {
        let mut e = Event::new(Source::Critic, EventType::CriticStarted)
            .with("critic", critic)
            .with("work_item", item);
        e.pid = pid;
        e
    }

    fn finished(pid: u32, critic: &str, item: &str, ok: bool) -> Event {
        let mut e = Event::new(Source::Critic, EventType::CriticFinished)
            .with("critic", critic)
            .with("work_item", item)
            .with("ok", ok)
            .with("exit_code", if ok { 0 } else { 3 })
            .with("duration_seconds", 1.5)
            .with("path", "/state/critics/x.json");
        e.pid = pid;
        e
    }

    #[test]
    fn a_round_is_its_start_and_the_finish_of_the_same_process() {
        let mut log = RoundLog::default();
        log.observe(&started(1, "lint", "github:o/r#1"));
        log.observe(&started(2, "lint", "github:o/r#1"));
        log.observe(&finished(2, "lint", "github:o/r#1", false));
        // No work item: a critic run from a shell without --work-item.
        log.observe(&Event::new(Source::Critic, EventType::CriticStarted).with("critic", "x"));
        let rounds: Vec<&LoggedRound> = log.rounds().collect();
        assert_eq!(rounds.len(), 2);
        assert_eq!(rounds[0].finished, None, "pid 1 still runs");
        let done = rounds[1].finished.as_ref().unwrap();
        assert_eq!((done.ok, done.exit_code), (false, 3));
        assert_eq!(
            done.path.as_deref(),
            Some(std::path::Path::new("/state/critics/x.json"))
        );
    }

    #[test]
    fn only_the_last_rounds_are_kept() {
        let mut log = RoundLog::default();
        for n in 0..(KEPT as u32 + 10) {
            log.observe(&started(n, "lint", "github:o/r#1"));
        }
        assert_eq!(log.rounds().count(), KEPT);
        assert_eq!(log.rounds().next().unwrap().pid, 10);
    }
}
