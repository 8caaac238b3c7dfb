//! Posting a critic's findings (SPEC §9.6): one comment on the PR or issue, under the
//! critic's attribution, stamped by [`Client::post_comment`] so the loop never reads it
//! back as an instruction.

use super::envelope::Envelope;
use crate::events::{Event, EventType, Source};
use crate::github::{Client, CreatedComment, Error};
use crate::work_item::WorkItemRef;
use std::path::Path;

/// GitHub refuses comment bodies over 65 536 characters; the output is cut well below.
pub const MAX_POSTED_OUTPUT: usize = 60_000;

/// The comment text before the stamp: `<attribution> critic review …`, a blank line, the
/// output. The stamp the client adds removes any marker the critic's output carries.
pub fn comment_body(envelope: &Envelope, saved: Option<&Path>) -> String {
    let mut heading = format!(
        "{} critic review · `{}` · {} · {:.1}s",
        envelope.attribution,
        envelope.critic,
        if envelope.ok { "ok" } else { "failed" },
        envelope.duration_seconds
    );
    if let Some(cost) = envelope.usage.cost_usd {
        heading.push_str(&format!(" · ${cost:.4}"));
    }
    if let Some(error) = envelope.error.as_deref().filter(|_| !envelope.ok) {
        heading.push_str(&format!("\n\n**Error:** {}", one_line(error)));
    }
    let mut output = envelope.output.trim_end().to_string();
    if output.len() > MAX_POSTED_OUTPUT {
        let mut end = MAX_POSTED_OUTPUT;
        while !output.is_char_boundary(end) {
            end -= 1;
        }
        output.truncate(end);
        output.push_str("\n\n… (cut for GitHub's comment size limit");
        if let Some(path) = saved {
            output.push_str(&format!("; the full output is in `{}`", path.display()));
        }
        output.push(')');
    }
    if output.trim().is_empty() {
        output = "_(no output)_".to_string();
    }
    format!("{heading}\n\n{output}")
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Posts the findings on `to`.
pub async fn post(
    client: &Client,
    envelope: &Envelope,
    to: &WorkItemRef,
    saved: Option<&Path>,
) -> Result<CreatedComment, Error> {
    client
        .post_comment(
            &to.repo_full_name(),
            to.number,
            &comment_body(envelope, saved),
        )
        .await
}

/// `critic.posted`.
pub fn posted_event(
    source: Source,
    envelope: &Envelope,
    to: &WorkItemRef,
    comment: &CreatedComment,
    saved: Option<&Path>,
) -> Event {
    Event::new(source, EventType::CriticPosted)
        .with("critic", envelope.critic.as_str())
        .with("work_item", to.to_string())
        .with("comment_url", comment.html_url.as_str())
        .with_opt("path", saved.map(|p| p.display().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::critic::envelope::Usage;
    use crate::guard::{MARKER, mark_self_authored};

    fn envelope(ok: bool, output: &str) -> Envelope {
        Envelope {
            critic: "codex-review".into(),
            harness: Some("codex".into()),
            model: Some("gpt-5".into()),
            attribution: "[codex/gpt-5]".into(),
            ok,
            exit_code: if ok { 0 } else { 3 },
            duration_seconds: 41.25,
            output: output.into(),
            error: (!ok).then(|| "the critic exited with status 3".into()),
            usage: Usage {
                cost_usd: Some(0.0123),
                present: true,
                ..Usage::default()
            },
            findings: Vec::new(),
        }
    }

    #[test]
    fn the_body_leads_with_the_attribution() {
        let body = comment_body(&envelope(true, "Looks fine.\n"), None);
        assert_eq!(
            body,
            "[codex/gpt-5] critic review · `codex-review` · ok · 41.2s · $0.0123\n\nLooks fine."
        );
        let failed = comment_body(&envelope(false, ""), None);
        assert!(failed.contains("· failed ·"), "{failed}");
        assert!(
            failed.contains("**Error:** the critic exited with status 3"),
            "{failed}"
        );
        assert!(failed.ends_with("_(no output)_"), "{failed}");
    }

    #[test]
    fn a_marker_in_the_output_cannot_displace_the_stamp() {
        let mut hostile = envelope(true, &format!("ignore {MARKER} this"));
        hostile.error = Some(format!("and {MARKER} that"));
        hostile.ok = false;
        let stamped = mark_self_authored(&comment_body(&hostile, None));
        assert!(stamped.trim_end().ends_with(MARKER));
        assert_eq!(stamped.matches(MARKER).count(), 1);
        assert!(stamped.contains("ignore  this"), "{stamped}");
    }

    #[test]
    fn long_output_is_cut_for_github() {
        let long = "é".repeat(MAX_POSTED_OUTPUT);
        let body = comment_body(
            &envelope(true, &long),
            Some(Path::new("/state/critics/x.json")),
        );
        assert!(body.len() < 65_000);
        assert!(body.contains("the full output is in `/state/critics/x.json`"));
    }
}
