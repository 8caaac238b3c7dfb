use super::events::take_events;
use super::*;

#[test]
fn server_sent_events_are_cut_at_blank_lines_and_kept_until_whole() {
    let mut buffer = b"data: {\"a\":1}\n\nevent: x\ndata: {\"b\":".to_vec();
    assert_eq!(take_events(&mut buffer), ["{\"a\":1}"]);
    assert_eq!(buffer, b"event: x\ndata: {\"b\":");
    buffer.extend(b"2}\n\n: comment\n\n");
    assert_eq!(take_events(&mut buffer), ["{\"b\":2}"]);
    assert!(buffer.is_empty());
}

#[test]
fn the_events_a_supervisor_acts_on_are_read_and_the_rest_named() {
    let asked = r#"{"type":"permission.asked","properties":{"id":"per_1","sessionID":"ses_1","permission":"bash","patterns":["touch ran.txt"],"metadata":{},"always":["touch *"],"tool":{"messageID":"msg_1","callID":"call_1"}}}"#;
    assert_eq!(
        Event::parse(asked),
        Some(Event::PermissionAsked(Permission {
            id: "per_1".into(),
            session: "ses_1".into(),
            permission: "bash".into(),
            patterns: vec!["touch ran.txt".into()],
            call: Some("call_1".into()),
        }))
    );
    let replied = r#"{"type":"permission.replied","properties":{"sessionID":"ses_1","requestID":"per_1","reply":"always"}}"#;
    assert_eq!(
        Event::parse(replied),
        Some(Event::PermissionReplied {
            session: "ses_1".into(),
            request: "per_1".into(),
            reply: Some(Reply::Always),
        })
    );
    let busy =
        r#"{"type":"session.status","properties":{"sessionID":"ses_1","status":{"type":"busy"}}}"#;
    assert_eq!(
        Event::parse(busy),
        Some(Event::Status {
            session: "ses_1".into(),
            status: Status::Busy
        })
    );
    let message = r#"{"type":"message.updated","properties":{"sessionID":"ses_1","info":{"id":"msg_2","sessionID":"ses_1","role":"assistant","modelID":"fake-model","providerID":"fake","cost":0.5,"time":{"created":1,"completed":2},"tokens":{"input":1037,"output":51,"reasoning":0,"cache":{"read":3,"write":0}}}}}"#;
    let Some(Event::AssistantUpdated(m)) = Event::parse(message) else {
        panic!("not read");
    };
    assert_eq!(
        (m.input, m.output, m.cache_read, m.completed),
        (1037, 51, 3, true)
    );
    assert_eq!((m.model.as_str(), m.cost), ("fake-model", 0.5));
    let user = r#"{"type":"message.updated","properties":{"sessionID":"ses_1","info":{"id":"msg_1","role":"user"}}}"#;
    assert_eq!(
        Event::parse(user),
        Some(Event::Other("message.updated".into()))
    );
    assert_eq!(
        Event::parse(r#"{"type":"server.connected","properties":{}}"#),
        Some(Event::Other("server.connected".into()))
    );
    assert_eq!(Event::parse("not json"), None);
}

#[test]
fn the_password_is_never_shown() {
    let server = Server::new(4242, "s3cret-pw").unwrap();
    assert_eq!(server.url(), "http://127.0.0.1:4242");
    assert!(!format!("{server:?}").contains("s3cret-pw"));
}

#[tokio::test]
async fn a_server_that_is_not_there_is_unreachable_nothing_sent() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let server = Server::new(port, "pw").unwrap();
    let error = server.prompt("ses_1", "hello").await.unwrap_err();
    assert!(matches!(error, Error::Unreachable { .. }), "{error}");
}
