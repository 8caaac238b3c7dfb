//! SPEC §15.4 end to end: no webhook delivery is lost without notice. A `tmux` wrapper
//! first on the supervisor's `PATH` injects the faults — a failed paste, a paste held
//! (so the supervisor can be killed with `kill -9` at that step) — into the real paste
//! path; the comment must then reach the agent exactly once (at most twice when the
//! supervisor died after the text was submitted, before it could record that).

use super::webhook::{payload, send};
use crate::support::e2e::{Setup, World, real_tmux};
use std::path::Path;
use std::time::Duration;

/// A directory holding the `tmux` wrapper and the files that steer it:
/// `fail-text` (the next text paste fails, once), `hold-text` (the next text paste
/// waits while the file exists — `held-text` says it is waiting — then fails without
/// pasting) and `hold-submit` (the submit of the next delivery runs, then waits while
/// the file exists — `held-submit` — as if the process died before recording it).
struct FaultyTmux {
    dir: tempfile::TempDir,
}

impl FaultyTmux {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script = format!(
            r#"#!/bin/sh
# tmux with injected faults, for the-loop's end-to-end tests (tests/ingress/e2e_ingress/claims.rs).
real='{real}'
dir='{dir}'
case " $* " in
  *" loadb "*|*" load-buffer "*)
    tmp=$(mktemp "$dir/stdin.XXXXXX")
    cat > "$tmp"
    if [ "$(wc -c < "$tmp")" -gt 1 ]; then step=text; else step=submit; fi
    if [ "$step" = text ] && [ -e "$dir/fail-text" ]; then
      rm -f "$dir/fail-text" "$tmp"; echo "injected paste failure" >&2; exit 1
    fi
    if [ "$step" = text ] && [ -e "$dir/hold-text" ]; then
      touch "$dir/held-text"
      while [ -e "$dir/hold-text" ]; do sleep 0.05; done
      rm -f "$tmp"; echo "injected paste failure after a hold" >&2; exit 1
    fi
    "$real" "$@" < "$tmp"; status=$?
    rm -f "$tmp"
    if [ "$step" = submit ] && [ -e "$dir/hold-submit" ]; then
      touch "$dir/held-submit"
      while [ -e "$dir/hold-submit" ]; do sleep 0.05; done
    fi
    exit $status ;;
esac
exec "$real" "$@"
"#,
            real = real_tmux().display(),
            dir = dir.path().display(),
        );
        let wrapper = dir.path().join("tmux");
        std::fs::write(&wrapper, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn set(&self, name: &str) {
        std::fs::write(self.path().join(name), b"").unwrap();
    }

    fn clear(&self, name: &str) {
        let _ = std::fs::remove_file(self.path().join(name));
    }

    async fn wait_for(&self, w: &World, name: &str) {
        let file = self.path().join(name);
        w.wait(&format!("the wrapper's `{name}`"), || {
            file.exists().then_some(())
        })
        .await;
    }
}

impl Drop for FaultyTmux {
    fn drop(&mut self) {
        // Let any wrapper still waiting go.
        for name in ["hold-text", "hold-submit"] {
            self.clear(name);
        }
    }
}

/// A supervised world with a webhook server and the faulty tmux; returns it with the
/// server's address once the first cycle baselined #15.
async fn world(faults: &FaultyTmux) -> (World, String) {
    let setup = Setup {
        server: true,
        // A held paste must outlast a poll cycle or two without timing out.
        tmux_timeout_seconds: 120,
        path_prefix: Some(faults.path().to_path_buf()),
        ..Setup::default()
    };
    let mut w = World::new(setup).await;
    w.watched_issue(15);
    w.start_session(15).await;
    w.start_supervisor();
    let addr = server_addr(&w).await;
    w.wait_cycles(1).await;
    (w, addr)
}

async fn server_addr(w: &World) -> String {
    let pid = w.pid();
    let started = w.wait_event("server.started", |e| e["pid"] == pid).await;
    started["listen"].as_str().unwrap().to_string()
}

/// Posts alice's comment `text` on #15 and delivers its webhook; returns the id.
async fn hooked_comment(w: &World, addr: &str, text: &str) -> u64 {
    let id = w.comment(15, "alice", text);
    let body = payload(w, 15, id).await;
    assert_eq!(send(addr, &format!("gh-{id}"), &body).await, 202);
    id
}

