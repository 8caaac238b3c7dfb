//! `the-loop fake-agent` (hidden): a small interactive program standing in for a
//! harness TUI in tests and the demo.
//!
//! It enables bracketed paste (`ESC[?2004h`) on a raw terminal and tracks its input the
//! way a harness does: bytes between `ESC[200~` and `ESC[201~` are pasted, other bytes
//! are typed, and a `\r` outside a paste submits. Each submission becomes one JSON line
//! in `--log` — `{"ts","text","bracketed","pastes"}` — so a test can tell one clean
//! paste from a paste that was cut short and partly typed. Its screen starts with
//! `fake-agent ready` once bracketed paste is on: wait for that before pasting.
//!
//! With `--ask-trigger TEXT` it also asks, as a real agent would (SPEC §12): a
//! submitted text containing TEXT makes it run `the-loop ask --question '…'` (its own
//! executable, with the session's environment) and show that it waits; the operator's
//! reply, when it arrives, ends the wait.
//!
//! With `--edit-on TEXT --edit-from DIR` it also "works": a submitted text containing
//! TEXT makes it copy the files under DIR into its working directory (the session's
//! worktree), as an agent's edit would. Each log line records the working directory.

use super::CliResult;
use serde::Serialize;
use std::fs::File;
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct FakeAgentArgs {
    /// Append one JSON line per submitted text to this file.
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Ask the operator (`the-loop ask`) whenever a submitted text contains this.
    #[arg(long, value_name = "TEXT")]
    pub ask_trigger: Option<String>,
    /// Edit the working directory (copy `--edit-from` into it) when a submitted text
    /// contains this.
    #[arg(long, value_name = "TEXT", requires = "edit_from")]
    pub edit_on: Option<String>,
    /// The files an edit writes, relative paths kept.
    #[arg(long, value_name = "DIR", requires = "edit_on")]
    pub edit_from: Option<PathBuf>,
    /// Comment on GitHub (`the-loop comment`) whenever a submitted text contains this:
    /// the text after it is the body; a leading `as REF ` first sets
    /// `THE_LOOP_WORK_ITEM` to REF, as an agent led to post elsewhere would.
    #[arg(long, value_name = "TEXT")]
    pub comment_trigger: Option<String>,
    /// A boot prompt, recorded like a submission with `"boot": true`.
    pub prompt: Option<String>,
}

/// One submitted text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Submission {
    pub text: String,
    /// Every byte of the text arrived inside bracketed pastes (none was typed).
    pub bracketed: bool,
    /// How many pastes the text was made of.
    pub pastes: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Submit(Submission),
    /// Ctrl-C or Ctrl-D typed.
    Exit,
}

const PASTE_START: &[u8] = b"\x1b[200~";
const PASTE_END: &[u8] = b"\x1b[201~";

/// The input box: a byte-level state machine fed whatever the terminal delivers, in
/// chunks of any size (a marker may be split across reads).
#[derive(Debug, Default)]
pub struct InputTracker {
    pending: Vec<u8>,
    input: Vec<u8>,
    in_paste: bool,
    pastes: u32,
    typed: bool,
}

impl InputTracker {
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Action> {
        self.pending.extend_from_slice(bytes);
        let mut actions = Vec::new();
        let mut at = 0;
        while at < self.pending.len() {
            let rest = &self.pending[at..];
            if self.in_paste {
                match find(rest, PASTE_END) {
                    Some(end) => {
                        self.input.extend_from_slice(&rest[..end]);
                        self.in_paste = false;
                        at += end + PASTE_END.len();
                    }
                    None => {
                        // Keep a possible partial terminator for the next read.
                        let keep = partial_suffix(rest, PASTE_END);
                        self.input.extend_from_slice(&rest[..rest.len() - keep]);
                        at += rest.len() - keep;
                        break;
                    }
                }
                continue;
            }
            match rest[0] {
                0x1b => match escape_len(rest) {
                    None => break, // incomplete: wait for more bytes
                    Some(_) if rest.starts_with(PASTE_START) => {
                        self.in_paste = true;
                        self.pastes += 1;
                        at += PASTE_START.len();
                    }
                    Some(len) => at += len, // arrow keys and the like: ignored
                },
                b'\r' => {
                    actions.push(Action::Submit(self.take()));
                    at += 1;
                }
                0x03 | 0x04 => {
                    actions.push(Action::Exit);
                    at += 1;
                }
                0x7f | 0x08 => {
                    let text = String::from_utf8_lossy(&self.input).into_owned();
                    let mut chars = text.chars();
                    chars.next_back();
                    self.input = chars.as_str().as_bytes().to_vec();
                    at += 1;
                }
                byte => {
                    self.input.push(byte);
                    self.typed = true;
                    at += 1;
                }
            }
        }
        self.pending.drain(..at);
        actions
    }

