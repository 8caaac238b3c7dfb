//! opencode's TUI attached to a server the-loop starts for the session (issue 44,
//! `sessions.harness: opencode`): the server (`opencode serve --port P --hostname
//! 127.0.0.1`) runs the agent, and the TUI in the pane shows the session's own opencode
//! session (`opencode attach URL --dir CWD --session ID`). The password both need is
//! never in argv (`session::opencode` hands it over through the environment).

use super::{Harness, Kind};
use std::path::{Path, PathBuf};

/// Where the server listens (loopback only) and the directory the TUI shows.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct OpencodeServer {
    port: u16,
    /// `http://127.0.0.1:PORT`, as the channel spells it.
    url: String,
    cwd: PathBuf,
}

impl Harness {
    /// This harness with its TUI attached to a server on `127.0.0.1:port` (at `url`),
    /// in `cwd`. Only the built-in opencode takes one; the others ignore it.
    pub fn with_opencode_server(mut self, port: u16, url: &str, cwd: &Path) -> Self {
        if let Kind::Opencode { server, .. } = &mut self.kind {
            *server = Some(OpencodeServer {
                port,
                url: url.to_string(),
                cwd: cwd.to_path_buf(),
            });
        }
        self
    }

    /// The program and the server of the built-in opencode attached to one.
    fn opencode_attached(&self) -> Option<(&str, &OpencodeServer)> {
        match &self.kind {
            Kind::Opencode {
                program,
                server: Some(server),
            } => Some((program, server)),
            _ => None,
        }
    }

    /// The built-in opencode adapter (its binary possibly moved by config).
    pub fn is_opencode(&self) -> bool {
        matches!(self.kind, Kind::Opencode { .. })
    }

    /// The port of the server this harness's TUI attaches to.
    pub fn opencode_port(&self) -> Option<u16> {
        self.opencode_attached().map(|(_, s)| s.port)
    }

    /// The server's argv: `opencode serve --port P --hostname 127.0.0.1`.
    pub fn opencode_server_argv(&self) -> Option<Vec<String>> {
        let (program, server) = self.opencode_attached()?;
        Some(vec![
            program.into(),
            "serve".into(),
            "--port".into(),
            server.port.to_string(),
            "--hostname".into(),
            "127.0.0.1".into(),
        ])
    }

    /// The TUI's argv, showing opencode session `session`: `opencode attach
    /// http://127.0.0.1:P --dir CWD --session ID`.
    pub fn opencode_tui_argv(&self, session: &str) -> Option<Vec<String>> {
        let (program, server) = self.opencode_attached()?;
        Some(vec![
            program.into(),
            "attach".into(),
            server.url.clone(),
            "--dir".into(),
            server.cwd.to_string_lossy().into_owned(),
            "--session".into(),
            session.into(),
        ])
    }

    /// A fresh session's argv: attached to its server, its prompt sent through the
    /// server once the session is made (`session::opencode`); else opencode's TUI alone
    /// with its prompt.
    pub(super) fn opencode_fresh_argv(&self, program: &str, prompt: String) -> Vec<String> {
        match self.opencode_attached().map(|(_, s)| s) {
            Some(server) => vec![
                program.into(),
                "attach".into(),
                server.url.clone(),
                "--dir".into(),
                server.cwd.to_string_lossy().into_owned(),
            ],
            None => vec![program.into(), "--prompt".into(), prompt],
        }
    }

    /// Resuming opencode session `session`: attached to its server (the prompt goes
    /// through the server), else the TUI alone on that session.
    pub(super) fn opencode_resume_argv(
        &self,
        program: &str,
        prompt: String,
        session: &str,
    ) -> Vec<String> {
        match self.opencode_tui_argv(session) {
            Some(argv) => argv,
            None => vec![
                program.into(),
                "--session".into(),
                session.into(),
                "--prompt".into(),
                prompt,
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::SessionsConfig;
    use crate::harness::{Harness, HookSupport, ScreenKind};
    use std::path::Path;

    #[test]
    fn the_server_listens_on_loopback_and_the_tui_attaches_to_the_sessions_own() {
        let harness = Harness::resolve("opencode", &SessionsConfig::default())
            .unwrap()
            .with_opencode_server(41234, "http://127.0.0.1:41234", Path::new("/w/p"));
        assert!(harness.is_opencode());
        assert_eq!(harness.opencode_port(), Some(41234));
        assert_eq!(
            harness.opencode_server_argv().unwrap(),
            [
                "opencode",
                "serve",
                "--port",
                "41234",
                "--hostname",
                "127.0.0.1"
            ]
        );
        assert_eq!(
            harness.opencode_tui_argv("ses_1").unwrap(),
            [
                "opencode",
                "attach",
                "http://127.0.0.1:41234",
                "--dir",
                "/w/p",
                "--session",
                "ses_1"
            ]
        );
        // The prompt never goes into argv: it goes through the server.
        let fresh = harness.fresh_argv("boot prompt", None);
        assert!(!fresh.iter().any(|a| a.contains("boot")), "{fresh:?}");
        assert_eq!(harness.hook_support(), HookSupport::None);
        assert_eq!(harness.screen(), ScreenKind::Unknown);
        assert_eq!(harness.oneshot_argv("x", None, Path::new("/tmp/o")), None);
    }

    #[test]
    fn without_a_server_or_for_another_harness_nothing_is_attached() {
        let alone = Harness::resolve("opencode", &SessionsConfig::default()).unwrap();
        assert_eq!(alone.opencode_server_argv(), None);
        assert_eq!(alone.fresh_argv("go", None), ["opencode", "--prompt", "go"]);
        let claude = Harness::resolve("claude", &SessionsConfig::default())
            .unwrap()
            .with_opencode_server(1, "http://127.0.0.1:1", Path::new("/w"));
        assert_eq!(claude.opencode_port(), None);
        assert!(!claude.is_opencode());
    }
}
