//! `the-loop hosts list|check NAME|install NAME` (issue 32): the other hosts of the
//! config, what each lacks for sessions to run there, and the-loop's own binary copied
//! to one (same OS and architecture only).

use super::{CliResult, Ctx, Threads, failed, start_runtime, usage};
use crate::config::{self, Config};
use crate::paths::StatePaths;
use crate::tmux::{Hosts, RemoteHost};
use anyhow::anyhow;
use std::time::Duration;

/// How long one check on the host may take.
const STEP: Duration = Duration::from_secs(20);

#[derive(Debug, clap::Subcommand)]
pub enum HostsCommand {
    /// Each configured host, connected: its state and round trip.
    List,
    /// What host NAME lacks for sessions: tmux, git, the harness, the-loop of this
    /// version, a POSIX shell. Exit 1 when anything is missing.
    Check { name: String },
    /// Copy this binary to NAME's `<stateDir>/bin/the-loop` (same OS and architecture).
    Install { name: String },
}

pub fn run(command: HostsCommand, ctx: &Ctx) -> CliResult {
    let loaded = config::load(ctx.config_flag.as_deref()).map_err(usage)?;
    let hosts = Hosts::from_config(&loaded.config, &StatePaths::from_env().ssh_dir());
    let runtime = start_runtime(Threads::One)?;
    let host = |name: &str| {
        hosts.get(name).cloned().ok_or_else(|| {
            let known: Vec<&str> = hosts.iter().map(|h| h.name()).collect();
            usage(anyhow!(
                "no host named `{name}` in the config (hosts: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ))
        })
    };
    match command {
        HostsCommand::List => {
            runtime.block_on(list(&hosts));
            Ok(())
        }
        HostsCommand::Check { name } => {
            let host = host(&name)?;
            runtime.block_on(check(
                &host,
                &loaded.config,
                &StatePaths::from_env().ssh_dir(),
            ))
        }
        HostsCommand::Install { name } => {
            let host = host(&name)?;
            runtime.block_on(install(&host))
        }
    }
}

async fn list(hosts: &Hosts) {
    if hosts.is_empty() {
        println!("no hosts: in the config");
    }
    for host in hosts.iter() {
        let _ = host.transport.ping().await;
        println!("{:<16} {}", host.name(), host.transport.state().describe());
    }
}

/// Runs `argv` on the host; its first line of output, or why not.
async fn ask(host: &RemoteHost, argv: &[&str]) -> Result<String, String> {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    match host.transport.run(&argv, None, STEP).await {
        Ok(out) if out.success => Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string()),
        Ok(out) => Err(if out.stderr.is_empty() {
            format!("exited {}", out.code.unwrap_or(-1))
        } else {
            out.stderr
        }),
        Err(error) => Err(error.to_string()),
    }
}

/// This machine as `uname -s -m` names it.
fn local_platform() -> String {
    let os = match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "Darwin",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "aarch64" if os == "Darwin" => "arm64",
        other => other,
    };
    format!("{os} {arch}")
}

/// Words a shell would act on, sent there and back: the far side runs argv unchanged.
const SHELL_PROBE: &[&str] = &["a b", "$HOME", "`id`", "it's", "*", "x\ny", ";|&"];

/// Whether a socket on the host can be forwarded here, as the supervisor forwards
/// `<stateDir>/operator.sock` to its own: tried with a probe socket, then taken down.
async fn forwarding(host: &RemoteHost, control_dir: &std::path::Path) -> Result<(), String> {
    crate::fsutil::create_private_dir_all(control_dir).map_err(|e| e.to_string())?;
    let local = control_dir.join(format!("{}.probe.sock", host.name()));
    let _ = std::fs::remove_file(&local);
    let listener = std::os::unix::net::UnixListener::bind(&local).map_err(|e| e.to_string())?;
    let tried = host
        .transport
        .try_forward(&host.in_state_dir("forward-probe.sock"), &local)
        .await;
    drop(listener);
    let _ = std::fs::remove_file(&local);
    tried
}

