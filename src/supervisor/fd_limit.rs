//! The supervisor raises its soft `RLIMIT_NOFILE` to the hard limit at start (SPEC
//! §14.2): the common soft limit of 1024 is what a few hundred held connections, the
//! sessions' pipes and the event log otherwise share.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// Raises the soft limit to the hard one; returns the soft limit now in force (`None`
/// when it cannot be read).
pub fn raise_nofile() -> Option<u64> {
    let (soft, hard) = match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok(limits) => limits,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the open-file limit");
            return None;
        }
    };
    if soft >= hard {
        return Some(soft);
    }
    match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
        Ok(()) => {
            tracing::info!(from = soft, to = hard, "raised the open-file limit");
            Some(hard)
        }
        Err(e) => {
            // e.g. an unlimited hard limit the kernel will not take as a soft one.
            tracing::warn!(soft, hard, error = %e, "cannot raise the open-file limit");
            Some(soft)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_ends_at_the_hard_one() {
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        assert_eq!(raise_nofile(), Some(hard));
        assert_eq!(getrlimit(Resource::RLIMIT_NOFILE).unwrap().0, hard);
    }
}
