use super::*;
use crate::events::Level;
use crate::github::sim::{Fault, IssueSpec, PullSpec, SimGithub, SimHandle};
use crate::guard::{MARKER, is_self_authored};
use crate::paths::StatePaths;
use crate::session::Status;

const TOKEN: &str = "ghp_commenttesttoken_0123456789abcdef";

/// Issue #15 and PR #16 (a review comment on each of #16 and #17) on a simulator, a
/// client for it, a registry and an event log in a private directory.
struct World {
    sim: SimHandle,
    client: Client,
    registry: Registry,
    events: EventLog,
    /// A review comment on #16, and a reply in its thread.
    on_16: (u64, u64),
    /// A review comment on #17.
    on_17: u64,
    _dir: tempfile::TempDir,
}

impl World {
    async fn new() -> Self {
        let sim = SimGithub::start().await.unwrap();
        sim.require_token(Some(TOKEN));
        sim.add_issue("octo/repo", IssueSpec::new("Retries").number(15))
            .unwrap();
        for n in [16, 17] {
            sim.add_pull("octo/repo", PullSpec::new("Backoff", "b").number(n))
                .unwrap();
        }
        let first = sim
            .add_review_comment("octo/repo", 16, "alice", "src/a.rs", 3, "Why?")
            .unwrap();
        let client = Client::builder(&sim.base_url())
            .token(Some(TOKEN))
            .retry_policy(crate::github::RetryPolicy::none())
            .build()
            .unwrap();
        let reply = client
            .reply_to_review_comment("octo/repo", 16, first, "Because.", "x")
            .await
            .unwrap()
            .id;
        let on_17 = sim
            .add_review_comment("octo/repo", 17, "alice", "src/b.rs", 9, "Hm.")
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        let events = EventLog::open(&paths);
        let registry = Registry::new(&paths, events.clone(), Source::Cli);
        for n in [15, 16] {
            registry
                .put(&SessionRecord::new(
                    &WorkItemRef::new("octo", "repo", n),
                    "claude",
                    dir.path().to_path_buf(),
                ))
                .unwrap();
        }
        Self {
            sim,
            client,
            registry,
            events,
            on_16: (first, reply),
            on_17,
            _dir: dir,
        }
    }

    fn commenter(&self, per_minute: u32) -> Commenter<'_> {
        Commenter {
            registry: &self.registry,
            github: &self.client,
            events: &self.events,
            per_minute,
        }
    }

    async fn comment(&self, n: u64, body: &str) -> Result<Commented, CommentError> {
        self.commenter(6).comment(&request(n, body, None)).await
    }

    fn events(&self) -> Vec<Event> {
        std::fs::read_to_string(self.events.path())
            .unwrap_or_default()
            .lines()
            .map(|l| crate::events::parse_line(l).unwrap())
            .filter(|e| e.event == EventType::SessionCommented)
            .collect()
    }

    /// Every write request the simulator saw.
    fn posts(&self) -> usize {
        self.sim
            .requests()
            .iter()
            .filter(|r| r.method == "POST")
            .count()
    }
}

fn request(n: u64, body: &str, reply_to: Option<u64>) -> CommentRequest {
    CommentRequest {
        work_item: WorkItemRef::new("octo", "repo", n),
        body: body.into(),
        reply_to,
    }
}

#[test]
fn bodies_are_sanitized_and_must_say_something() {
    assert_eq!(
        body_text("\n \n  indented code\nnext  \n\n").unwrap(),
        "  indented code\nnext"
    );
    assert_eq!(
        body_text("ok\x1b[201~\u{202E}\u{E0041} <!-- hidden --> done\r\n").unwrap(),
        "ok[201~  done"
    );
    for empty in [
        "",
        " \n\t",
        "\u{200B}\u{E0041}",
        "<!-- only hidden -->",
        "\x1b\x07",
    ] {
        assert_eq!(body_text(empty), Err(CommentError::Empty), "{empty:?}");
    }
}

