//! A local opencode session driven through its own server (`sessions.harness:
//! opencode`, issue 44). The server is the session's first process — it runs the agent,
//! so the session's environment hand-off and private umask are its — on a free loopback
//! port with a password of its own; once it answers healthy, the-loop creates the
//! session's own opencode session, opens the TUI attached to it in front (window 0, the
//! pane the-loop tracks and the operator sees), and sends the boot prompt through the
//! server. The server's window stays behind it, outliving the supervisor as the pane
//! does.
//!
//! The password is written to a 0600 file in a 0700 directory under the state root and
//! reaches the server and the TUI only through their environment (`exec-env`, never
//! argv, never the tmux session's environment). Their config keeps them offline and
//! private: the-loop's own config file and directory, the permission policy passed as
//! `OPENCODE_PERMISSION` (merged last by opencode 1.18.33, so no other layer loosens
//! it), the repo's own `opencode.json` not read, autoupdate, sharing, model list and LSP
//! downloads off.
//!
//! - [`answer`]: `sessions approve`/`deny` answered through the server.
//! - [`watch`]: the server's events moved into the record, as hooks do for the others.
//! - [`respawn`]: a dead server started again on the same opencode session.

pub mod answer;
mod respawn;
pub mod state;
pub mod watch;

use super::sessions::{SessionError, Sessions};
use crate::channel::ChannelRecord;
use crate::channel::opencode::Server;
use crate::harness::Harness;
use crate::tmux::env_handoff::EnvHandoff;
use crate::tmux::{PaneId, SpawnSpec};
use crate::work_item::WorkItemRef;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the server may take to answer healthy before the spawn fails (a first
/// start measured at 1.18.33 once hung for minutes; the rest answered at once).
const HEALTHY_WITHIN: Duration = Duration::from_secs(60);

/// How many of a resumed session's newest messages are looked through for a prompt the
/// dead server may have taken.
const RECENT: u32 = 50;

/// The TUI's window.
const TUI_WINDOW: &str = "opencode";

/// The variable opencode reads its server password from.
const PASSWORD_VAR: &str = "OPENCODE_SERVER_PASSWORD";

/// What keeps opencode from reaching beyond loopback on its own.
const OFFLINE: [(&str, &str); 5] = [
    ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
    ("OPENCODE_DISABLE_SHARE", "1"),
    ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
    ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
    // A repo's own opencode.json could loosen the policy or add plugins and MCP servers.
    ("OPENCODE_DISABLE_PROJECT_CONFIG", "1"),
];

/// The directory of `item`'s channel files (0700).
fn channel_dir(home: &Path, item: &WorkItemRef) -> PathBuf {
    home.join("channels").join(item.slug())
}

/// The server of `channel`, asked with its password (read from its 0600 file).
pub fn server_of(channel: &ChannelRecord) -> Result<(Server, String), String> {
    let ChannelRecord::OpencodeServer {
        port,
        session,
        password_file,
        ..
    } = channel
    else {
        return Err("not an opencode server".into());
    };
    let password = std::fs::read_to_string(password_file)
        .map_err(|e| format!("cannot read {}: {e}", password_file.display()))?;
    let server = Server::new(*port, password.trim()).map_err(|e| e.to_string())?;
    Ok((server, session.clone()))
}

/// A port on 127.0.0.1 free now (the kernel's pick).
fn free_port() -> Result<u16, SessionError> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| SessionError::Channel(format!("no free loopback port: {e}")))
}

impl Sessions {
    /// `harness` attached to a server of its own on a free loopback port, when it is
    /// the built-in opencode. Its server listens on this machine's loopback: a session
    /// on another host is refused.
    pub(super) fn with_opencode_server(
        &self,
        harness: Harness,
        cwd: &Path,
        on_host: bool,
    ) -> Result<Harness, SessionError> {
        if !harness.is_opencode() {
            return Ok(harness);
        }
        if on_host {
            return Err(SessionError::Channel(
                "opencode sessions run on this machine only (the-loop drives them through a server on its loopback); remove the repo's host or use another harness".into(),
            ));
        }
        let port = free_port()?;
        Ok(harness.with_opencode_server(port, &crate::channel::opencode::url(port), cwd))
    }

