//! An in-memory tmux for unit tests: sessions with one pane each, named buffers, the
//! bytes each pane received (brackets included, as a terminal would see them), every
//! call recorded, and failures injected per operation.

use super::{BufferName, Error, Liveness, PaneId, Paste, SessionInfo, SpawnSpec, Tmux};
use futures::future::BoxFuture;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// One recorded call, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    CreateSession(String),
    Probe(String),
    KillSession(String),
    PasteText {
        buffer: String,
        data: Vec<u8>,
        pane: String,
        paste: Paste,
    },
    DeleteBuffer(String),
    CapturePane {
        pane: String,
        with_escapes: bool,
    },
    Display(String),
    ListSessions,
}

/// Operations a failure can be injected into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    Create,
    Probe,
    Kill,
    /// Every paste.
    Paste,
    /// Only unbracketed pastes (the submitting `\r`).
    PlainPaste,
    Delete,
    Capture,
    Display,
    List,
}

/// What an injected failure looks like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// As if tmux did not answer in time.
    Timeout,
    /// As if tmux exited non-zero with this message.
    Failed(String),
    /// As if tmux were not installed.
    NotInstalled,
}

/// A fake session's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeSession {
    pub pane: PaneId,
    pub dead: bool,
    pub spec: Option<SpawnSpec>,
    /// Everything pasted into the pane, as the program in it would read it.
    pub input: Vec<u8>,
    /// When each submitting Enter (a plain `\r` paste) reached the pane.
    pub enters: Vec<std::time::Instant>,
}

/// What a pane shows, drawn from everything pasted into it so far.
pub type Screen = Arc<dyn Fn(&[u8]) -> String + Send + Sync>;

#[derive(Default)]
struct State {
    sessions: BTreeMap<String, FakeSession>,
    /// Panes that draw a screen of their own (else a capture shows their input).
    screens: BTreeMap<String, Screen>,
    buffers: BTreeMap<String, Vec<u8>>,
    next_pane: u32,
    calls: Vec<Call>,
    failures: BTreeMap<Op, Failure>,
    kill_is_ignored: bool,
    activity: u64,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("sessions", &self.sessions)
            .field("calls", &self.calls.len())
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
pub struct FakeTmux {
    state: Mutex<State>,
}

impl FakeTmux {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A test that panicked while holding the lock has already failed.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds a session as if something else had started it.
    pub fn add_session(&self, name: &str, dead: bool) -> PaneId {
        let mut state = self.lock();
        let pane = state.new_pane();
        state.sessions.insert(
            name.to_string(),
            FakeSession {
                pane: pane.clone(),
                dead,
                spec: None,
                input: Vec::new(),
                enters: Vec::new(),
            },
        );
        pane
    }

    /// Marks a session's pane as exited (or running again).
    pub fn set_dead(&self, name: &str, dead: bool) {
        if let Some(session) = self.lock().sessions.get_mut(name) {
            session.dead = dead;
        }
    }

    pub fn session(&self, name: &str) -> Option<FakeSession> {
        self.lock().sessions.get(name).cloned()
    }

    /// Makes `pane` draw `screen` from its input, as a harness TUI would (a capture
    /// shows what it returns).
    pub fn set_screen(&self, pane: &PaneId, screen: Screen) {
        self.lock().screens.insert(pane.to_string(), screen);
    }

    /// The bytes a pane received so far.
    pub fn pane_input(&self, pane: &PaneId) -> Vec<u8> {
        self.lock()
            .sessions
            .values()
            .find(|s| &s.pane == pane)
            .map(|s| s.input.clone())
            .unwrap_or_default()
    }

    /// When each submitting Enter reached a pane.
    pub fn enters(&self, pane: &PaneId) -> Vec<std::time::Instant> {
        self.lock()
            .sessions
            .values()
            .find(|s| &s.pane == pane)
            .map(|s| s.enters.clone())
            .unwrap_or_default()
    }

