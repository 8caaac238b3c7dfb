use super::*;
use crate::usage::Tokens;
use crate::usage::line::tests::{TEXT, assistant, usage};

fn write(path: &Path, lines: &[String]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn sub_agent_transcripts_count_for_their_parent() {
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("abc.jsonl");
    write(
        &main,
        &[assistant(
            "msg_1",
            "r1",
            "claude-opus-4-8",
            &usage(10, 5, 0, 0, 0),
            TEXT,
        )],
    );
    let sub = dir.path().join("abc/subagents/agent-1.jsonl");
    write(
        &sub,
        &[assistant(
            "msg_2",
            "r2",
            "claude-haiku-4-5",
            &usage(7, 3, 0, 0, 0),
            TEXT,
        )],
    );
    std::fs::write(dir.path().join("abc/subagents/notes.txt"), "x").unwrap();
    let mut usage_ = SessionUsage::default();
    assert!(!usage_.is_known(), "nothing known yet: shown as —");
    usage_.follow(main.clone(), Format::Claude);
    let stats = usage_.refresh("2026-12-03", UtcOffset::UTC);
    assert_eq!(usage_.files.len(), 2);
    let by_model = usage_.tally().by_model();
    assert_eq!(by_model["claude-opus-4-8"].input, 10);
    assert_eq!(by_model["claude-haiku-4-5"].output, 3);
    assert_eq!(usage_.bytes_read, stats.bytes);
    assert_eq!(usage_.last_read_bytes, stats.bytes);
    // A refresh with nothing new reads nothing.
    usage_.refresh("2026-12-03", UtcOffset::UTC);
    assert_eq!(usage_.last_read_bytes, 0);
    assert_eq!(usage_.refreshes, 2);
    // Following the same transcript again changes nothing.
    usage_.follow(main, Format::Claude);
    assert_eq!(usage_.files.len(), 2);
    assert_eq!(
        usage_.tally().tokens(),
        Tokens {
            input: 17,
            output: 8,
            ..Tokens::default()
        }
    );
    let back: SessionUsage =
        serde_json::from_value(serde_json::to_value(&usage_).unwrap()).unwrap();
    assert_eq!(back, usage_);
}

#[test]
fn the_project_dir_is_claude_codes_encoding_of_the_cwd() {
    let dir = claude_project_dir(
        Path::new("/h/.claude"),
        Path::new("/tmp/.tmphC8Nlz/project"),
    );
    assert_eq!(
        dir,
        Path::new("/h/.claude/projects/-tmp--tmphC8Nlz-project")
    );
}

#[test]
fn only_a_transcript_inside_the_project_dir_is_accepted() {
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("projects/-w");
    let elsewhere = root.path().join("elsewhere");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let good = project.join("s.jsonl");
    assert_eq!(
        accept_transcript(&good, &project).unwrap(),
        project.canonicalize().unwrap().join("s.jsonl")
    );
    for bad in [
        elsewhere.join("s.jsonl"),
        project.join("../-x/s.jsonl"),
        project.join("sub/s.jsonl"),
        PathBuf::from("/etc/passwd.jsonl"),
        PathBuf::from("s.jsonl"),
    ] {
        assert!(
            accept_transcript(&bad, &project).is_err(),
            "{}",
            bad.display()
        );
    }
    assert_eq!(
        accept_transcript(&project.join("s.txt"), &project),
        Err(TranscriptError::NotJsonl(
            project.join("s.txt").display().to_string()
        ))
    );
    // A symlinked directory inside the project that leads out is refused.
    std::os::unix::fs::symlink(&elsewhere, project.join("link")).unwrap();
    assert!(accept_transcript(&project.join("link/s.jsonl"), &project).is_err());
    // The project dir itself a symlink elsewhere: both resolve, so it is the same dir.
    let alias = root.path().join("alias");
    std::os::unix::fs::symlink(&project, &alias).unwrap();
    assert!(accept_transcript(&alias.join("s.jsonl"), &project).is_ok());
}
