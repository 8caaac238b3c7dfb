//! Usage and cost per session against the real Claude Code (each pinned release) and the
//! tests' fake model reporting a different `usage` on every response (SPEC §20.5): text
//! turns, a
//! tool turn, both cache-write kinds, a sub-agent. The session's totals — in
//! `sessions list --json` and `the-loop usage` — equal the fake's sums exactly, in
//! tokens and in dollars; a budget crossing holds the next delivery and tells it;
//! raising the budget releases the delivery once.

use crate::support::assert_usd;
use crate::support::claude_world::{ClaudeWorld, item};
use crate::support::fake_model::{Sent, Turn};
use serde_json::{Value, json};
use the_loop::session::DeliveryFailure;
use the_loop::session::PromptInputs;
use the_loop::session::delivery::HoldReason;

/// The sums of what the agent loop's responses reported (a sub-agent's included):
/// input, output, 5 m writes, 1 h writes, reads.
fn sums(sent: &[Sent]) -> [u64; 5] {
    let mut out = [0u64; 5];
    for s in sent.iter().filter(|s| s.agent_loop) {
        let u = &s.usage;
        let n = |v: &Value| v.as_u64().unwrap();
        out[0] += n(&u["input_tokens"]);
        out[1] += n(&u["output_tokens"]);
        out[2] += n(&u["cache_creation"]["ephemeral_5m_input_tokens"]);
        out[3] += n(&u["cache_creation"]["ephemeral_1h_input_tokens"]);
        out[4] += n(&u["cache_read_input_tokens"]);
    }
    out
}

/// The model the fake answers as, and its price in the test's config: named here, not
/// whichever model the client under test defaults to (2.1.332 asks for one the embedded
/// table does not price, and no price is made up for a real model).
const MODEL: &str = "claude-the-loop-test";
const PRICING: &str = "pricing: {models: {claude-the-loop-test: {input: 5, output: 25}}}\n";

/// The world every test here runs in: the fake answers as [`MODEL`], priced.
async fn world() -> Option<ClaudeWorld> {
    let world = ClaudeWorld::new().await?;
    world.model.vary_usage();
    world.model.answer_as(MODEL);
    world.configure(PRICING);
    Some(world)
}

/// USD at [`PRICING`] ($5 / $25; writes 1.25 × and 2 ×, reads 0.1 × input, as the-loop
/// derives them), as the-loop computes it: tokens × price per million, kind by kind.
fn priced_cost(t: [u64; 5]) -> f64 {
    let prices = [5.0, 25.0, 6.25, 10.0, 0.5];
    t.iter()
        .zip(prices)
        .map(|(n, p)| *n as f64 * p)
        .sum::<f64>()
        / 1_000_000.0
}

