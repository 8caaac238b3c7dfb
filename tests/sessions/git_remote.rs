//! The tests' git remote over HTTP (`support::git_remote`): real `git http-backend`
//! behind a server that requires the token. Clone, fetch and push work when the token
//! reaches git (here through `GIT_ASKPASS`, the challenge answered); without it, or
//! with a wrong one, a push is refused with 401 and the remote does not change. The
//! CGI gets none of the test's environment and leaves no process behind.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::git_remote::{Auth, GitRemote, REALM, base64_decode, base64_encode};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TOKEN: &str = "ghs_gitremotetesttoken_0123456789";
const REPO: &str = "octo/repo";
const BRANCH: &str = "the-loop/issue-7";

/// A scratch directory with an askpass program: it answers git's username prompt with
/// `x-access-token` and the password prompt with `$REMOTE_TEST_PASSWORD` — the secret
/// reaches git through its environment only, never argv or a file.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let askpass = dir.path().join("askpass");
        std::fs::write(
            &askpass,
            "#!/bin/sh\ncase \"$1\" in\n  Username*) echo x-access-token ;;\n  *) printf '%s\\n' \"$REMOTE_TEST_PASSWORD\" ;;\nesac\n",
        )
        .unwrap();
        std::fs::set_permissions(&askpass, std::fs::Permissions::from_mode(0o700)).unwrap();
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `git ARGS` in `dir` with a clean environment: no config of the user or the
    /// system, no prompt, no credential helper; `password` (when given) through askpass,
    /// `extra` added to the environment.
    fn git(
        &self,
        dir: &Path,
        args: &[&str],
        password: Option<&str>,
        extra: &[(String, String)],
    ) -> Output {
        let mut cmd = Command::new("git");
        cmd.arg("-C")
            .arg(dir)
            .args(["-c", "credential.helper=", "-c", "user.name=t"])
            .args([
                "-c",
                "user.email=t@example.com",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap())
            .env("HOME", self.dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .envs(extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        if let Some(p) = password {
            cmd.env("GIT_ASKPASS", self.path("askpass"))
                .env("REMOTE_TEST_PASSWORD", p);
        }
        cmd.output().unwrap()
    }

    fn ok(&self, dir: &Path, args: &[&str], password: Option<&str>) -> String {
        let out = self.git(dir, args, password, &[]);
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A new commit on a new branch `BRANCH` of `clone`; returns its sha.
    fn commit_on_branch(&self, clone: &Path) -> String {
        self.ok(clone, &["switch", "-q", "-c", BRANCH], None);
        std::fs::write(clone.join("fix.txt"), "fixed\n").unwrap();
        self.ok(clone, &["add", "fix.txt"], None);
        self.ok(clone, &["commit", "-q", "-m", "fix"], None);
        self.ok(clone, &["rev-parse", "HEAD"], None)
    }
}

/// Processes whose environment names `root` as `GIT_PROJECT_ROOT`: CGIs of this remote.
fn cgi_processes(root: &Path) -> Vec<u32> {
    let needle = format!("GIT_PROJECT_ROOT={}", root.display());
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
        })
        .collect()
}

#[test]
fn clone_fetch_and_push_with_the_token() {
    let remote = GitRemote::start(TOKEN);
    remote.create_repo(REPO);
    let main = remote.branch_sha(REPO, "main").unwrap();
    assert_eq!(remote.branches(REPO), ["main"]);
    assert!(remote.url(REPO).starts_with("http://127.0.0.1:"));
    assert!(remote.url(REPO).ends_with("/octo/repo.git"));
    assert!(!remote.url(REPO).contains(TOKEN));

    let s = Scratch::new();
    let clone = s.path("clone");
    let url = remote.url(REPO);
    s.ok(s.dir.path(), &["clone", "-q", &url, "clone"], Some(TOKEN));
    assert_eq!(s.ok(&clone, &["rev-parse", "HEAD"], None), main);
    assert_eq!(
        s.ok(&clone, &["symbolic-ref", "--short", "HEAD"], None),
        "main"
    );

    let sha = s.commit_on_branch(&clone);
    assert_eq!(remote.branch_sha(REPO, BRANCH), None);
    s.ok(&clone, &["push", "-q", "-u", "origin", BRANCH], Some(TOKEN));
    assert_eq!(remote.branch_sha(REPO, BRANCH), Some(sha.clone()));
    assert_eq!(remote.branches(REPO), ["main", BRANCH]);
    assert_eq!(
        remote.branch_sha(REPO, "main"),
        Some(main),
        "main untouched"
    );

    // A fetch from a second clone sees the pushed branch.
    let other = s.path("other");
    s.ok(s.dir.path(), &["clone", "-q", &url, "other"], Some(TOKEN));
    s.ok(&other, &["fetch", "-q", "origin"], Some(TOKEN));
    assert_eq!(
        s.ok(&other, &["rev-parse", &format!("origin/{BRANCH}")], None),
        sha
    );

    // Each git run was challenged once, then answered with the token.
    let log = remote.requests();
    assert!(log.iter().all(|r| r.auth != Auth::Invalid), "{log:#?}");
    assert!(
        log.iter()
            .any(|r| r.auth == Auth::Missing && r.status == 401)
    );
    let pushes: Vec<_> = log.iter().filter(|r| r.is_push()).collect();
    assert_eq!(pushes.len(), 1, "{log:#?}");
    assert_eq!((pushes[0].auth, pushes[0].status), (Auth::Valid, 200));
    assert!(log.iter().any(
        |r| r.path == "/octo/repo.git/info/refs?service=git-upload-pack"
            && r.auth == Auth::Valid
            && r.status == 200
    ));
    assert!(cgi_processes(remote.root()).is_empty());
}

#[test]
fn a_push_without_the_token_is_refused_and_changes_nothing() {
    let remote = GitRemote::start(TOKEN);
    remote.create_repo(REPO);
    let s = Scratch::new();
    let clone = s.path("clone");
    // The test's own setup authenticates up front, through the environment.
    let out = s.git(
        s.dir.path(),
        &["clone", "-q", &remote.url(REPO), "clone"],
        None,
        &remote.auth_env(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s.commit_on_branch(&clone);
    remote.clear_requests();

    // No credentials at all: git is challenged and has nothing to answer.
    let out = s.git(&clone, &["push", "origin", BRANCH], None, &[]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("could not read Username") || stderr.contains("401"),
        "{stderr}"
    );
    // A wrong token: answered, and refused.
    let out = s.git(&clone, &["push", "origin", BRANCH], Some("ghs_wrong"), &[]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Authentication failed"), "{stderr}");
    assert!(!stderr.contains(TOKEN));

    assert_eq!(remote.branch_sha(REPO, BRANCH), None);
    assert_eq!(remote.branches(REPO), ["main"]);
    let log = remote.requests();
    assert!(!log.is_empty());
    assert!(log.iter().all(|r| r.status == 401), "{log:#?}");
    assert!(log.iter().any(|r| r.auth == Auth::Missing));
    assert!(log.iter().any(|r| r.auth == Auth::Invalid));
    assert!(
        !log.iter().any(|r| r.is_push()),
        "no pack was ever received"
    );
}

#[test]
fn the_challenge_names_the_realm_and_only_basic_with_the_token_passes() {
    let remote = GitRemote::start(TOKEN);
    remote.create_repo(REPO);
    let info_refs = format!("{}/info/refs?service=git-upload-pack", remote.url(REPO));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let http = reqwest::Client::new();
        let r = http.get(&info_refs).send().await.unwrap();
        assert_eq!(r.status(), 401);
        assert_eq!(
            r.headers()["www-authenticate"],
            format!("Basic realm=\"{REALM}\"").as_str()
        );
        // The token as a bearer, or as the user name: refused.
        let r = http
            .get(&info_refs)
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
        let r = http
            .get(&info_refs)
            .basic_auth(TOKEN, Some("nope"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
        // Basic with the token as the password, any user name: git answers.
        let r = http
            .get(&info_refs)
            .basic_auth("anyone", Some(TOKEN))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(
            r.headers()["content-type"],
            "application/x-git-upload-pack-advertisement"
        );
        let body = r.text().await.unwrap();
        assert!(body.starts_with("001e# service=git-upload-pack"), "{body}");
        // Outside the repositories: 404 from the server itself, git never runs.
        let r = http
            .get(format!(
                "http://{}/../etc/passwd",
                remote.url(REPO).split('/').nth(2).unwrap()
            ))
            .basic_auth("x", Some(TOKEN))
            .send()
            .await
            .unwrap();
        assert!(r.status() == 404 || r.status() == 400, "{}", r.status());
        let r = http
            .get(format!(
                "{}/info/refs?service=git-upload-pack",
                remote.url("octo/none")
            ))
            .basic_auth("x", Some(TOKEN))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
    });
    let log = remote.requests();
    let auths: Vec<Auth> = log.iter().take(4).map(|r| r.auth).collect();
    assert_eq!(
        auths,
        [Auth::Missing, Auth::Invalid, Auth::Invalid, Auth::Valid]
    );
}

#[test]
fn the_cgi_gets_none_of_the_tests_environment_and_leaves_no_process() {
    let remote = GitRemote::start(TOKEN);
    let bare = remote.create_repo(REPO);
    let s = Scratch::new();
    // A hook of the remote repository writes down the environment receive-pack ran in
    // (the CGI's, plus what git adds).
    let dump = s.path("hook-env");
    let hook = bare.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        format!("#!/bin/sh\nenv > '{}'\ncat >/dev/null\n", dump.display()),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o700)).unwrap();
    let clone = s.path("clone");
    let url = remote.url(REPO);
    s.ok(s.dir.path(), &["clone", "-q", &url, "clone"], Some(TOKEN));
    let sha = s.commit_on_branch(&clone);
    s.ok(&clone, &["push", "-q", "origin", BRANCH], Some(TOKEN));
    assert_eq!(remote.branch_sha(REPO, BRANCH), Some(sha));

    let env = std::fs::read_to_string(&dump).unwrap();
    let names: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    for expected in [
        "GIT_PROJECT_ROOT",
        "REQUEST_METHOD",
        "PATH_INFO",
        "REMOTE_USER",
        "REMOTE_ADDR",
    ] {
        assert!(names.contains(&expected), "{expected} missing: {names:?}");
    }
    assert!(!env.contains(TOKEN), "the token reached the CGI");
    // Nothing of the test process's own environment (cargo sets plenty) reached it.
    let lines: Vec<&str> = env.lines().collect();
    for (k, v) in std::env::vars() {
        let ours = format!("{k}={v}");
        assert!(!lines.contains(&ours.as_str()), "the CGI inherited {k}");
    }
    assert!(!names.iter().any(|n| n.starts_with("CARGO")), "{names:?}");
    let root = remote.root().to_path_buf();
    assert_eq!(bare, root.join("octo/repo.git"));
    assert!(cgi_processes(&root).is_empty());
    drop(remote);
    assert!(
        !root.exists(),
        "the repositories are removed with the remote"
    );
}

#[test]
fn a_hung_cgi_is_killed_with_its_process_group() {
    let remote = GitRemote::start_with_timeout(TOKEN, std::time::Duration::from_secs(1));
    let bare = remote.create_repo(REPO);
    let s = Scratch::new();
    // A hook that hangs: it runs in receive-pack, under http-backend, in its group.
    let hook = bare.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh
cat >/dev/null
sleep 300
",
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o700)).unwrap();
    let clone = s.path("clone");
    let url = remote.url(REPO);
    s.ok(s.dir.path(), &["clone", "-q", &url, "clone"], Some(TOKEN));
    s.commit_on_branch(&clone);
    let started = std::time::Instant::now();
    let out = s.git(&clone, &["push", "origin", BRANCH], Some(TOKEN), &[]);
    assert!(!out.status.success());
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    assert_eq!(remote.branch_sha(REPO, BRANCH), None);
    let pushes: Vec<_> = remote
        .requests()
        .into_iter()
        .filter(|r| r.is_push())
        .collect();
    assert_eq!(pushes.len(), 1);
    assert_eq!(pushes[0].status, 504);
    // The hook's `sleep` carried the CGI's environment: nothing of the group is left.
    assert!(cgi_processes(remote.root()).is_empty());
}

#[test]
fn basic_auth_codec() {
    for text in ["", "f", "fo", "foo", "foob", "x-access-token:ghs_abc"] {
        let encoded = base64_encode(text.as_bytes());
        assert_eq!(encoded.len() % 4, 0);
        assert_eq!(base64_decode(&encoded).unwrap(), text.as_bytes());
    }
    assert_eq!(base64_encode(b"x:y"), "eDp5");
    assert_eq!(base64_decode("eDp5").unwrap(), b"x:y");
    assert!(base64_decode("not base64!").is_none());
}