    /// Names of the buffers that still exist.
    pub fn buffers(&self) -> Vec<String> {
        self.lock().buffers.keys().cloned().collect()
    }

    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// Makes every later call of `op` fail until [`FakeTmux::heal`].
    pub fn fail(&self, op: Op, failure: Failure) {
        self.lock().failures.insert(op, failure);
    }

    pub fn heal(&self, op: Op) {
        self.lock().failures.remove(&op);
    }

    /// `kill-session` succeeds but leaves the session in place (a misbehaving server).
    pub fn ignore_kills(&self) {
        self.lock().kill_is_ignored = true;
    }

    pub fn set_activity(&self, unix_seconds: u64) {
        self.lock().activity = unix_seconds;
    }
}

impl State {
    fn new_pane(&mut self) -> PaneId {
        let pane = PaneId(format!("%{}", self.next_pane));
        self.next_pane += 1;
        pane
    }

    /// Records the call, then returns the injected failure for `op`, if any.
    fn enter(&mut self, call: Call, op: Op) -> Result<(), Error> {
        self.calls.push(call);
        match self.failures.get(&op) {
            None => Ok(()),
            Some(Failure::Timeout) => Err(Error::Timeout {
                command: format!("{op:?}"),
                after: Duration::from_secs(1),
            }),
            Some(Failure::Failed(stderr)) => Err(Error::Failed {
                command: format!("{op:?}"),
                stderr: stderr.clone(),
            }),
            Some(Failure::NotInstalled) => Err(Error::NotInstalled),
        }
    }

    fn pane_mut(&mut self, pane: &PaneId) -> Result<&mut FakeSession, Error> {
        self.sessions
            .values_mut()
            .find(|s| &s.pane == pane)
            .ok_or_else(|| Error::SessionMissing {
                target: pane.to_string(),
            })
    }
}

fn ready<'a, T: Send + 'a>(value: T) -> BoxFuture<'a, T> {
    Box::pin(std::future::ready(value))
}

impl Tmux for FakeTmux {
    fn create_session<'a>(&'a self, spec: &'a SpawnSpec) -> BoxFuture<'a, Result<PaneId, Error>> {
        let mut state = self.lock();
        let result = state
            .enter(Call::CreateSession(spec.name.clone()), Op::Create)
            .and_then(|()| {
                if state.sessions.contains_key(&spec.name) {
                    return Err(Error::SessionBusy {
                        name: spec.name.clone(),
                    });
                }
                let pane = state.new_pane();
                state.sessions.insert(
                    spec.name.clone(),
                    FakeSession {
                        pane: pane.clone(),
                        dead: false,
                        spec: Some(spec.clone()),
                        input: Vec::new(),
                        enters: Vec::new(),
                    },
                );
                Ok(pane)
            });
        ready(result)
    }

    fn probe<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Liveness, Error>> {
        let mut state = self.lock();
        let result = state
            .enter(Call::Probe(name.to_string()), Op::Probe)
            .map(|()| match state.sessions.get(name) {
                None => Liveness::Absent,
                Some(s) if s.dead => Liveness::Dead,
                Some(_) => Liveness::Live,
            });
        ready(result)
    }