    fn take(&mut self) -> Submission {
        let submission = Submission {
            text: String::from_utf8_lossy(&self.input).into_owned(),
            bracketed: self.pastes > 0 && !self.typed,
            pastes: self.pastes,
        };
        self.input.clear();
        self.pastes = 0;
        self.typed = false;
        submission
    }

    /// The text typed or pasted so far, not yet submitted.
    pub fn current(&self) -> String {
        String::from_utf8_lossy(&self.input).into_owned()
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The length of the longest suffix of `bytes` that is a proper prefix of `marker`.
fn partial_suffix(bytes: &[u8], marker: &[u8]) -> usize {
    (1..marker.len())
        .rev()
        .find(|&n| bytes.len() >= n && bytes[bytes.len() - n..] == marker[..n])
        .unwrap_or(0)
}

/// The length of the escape sequence at the start of `bytes` (which starts with ESC),
/// or `None` when more bytes are needed: CSI (`ESC [ … final`), SS3 (`ESC O x`), or
/// ESC plus one byte.
fn escape_len(bytes: &[u8]) -> Option<usize> {
    match bytes.get(1)? {
        b'[' => bytes[2..]
            .iter()
            .position(|b| (0x40..=0x7e).contains(b))
            .map(|i| i + 3),
        b'O' => bytes.get(2).map(|_| 3),
        _ => Some(2),
    }
}

#[derive(Serialize)]
struct LogLine<'a> {
    ts: String,
    #[serde(flatten)]
    submission: &'a Submission,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    boot: bool,
    /// Where the agent runs (its session's worktree, or the shared path).
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
}

/// Raw mode and bracketed paste on; both restored when dropped (every exit path,
/// including a panic unwinding).
struct TerminalGuard {
    raw: bool,
}

impl TerminalGuard {
    fn enter() -> std::io::Result<Self> {
        // Only a terminal on stdin is put in raw mode (never the caller's /dev/tty).
        let raw = std::io::stdin().is_terminal();
        if raw {
            crossterm::terminal::enable_raw_mode()?;
        }
        let guard = Self { raw };
        let mut out = std::io::stdout();
        out.write_all(b"\x1b[?2004h")?;
        out.flush()?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let mut out = std::io::stdout();
        let _ = out.write_all(b"\x1b[?2004l\r\n");
        let _ = out.flush();
        if self.raw {
            let _ = crossterm::terminal::disable_raw_mode();
        }
    }
}

struct Agent {
    log: Option<(PathBuf, File)>,
    received: Vec<Submission>,
    count: usize,
    ask_trigger: Option<String>,
    comment_trigger: Option<String>,
    /// `--edit-on` and `--edit-from`.
    edit: Option<(String, PathBuf)>,
    /// What the agent is waiting for, or what became of its last question.
    status: Option<String>,
}

impl Agent {
    fn record(&mut self, submission: Submission, boot: bool) -> anyhow::Result<()> {
        if let Some((path, file)) = &mut self.log {
            let line = LogLine {
                ts: crate::time::now_ts(),
                submission: &submission,
                boot,
                cwd: std::env::current_dir()
                    .ok()
                    .map(|d| d.display().to_string()),
            };
            let mut bytes = serde_json::to_vec(&line)?;
            bytes.push(b'\n');
            // One write on an append-mode file: lines never interleave.
            file.write_all(&bytes)
                .map_err(|e| anyhow::anyhow!("cannot append to {}: {e}", path.display()))?;
        }
        self.count += 1;
        self.received.push(submission);
        if self.received.len() > RECENT {
            self.received.remove(0);
        }
        Ok(())
    }

