//! The demo repository's checkout, the sessions' working directory.

use super::tmux_server::output_within;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Fills the demo checkout: a small repository whose working tree holds an uncommitted
/// change, so a critic launched from the demo has a real diff to review. Best effort:
/// without git it is a plain directory holding the changed file.
pub fn prepare(dir: &Path) {
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
    write("src/retry.rs", RETRY_AFTER);
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
    fn the_checkout_has_a_change_to_review() {
        let temp = tempfile::tempdir().unwrap();
        prepare(temp.path());
        let text = std::fs::read_to_string(temp.path().join("src/retry.rs")).unwrap();
        assert!(text.contains("cap_ms"));
        if temp.path().join(".git").is_dir() {
            let diff = Command::new("git")
                .args(["diff", "--stat"])
                .current_dir(temp.path())
                .output()
                .unwrap();
            assert!(String::from_utf8_lossy(&diff.stdout).contains("src/retry.rs"));
        }
    }
}
