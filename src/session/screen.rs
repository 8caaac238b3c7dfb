//! TEMPORARY stand-in until the `screen` branch lands (not committed).
use super::deliver::input_box;
use super::hooks::permission::shows_dialog;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputBox {
    NotDrawn,
    Empty,
    Holds(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Look {
    pub dialog: bool,
    pub input: InputBox,
}

pub fn look(screen: &str) -> Look {
    let dialog = shows_dialog(screen);
    let input = match input_box(screen) {
        None => InputBox::NotDrawn,
        Some(text) => {
            let first = text.lines().next().unwrap_or("").trim_start();
            match first.strip_prefix("❯") {
                None => InputBox::NotDrawn,
                Some(rest) => {
                    let rest = rest.trim();
                    if rest.is_empty() && text.lines().skip(1).all(|l| l.trim().is_empty()) {
                        InputBox::Empty
                    } else {
                        InputBox::Holds(rest.to_string())
                    }
                }
            }
        }
    };
    Look { dialog, input }
}

pub fn shows_paste(screen: &str, pasted: &str, marker: &str) -> bool {
    let l = look(screen);
    if l.dialog {
        return false;
    }
    match l.input {
        InputBox::Holds(t) => {
            t.starts_with(marker)
                || pasted.lines().next().is_some_and(|f| {
                    !f.is_empty() && t.starts_with(&f.chars().take(20).collect::<String>())
                })
        }
        _ => false,
    }
}
