//! Shipping from the screen (SPEC §19.3, §19.4): `y` on a ship request in the Questions
//! pane, or the ship key on a session, asks the backend what would go out; the answer
//! opens a confirmation showing it (title, branch, head, commits, diffstat, the critic's
//! verdict, uncommitted changes); `d` there shows the diff and comes back; confirming
//! ships exactly the head the confirmation showed. The result shows like every action's.

use super::action::{Effect, Request};
use super::app::{App, Confirm, MessageLevel, Mode};
use super::backend::{Preview, ShipView};
use super::text::{clean_line, short_ref};
use super::update::say;
use crate::work_item::WorkItemRef;

/// Asks the backend what shipping `item` would push; the confirmation opens with it.
pub(super) fn open(app: &mut App, item: WorkItemRef, fx: &mut Vec<Effect>) {
    say(
        app,
        MessageLevel::Info,
        format!("Looking at what shipping {} would push…", short_ref(&item)),
    );
    app.pending_ship = Some(item.clone());
    fx.push(Effect::LoadShip(item));
}

/// The preview arrived: the confirmation, or why nothing can ship.
pub(super) fn previewed(app: &mut App, item: WorkItemRef, result: Result<Box<Preview>, String>) {
    if app.pending_ship.as_ref() != Some(&item) {
        return;
    }
    app.pending_ship = None;
    match result {
        Err(why) => say(
            app,
            MessageLevel::Warn,
            format!("Cannot ship {}: {why}", short_ref(&item)),
        ),
        // The operator opened something else meanwhile: that is not interrupted.
        Ok(_) if !matches!(app.mode, Mode::Normal) => {}
        Ok(preview) => {
            let title = shown_title(app, &preview);
            app.message = None;
            app.mode = Mode::Confirm(confirm(&preview, title.as_deref()));
            app.dirty = true;
        }
    }
}

/// The pull request's title as the engine will pick it: the request's when it was made
/// at this head, else the work item's.
fn shown_title(app: &App, preview: &Preview) -> Option<String> {
    preview
        .request
        .as_ref()
        .filter(|r| r.head == preview.head)
        .map(|r| r.title.clone())
        .or_else(|| app.session_for(&preview.work_item)?.title.clone())
}

/// The confirmation: what goes out, and the request that ships it.
pub fn confirm(preview: &Preview, title: Option<&str>) -> Confirm {
    let item = short_ref(&preview.work_item);
    let head = short(&preview.head);
    let mut detail = vec![
        format!(
            "⎇ {} at {head} → {}",
            clean_line(&preview.branch),
            clean_line(&preview.base)
        ),
        preview.summary(),
        format!("critic: {}", clean_line(&preview.verdict)),
    ];
    if let Some(pull) = &preview.pull {
        detail.push(format!(
            "pull request #{} is open: {}",
            pull.number, pull.url
        ));
    }
    if preview.dirty > 0 {
        detail.push(format!(
            "{} uncommitted or untracked change{}: the ship will be refused",
            preview.dirty,
            if preview.dirty == 1 { "" } else { "s" }
        ));
    }
    detail.push(format!(
        "Pushes {head} to `{}` and opens its pull request.",
        clean_line(&preview.branch)
    ));
    let prompt = match title {
        Some(title) => format!("Ship {item}: “{}”?", clean_line(title)),
        None => format!("Ship {item}?"),
    };
    Confirm {
        prompt,
        detail: detail.join("\n"),
        request: Request::Ship {
            work_item: preview.work_item.clone(),
            seen_head: preview.head.clone(),
        },
        back: None,
    }
}

/// `d` in the ship confirmation: the diff view, which returns to it when closed.
pub(super) fn diff_from_confirm(app: &mut App, fx: &mut Vec<Effect>) -> bool {
    let Mode::Confirm(confirm) = &app.mode else {
        return false;
    };
    let Request::Ship { work_item, .. } = &confirm.request else {
        return false;
    };
    let item = work_item.clone();
    app.diff_return = Some(confirm.clone());
    super::review::open_at(app, item, None, fx);
    true
}

/// The Questions row's text: `ship the-loop/issue-15 · 3 commits +120 −8 · review: ok ·
/// “Retry with backoff”`.
pub fn row_text(ship: &ShipView) -> String {
    let branch = clean_line(&ship.branch);
    let what = match &ship.preview {
        None => "looking…".to_string(),
        Some(Err(why)) => clean_line(why).into_owned(),
        Some(Ok(p)) => {
            let mut parts = vec![format!("↑{} +{} −{}", p.ahead, p.insertions, p.deletions)];
            parts.push(clean_line(&p.verdict).into_owned());
            if p.dirty > 0 {
                parts.push(format!("{} uncommitted", p.dirty));
            }
            parts.join(" · ")
        }
    };
    format!("ship {branch} · {what} · “{}”", clean_line(&ship.title))
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}
