use super::*;

fn at(s: &str) -> OffsetDateTime {
    crate::time::parse_ts(s).unwrap()
}

const NOW: &str = "2026-12-07T20:56:21.000Z";

#[test]
fn claude_failures_as_the_real_client_reports_them() {
    let now = at(NOW);
    let cases: &[(&str, &str, Option<LimitKind>)] = &[
        (
            "rate_limit",
            "You've hit your session limit · resets 9:56pm (UTC)",
            Some(LimitKind::UsageLimit),
        ),
        (
            "rate_limit",
            "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit",
            Some(LimitKind::RateLimit),
        ),
        (
            "server_error",
            "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment.",
            Some(LimitKind::Overloaded),
        ),
        (
            "authentication_failed",
            "Invalid API key · Fix external API key",
            Some(LimitKind::Authentication),
        ),
        ("invalid_request", "API Error: 400 bad", None),
        ("billing_error", "Credit balance is too low", None),
    ];
    for (error, message, want) in cases {
        let failure = from_claude(error, message, now);
        assert_eq!(failure.as_ref().map(|f| f.kind), *want, "{error}");
    }
    let usage = from_claude(
        "rate_limit",
        "You've hit your session limit · resets 9:56pm (UTC)",
        now,
    )
    .unwrap();
    assert_eq!(usage.resets, Some(at("2026-12-07T21:56:00Z")));
    assert_eq!(usage.source, "hook:StopFailure");
    // No reset printed: none guessed.
    let silent = from_claude("rate_limit", "You've hit your session limit", now).unwrap();
    assert_eq!(silent.resets, None);
}

fn failure(kind: LimitKind) -> Failure {
    Failure {
        kind,
        resets: None,
        said: "API Error: Request rejected (429)".into(),
        source: "hook:StopFailure".into(),
    }
}

#[test]
fn a_limit_is_hit_once_counted_on_and_cleared_by_a_turn_that_ends_well() {
    let mut limit = None;
    assert_eq!(observe(&mut limit, None, NOW), None);
    let hit = observe(&mut limit, Some(failure(LimitKind::RateLimit)), NOW);
    assert!(
        matches!(hit, Some(Change::Hit(ref l)) if l.failures == 1),
        "{hit:?}"
    );
    let again = observe(&mut limit, Some(failure(LimitKind::RateLimit)), NOW);
    assert!(
        matches!(again, Some(Change::Again(ref l)) if l.failures == 2),
        "{again:?}"
    );
    let other = observe(&mut limit, Some(failure(LimitKind::Overloaded)), NOW);
    assert!(
        matches!(other, Some(Change::Hit(ref l)) if l.failures == 3),
        "{other:?}"
    );
    let cleared = observe(&mut limit, None, NOW);
    assert!(matches!(cleared, Some(Change::Cleared(_))), "{cleared:?}");
    assert_eq!(limit, None);
}

#[test]
fn the_back_off_doubles_with_jitter_up_to_its_cap() {
    let backoff = Backoff::default();
    for failures in 1..=12u32 {
        let full = Duration::from_secs(30)
            .saturating_mul(1 << (failures - 1))
            .min(Duration::from_secs(900));
        for seed in ["a", "2026-12-07T20:56:21.000Z", "2026-12-07T20:56:21.001Z"] {
            let d = delay(&backoff, failures, seed);
            assert!(d >= full / 2 && d <= full, "{failures} {seed}: {d:?}");
            assert_eq!(
                d,
                delay(&backoff, failures, seed),
                "the same for every reader"
            );
        }
    }
    // Two sessions failing in the same second do not come back together.
    assert_ne!(
        delay(&backoff, 1, "2026-12-07T20:56:21.000Z"),
        delay(&backoff, 1, "2026-12-07T20:56:21.004Z")
    );
}

#[test]
fn deliveries_wait_for_the_printed_reset_or_the_back_off_then_one_tries() {
    let backoff = Backoff::default();
    let mut usage = Limit {
        kind: LimitKind::UsageLimit,
        resets: Some("2026-12-07T21:56:00.000Z".into()),
        source: "hook:StopFailure".into(),
        said: "You've hit your session limit · resets 9:56pm (UTC)".into(),
        at: NOW.into(),
        since: None,
        failures: 1,
        released: None,
    };
    let until = at("2026-12-07T21:57:00Z");
    assert_eq!(
        standing(&usage, &backoff, at("2026-12-07T21:56:59Z")),
        Standing::Holds { until: Some(until) }
    );
    assert_eq!(standing(&usage, &backoff, until), Standing::Try);
    usage.released = Some("2026-12-07T21:57:00.100Z".into());
    assert_eq!(standing(&usage, &backoff, until), Standing::Trying);

    let rate = Limit {
        kind: LimitKind::RateLimit,
        resets: None,
        ..usage.clone()
    };
    let rate = Limit {
        released: None,
        ..rate
    };
    let back = at(NOW) + delay(&backoff, 1, NOW);
    assert_eq!(rate.until(&backoff), Some(back));
    assert_eq!(standing(&rate, &backoff, back), Standing::Try);

    let login = Limit {
        kind: LimitKind::Authentication,
        ..rate
    };
    assert_eq!(
        standing(&login, &backoff, at("2030-01-01T00:00:00Z")),
        Standing::Holds { until: None },
        "an expired login waits for a turn that succeeds"
    );
}

#[test]
fn a_try_that_fails_again_after_the_printed_reset_backs_off() {
    let backoff = Backoff::default();
    // The try after the 21:56 reset failed on the same limit, printing the same reset:
    // no try again at once, but the back-off from that failure.
    let again = "2026-12-07T21:57:03.000Z";
    let usage = Limit {
        kind: LimitKind::UsageLimit,
        resets: Some("2026-12-07T21:56:00.000Z".into()),
        source: "hook:StopFailure".into(),
        said: "You've hit your session limit · resets 9:56pm (UTC)".into(),
        at: again.into(),
        since: Some(NOW.into()),
        failures: 2,
        released: None,
    };
    let back = at(again) + delay(&backoff, 2, again);
    assert_eq!(usage.until(&backoff), Some(back));
    assert_eq!(
        standing(
            &usage,
            &backoff,
            at(again) + std::time::Duration::from_secs(1)
        ),
        Standing::Holds { until: Some(back) }
    );
}

#[test]
fn a_limit_keeps_when_it_was_hit_across_the_turns_that_fail_on_it() {
    let (first, second, third) = (
        "2026-12-03T10:00:00.000Z",
        "2026-12-03T10:01:00.000Z",
        "2026-12-03T10:02:00.000Z",
    );
    let mut limit = None;
    observe(&mut limit, Some(failure(LimitKind::RateLimit)), first);
    observe(&mut limit, Some(failure(LimitKind::RateLimit)), second);
    let l = limit.clone().unwrap();
    assert_eq!((l.hit_at(), l.at.as_str()), (first, second));
    // Another kind is another limit.
    observe(&mut limit, Some(failure(LimitKind::Overloaded)), third);
    assert_eq!(limit.as_ref().unwrap().hit_at(), third);
    // A record of before `since`: its `at`.
    let old = Limit {
        since: None,
        ..limit.unwrap()
    };
    assert_eq!(old.hit_at(), third);
}
