//! A codex session's usage from codex's own counts (SPEC §20.1), against the real
//! Codex 0.171.0 and the tests' fake of the Responses API reporting a different usage
//! on every response: codex runs with the-loop's `notify` wiring (the adapter's own
//! flag), each turn's end runs `the-loop hook codex`, the thread's rollout is found and
//! read, and `sessions list --json` and `the-loop usage --json` show exactly the fake's
//! sums, in tokens and dollars.
//!
//! Codex is driven with `exec` and `exec resume` (the same thread, the same rollout):
//! its TUI starts a background app-server daemon that outlives the pane; the turn's
//! accounting — the rollout, the notify program — is the TUI's. Its config turns off
//! everything that would leave loopback (the plugin sync contacts api.github.com).

use crate::support::assert_usd;
use crate::support::claude::npm_bin;
use crate::support::fake_openai::{FakeOpenAi, codex_config};
use crate::support::tmux_server::BIN;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use the_loop::config::SessionsConfig;
use the_loop::events::{EventLog, Source};
use the_loop::harness::{Harness, HookWiring};
use the_loop::paths::StatePaths;
use the_loop::session::{Registry, SessionRecord};
use the_loop::work_item::WorkItemRef;

const PATIENCE: Duration = Duration::from_secs(90);

/// USD per million tokens the test configures for the fake's model.
const PRICE: [f64; 3] = [1.25, 10.0, 0.125]; // input, output, cached input

struct World {
    dir: tempfile::TempDir,
    codex: PathBuf,
    home: PathBuf,
    project: PathBuf,
    state: PathBuf,
    config: PathBuf,
    item: WorkItemRef,
    model: FakeOpenAi,
}

