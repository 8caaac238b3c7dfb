//! Pushing a worktree's branch for the operator (SPEC §19.4 step 2).
//!
//! - Only the commit the operator saw goes out: the refspec is `<sha>:refs/heads/<branch>`,
//!   never `HEAD`, never `--force` (the remote refuses what is not a fast-forward), no
//!   tags, no submodules, no signing, `--no-verify` on top of the runner's hooks off.
//! - It goes to the URL the remote had when the worktree was made, before any agent ran
//!   there ([`WorkspaceRecord::remote_url`]). The worktree's git config is the agents' to
//!   write, so a URL rewrite (`url.*.insteadOf`), a proxy, an extra header, a credential
//!   helper or an askpass program set in the repository's own config refuses the push
//!   ([`PushError::Config`]): each could carry the token elsewhere.
//! - The token reaches that one git process and nothing else: git asks for it through
//!   `GIT_ASKPASS`, which names the running `the-loop` binary; that child reads it from
//!   the environment git passes it ([`answer_askpass`]). Never argv (git gives askpass
//!   only its prompt), never the URL, never a git config file; every configured
//!   credential helper is switched off for the command (`credential.helper=`), so none
//!   stores it either. git runs a credential helper through `sh`, an askpass program
//!   directly: hence askpass (decision `2026-12-03-ship`).
//! - An ssh remote is pushed as the operator's ssh does it, with no token.

use super::git::{Git, GitError, NETWORK_TIMEOUT};
use super::store::WorkspaceRecord;
use crate::github::Token;
use std::path::Path;

/// Set (to `1`) in the environment of the git process that pushes: the `the-loop`
/// binary git runs as its askpass program answers instead of parsing a command line.
pub const ASKPASS_ENV: &str = "THE_LOOP_ASKPASS";
/// The token, in that git process's environment only.
pub const TOKEN_ENV: &str = "THE_LOOP_PUSH_TOKEN";
/// The user name GitHub accepts with a token as the password.
pub const TOKEN_USER: &str = "x-access-token";

/// When git started this process as its askpass program (`GIT_ASKPASS`, with
/// [`ASKPASS_ENV`] set): answers the one prompt on stdout and returns the exit code.
/// `None`: an ordinary start. Touches no file and logs nothing.
pub fn answer_askpass() -> Option<u8> {
    if std::env::var_os(ASKPASS_ENV).is_none_or(|v| v != "1") {
        return None;
    }
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let [prompt] = args.as_slice() else {
        return None;
    };
    let answer = if prompt.starts_with("Username") {
        Some(TOKEN_USER.to_string())
    } else if prompt.starts_with("Password") {
        std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty())
    } else {
        None
    };
    match answer {
        Some(answer) => {
            println!("{answer}");
            Some(0)
        }
        None => {
            eprintln!("the-loop: no answer for git's prompt");
            Some(1)
        }
    }
}

/// What the push needs besides the worktree.
#[derive(Debug, Clone, Copy)]
pub struct Credentials<'a> {
    pub token: &'a Token,
    /// The running `the-loop` binary: git's askpass program.
    pub askpass: &'a Path,
}

#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error(
        "the worktree has no remote to push to (it was made from a checkout without one); add a remote to {} and start the session again",
        .repo
    )]
    NoRemote { repo: String },
    #[error(
        "the remote's URL is now `{now}`, not `{recorded}` as when the worktree was made; the push would go elsewhere, so it is refused — check the repository's git config"
    )]
    UrlChanged { recorded: String, now: String },
    #[error(
        "the repository's git config sets `{key}`, which could send the token elsewhere; remove it from {} (git config --local --unset {key}) and ship again",
        .repo
    )]
    Config { key: String, repo: String },
    #[error(
        "no GitHub token to push with over HTTPS: set GH_TOKEN or GITHUB_TOKEN, or log in with `gh auth login`"
    )]
    NoToken,
    #[error(transparent)]
    Git(#[from] GitError),
}

