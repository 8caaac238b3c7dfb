//! The help popup, generated from the keymap in use (so a user override shows up here
//! as soon as it applies): one section per pane or mode, keys then what they do; then
//! what the mouse does, while `tui.mouse` is on.

use crate::tui::app::App;
use crate::tui::keymap::Group;
use crate::tui::layout::centered;
use crate::tui::text::{fit, width};
use crate::tui::view::scrolled_popup;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

const KEYS_MAX: usize = 22;

fn lines(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    let rows: Vec<(Group, String, String)> = Group::ALL
        .iter()
        .flat_map(|g| {
            app.keymap.bindings(*g).iter().map(move |b| {
                let keys: Vec<String> = b.keys.iter().map(ToString::to_string).collect();
                (*g, keys.join(" "), b.desc.clone())
            })
        })
        .collect();
    let key_w = rows
        .iter()
        .map(|(_, k, _)| width(k))
        .max()
        .unwrap_or(0)
        .min(KEYS_MAX);
    let mut out = Vec::new();
    let mut current = None;
    for (group, keys, desc) in rows {
        if current != Some(group) {
            if current.is_some() {
                out.push(Line::default());
            }
            out.push(Line::from(Span::styled(group.title(), t.section)));
            current = Some(group);
        }
        out.push(Line::from(vec![
            Span::styled(format!("  {}", fit(&keys, key_w)), t.key),
            Span::styled(format!("  {desc}"), t.popup),
        ]));
    }
    if app.mouse {
        out.push(Line::default());
        out.push(Line::from(Span::styled("Mouse", t.section)));
        for (gesture, what) in crate::tui::mouse::HELP {
            out.push(Line::from(vec![
                Span::styled(format!("  {}", fit(gesture, key_w)), t.key),
                Span::styled(format!("  {what}"), t.popup),
            ]));
        }
    }
    out
}

/// How many lines the help has (the scroll limit).
pub fn line_count(app: &App) -> usize {
    lines(app).len()
}

pub fn render(app: &App, frame: &mut Frame, area: Rect, scroll: u16) {
    let all = lines(app);
    let w = all.iter().map(Line::width).max().unwrap_or(0) as u16 + 4;
    let h = u16::try_from(all.len())
        .unwrap_or(u16::MAX)
        .saturating_add(2);
    let rect = centered(area, w.max(30), h);
    let title = Line::from(" Keys ");
    scrolled_popup(app, frame, rect, title, Group::Help, all, scroll as usize);
}
