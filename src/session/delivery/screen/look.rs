//! What a screen shows, for a paste about to be made: the one answer every screen
//! reader gives (`claude`, `codex`) and the paste path decides on (`hold::decide`).

/// What the harness's input box shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputBox {
    /// No input box is recognised: booting, a dialog, a trust or onboarding screen, a
    /// box taller than the screen, anything unknown.
    NotDrawn,
    /// Drawn and empty (perhaps with a dim placeholder or suggestion).
    Empty,
    /// Drawn and holding text: the visible text after the prompt, continuation lines
    /// joined with `\n` (shell mode starts with `!`).
    Holds(String),
}

/// A dialog on screen, where a pasted `\r` would choose an option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialog {
    /// A permission request (`Do you want to proceed?`).
    Permission,
    /// Any other choice: the trust screen, a menu, a question from the model.
    Other,
    /// The client's menu on a limit (Claude Code 2.1.197's `/rate-limit-options`, opened
    /// on a session's first usage limit: `1. Stop and wait for limit to reset`, `2.
    /// Upgrade your plan`): nothing goes out until someone answers it (issue 43).
    LimitMenu,
}

/// What a screen shows, for a paste about to be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Look {
    pub dialog: Option<Dialog>,
    pub input: InputBox,
}

impl Look {
    /// A paste lands on a ready, empty input box with no dialog up (SPEC §18.2).
    pub fn ready(&self) -> bool {
        self.dialog.is_none() && self.input == InputBox::Empty
    }
}
