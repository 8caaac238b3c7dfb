use super::*;
use crate::events::EventLog;
use std::sync::Arc;

fn item(n: u64) -> WorkItemRef {
    WorkItemRef::new("octo", "repo", n)
}

fn registry(dir: &Path) -> Registry {
    let paths = StatePaths::new(dir);
    Registry::new(&paths, EventLog::open(&paths), Source::Cli)
}

fn events(dir: &Path) -> Vec<Value> {
    fs::read_to_string(dir.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_record_round_trips_with_the_spec_field_names() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(dir.path());
    let mut record = SessionRecord::new(&item(15), "claude", "/src/repo".into());
    record.harness_session_id = Some("abc".into());
    record.pane_id = Some("%3".into());
    record.record_delivery("d-1");
    reg.put(&record).unwrap();

    let path = dir.path().join("sessions/github-octo-repo-15.json");
    let raw: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    for key in [
        "ref",
        "url",
        "harness",
        "harnessSessionId",
        "cwd",
        "tmuxSession",
        "paneId",
        "status",
        "createdAt",
        "lastEventAt",
        "recentDeliveries",
    ] {
        assert!(raw.get(key).is_some(), "missing {key}: {raw}");
    }
    assert_eq!(raw["ref"], "github:octo/repo#15");
    assert_eq!(raw["status"], "active");
    assert_eq!(raw["tmuxSession"], "loop-github-octo-repo-15");
    assert_eq!(reg.get(&item(15)).unwrap(), Some(record));
    assert_eq!(reg.get(&item(16)).unwrap(), None);
}

#[test]
fn writes_are_atomic_and_leave_no_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(dir.path());
    let record = SessionRecord::new(&item(1), "claude", "/src".into());
    reg.put(&record).unwrap();
    for i in 0..20 {
        reg.update(&item(1), |r| r.record_delivery(&format!("d-{i}")))
            .unwrap();
    }
    let names: Vec<String> = fs::read_dir(reg.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.contains(".tmp-")),
        "temp files left: {names:?}"
    );
    assert_eq!(
        reg.get(&item(1)).unwrap().unwrap().recent_deliveries.len(),
        20
    );
}

#[test]
fn readers_never_see_a_torn_record_while_a_writer_rewrites_it() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(dir.path());
    reg.put(&SessionRecord::new(&item(1), "claude", "/src".into()))
        .unwrap();
    let writer = {
        let reg = reg.clone();
        std::thread::spawn(move || {
            for i in 0..200 {
                reg.update(&item(1), |r| r.record_delivery(&format!("d-{i}")))
                    .unwrap();
            }
        })
    };
    let path = reg.path_of(&item(1));
    while !writer.is_finished() {
        let text = fs::read_to_string(&path).unwrap();
        serde_json::from_str::<SessionRecord>(&text).expect("a whole record");
    }
    writer.join().unwrap();
    assert!(
        !events(dir.path())
            .iter()
            .any(|e| e["event"] == "state.corrupt")
    );
}

