//! The demo's operator config: one watched repository with one authorized login, a
//! fast poll, the demo agent as the harness, no server, and the demo critic.

use super::env::{AGENT, CRITIC};
use super::scenario;
use std::path::Path;

/// The inputs of the demo config.
#[derive(Debug, Clone, Copy)]
pub struct ConfigInputs<'a> {
    pub api_url: &'a str,
    pub workdir: &'a Path,
    pub exe: &'a Path,
    pub agent_log: &'a Path,
    /// The files the demo agent writes into its worktree.
    pub fix: &'a Path,
    pub socket: &'a str,
}

/// A YAML string (JSON strings are YAML double-quoted scalars).
fn quoted(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

fn quoted_path(path: &Path) -> String {
    quoted(&path.to_string_lossy())
}

/// The demo's operator config: one watched repo with one authorized login, a fast poll,
/// the demo agent as the harness, no server, and the demo critic.
pub fn render_config(c: &ConfigInputs<'_>) -> String {
    let exe = quoted_path(c.exe);
    format!(
        r#"# The config of one `the-loop demo` run; it is deleted when the demo ends.
# Real use starts from `the-loop config init` (see README.md).
github:
  apiUrl: {api}              # the simulated GitHub, in the demo process
repos:
  - name: {repo}
    path: {workdir}             # a git checkout: the agent works in its own worktree of it
    label: {label}
routing:
  authorizedUsers: [{operator}]     # {stranger} is not here: their comments are refused
polling:
  intervalSeconds: 5
sessions:
  harness: {agent}
  harnesses:
    {agent}:                   # takes pastes, shows them, asks when told to
      command: {exe}
      args: [fake-agent, --log, {log}, --ask-trigger, {trigger}, --edit-on, {edit}, --edit-from, {fix}, "--", "{{prompt}}"]
  tmux:
    socket: {socket}
server:
  enabled: false
critics:
  - name: {critic}
    command: {exe}
    args: [{critic}, "{{promptFile}}"]
    outputFormat: json
    timeoutSeconds: 60
"#,
        api = quoted(c.api_url),
        repo = scenario::REPO,
        workdir = quoted_path(c.workdir),
        label = scenario::LABEL,
        operator = scenario::OPERATOR,
        stranger = scenario::STRANGER,
        log = quoted_path(c.agent_log),
        trigger = quoted(scenario::ASK_TRIGGER),
        edit = quoted(scenario::EDIT_TRIGGER),
        fix = quoted_path(c.fix),
        socket = quoted(c.socket),
        critic = CRITIC,
        agent = AGENT,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config;

    fn inputs<'a>(dir: &'a Path, exe: &'a Path, log: &'a Path) -> ConfigInputs<'a> {
        ConfigInputs {
            api_url: "http://127.0.0.1:4321",
            workdir: dir,
            exe,
            agent_log: log,
            fix: Path::new("/tmp/x/fix"),
            socket: "the-loop-demo-1-abc",
        }
    }

    #[test]
    fn the_demo_config_is_valid_and_says_what_the_demo_needs() {
        let dir = Path::new("/tmp/demo work \"quoted\"/w");
        let exe = Path::new("/tmp/x/bin/the-loop");
        let log = Path::new("/tmp/x/fake-agent.jsonl");
        let text = render_config(&inputs(dir, exe, log));
        let parsed = config::parse_str(&text, Path::new("demo.yaml")).unwrap();
        assert_eq!(parsed.github.api_url, "http://127.0.0.1:4321");
        assert_eq!(parsed.repos.len(), 1);
        assert_eq!(parsed.repos[0].name, scenario::REPO);
        assert_eq!(parsed.repos[0].label, scenario::LABEL);
        assert_eq!(parsed.repos[0].working_dir().as_deref(), Some(dir));
        assert_eq!(parsed.routing.authorized_users, [scenario::OPERATOR]);
        assert_eq!(parsed.polling.interval_seconds, 5);
        assert!(!parsed.server.enabled);
        assert_eq!(parsed.sessions.tmux.socket, "the-loop-demo-1-abc");
        assert_eq!(parsed.sessions.harness, AGENT);
        let fake = &parsed.sessions.harnesses[AGENT];
        assert_eq!(fake.command, "/tmp/x/bin/the-loop");
        assert_eq!(
            fake.args,
            [
                "fake-agent",
                "--log",
                "/tmp/x/fake-agent.jsonl",
                "--ask-trigger",
                scenario::ASK_TRIGGER,
                "--edit-on",
                scenario::EDIT_TRIGGER,
                "--edit-from",
                "/tmp/x/fix",
                "--",
                "{prompt}"
            ]
        );
        let critics = crate::critic::entries(&parsed);
        assert_eq!(critics.len(), 1);
        let spec = critics[0].spec.as_ref().unwrap();
        assert_eq!(critics[0].name.as_deref(), Some(CRITIC));
        assert_eq!(spec.program(), "/tmp/x/bin/the-loop");
    }
}
