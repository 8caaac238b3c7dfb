//! A real git remote over HTTP for the tests (SPEC §19.6): axum on `127.0.0.1:0` in
//! front of bare repositories, each request answered by the real `git http-backend` run
//! as a CGI — the smart protocol both ways (upload-pack for clone and fetch,
//! receive-pack for push, `http.receivepack=true` in every repository).
//!
//! Every request needs HTTP Basic auth whose password is the remote's token (any user
//! name); anything else is answered 401 with `WWW-Authenticate: Basic
//! realm="the-loop-test"` and never reaches git, so a push lands only when the
//! credentials reached the git process that pushed. Every request is recorded (method,
//! path and query, what its auth was, the status) for tests to count.
//!
//! The CGI child gets only the environment a CGI gets (plus the git settings that keep
//! the user's and the system's config out), never the test's own; it runs in its own
//! process group, is killed with the group after [`CGI_TIMEOUT`], and is always awaited.
//! The server runs on a thread and runtime of its own, so a test may drive git
//! synchronously; dropping the remote stops the server and removes its repositories.
//!
//! ```ignore
//! let remote = GitRemote::start("ghs_token");
//! remote.create_repo("octo/repo");          // one commit on `main`, HEAD → main
//! let url = remote.url("octo/repo");        // http://127.0.0.1:PORT/octo/repo.git
//! // … clone, commit, push with the token supplied to git …
//! assert_eq!(remote.branch_sha("octo/repo", "the-loop/issue-7"), Some(sha));
//! ```

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long one `git http-backend` may run before its process group is killed.
pub const CGI_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest request body accepted (a push of a test repository is far smaller).
const MAX_BODY: usize = 256 * 1024 * 1024;
/// The realm of the 401 challenge.
pub const REALM: &str = "the-loop-test";

/// What a request's `Authorization` was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// No `Authorization` header.
    Missing,
    /// Present, but not Basic auth with the remote's token as the password.
    Invalid,
    /// Basic auth with the token.
    Valid,
}

/// One request the remote received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitRequest {
    pub method: String,
    /// The path with its query, e.g. `/octo/repo.git/info/refs?service=git-receive-pack`.
    pub path: String,
    pub auth: Auth,
    /// What was answered (401 for a refused one; the CGI's `Status:` otherwise).
    pub status: u16,
}

impl GitRequest {
    /// A push's pack (`POST …/git-receive-pack`).
    pub fn is_push(&self) -> bool {
        self.method == "POST" && self.path.ends_with("/git-receive-pack")
    }
}

struct Shared {
    root: PathBuf,
    token: String,
    git: PathBuf,
    cgi_timeout: Duration,
    log: Mutex<Vec<GitRequest>>,
}

/// The running remote; see the module docs.
pub struct GitRemote {
    shared: Arc<Shared>,
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Removed on drop, after the server stopped.
    dir: tempfile::TempDir,
}

impl GitRemote {
    /// Serves an empty set of repositories on `127.0.0.1:0`, requiring `token`.
    pub fn start(token: &str) -> Self {
        Self::start_with_timeout(token, CGI_TIMEOUT)
    }

