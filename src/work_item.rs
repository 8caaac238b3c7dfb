//! Work-item refs (SPEC §5.1): `github:[host/]owner/repo#N`, their slugs and tmux names.

use std::fmt;
use std::str::FromStr;

pub const DEFAULT_HOST: &str = "github.com";

/// One issue or pull request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkItemRef {
    /// `github.com` unless the item lives on GitHub Enterprise.
    pub host: String,
    pub owner: String,
    pub repo: String,
    pub number: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid work-item ref `{input}`: {reason}; expected `github:owner/repo#N` (or `github:host/owner/repo#N` for GitHub Enterprise), e.g. `github:octo/repo#15`"
)]
pub struct RefError {
    pub input: String,
    pub reason: &'static str,
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// An owner, repo or host segment a ref can carry and parse back.
pub(crate) fn valid_segment(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && s.chars().all(is_name_char)
}

/// A host a ref can carry: a dotted name (or `localhost`).
pub(crate) fn valid_host(host: &str) -> bool {
    valid_segment(host) && (host.contains('.') || host == "localhost")
}

impl WorkItemRef {
    pub fn new(owner: &str, repo: &str, number: u64) -> Self {
        Self::on_host(DEFAULT_HOST, owner, repo, number)
    }

    pub fn on_host(host: &str, owner: &str, repo: &str, number: u64) -> Self {
        Self {
            host: host.to_ascii_lowercase(),
            owner: owner.to_string(),
            repo: repo.to_string(),
            number,
        }
    }

    /// `owner/repo`.
    pub fn repo_full_name(&self) -> String {
        format!("{}/{}", self.owner, self.repo)
    }

    /// The state-file name of the item (SPEC §5.1, §14.7): the ref with every run of
    /// characters outside `[A-Za-z0-9._-]` replaced by `-`, and — only where that readable
    /// form loses information (a `-` inside the host, owner or repo makes the separators
    /// ambiguous: `a-b/c#1` and `a/b-c#1`) — `-h` and a short stable hash of the ref.
    /// Two different items never share a slug.
    pub fn slug(&self) -> String {
        let readable = self.legacy_slug();
        if decode_slug(&readable).is_some_and(|back| same_item(&back, self)) {
            readable
        } else {
            format!("{readable}-{}", self.name_hash())
        }
    }

    /// The slug as releases before SPEC §14.7 wrote it (no hash): where older state
    /// files of this item may still be.
    pub fn legacy_slug(&self) -> String {
        slugify(&self.to_string())
    }

    /// The tmux session name: `loop-<slug>` with `.` and `:` turned into `_` (tmux
    /// rewrites them itself). Where that loses information (the slug has a `.`:
    /// `my.repo` and `my_repo`), the readable part is followed by the ref's hash, so two
    /// different items never share a session (§14.7).
    pub fn tmux_session_name(&self) -> String {
        let readable = format!("loop-{}", self.legacy_slug()).replace(['.', ':'], "_");
        let slug = self.slug();
        if slug.contains(['.', ':']) || slug.len() != self.legacy_slug().len() {
            format!("{readable}-{}", self.name_hash())
        } else {
            readable
        }
    }

    /// `h` and the first 8 hex digits of the SHA-256 of the lowercased ref: stable across
    /// releases and machines, and the same for the spellings GitHub treats as one item
    /// (owner and repo are case-insensitive). The `h` keeps a hash from ever reading as
    /// an item number.
    fn name_hash(&self) -> String {
        name_hash(&self.to_string())
    }

    /// The directory of the item's repository under `workspaces.root` (SPEC §16.2):
    /// `<owner>-<repo>` (the host first when it is not github.com), lowercased since
    /// GitHub names are case-insensitive. Where that join loses information (`a-b/c` and
    /// `a/b-c` both read `a-b-c`) a short stable hash of the repository is appended, so
    /// two repositories never share a directory (§14.7).
    pub fn repo_dir_name(&self) -> String {
        let host = (!self.host.eq_ignore_ascii_case(DEFAULT_HOST)).then_some(self.host.as_str());
        let parts: Vec<&str> = host
            .into_iter()
            .chain([self.owner.as_str(), self.repo.as_str()])
            .collect();
        let readable = slugify(&parts.join("-")).to_ascii_lowercase();
        if parts.iter().any(|p| p.contains('-')) {
            use sha2::{Digest, Sha256};
            let key = format!("{}/{}/{}", self.host, self.owner, self.repo).to_ascii_lowercase();
            let digest = Sha256::digest(key.as_bytes());
            format!("{readable}-{}", hex::encode(&digest[..4]))
        } else {
            readable
        }
    }

