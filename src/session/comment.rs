//! An agent's words on GitHub (SPEC §19.2): `the-loop comment` posts on its session's
//! own work item and nowhere else — a conversation comment, or with `--reply-to` a reply
//! in a review-comment thread of one of the session's own pull requests (the item
//! itself, or the pull request its ship went to: [`SessionRecord::own_pulls`]). One
//! implementation for both ways in: the supervisor's operator socket (the supervisor posts with its own client, the
//! agent holds no token) and the command in-process when no supervisor runs.
//!
//! In order, nothing posted unless every step passes:
//! 1. the body is sanitized ([`guard::sanitize_markdown`]: controls and what GitHub
//!    would not show a reader), must not be empty, and must not hold a secret the-loop
//!    keeps (the token an agent might have read from a file: never posted);
//! 2. under the session record's lock: the item has an open session; the body stamped
//!    with the marker and an attribution line naming the harness (and model when it
//!    reported one, [`guard::attribution_for`]) fits in [`MAX_COMMENT_CHARS`]; the
//!    session has not tried to comment `sessions.commentsPerMinute` times in the last
//!    minute — and if not, this attempt is counted (in the record, so every process
//!    sees every attempt);
//! 3. a `--reply-to` id is a review comment on one of the session's own pull requests
//!    (as the record read in step 2 has them);
//! 4. the GitHub client posts it (stamping it there, as it stamps every comment);
//! 5. `session.commented`.

use crate::events::{Event, EventLog, EventType, Source};
use crate::github::{self, Client};
use crate::guard;
use crate::session::registry::{Registry, SessionRecord};
use crate::work_item::WorkItemRef;
use serde_json::Value;

/// GitHub refuses a comment over this many characters; the stamp counts.
pub const MAX_COMMENT_CHARS: usize = 65_536;

/// The rate limit's window.
const WINDOW_MS: u64 = 60_000;

/// One comment an agent asked to post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentRequest {
    /// The session's own item (`$THE_LOOP_WORK_ITEM`).
    pub work_item: WorkItemRef,
    /// The text as the agent gave it: sanitized and stamped here.
    pub body: String,
    /// A review comment whose thread to reply in.
    pub reply_to: Option<u64>,
}

/// A posted comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commented {
    pub work_item: WorkItemRef,
    /// The comment's `html_url`.
    pub url: String,
    /// Characters posted, stamp included.
    pub chars: usize,
    pub reply_to: Option<u64>,
}

/// Why nothing was posted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommentError {
    #[error(
        "the comment is empty (once control characters and text GitHub would not show are removed): pass the text with --body or --body-file"
    )]
    Empty,
    #[error(
        "the comment is {chars} characters long with the-loop's stamp, and GitHub takes at most {MAX_COMMENT_CHARS}: shorten it or split it (nothing was posted)"
    )]
    TooLong { chars: usize },
    #[error(
        "{item} has no open session: `the-loop comment` posts only on the work item of the session it runs in (nothing was posted)"
    )]
    NoSession { item: WorkItemRef },
    #[error(
        "the session on {item} made {limit} comments (or attempts) in the last minute, its limit (sessions.commentsPerMinute: {limit}); wait {wait_secs}s before commenting again (nothing was posted)"
    )]
    RateLimited {
        item: WorkItemRef,
        limit: u32,
        wait_secs: u64,
    },
    #[error(
        "--reply-to {id}: {why}; reply only in a review thread of this session's own pull requests: {own} (a work item that is an issue has no review threads; nothing was posted)"
    )]
    NotInThread {
        id: u64,
        /// The session's own pull requests, named ([`own_named`]).
        own: String,
        why: String,
    },
    #[error(
        "the comment holds a secret the-loop keeps (the GitHub token or the webhook secret); nothing was posted"
    )]
    Secret,
    #[error(
        "this process runs in the session of {own}: it may comment only on {own}, not on {item} (nothing was posted)"
    )]
    OtherSession { own: String, item: String },
    #[error("the comment could not be posted on {item}: {error}")]
    GitHub { item: WorkItemRef, error: String },
    #[error("the session registry could not be read: {0}")]
    Registry(String),
}

