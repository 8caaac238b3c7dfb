//! Held deliveries as the screen shows them (SPEC §18.3): the Sessions row's mark
//! (`⏸ 2 held: permission dialog`), the selected session's detail line, the reply
//! that was queued behind a hold, and when a long hold notifies like a question.

use super::backend::SessionView;
use super::text::{age, short_ref};
use crate::session::delivery::{HeldSummary, HoldReason};
use crate::work_item::WorkItemRef;
use std::collections::HashSet;
use time::OffsetDateTime;

/// One hold: its session and when it began. A hold that clears and comes back is a new
/// one (a new `since`), and notifies again.
pub type HoldKey = (WorkItemRef, String);

/// When the hold began; `None` when the record's time does not parse.
pub fn since(held: &HeldSummary) -> Option<OffsetDateTime> {
    crate::time::parse_ts(&held.since)
}

/// The Sessions row's mark, longest first: `⏸ 2 held: permission dialog`,
/// `⏸ 2 held`, `⏸ 2`.
pub fn marks(held: &HeldSummary) -> [String; 3] {
    [
        held.label(),
        format!("⏸ {} held", held.count),
        format!("⏸ {}", held.count),
    ]
}

/// The selected session's detail line, longest first:
/// `⏸ 2 held: permission dialog · 1m · answer it first` (for `screen-unread`, first with
/// what each witness said), then without the advice, then without the age, then the
/// row's shorter marks.
pub fn details(held: &HeldSummary, now: OffsetDateTime) -> Vec<String> {
    let label = held.label();
    let mut out = Vec::new();
    if let Some(at) = since(held) {
        let waited = age((now - at).whole_seconds());
        // Witnesses that disagree are named first (`screen-unread`).
        if let Some(said) = &held.witnesses {
            out.push(format!("{label} · {waited} · {}", said.describe()));
        }
        out.push(format!("{label} · {waited} · {}", held.reason.advice()));
        out.push(format!("{label} · {waited}"));
    }
    out.extend(marks(held));
    out
}

/// What the TUI's reply says when the reply was queued behind a hold rather than pasted.
pub fn reply_queued(item: &WorkItemRef, reason: HoldReason) -> String {
    format!(
        "held: {} waits on {} — {}; the reply goes out once that clears",
        short_ref(item),
        reason.describe_waiting(),
        reason.advice()
    )
}

/// The notifications due at `now`: one for each hold that has lasted `after_secs` or
/// more and has not notified yet (it is then remembered in `notified`). `after_secs` 0
/// turns them off. Returns `(title, body)` pairs.
pub fn due_notices(
    sessions: &[SessionView],
    now: OffsetDateTime,
    after_secs: u64,
    notified: &mut HashSet<HoldKey>,
) -> Vec<(String, String)> {
    if after_secs == 0 {
        return Vec::new();
    }
    let after = i64::try_from(after_secs).unwrap_or(i64::MAX);
    sessions
        .iter()
        .filter_map(|s| {
            let held = s.held.as_ref()?;
            let waited = (now - since(held)?).whole_seconds();
            // Witnesses that disagree, a login that expired, or the client's limit menu
            // need the operator: it notifies at once.
            let due = match held.reason {
                HoldReason::ScreenUnread | HoldReason::Login | HoldReason::LimitMenu => 0,
                _ => after,
            };
            if waited < due || !notified.insert(key(s, held)) {
                return None;
            }
            let title = format!("the-loop: deliveries held on {}", short_ref(&s.work_item));
            let body = format!(
                "{} held for {}: {} — {}",
                held.count,
                age(waited),
                held.reason_text(),
                held.reason.advice()
            );
            Some((title, body))
        })
        .collect()
}