/// Config keys that could send the push, or the token, somewhere else. Only the
/// repository's own scopes (`local`, `worktree`) are checked: they are the agents' to
/// write; the operator's global and system config are the operator's.
const RISKY: &str = r"^(url\..*|http\..*|credential\..*|core\.(askpass|gitproxy|sshcommand)|remote\..*\.(proxy|receivepack|uploadpack|vcs))$";

/// Pushes `sha` to `branch` on `record`'s remote (see the module docs). `credentials`
/// are used for an HTTP(S) remote; without them such a push is refused.
pub async fn push(
    git: &Git,
    record: &WorkspaceRecord,
    sha: &str,
    branch: &str,
    credentials: Option<Credentials<'_>>,
) -> Result<(), PushError> {
    let dir = &record.dir;
    let repo = record.repo.display().to_string();
    let remote = record
        .remote
        .as_deref()
        .ok_or_else(|| PushError::NoRemote { repo: repo.clone() })?;
    if let Some(key) = risky_key(git, dir).await? {
        return Err(PushError::Config { key, repo });
    }
    let now = git
        .line(dir, &["remote", "get-url", "--push", remote])
        .await?
        .ok_or_else(|| PushError::NoRemote { repo: repo.clone() })?;
    let url = record.remote_url.clone().unwrap_or_else(|| now.clone());
    if now != url {
        return Err(PushError::UrlChanged { recorded: url, now });
    }
    let http = is_http(&url);
    let credentials = match credentials {
        Some(c) if http => Some(c),
        None if http => return Err(PushError::NoToken),
        _ => None,
    };
    let refspec = format!("{sha}:refs/heads/{branch}");
    let args = [
        "-c",
        "credential.helper=",
        "-c",
        "push.followTags=false",
        "-c",
        "push.gpgSign=false",
        "-c",
        "push.recurseSubmodules=no",
        "push",
        "--no-verify",
        "--porcelain",
        url.as_str(),
        refspec.as_str(),
    ];
    let env: Vec<(String, String)> = match credentials {
        Some(c) => vec![
            ("GIT_ASKPASS".into(), c.askpass.display().to_string()),
            (ASKPASS_ENV.into(), "1".into()),
            (TOKEN_ENV.into(), c.token.expose().to_string()),
        ],
        None => Vec::new(),
    };
    git.ok_with_env(dir, &args, NETWORK_TIMEOUT, &env).await?;
    // The remote-tracking ref and the branch's upstream, as `push -u` to the remote
    // would have set them; the push itself went to the URL, so git set neither.
    let tracking = format!("refs/remotes/{remote}/{branch}");
    let upstream = format!("{remote}/{branch}");
    let local = format!("refs/heads/{branch}");
    let tracked = async {
        git.ok(dir, &["update-ref", &tracking, sha]).await?;
        if git
            .line(dir, &["rev-parse", "--verify", "--quiet", &local])
            .await?
            .is_some()
        {
            git.ok(dir, &["branch", "--set-upstream-to", &upstream, branch])
                .await?;
        }
        Ok::<_, GitError>(())
    };
    if let Err(error) = tracked.await {
        tracing::warn!(%branch, "pushed, but the upstream was not set: {error}");
    }
    Ok(())
}

/// The first key of the repository's own config that [`RISKY`] names.
async fn risky_key(git: &Git, dir: &Path) -> Result<Option<String>, GitError> {
    let out = git
        .run(dir, &["config", "--show-scope", "--get-regexp", RISKY])
        .await?;
    Ok(out.stdout.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        let scope = words.next()?;
        let key = words.next()?;
        matches!(scope, "local" | "worktree").then(|| key.to_string())
    }))
}

/// Whether git talks HTTP to `url` (a token is asked for); ssh and local paths do not.
pub fn is_http(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_remotes_get_the_token() {
        assert!(is_http("https://github.com/octo/repo.git"));
        assert!(is_http("HTTP://127.0.0.1:9/octo/repo.git"));
        for other in [
            "git@github.com:octo/repo.git",
            "ssh://git@github.com/octo/repo.git",
            "/srv/git/repo.git",
            "file:///srv/git/repo.git",
        ] {
            assert!(!is_http(other), "{other}");
        }
    }
}
