//! Who may use the operator socket: our own uid only — even when the file's mode has
//! been loosened by hand — and never a browser (`Origin`). The other user is simulated
//! with `setpriv` and curl, so this needs root; elsewhere it says so and passes.

use crate::e2e::{Setup, World, item};
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