/// What notifies once: a hold, or — for `limit` and `login` — the limit: its lane's
/// hold ends as each delivery goes out (the try after the reset) and begins again
/// behind it, while the limit is one.
fn key(session: &SessionView, held: &HeldSummary) -> HoldKey {
    let limit = matches!(held.reason, HoldReason::Limit | HoldReason::Login);
    let since = match held.limit_since.as_ref().filter(|_| limit) {
        Some(hit) => format!("limit {hit}"),
        None => held.since.clone(),
    };
    (session.work_item.clone(), since)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::backend::SessionState;
    use crate::tui::sample;
    use time::Duration;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-12-03 10:00:00 UTC);

    fn held_since(at: OffsetDateTime) -> SessionView {
        let mut s = sample::session(
            "octo/repo",
            12,
            "claude",
            SessionState::AwaitingPermission,
            0,
        );
        s.held = Some(HeldSummary {
            count: 2,
            reason: HoldReason::PermissionDialog,
            since: crate::time::format_ts(at),
            client: None,
            witnesses: None,
            limit: None,
            limit_since: None,
        });
        s
    }

    #[test]
    fn witnesses_that_disagree_are_named_first() {
        let mut held = sample::held(NOW, 1, HoldReason::ScreenUnread, 5);
        held.client = Some("Claude Code 2.1.400".into());
        held.witnesses = Some(crate::session::delivery::Disagreement {
            hooks: "a permission request pending".into(),
            screen: "an empty input box, no dialog".into(),
        });
        let forms = details(&held, NOW);
        assert_eq!(
            forms[0],
            "⏸ 1 held: screen unread (Claude Code 2.1.400) · 5s · hooks: a permission request pending; screen: an empty input box, no dialog"
        );
        assert!(forms[1].contains("look at the pane"), "{forms:?}");
    }

    #[test]
    fn a_hold_notifies_once_after_the_threshold_and_a_new_hold_again() {
        let mut notified = HashSet::new();
        let sessions = [held_since(NOW - Duration::seconds(59))];
        assert!(
            due_notices(&sessions, NOW, 60, &mut notified).is_empty(),
            "not before the threshold"
        );
        let later = NOW + Duration::seconds(1);
        assert_eq!(
            due_notices(&sessions, later, 60, &mut notified),
            [(
                "the-loop: deliveries held on octo/repo#12".to_string(),
                "2 held for 1m: permission dialog — answer it first".to_string()
            )]
        );
        let much_later = NOW + Duration::minutes(10);
        assert!(
            due_notices(&sessions, much_later, 60, &mut notified).is_empty(),
            "not again for the same hold"
        );
        // It cleared and another began: that one notifies in its turn.
        let again = [held_since(much_later)];
        assert!(due_notices(&again, much_later, 60, &mut notified).is_empty());
        let after = much_later + Duration::seconds(60);
        assert_eq!(due_notices(&again, after, 60, &mut notified).len(), 1);
    }

    fn limited(reason: HoldReason, hold_since: i64, limit_hit: &str) -> SessionView {
        let mut s = held_since(NOW - Duration::seconds(hold_since));
        if let Some(h) = s.held.as_mut() {
            h.reason = reason;
            h.limit = Some("usage limit · resets 14:00".into());
            h.limit_since = Some(limit_hit.into());
        }
        s
    }

    #[test]
    fn an_expired_login_notifies_at_once_and_a_limit_once_per_limit() {
        let mut notified = HashSet::new();
        let login = [limited(HoldReason::Login, 0, "2026-12-03T09:00:00.000Z")];
        let due = due_notices(&login, NOW, 60, &mut notified);
        assert_eq!(due.len(), 1, "at once");
        assert!(
            due[0].1.starts_with("2 held for 0s: login expired"),
            "{due:?}"
        );

        let hit = "2026-12-03T09:30:00.000Z";
        let first = [limited(HoldReason::Limit, 59, hit)];
        assert!(due_notices(&first, NOW, 60, &mut notified).is_empty());
        let later = NOW + Duration::seconds(1);
        assert_eq!(due_notices(&first, later, 60, &mut notified).len(), 1);
        // The try went out and the rest are held again: the same limit, quiet.
        let again = [limited(HoldReason::Limit, 120, hit)];
        let much_later = NOW + Duration::minutes(10);
        assert!(due_notices(&again, much_later, 60, &mut notified).is_empty());
        // Another limit on that session notifies in its turn.
        let next = [limited(HoldReason::Limit, 120, "2026-12-03T10:05:00.000Z")];
        assert_eq!(due_notices(&next, much_later, 60, &mut notified).len(), 1);
    }

    #[test]
    fn zero_never_notifies_and_nothing_held_is_quiet() {
        let mut notified = HashSet::new();
        let held = [held_since(NOW - Duration::hours(1))];
        assert!(due_notices(&held, NOW, 0, &mut notified).is_empty());
        let mut free = held_since(NOW - Duration::hours(1));
        free.held = None;
        assert!(due_notices(&[free], NOW, 60, &mut notified).is_empty());
        let mut garbled = held_since(NOW - Duration::hours(1));
        if let Some(h) = garbled.held.as_mut() {
            h.since = "a while ago".into();
        }
        assert!(due_notices(&[garbled], NOW, 60, &mut notified).is_empty());
        assert!(notified.is_empty());
    }

    #[test]
    fn the_detail_shrinks_from_advice_to_the_bare_count() {
        let s = held_since(NOW - Duration::seconds(90));
        let forms = details(s.held.as_ref().unwrap(), NOW);
        assert_eq!(
            forms,
            [
                "⏸ 2 held: permission dialog · 1m · answer it first",
                "⏸ 2 held: permission dialog · 1m",
                "⏸ 2 held: permission dialog",
                "⏸ 2 held",
                "⏸ 2",
            ]
        );
    }
}
