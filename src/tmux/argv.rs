//! The exact argv of every tmux call, built with `tmux_interface`, and the parsers of
//! what tmux prints. Pure functions: tested without running tmux.
//!
//! Two tmux quirks are handled here, once (see `docs/decisions/0002-tmux-commands.md`):
//! - tmux splits its own argv into commands at any argument that *ends* with `;`, so such
//!   an argument (a prompt ending in `;`) is escaped as `\;`, which tmux turns back.
//! - a one-element command is run by tmux through `sh -c`; it is run via `env --` instead.

use super::{BufferName, Error, Liveness, PaneId, SessionInfo, Socket, SpawnSpec};
use std::borrow::Cow;
use tmux_interface::{
    CapturePane, DeleteBuffer, DisplayMessage, IfShell, KillSession, ListPanes, LoadBuffer,
    NewSession, PasteBuffer, SetOption, TmuxCommand,
};

/// Printed by the dead-pane branch of [`paste_text`].
pub const PANE_DEAD_MARKER: &str = "the-loop:pane-dead";

/// The global options selecting the server: nothing, `-L name` or `-S path`.
pub fn socket_args(socket: &Socket) -> Vec<String> {
    let tmux = match socket {
        Socket::Default => tmux_interface::Tmux::new(),
        Socket::Name(name) => tmux_interface::Tmux::new().socket_name(name.as_str()),
        Socket::Path(path) => tmux_interface::Tmux::new().socket_path(path.to_string_lossy()),
    };
    // `build()` starts with the program name; the runner supplies the program itself.
    words(&tmux.build()).into_iter().skip(1).collect()
}

/// `new-session -d -P -F '#{pane_id}' -c CWD -e K=V… -s NAME -- ARGV…`, followed in the
/// same invocation by `set-option -t =NAME: remain-on-exit on` when asked, so the option
/// is set before tmux can notice a harness that exits at once.
pub fn new_session(socket: &Socket, spec: &SpawnSpec) -> Result<Vec<String>, Error> {
    let mut session = NewSession::new()
        .detached()
        .print()
        .format("#{pane_id}")
        .start_directory(spec.cwd.to_string_lossy())
        .session_name(spec.name.as_str());
    check_env_names(&spec.env)?;
    for (key, value) in &spec.env {
        session = session.environment(key.as_str(), value.as_str());
    }
    let commands = running(session.build(), spec, session_target(&spec.name))?;
    Ok(invocation(socket, &commands))
}

/// `command -- ARGV`, then `set-option -t TARGET remain-on-exit on` when asked for.
fn running<'a>(
    mut command: TmuxCommand<'a>,
    spec: &'a SpawnSpec,
    target: String,
) -> Result<Vec<TmuxCommand<'a>>, Error> {
    command.push_param("--");
    for word in program_argv(&spec.argv)? {
        command.push_param(word);
    }
    let mut commands = vec![command];
    if spec.remain_on_exit {
        commands.push(
            SetOption::new()
                .target_pane(target)
                .option("remain-on-exit")
                .value("on")
                .build(),
        );
    }
    Ok(commands)
}

/// `new-window -b -P -F #{pane_id} -t =NAME:0 -n WINDOW -c CWD -e K=V… -- ARGV ; set-option
/// -t =NAME:0 remain-on-exit on`: a window inserted before the session's first, so it
/// becomes window 0 — the one `list-panes -a` names first for the session and the one
/// shown — while the window that was there (a process the session's pane talks to, like
/// codex's app server) keeps running behind it.
pub fn new_front_window(
    socket: &Socket,
    window: &str,
    spec: &SpawnSpec,
) -> Result<Vec<String>, Error> {
    let target = format!("={}:0", spec.name);
    let mut command = TmuxCommand::new();
    command.name("new-window");
    command.push_flag("-b").push_flag("-P");
    command.push_option("-F", "#{pane_id}");
    command.push_option("-t", target.clone());
    command.push_option("-n", window.to_string());
    command.push_option("-c", spec.cwd.to_string_lossy().into_owned());
    check_env_names(&spec.env)?;
    for (key, value) in &spec.env {
        command.push_option("-e", format!("{key}={value}"));
    }
    let commands = running(command, spec, target)?;
    Ok(invocation(socket, &commands))
}