async fn check(host: &RemoteHost, config: &Config, control_dir: &std::path::Path) -> CliResult {
    let mut missing = 0;
    let mut line = |ok: bool, what: &str, said: String| {
        println!("{} {what:<12} {said}", if ok { "ok  " } else { "FAIL" });
        if !ok {
            missing += 1;
        }
    };
    match host.transport.connect().await {
        Ok(rtt) => line(
            true,
            "ssh",
            format!("connected, round trip {} ms", rtt.as_millis()),
        ),
        Err(error) => {
            line(false, "ssh", error.to_string());
            return Err(failed(anyhow!("host `{}` cannot be reached", host.name())));
        }
    }
    let mut probe = vec!["printf", "%s\\0"];
    probe.extend(SHELL_PROBE);
    let echoed = host
        .transport
        .run(
            &probe.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            None,
            STEP,
        )
        .await
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned());
    let want: String = SHELL_PROBE.iter().map(|w| format!("{w}\0")).collect();
    match echoed {
        Ok(got) if got == want => line(true, "shell", "runs argv unchanged".into()),
        Ok(got) => line(
            false,
            "shell",
            format!(
                "the login shell changed the argv ({got:?}): give the user a POSIX shell (sh, bash, dash, zsh)"
            ),
        ),
        Err(error) => line(false, "shell", error.to_string()),
    }
    let platform = ask(host, &["uname", "-s", "-m"]).await;
    let here = local_platform();
    match &platform {
        Ok(there) if *there == here => line(true, "platform", there.clone()),
        Ok(there) => line(
            false,
            "platform",
            format!("{there}, this machine is {here}: install the-loop there by hand"),
        ),
        Err(error) => line(false, "platform", error.clone()),
    }
    for (what, argv) in [
        ("tmux", vec![host.tmux_program.as_str(), "-V"]),
        ("git", vec!["git", "--version"]),
    ] {
        match ask(host, &argv).await {
            Ok(said) => line(true, what, said),
            Err(error) => line(false, what, format!("{error}: install {what} on the host")),
        }
    }
    let harness = crate::harness::Harness::resolve(&config.sessions.harness, &config.sessions)
        .map(|h| h.program().to_string());
    match harness {
        // As a pane there finds it: the-loop's bin directory first on the login's PATH.
        Ok(program) => match ask(
            host,
            &[
                "env",
                &format!("PATH={}", host.pane_path().unwrap_or_default()),
                "which",
                &program,
            ],
        )
        .await
        {
            Ok(path) if !path.is_empty() => line(true, "harness", path),
            _ => line(
                false,
                "harness",
                format!("`{program}` is not on the host's PATH: install it there"),
            ),
        },
        Err(error) => line(false, "harness", error.to_string()),
    }
    match host.installed().await {
        Ok((bin, said)) => line(true, "the-loop", format!("{bin}: {said}")),
        Err(why) => line(false, "the-loop", why),
    }
    match forwarding(host, control_dir).await {
        Ok(()) => line(
            true,
            "forwarding",
            format!("{} reaches the supervisor", host.operator_socket()),
        ),
        Err(why) => line(
            false,
            "forwarding",
            format!(
                "{why}: the host's agents cannot ask or comment; its sshd must allow AllowStreamLocalForwarding (and AllowTcpForwarding not `no`)"
            ),
        ),
    }
    if missing == 0 {
        println!("host `{}` is ready", host.name());
        Ok(())
    } else {
        Err(failed(anyhow!(
            "host `{}` lacks {missing} thing(s) above",
            host.name()
        )))
    }
}

async fn install(host: &RemoteHost) -> CliResult {
    host.transport.connect().await.map_err(failed)?;
    let here = local_platform();
    let there = ask(host, &["uname", "-s", "-m"])
        .await
        .map_err(|e| failed(anyhow!(e)))?;
    if there != here {
        return Err(failed(anyhow!(
            "host `{}` is {there} and this binary is for {here}: build the-loop for the host and copy it to {} by hand",
            host.name(),
            host.bin().unwrap_or_default()
        )));
    }
    let bin = host
        .bin()
        .ok_or_else(|| failed(anyhow!("host `{}` did not say its HOME", host.name())))?;
    let dir = bin.rsplit_once('/').map_or("", |(d, _)| d).to_string();
    let exe =
        std::env::current_exe().map_err(|e| failed(anyhow!("cannot find this binary: {e}")))?;
    let bytes =
        std::fs::read(&exe).map_err(|e| failed(anyhow!("cannot read {}: {e}", exe.display())))?;
    let partial = format!("{bin}.partial");
    let steps: [(Vec<String>, Option<&[u8]>); 4] = [
        (
            vec![
                "mkdir".into(),
                "-p".into(),
                "-m".into(),
                "700".into(),
                dir.clone(),
            ],
            None,
        ),
        (
            vec!["dd".into(), "status=none".into(), format!("of={partial}")],
            Some(&bytes),
        ),
        (vec!["chmod".into(), "700".into(), partial.clone()], None),
        (
            vec!["mv".into(), "-f".into(), partial.clone(), bin.clone()],
            None,
        ),
    ];
    for (argv, stdin) in steps {
        let out = host
            .transport
            .run(&argv, stdin, Duration::from_secs(300))
            .await
            .map_err(failed)?;
        if !out.success {
            return Err(failed(anyhow!(
                "`{}` failed on host `{}`: {}",
                argv.join(" "),
                host.name(),
                out.stderr
            )));
        }
    }
    let said = ask(host, &[&bin, "--version"])
        .await
        .map_err(|e| failed(anyhow!(e)))?;
    println!(
        "installed {bin} on host `{}` ({said}, {} bytes)",
        host.name(),
        bytes.len()
    );
    Ok(())
}
