//! The demo repository's checkout — the operator's, which the-loop never touches — and
//! the fix the demo agent writes into its own worktree of it (SPEC §16).

use super::tmux_server::output_within;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Fills the demo checkout: a small, clean git repository on `main`. The demo agent
/// works in a worktree of it, where it writes the files under `fix` (its change, which
/// a critic launched from the demo then reviews). Best effort: without git the checkout
/// is a plain directory and the sessions share it.
pub fn prepare(dir: &Path, fix: &Path) {
    let write = |rel: &str, text: &str| {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(path, text);
    };
    write(
        "README.md",
        "# demo\n\nA retry helper, for `the-loop demo`.\n",
    );
    write("src/retry.rs", RETRY_BEFORE);
    let git = |args: &[&str]| {
        let mut cmd = Command::new("git");
        cmd.args([
            "-c",
            "user.name=the-loop demo",
            "-c",
            "user.email=demo@example.invalid",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdin(Stdio::null());
        output_within(cmd, Duration::from_secs(10)).is_some_and(|o| o.status.success())
    };
    let _ = git(&["init", "-q"])
        && git(&["add", "-A"])
        && git(&["commit", "-q", "-m", "Retry with exponential backoff"]);
    let fixed = fix.join("src/retry.rs");
    if let Some(parent) = fixed.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = std::fs::write(fixed, RETRY_AFTER);
}

const RETRY_BEFORE: &str =
    "/// The delay before retry number `attempt` (0-based): doubles each time.
pub fn backoff_ms(attempt: u32, base_ms: u64) -> u64 {
    base_ms.saturating_mul(1 << attempt.min(20))
}
";

const RETRY_AFTER: &str =
    "/// The delay before retry number `attempt` (0-based): doubles each time, up to `cap_ms`.
pub fn backoff_ms(attempt: u32, base_ms: u64, cap_ms: u64) -> u64 {
    base_ms.saturating_mul(1 << attempt.min(20)).min(cap_ms)
}
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checkout_is_clean_and_the_fix_waits_for_the_agent() {
        let temp = tempfile::tempdir().unwrap();
        let (dir, fix) = (temp.path().join("work"), temp.path().join("fix"));
        prepare(&dir, &fix);
        let text = std::fs::read_to_string(dir.join("src/retry.rs")).unwrap();
        assert!(!text.contains("cap_ms"), "the checkout has the code before");
        let fixed = std::fs::read_to_string(fix.join("src/retry.rs")).unwrap();
        assert!(fixed.contains("cap_ms"));
        if dir.join(".git").is_dir() {
            let status = Command::new("git")
                .args(["status", "--porcelain"])
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(status.stdout.is_empty(), "clean: {status:?}");
        }
    }
}
