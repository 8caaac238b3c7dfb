//! The trust edit: only `projects.<dir>.hasTrustDialogAccepted` changes; everything
//! else in the file is written back exactly as read.

use super::*;

/// A config as Claude Code writes it, with values whose text a re-encoding would change.
const CONFIG: &str = r#"{
  "numStartups": 42,
  "installMethod": "npm-local",
  "hasCompletedOnboarding": true,
  "bigNumber": 12345678901234567890123,
  "float": 1.50,
  "escaped": "caf\u00e9 \ud83d\ude00",
  "customApiKeyResponses": {
    "approved": [
      "0000000000000000000"
    ],
    "rejected": []
  },
  "projects": {
    "/home/me/other": {
      "allowedTools": [],
      "hasTrustDialogAccepted": false,
      "lastCost": 0.10
    },
    "DIR": {
      "allowedTools": ["Bash(ls:*)"],
      "hasTrustDialogAccepted": false,
      "exampleFiles": []
    }
  },
  "zLast": null
}
"#;

fn raw_entries(text: &str) -> Vec<(String, String)> {
    let top: Ordered = serde_json::from_str(text).unwrap();
    top.0
        .into_iter()
        .map(|(k, v)| match v {
            Node::Raw(r) => (k, r.get().to_string()),
            Node::Object(_) => unreachable!(),
        })
        .collect()
}

fn setup(text: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    fs::create_dir_all(&project).unwrap();
    let project = fs::canonicalize(&project).unwrap();
    let file = dir.path().join(".claude.json");
    let text = text.replace("DIR", &project.display().to_string());
    fs::write(&file, text).unwrap();
    fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).unwrap();
    (dir, file, project)
}

#[test]
fn only_the_trust_key_of_the_one_project_changes() {
    let (_dir, file, project) = setup(CONFIG);
    let before = fs::read_to_string(&file).unwrap();
    assert_eq!(trust(&file, &project).unwrap(), Marked::Marked);
    let after = fs::read_to_string(&file).unwrap();

    let (b, a) = (raw_entries(&before), raw_entries(&after));
    assert_eq!(
        b.iter().map(|e| &e.0).collect::<Vec<_>>(),
        a.iter().map(|e| &e.0).collect::<Vec<_>>(),
        "same keys, same order"
    );
    for ((key, old), (_, new)) in b.iter().zip(&a) {
        if key != "projects" {
            assert_eq!(old, new, "{key} is byte-for-byte the same");
        }
    }
    let projects = |text: &str| -> Vec<(String, serde_json::Value)> {
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        v["projects"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let (pb, pa) = (projects(&before), projects(&after));
    assert_eq!(pb[0], pa[0], "another project is untouched");
    let key = project.display().to_string();
    assert_eq!(pa[1].0, key);
    let mut expected = pb[1].1.clone();
    expected["hasTrustDialogAccepted"] = serde_json::Value::Bool(true);
    assert_eq!(pa[1].1, expected, "only the trust key changed");
    assert!(
        after.contains("\"lastCost\": 0.10"),
        "raw numbers kept:\n{after}"
    );
    assert!(after.ends_with("}\n"));
    let mode = fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // Again: nothing to do, nothing written.
    assert_eq!(trust(&file, &project).unwrap(), Marked::Already);
    assert_eq!(fs::read_to_string(&file).unwrap(), after);
}

#[test]
fn a_new_project_entry_and_a_missing_file_are_created() {
    let (dir, file, project) = setup("{\"theme\":\"dark\"}");
    trust(&file, &project).unwrap();
    let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["theme"], "dark");
    assert_eq!(
        v["projects"][project.display().to_string()],
        serde_json::json!({"hasTrustDialogAccepted": true})
    );
    let fresh = dir.path().join("home2/.claude.json");
    trust(&fresh, &project).unwrap();
    let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(&fresh).unwrap()).unwrap();
    assert_eq!(
        v["projects"][project.display().to_string()]["hasTrustDialogAccepted"],
        true
    );
    assert_eq!(
        fs::metadata(&fresh).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn a_file_that_is_not_an_object_is_left_alone() {
    for bad in [
        "[1,2]",
        "{not json",
        "{\"projects\": 3}",
        "{\"projects\": {\"DIR\": []}}",
    ] {
        let (_dir, file, project) = setup(bad);
        let before = fs::read(&file).unwrap();
        let err = trust(&file, &project).unwrap_err();
        assert!(
            matches!(err, TrustError::NotAnObject { .. }),
            "{bad}: {err:?}"
        );
        assert!(err.to_string().contains("not changing it"), "{err}");
        assert_eq!(fs::read(&file).unwrap(), before, "{bad}");
    }
}

#[test]
fn a_symlinked_config_is_followed_and_the_link_kept() {
    let (dir, file, project) = setup("{}");
    let link = dir.path().join("linked.json");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    trust(&link, &project).unwrap();
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        fs::read_to_string(&file)
            .unwrap()
            .contains("hasTrustDialogAccepted")
    );
}

#[test]
fn claude_codes_lock_is_respected_and_a_stale_one_taken_over() {
    let (_dir, file, project) = setup("{}");
    let lock = PathBuf::from(format!("{}.lock", file.display()));
    fs::create_dir(&lock).unwrap();
    // Held (fresh): we wait, then give up without writing.
    let started = std::time::Instant::now();
    let err = trust(&file, &project).unwrap_err();
    assert!(matches!(err, TrustError::Locked { .. }), "{err:?}");
    assert!(started.elapsed() >= LOCK_WAIT);
    assert_eq!(fs::read_to_string(&file).unwrap(), "{}");
    // Stale (a crashed holder): taken over.
    let old = std::time::SystemTime::now() - Duration::from_secs(60);
    fs::File::open(&lock).unwrap().set_modified(old).unwrap();
    assert_eq!(trust(&file, &project).unwrap(), Marked::Marked);
    assert!(!lock.exists(), "released");
}

#[test]
fn concurrent_marks_keep_each_other() {
    let (dir, file, _) = setup("{\"keep\": 1}");
    let dirs: Vec<PathBuf> = (0..8)
        .map(|i| {
            let d = dir.path().join(format!("p{i}"));
            fs::create_dir_all(&d).unwrap();
            fs::canonicalize(d).unwrap()
        })
        .collect();
    std::thread::scope(|s| {
        for d in &dirs {
            let file = &file;
            s.spawn(move || trust(file, d).unwrap());
        }
    });
    let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["keep"], 1);
    for d in &dirs {
        assert_eq!(
            v["projects"][d.display().to_string()]["hasTrustDialogAccepted"],
            true
        );
    }
}
