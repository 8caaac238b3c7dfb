//! An agent on another host reaches the supervisor over the host's SSH connection: its
//! `the-loop ask` goes through the socket forwarded to `<stateDir>/operator.sock` there,
//! the supervisor posts with its own token, and the operator's reply is pasted back
//! into the remote pane. Only that host's sessions may ask, and only ask and comment
//! are served there.

use super::remote_sessions::started;
use crate::support::sshd::Sshd;
use crate::support::tmux_server::wait_for;
use std::sync::Arc;
use std::time::Duration;
use the_loop::events::EventLog;
use the_loop::github::Client;
use the_loop::github::sim::{IssueSpec, SimGithub};
use the_loop::operator::{OperatorApi, serve_host};
use the_loop::session::reply::{Replier, ReplyRequest, Via};
use the_loop::work_item::WorkItemRef;

const TOKEN: &str = "ghp_remotehoststoken_0123456789abcdef";

/// `the-loop ARGS` run by the host's user, as a process in a pane there would run it.
fn on_host(sshd: &Sshd, work_item: &str, args: &[&str]) -> std::process::Output {
    let home = sshd.home();
    let state = format!("THE_LOOP_HOME={}/.tl", home.display());
    let bin = format!("{}/.tl/bin/the-loop", home.display());
    let item = format!("THE_LOOP_WORK_ITEM={work_item}");
    let mut argv = vec!["env", &state, &item, "THE_LOOP_HOST=build", &bin];
    argv.extend(args);
    sshd.run_as_user(&argv)
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_on_the_host_asks_through_the_forwarded_socket_and_the_reply_reaches_its_pane() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start();
    let sim = SimGithub::start().await.unwrap();
    for n in [15, 16] {
        let spec = IssueSpec::new(&format!("Issue {n}"))
            .number(n)
            .author("carol")
            .labels(&["the-loop"]);
        sim.add_issue("octo/repo", spec).unwrap();
    }
    sim.require_token(Some(TOKEN));
    let world = started(&sshd, Some(&sim.base_url())).await;
    let (sessions, host, paths) = (&world.sessions, &world.host, &world.paths);
    let item = WorkItemRef::new("octo", "repo", 15);

    // Before anything serves the host's agents, a question there is refused, not lost
    // in the host's own state.
    let lonely = on_host(
        &sshd,
        "github:octo/repo#15",
        &["ask", "--question", "anyone?"],
    );
    assert_eq!(lonely.status.code(), Some(1), "{}", text(&lonely));
    assert!(
        text(&lonely).contains("the question was not sent"),
        "{}",
        text(&lonely)
    );

    let events = EventLog::open(paths);
    let client = Arc::new(
        Client::builder(&sim.base_url())
            .token(Some(TOKEN))
            .build()
            .unwrap(),
    );
    let api = Arc::new(OperatorApi::new(
        Arc::clone(sessions),
        Arc::clone(&client),
        events.clone(),
    ));
    let socket = serve_host(
        api,
        host,
        &paths.ssh_dir(),
        the_loop::server::limits(&world.loaded.config.server),
        events.clone(),
    )
    .unwrap();
    // The next command over the connection sets the forward up.
    host.transport
        .run(&["true".to_string()], None, Duration::from_secs(10))
        .await
        .unwrap();
    // The forwarded socket is there, owned by the host's user.
    let remote_socket = sshd.home().join(".tl/operator.sock");
    assert!(remote_socket.exists(), "no {}", remote_socket.display());

    // The session asks; the supervisor posts it with its token (the host has none).
    let asked = on_host(
        &sshd,
        "github:octo/repo#15",
        &["ask", "--question", "Which branch should I base this on?"],
    );
    assert!(asked.status.success(), "{}", text(&asked));
    let posted = sim.comments_on("octo/repo", 15);
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert!(
        posted[0]
            .body
            .contains("Which branch should I base this on?")
    );
    let awaiting = the_loop::events::lines::named(events.path(), "session.awaiting_input");
    assert_eq!(awaiting.len(), 1, "{awaiting:?}");

    // An agent there cannot speak for an item without a session on its host, …
    let other = on_host(&sshd, "github:octo/repo#16", &["ask", "--question", "me?"]);
    assert!(!other.status.success(), "{}", text(&other));
    assert!(
        text(&other).contains("no open session on host `build`"),
        "{}",
        text(&other)
    );
    let commented = on_host(
        &sshd,
        "github:octo/repo#16",
        &["comment", "--body", "done, says #16"],
    );
    assert!(!commented.status.success(), "{}", text(&commented));
    assert!(sim.comments_on("octo/repo", 16).is_empty());
    // … nor reply into a session as the operator: that route is not served there.
    let replied = on_host(
        &sshd,
        "github:octo/repo#15",
        &[
            "reply",
            "github:octo/repo#15",
            "--text",
            "approve everything",
        ],
    );
    assert!(!replied.status.success(), "{}", text(&replied));

    // The operator answers here; the answer reaches the pane on the host.
    let replier = Replier::new(Arc::clone(sessions));
    replier
        .reply(ReplyRequest {
            work_item: item.to_string(),
            text: "Base it on main.".into(),
            actor: None,
            comment: false,
            via: Via::Cli,
            over_budget: false,
        })
        .await
        .unwrap();
    let log = sshd.home().join("agent.jsonl");
    wait_for(
        "the reply in the agent's log",
        Duration::from_secs(30),
        || async {
            let text = std::fs::read_to_string(&log).ok()?;
            text.contains("Base it on main.").then_some(())
        },
    )
    .await;
    let log_text = std::fs::read_to_string(&log).unwrap();
    assert!(!log_text.contains("approve everything"), "{log_text}");
    assert_eq!(log_text.matches("Base it on main.").count(), 1);

    socket.shutdown().await;
    host.transport.disconnect().await;
    drop(sim);
    assert!(!paths.ssh_dir().join("build.agents.sock").exists());
}

/// A host whose sshd refuses forwarding: `hosts check` says the agents there cannot
/// reach the supervisor and what the host needs; the sessions still run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_check_names_a_host_whose_sshd_refuses_forwarding() {
    if !Sshd::available() {
        return;
    }
    let sshd = Sshd::start_with(&["AllowTcpForwarding no"]);
    let world = started(&sshd, None).await;
    let checked = super::remote_sessions::hosts_cli(
        &world.config_path(),
        &world.paths.root,
        &["check", super::remote_sessions::HOST],
    );
    let said = text(&checked);
    assert!(!checked.status.success(), "{said}");
    assert!(said.contains("FAIL forwarding"), "{said}");
    assert!(said.contains("AllowStreamLocalForwarding"), "{said}");
    // (On a host that allows it the check says ready: remote_sessions.)
    world.host.transport.disconnect().await;
}
