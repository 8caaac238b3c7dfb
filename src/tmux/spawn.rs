//! The spawn collision rules (SPEC §7.3), written once over the [`Tmux`] trait so the
//! real tmux and the fake obey the same truth table.

use super::{Error, Liveness, PaneId, SpawnSpec, Tmux, validate_session_name};

pub(super) async fn new_session<T: Tmux + ?Sized>(
    tmux: &T,
    spec: &SpawnSpec,
) -> Result<PaneId, Error> {
    validate_session_name(&spec.name)?;
    if spec.argv.is_empty() || spec.argv[0].is_empty() {
        return Err(Error::InvalidSpawn("the command (argv) is empty".into()));
    }
    match probe_or_refuse(tmux, &spec.name).await? {
        Liveness::Live => {
            return Err(Error::SessionBusy {
                name: spec.name.clone(),
            });
        }
        Liveness::Dead => {
            match tmux.kill_session(&spec.name).await {
                Ok(()) | Err(Error::SessionMissing { .. }) => {}
                Err(error) => return Err(error),
            }
            if probe_or_refuse(tmux, &spec.name).await? != Liveness::Absent {
                return Err(Error::NotCleared {
                    name: spec.name.clone(),
                });
            }
        }
        Liveness::Absent => {}
        Liveness::Unknown => {
            return Err(Error::LivenessUnknown {
                name: spec.name.clone(),
                cause: Box::new(Error::InvalidSpawn("tmux answered `unknown`".into())),
            });
        }
    }
    tmux.create_session(spec).await
}

/// A probe whose failure stops the spawn: when tmux cannot say what holds the name, the
/// name is left alone. A missing tmux is reported as such, not as "unknown".
async fn probe_or_refuse<T: Tmux + ?Sized>(tmux: &T, name: &str) -> Result<Liveness, Error> {
    match tmux.probe(name).await {
        Ok(liveness) => Ok(liveness),
        Err(Error::NotInstalled) => Err(Error::NotInstalled),
        Err(cause) => Err(Error::LivenessUnknown {
            name: name.to_string(),
            cause: Box::new(cause),
        }),
    }
}

#[cfg(test)]
mod tests {
    use crate::tmux::fake::{Call, Failure, FakeTmux, Op};
    use crate::tmux::{Error, Liveness, SpawnSpec, Tmux};
    use std::path::PathBuf;

    fn spec(name: &str) -> SpawnSpec {
        SpawnSpec {
            name: name.into(),
            cwd: PathBuf::from("/tmp"),
            env: vec![],
            argv: vec!["agent".into(), "boot".into()],
            remain_on_exit: true,
            private_files: false,
        }
    }

    #[tokio::test]
    async fn absent_name_is_created() {
        let tmux = FakeTmux::new();
        let pane = tmux.new_session(&spec("loop-a")).await.unwrap();
        assert_eq!(tmux.session("loop-a").unwrap().pane, pane);
        assert_eq!(
            tmux.calls(),
            [
                Call::Probe("loop-a".into()),
                Call::CreateSession("loop-a".into())
            ]
        );
    }

    #[tokio::test]
    async fn live_occupant_is_never_killed() {
        let tmux = FakeTmux::new();
        let pane = tmux.add_session("loop-a", false);
        let err = tmux.new_session(&spec("loop-a")).await.unwrap_err();
        assert!(matches!(err, Error::SessionBusy { .. }), "{err}");
        assert_eq!(tmux.session("loop-a").unwrap().pane, pane);
        assert!(
            !tmux
                .calls()
                .iter()
                .any(|c| matches!(c, Call::KillSession(_) | Call::CreateSession(_)))
        );
    }

    #[tokio::test]
    async fn dead_occupant_is_killed_verified_and_replaced() {
        let tmux = FakeTmux::new();
        let old = tmux.add_session("loop-a", true);
        let new = tmux.new_session(&spec("loop-a")).await.unwrap();
        assert_ne!(old, new);
        assert!(!tmux.session("loop-a").unwrap().dead);
        assert_eq!(
            tmux.calls(),
            [
                Call::Probe("loop-a".into()),
                Call::KillSession("loop-a".into()),
                Call::Probe("loop-a".into()),
                Call::CreateSession("loop-a".into()),
            ]
        );
    }

    #[tokio::test]
    async fn dead_occupant_that_survives_the_kill_blocks_the_spawn() {
        let tmux = FakeTmux::new();
        tmux.add_session("loop-a", true);
        tmux.ignore_kills();
        let err = tmux.new_session(&spec("loop-a")).await.unwrap_err();
        assert!(matches!(err, Error::NotCleared { .. }), "{err}");
        assert!(
            !tmux
                .calls()
                .iter()
                .any(|c| matches!(c, Call::CreateSession(_)))
        );
    }

    #[tokio::test]
    async fn unknown_occupant_is_left_alone() {
        let tmux = FakeTmux::new();
        tmux.add_session("loop-a", true);
        tmux.fail(Op::Probe, Failure::Timeout);
        let err = tmux.new_session(&spec("loop-a")).await.unwrap_err();
        assert!(matches!(err, Error::LivenessUnknown { .. }), "{err}");
        assert!(err.to_string().contains("retry"), "{err}");
        assert_eq!(tmux.calls(), [Call::Probe("loop-a".into())]);
    }

    #[tokio::test]
    async fn missing_tmux_is_reported_as_such() {
        let tmux = FakeTmux::new();
        tmux.fail(Op::Probe, Failure::NotInstalled);
        let err = tmux.new_session(&spec("loop-a")).await.unwrap_err();
        assert!(matches!(err, Error::NotInstalled), "{err}");
    }

    #[tokio::test]
    async fn bad_specs_never_reach_tmux() {
        let tmux = FakeTmux::new();
        let mut bad = spec("loop.a");
        assert!(matches!(
            tmux.new_session(&bad).await,
            Err(Error::InvalidName { .. })
        ));
        bad = spec("loop-a");
        bad.argv.clear();
        assert!(matches!(
            tmux.new_session(&bad).await,
            Err(Error::InvalidSpawn(_))
        ));
        assert!(tmux.calls().is_empty());
    }

    #[tokio::test]
    async fn liveness_truth_table() {
        let tmux = FakeTmux::new();
        tmux.add_session("live", false);
        tmux.add_session("dead", true);
        assert_eq!(tmux.liveness("live").await, Liveness::Live);
        assert_eq!(tmux.liveness("dead").await, Liveness::Dead);
        assert_eq!(tmux.liveness("absent").await, Liveness::Absent);
        for failure in [Failure::Timeout, Failure::Failed("boom".into())] {
            tmux.fail(Op::Probe, failure);
            for name in ["live", "dead", "absent"] {
                assert_eq!(tmux.liveness(name).await, Liveness::Unknown, "{name}");
            }
        }
    }
}
