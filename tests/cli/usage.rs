//! `the-loop usage` and `sessions list --json` `usage` over transcripts on disk, through
//! the real binary (SPEC §20.3): incremental reads (a second run reads nothing), every
//! grouping, `--since`, critics apart, an unpriced model, a session whose usage is
//! unknown, and bad input (a bad day, an over-long line).

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use the_loop::events::{Event, EventLog, EventType, Source};
use the_loop::paths::StatePaths;
use the_loop::session::{Registry, SessionRecord};
use the_loop::work_item::WorkItemRef;

fn line(id: &str, model: &str, ts: &str, input: u64, output: u64, w5m: u64, w1h: u64) -> String {
    format!(
        r#"{{"parentUuid":"p","isSidechain":false,"message":{{"id":"{id}","type":"message","role":"assistant","model":"{model}","content":[{{"type":"text","text":"ok"}}],"stop_reason":"end_turn","usage":{{"input_tokens":{input},"cache_creation_input_tokens":{},"cache_read_input_tokens":0,"output_tokens":{output},"cache_creation":{{"ephemeral_1h_input_tokens":{w1h},"ephemeral_5m_input_tokens":{w5m}}}}}}},"requestId":"req_{id}","type":"assistant","timestamp":"{ts}","sessionId":"s","version":"2.1.197"}}"#,
        w5m + w1h
    )
}

