//! The single-supervisor lock (SPEC §11.6) across handles and processes. The "other
//! process" is this test binary run again with one helper test selected and an
//! environment variable telling it what to do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use the_loop::paths::StatePaths;
use the_loop::supervisor::lock::{SupervisorLock, read_holder};

const ROLE: &str = "LOCK_TEST_ROLE";
const STATE: &str = "LOCK_TEST_STATE";
/// Marks the helper's answer among libtest's own output.
const ANSWER: &str = "lock-test-answer: ";

/// Not a test on its own: the body of the helper process. `hold` takes the lock and
/// keeps it (bounded, in case the parent dies); `probe` reports whether it could take it.
#[test]
fn helper_process() {
    let (Ok(role), Ok(state)) = (std::env::var(ROLE), std::env::var(STATE)) else {
        return;
    };
    let paths = StatePaths::new(state);
    let lock = SupervisorLock::try_acquire(&paths).unwrap();
    match (role.as_str(), lock) {
        ("hold", Some(_held)) => {
            println!("\n{ANSWER}locked {}", std::process::id());
            std::thread::sleep(Duration::from_secs(120));
        }
        ("hold", None) => println!("\n{ANSWER}busy"),
        ("probe", lock) => println!(
            "\n{ANSWER}{}",
            if lock.is_some() { "acquired" } else { "busy" }
        ),
        _ => panic!("unknown role {role}"),
    }
}

/// The tests here take the lock and spawn processes; run them one at a time so no
/// test's fork can hold a copy of another test's lock descriptor (see below).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Takes the lock once it is free. Other tests in this binary spawn processes; a child
/// forked in another thread holds a copy of every descriptor until it execs (where
/// close-on-exec drops it), so a just-released lock can stay held for that instant.
fn acquire_once_free(paths: &StatePaths) -> Option<SupervisorLock> {
    for _ in 0..250 {
        if let Some(lock) = SupervisorLock::try_acquire(paths).unwrap() {
            return Some(lock);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Kills the helper on every exit path, panics included.
struct Helper(Child);

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn helper(role: &str, state: &Path) -> Helper {
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            crate::support::test_name(module_path!(), "helper_process").as_str(),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, role)
        .env(STATE, state)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Helper(child)
}

/// The first line the helper prints that is one of its answers.
fn answer(helper: &mut Helper) -> String {
    let stdout = helper.0.stdout.take().unwrap();
    BufReader::new(stdout)
        .lines()
        .map(Result::unwrap)
        .find_map(|l| l.strip_prefix(ANSWER).map(str::to_string))
        .expect("the helper exited without an answer")
}

#[test]
fn a_second_acquire_in_the_same_process_fails_until_released() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(dir.path().join("state"));
    let first = SupervisorLock::try_acquire(&paths)
        .unwrap()
        .expect("free lock");
    assert!(SupervisorLock::try_acquire(&paths).unwrap().is_none());

    let holder = read_holder(&paths).unwrap();
    assert_eq!(holder.pid, std::process::id());
    assert_eq!(&holder, first.holder());
    assert!(holder.started_at.ends_with('Z'), "{}", holder.started_at);

    drop(first);
    assert_eq!(read_holder(&paths), None, "a released lock names nobody");
    assert!(acquire_once_free(&paths).is_some());
}

#[test]
fn another_process_cannot_acquire_while_held() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(dir.path());
    let held = SupervisorLock::try_acquire(&paths).unwrap().unwrap();
    let mut probe = helper("probe", dir.path());
    assert_eq!(answer(&mut probe), "busy");
    drop(held);
    let mut probe = helper("probe", dir.path());
    assert_eq!(answer(&mut probe), "acquired");
}

#[test]
fn a_holder_killed_with_sigkill_releases_the_lock() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(dir.path());
    let mut holder = helper("hold", dir.path());
    let line = answer(&mut holder);
    let pid: u32 = line.strip_prefix("locked ").unwrap().parse().unwrap();
    assert_eq!(holder.0.id(), pid);
    assert!(SupervisorLock::try_acquire(&paths).unwrap().is_none());
    assert_eq!(read_holder(&paths).unwrap().pid, pid);

    holder.0.kill().unwrap(); // SIGKILL: no destructor runs
    holder.0.wait().unwrap();
    // The dead holder's record is still there, but the kernel released the lock.
    assert_eq!(read_holder(&paths).unwrap().pid, pid);
    let ours = acquire_once_free(&paths).expect("released by the kernel");
    assert_eq!(read_holder(&paths).unwrap(), *ours.holder());
}

/// A tmux server or harness the supervisor starts must not keep the lock alive after
/// the supervisor is gone.
#[test]
fn children_spawned_while_holding_do_not_inherit_the_lock() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(dir.path());
    let held = SupervisorLock::try_acquire(&paths).unwrap().unwrap();
    let child = Command::new("sleep").arg("60").spawn().unwrap();
    let _child = Helper(child);
    drop(held);
    assert!(acquire_once_free(&paths).is_some());
}

#[test]
fn an_unwritable_state_root_is_an_error_not_a_held_lock() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "").unwrap();
    let err = SupervisorLock::try_acquire(&StatePaths::new(blocker.join("state"))).unwrap_err();
    assert!(err.to_string().contains("THE_LOOP_HOME"), "{err}");
}
