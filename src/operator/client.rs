//! `the-loop reply` / `ask` / `comment` talking to the running supervisor over its operator
//! socket (reqwest over a Unix socket). [`ClientError::NotListening`] means nothing was
//! sent — no supervisor, or one that serves no socket (`run --once`) — and the command
//! works in-process instead; any other error came after the request went out.

use super::api::{ASK_PATH, CLIENT_HEADER, COMMENT_PATH, MAX_BODY_BYTES, REPLY_PATH};
use crate::paths::StatePaths;
use crate::session::ask::Ask;
use crate::session::comment::{CommentRequest, Commented};
use crate::session::reply::{Replied, ReplyRequest, Report, Via};
use crate::tmux::PaneId;
use crate::work_item::WorkItemRef;
use serde::Deserialize;
use serde_json::{Value, json};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A reply may wait for another delivery's paste lock (30 s) and then post its report.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("no supervisor answers on {}", path.display())]
    NotListening { path: PathBuf },
    #[error(
        "the supervisor did not answer ({error}); what became of the request is unknown — see `the-loop events`"
    )]
    NoAnswer { error: String },
    /// The session is held (SPEC §18.3): the reply is queued as `id`.
    #[error("{error}")]
    Held {
        work_item: WorkItemRef,
        id: String,
        error: String,
    },
    /// The supervisor refused; `reason` is the API's (`no-session`, `bad-ref`, …).
    #[error("{error}")]
    Refused {
        status: u16,
        reason: String,
        error: String,
    },
}

impl ClientError {
    /// Exit 2 for what the caller got wrong (bad ref, empty text), else 1 (SPEC §1).
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Refused { reason, .. }
                if matches!(
                    reason.as_str(),
                    "bad-ref" | "empty-text" | "bad-question" | "bad-request" | "too-long"
                ) =>
            {
                2
            }
            _ => 1,
        }
    }
}

/// What the supervisor did with a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteAsk {
    pub question_id: String,
    /// The comment's URL, or why it was not posted (the question is recorded either way).
    pub comment: Result<String, String>,
}

/// A client of one state root's operator socket.
pub struct OperatorClient {
    http: reqwest::Client,
    path: PathBuf,
}

impl OperatorClient {
    /// `None` when there is no socket file (no supervisor has served one here), or
    /// when it belongs to another user: a reply's text goes only to our own supervisor.
    pub fn new(paths: &StatePaths) -> Option<Self> {
        let path = paths.operator_socket();
        let meta = std::fs::symlink_metadata(&path).ok()?;
        let ours = nix::unistd::getuid().as_raw();
        if meta.uid() != ours || !meta.file_type().is_socket() {
            tracing::warn!(
                path = %path.display(),
                owner = meta.uid(),
                "not our operator socket; working in-process"
            );
            return None;
        }
        Self::at(&path).ok()
    }

    /// A client for the socket at `path` (which need not exist yet).
    pub fn at(path: &Path) -> Result<Self, reqwest::Error> {
        // reqwest is built without a default TLS provider (decision 0001); plain HTTP
        // over the socket never uses it, but the builder wants one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .unix_socket(path)
            .connect_timeout(Duration::from_secs(5))
            .timeout(REQUEST_TIMEOUT)
            .build()?;
        Ok(Self {
            http,
            path: path.to_path_buf(),
        })
    }

    pub async fn reply(&self, request: &ReplyRequest) -> Result<Replied, ClientError> {
        let body = json!({
            "ref": request.work_item,
            "text": request.text,
            "actor": request.actor,
            "comment": request.comment,
            "overBudget": request.over_budget,
        });
        let answer = self
            .post(REPLY_PATH, &body, request.via == Via::Cli)
            .await?;
        if answer["held"] == true {
            let work_item = answer["work_item"].as_str().and_then(|w| w.parse().ok());
            let id = answer["reply_id"].as_str().map(str::to_string);
            if let (Some(work_item), Some(id)) = (work_item, id) {
                return Err(ClientError::Held {
                    work_item,
                    id,
                    error: answer["error"].as_str().unwrap_or("held").to_string(),
                });
            }
        }
        replied(&answer).ok_or_else(|| ClientError::NoAnswer {
            error: format!("an answer this the-loop does not understand: {answer}"),
        })
    }

    pub async fn ask(&self, request: &Ask) -> Result<RemoteAsk, ClientError> {
        let body = json!({
            "ref": request.work_item.to_string(),
            "question": request.question,
            "session": request.session.as_ref().map(ToString::to_string),
        });
        let answer = self.post(ASK_PATH, &body, true).await?;
        let question_id = answer["question_id"].as_str().map(str::to_string);
        let comment = match (answer["comment_url"].as_str(), answer["error"].as_str()) {
            (Some(url), _) => Ok(url.to_string()),
            (None, error) => Err(error.unwrap_or("not posted").to_string()),
        };
        match question_id {
            Some(question_id) => Ok(RemoteAsk {
                question_id,
                comment,
            }),
            None => Err(ClientError::NoAnswer {
                error: format!("an answer this the-loop does not understand: {answer}"),
            }),
        }
    }