/// A name tmux's `-e K=V` cannot carry is refused before anything starts.
fn check_env_names(env: &[(String, String)]) -> Result<(), Error> {
    match env
        .iter()
        .find(|(key, _)| key.is_empty() || key.contains('='))
    {
        Some((key, _)) => Err(Error::InvalidSpawn(format!(
            "environment variable name {key:?} is empty or contains '='"
        ))),
        None => Ok(()),
    }
}

/// The argv tmux will exec directly: with one element tmux would use `sh -c`, so that
/// case goes through `env --`.
fn program_argv(argv: &[String]) -> Result<Vec<&str>, Error> {
    match argv {
        [] => Err(Error::InvalidSpawn("the command (argv) is empty".into())),
        [program] if program.is_empty() || program.contains('=') => Err(Error::InvalidSpawn(
            format!("the program name {program:?} is empty or contains '='"),
        )),
        [program] => Ok(vec!["env", "--", program.as_str()]),
        _ => Ok(argv.iter().map(String::as_str).collect()),
    }
}

/// `list-panes -s -t =NAME: -F '#{pane_dead}'`: one line per pane of exactly that
/// session (`=` disables prefix matching; the `:` makes it a session, not a window).
pub fn liveness(socket: &Socket, name: &str) -> Vec<String> {
    let command = ListPanes::new()
        .session()
        .target(session_target(name))
        .format("#{pane_dead}")
        .build();
    invocation(socket, &[command])
}

/// `kill-session -t =NAME`.
pub fn kill_session(socket: &Socket, name: &str) -> Vec<String> {
    let command = KillSession::new()
        .target_session(format!("={name}"))
        .build();
    invocation(socket, &[command])
}

/// `load-buffer -b NAME - ; if-shell -F -t PANE '#{pane_dead}' 'display-message -p
/// MARKER' 'paste-buffer -d [-p] -r -b NAME -t PANE'`, in one invocation.
///
/// The text comes on stdin (prompts can be 100 KB; argv would also show them in `ps`).
/// tmux 3.3a's server crashes when a buffer is pasted into a dead pane, taking every
/// session with it; checking `#{pane_dead}` in the same server command as the paste
/// leaves the pane no moment to die in between. The inner commands are tmux command
/// strings, so they hold only validated buffer names and pane ids. tmux skips the rest
/// of the line when `load-buffer` fails.
pub fn paste_text(
    socket: &Socket,
    buffer: &BufferName,
    pane: &PaneId,
    paste: super::Paste,
) -> Vec<String> {
    invocation(
        socket,
        &[load_command(buffer), guarded_paste(buffer, pane, paste)],
    )
}

/// `load-buffer -b NAME -` alone: a host's paste loads first and pastes after, so a
/// connection lost while pasting leaves the buffer as the witness of what happened.
pub fn load_buffer(socket: &Socket, buffer: &BufferName) -> Vec<String> {
    invocation(socket, &[load_command(buffer)])
}

/// The guarded `paste-buffer -d` of [`paste_text`] alone, for a loaded buffer. Pasting
/// deletes the buffer, so running it twice pastes once: the second finds no buffer.
pub fn paste_loaded(
    socket: &Socket,
    buffer: &BufferName,
    pane: &PaneId,
    paste: super::Paste,
) -> Vec<String> {
    invocation(socket, &[guarded_paste(buffer, pane, paste)])
}

/// `list-buffers -F '#{buffer_name}'`.
pub fn list_buffers(socket: &Socket) -> Vec<String> {
    let mut argv = socket_args(socket);
    argv.extend(["list-buffers".into(), "-F".into(), "#{buffer_name}".into()]);
    argv
}

fn load_command(buffer: &BufferName) -> TmuxCommand<'static> {
    LoadBuffer::new()
        .buffer_name(buffer.as_str().to_string())
        .path("-")
        .build()
}

fn guarded_paste(buffer: &BufferName, pane: &PaneId, paste: super::Paste) -> TmuxCommand<'static> {
    let mut inner = PasteBuffer::new()
        .delete()
        .no_replacement()
        .buffer_name(buffer.as_str().to_string())
        .target_pane(pane.as_str().to_string());
    if paste == super::Paste::Bracketed {
        inner = inner.bracket_codes();
    }
    let mut guarded = IfShell::new()
        .not_execute()
        .target_pane(pane.as_str().to_string())
        .shell_command("#{pane_dead}")
        .command(format!("display-message -p {PANE_DEAD_MARKER}"))
        .build();
    guarded.push_param(words(&inner.build()).join(" "));
    guarded
}

