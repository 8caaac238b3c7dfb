//! Other hosts in the status bar (issue 32): the loop reads the backend's hosts beside
//! each snapshot, so a host's state shows within a refresh; without hosts the bar is as
//! it always was (every other snapshot of this crate has none).

use super::event_loop::{Rig, drive, quiet_snapshot, wait};
use crate::support::tui_app::*;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::time::Duration;
use the_loop::ssh::HostState;
use the_loop::tui::app::App;
use the_loop::tui::backend::HostView;
use the_loop::tui::sample;

fn host(name: &str, state: HostState) -> HostView {
    HostView {
        name: name.into(),
        state,
    }
}

fn up(ms: u64) -> HostState {
    HostState::Up {
        rtt: Duration::from_millis(ms),
    }
}

fn unreachable() -> HostState {
    HostState::Unreachable {
        reason: "host `gpu`: cannot connect (Connection refused)".into(),
    }
}

/// Runs the loop on the fake backend with `hosts`; `then` changes them after the first
/// snapshot, and the loop runs one refresh more. Returns the app as last updated.
async fn run_with(hosts: Vec<HostView>, then: Option<Vec<HostView>>, w: u16, h: u16) -> App {
    let (rig, mut console) = Rig::new(quiet_snapshot());
    rig.backend.set_hosts(hosts);
    rig.backend
        .set_capture(&sample::item("octo/repo", 15), &sample::capture());
    let mut app = App::new(settings(), NOW);
    app.area = ratatui::layout::Rect::new(0, 0, w, h);
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    {
        let rig = &rig;
        drive(rig, &mut console, &mut app, &mut terminal, async move {
            wait(1_000).await;
            if let Some(hosts) = then {
                rig.backend.set_hosts(hosts);
                wait(3_000).await;
            }
            rig.press("q");
        })
        .await
        .unwrap();
    }
    app
}

fn top_line(app: &App) -> String {
    screen(app).lines().next().unwrap_or_default().to_string()
}

#[tokio::test(start_paused = true)]
async fn each_host_shows_up_unreachable_or_unknown() {
    let hosts = vec![
        host("build-1", up(4)),
        host("gpu", unreachable()),
        host("spare", HostState::Unknown),
    ];
    let app = run_with(hosts.clone(), None, 120, 32).await;
    assert_eq!(app.status.hosts, hosts);
    snap("hosts_120x32", screen(&app));
    // Narrow: a host that does not answer is kept longer than the rate and webhook.
    let app = run_with(hosts, None, 80, 24).await;
    let top = top_line(&app);
    assert!(top.contains("gpu ✗ unreachable"), "{top}");
    snap("hosts_80x24", screen(&app));
}

#[tokio::test(start_paused = true)]
async fn a_host_that_drops_shows_within_a_refresh_and_none_shows_nothing() {
    let app = run_with(
        vec![host("build-1", up(4))],
        Some(vec![host("build-1", unreachable())]),
        120,
        32,
    )
    .await;
    let top = top_line(&app);
    assert!(top.contains("build-1 ✗ unreachable"), "{top}");
    assert!(!top.contains("build-1 ✓"), "{top}");

    let app = run_with(Vec::new(), None, 120, 32).await;
    assert!(app.status.hosts.is_empty());
    assert_eq!(
        top_line(&app),
        top_line(&app_with(quiet_snapshot(), 120, 32))
    );
}