    /// As [`start`](Self::start), with another limit on one `git http-backend` run.
    pub fn start_with_timeout(token: &str, cgi_timeout: Duration) -> Self {
        assert!(!token.is_empty(), "the remote needs a token to require");
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repos");
        std::fs::create_dir(&root).unwrap();
        let git = the_loop::paths::find_program("git", std::env::var_os("PATH").as_deref())
            .expect("git on PATH");
        let shared = Arc::new(Shared {
            root,
            token: token.to_string(),
            git,
            cgi_timeout,
            log: Mutex::new(Vec::new()),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let thread = std::thread::Builder::new()
            .name("git-remote".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                    axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = rx.await;
                        })
                        .await
                        .unwrap();
                });
            })
            .unwrap();
        Self {
            shared,
            addr,
            shutdown: Some(tx),
            thread: Some(thread),
            dir,
        }
    }

    /// A bare repository `owner/name` with one commit on `main` (a `README.md`), HEAD
    /// on `main`, pushes over HTTP allowed. The commit is the same in every run.
    pub fn create_repo(&self, repo: &str) -> PathBuf {
        let bare = self.bare_path(repo);
        assert!(!bare.exists(), "{repo} exists already");
        std::fs::create_dir_all(bare.parent().unwrap()).unwrap();
        git(
            self.dir.path(),
            &["init", "-q", "--bare", bare.to_str().unwrap()],
            None,
        );
        git(&bare, &["config", "http.receivepack", "true"], None);
        git(&bare, &["symbolic-ref", "HEAD", "refs/heads/main"], None);
        let blob = git(&bare, &["hash-object", "-w", "--stdin"], Some("hello\n"));
        let tree = git(
            &bare,
            &["mktree"],
            Some(&format!("100644 blob {blob}\tREADME.md\n")),
        );
        let commit = git(&bare, &["commit-tree", &tree, "-m", "first"], None);
        git(&bare, &["update-ref", "refs/heads/main", &commit], None);
        bare
    }

    /// `http://127.0.0.1:PORT/owner/name.git`: no credentials in it.
    pub fn url(&self, repo: &str) -> String {
        format!("http://{}/{repo}.git", self.addr)
    }

    /// The bare repository of `owner/name` on disk.
    pub fn bare_path(&self, repo: &str) -> PathBuf {
        assert!(
            repo.split('/').count() == 2 && repo.split('/').all(safe_segment),
            "`{repo}` is not owner/name"
        );
        self.shared.root.join(format!("{repo}.git"))
    }

    /// The directory the repositories are in (`GIT_PROJECT_ROOT`).
    pub fn root(&self) -> &Path {
        &self.shared.root
    }

    /// The commit `branch` points at on the remote, if it exists.
    pub fn branch_sha(&self, repo: &str, branch: &str) -> Option<String> {
        let out = git_output(
            &self.bare_path(repo),
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("refs/heads/{branch}^{{commit}}"),
            ],
            None,
        );
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Every branch of the remote repository, sorted.
    pub fn branches(&self, repo: &str) -> Vec<String> {
        let listed = git(
            &self.bare_path(repo),
            &["for-each-ref", "--format=%(refname:short)", "refs/heads"],
            None,
        );
        let mut branches: Vec<String> = listed.lines().map(str::to_string).collect();
        branches.sort();
        branches
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<GitRequest> {
        self.shared.log.lock().unwrap().clone()
    }

    /// Whether a push's pack was accepted with valid credentials (only the token that
    /// reached the pushing git can have made it).
    pub fn pushed_with_the_token(&self) -> bool {
        self.requests()
            .iter()
            .any(|r| r.is_push() && r.auth == Auth::Valid && r.status == 200)
    }

    /// Forgets the request log (e.g. after a test's setup).
    pub fn clear_requests(&self) {
        self.shared.log.lock().unwrap().clear();
    }

    /// Settings that make a git process authenticate to this remote up front, through
    /// its environment only (`GIT_CONFIG_COUNT` … `http.extraHeader`): for a test's own
    /// setup clones and pushes, not for the product's credential path.
    pub fn auth_env(&self) -> Vec<(String, String)> {
        let basic = base64_encode(format!("x-access-token:{}", self.shared.token).as_bytes());
        vec![
            ("GIT_CONFIG_COUNT".into(), "1".into()),
            ("GIT_CONFIG_KEY_0".into(), "http.extraHeader".into()),
            (
                "GIT_CONFIG_VALUE_0".into(),
                format!("Authorization: Basic {basic}"),
            ),
        ]
    }
}

impl Drop for GitRemote {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn safe_segment(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('.')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// `git ARGS` in `dir` with the user's and the system's config kept out; panics on
/// failure and returns stdout, trimmed.
fn git(dir: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let out = git_output(dir, args, stdin);
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn git_output(dir: &Path, args: &[&str], stdin: Option<&str>) -> std::process::Output {
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_AUTHOR_DATE", "2026-11-02T11:00:00Z")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_DATE", "2026-11-02T11:00:00Z")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(text) = stdin {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    child.wait_with_output().unwrap()
}

// ---- the HTTP side -------------------------------------------------------------------

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let method = req.method().to_string();
    let path_and_query = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.uri().path().to_string(), |p| p.as_str().to_string());
    let auth = check_auth(req.headers(), &shared.token);
    let response = if auth == Auth::Valid {
        cgi(&shared, req).await
    } else {
        let mut r = (StatusCode::UNAUTHORIZED, "authentication required\n").into_response();
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_str(&format!("Basic realm=\"{REALM}\"")).unwrap(),
        );
        r
    };
    shared.log.lock().unwrap().push(GitRequest {
        method,
        path: path_and_query,
        auth,
        status: response.status().as_u16(),
    });
    response
}

