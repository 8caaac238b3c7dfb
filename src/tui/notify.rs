//! How a "needs you" notification (a new question or permission request, `tui.notify:
//! desktop`) reaches the operator's desktop, on Linux and macOS alike:
//!
//! 1. the terminal's own notification escape, when the terminal is known to show one
//!    (OSC 9: iTerm2, WezTerm, Ghostty, kitty; OSC 777: foot, urxvt) — it works over
//!    SSH too, and needs nothing installed;
//! 2. else the platform's notifier run as argv: `notify-send` (Linux), `osascript`
//!    with the text passed as arguments, never spliced into the script (macOS);
//! 3. else the bell.
//!
//! Inside tmux the outer terminal is hidden (`TERM_PROGRAM=tmux`), so the escape is
//! used only when the terminal says it is itself; tmux users get the platform notifier.
//! Title and body are reduced to one plain line first: nothing an agent wrote can
//! reach the terminal as an escape.

use std::path::PathBuf;

/// A terminal notification escape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// `ESC ] 9 ; text BEL`.
    Osc9,
    /// `ESC ] 777 ; notify ; title ; body BEL`.
    Osc777,
}

/// How notifications are shown, decided once at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    Escape(Escape),
    NotifySend(PathBuf),
    Osascript(PathBuf),
    Bell,
}

/// What the decision reads from the environment.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub term: Option<String>,
    pub term_program: Option<String>,
    pub inside_tmux: bool,
    pub macos: bool,
    pub notify_send: Option<PathBuf>,
    pub osascript: Option<PathBuf>,
}

impl Env {
    /// This process's environment.
    pub fn current(find: impl Fn(&str) -> Option<PathBuf>) -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Self {
            term: var("TERM"),
            term_program: var("TERM_PROGRAM"),
            inside_tmux: var("TMUX").is_some(),
            macos: cfg!(target_os = "macos"),
            notify_send: find("notify-send"),
            osascript: find("osascript"),
        }
    }
}

/// The terminal's own escape, when it is known to show notifications.
pub fn terminal_escape(env: &Env) -> Option<Escape> {
    if env.inside_tmux {
        return None;
    }
    let program = env.term_program.as_deref().unwrap_or_default();
    let term = env.term.as_deref().unwrap_or_default();
    match () {
        _ if matches!(program, "iTerm.app" | "WezTerm" | "ghostty") => Some(Escape::Osc9),
        _ if term == "xterm-kitty" || term.starts_with("xterm-ghostty") => Some(Escape::Osc9),
        _ if term.starts_with("foot") || term.starts_with("rxvt-unicode") => Some(Escape::Osc777),
        _ => None,
    }
}

/// The way to notify in `env`.
pub fn choose(env: &Env) -> Via {
    if let Some(escape) = terminal_escape(env) {
        return Via::Escape(escape);
    }
    match (&env.notify_send, &env.osascript) {
        (_, Some(osascript)) if env.macos => Via::Osascript(osascript.clone()),
        (Some(notify_send), _) => Via::NotifySend(notify_send.clone()),
        _ => Via::Bell,
    }
}

/// One plain line: control characters (ESC, BEL, …) become spaces.
fn plain(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_string()
}

/// The escape's bytes for `title` and `body`.
pub fn escape_bytes(escape: Escape, title: &str, body: &str) -> Vec<u8> {
    let (title, body) = (plain(title), plain(body));
    match escape {
        // The title leads, so the text never starts with a digit (OSC 9;4 is progress).
        Escape::Osc9 => format!("\x1b]9;{title}: {body}\x07").into_bytes(),
        // `;` separates the fields: none in the title.
        Escape::Osc777 => {
            format!("\x1b]777;notify;{};{body}\x07", title.replace(';', ",")).into_bytes()
        }
    }
}

/// The argv that shows the notification with a platform notifier.
pub fn command(via: &Via, title: &str, body: &str) -> Option<Vec<String>> {
    let (title, body) = (plain(title), plain(body));
    match via {
        Via::NotifySend(program) => Some(vec![
            program.display().to_string(),
            "--app-name=the-loop".into(),
            "--".into(),
            title,
            body,
        ]),
        // The text travels as arguments: AppleScript never parses it.
        Via::Osascript(program) => Some(vec![
            program.display().to_string(),
            "-e".into(),
            "on run argv".into(),
            "-e".into(),
            "display notification (item 2 of argv) with title (item 1 of argv)".into(),
            "-e".into(),
            "end run".into(),
            "--".into(),
            title,
            body,
        ]),
        Via::Escape(_) | Via::Bell => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(term: &str, program: &str) -> Env {
        Env {
            term: Some(term.into()),
            term_program: Some(program.into()),
            ..Env::default()
        }
    }

    #[test]
    fn terminals_that_show_notifications_get_their_escape() {
        assert_eq!(
            choose(&env("xterm-256color", "iTerm.app")),
            Via::Escape(Escape::Osc9)
        );
        assert_eq!(
            choose(&env("xterm-256color", "WezTerm")),
            Via::Escape(Escape::Osc9)
        );
        assert_eq!(choose(&env("xterm-kitty", "")), Via::Escape(Escape::Osc9));
        assert_eq!(choose(&env("foot", "")), Via::Escape(Escape::Osc777));
        let mut tmux = env("tmux-256color", "iTerm.app");
        tmux.inside_tmux = true;
        assert_eq!(
            choose(&tmux),
            Via::Bell,
            "inside tmux the outer terminal is hidden"
        );
    }

    #[test]
    fn else_the_platform_notifier_else_the_bell() {
        let mut mac = env("xterm-256color", "Apple_Terminal");
        mac.macos = true;
        mac.osascript = Some("/usr/bin/osascript".into());
        assert_eq!(choose(&mac), Via::Osascript("/usr/bin/osascript".into()));
        let mut linux = env("xterm-256color", "");
        linux.notify_send = Some("/usr/bin/notify-send".into());
        assert_eq!(
            choose(&linux),
            Via::NotifySend("/usr/bin/notify-send".into())
        );
        assert_eq!(choose(&env("xterm", "")), Via::Bell);
    }

    #[test]
    fn nothing_an_agent_wrote_reaches_the_terminal_as_an_escape() {
        let hostile = "done\x07\x1b]52;c;cGF5bG9hZA==\x07 \x1b[2J";
        let bytes = escape_bytes(Escape::Osc9, "the-loop: #15", hostile);
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.starts_with("\x1b]9;the-loop: #15: "), "{text:?}");
        assert_eq!(
            text.matches('\x1b').count(),
            1,
            "only the escape's own ESC: {text:?}"
        );
        assert_eq!(text.matches('\x07').count(), 1, "{text:?}");
        let text = String::from_utf8(escape_bytes(Escape::Osc777, "a;b", "c;d")).unwrap();
        assert_eq!(text, "\x1b]777;notify;a,b;c;d\x07");
    }

    #[test]
    fn the_macos_notifier_gets_the_text_as_arguments() {
        let argv = command(
            &Via::Osascript("/usr/bin/osascript".into()),
            "the-loop: #15",
            "\" & do shell script \"touch /tmp/pwned",
        )
        .unwrap();
        assert_eq!(argv[argv.len() - 2], "the-loop: #15");
        assert_eq!(
            argv[argv.len() - 1],
            "\" & do shell script \"touch /tmp/pwned"
        );
        assert!(
            argv[..argv.len() - 2].iter().all(|a| !a.contains("pwned")),
            "the script never holds the text: {argv:?}"
        );
    }
}
