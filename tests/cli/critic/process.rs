//! The critic process: the timeout kills the whole group, output is capped, the
//! environment overlay and working directory apply, and a cancelled round leaves
//! nothing running.

use super::{Home, args_critic, code, envelope, script, stderr};
use std::path::Path;
fn alive(pid: i32) -> bool {
    // A zombie has exited; only its parent's bookkeeping is left.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(") ")
                .map(|(_, rest)| !rest.starts_with('Z'))
        })
        .unwrap_or(false)
}

fn pid_in(dir: &Path, name: &str) -> i32 {
    std::fs::read_to_string(dir.join(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_timeout_kills_the_critic_and_everything_it_started() {
    let home = Home::new(&format!(
        "  - {{name: slow, command: {}, args: ['{{specDir}}', '{{prompt}}'], timeoutSeconds: 60}}\n",
        script("sleeper.sh")
    ));
    let pids = home.scratch("pids");
    let out = home.round("slow", &["--prompt", "x", "--timeout", "0.5"], &pids);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let env = envelope(&out);
    assert_eq!(env["ok"], false);
    assert_eq!(
        env["exitCode"],
        128 + 9,
        "it ignored SIGTERM, so SIGKILL ended it"
    );
    let error = env["error"].as_str().unwrap();
    assert!(error.contains("timed out after 0.5s"), "{error}");
    for name in ["critic.pid", "child.pid", "sub.pid", "grandchild.pid"] {
        let pid = pid_in(&pids, name);
        assert!(!alive(pid), "{name} ({pid}) survived the timeout");
    }
}

#[test]
fn huge_output_is_capped_with_a_note() {
    let home = Home::new(&format!(
        "  - {{name: flood, command: {}, args: ['{{prompt}}']}}\n",
        script("flood.sh")
    ));
    let out = home.run(&["critic", "run", "flood", "--prompt", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let env = envelope(&out);
    let output = env["output"].as_str().unwrap();
    let mib = 1024 * 1024;
    assert!(
        output[..mib].bytes().all(|b| b == b'a'),
        "the first 1 MiB is kept"
    );
    assert_eq!(
        &output[mib..],
        format!(
            "\n[the-loop: output cut at 1 MiB; {} more bytes were not kept]",
            3_000_000 - mib
        ),
    );
}

#[test]
fn the_env_overlay_and_the_working_directory() {
    let home = Home::new(&args_critic(
        "    env: {CRITIC_MODE: strict, CRITIC_INHERITED: overridden}\n",
    ));
    let seen = home.scratch("seen");
    let work = home.scratch("work");
    let out = home
        .cmd()
        .env("CRITIC_INHERITED", "from-parent")
        .args(["critic", "run", "args", "--prompt", "x", "--spec-dir"])
        .arg(&seen)
        .arg("--cwd")
        .arg(&work)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let output = envelope(&out)["output"].as_str().unwrap().to_string();
    assert!(
        output.contains("mode=strict inherited=overridden"),
        "{output}"
    );
    assert!(
        output.contains(&format!("cwd={}", work.display())),
        "{output}"
    );

    // Without the overlay, the inherited environment passes through; without --cwd,
    // the entry's `cwd` is used.
    home.write_config(&format!(
        "critics:\n{}",
        args_critic(&format!("    cwd: {}\n", seen.display()))
    ));
    let out = home
        .cmd()
        .env("CRITIC_INHERITED", "from-parent")
        .args(["critic", "run", "args", "--prompt", "x", "--spec-dir"])
        .arg(&seen)
        .output()
        .unwrap();
    let output = envelope(&out)["output"].as_str().unwrap().to_string();
    assert!(
        output.contains("mode=unset inherited=from-parent"),
        "{output}"
    );
    assert!(
        output.contains(&format!("cwd={}", seen.display())),
        "{output}"
    );
}

/// The library call the TUI makes: dropping (or cancelling) the round kills the group.
#[tokio::test]
async fn a_cancelled_round_kills_the_critic_group() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "- {{name: slow, command: {}, args: ['{{specDir}}', '{{prompt}}']}}",
        script("sleeper.sh")
    );
    let raw: Vec<serde_norway::Value> = serde_norway::from_str(&yaml).unwrap();
    let entries = the_loop::critic::parse_all(&raw, &Default::default());
    let spec = entries[0].spec.as_ref().unwrap();
    let mut request = the_loop::critic::Request::new(the_loop::critic::Prompt::Text("x".into()));
    request.spec_dir = Some(dir.path().to_path_buf());
    let pids = dir.path().to_path_buf();
    let cancel = async move {
        while !pids.join("grandchild.pid").exists() || !pids.join("critic.pid").exists() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        "operator pressed Esc".to_string()
    };
    let round = the_loop::critic::run_round_until(spec, &request, None, cancel)
        .await
        .unwrap();
    assert!(!round.envelope.ok);
    assert_eq!(round.envelope.exit_code, -1);
    assert!(
        round
            .envelope
            .error
            .as_deref()
            .unwrap()
            .contains("cancelled (operator pressed Esc)")
    );
    // SIGKILL is delivered asynchronously; give the kernel a moment.
    for name in ["critic.pid", "child.pid", "grandchild.pid"] {
        let pid = pid_in(dir.path(), name);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while alive(pid) && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(!alive(pid), "{name} ({pid}) survived the cancellation");
    }
}
