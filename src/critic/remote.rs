//! A critic on another host (issue 32): a repo with `host:` has its critics run there,
//! in the session's directory on that host, as one command over the host's SSH
//! connection. Locally the round is an `ssh` process like any critic process — its
//! timeout, caps and process group apply — and on the host the critic runs under
//! `timeout`, so a round cut short here does not leave it running there.

use super::placeholders::Values;
use super::round::{self, MAX_ARG_BYTES, Prepared, Request, RunError};
use super::run::{self, ProcessSpec};
use super::spec::{CriticSpec, Runner};
use crate::harness::OneShotOutput;
use crate::tmux::RemoteHost;
use std::path::PathBuf;
use std::time::Duration;

/// What the host's `timeout` adds before its SIGKILL; the local timeout allows for it.
const REMOTE_KILL_AFTER: Duration = Duration::from_secs(2);

/// [`round::prepare`] for a round on `host`: nothing is looked at on this machine (the
/// directory and the program are the host's). A critic that reads `{promptFile}` or
/// writes a last-message file needs files here, so it does not run there.
pub(super) fn prepare(
    spec: &CriticSpec,
    request: &Request,
    host: &RemoteHost,
    timeout: Duration,
) -> Result<Prepared, RunError> {
    let header = round::header(spec);
    let not_run = |error: String| Ok(Prepared::not_runnable(header.clone(), spec, timeout, error));
    let dir = request
        .cwd
        .as_ref()
        .map(|d| d.to_string_lossy().into_owned())
        .or_else(|| spec.cwd.clone());
    let Some(dir) = dir.and_then(|d| host.resolve(&d)) else {
        return Err(RunError::Cwd {
            path: PathBuf::from(format!("{}:", host.name())),
            reason: "a critic on another host needs its directory there (the session's, or the entry's `cwd`)".into(),
        });
    };
    let last_message = match &spec.runner {
        Runner::Harness(h) => h.oneshot_output() == OneShotOutput::LastMessageFile,
        Runner::Command(_) => false,
    };
    if last_message || crate::substitute::mentions(&spec.args, "{promptFile}") {
        return not_run(format!(
            "critic `{}` reads or writes files on this machine ({{promptFile}}, a last-message file), and its session runs on host `{}`: give it the prompt inline ({{prompt}}) to run it there",
            spec.name,
            host.name()
        ));
    }
    let (text, _) = round::prompt_parts(&request.prompt, true)?;
    let values = Values {
        prompt: text,
        prompt_file: None,
        model: spec.model.clone(),
        work_item: request.work_item.as_ref().map(ToString::to_string),
        spec_dir: None,
        cwd: Some(dir.clone()),
    };
    let argv = round::build_argv(spec, &values, std::path::Path::new("last-message.txt"));
    if argv.is_empty() {
        return not_run(format!("critic `{}` has no invocation", spec.name));
    }
    if let Some((index, arg)) = argv
        .iter()
        .enumerate()
        .find(|(_, a)| a.len() > MAX_ARG_BYTES)
    {
        return not_run(round::too_long(spec, index, arg.len()));
    }
    // On the host: in its directory, with the entry's environment, under its timeout.
    let mut remote = vec!["env".to_string(), "-C".into(), dir];
    remote.extend(spec.env.iter().map(|(k, v)| format!("{k}={v}")));
    remote.extend([
        "timeout".into(),
        "-k".into(),
        format!("{}s", REMOTE_KILL_AFTER.as_secs()),
        format!("{}s", timeout.as_secs().max(1)),
    ]);
    remote.extend(argv);
    let ssh = match host.transport.ssh_argv(&remote) {
        Ok(ssh) => ssh,
        Err(e) => return not_run(e.to_string()),
    };
    let plan = ProcessSpec {
        program: PathBuf::from(&ssh[0]),
        argv: ssh,
        env: Default::default(),
        child_env: request.child_env.clone(),
        cwd: std::env::temp_dir(),
        timeout: timeout + REMOTE_KILL_AFTER * 2,
        kill_grace: run::KILL_GRACE,
    };
    Ok(Prepared {
        header,
        format: spec.output_format,
        timeout,
        plan: Ok(plan),
        last_message: None,
        _scratch: None,
        remote: true,
    })
}