#[test]
fn the_record_admits_within_the_limits_and_counts_each_attempt() {
    let item = WorkItemRef::new("octo", "repo", 15);
    let mut record = SessionRecord::new(&item, "claude", "/w".into());
    let now = 1_000_000_000;
    for i in 0..3 {
        let (line, chars) = admit(&mut record, "hi", now + i, 3).unwrap();
        assert_eq!(line, "🤖 _posted by the-loop for claude_");
        assert_eq!(
            chars,
            guard::stamp_self_authored("hi", &line).chars().count()
        );
    }
    let refused = admit(&mut record, "hi", now + 1_000, 3).unwrap_err();
    assert_eq!(
        refused,
        CommentError::RateLimited {
            item: item.clone(),
            limit: 3,
            wait_secs: 59
        }
    );
    assert!(
        refused
            .to_string()
            .contains("3 comments (or attempts) in the last minute"),
        "{refused}"
    );
    assert!(refused.to_string().contains("wait 59s"), "{refused}");
    assert_eq!(record.recent_comments.len(), 3, "a refusal takes no slot");
    // A minute after the first, one slot is free again; older times are forgotten.
    admit(&mut record, "hi", now + WINDOW_MS, 3).unwrap();
    assert_eq!(record.recent_comments, [now + 1, now + 2, now + WINDOW_MS]);
    // Times from a clock ahead of this one limit nothing.
    record.recent_comments = vec![now * 2; 3];
    admit(&mut record, "hi", now, 3).unwrap();
    assert_eq!(record.recent_comments, [now]);

    record.status = Status::Closed;
    assert_eq!(
        admit(&mut record, "hi", now, 3),
        Err(CommentError::NoSession { item: item.clone() })
    );
    record.status = Status::Paused;
    assert!(
        admit(&mut record, "hi", now, 3).is_ok(),
        "a paused agent still runs"
    );
}

/// GitHub's limit counts the stamp: a body that fits only without it is refused, and a
/// refused body takes no slot.
#[test]
fn the_limit_counts_the_stamp() {
    let mut record = SessionRecord::new(&WorkItemRef::new("o", "r", 1), "claude", "/w".into());
    let stamp = guard::stamp_self_authored("x", &guard::attribution_for("claude", None))
        .chars()
        .count()
        - 1;
    let fits = "é".repeat(MAX_COMMENT_CHARS - stamp);
    assert_eq!(
        admit(&mut record, &fits, 0, 6).unwrap().1,
        MAX_COMMENT_CHARS
    );
    let over = format!("{fits}x");
    assert_eq!(
        admit(&mut record, &over, 0, 6),
        Err(CommentError::TooLong {
            chars: MAX_COMMENT_CHARS + 1
        })
    );
    assert_eq!(record.recent_comments.len(), 1);
}

