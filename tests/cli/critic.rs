//! Critics end to end (SPEC §9): the binary runs real subprocesses — small scripts under
//! `tests/critics/` are the critics — and prints one envelope.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod findings;
mod list;
mod post;
mod process;
mod prompt;

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use tempfile::TempDir;

/// A hermetic state root and operator config.
pub struct Home {
    pub dir: TempDir,
}

impl Home {
    /// `critics` is the YAML list under `critics:`.
    pub fn new(critics: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = Self { dir };
        home.write_config(&format!("critics:\n{critics}"));
        home
    }

    pub fn write_config(&self, yaml: &str) {
        std::fs::write(self.config(), yaml).unwrap();
    }

    pub fn config(&self) -> PathBuf {
        self.dir.path().join("config.yaml")
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// A fresh directory under the home, for a critic to write into.
    pub fn scratch(&self, name: &str) -> PathBuf {
        let dir = self.dir.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    pub fn cmd(&self) -> Command {
        let mut cmd = Command::cargo_bin("the-loop").unwrap();
        cmd.env("THE_LOOP_HOME", self.state())
            .env("THE_LOOP_CONFIG", self.config())
            .env_remove("GH_TOKEN")
            .env_remove("GITHUB_TOKEN")
            .env_remove("THE_LOOP_GITHUB_API_URL")
            .env_remove("THE_LOOP_LOG");
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }

    /// `critic run NAME <prompt flags> --spec-dir DIR`: the test critics write what
    /// they saw into `{specDir}`.
    pub fn round(&self, name: &str, prompt: &[&str], spec_dir: &Path) -> Output {
        self.cmd()
            .args(["critic", "run", name])
            .args(prompt)
            .arg("--spec-dir")
            .arg(spec_dir)
            .output()
            .unwrap()
    }

    pub fn events(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.state().join("events.jsonl")).unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// The absolute path of a test critic.
pub fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/critics")
        .join(name)
        .display()
        .to_string()
}

/// Stdout holds exactly one line: the envelope.
pub fn envelope(out: &Output) -> Value {
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    assert_eq!(
        stdout.lines().count(),
        1,
        "stdout must be one envelope line; stdout={stdout:?} stderr={}",
        stderr(out)
    );
    serde_json::from_str(&stdout).unwrap()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn code(out: &Output) -> i32 {
    out.status.code().unwrap()
}

/// The argument files `args.sh` wrote.
pub fn recorded_args(dir: &Path) -> Vec<String> {
    (1..)
        .map(|i| dir.join(format!("arg{i}")))
        .take_while(|p| p.exists())
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

pub fn args_critic(extra: &str) -> String {
    format!(
        "  - name: args\n    command: {}\n    args: ['{{specDir}}', '{{prompt}}', '--model={{model}}', '{{workItem}}']\n{extra}",
        script("args.sh")
    )
}

#[test]
fn json_output_with_snake_case_usage() {
    let home = Home::new(&format!(
        "  - {{name: snake, command: {}, args: [snake, '{{prompt}}'], outputFormat: json, model: m1}}\n",
        script("json.sh")
    ));
    let out = home.run(&["critic", "run", "snake", "--prompt", "review it"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let env = envelope(&out);
    assert_eq!(env["critic"], "snake");
    assert_eq!(env["model"], "m1");
    assert_eq!(env["attribution"], "[snake/m1]");
    assert_eq!(env["ok"], true);
    assert_eq!(env["exitCode"], 0);
    assert_eq!(env["output"], "snake review");
    assert_eq!(env["error"], Value::Null);
    assert!(env["durationSeconds"].as_f64().unwrap() >= 0.0);
    let usage = &env["usage"];
    assert_eq!(usage["inputTokens"], 100);
    assert_eq!(usage["outputTokens"], 20);
    assert_eq!(usage["cacheReadTokens"], 5);
    assert_eq!(usage["cacheWriteTokens"], 7);
    assert_eq!(usage["costUsd"], 0.0125);
    assert_eq!(usage["present"], true);
}

#[test]
fn json_output_with_camel_case_usage_and_booleans_rejected() {
    let home = Home::new(&format!(
        "  - {{name: camel, command: {0}, args: [camel, '{{prompt}}'], outputFormat: json}}\n  - {{name: bools, command: {0}, args: [booleans, '{{prompt}}'], outputFormat: json}}\n  - {{name: broken, command: {0}, args: [broken, '{{prompt}}'], outputFormat: json}}\n",
        script("json.sh")
    ));
    let camel = envelope(&home.run(&["critic", "run", "camel", "--prompt", "x"]));
    assert_eq!(camel["output"], "camel review", "empty `result` is skipped");
    assert_eq!(camel["usage"]["inputTokens"], 3);
    assert_eq!(camel["usage"]["outputTokens"], 4);
    assert_eq!(camel["usage"]["cacheReadTokens"], 5);
    assert_eq!(camel["usage"]["cacheWriteTokens"], 6);
    assert_eq!(camel["usage"]["costUsd"], 1.5);

    let bools = envelope(&home.run(&["critic", "run", "bools", "--prompt", "x"]));
    assert_eq!(bools["output"], "bool review");
    for key in ["inputTokens", "outputTokens", "cacheReadTokens", "costUsd"] {
        assert_eq!(
            bools["usage"][key],
            Value::Null,
            "{key}: booleans and strings are not numbers"
        );
    }
    assert_eq!(bools["usage"]["present"], false);

    let broken = envelope(&home.run(&["critic", "run", "broken", "--prompt", "x"]));
    assert_eq!(broken["ok"], true);
    assert_eq!(
        broken["output"], "this is not JSON\n",
        "not JSON: the raw stdout"
    );
}

#[test]
fn a_non_zero_exit_still_prints_the_envelope_and_exits_1() {
    let home = Home::new(&format!(
        "  - {{name: failing, command: {}, args: ['{{prompt}}']}}\n",
        script("fail.sh")
    ));
    let out = home.run(&["critic", "run", "failing", "--prompt", "x"]);
    assert_eq!(code(&out), 1);
    let env = envelope(&out);
    assert_eq!(env["ok"], false);
    assert_eq!(env["exitCode"], 3);
    assert_eq!(env["output"], "partial findings\n");
    let error = env["error"].as_str().unwrap();
    assert!(error.contains("exited with status 3"), "{error}");
    assert!(
        error.contains("lint: cannot parse line 3"),
        "stderr tail: {error}"
    );
    assert!(
        stderr(&out).contains("critic `failing` failed"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_missing_binary_is_never_a_pass() {
    let home =
        Home::new("  - {name: ghost, command: the-loop-no-such-critic, args: ['{prompt}']}\n");
    let out = home.run(&["critic", "run", "ghost", "--prompt", "x"]);
    assert_eq!(code(&out), 1);
    let env = envelope(&out);
    assert_eq!(env["ok"], false);
    assert_eq!(env["exitCode"], -1);
    let error = env["error"].as_str().unwrap();
    assert!(
        error.contains("`the-loop-no-such-critic` was not found on PATH"),
        "{error}"
    );
    assert!(error.contains("full path"), "{error}");
}

#[test]
fn built_in_harnesses_run_their_one_shot_invocation() {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/critics/bin");
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let home = Home::new(&format!(
        "  - {{name: claude-review, harness: claude, model: opus, env: {{PATH: '{path}'}}}}\n  - {{name: claude-default, harness: claude, env: {{PATH: '{path}'}}}}\n  - {{name: codex-review, harness: codex, model: gpt-5, env: {{PATH: '{path}'}}}}\n"
    ));
    let claude = envelope(&home.run(&[
        "critic",
        "run",
        "claude-review",
        "--prompt=-starts with a dash",
    ]));
    assert_eq!(claude["ok"], true, "{claude}");
    assert_eq!(claude["harness"], "claude");
    assert_eq!(claude["attribution"], "[claude/opus]");
    // The adapter guards a leading dash with a space: 19 + 1 bytes.
    assert_eq!(claude["output"], "claude/opus read 20 bytes");
    assert_eq!(claude["usage"]["inputTokens"], 20);
    assert_eq!(claude["usage"]["costUsd"], 0.5);
    let default = envelope(&home.run(&["critic", "run", "claude-default", "--prompt", "abc"]));
    assert_eq!(default["output"], "claude/default read 3 bytes");
    assert_eq!(default["attribution"], "[claude/default]");

    let codex = envelope(&home.run(&["critic", "run", "codex-review", "--prompt", "the diff"]));
    assert_eq!(codex["ok"], true, "{codex}");
    assert_eq!(
        codex["output"],
        "codex/gpt-5 final answer about: the diff\n"
    );
    assert_eq!(codex["usage"]["inputTokens"], 40);
    assert_eq!(codex["usage"]["cacheReadTokens"], 10);
    assert_eq!(codex["usage"]["outputTokens"], 8);
}

#[test]
fn work_item_rounds_are_saved_and_logged_and_output_file_gets_the_same() {
    let home = Home::new(&format!(
        "  - {{name: failing, command: {}, args: ['{{prompt}}']}}\n",
        script("fail.sh")
    ));
    let copy = home.dir.path().join("out/envelope.json");
    // The round reviews a git working tree: the commit it reviewed is recorded.
    let tree = home.dir.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let git = the_loop::workspace::test_repo::git;
    git(&tree, &["init", "-q"]);
    git(&tree, &["commit", "-q", "--allow-empty", "-m", "one"]);
    let head = git(&tree, &["rev-parse", "HEAD"]).trim().to_string();
    let out = home.run(&[
        "critic",
        "run",
        "failing",
        "--prompt",
        "x",
        "--work-item",
        "github:octo/repo#15",
        "--cwd",
        tree.to_str().unwrap(),
        "--output-file",
        copy.to_str().unwrap(),
    ]);
    assert_eq!(code(&out), 1);
    let env = envelope(&out);
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&copy).unwrap()).unwrap();
    assert_eq!(written, env);

    let saved: Vec<PathBuf> = std::fs::read_dir(home.state().join("critics"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(saved.len(), 1);
    let name = saved[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.ends_with("-failing.json") && name.starts_with("20"),
        "{name}"
    );
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&saved[0]).unwrap()).unwrap();
    assert_eq!(stored, env);

    let events = home.events();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["critic.started", "critic.finished"]);
    let finished = &events[1];
    assert_eq!(finished["source"], "critic");
    assert_eq!(finished["level"], "warning");
    assert_eq!(finished["critic"], "failing");
    assert_eq!(finished["work_item"], "github:octo/repo#15");
    assert_eq!(finished["ok"], false);
    assert_eq!(finished["exit_code"], 3);
    assert!(finished["duration_seconds"].is_number());
    assert_eq!(finished["path"], saved[0].display().to_string());
    assert_eq!(events[0]["work_item"], "github:octo/repo#15");
    assert_eq!(finished["head"], head.as_str());
    assert_eq!(events[0]["head"], head.as_str());

    // Without --work-item nothing is recorded.
    let home = Home::new(&format!(
        "  - {{name: failing, command: {}, args: ['{{prompt}}']}}\n",
        script("fail.sh")
    ));
    home.run(&["critic", "run", "failing", "--prompt", "x"]);
    assert!(!home.state().join("critics").exists());
    assert!(home.events().is_empty());
}