/// No `duplicate-delivery` was logged for the poll twin of `id` (the first version
/// logged one and then lost the comment).
fn no_poll_duplicate(w: &World, id: u64) -> bool {
    let polled = format!("poll-comment-{id}");
    !w.events_named("routing.dropped")
        .iter()
        .any(|e| e["delivery_id"] == polled.as_str())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_paste_that_fails_after_the_poller_saw_the_comment_is_retried_by_the_poller() {
    let faults = FaultyTmux::new();
    let (w, addr) = world(&faults).await;
    faults.set("hold-text");
    let id = hooked_comment(&w, &addr, "GAP-TEXT the known window").await;
    faults.wait_for(&w, "held-text").await;
    // Two cycles see the comment while its webhook paste is in flight.
    w.wait_cycles(2).await;
    assert!(no_poll_duplicate(&w, id), "parked, not recorded as handled");
    assert_eq!(w.pasted_count("GAP-TEXT"), 0);

    faults.clear("hold-text"); // the paste now fails
    let hook = format!("gh-{id}");
    w.wait_event("dispatch.failed", |e| e["delivery_id"] == hook.as_str())
        .await;
    w.wait_pasted("GAP-TEXT").await;
    let polled = format!("poll-comment-{id}");
    let ok = w
        .wait_event("dispatch.succeeded", |e| {
            e["delivery_id"] == polled.as_str()
        })
        .await;
    assert_eq!(ok["source"], "dispatch");
    w.wait_cycles(2).await;
    assert_eq!(w.pasted_count("GAP-TEXT"), 1, "{:#?}", w.pasted());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_paste_that_fails_at_once_is_delivered_by_the_poller() {
    let faults = FaultyTmux::new();
    let (w, addr) = world(&faults).await;
    faults.set("fail-text");
    let id = hooked_comment(&w, &addr, "FAILED-AT-ONCE-TEXT").await;
    let hook = format!("gh-{id}");
    w.wait_event("dispatch.failed", |e| e["delivery_id"] == hook.as_str())
        .await;
    w.wait_pasted("FAILED-AT-ONCE-TEXT").await;
    w.wait_cycles(2).await;
    assert_eq!(w.pasted_count("FAILED-AT-ONCE-TEXT"), 1);
}

/// Where the supervisor is killed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    /// The claim is taken, the paste is running, no cycle has seen the comment.
    Claimed,
    /// As `Claimed`, after cycles parked the poller's own sighting behind the claim.
    Parked,
    /// The text was pasted and submitted; the outcome was never recorded.
    Pasted,
    /// The delivery settled.
    Settled,
}

async fn kill_9_at(step: Step) {
    let faults = FaultyTmux::new();
    let (mut w, addr) = world(&faults).await;
    let text = format!("KILLED-AT-{step:?}-TEXT");
    match step {
        Step::Claimed | Step::Parked => faults.set("hold-text"),
        Step::Pasted => faults.set("hold-submit"),
        Step::Settled => {}
    }
    let id = hooked_comment(&w, &addr, &text).await;
    match step {
        Step::Claimed => faults.wait_for(&w, "held-text").await,
        Step::Parked => {
            faults.wait_for(&w, "held-text").await;
            w.wait_cycles(2).await;
            assert!(no_poll_duplicate(&w, id));
        }
        Step::Pasted => {
            faults.wait_for(&w, "held-submit").await;
            w.wait_pasted(&text).await;
        }
        Step::Settled => {
            let hook = format!("gh-{id}");
            w.wait_event("dispatch.succeeded", |e| e["delivery_id"] == hook.as_str())
                .await;
        }
    }
    w.kill9().await;
    faults.clear("hold-text");
    faults.clear("hold-submit");
    // The orphaned wrapper gives up without pasting; give it a moment to.
    tokio::time::sleep(Duration::from_millis(200)).await;

    let counts = w.restart_until_pasted(std::slice::from_ref(&text)).await;
    match step {
        // It reached the agent before the crash; the retry may paste it once more.
        Step::Pasted => assert!(matches!(counts[0], 1 | 2), "{step:?}: {counts:?}"),
        _ => assert_eq!(counts, [1], "{step:?}: {:#?}", w.pasted()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_with_a_webhook_claim_in_flight_loses_nothing() {
    kill_9_at(Step::Claimed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_with_the_poll_sighting_parked_behind_a_claim_loses_nothing() {
    kill_9_at(Step::Parked).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_after_the_paste_before_it_settled_delivers_at_most_twice() {
    kill_9_at(Step::Pasted).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_after_a_webhook_delivery_settled_delivers_it_once() {
    kill_9_at(Step::Settled).await;
}