impl World {
    async fn new() -> Option<Self> {
        let codex = npm_bin("codex", "THE_LOOP_CODEX_BIN", "Codex")?;
        let model = FakeOpenAi::start().await;
        let dir = tempfile::tempdir().unwrap();
        let (home, project) = (dir.path().join("home"), dir.path().join("project"));
        let state = dir.path().join("state");
        let config = dir.path().join("config.yaml");
        for d in [&home.join(".codex"), &project, &dir.path().join("tmp")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(
            home.join(".codex/config.toml"),
            codex_config(&model.base_url, &project),
        )
        .unwrap();
        std::fs::write(
            &config,
            format!(
                "pricing:\n  models:\n    gpt-5-codex: {{input: {}, output: {}, cacheRead: {}}}\n",
                PRICE[0], PRICE[1], PRICE[2]
            ),
        )
        .unwrap();
        let item = WorkItemRef::new("octo", "repo", 21);
        let world = Self {
            dir,
            codex,
            home,
            project,
            state,
            config,
            item,
            model,
        };
        let record = SessionRecord::new(&world.item, "codex", world.project.clone());
        world.registry().put(&record).unwrap();
        Some(world)
    }

    fn registry(&self) -> Registry {
        let paths = StatePaths::new(&self.state);
        Registry::new(&paths, EventLog::open(&paths), Source::Cli)
    }

    /// `codex [-c notify=…] exec ARGS`, the notify flag as the-loop's adapter wires it,
    /// in the session's environment.
    fn codex(&self, args: &[&str]) {
        let adapter = Harness::resolve("codex", &SessionsConfig::default())
            .unwrap()
            .with_hooks(HookWiring {
                bin: PathBuf::from(BIN),
                settings_file: None,
            });
        let argv = adapter.fresh_argv("p", None);
        let at = argv.iter().position(|a| a.starts_with("notify=")).unwrap();
        let out = Command::new(&self.codex)
            .args(["-c", &argv[at]])
            .arg("exec")
            .arg("--skip-git-repo-check")
            .args(args)
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap())
            .env("HOME", &self.home)
            .env("TMPDIR", self.dir.path().join("tmp"))
            .env("THE_LOOP_HOME", &self.state)
            .env("THE_LOOP_CONFIG", &self.config)
            .env("THE_LOOP_WORK_ITEM", self.item.to_string())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "codex {args:?}: {out:?}");
    }

    fn the_loop(&self, args: &[&str]) -> Value {
        let out = Command::new(BIN)
            .args(args)
            .env("THE_LOOP_HOME", &self.state)
            .env("THE_LOOP_CONFIG", &self.config)
            .env_remove("THE_LOOP_WORK_ITEM")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// The session's `usage` in `sessions list --json`.
    fn listed_usage(&self) -> Value {
        let rows = self.the_loop(&["sessions", "list", "--json"]);
        let row = rows
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["ref"] == self.item.to_string());
        row.unwrap_or_else(|| panic!("not listed: {rows}"))["usage"].clone()
    }

    /// Waits until the listed usage is `want`, all of it `gpt-5-codex`'s.
    async fn wait_usage(&self, want: [u64; 3]) -> Value {
        let start = Instant::now();
        loop {
            let usage = self.listed_usage();
            let got = tokens_of(&usage);
            if got == want {
                let models = usage["models"].as_array().unwrap();
                assert_eq!(models.len(), 1, "{usage:#}");
                assert_eq!(models[0]["model"], "gpt-5-codex");
                assert_eq!(tokens_of(&models[0]), want);
                assert_eq!(usage["cacheWrite5m"], 0);
                assert_eq!(usage["cacheWrite1h"], 0);
                return usage;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "usage {got:?} never became {want:?}: {usage:#}\nrollouts: {:?}",
                rollouts(&self.home)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The sums of what the fake reported: input without its cached part, output,
    /// cached input.
    fn sums(&self) -> [u64; 3] {
        let mut out = [0; 3];
        for a in self.model.answered() {
            assert!(!a.title, "codex exec titles nothing: {a:?}");
            let n = |v: &Value| v.as_u64().unwrap();
            let cached = n(&a.usage["input_tokens_details"]["cached_tokens"]);
            out[0] += n(&a.usage["input_tokens"]) - cached;
            out[1] += n(&a.usage["output_tokens"]);
            out[2] += cached;
        }
        out
    }
}

fn tokens_of(v: &Value) -> [u64; 3] {
    ["input", "output", "cacheRead"].map(|k| v[k].as_u64().unwrap_or(0))
}

fn rollouts(home: &Path) -> Vec<PathBuf> {
    crate::support::claude::walk(&home.join(".codex/sessions"))
}

fn cost(t: [u64; 3]) -> f64 {
    t.iter().zip(PRICE).map(|(n, p)| *n as f64 * p).sum::<f64>() / 1_000_000.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_sessions_totals_equal_what_the_model_reported() {
    let Some(world) = World::new().await else {
        return;
    };
    // Before any turn: unknown, never 0.
    assert_eq!(world.listed_usage(), Value::Null);

    world.codex(&["Say hello."]);
    let first = world.sums();
    assert_eq!(world.model.answered().len(), 1);
    let usage = world.wait_usage(first).await;
    assert_usd(&usage["costUsd"], cost(first));

    // The same thread resumed: its rollout grows, its running total with it.
    let found = rollouts(&world.home);
    assert_eq!(found.len(), 1, "{found:?}");
    let name = found[0].file_name().unwrap().to_string_lossy().into_owned();
    let thread = &name[name.len() - "01a23d29-529b-73f3-9002-bfbaf9aebad0.jsonl".len()..];
    let thread = thread.trim_end_matches(".jsonl");
    world.codex(&["resume", thread, "And again."]);
    assert_eq!(world.model.answered().len(), 2);
    let both = world.sums();
    assert_ne!(both, first);
    let usage = world.wait_usage(both).await;
    assert_usd(&usage["costUsd"], cost(both));
    assert_eq!(usage["known"], true);

    // `the-loop usage` says the same.
    let report = world.the_loop(&["usage", "--by", "model", "--json"]);
    assert_eq!(tokens_of(&report["total"]), both, "{report:#}");
    assert_usd(&report["total"]["costUsd"], cost(both));
    assert_eq!(report["rows"].as_array().unwrap().len(), 1, "{report:#}");
    // Each turn's end told its usage once, with what it cost to read.
    let events = the_loop::events::lines::named(&world.state.join("events.jsonl"), "session.usage");
    assert_eq!(events.len(), 2, "{events:#?}");
    assert_eq!(events[1]["tokens"], both.iter().sum::<u64>());
}