    /// Starts the server (`spec`'s environment, its argv replaced), waits until it
    /// answers healthy, takes opencode session `resume` when it still has it (else makes
    /// a new one), opens the TUI on it in front, and sends `prompt` (when not empty).
    /// The TUI's pane, and the channel to record.
    pub(super) async fn spawn_opencode(
        &self,
        tmux: &dyn crate::tmux::Tmux,
        harness: &Harness,
        spec: SpawnSpec,
        prompt: &str,
        resume: Option<&str>,
    ) -> Result<(PaneId, ChannelRecord), SessionError> {
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            SessionError::Channel(format!("opencode's {what}: {e}"))
        };
        let (Some(port), Some(server_argv)) =
            (harness.opencode_port(), harness.opencode_server_argv())
        else {
            return Err(SessionError::Channel("not an opencode harness".into()));
        };
        let settings = self.settings();
        let item: WorkItemRef = spec
            .env
            .iter()
            .find(|(k, _)| k == crate::paths::ENV_WORK_ITEM)
            .and_then(|(_, v)| v.parse().ok())
            .ok_or_else(|| SessionError::Channel("the session names no work item".into()))?;
        let dir = channel_dir(&settings.home, &item);
        crate::fsutil::create_private_dir_all(&dir)
            .map_err(|e| failed(&format!("directory {}", dir.display()), &e))?;
        let password = hex::encode(rand::random::<[u8; 24]>());
        let password_file = dir.join("opencode.password");
        write_private(&password_file, password.as_bytes())
            .map_err(|e| failed("password file", &e))?;
        let config_file = dir.join("opencode.json");
        let policy = settings.opencode_policy(&item);
        let config = settings.sessions.opencode.file(policy);
        write_private(&config_file, config.to_string().as_bytes())
            .map_err(|e| failed("config file", &e))?;
        let own_dir = settings.home.join("opencode");
        crate::fsutil::create_private_dir_all(&own_dir)
            .map_err(|e| failed("config directory", &e))?;

        let mut env = spec.env.clone();
        env.extend(OFFLINE.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        env.push(("OPENCODE_CONFIG".into(), config_file.display().to_string()));
        env.push(("OPENCODE_CONFIG_DIR".into(), own_dir.display().to_string()));
        env.push(("OPENCODE_PERMISSION".into(), policy.config().to_string()));
        let handoff = EnvHandoff::new(
            settings.bin.clone(),
            crate::paths::StatePaths::new(&settings.home).spawn_env_dir(),
        );
        let secret = [(PASSWORD_VAR.to_string(), password.clone())];
        let wrap = |argv: &[String]| {
            handoff
                .wrap(&secret, false, argv)
                .map_err(|e| failed("password hand-off", &e))
        };
        let (argv, _) = wrap(&server_argv)?;
        let server_pane = tmux
            .new_session(&SpawnSpec {
                argv,
                env: env.clone(),
                ..spec.clone()
            })
            .await?;
        let name = spec.name.clone();
        let kill = || async {
            let _ = tmux.kill_session(&name).await;
        };
        let server = Server::new(port, &password).map_err(|e| failed("client", &e))?;
        if let Err(error) = healthy(&server).await {
            kill().await;
            return Err(error);
        }
        let session = match own_session(&server, resume, &item).await {
            Ok(session) => session,
            Err(error) => {
                kill().await;
                return Err(failed("session", &error));
            }
        };
        let tui_argv = harness
            .opencode_tui_argv(&session)
            .ok_or_else(|| SessionError::Channel("not an opencode harness".into()))?;
        let (argv, _) = wrap(&tui_argv)?;
        // The TUI runs none of the agent's commands: no private umask.
        let tui = SpawnSpec {
            argv,
            env,
            private_files: false,
            ..spec
        };
        let pane = match tmux.new_front_window(TUI_WINDOW, &tui).await {
            Ok(pane) => pane,
            Err(error) => {
                kill().await;
                return Err(error.into());
            }
        };
        let prompt = crate::guard::sanitize(prompt);
        // A resumed session may hold the prompt already: sent to the server that died
        // before it answered (a delivery in doubt). Its data says; never twice.
        let taken = match resume.filter(|r| *r == session) {
            Some(_) => server
                .has_user_text(&session, &prompt, RECENT)
                .await
                .unwrap_or(false),
            None => false,
        };
        if !prompt.trim().is_empty()
            && !taken
            && let Err(error) = server.prompt(&session, &prompt).await
        {
            kill().await;
            return Err(failed("boot prompt", &error));
        }
        Ok((
            pane,
            ChannelRecord::OpencodeServer {
                port,
                session,
                password_file,
                server_pane: server_pane.to_string(),
            },
        ))
    }
}

/// The session's opencode session: `resume` when the server still has it, else a new
/// one titled by the work item.
async fn own_session(
    server: &Server,
    resume: Option<&str>,
    item: &WorkItemRef,
) -> Result<String, crate::channel::opencode::Error> {
    if let Some(id) = resume
        && server.has_session(id).await?
    {
        return Ok(id.to_string());
    }
    server.create_session(&item.to_string()).await
}

/// Waits until the server answers healthy.
async fn healthy(server: &Server) -> Result<(), SessionError> {
    let deadline = tokio::time::Instant::now() + HEALTHY_WITHIN;
    loop {
        let error = match server.health().await {
            Ok(_) => return Ok(()),
            Err(error) => error,
        };
        if tokio::time::Instant::now() > deadline {
            return Err(SessionError::Channel(format!(
                "opencode's server did not answer healthy on {} within {HEALTHY_WITHIN:?} ({error}); see its window in the session's tmux",
                server.url()
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Writes `body` to `path`, readable by this user alone (replacing what was there).
fn write_private(path: &Path, body: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let _ = std::fs::remove_file(path);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    let mut file = crate::fsutil::open_private(&mut options, path)?;
    file.write_all(body)?;
    file.sync_all()
}