#[test]
fn a_corrupt_record_is_moved_aside_reported_and_reads_as_absent() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(dir.path());
    fs::create_dir_all(reg.dir()).unwrap();
    let path = reg.path_of(&item(7));
    fs::write(&path, b"{\"ref\": \"github:octo/repo#7\", trunc").unwrap();
    reg.put(&SessionRecord::new(&item(8), "claude", "/src".into()))
        .unwrap();

    let listed = reg.list().unwrap();
    assert_eq!(listed.len(), 1, "the good record is still listed");
    assert_eq!(listed[0].work_item, item(8));
    assert!(!path.exists());
    let aside: Vec<_> = fs::read_dir(reg.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("github-octo-repo-7.json.corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    let corrupt: Vec<Value> = events(dir.path())
        .into_iter()
        .filter(|e| e["event"] == "state.corrupt")
        .collect();
    assert_eq!(corrupt.len(), 1);
    assert_eq!(corrupt[0]["level"], "warning");
    assert!(
        corrupt[0]["moved_to"]
            .as_str()
            .unwrap()
            .contains(".corrupt-")
    );
    assert_eq!(reg.get(&item(7)).unwrap(), None);
}

#[test]
fn concurrent_writers_keep_each_others_fields() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(dir.path());
    reg.put(&SessionRecord::new(&item(1), "claude", "/src".into()))
        .unwrap();
    let reg = Arc::new(reg);
    let mut threads = Vec::new();
    for writer in 0..4 {
        let reg = Arc::clone(&reg);
        threads.push(std::thread::spawn(move || {
            for i in 0..10 {
                // Each writer owns different fields of the same record.
                reg.update(&item(1), |r| {
                    r.record_delivery(&format!("w{writer}-{i}"));
                    if writer == 0 {
                        r.status = if i % 2 == 0 {
                            Status::Paused
                        } else {
                            Status::Active
                        };
                    }
                    if writer == 1 {
                        r.harness_session_id = Some(format!("conversation-{i}"));
                    }
                })
                .unwrap();
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
    let record = reg.get(&item(1)).unwrap().unwrap();
    assert_eq!(record.recent_deliveries.len(), 40, "no delivery id lost");
    for writer in 0..4 {
        for i in 0..10 {
            assert!(record.recent_deliveries.contains(&format!("w{writer}-{i}")));
        }
    }
    assert_eq!(record.status, Status::Active, "writer 0's last change");
    assert_eq!(record.harness_session_id.as_deref(), Some("conversation-9"));
}

#[test]
fn fields_of_a_newer_version_survive_an_update() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(dir.path());
    let record = SessionRecord::new(&item(2), "codex", "/src".into());
    let mut raw = serde_json::to_value(&record).unwrap();
    raw["futureField"] = serde_json::json!({"x": 1});
    fs::create_dir_all(reg.dir()).unwrap();
    fs::write(reg.path_of(&item(2)), raw.to_string()).unwrap();
    reg.update(&item(2), |r| r.status = Status::Paused).unwrap();
    let raw: Value =
        serde_json::from_str(&fs::read_to_string(reg.path_of(&item(2))).unwrap()).unwrap();
    assert_eq!(raw["futureField"]["x"], 1);
    assert_eq!(raw["status"], "paused");
}

#[test]
fn recent_deliveries_keep_the_last_fifty_without_repeats() {
    let mut record = SessionRecord::new(&item(3), "claude", "/src".into());
    for i in 0..60 {
        record.record_delivery(&format!("d-{i}"));
    }
    record.record_delivery("d-20");
    assert_eq!(record.recent_deliveries.len(), RECENT_DELIVERIES);
    assert_eq!(record.recent_deliveries[0], "d-10");
    assert_eq!(record.recent_deliveries.last().unwrap(), "d-20");
    assert!(record.last_event_at.is_some());
}

#[test]
fn lookups_ignore_the_case_of_owner_and_repo() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(dir.path());
    reg.put(&SessionRecord::new(&item(4), "claude", "/src".into()))
        .unwrap();
    let shouted = WorkItemRef::new("Octo", "Repo", 4);
    let found = reg.get(&shouted).unwrap().unwrap();
    assert_eq!(found.work_item, item(4), "the record's own spelling");
    assert_eq!(
        reg.update(&shouted, |r| r.status = Status::Paused).unwrap(),
        Some(())
    );
    assert_eq!(reg.get(&item(4)).unwrap().unwrap().status, Status::Paused);
    assert!(reg.remove(&shouted).unwrap());
    assert_eq!(reg.get(&item(4)).unwrap(), None);
}

#[test]
fn refs_whose_readable_slugs_collide_get_their_own_records() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(dir.path());
    let first = WorkItemRef::new("a-b", "c", 1);
    let second = WorkItemRef::new("a", "b-c", 1);
    assert_eq!(first.legacy_slug(), second.legacy_slug());
    assert_ne!(first.slug(), second.slug());
    reg.put(&SessionRecord::new(&first, "claude", "/src".into()))
        .unwrap();
    assert_eq!(reg.get(&second).unwrap(), None);
    reg.put(&SessionRecord::new(&second, "codex", "/src".into()))
        .unwrap();
    assert_eq!(reg.get(&first).unwrap().unwrap().harness, "claude");
    assert_eq!(reg.get(&second).unwrap().unwrap().harness, "codex");
    assert_eq!(reg.list().unwrap().len(), 2);
}

#[test]
fn a_record_under_its_legacy_name_is_found_and_moved() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(dir.path());
    let item = WorkItemRef::new("octo", "the-loop", 3);
    let other = WorkItemRef::new("octo-the", "loop", 3);
    assert_ne!(item.slug(), item.legacy_slug());
    // As a release before SPEC §14.7 wrote it: the legacy file name and tmux name.
    let mut record = SessionRecord::new(&item, "claude", "/src".into());
    record.tmux_session = "loop-github-octo-the-loop-3".into();
    let legacy = reg.dir().join(format!("{}.json", item.legacy_slug()));
    std::fs::create_dir_all(reg.dir()).unwrap();
    std::fs::write(&legacy, serde_json::to_vec(&record).unwrap()).unwrap();

    assert_eq!(reg.get(&other).unwrap(), None, "another item's legacy file");
    assert!(legacy.exists());
    let found = reg.get(&item).unwrap().unwrap();
    assert_eq!(found.tmux_session, "loop-github-octo-the-loop-3", "kept");
    assert!(!legacy.exists(), "moved");
    assert!(reg.path_of(&item).exists());
    assert_eq!(
        reg.update(&item, |r| r.status = Status::Paused).unwrap(),
        Some(())
    );
    assert_eq!(reg.list().unwrap().len(), 1);
}

#[test]
fn update_and_remove_of_a_missing_record_do_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(dir.path());
    assert_eq!(
        reg.update(&item(9), |r| r.status = Status::Paused).unwrap(),
        None
    );
    assert!(!reg.remove(&item(9)).unwrap());
    assert!(reg.list().unwrap().is_empty());
}

/// A session owns its work item (when a pull request) and the pull request its ship
/// went to, on the item's host and repository; nothing else, each once.
#[test]
fn a_session_owns_its_item_and_the_pull_request_it_shipped() {
    let item = WorkItemRef::on_host("ghe.example.com", "octo", "repo", 1);
    let mut record = SessionRecord::new(&item, "claude", "/src".into());
    assert_eq!(record.own_pulls(), vec![item.clone()]);
    let linked = |number| crate::session::ship::LinkedPull {
        number,
        url: format!("https://ghe.example.com/octo/repo/pull/{number}"),
        draft: true,
    };
    record.pull_request = Some(linked(2));
    let shipped = WorkItemRef::on_host("ghe.example.com", "octo", "repo", 2);
    assert_eq!(record.own_pulls(), vec![item.clone(), shipped]);
    // A pull request's session records the item itself when it ships.
    record.pull_request = Some(linked(1));
    assert_eq!(record.own_pulls(), vec![item]);
}
