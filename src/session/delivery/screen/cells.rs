//! A `capture-pane` screen as lines of cells, with the two attributes the screen
//! readers need: dim (Claude Code and Codex draw their placeholders dim, Codex its sent
//! messages' prompt) and inverse (Claude Code's cursor, Codex's selected option). Reads
//! plain captures and `capture-pane -e` captures alike.
//!
//! Only SGR (`ESC [ … m`) changes attributes. Every other escape sequence and control
//! character is skipped, so nothing in a capture can smuggle in a cell that is not
//! there; attributes carry across lines, as `tmux capture-pane -e` emits them.

/// One character on screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cell {
    pub ch: char,
    pub dim: bool,
    pub inverse: bool,
}

/// One screen line: its text (trailing ASCII spaces removed, as `capture-pane -p`
/// does) and the cells of that text, one per character.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Line {
    pub text: String,
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Attrs {
    dim: bool,
    inverse: bool,
}

/// The lines of `capture`.
pub(super) fn lines(capture: &str) -> Vec<Line> {
    let mut out = vec![Line::default()];
    let mut attrs = Attrs::default();
    let mut chars = capture.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => out.push(Line::default()),
            '\x1b' => match chars.next() {
                Some('[') => {
                    // Parameter and intermediate bytes, then one final byte; anything
                    // else ends a malformed sequence and is read as itself.
                    let mut params = String::new();
                    while let Some(c) = chars.next_if(|c| (' '..='?').contains(c)) {
                        params.push(c);
                    }
                    if chars.next_if(|c| ('@'..='~').contains(c)) == Some('m') {
                        apply_sgr(&params, &mut attrs);
                    }
                }
                // OSC (a title, a hyperlink): up to BEL or ESC \.
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                // A two-character escape, or the end of the capture.
                _ => {}
            },
            '\t' => push(&mut out, ' ', attrs),
            _ if c.is_control() => {}
            _ => push(&mut out, c, attrs),
        }
    }
    for line in &mut out {
        let kept = line.text.trim_end_matches(' ').chars().count();
        line.cells.truncate(kept);
        line.text = line.cells.iter().map(|c| c.ch).collect();
    }
    // A capture ends with a newline: no empty line after it.
    if out.len() > 1 && out.last().is_some_and(|l| l.text.is_empty()) {
        out.pop();
    }
    out
}

fn push(out: &mut [Line], ch: char, attrs: Attrs) {
    if let Some(line) = out.last_mut() {
        line.text.push(ch);
        line.cells.push(Cell {
            ch,
            dim: attrs.dim,
            inverse: attrs.inverse,
        });
    }
}

/// Applies one SGR parameter list: `0`/none resets, `2`/`22` dim on/off, `7`/`27`
/// inverse on/off. A colour's own numbers (`38;5;2`, `48;2;r;g;b`) are skipped so they
/// are never read as attributes.
fn apply_sgr(params: &str, attrs: &mut Attrs) {
    let mut list = params.split(';');
    while let Some(param) = list.next() {
        if param.contains(':') {
            // A colon-separated colour (`38:5:2`) is one self-contained parameter.
            continue;
        }
        match param.parse::<u32>().unwrap_or(0) {
            0 => *attrs = Attrs::default(),
            2 => attrs.dim = true,
            22 => attrs.dim = false,
            7 => attrs.inverse = true,
            27 => attrs.inverse = false,
            38 | 48 | 58 => match list.next() {
                Some("5") => {
                    list.next();
                }
                Some("2") => {
                    list.nth(2);
                }
                _ => {}
            },
            _ => {}
        }
    }
}
