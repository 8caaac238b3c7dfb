//! The help popup, generated from the keymap in use (so a user override shows up here
//! as soon as it applies): one section per pane or mode, keys then what they do.

use super::app::App;
use super::keymap::Group;
use super::layout::centered;
use super::text::{fit, width};
use super::view::popup_frame;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

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
    out
}

/// How many lines the help has (the scroll limit).
pub fn line_count(app: &App) -> usize {
    lines(app).len()
}

pub fn render(app: &App, frame: &mut Frame, area: Rect, scroll: u16) {
    let t = &app.theme;
    let all = lines(app);
    let w = all.iter().map(Line::width).max().unwrap_or(0) as u16 + 4;
    let rect = centered(area, w.max(30), (all.len() as u16).saturating_add(2));
    let close = super::view::hint_spans(app, Group::Help, t.popup);
    let scroll = (scroll as usize).min(all.len().saturating_sub(1));
    let block = popup_frame(app, frame, rect, Line::from(" Keys "))
        .title_bottom(Line::from(close))
        .title_bottom(
            Line::from(Span::styled(
                format!(" {}/{} ", scroll + 1, all.len()),
                t.popup,
            ))
            .right_aligned(),
        );
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let visible: Vec<Line> = all
        .into_iter()
        .skip(scroll)
        .take(inner.height as usize)
        .map(|l| l.patch_style(t.popup))
        .collect();
    frame.render_widget(Paragraph::new(visible), inner);
}