    fn render(&self, current: &str) -> std::io::Result<()> {
        let mut screen = String::from("\x1b[H\x1b[2J");
        let log = self
            .log
            .as_ref()
            .map_or("no log".to_string(), |(p, _)| p.display().to_string());
        screen.push_str(&format!(
            "fake-agent ready · {} received · {log}\r\n",
            self.count
        ));
        for s in &self.received {
            let kind = if s.bracketed { "paste" } else { "typed" };
            let lines = s.text.lines().count();
            screen.push_str(&format!(
                "[{kind}] {} ({} chars, {lines} lines)\r\n",
                preview(&s.text),
                s.text.chars().count()
            ));
        }
        if let Some(status) = &self.status {
            screen.push_str(&format!("{}\r\n", preview(status)));
        }
        screen.push_str(&format!("> {}", preview(current)));
        let mut out = std::io::stdout();
        out.write_all(screen.as_bytes())?;
        out.flush()
    }
}

const RECENT: usize = 5;

/// How the operator's answers begin (`session::reply::framed`).
const REPLY_FRAMING: &str = "Reply from the operator via the-loop";

impl Agent {
    /// Asks when the text holds the trigger; an answer ends the wait. An answer never
    /// triggers another question, whatever it says.
    fn react(&mut self, text: &str) {
        if text.starts_with(REPLY_FRAMING) {
            self.status = Some("answered by the operator".into());
            return;
        }
        if let Some((trigger, from)) = &self.edit
            && text.contains(trigger.as_str())
        {
            self.status = Some(match edit(from) {
                Ok(n) => format!("edited {n} file(s) in its working directory"),
                Err(e) => format!("could not edit: {e}"),
            });
        }
        if let Some(trigger) = &self.comment_trigger
            && let Some((_, rest)) = text.split_once(trigger.as_str())
        {
            self.status = Some(match comment(rest.trim()) {
                Ok(url) => format!("commented: {url}"),
                Err(error) => format!("comment refused: {error}"),
            });
        }
        let Some(trigger) = &self.ask_trigger else {
            return;
        };
        if !text.contains(trigger.as_str()) {
            return;
        }
        let question = derive_question(text, trigger);
        self.status = Some(format!("asking the operator: {question}"));
        let _ = self.render("");
        self.status = Some(match ask_operator(&question) {
            Ok(()) => format!("waiting for the operator: {question}"),
            Err(error) => format!("waiting for the operator (ask failed: {error}): {question}"),
        });
    }
}

/// A question about the line that holds the trigger, as an agent might phrase it. When
/// the trigger is followed by a question (`…ask the operator: per repo or global?`),
/// that question is asked as written (the demo script relies on it).
pub fn derive_question(text: &str, trigger: &str) -> String {
    let line = text
        .lines()
        .find(|l| l.contains(trigger))
        .unwrap_or(trigger);
    if let Some(asked) = question_after(line, trigger) {
        return asked;
    }
    let about: String = line
        .chars()
        .filter(|c| !c.is_control() && !matches!(c, '"' | '\\' | '`'))
        .take(160)
        .collect();
    format!("How should I proceed with: {}?", about.trim())
}

/// The question right after the trigger on `line`, up to the end of its sentence or
/// of the JSON string holding it; `None` unless it ends with `?`.
fn question_after(line: &str, trigger: &str) -> Option<String> {
    let (_, rest) = line.split_once(trigger)?;
    let rest = rest.split(['"', '\\']).next().unwrap_or("");
    let rest = rest
        .trim_start_matches(|c: char| c == ':' || c == ',' || c.is_whitespace())
        .trim_end();
    if rest.chars().count() < 2 || !rest.ends_with('?') {
        return None;
    }
    let mut chars = rest
        .chars()
        .filter(|c| !c.is_control() && *c != '`')
        .take(160);
    let first = chars.next()?;
    Some(first.to_uppercase().chain(chars).collect())
}

/// Runs `the-loop ask --question QUESTION` from this process's own executable, with
/// its environment (`THE_LOOP_WORK_ITEM`, `THE_LOOP_HOME`, …). Its output is captured:
/// the screen is this program's.
fn ask_operator(question: &str) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let output = std::process::Command::new(exe)
        .args(["ask", "--question", question])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if output.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(format!(
            "{}: {}",
            output.status,
            stderr.lines().last().unwrap_or("").trim()
        ))
    }
}

