use super::*;

fn transport(dir: &Path) -> Transport {
    Transport::new(
        Destination {
            name: "build".into(),
            ssh: "dev@build-1".into(),
            config_file: None,
            connect_timeout: Duration::from_secs(10),
            server_alive: Duration::from_secs(15),
        },
        dir,
    )
}

#[test]
fn ssh_gets_no_secret_of_ours_and_no_forwarding_of_the_operators_config() {
    let dir = tempfile::tempdir().unwrap();
    let host = transport(dir.path());
    let command = host.command(host.base_args(false));
    let removed: Vec<String> = command
        .as_std()
        .get_envs()
        .filter(|(_, value)| value.is_none())
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .collect();
    for secret in crate::secrets::TOKEN_ENV_VARS {
        assert!(removed.iter().any(|r| r == secret), "{secret} reaches ssh");
    }
    let args: Vec<String> = command
        .as_std()
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    for option in [
        "BatchMode=yes",
        "ForwardAgent=no",
        "ForwardX11=no",
        "ClearAllForwardings=yes",
        "PermitLocalCommand=no",
        "ControlMaster=no",
    ] {
        assert!(
            args.iter().any(|a| a == option),
            "{option} missing: {args:?}"
        );
    }
}

#[tokio::test]
async fn a_control_path_too_long_for_a_socket_is_refused_before_ssh_runs() {
    let long = std::path::PathBuf::from(format!("/tmp/{}", "d".repeat(100)));
    let host = transport(&long).with_program("/nonexistent/ssh");
    match host.connect().await {
        Err(SshError::SocketPathTooLong { max, .. }) => assert_eq!(max, MAX_CONTROL_PATH),
        other => panic!("{other:?}"),
    }
    assert!(matches!(host.state(), HostState::Unreachable { .. }));
}

#[tokio::test]
async fn a_host_that_cannot_be_reached_fails_fast_with_the_destination_named() {
    let dir = tempfile::tempdir().unwrap();
    // `false` stands in for an ssh whose connection fails: it exits 1 at once.
    let host = transport(dir.path()).with_program("false");
    let error = host
        .run(&["true".to_string()], None, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(error.is_unreachable(), "{error}");
    assert!(error.to_string().contains("ssh dev@build-1"), "{error}");
    assert_eq!(host.stats().connections, 1);
}