struct World {
    dir: tempfile::TempDir,
    state: PathBuf,
    config: PathBuf,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let config = dir.path().join("config.yaml");
        std::fs::write(
            &config,
            "pricing:\n  models:\n    my-model: {input: 2, output: 8}\n",
        )
        .unwrap();
        Self { dir, state, config }
    }

    /// A session on `n` whose transcript holds `lines`.
    fn session(&self, repo: &str, n: u64, lines: &[String]) -> PathBuf {
        let item = WorkItemRef::new("octo", repo, n);
        let transcript = self.dir.path().join(format!("t/{repo}-{n}.jsonl"));
        std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
        std::fs::write(&transcript, lines.join("\n") + "\n").unwrap();
        let mut record = SessionRecord::new(&item, "claude", self.dir.path().into());
        record
            .usage
            .follow(transcript.clone(), the_loop::usage::reader::Format::Claude);
        self.registry().put(&record).unwrap();
        transcript
    }

    fn registry(&self) -> Registry {
        let paths = StatePaths::new(&self.state);
        Registry::new(&paths, EventLog::open(&paths), Source::Cli)
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        Command::cargo_bin("the-loop")
            .unwrap()
            .args(args)
            .env("THE_LOOP_HOME", &self.state)
            .env("THE_LOOP_CONFIG", &self.config)
            .env("TZ", "UTC")
            .output()
            .unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn close(a: &Value, b: f64) {
    let a = a.as_f64().unwrap_or_else(|| panic!("not a number: {a}"));
    assert!((a - b).abs() < 1e-9, "{a} != {b}");
}

#[test]
fn usage_reads_incrementally_groups_and_prices() {
    let w = World::new();
    let opus = "claude-opus-4-8"; // $5 / $25, 5 m write $6.25, 1 h write $10
    let a = w.session(
        "repo",
        1,
        &[
            line("m1", opus, "2026-12-01T10:00:00Z", 1000, 100, 2000, 0),
            line("m1", opus, "2026-12-01T10:00:00Z", 1000, 100, 2000, 0),
            line("m2", opus, "2026-12-02T10:00:00Z", 10, 5, 0, 4000),
        ],
    );
    w.session(
        "other",
        2,
        &[line(
            "m3",
            "my-model",
            "2026-12-02T11:00:00Z",
            1_000_000,
            0,
            0,
            0,
        )],
    );
    w.session(
        "repo",
        3,
        &[line("m4", "mystery-9", "2026-12-02T12:00:00Z", 50, 0, 0, 0)],
    );
    // A session whose harness reports nothing: unknown, never 0.
    let unknown = WorkItemRef::new("octo", "repo", 4);
    w.registry()
        .put(&SessionRecord::new(&unknown, "cursor", w.dir.path().into()))
        .unwrap();
    // A critic round on #1 reported its own usage.
    let log = EventLog::open(&StatePaths::new(&w.state));
    log.emit(
        Event::new(Source::Critic, EventType::CriticFinished)
            .with("critic", "rev")
            .with("work_item", "github:octo/repo#1")
            .with("ok", true)
            .with("cost_usd", 0.25)
            .with("input_tokens", 900)
            .with("output_tokens", 90),
    )
    .unwrap();

    let cold = w.json(&["usage", "--json"]);
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    assert!(cold["bytesRead"].as_u64().unwrap() >= size(&a));
    let rows = cold["rows"].as_array().unwrap();
    let row = |key: &str| rows.iter().find(|r| r["key"] == key).unwrap().clone();
    let one = row("github:octo/repo#1");
    assert_eq!(one["input"], 1010);
    assert_eq!(one["output"], 105);
    assert_eq!(one["cacheWrite5m"], 2000);
    assert_eq!(one["cacheWrite1h"], 4000);
    close(
        &one["costUsd"],
        (1010.0 * 5.0 + 105.0 * 25.0 + 2000.0 * 6.25 + 4000.0 * 10.0) / 1e6,
    );
    assert_eq!(one["critics"]["rounds"], 1);
    close(&one["critics"]["costUsd"], 0.25);
    close(&row("github:octo/other#2")["costUsd"], 2.0);
    let three = row("github:octo/repo#3");
    assert_eq!(three["costUsd"], Value::Null);
    assert_eq!(three["known"], false);
    assert_eq!(three["input"], 50);
    assert_eq!(cold["total"]["known"], false);
    assert_eq!(cold["unknown"], serde_json::json!(["github:octo/repo#4"]));
    assert_eq!(cold["prices"]["asOf"], the_loop::usage::pricing::AS_OF);
    close(&cold["critics"]["costUsd"], 0.25);

    // What the cold read found was told, once per session that had something new: the
    // next turn end finds nothing new and must not have been the only one to tell it.
    let told = |w: &World| {
        the_loop::events::lines::named(&w.state.join("events.jsonl"), "session.usage").len()
    };
    assert_eq!(told(&w), 3, "sessions #1, #2 and #3");

    // Warm: nothing new, nothing read; the same figures, nothing told again.
    let warm = w.json(&["usage", "--json"]);
    assert_eq!(warm["bytesRead"], 0);
    assert_eq!(warm["rows"], cold["rows"]);
    assert_eq!(told(&w), 3);

    let by_repo = w.json(&["usage", "--json", "--by", "repo"]);
    let keys: Vec<&str> = by_repo["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["octo/other", "octo/repo"]);
    let by_day = w.json(&["usage", "--json", "--by", "day", "--since", "2026-12-02"]);
    let days = by_day["rows"].as_array().unwrap();
    assert_eq!(days.len(), 1);
    assert_eq!(days[0]["key"], "2026-12-02");
    assert_eq!(days[0]["input"], 10 + 1_000_000 + 50);
    let by_model = w.json(&["usage", "--json", "--by", "model"]);
    assert_eq!(by_model["rows"].as_array().unwrap().len(), 3);

    let text = w.run(&["usage"]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("no price for mystery-9"), "{text}");
    assert!(text.contains("prices as of"), "{text}");

    // `config check` names the model without a price, and only that one.
    let check = w.run(&["config", "check"]);
    assert!(check.status.success(), "{check:?}");
    let notes = String::from_utf8_lossy(&check.stderr);
    assert!(notes.contains("model `mystery-9` has no price"), "{notes}");
    assert!(
        !notes.contains("my-model") && !notes.contains("claude-opus"),
        "{notes}"
    );

    let bad = w.run(&["usage", "--since", "yesterday"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("expected a day"));
}

#[test]
fn an_over_long_line_is_skipped_and_counted() {
    let w = World::new();
    let huge = format!(
        r#"{{"type":"user","message":{{"content":"{}"}}}}"#,
        "A".repeat(the_loop::usage::reader::MAX_LINE + 1)
    );
    w.session(
        "repo",
        1,
        &[
            huge,
            line(
                "m1",
                "claude-haiku-4-5",
                "2026-12-02T10:00:00Z",
                100,
                10,
                0,
                0,
            ),
        ],
    );
    let out = w.json(&["usage", "--json"]);
    assert_eq!(out["rows"][0]["input"], 100);
    let record = w
        .registry()
        .get(&WorkItemRef::new("octo", "repo", 1))
        .unwrap()
        .unwrap();
    assert_eq!(record.usage.skipped_lines, 1);
}

/// Critic spend is kept where usage is (SPEC §20.1), a tally per work item added to as a
/// round finishes: listing it reads no event log, so neither the log's length nor its
/// rotation changes what is shown.
#[test]
fn critic_spend_is_kept_per_item_not_read_from_the_log() {
    let w = World::new();
    let critic = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/critics/json.sh");
    std::fs::write(
        &w.config,
        format!(
            "critics:\n  - {{name: snake, command: {}, args: [snake, '{{prompt}}'], outputFormat: json}}\n",
            critic.display()
        ),
    )
    .unwrap();
    let response = line(
        "m1",
        "claude-haiku-4-5",
        "2026-12-02T10:00:00Z",
        10,
        1,
        0,
        0,
    );
    w.session("repo", 1, &[response]);
    for _ in 0..2 {
        let out = w.run(&[
            "critic",
            "run",
            "snake",
            "--prompt",
            "x",
            "--work-item",
            "github:octo/repo#1",
        ]);
        assert!(out.status.success(), "{out:?}");
    }
    // The log is gone (rotated away, say): what the rounds spent is not.
    let log = w.state.join("events.jsonl");
    assert_eq!(
        the_loop::events::lines::named(&log, "critic.finished").len(),
        2
    );
    std::fs::remove_file(&log).unwrap();

    let socket = w.dir.path().join("no-tmux");
    let out = Command::cargo_bin("the-loop")
        .unwrap()
        .args(["sessions", "list", "--json"])
        .env("THE_LOOP_HOME", &w.state)
        .env("THE_LOOP_CONFIG", &w.config)
        .env("THE_LOOP_TMUX_SOCKET", &socket)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let critics = &rows[0]["critics"];
    assert_eq!(critics["rounds"], 2, "{rows}");
    assert_eq!(critics["inputTokens"], 200);
    assert_eq!(critics["outputTokens"], 40);
    close(&critics["costUsd"], 0.025);

    let usage = w.json(&["usage", "--json"]);
    assert_eq!(usage["critics"]["rounds"], 2, "{usage}");
    close(&usage["critics"]["costUsd"], 0.025);
    assert_eq!(usage["rows"][0]["critics"]["rounds"], 2, "{usage}");
}
