//! Codex's TUI attached to an app server the-loop starts for the session (issue 41,
//! `sessions.codexChannel: app-server`): the server runs the agent — its hooks and
//! `notify` are declared on it — and the TUI in the pane, given the approval policy,
//! shows it (`codex --remote unix://PATH -C CWD`). Measured on codex 0.171.0: hooks
//! declared on the TUI alone never run; declared on the server they do.

use super::{CODEX_NO_MODEL_NUDGE, Harness, Kind, codex_hook_flags};
use std::path::{Path, PathBuf};

/// The first codex release whose app server was measured as a second client
/// (`--listen unix://`, `--remote`, the protocol of `channel::codex`); an older one runs
/// its TUI alone, pasted into.
pub const APP_SERVER_SINCE: &str = "0.171.0";

/// Where the app server listens and the directory the TUI starts in.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct AppServer {
    socket: PathBuf,
    cwd: PathBuf,
}

impl AppServer {
    fn url(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// The TUI's own flags: attach, the directory, and hook trust for this invocation
    /// (the server runs the hooks the-loop declared; decision `2026-12-04-codex-delivery`).
    pub(super) fn tui_flags(&self) -> Vec<String> {
        vec![
            "--remote".into(),
            self.url(),
            "-C".into(),
            self.cwd.to_string_lossy().into_owned(),
            "--dangerously-bypass-hook-trust".into(),
        ]
    }
}

impl Harness {
    /// This harness with its interactive session's TUI attached to the app server on
    /// `socket`, starting in `cwd`. Only the built-in codex takes one; the others
    /// ignore it.
    pub fn with_app_server(mut self, socket: &Path, cwd: &Path) -> Self {
        if matches!(self.kind, Kind::Codex { .. }) {
            self.app_server = Some(AppServer {
                socket: socket.to_path_buf(),
                cwd: cwd.to_path_buf(),
            });
        }
        self
    }

    /// The app server's argv (`codex app-server --listen unix://PATH` with the-loop's
    /// hook and notify flags), when this is codex attached to one.
    pub fn app_server_argv(&self) -> Option<Vec<String>> {
        let (Kind::Codex { program }, Some(server)) = (&self.kind, &self.app_server) else {
            return None;
        };
        let mut argv = vec![
            program.clone(),
            "app-server".into(),
            "--listen".into(),
            server.url(),
        ];
        if let Some(wiring) = &self.hooks {
            // `-c` pairs only: trust is the TUI's flag, the server has none.
            let flags = codex_hook_flags(&wiring.bin);
            let mut flags = flags.into_iter();
            while let Some(flag) = flags.next() {
                if flag == "-c" {
                    argv.push(flag);
                    argv.extend(flags.next());
                }
            }
        }
        argv.extend(["-c".into(), CODEX_NO_MODEL_NUDGE.into()]);
        Some(argv)
    }

    /// The socket of the app server this harness's TUI attaches to.
    pub fn app_server_socket(&self) -> Option<&Path> {
        self.app_server.as_ref().map(|s| s.socket.as_path())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{CodexPolicy, SessionsConfig};
    use crate::harness::{Harness, HookWiring};
    use std::path::{Path, PathBuf};

    fn codex() -> Harness {
        Harness::resolve("codex", &SessionsConfig::default())
            .unwrap()
            .with_codex_policy(CodexPolicy::default())
            .with_hooks(HookWiring {
                bin: PathBuf::from("/bin/the-loop"),
                settings_file: None,
            })
    }

    #[test]
    fn the_server_gets_the_hooks_and_the_tui_attaches_with_the_policy() {
        let harness = codex().with_app_server(Path::new("/s/codex.sock"), Path::new("/w/p"));
        let server = harness.app_server_argv().unwrap();
        assert_eq!(
            server[..4],
            ["codex", "app-server", "--listen", "unix:///s/codex.sock"]
        );
        assert!(
            server.iter().any(|a| a.starts_with("notify=[")),
            "{server:?}"
        );
        assert!(
            server
                .iter()
                .any(|a| a.starts_with("hooks.PermissionRequest=")),
            "{server:?}"
        );
        assert!(
            !server.iter().any(|a| a.starts_with("--dangerously")),
            "{server:?}"
        );
        assert_eq!(
            server[server.len() - 2..],
            ["-c", "notice.hide_rate_limit_model_nudge=true"],
            "no model nudge to answer (issue 43)"
        );
        let tui = harness.fresh_argv("boot", None);
        assert_eq!(
            tui,
            [
                "codex",
                "--remote",
                "unix:///s/codex.sock",
                "-C",
                "/w/p",
                "--dangerously-bypass-hook-trust",
                "-c",
                "notice.hide_rate_limit_model_nudge=true",
                "--ask-for-approval",
                "on-request",
                "--sandbox",
                "workspace-write",
                "boot",
            ]
        );
        assert_eq!(
            harness.app_server_socket(),
            Some(Path::new("/s/codex.sock"))
        );
    }

    #[test]
    fn without_a_server_or_for_another_harness_nothing_changes() {
        assert_eq!(codex().app_server_argv(), None);
        let claude = Harness::resolve("claude", &SessionsConfig::default())
            .unwrap()
            .with_app_server(Path::new("/s"), Path::new("/w"));
        assert_eq!(claude.app_server_argv(), None);
        assert_eq!(claude.app_server_socket(), None);
    }
}
