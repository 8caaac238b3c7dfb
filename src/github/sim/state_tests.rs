use super::*;

#[test]
fn faults_match_paths_in_order() {
    let mut s = SimState::new("http://x".into());
    s.faults.push_back(ScriptedFault {
        fault: Fault::Status(502),
        path_contains: Some("/pulls".into()),
    });
    s.faults.push_back(ScriptedFault {
        fault: Fault::Status(500),
        path_contains: None,
    });
    assert_eq!(s.take_fault("/repos/o/r/issues"), Some(Fault::Status(500)));
    assert_eq!(s.take_fault("/repos/o/r/issues"), None);
    assert_eq!(s.take_fault("/repos/o/r/pulls"), Some(Fault::Status(502)));
}

#[test]
fn comments_need_an_existing_item() {
    let mut s = SimState::new("http://x".into());
    assert!(matches!(
        s.create_comment("o/r", 1, "alice", "hi"),
        Err(SimError::NoRepo(_))
    ));
    s.ensure_repo("o/r").unwrap();
    assert!(matches!(
        s.create_comment("o/r", 1, "alice", "hi"),
        Err(SimError::NoItem(_, 1))
    ));
}