/// `delete-buffer -b NAME`.
pub fn delete_buffer(socket: &Socket, buffer: &BufferName) -> Vec<String> {
    let command = DeleteBuffer::new().buffer_name(buffer.as_str()).build();
    invocation(socket, &[command])
}

/// `capture-pane -p [-e] -t PANE`.
pub fn capture_pane(socket: &Socket, pane: &PaneId, with_escapes: bool) -> Vec<String> {
    let mut capture = CapturePane::new().stdout();
    if with_escapes {
        capture = capture.escape_sequences();
    }
    let command = capture.target_pane(pane.as_str()).build();
    invocation(socket, &[command])
}

/// `display-message -p -t PANE FORMAT`.
pub fn display(socket: &Socket, pane: &PaneId, format: &str) -> Vec<String> {
    let command = DisplayMessage::new()
        .print()
        .target_pane(pane.as_str())
        .message(format)
        .build();
    invocation(socket, &[command])
}

/// `list-panes -a -F '#{pane_id} #{pane_dead} #{window_activity} #{session_name}'`
/// (the name last: it may contain spaces).
pub fn list_sessions(socket: &Socket) -> Vec<String> {
    let command = ListPanes::new()
        .all()
        .format("#{pane_id} #{pane_dead} #{window_activity} #{session_name}")
        .build();
    invocation(socket, &[command])
}

fn session_target(name: &str) -> String {
    format!("={name}:")
}

/// The command's words. `tmux_interface`'s default `cmd_alias` feature names commands
/// by their tmux aliases (`new`, `lsp`, `loadb`, `pasteb`), which every tmux accepts.
fn words(command: &TmuxCommand<'_>) -> Vec<String> {
    command.to_vec().into_iter().map(Cow::into_owned).collect()
}

/// Socket options, then the commands separated by `;`, every word escaped.
fn invocation(socket: &Socket, commands: &[TmuxCommand<'_>]) -> Vec<String> {
    let mut argv = socket_args(socket);
    for (i, command) in commands.iter().enumerate() {
        if i > 0 {
            argv.push(";".into());
        }
        argv.extend(words(command).iter().map(|w| escape_separator(w)));
    }
    argv
}

/// tmux ends a command at an argument ending in `;` and turns a final `\;` into `;`, so
/// inserting one backslash before a final `;` makes tmux see the original text.
pub fn escape_separator(word: &str) -> String {
    match word.strip_suffix(';') {
        Some(head) => format!("{head}\\;"),
        None => word.to_string(),
    }
}

/// The first line of `new-session -P` output: the pane id.
pub fn parse_pane_id(stdout: &str) -> Result<PaneId, String> {
    let line = stdout.lines().next().unwrap_or("").trim();
    PaneId::parse(line).map_err(|_| format!("expected a pane id, got {stdout:?}"))
}

/// One `#{pane_dead}` per line: any `0` is live, all `1` is dead.
pub fn parse_liveness(stdout: &str) -> Result<Liveness, String> {
    let mut any = false;
    let mut live = false;
    for line in stdout.lines().map(str::trim).filter(|l| !l.is_empty()) {
        any = true;
        match line {
            "0" => live = true,
            "1" => {}
            other => return Err(format!("expected 0 or 1 per pane, got {other:?}")),
        }
    }
    match (any, live) {
        (false, _) => Err("no panes listed".into()),
        (true, true) => Ok(Liveness::Live),
        (true, false) => Ok(Liveness::Dead),
    }
}

/// Lines of `%ID DEAD ACTIVITY NAME`, grouped by session in first-seen order.
pub fn parse_sessions(stdout: &str) -> Result<Vec<SessionInfo>, String> {
    let mut sessions: Vec<SessionInfo> = Vec::new();
    for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
        let mut parts = line.splitn(4, ' ');
        let (Some(pane), Some(dead), Some(activity), Some(name)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(format!("expected `%ID DEAD ACTIVITY NAME`, got {line:?}"));
        };
        let pane = PaneId::parse(pane).map_err(|e| e.to_string())?;
        let live = match dead {
            "0" => true,
            "1" => false,
            other => return Err(format!("expected 0 or 1, got {other:?}")),
        };
        let activity: u64 = activity
            .parse()
            .map_err(|_| format!("expected a Unix time, got {activity:?}"))?;
        match sessions.iter_mut().find(|s| s.name == name) {
            Some(session) => {
                if live {
                    session.liveness = Liveness::Live;
                }
                session.activity = session.activity.max(activity);
            }
            None => sessions.push(SessionInfo {
                name: name.to_string(),
                pane,
                liveness: if live { Liveness::Live } else { Liveness::Dead },
                activity,
            }),
        }
    }
    Ok(sessions)
}

