use super::*;
use serde_json::json;
use std::path::Path;

fn thread(id: &str, cwd: &str, ephemeral: bool) -> ThreadInfo {
    ThreadInfo {
        id: id.into(),
        cwd: cwd.into(),
        ephemeral,
        awaits_approval: false,
    }
}

#[test]
fn the_sessions_thread_is_the_lasting_one_in_its_directory() {
    let threads = [
        thread("title", "/w/p", true),
        thread("other", "/w/q", false),
        thread("mine", "/w/p", false),
    ];
    assert_eq!(
        pick_thread(&threads, Path::new("/w/p")).map(|t| &*t.id),
        Some("mine")
    );
    assert_eq!(
        pick_thread(&threads, Path::new("/w/p/")).map(|t| &*t.id),
        Some("mine")
    );
    assert_eq!(pick_thread(&threads[..1], Path::new("/w/p")), None);
    assert_eq!(pick_thread(&threads, Path::new("/w/r")), None);
}

#[test]
fn a_read_thread_gives_its_id_cwd_and_ephemerality() {
    let read = json!({"thread": {"id": "t1", "cwd": "/w/p", "ephemeral": true, "status": {"type": "idle"}}});
    assert_eq!(
        ThreadInfo::from_read(&read),
        Some(thread("t1", "/w/p", true))
    );
    assert_eq!(ThreadInfo::from_read(&json!({})), None);
}

#[test]
fn a_thread_waiting_on_an_approval_says_so_in_its_status() {
    let waiting = json!({"thread": {"id": "t1", "cwd": "/w/p",
        "status": {"type": "active", "activeFlags": ["waitingOnApproval"]}}});
    let asking = json!({"thread": {"id": "t1", "cwd": "/w/p",
        "status": {"type": "active", "activeFlags": ["waitingOnUserInput"]}}});
    let read = |v| ThreadInfo::from_read(&v).unwrap().awaits_approval;
    assert!(read(waiting));
    assert!(!read(asking));
    assert!(!read(
        json!({"thread": {"id": "t1", "status": {"type": "idle"}}})
    ));
}

#[test]
fn a_command_approval_carries_the_command_cwd_and_reason() {
    let params = json!({"threadId": "t1", "turnId": "u1", "itemId": "i1",
        "command": "touch ran.txt", "cwd": "/w/p", "reason": "the test asks for it",
        "availableDecisions": ["accept", "cancel"], "startedAtMs": 1});
    let Inbound::Approval(a) =
        Inbound::request(json!(7), "item/commandExecution/requestApproval", params)
    else {
        panic!("not an approval");
    };
    assert_eq!(a.request_id, json!(7));
    assert_eq!(a.kind, ApprovalKind::Command);
    assert_eq!((&*a.thread, &*a.turn, &*a.item), ("t1", "u1", "i1"));
    assert_eq!(a.command.as_deref(), Some("touch ran.txt"));
    assert_eq!(a.cwd.as_deref(), Some("/w/p"));
    assert_eq!(a.reason.as_deref(), Some("the test asks for it"));
    assert_eq!(a.available, vec![json!("accept"), json!("cancel")]);
    let file = Inbound::request(
        json!("r"),
        "item/fileChange/requestApproval",
        json!({"threadId": "t1"}),
    );
    assert!(matches!(
        file,
        Inbound::Approval(Approval {
            kind: ApprovalKind::FileChange,
            ..
        })
    ));
    let other = Inbound::request(json!(1), "item/tool/requestUserInput", json!({}));
    assert!(matches!(other, Inbound::OtherRequest { .. }));
}

#[test]
fn turn_and_resolve_notifications_are_typed() {
    let done = Inbound::notification(
        "turn/completed",
        json!({"threadId": "t1", "turn": {"id": "u1", "status": "completed", "items": []}}),
    );
    assert_eq!(
        done,
        Inbound::TurnCompleted {
            thread: "t1".into(),
            turn: "u1".into(),
            status: "completed".into()
        }
    );
    let resolved = Inbound::notification(
        "serverRequest/resolved",
        json!({"threadId": "t1", "requestId": 3}),
    );
    assert_eq!(
        resolved,
        Inbound::Resolved {
            thread: "t1".into(),
            request_id: json!(3)
        }
    );
    assert_eq!(resolved.thread(), Some("t1"));
    let other = Inbound::notification("item/agentMessage/delta", json!({}));
    assert_eq!(other.thread(), None);
}

#[test]
fn decisions_are_spelled_as_the_schema_spells_them() {
    assert_eq!(Decision::Accept.as_str(), "accept");
    assert_eq!(Decision::Decline.as_str(), "decline");
}