    fn kill_session<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), Error>> {
        let mut state = self.lock();
        let result = state
            .enter(Call::KillSession(name.to_string()), Op::Kill)
            .and_then(|()| {
                if !state.sessions.contains_key(name) {
                    return Err(Error::SessionMissing {
                        target: name.to_string(),
                    });
                }
                if !state.kill_is_ignored {
                    state.sessions.remove(name);
                }
                Ok(())
            });
        ready(result)
    }

    fn paste_text<'a>(
        &'a self,
        buffer: &'a BufferName,
        data: &'a [u8],
        pane: &'a PaneId,
        paste: Paste,
    ) -> BoxFuture<'a, Result<(), Error>> {
        let mut state = self.lock();
        let call = Call::PasteText {
            buffer: buffer.to_string(),
            data: data.to_vec(),
            pane: pane.to_string(),
            paste,
        };
        let op = if paste == Paste::Plain && state.failures.contains_key(&Op::PlainPaste) {
            Op::PlainPaste
        } else {
            Op::Paste
        };
        let result = state.enter(call, op).and_then(|()| {
            // Like tmux: the load happens first and the buffer stays when the paste fails.
            state.buffers.insert(buffer.to_string(), data.to_vec());
            let session = state.pane_mut(pane)?;
            if session.dead {
                return Err(Error::PaneDead {
                    pane: pane.to_string(),
                });
            }
            if paste == Paste::Bracketed {
                session.input.extend_from_slice(b"\x1b[200~");
                session.input.extend_from_slice(data);
                session.input.extend_from_slice(b"\x1b[201~");
            } else {
                session.input.extend_from_slice(data);
                if data == b"\r" {
                    session.enters.push(std::time::Instant::now());
                }
            }
            state.buffers.remove(buffer.as_str());
            Ok(())
        });
        ready(result)
    }

    fn delete_buffer<'a>(&'a self, buffer: &'a BufferName) -> BoxFuture<'a, Result<(), Error>> {
        let mut state = self.lock();
        let result = state
            .enter(Call::DeleteBuffer(buffer.to_string()), Op::Delete)
            .and_then(|()| match state.buffers.remove(buffer.as_str()) {
                Some(_) => Ok(()),
                None => Err(Error::Failed {
                    command: "delete-buffer".into(),
                    stderr: format!("unknown buffer: {buffer}"),
                }),
            });
        ready(result)
    }

    fn capture_pane<'a>(
        &'a self,
        pane: &'a PaneId,
        with_escapes: bool,
    ) -> BoxFuture<'a, Result<String, Error>> {
        let mut state = self.lock();
        let call = Call::CapturePane {
            pane: pane.to_string(),
            with_escapes,
        };
        let screen = state.screens.get(pane.as_str()).cloned();
        let result = state
            .enter(call, Op::Capture)
            .and_then(|()| state.pane_mut(pane))
            .map(|s| match &screen {
                Some(draw) => draw(&s.input),
                None => String::from_utf8_lossy(&s.input).into_owned(),
            });
        ready(result)
    }

    fn window_activity<'a>(&'a self, pane: &'a PaneId) -> BoxFuture<'a, Result<u64, Error>> {
        let mut state = self.lock();
        let activity = state.activity;
        let result = state
            .enter(Call::Display(pane.to_string()), Op::Display)
            .and_then(|()| state.pane_mut(pane))
            .map(|_| activity);
        ready(result)
    }

    fn pane_pid<'a>(&'a self, pane: &'a PaneId) -> BoxFuture<'a, Result<u32, Error>> {
        let mut state = self.lock();
        let result = state
            .enter(Call::Display(pane.to_string()), Op::Display)
            .and_then(|()| state.pane_mut(pane))
            .map(|_| 4242);
        ready(result)
    }

    fn list_sessions<'a>(&'a self) -> BoxFuture<'a, Result<Vec<SessionInfo>, Error>> {
        let mut state = self.lock();
        let activity = state.activity;
        let result = state.enter(Call::ListSessions, Op::List).map(|()| {
            state
                .sessions
                .iter()
                .map(|(name, s)| SessionInfo {
                    name: name.clone(),
                    pane: s.pane.clone(),
                    liveness: if s.dead {
                        Liveness::Dead
                    } else {
                        Liveness::Live
                    },
                    activity,
                })
                .collect()
        });
        ready(result)
    }
}

/// A pane program that draws like Claude Code 2.1.197 (SPEC §18; the real shapes are in
/// Claude's screen reader's fixtures in `session/delivery/`): an input box
/// between two rules that shows the operator's draft or an unsubmitted paste, a
/// permission dialog in its place, or nothing drawn yet.
#[derive(Default)]
pub struct FakeClaude {
    pub dialog: AtomicBool,
    /// Booting: no input box yet.
    pub undrawn: AtomicBool,
    pub draft: Mutex<String>,
    /// The next paste brings a dialog up before its Enter.
    pub dialog_on_paste: AtomicBool,
}

