//! Where each pane goes, as a pure function of the app and the terminal size, so the
//! renderer and `update` (is the preview visible?) agree. Wide terminals get the
//! SPEC §11.1 grid; narrow ones stack panes; short ones, or a zoomed pane, show the
//! focused pane alone. No size is too small: every rectangle is clipped, never negative.

use super::app::{App, Focus, Mode};
use ratatui::layout::Rect;

/// At least this wide for the side-by-side grid.
pub const WIDE_MIN_WIDTH: u16 = 100;
/// Below this many body rows only the focused pane is shown.
const SINGLE_BELOW_ROWS: u16 = 12;
/// Stacking five panes needs this many rows.
const STACK_MIN_ROWS: u16 = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrangement {
    Wide,
    Stacked,
    Single,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub arrangement: Arrangement,
    pub status: Rect,
    pub footer: Rect,
    pub sessions: Option<Rect>,
    pub pane: Option<Rect>,
    pub questions: Option<Rect>,
    pub events: Option<Rect>,
    pub critics: Option<Rect>,
    pub reply: Option<Rect>,
}

impl Layout {
    pub fn rect(&self, focus: Focus) -> Option<Rect> {
        match focus {
            Focus::Sessions => self.sessions,
            Focus::Pane => self.pane,
            Focus::Questions => self.questions,
            Focus::Events => self.events,
            Focus::Critics => self.critics,
        }
    }

    fn set(&mut self, focus: Focus, r: Rect) {
        let slot = match focus {
            Focus::Sessions => &mut self.sessions,
            Focus::Pane => &mut self.pane,
            Focus::Questions => &mut self.questions,
            Focus::Events => &mut self.events,
            Focus::Critics => &mut self.critics,
        };
        *slot = Some(r);
    }
}

/// A count as rows, saturating instead of wrapping.
fn count(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

fn rows(area: Rect, y: u16, h: u16) -> Rect {
    let y = y.min(area.height);
    Rect::new(area.x, area.y + y, area.width, h.min(area.height - y))
}

fn cols(area: Rect, x: u16, w: u16) -> Rect {
    let x = x.min(area.width);
    Rect::new(area.x + x, area.y, w.min(area.width - x), area.height)
}

pub fn compute(app: &App, area: Rect) -> Layout {
    // Warnings get a line of their own when there is room for it.
    let status_h = if area.height >= 12 && super::panes::status_bar::has_warnings(app) {
        2
    } else {
        area.height.min(1)
    };
    let mut out = Layout {
        arrangement: Arrangement::Single,
        status: Rect::new(area.x, area.y, area.width, status_h),
        footer: Rect::new(
            area.x,
            area.y + area.height.saturating_sub(1),
            area.width,
            0,
        ),
        sessions: None,
        pane: None,
        questions: None,
        events: None,
        critics: None,
        reply: None,
    };
    if area.height >= 2 {
        out.footer.height = 1;
    }
    let body_h = area.height.saturating_sub(status_h + out.footer.height);
    if body_h == 0 {
        return out;
    }
    let mut body = Rect::new(area.x, area.y + status_h, area.width, body_h);

    if let Mode::Reply(reply) = &app.mode {
        // The reply box grows with its text, keeps the panes above it usable, and takes
        // the whole body when there is no room for both.
        let text_rows = count(reply.textarea.lines().len());
        let question_rows = u16::from(reply.question.is_some());
        let wanted = text_rows.saturating_add(question_rows + 3).clamp(6, 12);
        let h = if body_h < 10 {
            body_h
        } else {
            wanted.min(body_h / 2)
        };
        out.reply = Some(rows(body, body_h - h, h));
        body.height = body_h - h;
        if body.height == 0 {
            return out;
        }
    }

    let single = app.zoom || body.height < SINGLE_BELOW_ROWS;
    if single {
        out.arrangement = Arrangement::Single;
        out.set(app.focus, body);
    } else if area.width >= WIDE_MIN_WIDTH {
        out.arrangement = Arrangement::Wide;
        wide(app, body, &mut out);
    } else if body.height >= STACK_MIN_ROWS {
        out.arrangement = Arrangement::Stacked;
        stacked(app, body, &mut out);
    } else {
        out.arrangement = Arrangement::Single;
        out.set(app.focus, body);
    }
    out
}

fn wide(app: &App, body: Rect, out: &mut Layout) {
    let listed = count(app.sessions.len()).saturating_add(2);
    let top_h = (body.height * 55 / 100).max(listed.min(body.height * 2 / 3));
    let top = rows(body, 0, top_h);
    let bottom = rows(body, top_h, body.height - top_h);

    let sessions_w = (body.width * 2 / 5).clamp(32, 56).min(body.width);
    out.sessions = Some(cols(top, 0, sessions_w));
    out.pane = Some(cols(top, sessions_w, top.width - sessions_w));

    let q_w = body.width * 32 / 100;
    let c_w = body.width * 30 / 100;
    out.questions = Some(cols(bottom, 0, q_w));
    out.events = Some(cols(bottom, q_w, body.width - q_w - c_w));
    out.critics = Some(cols(bottom, body.width - c_w, c_w));
}

fn stacked(app: &App, body: Rect, out: &mut Layout) {
    let h = body.height;
    let sessions = count(app.sessions.len()).saturating_add(2).clamp(3, h / 4);
    let questions = if app.questions.is_empty() {
        3
    } else {
        count(app.questions.len())
            .saturating_mul(2)
            .saturating_add(2)
            .clamp(3, h / 5)
    };
    let critics = if app.runs.is_empty() {
        3
    } else {
        count(app.runs.len()).saturating_add(2).clamp(3, h / 5)
    };
    let events = h / 4;
    let pane = h.saturating_sub(sessions + questions + critics + events);
    let mut y = 0;
    for (focus, height) in [
        (Focus::Sessions, sessions),
        (Focus::Pane, pane),
        (Focus::Questions, questions),
        (Focus::Events, events),
        (Focus::Critics, critics),
    ] {
        out.set(focus, rows(body, y, height));
        y += height;
    }
}

/// A centered popup of at most `w`×`h`, inside `area`.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}
