//! Pull requests the tool opens for the operator (SPEC §19.4 step 3): the open pull
//! request of a branch, and a new one.
//!
//! The requests, as GitHub documents them:
//! - `GET /repos/{o}/{r}/pulls?head={owner}:{branch}&state=open&per_page=100`, never
//!   conditional: an answer vouched for by an old ETag could say "no pull request" after
//!   one was opened, and the caller would open a second. The first entry whose
//!   `head.ref` is the branch is the one (GitHub ignores a `head` it cannot parse and
//!   lists every open pull request, so the entries are checked, not trusted).
//! - `POST /repos/{o}/{r}/pulls` with `{"title", "head", "base", "body", "draft"}`,
//!   `head` a branch of the same repository; GitHub answers 201 with the pull request.
//!   The body is stamped here with [`crate::guard::mark_self_authored`], as
//!   [`Client::post_comment`] stamps comments: the pull request is self-authored, so the
//!   loop never takes its body for input.
//! - Refusals are [`Error::Http`] with the status: 422 `Validation Failed: A pull request
//!   already exists for owner:branch.` ([`Error::is_pull_request_exists`]), 422 for a
//!   head or base GitHub does not know (`PullRequest.head invalid`) or "No commits
//!   between …".

use super::api::repo_path;
use super::client::Client;
use super::{Error, models};
use reqwest::Method;
use serde_json::{Value, json};

/// What a new pull request is made of. `head` is a branch of the repository itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPull {
    pub head: String,
    pub base: String,
    pub title: String,
    /// As composed; the marker is added by [`Client::create_pull`].
    pub body: String,
    pub draft: bool,
}

/// A pull request as the ship path needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullSummary {
    pub number: u64,
    pub html_url: String,
    pub draft: bool,
}

impl PullSummary {
    fn from_json(pull: &Value, what: &str) -> Result<Self, Error> {
        let missing = |field: &str| Error::Decode {
            what: what.to_string(),
            message: format!("the pull request has no `{field}`"),
        };
        Ok(Self {
            number: models::number(pull).ok_or_else(|| missing("number"))?,
            html_url: models::html_url(pull)
                .ok_or_else(|| missing("html_url"))?
                .to_string(),
            draft: pull.get("draft").and_then(Value::as_bool).unwrap_or(false),
        })
    }
}

impl Client {
    /// The open pull request whose head is `head_owner:branch`, if there is one.
    /// Always asked afresh (see the module docs).
    pub async fn open_pull_for_head(
        &self,
        repo: &str,
        head_owner: &str,
        branch: &str,
    ) -> Result<Option<PullSummary>, Error> {
        check_owner(head_owner)?;
        check_branch("head", branch)?;
        let url = self.url(
            &format!("{}/pulls", repo_path(repo)?),
            &[
                ("head", format!("{head_owner}:{branch}")),
                ("state", "open".into()),
                ("per_page", "100".into()),
            ],
        )?;
        let what = super::client::describe(&Method::GET, &url);
        let pulls = self.get_list(url, false).await?.value.unwrap_or_default();
        pulls
            .iter()
            .find(|p| models::head_ref(p) == Some(branch) && models::state(p) != Some("closed"))
            .map(|p| PullSummary::from_json(p, &what))
            .transpose()
    }

    /// Opens a pull request (never retried once sent: a second POST could open a
    /// second one). The body is **always** stamped with
    /// [`crate::guard::mark_self_authored`] here, once, last.
    pub async fn create_pull(&self, repo: &str, new: &NewPull) -> Result<PullSummary, Error> {
        check_branch("head", &new.head)?;
        check_branch("base", &new.base)?;
        if new.title.trim().is_empty() {
            return Err(Error::InvalidRequest(
                "a pull request needs a title".to_string(),
            ));
        }
        let url = self.url(&format!("{}/pulls", repo_path(repo)?), &[])?;
        let payload = json!({
            "title": new.title,
            "head": new.head,
            "base": new.base,
            "body": crate::guard::mark_self_authored(&new.body),
            "draft": new.draft,
        });
        let pull = self.write_value(Method::POST, &url, &payload).await?;
        PullSummary::from_json(&pull, &format!("POST {}", url.path()))
    }
}

fn check_owner(owner: &str) -> Result<(), Error> {
    let ok = !owner.is_empty()
        && owner
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidRequest(format!(
            "invalid owner `{owner}`: expected a GitHub login, e.g. `octo`"
        )))
    }
}

/// A branch name git could have made (no spaces, controls, `..`, `:`, leading `-`).
fn check_branch(which: &str, branch: &str) -> Result<(), Error> {
    let ok = !branch.is_empty()
        && !branch.starts_with(['-', '/'])
        && !branch.ends_with(['/', '.'])
        && !branch.contains("..")
        && !branch.chars().any(|c| {
            c.is_whitespace()
                || c.is_control()
                || matches!(c, ':' | '~' | '^' | '?' | '*' | '[' | '\\')
        });
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidRequest(format!(
            "invalid {which} branch `{branch}`: expected a git branch name, e.g. `the-loop/issue-7`"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names_are_checked() {
        for good in ["main", "the-loop/issue-7", "a.b_c-d"] {
            assert!(check_branch("head", good).is_ok(), "{good}");
        }
        for bad in [
            "", "-x", "a b", "a..b", "o:b", "b/", "/b", "b.", "a\nb", "a~1", "a^", "a*",
        ] {
            assert!(check_branch("head", bad).is_err(), "{bad:?}");
        }
        assert!(check_owner("octo-org").is_ok());
        assert!(check_owner("o/x").is_err() && check_owner("").is_err());
    }

    #[test]
    fn summaries_need_a_number_and_a_url() {
        let pull = json!({"number": 9, "html_url": "https://github.com/o/r/pull/9", "draft": true});
        assert_eq!(
            PullSummary::from_json(&pull, "x").unwrap(),
            PullSummary {
                number: 9,
                html_url: "https://github.com/o/r/pull/9".into(),
                draft: true
            }
        );
        assert!(matches!(
            PullSummary::from_json(&json!({"number": 9}), "x"),
            Err(Error::Decode { .. })
        ));
    }
}