/// Claude Code's rule above and below its input box.
pub const RULE: &str = "────────────────────────────────────────────────────────────";

impl FakeClaude {
    pub fn screen(self: &Arc<Self>) -> Screen {
        let me = Arc::clone(self);
        Arc::new(move |input| me.draw(input))
    }

    /// Whether the pane holds a paste with no Enter after it.
    pub fn unsubmitted(input: &[u8]) -> bool {
        let input = String::from_utf8_lossy(input);
        match (input.rfind("\x1b[201~"), input.rfind('\r')) {
            (Some(paste), Some(enter)) => paste > enter,
            (Some(_), None) => true,
            _ => false,
        }
    }

    fn draw(&self, input: &[u8]) -> String {
        let unsubmitted = Self::unsubmitted(input);
        if unsubmitted && self.dialog_on_paste.swap(false, Ordering::SeqCst) {
            self.dialog.store(true, Ordering::SeqCst);
        }
        let transcript = "⏺ Working on the retry cap.\n\n";
        if self.undrawn.load(Ordering::SeqCst) {
            return "Welcome to Claude Code\n".into();
        }
        if self.dialog.load(Ordering::SeqCst) {
            return format!(
                "{transcript}{RULE}\n Bash command\n\n   rm -rf build\n   Clean the build\n\n Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and always allow access to project/ from this project\n   3. No\n\n Esc to cancel · Tab to amend · ctrl+e to explain\n"
            );
        }
        let draft = self
            .draft
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let line = if !draft.is_empty() {
            format!("❯\u{a0}{draft}")
        } else if unsubmitted {
            "❯\u{a0}[Pasted text #1 +3 lines]".into()
        } else {
            "❯\u{a0}".into()
        };
        format!("{transcript}{RULE}\n{line}\n{RULE}\n  ? for shortcuts\n")
    }
}

/// A pane program that draws like Codex 0.171.0 (issue 31; the real shapes are in
/// Codex's screen reader's fixtures in `session/delivery/`): a composer with a dim
/// placeholder, the operator's draft or an unsubmitted paste, an approval request in
/// its place (which drops pastes), or nothing drawn yet.
#[derive(Default)]
pub struct FakeCodex {
    pub approval: AtomicBool,
    /// Booting: no composer yet.
    pub undrawn: AtomicBool,
    pub draft: Mutex<String>,
}

impl FakeCodex {
    pub fn screen(self: &Arc<Self>) -> Screen {
        let me = Arc::clone(self);
        Arc::new(move |input| me.draw(input))
    }

    fn draw(&self, input: &[u8]) -> String {
        let transcript =
            "\x1b[1;2m›\x1b[0m \x1b[48;5;238mfix the retry cap\x1b[49m\n\n• Working on it.\n\n";
        if self.undrawn.load(Ordering::SeqCst) {
            return String::new();
        }
        if self.approval.load(Ordering::SeqCst) {
            return format!(
                "{transcript}  Would you like to run the following command?\n\n  $ rm -rf build\n\n\x1b[1;7m› 1. Yes, proceed (y)\n\x1b[0m  2. Yes, and don't ask again (p)\n  3. No, and tell Codex what to do differently (esc)\n\n  \x1b[2mPress enter to confirm or esc to cancel\x1b[0m\n"
            );
        }
        let draft = self
            .draft
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let line = if !draft.is_empty() {
            draft
        } else if FakeClaude::unsubmitted(input) {
            "[Pasted Content 1200 chars]".into()
        } else {
            "\x1b[2mAsk Codex to do anything\x1b[0m".into()
        };
        format!(
            "{transcript}\x1b[1m›\x1b[0m {line}\n\n  gpt-5-codex default · ~/project\n  ? for shortcuts\n"
        )
    }
}
