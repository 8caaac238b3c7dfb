//! Recording a Claude Code release's screens (`scripts/record-screens`, issue 40): the
//! real client in a pane of a private tmux server at a set size, against the tests' fake
//! model ([`Client`]); each state waited for by what the screen shows, then captured
//! plain and with escapes into `NAME.COLSxROWS.txt` / `.ansi` ([`Recording`]); a README;
//! and what the-loop's classifier reads on each capture next to what it read on the
//! previous recorded release's capture of the same name ([`compare`]).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::claude::{ClaudeHome, ClaudeVersion, NOT_INHERITED, write_config};
use super::fake_model::FakeModel;
use super::processes::end_panes;
use super::tmux_server::TmuxServer;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use the_loop::session::delivery::screen::{Dialog, InputBox, Reader, claude};

/// How long a state may take to show (Claude Code boots in seconds; a loaded machine).
const PATIENCE: Duration = Duration::from_secs(60);

/// The project directory as the captures show it. The real one is `/tmp/XYZ` + the same
/// tail, of the same length, so the client truncates and wraps both alike; only its
/// first eight characters are replaced.
pub const STABLE_PROJECT: &str = "/home/op/src/octo-repo-15";
const PROJECT_TAIL: &str = "/src/octo-repo-15";

/// A state that did not show: what was awaited, and the screen instead.
pub type Missed = String;
pub type Step<T = ()> = Result<T, Missed>;

/// The fixtures being written: where, and what so far.
pub struct Recording {
    pub out: PathBuf,
    pub bin: PathBuf,
    pub version: ClaudeVersion,
    /// `NAME.COLSxROWS` of every capture written, in order.
    pub written: Vec<String>,
    /// The real project parent (`/tmp/XYZ`), kept until the recording ends.
    parent: tempfile::TempDir,
}

impl Recording {
    pub fn new(out: PathBuf, bin: PathBuf) -> Self {
        let version = ClaudeVersion::of(&bin);
        if out.exists() {
            std::fs::remove_dir_all(&out).unwrap();
        }
        std::fs::create_dir_all(&out).unwrap();
        let parent = tempfile::Builder::new()
            .prefix("")
            .rand_bytes(3)
            .tempdir_in("/tmp")
            .unwrap();
        let recording = Self {
            out,
            bin,
            version,
            written: Vec::new(),
            parent,
        };
        assert_eq!(
            recording.project().display().to_string().len(),
            STABLE_PROJECT.len(),
            "the project path must be as long as the one the captures show"
        );
        std::fs::create_dir_all(recording.project()).unwrap();
        recording
    }

    /// The real project directory every client starts in.
    pub fn project(&self) -> PathBuf {
        PathBuf::from(format!("{}{PROJECT_TAIL}", self.parent.path().display()))
    }

    /// `screen` with the real project parent replaced by the stable one.
    fn stable(&self, screen: &str) -> String {
        let real = self.parent.path().display().to_string();
        let stable = &STABLE_PROJECT[..STABLE_PROJECT.len() - PROJECT_TAIL.len()];
        screen.replace(&format!("{real}/"), &format!("{stable}/"))
    }

    /// Writes `NAME.COLSxROWS.txt` and `.ansi`.
    fn write(&mut self, name: &str, size: Size, plain: &str, escaped: &str) {
        let base = format!("{name}.{size}");
        std::fs::write(self.out.join(format!("{base}.txt")), self.stable(plain)).unwrap();
        std::fs::write(self.out.join(format!("{base}.ansi")), self.stable(escaped)).unwrap();
        eprintln!("record-screens: {base}");
        self.written.push(base);
    }

    /// The README: the release, tmux, the date, and what each recorded state is.
    pub fn write_readme(&self, states: &[(&str, &str)], missed: &[String]) {
        let tmux = command_line("tmux", &["-V"]);
        let date = command_line("date", &["-u", "+%Y-%m-%d"]);
        let mut text = format!(
            "# Claude Code {v} screens\n\n\
             Real captures of Claude Code {v} (npm `@anthropic-ai/claude-code`; `claude \
             --version` → `{v} (Claude Code)`) in {tmux}, recorded on {date} by \
             `scripts/record-screens claude {v}` (`tests/claude/record_screens.rs`): run \
             offline against the tests' fake of the Messages API \
             (`tests/support/fake_model.rs`) with a private `HOME` prepared as in \
             `tests/support/claude.rs`. Each state has two files: `NAME.COLSxROWS.txt` from \
             `tmux capture-pane -p` and `NAME.COLSxROWS.ansi` from `tmux capture-pane -p -e`. \
             The project directory ran as `/tmp/XYZ{PROJECT_TAIL}`, a path as long as \
             `{STABLE_PROJECT}`, whose first eight characters were replaced by `/home/op` \
             wherever shown; nothing else was edited.\n\n\
             Sessions start with `--permission-mode default` (manual mode) unless the row \
             says otherwise; a no-flag start is in the release's default mode.\n\n\
             | name | sizes | what is on screen |\n|---|---|---|\n",
            v = self.version,
        );
        for (name, what) in states {
            let sizes: Vec<&str> = self
                .written
                .iter()
                .filter_map(|w| w.strip_prefix(&format!("{name}.")))
                .collect();
            if !sizes.is_empty() {
                text.push_str(&format!("| `{name}` | {} | {what} |\n", sizes.join(", ")));
            }
        }
        let absent: Vec<String> = states
            .iter()
            .filter(|(name, _)| {
                !self
                    .written
                    .iter()
                    .any(|w| w.starts_with(&format!("{name}.")))
            })
            .map(|(name, _)| format!("`{name}`"))
            .collect();
        if !absent.is_empty() {
            text.push_str(&format!(
                "\nNot recorded: {}. The recorder's scenarios that stopped:\n\n",
                absent.join(", ")
            ));
            for m in missed {
                text.push_str(&format!("- {m}\n"));
            }
        }
        std::fs::write(self.out.join("README.md"), text).unwrap();
    }
}