impl CommentError {
    /// Exit 2 for what the caller must change in its text, else 1 (SPEC §1).
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Empty | Self::TooLong { .. } => 2,
            _ => 1,
        }
    }

    /// The operator route's `reason` (the socket client maps it back to an exit code).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Empty => "empty-text",
            Self::TooLong { .. } => "too-long",
            Self::NoSession { .. } => "no-session",
            Self::RateLimited { .. } => "rate-limited",
            Self::NotInThread { .. } => "bad-reply-to",
            Self::OtherSession { .. } => "other-session",
            Self::Secret => "secret",
            Self::GitHub { .. } => "github",
            Self::Registry(_) => "internal",
        }
    }

    /// The operator route's HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            Self::Empty | Self::TooLong { .. } => 400,
            Self::NoSession { .. } => 404,
            Self::OtherSession { .. } => 403,
            Self::RateLimited { .. } => 429,
            Self::NotInThread { .. } | Self::Secret => 422,
            Self::GitHub { .. } => 502,
            Self::Registry(_) => 500,
        }
    }
}

/// The body as it will be posted before its stamp: sanitized, leading blank lines and
/// trailing whitespace gone (indentation of the first line kept: it may be code).
pub fn body_text(raw: &str) -> Result<String, CommentError> {
    let clean = guard::sanitize_markdown(raw);
    let mut text = clean.trim_end();
    while let Some((first, rest)) = text.split_once('\n') {
        if !first.trim().is_empty() {
            break;
        }
        text = rest;
    }
    if text.trim().is_empty() {
        Err(CommentError::Empty)
    } else {
        Ok(text.to_string())
    }
}

/// What posts an agent's comments: the registry its sessions are in, a GitHub client,
/// the event log, and `sessions.commentsPerMinute`.
pub struct Commenter<'a> {
    pub registry: &'a Registry,
    pub github: &'a Client,
    pub events: &'a EventLog,
    pub per_minute: u32,
}

impl Commenter<'_> {
    /// Posts `request` (see the module's steps), or says why not.
    pub async fn comment(&self, request: &CommentRequest) -> Result<Commented, CommentError> {
        let item = &request.work_item;
        let text = body_text(&request.body)?;
        // Resolved (and so registered with `secrets`) before the body is looked at.
        self.github.has_token().await;
        if crate::secrets::redact(&text) != text {
            tracing::warn!(work_item = %item, "an agent's comment held a secret; refused");
            return Err(CommentError::Secret);
        }
        let (attribution, chars, own) = self.admit(item, &text).await?;
        let repo = item.repo_full_name();
        let posted = match request.reply_to {
            None => {
                self.github
                    .post_comment_as(&repo, item.number, &text, &attribution)
                    .await
            }
            Some(id) => {
                let (pull, root) = self.thread_of(item, &own, id).await?;
                self.github
                    .reply_to_review_comment(&repo, pull, root, &text, &attribution)
                    .await
            }
        };
        let posted = posted.map_err(|e| CommentError::GitHub {
            item: item.clone(),
            error: e.to_string(),
        })?;
        let commented = Commented {
            work_item: item.clone(),
            url: posted.html_url,
            chars,
            reply_to: request.reply_to,
        };
        self.record(&commented);
        Ok(commented)
    }

    /// Step 2, under the record's lock: the attribution line, the stamped length, and
    /// the session's own pull requests as the record has them now.
    async fn admit(
        &self,
        item: &WorkItemRef,
        text: &str,
    ) -> Result<(String, usize, Vec<WorkItemRef>), CommentError> {
        let (text, limit) = (text.to_string(), self.per_minute);
        let admitted = self
            .registry
            .update_async(item, move |record| {
                let (attribution, chars) = admit(record, &text, crate::time::unix_millis(), limit)?;
                Ok((attribution, chars, record.own_pulls()))
            })
            .await
            .map_err(|e| CommentError::Registry(e.to_string()))?;
        admitted.unwrap_or_else(|| Err(CommentError::NoSession { item: item.clone() }))
    }

    /// The pull request review comment `id` is on and the first comment of its thread
    /// (GitHub takes replies only to a thread's first comment), when that pull request
    /// is one of `own`, the session's own pull requests.
    async fn thread_of(
        &self,
        item: &WorkItemRef,
        own: &[WorkItemRef],
        id: u64,
    ) -> Result<(u64, u64), CommentError> {
        let not_in_thread = |why: String| CommentError::NotInThread {
            id,
            own: own_named(own),
            why,
        };
        let comment = match self
            .github
            .get_review_comment(&item.repo_full_name(), id)
            .await
        {
            Ok(comment) => comment,
            Err(github::Error::NotFound { .. }) => {
                return Err(not_in_thread(format!(
                    "there is no review comment {id} in {}",
                    item.repo_full_name()
                )));
            }
            Err(e) => {
                return Err(CommentError::GitHub {
                    item: item.clone(),
                    error: e.to_string(),
                });
            }
        };
        // Read from the item's repository, which every own pull request is in.
        match pull_number(&comment) {
            Some(n) if own.iter().any(|pull| pull.number == n) => {
                Ok((n, comment["in_reply_to_id"].as_u64().unwrap_or(id)))
            }
            Some(n) => Err(not_in_thread(format!(
                "that review comment is on pull request #{n}"
            ))),
            None => Err(not_in_thread(
                "GitHub did not say which pull request that review comment is on".into(),
            )),
        }
    }

    /// `session.commented`.
    fn record(&self, commented: &Commented) {
        let event = Event::new(Source::Cli, EventType::SessionCommented)
            .with("work_item", commented.work_item.to_string())
            .with("url", commented.url.as_str())
            .with("chars", commented.chars)
            .with_opt("reply_to", commented.reply_to);
        if let Err(error) = self.events.emit(event) {
            tracing::error!(work_item = %commented.work_item, "the comment was posted but not recorded: {error}");
        }
    }
}

