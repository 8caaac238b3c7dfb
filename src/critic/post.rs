//! Posting a critic's round (SPEC §9.6, §21.4). On a pull request: one review
//! (`event: COMMENT`) whose body is the attribution and the general output, with a line
//! comment for each finding on a line of the pull request's diff and the others listed
//! in the body. On an issue: one comment, today's. Every text is stamped by the client
//! ([`Client::post_comment`], [`Client::create_review`]) so the loop never reads it back
//! as an instruction, and made inert first ([`crate::guard::sanitize_markdown`]: no
//! controls, nothing hidden from a reader).

use super::envelope::Envelope;
use super::findings::Finding;
use crate::events::{Event, EventType, Source};
use crate::github::{Client, Error, LineComment, models};
use crate::work_item::WorkItemRef;
use std::path::Path;

/// GitHub refuses comment bodies over 65 536 characters; the output is cut well below.
pub const MAX_POSTED_OUTPUT: usize = 60_000;
/// How much of a body the findings listed in it may take (each cut to one line).
pub const MAX_LISTED_FINDINGS: usize = 15_000;
/// How long one listed finding's message may be in a body.
const LISTED_MESSAGE_CHARS: usize = 300;

/// What was posted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posted {
    pub html_url: String,
    /// A review on a pull request (else one comment on an issue).
    pub review: bool,
    /// The findings posted as line comments of the review.
    pub comments: usize,
}

/// The comment text before the stamp: `<attribution> critic review …`, a blank line, the
/// output, then `listed` findings (those not posted on their lines). Inert: the stamp
/// the client adds removes any marker the critic's output carries.
pub fn comment_body(envelope: &Envelope, saved: Option<&Path>, listed: &[&Finding]) -> String {
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
    let section = findings_section(listed);
    let budget = MAX_POSTED_OUTPUT.saturating_sub(section.len());
    let mut output = envelope.output.trim_end().to_string();
    if output.len() > budget {
        let mut end = budget;
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
    crate::guard::sanitize_markdown(&format!("{heading}\n\n{output}{section}")).into_owned()
}

/// `**Findings**` and one line per finding (`path:line` and its message, cut), within
/// [`MAX_LISTED_FINDINGS`]; empty without findings.
fn findings_section(listed: &[&Finding]) -> String {
    if listed.is_empty() {
        return String::new();
    }
    let mut section = String::from("\n\n**Findings**\n");
    for (i, finding) in listed.iter().enumerate() {
        let mut message: String = one_line(&finding.message)
            .chars()
            .take(LISTED_MESSAGE_CHARS)
            .collect();
        if finding.message.chars().count() > LISTED_MESSAGE_CHARS {
            message.push('…');
        }
        let line = format!(
            "- `{}` {}: {message}\n",
            one_line(&finding.place()).replace('`', "'"),
            finding.severity.as_str()
        );
        if section.len() + line.len() > MAX_LISTED_FINDINGS {
            section.push_str(&format!("- … and {} more\n", listed.len() - i));
            break;
        }
        section.push_str(&line);
    }
    section
}

/// A line comment's text: who says it, how serious, the message.
pub fn line_comment_body(envelope: &Envelope, finding: &Finding) -> String {
    let text = format!(
        "{} critic `{}` · **{}**\n\n{}",
        envelope.attribution,
        envelope.critic,
        finding.severity.as_str(),
        finding.message
    );
    crate::guard::sanitize_markdown(&text).into_owned()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Posts the round on `to`: a review when it is a pull request (findings on lines of
/// its diff as line comments), else one comment.
pub async fn post(
    client: &Client,
    envelope: &Envelope,
    to: &WorkItemRef,
    saved: Option<&Path>,
) -> Result<Posted, Error> {
    let repo = to.repo_full_name();
    let item = client.get_issue(&repo, to.number).await?;
    if !models::is_pull_request(&item) {
        let listed: Vec<&Finding> = envelope.findings.iter().collect();
        let comment = client
            .post_comment(&repo, to.number, &comment_body(envelope, saved, &listed))
            .await?;
        return Ok(Posted {
            html_url: comment.html_url,
            review: false,
            comments: 0,
        });
    }
    let diff = client.pull_diff_lines(&repo, to.number).await?;
    let (inline, listed): (Vec<&Finding>, Vec<&Finding>) = envelope
        .findings
        .iter()
        .partition(|f| diff.contains(&f.path, f.line));
    let comments: Vec<LineComment> = inline
        .iter()
        .map(|f| {
            // A finding on several lines takes them all when they sit in one hunk.
            let end = f
                .end_line
                .filter(|end| *end > f.line && diff.contains_range(&f.path, f.line, *end));
            LineComment {
                path: f.path.clone(),
                line: end.unwrap_or(f.line),
                start_line: end.map(|_| f.line),
                body: line_comment_body(envelope, f),
            }
        })
        .collect();
    let body = comment_body(envelope, saved, &listed);
    let review = match client
        .create_review(&repo, to.number, &body, &comments)
        .await
    {
        // GitHub took none of it (the diff moved since it was read): once more, with
        // every finding in the body.
        Err(e) if e.status() == Some(422) && !comments.is_empty() => {
            tracing::warn!(error = %e, "review with line comments refused; posting it without them");
            let all: Vec<&Finding> = envelope.findings.iter().collect();
            let body = comment_body(envelope, saved, &all);
            let review = client.create_review(&repo, to.number, &body, &[]).await?;
            return Ok(Posted {
                html_url: review.html_url,
                review: true,
                comments: 0,
            });
        }
        other => other?,
    };
    Ok(Posted {
        html_url: review.html_url,
        review: true,
        comments: comments.len(),
    })
}

/// `critic.posted`.
pub fn posted_event(
    source: Source,
    envelope: &Envelope,
    to: &WorkItemRef,
    posted: &Posted,
    saved: Option<&Path>,
) -> Event {
    Event::new(source, EventType::CriticPosted)
        .with("critic", envelope.critic.as_str())
        .with("work_item", to.to_string())
        .with("comment_url", posted.html_url.as_str())
        .with("review", posted.review)
        .with("comments", posted.comments)
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
        let body = comment_body(&envelope(true, "Looks fine.\n"), None, &[]);
        assert_eq!(
            body,
            "[codex/gpt-5] critic review · `codex-review` · ok · 41.2s · $0.0123\n\nLooks fine."
        );
        let failed = comment_body(&envelope(false, ""), None, &[]);
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
        let stamped = mark_self_authored(&comment_body(&hostile, None, &[]));
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
            &[],
        );
        assert!(body.len() < 65_000);
        assert!(body.contains("the full output is in `/state/critics/x.json`"));
    }
}
