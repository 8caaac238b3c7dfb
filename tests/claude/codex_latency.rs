//! Figures for issue 41, run by hand (`cargo test --test claude -- --ignored
//! codex_latency --nocapture`): how long a comment takes from its delivery to the
//! model's request, pasted into codex's TUI or sent through its app server, over 50
//! each against the real codex and the fake model, and how many processes a session
//! runs either way. Printed, never asserted: speed is not a test's verdict.

use crate::codex_channel::session_processes;
use crate::codex_delivery::CodexWorld;
use std::time::{Duration, Instant};
use the_loop::session::hooks::ReportedState;

/// Deliveries measured per channel.
const ROUNDS: usize = 50;

/// Delivers `ROUNDS` comments one after another, each once the turn before ended; the
/// time from each delivery's start to the model's request that brought it.
async fn latencies(world: &CodexWorld) -> Vec<Duration> {
    let mut took = Vec::new();
    for n in 0..ROUNDS {
        let needle = format!("MARK{n:03}X");
        let sent = Instant::now();
        world
            .deliver_once_released(&format!("d-{n}"), &format!("{needle}: go on."))
            .await;
        let arrived = world
            .wait("the comment to reach the model", || {
                world.model.arrival_of(&needle)
            })
            .await;
        took.push(arrived.saturating_duration_since(sent));
        world
            .wait("codex's turn to end", || {
                (world.reported() == Some(ReportedState::Idle)).then_some(())
            })
            .await;
    }
    took.sort();
    took
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[at]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "figures, run by hand"]
async fn codex_latency_paste_vs_app_server() {
    for channel in ["paste", "app-server"] {
        let world = match channel {
            "paste" => CodexWorld::new().await,
            _ => CodexWorld::with_app_server().await,
        };
        let Some(world) = world else { return };
        world.start().await;
        let processes = session_processes(&world.tmux);
        let took = latencies(&world).await;
        eprintln!(
            "figure: codex {channel}: delivery → model request over {ROUNDS}: p50 {:?}, p99 {:?}, max {:?}; processes in the session's panes: {processes}",
            quantile(&took, 0.5),
            quantile(&took, 0.99),
            took.last().unwrap(),
        );
        assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
    }
}