    /// Posts an agent's comment through the supervisor (SPEC §19.2).
    pub async fn comment(&self, request: &CommentRequest) -> Result<Commented, ClientError> {
        let body = json!({
            "ref": request.work_item.to_string(),
            "body": request.body,
            "reply_to": request.reply_to,
        });
        let answer = self.post(COMMENT_PATH, &body, true).await?;
        commented(&answer).ok_or_else(|| ClientError::NoAnswer {
            error: format!("an answer this the-loop does not understand: {answer}"),
        })
    }

    /// Asks the supervisor to record this host's session's ship request (`the-loop
    /// propose` on another host, `api::PROPOSE_PATH`).
    pub async fn propose(
        &self,
        item: &WorkItemRef,
        proposal: &crate::session::ship::Proposal,
    ) -> Result<crate::session::ship::Proposed, ClientError> {
        let body = json!({
            "ref": item.to_string(),
            "title": proposal.title,
            "body": proposal.body,
            "draft": proposal.draft,
        });
        let answer = self.post(super::api::PROPOSE_PATH, &body, true).await?;
        let text = |key: &str| answer.get(key).and_then(Value::as_str).map(str::to_string);
        match (
            text("request_id"),
            text("branch"),
            text("head"),
            text("summary"),
        ) {
            (Some(id), Some(branch), Some(head), Some(summary)) => {
                Ok(crate::session::ship::Proposed {
                    id,
                    branch,
                    head,
                    summary,
                })
            }
            _ => Err(ClientError::NoAnswer {
                error: format!("an answer this the-loop does not understand: {answer}"),
            }),
        }
    }

    /// Sends this host's session's usage, as the-loop here keeps it, to the supervisor
    /// (`api::USAGE_PATH`).
    pub async fn usage(
        &self,
        item: &WorkItemRef,
        usage: &crate::usage::SessionUsage,
    ) -> Result<(), ClientError> {
        let body = json!({"ref": item.to_string(), "usage": usage});
        self.post(super::api::USAGE_PATH, &body, false)
            .await
            .map(|_| ())
    }

    /// Sends a hook report of this host's session `item` back to the supervisor
    /// (`api::HOOK_PATH`).
    pub async fn hook(
        &self,
        item: &WorkItemRef,
        reporter: crate::session::hooks::Reporter,
        payload: &[u8],
    ) -> Result<(), ClientError> {
        let body = json!({
            "ref": item.to_string(),
            "harness": reporter.as_str(),
            "payload": String::from_utf8_lossy(payload),
        });
        self.post(super::api::HOOK_PATH, &body, false)
            .await
            .map(|_| ())
    }

    /// POSTs `body`; the JSON of a 200, or the refusal. A body over the route's limit is
    /// refused here, before anything is sent: the supervisor would answer 413 and close
    /// the socket while the rest was still being written, so the caller could see a
    /// broken pipe instead of the reason.
    async fn post(&self, path: &str, body: &Value, cli: bool) -> Result<Value, ClientError> {
        let bytes = serde_json::to_vec(body).map_err(|e| ClientError::NoAnswer {
            error: format!("cannot encode the request: {e}"),
        })?;
        if bytes.len() > MAX_BODY_BYTES {
            return Err(ClientError::Refused {
                status: 413,
                reason: "bad-request".into(),
                error: format!(
                    "the request is {} bytes, over the supervisor's limit of {MAX_BODY_BYTES}; send a shorter text",
                    bytes.len()
                ),
            });
        }
        let mut request = self
            .http
            .post(format!("http://localhost{path}"))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(bytes);
        if cli {
            request = request.header(CLIENT_HEADER, "cli");
        }
        let response = request.send().await.map_err(|e| {
            if e.is_connect() {
                ClientError::NotListening {
                    path: self.path.clone(),
                }
            } else {
                ClientError::NoAnswer {
                    error: e.to_string(),
                }
            }
        })?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| ClientError::NoAnswer {
            error: e.to_string(),
        })?;
        // A refusal is one whatever its body says: only a success must be understood.
        let answer: Value = match serde_json::from_slice(&body) {
            Ok(answer) => answer,
            Err(_) if !status.is_success() => Value::Null,
            Err(e) => {
                return Err(ClientError::NoAnswer {
                    error: format!("an answer that is not JSON: {e}"),
                });
            }
        };
        if status.is_success() {
            return Ok(answer);
        }
        #[derive(Deserialize)]
        struct Refusal {
            error: String,
            #[serde(default)]
            reason: String,
        }
        let refusal: Refusal = serde_json::from_value(answer).unwrap_or_else(|_| Refusal {
            error: format!("the supervisor answered {status}"),
            reason: String::new(),
        });
        Err(ClientError::Refused {
            status: status.as_u16(),
            reason: refusal.reason,
            error: refusal.error,
        })
    }
}