/// Step 2 on the record itself (pure, at `now_ms`): an open session, the stamped body
/// within GitHub's limit, a free slot in the last minute — which this attempt takes.
fn admit(
    record: &mut SessionRecord,
    text: &str,
    now_ms: u64,
    per_minute: u32,
) -> Result<(String, usize), CommentError> {
    if !record.status.is_open() {
        return Err(CommentError::NoSession {
            item: record.work_item.clone(),
        });
    }
    let model = record.reported.as_ref().and_then(|r| r.model.as_deref());
    let attribution = guard::attribution_for(&record.harness, model);
    let chars = guard::stamp_self_authored(text, &attribution)
        .chars()
        .count();
    if chars > MAX_COMMENT_CHARS {
        return Err(CommentError::TooLong { chars });
    }
    // A time after now was written under another clock: it limits nothing.
    record
        .recent_comments
        .retain(|&t| t <= now_ms && now_ms - t < WINDOW_MS);
    let limit = per_minute.max(1);
    if record.recent_comments.len() >= limit as usize {
        let oldest = record
            .recent_comments
            .iter()
            .min()
            .copied()
            .unwrap_or(now_ms);
        let wait_ms = (oldest + WINDOW_MS).saturating_sub(now_ms);
        return Err(CommentError::RateLimited {
            item: record.work_item.clone(),
            limit,
            wait_secs: wait_ms.div_ceil(1000).max(1),
        });
    }
    record.recent_comments.push(now_ms);
    Ok((attribution, chars))
}

/// The session's own pull requests as a refusal names them: the work item, then the
/// pull request shipping went to.
fn own_named(own: &[WorkItemRef]) -> String {
    let mut named = own.iter().enumerate().map(|(i, pull)| {
        let what = if i == 0 { "its work item" } else { "shipped" };
        format!("{pull} ({what})")
    });
    let first = named.next().unwrap_or_default();
    named.fold(first, |all, next| format!("{all} or {next}"))
}

/// The number of the pull request a review comment is on (its `pull_request_url` ends
/// `/pulls/N`).
fn pull_number(comment: &Value) -> Option<u64> {
    let url = comment["pull_request_url"].as_str()?;
    let mut segments = url.trim_end_matches('/').rsplit('/');
    let number = segments.next()?.parse().ok()?;
    (segments.next()? == "pulls").then_some(number)
}

#[cfg(test)]
#[path = "comment_tests.rs"]
mod tests;