    /// The item's web URL (issues and PRs share it: GitHub redirects).
    pub fn html_url(&self) -> String {
        format!(
            "https://{}/{}/{}/issues/{}",
            self.host, self.owner, self.repo, self.number
        )
    }

    /// Same repository (host, owner and name; owner and name compared case-insensitively,
    /// as GitHub does).
    pub fn same_repo(&self, other: &WorkItemRef) -> bool {
        self.host.eq_ignore_ascii_case(&other.host)
            && self.owner.eq_ignore_ascii_case(&other.owner)
            && self.repo.eq_ignore_ascii_case(&other.repo)
    }
}

/// The ref a readable slug spells when it is unambiguous: `github-OWNER-REPO-N`, or
/// `github-HOST-OWNER-REPO-N` with a dotted host, each part free of `-`.
fn decode_slug(slug: &str) -> Option<WorkItemRef> {
    let parts: Vec<&str> = slug.split('-').collect();
    let (host, owner, repo, number) = match parts.as_slice() {
        ["github", owner, repo, n] => (DEFAULT_HOST, *owner, *repo, *n),
        ["github", host, owner, repo, n] if valid_host(host) => (*host, *owner, *repo, *n),
        _ => return None,
    };
    if !valid_segment(owner) || !valid_segment(repo) {
        return None;
    }
    let number = number.parse().ok().filter(|n| *n > 0)?;
    Some(WorkItemRef::on_host(host, owner, repo, number))
}

/// The same issue or PR: host, owner, repo (case-insensitively, as GitHub compares them)
/// and number.
fn same_item(a: &WorkItemRef, b: &WorkItemRef) -> bool {
    a.number == b.number && a.same_repo(b)
}

/// `h` and the first 8 hex digits of the SHA-256 of `key` lower-cased: the suffix that
/// keeps a readable file or session name unique when making it readable lost
/// information.
pub fn name_hash(key: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(key.to_lowercase().as_bytes());
    format!("h{}", &hex::encode(digest)[..8])
}

/// Replaces each run of characters outside `[A-Za-z0-9._-]` with one `-`.
pub fn slugify(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_run = false;
    for c in s.chars() {
        if is_name_char(c) {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('-');
            in_run = true;
        }
    }
    out
}

impl fmt::Display for WorkItemRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.eq_ignore_ascii_case(DEFAULT_HOST) {
            write!(f, "github:{}/{}#{}", self.owner, self.repo, self.number)
        } else {
            write!(
                f,
                "github:{}/{}/{}#{}",
                self.host, self.owner, self.repo, self.number
            )
        }
    }
}

impl FromStr for WorkItemRef {
    type Err = RefError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let err = |reason| RefError {
            input: input.to_string(),
            reason,
        };
        let s = input.trim();
        let rest = s
            .strip_prefix("github:")
            .ok_or_else(|| err("it must start with `github:`"))?;
        let (path, number) = rest
            .rsplit_once('#')
            .ok_or_else(|| err("the issue or PR number after `#` is missing"))?;
        let number: u64 = number
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| err("the number after `#` must be a positive integer"))?;
        let parts: Vec<&str> = path.split('/').collect();
        let (host, owner, repo) = match parts.as_slice() {
            [owner, repo] => (DEFAULT_HOST, *owner, *repo),
            [host, owner, repo] => (*host, *owner, *repo),
            _ => {
                return Err(err(
                    "it must name exactly `owner/repo`, optionally after a host",
                ));
            }
        };
        if !valid_host(host) {
            return Err(err("the host is not a valid host name"));
        }
        if !valid_segment(owner) || !valid_segment(repo) {
            return Err(err(
                "owner and repo may contain only letters, digits, `-`, `_` and `.`",
            ));
        }
        Ok(Self::on_host(host, owner, repo, number))
    }
}