fn check_auth(headers: &HeaderMap, token: &str) -> Auth {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Auth::Missing;
    };
    let password = value
        .to_str()
        .ok()
        .and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("basic").then_some(rest.trim())
        })
        .and_then(base64_decode)
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|pair| pair.split_once(':').map(|(_, p)| p.to_string()));
    match password {
        Some(p) if p == token => Auth::Valid,
        _ => Auth::Invalid,
    }
}

fn plain(status: StatusCode, text: &str) -> Response {
    (status, format!("{text}\n")).into_response()
}

/// One request through `git http-backend`.
async fn cgi(shared: &Shared, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    // Only `/owner/name.git/…` of plain segments: nothing can leave the root.
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    if segments.len() < 3 || !segments.iter().all(|s| safe_segment(s)) {
        return plain(StatusCode::NOT_FOUND, "no such repository");
    }
    let body: Bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => return plain(StatusCode::PAYLOAD_TOO_LARGE, "request body too large"),
    };
    let header = |name: HeaderName| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };

    let mut cmd = tokio::process::Command::new(&shared.git);
    cmd.arg("http-backend")
        .env_clear()
        .env("GIT_PROJECT_ROOT", &shared.root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("HOME", &shared.root)
        .env("REQUEST_METHOD", parts.method.as_str())
        .env("PATH_INFO", &path)
        .env("QUERY_STRING", parts.uri.query().unwrap_or(""))
        .env("REMOTE_USER", "the-loop-test")
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("GATEWAY_INTERFACE", "CGI/1.1")
        .env("SERVER_PROTOCOL", "HTTP/1.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(t) = header(header::CONTENT_TYPE) {
        cmd.env("CONTENT_TYPE", t);
    }
    if parts.method != axum::http::Method::GET {
        cmd.env("CONTENT_LENGTH", body.len().to_string());
    }
    if let Some(enc) = header(header::CONTENT_ENCODING).filter(|e| e.contains("gzip")) {
        cmd.env("HTTP_CONTENT_ENCODING", enc);
    }
    if let Some(proto) = header(HeaderName::from_static("git-protocol"))
        .filter(|p| p.chars().all(|c| c.is_ascii_graphic() || c == ' '))
    {
        cmd.env("HTTP_GIT_PROTOCOL", proto);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return plain(StatusCode::INTERNAL_SERVER_ERROR, &format!("spawn: {e}")),
    };
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    // Write, read and wait at once: a CGI may answer before it read everything.
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(&body).await;
        // Dropping stdin closes it: the CGI sees the end of the body.
    });
    let out_reader = tokio::spawn(async move {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out).await;
        out
    });
    let err_reader = tokio::spawn(async move {
        let mut err = Vec::new();
        let _ = stderr.read_to_end(&mut err).await;
        err
    });
    let status = match tokio::time::timeout(shared.cgi_timeout, child.wait()).await {
        Ok(status) => status.ok(),
        Err(_) => {
            if let Some(pid) = pid {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            let _ = child.kill().await;
            None
        }
    };
    let _ = writer.await;
    let out = out_reader.await.unwrap_or_default();
    let err = err_reader.await.unwrap_or_default();
    let Some(status) = status else {
        return plain(StatusCode::GATEWAY_TIMEOUT, "git http-backend timed out");
    };
    if !status.success() && out.is_empty() {
        return plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("git http-backend failed: {}", String::from_utf8_lossy(&err)),
        );
    }
    cgi_response(&out)
}

/// A CGI's output as an HTTP response: headers up to the first blank line (`Status:`
/// sets the status, 200 without it), the rest is the body.
fn cgi_response(out: &[u8]) -> Response {
    let (head, body) = match find(out, b"\r\n\r\n") {
        Some(i) => (&out[..i], &out[i + 4..]),
        None => match find(out, b"\n\n") {
            Some(i) => (&out[..i], &out[i + 2..]),
            None => return plain(StatusCode::BAD_GATEWAY, "malformed CGI output"),
        },
    };
    let mut response = Response::new(Body::from(body.to_vec()));
    for line in String::from_utf8_lossy(head).lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value.split(' ').next().and_then(|c| c.parse::<u16>().ok());
            *response.status_mut() = code
                .and_then(|c| StatusCode::from_u16(c).ok())
                .unwrap_or(StatusCode::BAD_GATEWAY);
        } else if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.trim().as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().append(n, v);
        }
    }
    response
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

// ---- base64 (Basic auth), without a dependency for twenty lines ----------------------

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = ALPHABET.iter().position(|a| *a == c)? as u32;
        acc = acc << 6 | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits & 0xff) as u8);
        }
    }
    Some(out)
}
