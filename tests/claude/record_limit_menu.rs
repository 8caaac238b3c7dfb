//! Records Claude Code's `/rate-limit-options` menu, which 2.1.197 opens on a session's
//! first usage limit (issue 43), by hand: `THE_LOOP_RECORD_DIR=DIR cargo test --test
//! claude -- --ignored record_limit_menu`. Writes `rate_limit_menu.WxH.{txt,ansi}`.

use crate::support::claude_world::{ClaudeWorld, item};
use crate::support::fake_model::ApiError;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "records a screen by hand"]
async fn record_limit_menu() {
    let Some(world) = ClaudeWorld::new().await else {
        return;
    };
    let dir = std::env::var("THE_LOOP_RECORD_DIR").unwrap_or_else(|_| "/tmp".into());
    crate::limits::subscriber(&world);
    world.start().await;
    let reset = time::OffsetDateTime::now_utc().unix_timestamp() / 60 * 60 + 3600;
    world.model.fail_with(Some(ApiError::usage_limit(reset)));
    world.deliver("d-1", "usage limited").await;
    world.wait_events("session.limit_hit", 1).await;
    let shown = Instant::now();
    while !world.screen().contains("Stop and wait for limit to reset") {
        assert!(
            shown.elapsed() < Duration::from_secs(20),
            "{}",
            world.screen()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let target = format!("={}:", item().tmux_session_name());
    for (w, h) in [(160, 48), (100, 30)] {
        let (w, h) = (w.to_string(), h.to_string());
        let resized = world
            .tmux
            .raw(&["resize-window", "-t", &target, "-x", &w, "-y", &h]);
        assert!(resized.status.success(), "{resized:?}");
        tokio::time::sleep(Duration::from_secs(2)).await;
        for (flags, ext) in [(&["-p"][..], "txt"), (&["-p", "-e"][..], "ansi")] {
            let mut args = vec!["capture-pane", "-t", &target];
            args.extend(flags);
            let out = world.tmux.raw(&args);
            let path = format!("{dir}/rate_limit_menu.{w}x{h}.{ext}");
            std::fs::write(&path, &out.stdout).unwrap();
            eprintln!("recorded {path}");
        }
    }
    assert_eq!(world.shut_down(), Vec::<i32>::new(), "processes left");
}