fn tokens_of(v: &Value) -> [u64; 5] {
    [
        "input",
        "output",
        "cacheWrite5m",
        "cacheWrite1h",
        "cacheRead",
    ]
    .map(|k| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sessions_totals_equal_what_the_model_reported() {
    let Some(world) = world().await else {
        return;
    };
    world.start().await;
    std::fs::write(world.home.project.join("notes.txt"), "hello\n").unwrap();
    let path = world.home.project.join("notes.txt").display().to_string();
    // A tool turn (Read needs no permission), then text.
    world.model.script([
        Turn::Tool {
            name: "Read".into(),
            input: json!({"file_path": path}),
        },
        Turn::text("It says hello."),
    ]);
    world.deliver("d-1", "Read notes.txt, please.").await;
    world.wait_events("session.turn_ended", 2).await;
    // A sub-agent: its own requests (with tools) answer from the same script.
    let tools: Vec<String> = world.model.agent_requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    let agent_tool = ["Agent", "Task"]
        .into_iter()
        .find(|t| tools.iter().any(|n| n == t))
        .unwrap_or_else(|| panic!("no sub-agent tool among {tools:?}"));
    world.model.script([
        Turn::Tool {
            name: agent_tool.into(),
            input: json!({"description": "Summarize notes", "prompt": "Say hi.",
                          "subagent_type": "general-purpose"}),
        },
        Turn::text("Hi from the sub-agent."),
        Turn::text("The sub-agent said hi."),
    ]);
    world.deliver("d-2", "Ask a sub-agent.").await;
    world.wait_events("session.turn_ended", 3).await;
    world.wait_events("session.usage", 3).await;

    let sent = world.model.sent();
    let want = sums(&sent);
    assert!(
        want[2] > 0 && want[3] > 0,
        "both cache-write kinds: {want:?}"
    );
    assert!(
        sent.iter().filter(|s| s.agent_loop).count() >= 6,
        "boot, tool, text, agent call, sub-agent, text: {sent:#?}"
    );
    let transcripts = the_loop_transcripts(&world);
    assert!(
        transcripts.iter().any(|p| p.contains("/subagents/")),
        "the sub-agent wrote its own transcript: {transcripts:#?}"
    );
    let row = world.listed();
    let usage = &row["usage"];
    assert_eq!(tokens_of(usage), want, "{usage:#}");
    assert_usd(&usage["costUsd"], priced_cost(want));
    assert_eq!(usage["known"], true);
    let models: Vec<&str> = usage["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["model"].as_str())
        .collect();
    assert_eq!(
        models,
        [MODEL],
        "counted as the model that answered: {usage:#}"
    );
    let out = world.cli(&["usage", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(tokens_of(&report["total"]), want);
    assert_usd(&report["total"]["costUsd"], priced_cost(want));
    assert_eq!(report["bytesRead"], 0, "the hook kept it current");
    // The last session.usage told the same totals.
    let told = world.events_named("session.usage");
    let last = told.last().unwrap();
    assert_eq!(last["input"], want[0]);
    assert_eq!(last["cache_write_1h"], want[3]);
    assert_usd(&last["cost_usd"], priced_cost(want));
}

fn the_loop_transcripts(world: &ClaudeWorld) -> Vec<String> {
    crate::support::claude::walk(&world.home.home.join(".claude/projects"))
        .into_iter()
        .map(|p| p.display().to_string())
        .collect()
}

fn inputs(id: &str, body: &str) -> PromptInputs {
    PromptInputs {
        event: "issue_comment".into(),
        action: "created".into(),
        delivery_id: id.into(),
        repository: "octo/repo".into(),
        excerpt: json!({"comment": {"user": {"login": "alice"}, "body": body}}).to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_crossing_holds_the_next_delivery_until_the_budget_is_raised() {
    let Some(world) = world().await else {
        return;
    };
    // A day's budget the boot turn alone crosses (a cent), read by the hook.
    world.configure("budgets: {dailyUsd: 0.001}\n");
    let mut settings = (*world.sessions.settings()).clone();
    world.start().await;
    let over = world.wait_events("session.over_budget", 1).await;
    assert_eq!(over[0]["scope"], "daily");
    assert_eq!(over[0]["work_item"], item().to_string());
    let before = world.model.agent_requests().len();

    let held = world
        .sessions
        .deliver_event(&item(), &inputs("d-1", "ONE MORE THING"))
        .await
        .unwrap_err();
    assert!(
        matches!(held, DeliveryFailure::Held(h) if h.reason == HoldReason::OverBudget),
        "{held:?}"
    );
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert_eq!(
        world.model.agent_requests().len(),
        before,
        "nothing reached the model"
    );
    assert!(!world.screen().contains("ONE MORE THING"), "nothing pasted");
    // The CLI reply is refused with a clear message; nothing is queued.
    let out = world.cli(&[
        "reply",
        "--work-item",
        &item().to_string(),
        "--text",
        "go on",
        "--no-comment",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("over budget"),
        "{out:?}"
    );

    // Raised (what a hot reload does to the settings): delivered, once.
    settings.budgets.daily_usd = Some(100.0);
    world.sessions.set_settings(settings);
    world
        .sessions
        .deliver_event(&item(), &inputs("d-1", "ONE MORE THING"))
        .await
        .unwrap();
    world.wait_events("session.turn_ended", 2).await;
    let reached: Vec<String> = world
        .model
        .agent_requests()
        .iter()
        .filter_map(|r| r.last_user_text())
        .filter(|t| t.contains("ONE MORE THING"))
        .collect();
    assert_eq!(reached.len(), 1, "{reached:#?}");
}
