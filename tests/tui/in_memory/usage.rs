//! Usage on the screen (SPEC §20.3, §20.4): the Sessions column (`1.2M $3.41`, `$?`
//! for an unpriced model, `—` for a harness that reports nothing, `!` over budget),
//! the header's total for today, a held delivery marked `over budget`, and one
//! notification per budget reached.

use crate::support::tui_app::*;
use the_loop::tui::action::{Action, Effect, Request};
use the_loop::tui::app::Mode;
use the_loop::tui::sample;

#[test]
fn the_sessions_pane_and_header_show_usage_and_budgets() {
    let app = app_with(sample::snapshot_with_usage(NOW), 140, 30);
    snap("usage_140x30", screen(&app));
    let text = screen(&app);
    assert!(text.contains("1.2M $3.41"), "{text}");
    assert!(text.contains("340.0k $?"), "an unpriced model: {text}");
    assert!(text.contains("!2.5M $12.80"), "over budget: {text}");
    assert!(
        text.contains("—"),
        "a session whose usage is unknown: {text}"
    );
    assert!(text.contains("!2.5M $12.80 ⏸ 1 held"), "{text}");
    // Today's total: one session's cost is unknown, so the total is too.
    assert!(text.contains("today 1.2M $?"), "{text}");
}

#[test]
fn reaching_a_budget_notifies_once() {
    let mut snapshot = sample::snapshot(NOW);
    let mut app = app_with(snapshot.clone(), 140, 30);
    snapshot.sessions[0].usage = Some(the_loop::tui::backend::UsageView {
        label: "2.5M $12.80".into(),
        over_budget: true,
        budget_warning: true,
        today_tokens: 2_500_000,
        today_usd: Some(12.8),
    });
    let fx = send(&mut app, Action::Snapshot(Box::new(snapshot.clone())));
    let bells = fx.iter().filter(|e| matches!(e, Effect::Bell)).count();
    assert_eq!(bells, 2, "80 % and 100 %, once each: {fx:?}");
    let again = send(&mut app, Action::Snapshot(Box::new(snapshot)));
    assert!(
        !again.iter().any(|e| matches!(e, Effect::Bell)),
        "{again:?}"
    );
}

#[test]
fn a_budget_already_reached_at_start_is_not_news_and_a_raised_one_can_notify_again() {
    let bells = |fx: &[Effect]| fx.iter().filter(|e| matches!(e, Effect::Bell)).count();
    // sample::snapshot_with_usage has a session over budget from the start.
    let over = sample::snapshot_with_usage(NOW);
    let mut app = the_loop::tui::app::App::new(settings(), NOW);
    let first = send(&mut app, Action::Snapshot(Box::new(over.clone())));
    assert_eq!(bells(&first), 0, "{first:?}");
    assert_eq!(
        bells(&send(&mut app, Action::Snapshot(Box::new(over.clone())))),
        0
    );
    // The budget is raised: the mark goes; crossing it again notifies again.
    let mut raised = over.clone();
    for s in &mut raised.sessions {
        if let Some(u) = &mut s.usage {
            u.over_budget = false;
            u.budget_warning = false;
        }
    }
    assert_eq!(
        bells(&send(&mut app, Action::Snapshot(Box::new(raised)))),
        0
    );
    assert!(bells(&send(&mut app, Action::Snapshot(Box::new(over)))) >= 1);
}

fn requests(fx: &[Effect]) -> Vec<Request> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Request(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_reply_to_a_session_over_budget_asks_first() {
    let mut snapshot = sample::snapshot(NOW);
    snapshot.sessions[0].usage = Some(the_loop::tui::backend::UsageView {
        label: "2.5M $12.80".into(),
        over_budget: true,
        budget_warning: true,
        today_tokens: 2_500_000,
        today_usd: Some(12.8),
    });
    let item = snapshot.sessions[0].work_item.clone();
    let mut app = app_with(snapshot, 120, 32);
    keys(&mut app, &["r"]);
    type_text(&mut app, "keep going");
    let fx = keys(&mut app, &["alt-enter"]);
    assert!(requests(&fx).is_empty(), "nothing sent yet: {fx:?}");
    assert!(matches!(app.mode, Mode::Confirm(_)), "{:?}", app.mode);
    snap("usage_confirm_reply", screen(&app));
    assert!(screen(&app).contains("over its budget"));
    // No: back to the box, the text still in it.
    keys(&mut app, &["n"]);
    let Mode::Reply(reply) = &app.mode else {
        panic!("back to the reply box: {:?}", app.mode)
    };
    assert_eq!(reply.textarea.lines().join("\n"), "keep going");
    keys(&mut app, &["alt-enter"]);
    let fx = keys(&mut app, &["y"]);
    let sent = requests(&fx);
    assert_eq!(
        sent,
        [Request::Reply {
            work_item: item,
            text: "keep going".into(),
            over_budget: true,
        }]
    );
    // Yes, then the delivery fails: the text stays for another try.
    send(
        &mut app,
        Action::Done {
            request: sent[0].clone(),
            result: Err(the_loop::tui::backend::ActionError::Failed(
                "no pane".into(),
            )),
        },
    );
    let Mode::Reply(reply) = &app.mode else {
        panic!("the box stays: {:?}", app.mode)
    };
    assert_eq!(reply.textarea.lines().join("\n"), "keep going");
    assert!(!reply.sending);
}