/// Whether tmux's complaint means "no such session/pane" (including "no server").
pub fn is_missing(stderr: &str) -> bool {
    const MISSING: &[&str] = &[
        "can't find session",
        "can't find pane",
        "can't find window",
        "session not found",
        "no server running",
        // What a server with no session left says while it exits (tmux 3.3a): every
        // query here names its target, so there was nothing to find.
        "no current target",
    ];
    MISSING.iter().any(|m| stderr.contains(m))
        // A socket file with nobody listening: the server is gone (tmux's own client
        // treats this as "no server" too).
        || (stderr.contains("error connecting to")
            && (stderr.contains("No such file or directory")
                || stderr.contains("Connection refused")))
}

/// A command line for messages: long words (prompts) are shortened.
/// The value of an `-e NAME=VALUE` is shown as `NAME=…`: it may be a variable the
/// operator passes on purpose (`sessions.passEnv`), and messages end up in logs.
pub fn display_command(program: &str, args: &[String]) -> String {
    let mut shown = vec![program.to_string()];
    let mut after_env_flag = false;
    for arg in args {
        let elided;
        let arg = match arg.split_once('=') {
            Some((name, _)) if after_env_flag => {
                elided = format!("{name}=…");
                &elided
            }
            _ => arg,
        };
        after_env_flag = arg == "-e";
        let short: String = arg.chars().take(40).collect();
        let short = if short.len() < arg.len() {
            format!("{short}…")
        } else {
            short
        };
        if short.is_empty() || short.contains([' ', '\n', '\t', '#', '\'']) {
            shown.push(format!("{short:?}"));
        } else {
            shown.push(short);
        }
    }
    shown.join(" ")
}

/// The tmux command that attaches the operator's terminal to a session (`sessions attach`,
/// the screen's attach key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachCommand {
    /// Arguments after `tmux`.
    pub args: Vec<String>,
    /// Run with `TMUX` unset (attaching from inside another tmux server, nested).
    pub unset_tmux: bool,
}

/// `attach-session -t =NAME [-r]`, or `switch-client -t =NAME` when already inside a
/// client of the same server. Read-only from inside tmux attaches nested instead:
/// `switch-client -r` would toggle the operator's own client into read-only mode and
/// leave it there.
pub fn attach(
    socket: &Socket,
    name: &str,
    read_only: bool,
    tmux_env: Option<&str>,
) -> AttachCommand {
    let inside = tmux_env.filter(|v| !v.is_empty());
    let same_server = inside.is_some_and(|v| same_socket(socket, v));
    let target = format!("={name}");
    let mut args = socket_args(socket);
    if same_server && !read_only {
        args.extend(["switch-client".into(), "-t".into(), target]);
        return AttachCommand {
            args,
            unset_tmux: false,
        };
    }
    args.extend(["attach-session".into(), "-t".into(), target]);
    if read_only {
        args.push("-r".into());
    }
    AttachCommand {
        args,
        unset_tmux: inside.is_some(),
    }
}

/// Whether `$TMUX` (`<socket path>,<pid>,<session>`) names the server `socket` reaches.
fn same_socket(socket: &Socket, tmux_env: &str) -> bool {
    let path = std::path::Path::new(tmux_env.split(',').next().unwrap_or(""));
    match socket {
        Socket::Default => path.file_name().is_some_and(|n| n == "default"),
        Socket::Name(name) => path.file_name().is_some_and(|n| n == name.as_str()),
        Socket::Path(p) => path == p,
    }
}

#[cfg(test)]
#[path = "argv_tests.rs"]
mod tests;
