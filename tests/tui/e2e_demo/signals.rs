//! However the demo ends, it cleans up: stopped by a signal, or with its screen
//! crashing under it.

use crate::support::demo::{Outer, assert_all_gone, wait_until};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::collections::BTreeSet;
use std::time::Duration;

/// Waits until the demo agent has its first delivery on screen, recording the demo's
/// processes on the way.
fn running(outer: &Outer) -> (i32, BTreeSet<i32>) {
    let demo = outer.demo_pid();
    let mut pids = BTreeSet::new();
    wait_until(
        "the first delivery",
        Duration::from_secs(90),
        || {
            pids.extend(outer.demo_processes(demo));
            outer.screen().contains("✓ delivered").then_some(())
        },
        || outer.screen(),
    );
    pids.extend(outer.demo_processes(demo));
    (demo, pids)
}

/// The screen child: in the demo's session, running `the-loop tui`.
fn screen_pid(pids: &BTreeSet<i32>, demo: i32) -> i32 {
    *pids
        .iter()
        .find(|p| {
            **p != demo
                && std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c.split('\0').nth(1) == Some("tui"))
        })
        .expect("the screen process")
}

/// The demo exits with `status`, leaves nothing, says `says`, and the terminal is back on
/// its main screen.
fn assert_ended(outer: &Outer, pids: &BTreeSet<i32>, status: i32, says: &str) {
    let exit = outer.wait_exit(Duration::from_secs(30));
    assert_eq!(exit, status, "{}", outer.screen());
    assert_all_gone(outer, pids);
    let screen = outer.screen();
    assert!(screen.contains(says), "{screen}");
    assert!(screen.contains("cleaned up"), "{screen}");
    assert!(
        !outer.alternate_screen(),
        "the terminal is left on the alternate screen"
    );
}

#[test]
fn sigterm_stops_the_demo_and_cleans_up() {
    let outer = Outer::start_demo();
    let (demo, pids) = running(&outer);
    kill(Pid::from_raw(demo), Signal::SIGTERM).unwrap();
    assert_ended(&outer, &pids, 0, "stopped by SIGTERM");
}

#[test]
fn a_crashed_screen_is_cleaned_up_after_and_the_terminal_restored() {
    let outer = Outer::start_demo();
    let (demo, pids) = running(&outer);
    let tui = screen_pid(&pids, demo);
    kill(Pid::from_raw(tui), Signal::SIGKILL).unwrap();
    assert_ended(&outer, &pids, 1, "was killed by signal 9");
}
