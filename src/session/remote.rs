//! A session on another host (issue 32): where it runs there, what its pane's
//! environment says, and which release its client is, asked on that host. The pane
//! itself is reached through the host's tmux ([`Sessions::tmux_on`]) like any other.

use super::registry::SessionRecord;
use super::sessions::{SessionError, Sessions};
use crate::config::RepoConfig;
use crate::harness::{Harness, HookSupport, HookWiring};
use crate::paths;
use crate::tmux::RemoteHost;
use crate::work_item::WorkItemRef;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How long a look-up on the host (a directory, a client's version) may take.
const LOOKUP: Duration = Duration::from_secs(15);

impl Sessions {
    /// The host a repo's sessions run on, connected: `None` for this machine.
    pub(crate) async fn host_for(
        &self,
        repo: Option<&RepoConfig>,
        item: &WorkItemRef,
    ) -> Result<Option<Arc<RemoteHost>>, SessionError> {
        let Some(name) = repo.and_then(|r| r.host.as_deref()) else {
            return Ok(None);
        };
        let host = self.hosts().get(name).cloned().ok_or_else(|| {
            SessionError::Remote(format!(
                "{item}: host `{name}` is not in the config's hosts"
            ))
        })?;
        // A host already up with its HOME known needs no probe of its master here.
        let up = matches!(host.transport.state(), crate::ssh::HostState::Up { .. });
        if !up || host.transport.remote_home().is_none() {
            host.transport
                .connect()
                .await
                .map_err(|e| SessionError::Remote(e.to_string()))?;
        }
        Ok(Some(host))
    }
}

/// Where a session of `repo` runs on `host`: `repos[].path` there, which must exist,
/// or the item's own worktree there when the repo's mode asks for one — made, reused,
/// set up, recorded and judged by the same workspace code as here, over the host's
/// connection, under `<stateDir>/worktrees` there.
pub(crate) async fn place(
    host: &RemoteHost,
    repo: &RepoConfig,
    item: &WorkItemRef,
    workspaces: &crate::workspace::Workspaces,
    source: crate::events::Source,
) -> Result<crate::workspace::Placement, SessionError> {
    let Some(path) = repo.path.as_deref() else {
        return Err(SessionError::Remote(format!(
            "{item}: a repo on host `{}` needs repos[].path (a directory on that host)",
            host.name()
        )));
    };
    let no_home = || {
        SessionError::Remote(format!(
            "{item}: host `{}` did not say its HOME",
            host.name()
        ))
    };
    let dir = host.resolve(path).ok_or_else(no_home)?;
    let exists = host
        .transport
        .run(&["test".into(), "-d".into(), dir.clone()], None, LOOKUP)
        .await
        .map_err(|e| SessionError::Remote(e.to_string()))?;
    if !exists.success {
        return Err(SessionError::NoWorkingDir {
            item: item.to_string(),
            path: PathBuf::from(format!("{}:{dir}", host.name())),
        });
    }
    let root = host
        .resolve(&host.in_state_dir("worktrees"))
        .ok_or_else(no_home)?;
    workspaces
        .on(Arc::clone(&host.transport))
        .rooted(PathBuf::from(root))
        .place_at(item, repo, PathBuf::from(dir), source)
        .await
        .map_err(|source| SessionError::WorkspaceOnHost {
            host: host.name().to_string(),
            source,
        })
}

/// The release the client on `host` names (`claude --version` run there); `None` for
/// a harness whose screen the-loop does not read, or when it cannot be told (then its
/// screen is unknown and deliveries are held, as on this machine).
pub(crate) async fn client_version(host: &RemoteHost, harness: &Harness) -> Option<String> {
    crate::session::delivery::ScreenReader::of(harness.screen())?;
    let argv = [harness.program().to_string(), "--version".to_string()];
    let out = host.transport.run(&argv, None, LOOKUP).await.ok()?;
    crate::harness::version::parse(&String::from_utf8_lossy(&out.stdout))
}

/// The environment of a pane on `host`: the item, the host's state directory as the
/// pane's `THE_LOOP_HOME`, and the-loop installed there first on `PATH` — nothing of
/// this machine's paths or secrets.
pub(crate) fn pane_env(host: &RemoteHost, record: &SessionRecord) -> Vec<(String, String)> {
    let mut env = vec![
        (
            paths::ENV_WORK_ITEM.to_string(),
            record.work_item.to_string(),
        ),
        (paths::ENV_HOST.to_string(), host.name().to_string()),
    ];
    if let Some(state) = host.state_dir() {
        env.push((paths::ENV_HOME.to_string(), state));
    }
    if let (Some(bin), Some(path)) = (host.bin(), host.pane_path()) {
        env.push((paths::ENV_BIN.to_string(), bin));
        env.push(("PATH".to_string(), path));
    }
    env
}

impl Sessions {
    /// [`Sessions::mark_trusted`] on `host`: the-loop installed there marks `dir` in
    /// that host's Claude Code config (`the-loop claude-trust DIR`, under Claude Code's
    /// own lock), for a directory the-loop made there (`worktree`) or the repo's
    /// configured path. A failure is a warning event: the agent still starts, and its
    /// trust dialog then waits for the operator.
    pub(crate) async fn mark_trusted_on(
        &self,
        host: &RemoteHost,
        harness: &Harness,
        dir: &std::path::Path,
        item: &WorkItemRef,
        source: crate::events::Source,
    ) {
        use crate::events::{Event, EventType, Level};
        if !harness.is_claude() || !self.settings().sessions.trust_workspaces {
            return;
        }
        let Some(bin) = host.bin() else {
            return;
        };
        let argv = [
            bin.clone(),
            "claude-trust".to_string(),
            dir.display().to_string(),
        ];
        let error = match host.transport.run(&argv, None, LOOKUP).await {
            Ok(out) if out.success => return,
            Ok(out) if out.stderr.trim().is_empty() => format!(
                "`{}` exited {} there (is the-loop installed there? `the-loop hosts install {}`)",
                argv.join(" "),
                out.code.unwrap_or(-1),
                host.name()
            ),
            Ok(out) => out.stderr.trim().to_string(),
            Err(error) => error.to_string(),
        };
        self.emit(
            Event::new(source, EventType::WorkspaceTrustFailed)
                .level(Level::Warning)
                .with("work_item", item.to_string())
                .with("dir", dir.display().to_string())
                .with("file", "~/.claude.json")
                .with("error", error)
                .with("host", host.name()),
        );
    }
}

/// `harness` wired to report through the-loop installed on `host`: its hooks run
/// `<stateDir>/bin/the-loop hook …` there, which sends each report back over the
/// socket forwarded on the host's connection (`THE_LOOP_HOST` tells it to). Claude's
/// settings file is written on the host (`<stateDir>/harness/<slug>/`, 0600 in 0700).
/// Unhooked, with a warning (its state then read from its screen), when the-loop is
/// not installed there (`the-loop hosts install`) or the file cannot be written.
pub(crate) async fn wire_hooks(host: &RemoteHost, harness: Harness, item: &WorkItemRef) -> Harness {
    let support = harness.hook_support();
    if support == HookSupport::None {
        return harness;
    }
    let (Some(bin), Some(state)) = (host.bin(), host.state_dir()) else {
        return harness;
    };
    let unhooked = |why: String| {
        tracing::warn!(work_item = %item, host = host.name(), "hooks not wired (the session's state will be read from its screen): {why}");
    };
    let run = |argv: &[&str], stdin: Option<Vec<u8>>| {
        let argv: Vec<String> = argv.iter().map(|w| w.to_string()).collect();
        async move {
            match host.transport.run(&argv, stdin.as_deref(), LOOKUP).await {
                Ok(out) if out.success => Ok(()),
                Ok(out) => Err(format!("`{}` failed there: {}", argv.join(" "), out.stderr)),
                Err(error) => Err(error.to_string()),
            }
        }
    };
    if let Err(why) = run(&["test", "-x", &bin], None).await {
        unhooked(format!(
            "the-loop is not installed at {bin} on host `{}` (`the-loop hosts install {}`): {why}",
            host.name(),
            host.name()
        ));
        return harness;
    }
    let settings_file = match support {
        HookSupport::SettingsFile => {
            let dir = format!("{state}/harness/{}", item.slug());
            let file = format!("{dir}/{}", super::hooks::wiring::CLAUDE_SETTINGS);
            let written = async {
                let settings = super::hooks::wiring::claude_settings(std::path::Path::new(&bin))
                    .map_err(|e| e.to_string())?;
                let bytes = serde_json::to_vec_pretty(&settings).map_err(|e| e.to_string())?;
                run(&["mkdir", "-p", "-m", "700", &dir], None).await?;
                run(&["install", "-m", "600", "/dev/null", &file], None).await?;
                run(&["dd", &format!("of={file}"), "status=none"], Some(bytes)).await
            };
            if let Err(why) = written.await {
                unhooked(format!(
                    "the settings file was not written on host `{}`: {why}",
                    host.name()
                ));
                return harness;
            }
            Some(PathBuf::from(file))
        }
        _ => None,
    };
    harness.with_hooks(HookWiring {
        bin: PathBuf::from(bin),
        settings_file,
    })
}