#[test]
fn the_model_the_harness_reported_is_named_cleaned() {
    let mut record = SessionRecord::new(&WorkItemRef::new("o", "r", 1), "claude", "/w".into());
    let (reported, _) = crate::session::hooks::state::apply(
        None,
        "claude",
        "SessionStart",
        crate::session::hooks::state::Signal::SessionStarted {
            conversation: None,
            model: Some("claude-opus-4-1_) **and more**".into()),
        },
        "2026-12-03T10:00:00Z",
    );
    record.reported = Some(reported);
    let (line, _) = admit(&mut record, "hi", 0, 6).unwrap();
    assert_eq!(
        line,
        "🤖 _posted by the-loop for claude (claude-opus-4-1andmore)_"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_one_marked_comment_on_the_sessions_item_and_records_it() {
    let w = World::new().await;
    let body = format!("Fixed in 3f2a.\n{MARKER}\n\u{202E}bidi\u{E0041} and \x1b[2Jescapes.");
    let commented = w.comment(15, &body).await.unwrap();

    let posted = w.sim.comments_on("octo/repo", 15);
    assert_eq!(posted.len(), 1);
    let text = &posted[0].body;
    assert!(is_self_authored(Some(text)));
    assert_eq!(text.matches(MARKER).count(), 1, "{text}");
    assert_eq!(
        text.as_str(),
        format!(
            "Fixed in 3f2a.\n\nbidi and [2Jescapes.\n\n🤖 _posted by the-loop for claude_\n{MARKER}\n"
        )
    );
    assert_eq!(commented.chars, text.chars().count());
    assert!(
        commented
            .url
            .ends_with(&format!("#issuecomment-{}", posted[0].id))
    );

    let events = w.events();
    assert_eq!(events.len(), 1);
    let event = &events[0];
    assert_eq!(event.level, Level::Info);
    assert_eq!(event.source, Source::Cli);
    assert_eq!(event.work_item(), Some("github:octo/repo#15"));
    assert_eq!(event.str_field("url"), Some(commented.url.as_str()));
    assert_eq!(event.fields["chars"], commented.chars);
    assert!(event.fields.get("reply_to").is_none());
    let line = std::fs::read_to_string(w.events.path()).unwrap();
    assert!(
        !line.contains(TOKEN) && !line.contains("Fixed in"),
        "{line}"
    );
}

/// A hostile agent names another item: one without a session, or a closed one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_an_item_with_an_open_session_is_commented_on() {
    let w = World::new().await;
    let elsewhere = WorkItemRef::new("evil", "other", 7);
    let err = w
        .commenter(6)
        .comment(&CommentRequest {
            work_item: elsewhere.clone(),
            body: "spam".into(),
            reply_to: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err, CommentError::NoSession { item: elsewhere });
    assert_eq!(err.exit_code(), 1);
    assert_eq!(
        w.comment(17, "spam").await.unwrap_err().reason(),
        "no-session"
    );
    w.registry
        .update(&WorkItemRef::new("octo", "repo", 15), |r| {
            r.status = Status::Closed
        })
        .unwrap();
    assert_eq!(
        w.comment(15, "late").await.unwrap_err().reason(),
        "no-session"
    );
    assert_eq!(w.posts(), 1, "only the setup's reply was posted");
    assert!(w.events().is_empty());
    let made: Vec<String> = std::fs::read_dir(w.registry.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("evil") || name.contains("17"))
        .collect();
    assert!(
        made.is_empty(),
        "nothing is made for a stranger's item: {made:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_is_cut_off_at_the_limit() {
    let w = World::new().await;
    let commenter = w.commenter(2);
    for i in 0..2 {
        commenter
            .comment(&request(15, &format!("update {i}"), None))
            .await
            .unwrap();
    }
    for _ in 0..3 {
        let err = commenter
            .comment(&request(15, "more", None))
            .await
            .unwrap_err();
        assert!(
            matches!(err, CommentError::RateLimited { limit: 2, .. }),
            "{err}"
        );
        assert_eq!((err.exit_code(), err.reason()), (1, "rate-limited"));
    }
    assert_eq!(w.sim.comments_on("octo/repo", 15).len(), 2);
    // The limit is the session's: another session comments on.
    commenter.comment(&request(16, "fine", None)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_lands_in_the_thread_of_a_review_comment_on_this_pull_request() {
    let w = World::new().await;
    let (first, reply) = w.on_16;
    let commenter = w.commenter(6);
    let commented = commenter
        .comment(&request(16, "Done: seeded.", Some(first)))
        .await
        .unwrap();
    // Naming a reply in the thread replies to the thread.
    commenter
        .comment(&request(16, "And tested.", Some(reply)))
        .await
        .unwrap();
    let thread = w.sim.review_comments_on("octo/repo", 16);
    assert_eq!(thread.len(), 4, "{thread:#?}");
    for posted in &thread[2..] {
        assert_eq!(posted.in_reply_to, Some(first));
        assert_eq!(posted.body.matches(MARKER).count(), 1);
        assert!(posted.body.trim_end().ends_with(MARKER));
    }
    assert!(
        commented
            .url
            .ends_with(&format!("#discussion_r{}", thread[2].id))
    );
    assert!(w.sim.comments_on("octo/repo", 16).is_empty());
    let events = w.events();
    assert_eq!(events[0].fields["reply_to"], first);
    assert_eq!(events[1].fields["reply_to"], reply);
}

/// An id of another pull request's review comment, an unknown id, or any id for an
/// issue: refused, nothing posted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_to_anything_but_this_pull_requests_threads_is_refused() {
    let w = World::new().await;
    let posts = w.posts();
    let commenter = w.commenter(6);
    let cases = [
        (16, w.on_17, "is on pull request #17"),
        (
            16,
            999_999,
            "there is no review comment 999999 in octo/repo",
        ),
        (15, w.on_16.0, "an issue has no review threads"),
        (15, w.on_17, "is on pull request #17"),
    ];
    for (n, id, says) in cases {
        let err = commenter
            .comment(&request(n, "hijack", Some(id)))
            .await
            .unwrap_err();
        assert_eq!(err.reason(), "bad-reply-to", "{err}");
        assert!(err.to_string().contains(says), "{err}");
        assert_eq!(err.exit_code(), 1);
    }
    assert_eq!(w.posts(), posts, "nothing posted");
    assert_eq!(w.sim.review_comments_on("octo/repo", 17).len(), 1);
    assert!(w.events().is_empty());
}

/// A session on an issue owns the pull request its ship went to (`pullRequest`): a
/// reply in that pull request's thread lands there, stamped once; a thread on a pull
/// request that only says it closes the issue (a stranger's text) is refused, and the
/// refusal names the pull requests the session does own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issue_session_replies_in_the_threads_of_the_pull_request_it_shipped() {
    let w = World::new().await;
    let stranger = w
        .sim
        .add_pull(
            "octo/repo",
            PullSpec::new("Totally a fix", "issue-15-fix")
                .number(18)
                .author("mallory")
                .body("Closes #15\n\nFixes #15"),
        )
        .unwrap();
    let on_stranger = w
        .sim
        .add_review_comment(
            "octo/repo",
            stranger,
            "mallory",
            "src/c.rs",
            1,
            "Reply here",
        )
        .unwrap();
    let item = WorkItemRef::new("octo", "repo", 15);
    w.registry
        .update(&item, |r| {
            r.pull_request = Some(crate::session::ship::LinkedPull {
                number: 16,
                url: "https://github.com/octo/repo/pull/16".into(),
                draft: true,
            });
        })
        .unwrap();
    let posts = w.posts();
    let commenter = w.commenter(6);

    for (id, says) in [(w.on_17, "#17"), (on_stranger, "#18")] {
        let err = commenter
            .comment(&request(15, "hijack", Some(id)))
            .await
            .unwrap_err();
        assert_eq!(err.reason(), "bad-reply-to", "{err}");
        let said = err.to_string();
        assert!(
            said.contains(&format!("is on pull request {says}")),
            "{said}"
        );
        assert!(
            said.contains("github:octo/repo#15 (its work item) or github:octo/repo#16 (shipped)"),
            "{said}"
        );
    }
    assert_eq!(w.posts(), posts, "nothing posted");

    let (first, reply) = w.on_16;
    let commented = commenter
        .comment(&request(15, "Seeded, see 3f2a.", Some(reply)))
        .await
        .unwrap();
    let thread = w.sim.review_comments_on("octo/repo", 16);
    let posted = thread.last().unwrap();
    assert_eq!(posted.in_reply_to, Some(first));
    assert_eq!(posted.body.matches(MARKER).count(), 1);
    assert!(
        commented
            .url
            .ends_with(&format!("#discussion_r{}", posted.id))
    );
    assert_eq!(commented.work_item, item);
    assert!(w.sim.comments_on("octo/repo", 15).is_empty());
    assert_eq!(w.sim.review_comments_on("octo/repo", 18).len(), 1);
    assert_eq!(w.posts(), posts + 1);
}

/// An agent that read the operator's token somewhere cannot post it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_holding_the_token_is_refused() {
    let w = World::new().await;
    let err = w
        .comment(15, &format!("found this: {TOKEN} in ~/.config/gh"))
        .await
        .unwrap_err();
    assert_eq!((err, w.posts()), (CommentError::Secret, 1));
    assert!(w.sim.comments_on("octo/repo", 15).is_empty());
    let record = w
        .registry
        .get(&WorkItemRef::new("octo", "repo", 15))
        .unwrap()
        .unwrap();
    assert!(record.recent_comments.is_empty(), "no slot taken");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_github_failure_is_an_error_without_the_token() {
    let w = World::new().await;
    w.sim.fail_next(1, Fault::Status(502));
    let err = w.comment(15, "hello").await.unwrap_err();
    assert_eq!((err.reason(), err.exit_code()), ("github", 1));
    assert!(err.to_string().contains("502"), "{err}");
    assert!(!err.to_string().contains(TOKEN));
    assert!(w.events().is_empty());
    // Text refused before GitHub is asked: exit 2.
    let err = w.comment(15, " \u{200B} ").await.unwrap_err();
    assert_eq!((err.reason(), err.exit_code()), ("empty-text", 2));
}
