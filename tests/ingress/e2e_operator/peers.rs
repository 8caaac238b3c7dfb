//! Who may use the operator socket: our own uid only — even when the file's mode has
//! been loosened by hand — and never a browser (`Origin`). The other user is simulated
//! with `setpriv` and curl, so this needs root; elsewhere it says so and passes. And the
//! guide's `curl --unix-socket` examples, run as written.

use crate::support::e2e::{Setup, World, item};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

const NOBODY: &str = "65534";

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `curl` POSTing a reply over `socket`, as root or (with `as_nobody`) as uid 65534.
async fn curl(socket: &Path, text: &str, as_nobody: bool, origin: Option<&str>) -> Output {
    let mut cmd = if as_nobody {
        let mut cmd = Command::new("setpriv");
        cmd.args([
            "--reuid",
            NOBODY,
            "--regid",
            NOBODY,
            "--clear-groups",
            "--",
            "curl",
        ]);
        cmd
    } else {
        Command::new("curl")
    };
    let body = serde_json::json!({"ref": item(15), "text": text, "comment": false}).to_string();
    cmd.args([
        "-sS",
        "--max-time",
        "30",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
    ])
    .arg("--unix-socket")
    .arg(socket)
    .args(["-H", "Content-Type: application/json", "-d", &body]);
    if let Some(origin) = origin {
        cmd.args(["-H", &format!("Origin: {origin}")]);
    }
    cmd.arg("http://localhost/api/v1/sessions/reply");
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

fn open_up(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_user_and_a_browser_are_refused_even_when_the_file_lets_them_in() {
    if !nix::unistd::getuid().is_root() || !have("setpriv") || !have("curl") {
        eprintln!("skipped: needs root, setpriv and curl to connect as another user");
        return;
    }
    let w = World::supervising(Setup::default(), 15).await;
    let socket = w.operator_socket();
    // Undo every file-mode defence, as a careless `chmod -R` would.
    for dir in [w.work_dir(), w.state()] {
        open_up(dir, 0o755);
    }
    open_up(&socket, 0o777);

    let nobody = curl(&socket, "NOBODY-SENTINEL", true, None).await;
    assert!(
        !nobody.status.success(),
        "curl as nobody must get no answer"
    );
    assert_ne!(String::from_utf8_lossy(&nobody.stdout), "200");

    let browser = curl(
        &socket,
        "BROWSER-SENTINEL",
        false,
        Some("http://evil.example"),
    )
    .await;
    assert_eq!(String::from_utf8_lossy(&browser.stdout), "403");

    // The same request from our own uid is served: it was the peer check.
    let ours = curl(&socket, "OURS-SENTINEL", false, None).await;
    assert_eq!(String::from_utf8_lossy(&ours.stdout), "200");
    w.wait_pasted("OURS-SENTINEL").await;
    w.wait_cycles(1).await;
    assert_eq!(w.pasted_count("NOBODY-SENTINEL"), 0);
    assert_eq!(w.pasted_count("BROWSER-SENTINEL"), 0);
}

/// The `curl --unix-socket` examples in docs/guide.md, as argv (single quotes and `\`
/// line continuations are all they use).
fn guide_examples() -> Vec<Vec<String>> {
    let guide =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/guide.md")).unwrap();
    let mut examples = Vec::new();
    let mut lines = guide.lines();
    while let Some(line) = lines.next() {
        if !line.trim_start().starts_with("curl --unix-socket") {
            continue;
        }
        let mut command = line.trim().to_string();
        while command.ends_with('\\') {
            command.pop();
            command.push(' ');
            command.push_str(lines.next().unwrap().trim());
        }
        examples.push(split(&command));
    }
    examples
}

fn split(command: &str) -> Vec<String> {
    let (mut words, mut word, mut quoted) = (Vec::new(), String::new(), false);
    for c in command.chars() {
        match c {
            '\'' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    words.extend((!word.is_empty()).then_some(word));
    words
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guides_curl_examples_work() {
    if !have("curl") {
        eprintln!("skipped: curl is not installed");
        return;
    }
    let examples = guide_examples();
    assert_eq!(
        examples.len(),
        3,
        "the reply, the ask and the comment example: {examples:?}"
    );
    let w = World::supervising(Setup::default(), 15).await;
    let socket = w.operator_socket().display().to_string();
    let mut answers = Vec::new();
    for argv in examples {
        let argv: Vec<String> = argv
            .into_iter()
            .map(|a| {
                a.replace("~/.local/state/the-loop/operator.sock", &socket)
                    .replace("github:octo/repo#18", &item(15))
            })
            .collect();
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]).args(["-sS", "--max-time", "30"]);
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        assert!(out.status.success(), "{argv:?}: {out:?}");
        let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(answer["ok"], true, "{argv:?}: {answer}");
        answers.push(answer);
    }
    w.wait_pasted("Per repository, please.").await;
    assert_eq!(answers[0]["comment_posted"], true);
    assert_eq!(answers[1]["comment_posted"], true, "{}", answers[1]);
    let asked = w.wait_event("session.awaiting_input", |_| true).await;
    assert_eq!(asked["question"], "Per repository or global?");
    let commented = w.wait_event("session.commented", |_| true).await;
    assert_eq!(commented["work_item"], item(15).as_str());
    assert_eq!(answers[2]["url"], commented["url"], "{}", answers[2]);
}