/// The first line `program args` prints.
fn command_line(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// A pane size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u16, pub u16);

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.0, self.1)
    }
}

pub const WIDE: Size = Size(160, 48);
pub const NORMAL: Size = Size(100, 30);
pub const SMALL: Size = Size(30, 20);

/// How the client's `HOME` is prepared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Home {
    /// Onboarding done, the project trusted (as every test has it).
    Ready,
    /// The project not trusted yet: the trust screen.
    Untrusted,
    /// A first run: onboarding.
    Fresh,
}

/// One client in a pane of its own tmux server, against its own fake model; dropping it
/// ends the client, the server and the model.
pub struct Client {
    pub model: FakeModel,
    pub size: Size,
    server: TmuxServer,
    pub home: ClaudeHome,
    started: Instant,
}

impl Client {
    /// Starts the client under test with `args` in a `size` pane.
    pub async fn start(rec: &Recording, size: Size, home: Home, args: &[&str]) -> Self {
        let model = FakeModel::start().await;
        let claude_home = ClaudeHome::new(&model.url);
        let config = claude_home.home.join(".claude.json");
        match home {
            Home::Fresh => std::fs::write(config, "{}").unwrap(),
            _ => write_config(&claude_home.home, &rec.project(), home == Home::Ready),
        }
        let server = TmuxServer::new();
        let (cols, rows) = (size.0.to_string(), size.1.to_string());
        let mut command = Command::new("tmux");
        command
            .args(["-L", &server.socket, "-f", "/dev/null", "new-session", "-d"])
            .args(["-s", "rec", "-x", &cols, "-y", &rows, "-c"])
            .arg(rec.project())
            .arg("--")
            .arg(&rec.bin)
            .args(args)
            // A client that exits leaves its last screen readable.
            .args([";", "set-option", "-t", "rec", "remain-on-exit", "on"])
            .envs(claude_home.env());
        // Bypass mode refuses root unless it is told it runs in a sandbox.
        if args.contains(&"bypassPermissions") {
            command.env("IS_SANDBOX", "1");
        }
        for var in NOT_INHERITED {
            command.env_remove(var);
        }
        assert!(command.status().unwrap().success(), "tmux did not start");
        Self {
            model,
            size,
            server,
            home: claude_home,
            started: Instant::now(),
        }
    }

    /// The pane now, plain or with escapes.
    pub fn screen(&self, escaped: bool) -> String {
        let mut args = vec!["capture-pane", "-p", "-t", "rec"];
        if escaped {
            args.insert(2, "-e");
        }
        String::from_utf8_lossy(&self.server.raw(&args).stdout).into_owned()
    }