impl serde::Serialize for WorkItemRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for WorkItemRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_displays() {
        let cases = [
            ("github:octo/repo#15", "github:octo/repo#15"),
            ("github:github.com/octo/repo#15", "github:octo/repo#15"),
            (
                "github:ghe.example.com/octo/repo#7",
                "github:ghe.example.com/octo/repo#7",
            ),
            ("  github:Octo/my.repo#1 ", "github:Octo/my.repo#1"),
        ];
        for (input, shown) in cases {
            let r: WorkItemRef = input.parse().unwrap();
            assert_eq!(r.to_string(), shown, "{input}");
            assert_eq!(r.to_string().parse::<WorkItemRef>().unwrap(), r);
        }
    }

    #[test]
    fn rejects_bad_refs_naming_the_form() {
        for bad in [
            "",
            "octo/repo#15",
            "github:octo/repo",
            "github:octo/repo#",
            "github:octo/repo#0",
            "github:octo/repo#-1",
            "github:octo#1",
            "github:a/b/c/d#1",
            "github:octo/re po#1",
            "github:../repo#1",
            "github:nohost/octo/repo#1",
        ] {
            let e = bad.parse::<WorkItemRef>().unwrap_err();
            assert!(e.to_string().contains("github:owner/repo#N"), "{bad}: {e}");
        }
    }

    #[test]
    fn slugs_and_tmux_names() {
        let r = WorkItemRef::new("octo", "repo", 15);
        assert_eq!(r.slug(), "github-octo-repo-15");
        assert_eq!(r.tmux_session_name(), "loop-github-octo-repo-15");
        let g = WorkItemRef::on_host("ghe.example.com", "octo", "my.repo", 7);
        assert_eq!(g.slug(), "github-ghe.example.com-octo-my.repo-7");
        assert!(
            g.tmux_session_name()
                .starts_with("loop-github-ghe_example_com-octo-my_repo-7-h"),
            "dots turned into `_` lose information"
        );
        assert_eq!(slugify("a::b##c"), "a-b-c");
    }

    #[test]
    fn names_that_would_lose_information_carry_a_hash() {
        // Readable forms that cannot be read back get `-h` and 8 hex digits.
        let dotted = WorkItemRef::new("octo", "my.repo", 1);
        let underscored = WorkItemRef::new("octo", "my_repo", 1);
        assert_eq!(dotted.slug(), "github-octo-my.repo-1", "slugs keep dots");
        assert_eq!(underscored.slug(), "github-octo-my_repo-1");
        assert_eq!(
            underscored.tmux_session_name(),
            "loop-github-octo-my_repo-1"
        );
        let tmux = dotted.tmux_session_name();
        assert!(tmux.starts_with("loop-github-octo-my_repo-1-h"), "{tmux}");
        assert_eq!(tmux.len(), "loop-github-octo-my_repo-1-h".len() + 8);

        let dashed = WorkItemRef::new("octo", "the-loop", 2);
        let other = WorkItemRef::new("octo-the", "loop", 2);
        assert_eq!(dashed.legacy_slug(), other.legacy_slug());
        assert_ne!(dashed.slug(), other.slug());
        assert_ne!(dashed.tmux_session_name(), other.tmux_session_name());
        assert!(dashed.slug().starts_with("github-octo-the-loop-2-h"));

        // Stable, and the same for the spellings GitHub treats as one item.
        assert_eq!(dashed.slug(), dashed.clone().slug());
        let shouted = WorkItemRef::new("OCTO", "THE-LOOP", 2);
        assert_eq!(
            shouted.slug().rsplit('-').next(),
            dashed.slug().rsplit('-').next()
        );
    }

    #[test]
    fn repo_directories_are_readable_and_injective() {
        assert_eq!(
            WorkItemRef::new("Octo", "Repo", 1).repo_dir_name(),
            "octo-repo"
        );
        assert_eq!(
            WorkItemRef::on_host("ghe.example.com", "octo", "my.repo", 7).repo_dir_name(),
            "ghe.example.com-octo-my.repo"
        );
        let a = WorkItemRef::new("a-b", "c", 1).repo_dir_name();
        let b = WorkItemRef::new("a", "b-c", 1).repo_dir_name();
        assert_ne!(a, b);
        assert!(
            a.starts_with("a-b-c-") && b.starts_with("a-b-c-"),
            "{a} {b}"
        );
        assert_eq!(
            a,
            WorkItemRef::new("A-B", "C", 9).repo_dir_name(),
            "case-insensitive"
        );
        assert_ne!(
            WorkItemRef::new("octo", "my.repo", 1).repo_dir_name(),
            WorkItemRef::new("octo", "my_repo", 1).repo_dir_name()
        );
    }
}