/// The reply route's success answer, as the in-process path returns it.
fn replied(answer: &Value) -> Option<Replied> {
    let work_item: WorkItemRef = answer["work_item"].as_str()?.parse().ok()?;
    let pane = PaneId::parse(answer["pane"].as_str()?).ok()?;
    let report = match (answer["comment_url"].as_str(), answer["warning"].as_str()) {
        (Some(url), _) => Report::Posted {
            url: url.to_string(),
        },
        (None, Some(error)) => Report::Failed {
            error: error.to_string(),
        },
        (None, None) => Report::Skipped,
    };
    Some(Replied {
        work_item,
        pane,
        bytes: usize::try_from(answer["bytes"].as_u64()?).ok()?,
        actor: answer["actor"].as_str()?.to_string(),
        report,
    })
}

/// The comment route's success answer, as the in-process path returns it.
fn commented(answer: &Value) -> Option<Commented> {
    Some(Commented {
        work_item: answer["work_item"].as_str()?.parse().ok()?,
        url: answer["url"].as_str()?.to_string(),
        chars: usize::try_from(answer["chars"].as_u64()?).ok()?,
        reply_to: answer["reply_to"].as_u64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_refusals_exit_2_and_the_rest_1() {
        let refused = |reason: &str| ClientError::Refused {
            status: 400,
            reason: reason.into(),
            error: "x".into(),
        };
        assert_eq!(refused("bad-ref").exit_code(), 2);
        assert_eq!(refused("empty-text").exit_code(), 2);
        assert_eq!(refused("too-long").exit_code(), 2);
        assert_eq!(refused("rate-limited").exit_code(), 1);
        assert_eq!(refused("no-session").exit_code(), 1);
        assert_eq!(refused("bad-reply-to").exit_code(), 1);
        assert_eq!(refused("session-paused").exit_code(), 1);
        assert_eq!(refused("").exit_code(), 1);
        let none = ClientError::NoAnswer { error: "x".into() };
        assert_eq!(none.exit_code(), 1);
    }

    #[test]
    fn a_reply_answer_reads_back_as_the_in_process_result() {
        let answer = json!({
            "ok": true, "work_item": "github:octo/repo#15", "pane": "%3", "bytes": 42,
            "actor": "alice", "comment_posted": false, "warning": "the report failed",
        });
        let back = replied(&answer).unwrap();
        assert_eq!(back.work_item, WorkItemRef::new("octo", "repo", 15));
        assert_eq!(back.pane.to_string(), "%3");
        assert_eq!(
            back.report,
            Report::Failed {
                error: "the report failed".into()
            }
        );
        assert!(replied(&json!({"ok": true})).is_none());
    }

    #[test]
    fn a_comment_answer_reads_back_as_the_in_process_result() {
        let answer = json!({
            "ok": true, "work_item": "github:octo/repo#16",
            "url": "https://github.com/octo/repo/pull/16#discussion_r7", "chars": 120,
            "reply_to": 5,
        });
        let back = commented(&answer).unwrap();
        assert_eq!(back.work_item, WorkItemRef::new("octo", "repo", 16));
        assert_eq!((back.chars, back.reply_to), (120, Some(5)));
        let plain = json!({"work_item": "github:o/r#1", "url": "u", "chars": 1, "reply_to": null});
        assert_eq!(commented(&plain).unwrap().reply_to, None);
        assert!(commented(&json!({"ok": true})).is_none());
    }

    #[tokio::test]
    async fn nobody_listening_is_told_apart_from_no_answer() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        assert!(OperatorClient::new(&paths).is_none(), "no socket file");
        std::fs::write(paths.operator_socket(), "").unwrap();
        assert!(OperatorClient::new(&paths).is_none(), "not a socket");
        std::fs::remove_file(paths.operator_socket()).unwrap();
        // A dead supervisor's socket: the file is there, nobody listens.
        drop(std::os::unix::net::UnixListener::bind(paths.operator_socket()).unwrap());
        let client = OperatorClient::new(&paths).unwrap();
        let request = ReplyRequest {
            work_item: "github:octo/repo#1".into(),
            text: "hi".into(),
            actor: None,
            comment: false,
            via: Via::Cli,
            over_budget: false,
        };
        let err = client.reply(&request).await.unwrap_err();
        assert!(matches!(err, ClientError::NotListening { .. }), "{err}");
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_refused_before_anything_is_sent() {
        let dir = tempfile::tempdir().unwrap();
        // Nobody listens here: had the client tried to send, it would say NotListening.
        let client = OperatorClient::at(&dir.path().join("operator.sock")).unwrap();
        let mut request = ReplyRequest {
            work_item: "github:octo/repo#1".into(),
            text: "x".repeat(MAX_BODY_BYTES),
            actor: None,
            comment: false,
            via: Via::Cli,
            over_budget: false,
        };
        let err = client.reply(&request).await.unwrap_err();
        match &err {
            ClientError::Refused { status, error, .. } => {
                assert_eq!(*status, 413);
                assert!(error.contains("over the supervisor's limit"), "{error}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert_eq!(err.exit_code(), 2, "the caller's text is too long");
        // Under the limit it is sent (and finds nobody).
        request.text = "x".repeat(MAX_BODY_BYTES - 200);
        let err = client.reply(&request).await.unwrap_err();
        assert!(matches!(err, ClientError::NotListening { .. }), "{err}");
    }
}