/// Runs `the-loop comment --body BODY` from this process's own executable; `as REF
/// BODY` sets `THE_LOOP_WORK_ITEM` to REF for it. The URL it printed, or why not.
fn comment(request: &str) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut command = std::process::Command::new(exe);
    let body = match request.strip_prefix("as ").and_then(|r| r.split_once(' ')) {
        Some((item, body)) => {
            command.env(crate::paths::ENV_WORK_ITEM, item);
            body
        }
        None => request,
    };
    let output = command
        .args(["comment", "--body", body])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(stderr.lines().last().unwrap_or("").trim().to_string())
    }
}

/// Writes a copy of every file under `from` into the working directory, relative paths
/// kept; returns how many.
fn edit(from: &std::path::Path) -> std::io::Result<usize> {
    fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                walk(&path, out)?;
            } else {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(from, &mut files)?;
    let here = std::env::current_dir()?;
    for file in &files {
        let rel = file.strip_prefix(from).map_err(std::io::Error::other)?;
        let target = here.join(rel);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        // Written, not copied: an agent's editor creates a file under its umask, where
        // `fs::copy` would carry the source's mode over.
        std::fs::write(&target, std::fs::read(file)?)?;
    }
    Ok(files.len())
}

/// The first line, shortened, with control characters shown as `·`.
fn preview(text: &str) -> String {
    let first = text.lines().next().unwrap_or("");
    let mut shown: String = first
        .chars()
        .take(60)
        .map(|c| if c.is_control() { '·' } else { c })
        .collect();
    if first.chars().count() > 60 {
        shown.push('…');
    }
    shown
}

pub fn run(args: FakeAgentArgs) -> CliResult {
    let log = match &args.log {
        Some(path) => {
            let file = crate::fsutil::open_private(File::options().create(true).append(true), path)
                .map_err(|e| {
                    super::usage(anyhow::anyhow!(
                        "cannot open the log {}: {e}; pass a writable --log path",
                        path.display()
                    ))
                })?;
            Some((path.clone(), file))
        }
        None => None,
    };
    let mut agent = Agent {
        log,
        received: Vec::new(),
        count: 0,
        ask_trigger: args.ask_trigger.filter(|t| !t.is_empty()),
        comment_trigger: args.comment_trigger.filter(|t| !t.is_empty()),
        edit: args.edit_on.filter(|t| !t.is_empty()).zip(args.edit_from),
        status: None,
    };
    if let Some(prompt) = args.prompt {
        let boot = Submission {
            text: prompt,
            bracketed: false,
            pastes: 0,
        };
        agent.record(boot, true)?;
    }

    let _terminal = TerminalGuard::enter().map_err(super::failed)?;
    let mut tracker = InputTracker::default();
    let mut stdin = std::io::stdin().lock();
    let mut buf = vec![0u8; 64 * 1024];
    agent.render("").map_err(super::failed)?;
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(super::failed(e)),
        };
        for action in tracker.feed(&buf[..n]) {
            match action {
                Action::Exit => return Ok(()),
                Action::Submit(submission) => {
                    let text = submission.text.clone();
                    agent.record(submission, false)?;
                    agent.react(&text);
                }
            }
        }
        agent.render(&tracker.current()).map_err(super::failed)?;
    }
}

#[cfg(test)]
#[path = "fake_agent_tests.rs"]
mod tests;
