//! The terminal around the screen child. The child (`the-loop tui`) restores the
//! terminal on every exit path it sees; a child killed outright (SIGKILL, a crash the
//! panic hook never saw) cannot, so the demo saves the terminal's settings before it
//! starts the child and puts them back afterwards — raw mode off, main screen, cursor on.

use nix::sys::termios::{SetArg, Termios, tcgetattr, tcsetattr};
use std::io::{IsTerminal, Write};

/// The terminal's line settings as they were before the child ran.
pub struct SavedTerminal {
    termios: Option<Termios>,
}

/// Leaves what a full-screen program may have turned on: bracketed paste, mouse
/// reporting, the alternate screen; shows the cursor.
const RESET: &[u8] = b"\x1b[?2004l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1049l\x1b[?25h";

impl SavedTerminal {
    /// Saves stdin's settings when it is a terminal.
    pub fn capture() -> Self {
        let stdin = std::io::stdin();
        let termios = if stdin.is_terminal() {
            tcgetattr(&stdin).ok()
        } else {
            None
        };
        Self { termios }
    }

    /// Puts the settings back; after a child that did not exit cleanly also resets the
    /// screen modes it may have left on.
    pub fn restore(&self, child_exited_cleanly: bool) {
        if let Some(termios) = &self.termios {
            let _ = tcsetattr(std::io::stdin(), SetArg::TCSANOW, termios);
        }
        let mut out = std::io::stdout();
        if !child_exited_cleanly && out.is_terminal() {
            let _ = out.write_all(RESET);
            let _ = out.write_all(b"\r\n");
            let _ = out.flush();
        }
    }
}