    /// Presses `keys` (tmux key names).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "rec"];
        args.extend(keys);
        assert!(
            self.server.raw(&args).status.success(),
            "send-keys {keys:?}"
        );
    }

    /// Presses `key` `n` times.
    pub fn repeat(&self, key: &str, n: usize) {
        let n = n.to_string();
        let out = self.server.raw(&["send-keys", "-N", &n, "-t", "rec", key]);
        assert!(out.status.success(), "send-keys -N {n} {key}");
    }

    /// Types `text` as keystrokes.
    pub fn type_text(&self, text: &str) {
        let out = self.server.raw(&["send-keys", "-l", "-t", "rec", text]);
        assert!(out.status.success(), "send-keys -l");
    }

    /// Pastes `text` as the-loop does: a bracketed paste of a buffer.
    pub fn paste(&self, text: &str) {
        assert!(
            self.server
                .raw(&["set-buffer", "-b", "rec", text])
                .status
                .success()
        );
        let out = self
            .server
            .raw(&["paste-buffer", "-p", "-d", "-b", "rec", "-t", "rec"]);
        assert!(out.status.success(), "paste-buffer");
    }

    /// Waits until the plain screen satisfies `shows`, then until it holds still (two
    /// captures 250 ms apart agree, for at most 3 s: a spinner never does) while it
    /// still does; returns it.
    pub async fn wait(&self, what: &str, shows: impl Fn(&str) -> bool) -> Step<String> {
        let start = Instant::now();
        let mut screen = self.screen(false);
        while !shows(&screen) {
            if start.elapsed() > PATIENCE {
                let gist: Vec<&str> = screen
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect();
                return Err(format!(
                    "at {}, {} s after the start: timed out waiting for {what}; the screen ends `{}`\n{screen}",
                    self.size,
                    self.started.elapsed().as_secs(),
                    gist[gist.len().saturating_sub(3)..].join(" / ")
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            screen = self.screen(false);
        }
        for _ in 0..12 {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let now = self.screen(false);
            if now == screen || !shows(&now) {
                break;
            }
            screen = now;
        }
        Ok(screen)
    }

    /// Waits for `shows`, then captures the state as `name`.
    pub async fn record(
        &self,
        rec: &mut Recording,
        name: &str,
        what: &str,
        shows: impl Fn(&str) -> bool,
    ) -> Step {
        self.wait(what, &shows).await?;
        self.capture(rec, name);
        Ok(())
    }

    /// Captures the screen as it is now as `name`.
    pub fn capture(&self, rec: &mut Recording, name: &str) {
        let (plain, escaped) = (self.screen(false), self.screen(true));
        rec.write(name, self.size, &plain, &escaped);
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        end_panes(&self.server);
    }
}

/// The text of the input box's prompt line (after `❯` and a no-break space), when one
/// is drawn at column 0.
pub fn prompt_line(screen: &str) -> Option<&str> {
    screen
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(claude::INPUT_PROMPT))
}

/// The box is drawn and its prompt line is empty.
pub fn empty_box(screen: &str) -> bool {
    prompt_line(screen).is_some_and(|t| t.trim().is_empty())
}

/// The box's prompt line starts with `text`.
pub fn box_holds(screen: &str, text: &str) -> bool {
    prompt_line(screen).is_some_and(|t| t.starts_with(text))
}

/// What the classifier reads on one capture: the look (of the `-e` capture, as the
/// paste path takes it), whether approve may press Enter, the footer's mode.
pub fn reading(plain: &str, escaped: &str) -> String {
    let look = Reader::Claude.look(escaped);
    let dialog = match look.dialog {
        None => "no dialog",
        Some(Dialog::Permission) => "permission dialog",
        Some(Dialog::Other) => "other dialog",
        Some(Dialog::LimitMenu) => "limit menu",
    };
    let input = match &look.input {
        InputBox::NotDrawn => "no box".to_string(),
        InputBox::Empty => "empty box".to_string(),
        InputBox::Holds(text) => {
            let short: String = text.chars().take(32).collect();
            let more = if short.len() < text.len() { "…" } else { "" };
            format!("box holds {:?}{more}", short.replace('\n', "⏎"))
        }
    };
    let approve = if claude::shows_dialog(plain) {
        ", approvable"
    } else {
        ""
    };
    let mode =
        claude::shown_mode(plain).map_or(String::new(), |m| format!(", mode {}", m.as_str()));
    format!("{dialog}, {input}{approve}{mode}")
}

/// The recorded release before `version`: the newest `fixtures/X.Y.Z/` older than it,
/// else the fixtures' top level (2.1.197).
pub fn previous_release(fixtures: &Path, version: ClaudeVersion) -> (String, PathBuf) {
    let older = std::fs::read_dir(fixtures)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            ClaudeVersion::parse(&name).filter(|v| *v < version)
        })
        .max();
    match older {
        Some(v) => (v.to_string(), fixtures.join(v.to_string())),
        None => ("2.1.197".to_string(), fixtures.to_path_buf()),
    }
}

/// Prints where the classifier reads the new captures differently from the previous
/// release's captures of the same name; returns how many differ.
pub fn compare(rec: &Recording) -> usize {
    let fixtures = rec.out.parent().unwrap();
    let (previous, dir) = previous_release(fixtures, rec.version);
    let read = |dir: &Path, base: &str| {
        let plain = std::fs::read_to_string(dir.join(format!("{base}.txt"))).ok()?;
        let escaped = std::fs::read_to_string(dir.join(format!("{base}.ansi"))).ok()?;
        Some(reading(&plain, &escaped))
    };
    let (mut same, mut differ, mut new) = (0, Vec::new(), Vec::new());
    for base in &rec.written {
        let now = read(&rec.out, base).unwrap();
        match read(&dir, base) {
            Some(before) if before == now => same += 1,
            Some(before) => differ.push((base, before, now)),
            None => new.push((base, now)),
        }
    }
    println!(
        "\nThe classifier on Claude Code {} against {previous}:\n",
        rec.version
    );
    println!("| screen | {previous} | {} |\n|---|---|---|", rec.version);
    for (base, before, now) in &differ {
        println!("| {base} | {before} | {now} |");
    }
    for (base, now) in &new {
        println!("| {base} | (not recorded) | {now} |");
    }
    println!(
        "\nrecord-screens: {} screens of Claude Code {} in {}; {same} read as {previous}'s, {} \
         read differently, {} have no {previous} screen",
        rec.written.len(),
        rec.version,
        rec.out.display(),
        differ.len(),
        new.len()
    );
    differ.len()
}
