//! Durable, private file writes: every state write is atomic (temp file in the same
//! directory, fsync, rename), a corrupt state file is moved aside, never fatal (SPEC §2),
//! and state is the user's alone — directories 0700, files 0600, whatever the umask
//! (SPEC §14.5).

use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The mode of every directory the-loop creates for its state.
pub const PRIVATE_DIR_MODE: u32 = 0o700;
/// The mode of every state file.
pub const PRIVATE_FILE_MODE: u32 = 0o600;

/// `create_dir_all` whose new directories are 0700. An existing directory is left as it
/// is ([`tighten`] fixes looser ones at start).
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIR_MODE)
        .create(dir)?;
    // The umask may have taken bits off 0700; the directory must stay usable to us.
    fs::set_permissions(dir, Permissions::from_mode(PRIVATE_DIR_MODE))
}

/// `options.open(path)` with a new file created 0600 (and exactly 0600 whatever the
/// umask). The directory must exist ([`create_private_dir_all`]).
pub fn open_private(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    let file = options.mode(PRIVATE_FILE_MODE).open(path)?;
    let mode = file.metadata()?.permissions().mode() & 0o777;
    if mode != PRIVATE_FILE_MODE && mode & !PRIVATE_FILE_MODE == 0 {
        // Created under a umask that took the owner's bits (a looser file is left to
        // `tighten`: it was not created here).
        file.set_permissions(Permissions::from_mode(PRIVATE_FILE_MODE))?;
    }
    Ok(file)
}

/// What [`tighten`] changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tightened {
    pub dirs: usize,
    pub files: usize,
    /// Paths whose mode could not be read or changed, with why.
    pub errors: Vec<String>,
}

/// Makes the state under `root` private: every directory 0700, every file 0600 when
/// they allow more (group or other bits, or an owner execute bit on a file). Symbolic
/// links are not followed, and a git checkout (a directory holding `.git`, such as a
/// session's worktree) is left as its owner made it: its modes are the project's.
pub fn tighten(root: &Path) -> Tightened {
    let mut report = Tightened::default();
    tighten_dir(root, &mut report);
    report
}

fn tighten_dir(dir: &Path, report: &mut Tightened) {
    let Ok(meta) = fs::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() || dir.join(".git").exists() {
        return;
    }
    set_mode(dir, &meta, PRIVATE_DIR_MODE, report);
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            report.errors.push(format!("{}: {e}", dir.display()));
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            tighten_dir(&path, report);
        } else if !meta.file_type().is_symlink() {
            set_mode(&path, &meta, PRIVATE_FILE_MODE, report);
        }
    }
}

fn set_mode(path: &Path, meta: &fs::Metadata, want: u32, report: &mut Tightened) {
    let mode = meta.permissions().mode() & 0o777;
    if mode & !want == 0 {
        return;
    }
    match fs::set_permissions(path, Permissions::from_mode(want)) {
        Ok(()) if meta.is_dir() => report.dirs += 1,
        Ok(()) => report.files += 1,
        Err(e) => report.errors.push(format!("{}: {e}", path.display())),
    }
}

/// Writes `bytes` to `path` atomically: readers see the old content or the new, never a
/// torn file, even if the process dies mid-write.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    create_private_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "state".into());
    let tmp = dir.join(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let result = (|| {
        let mut f = open_private(OpenOptions::new().write(true).create_new(true), &tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        // Make the rename itself durable.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Serializes `value` as pretty JSON and writes it atomically.
pub fn atomic_write_json<T: serde::Serialize>(path: &Path, value: &T) -> io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
    bytes.push(b'\n');
    atomic_write(path, &bytes)
}

/// Moves a corrupt file aside as `<name>.corrupt-<ts>` and returns the new path.
pub fn move_aside(path: &Path) -> io::Result<PathBuf> {
    let ts = crate::time::compact_now();
    let mut target = path.as_os_str().to_owned();
    target.push(format!(".corrupt-{ts}"));
    let target = PathBuf::from(target);
    fs::rename(path, &target)?;
    Ok(target)
}

/// What reading a JSON state file found.
#[derive(Debug)]
pub enum StateRead<T> {
    Missing,
    Ok(T),
    /// The file did not parse; it was moved to the given path.
    Corrupt {
        moved_to: PathBuf,
        error: String,
    },
}

/// Reads a JSON state file. A file that does not parse is moved aside and reported,
/// so one bad file never stops the supervisor.
pub fn read_json_state<T: serde::de::DeserializeOwned>(path: &Path) -> io::Result<StateRead<T>> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(StateRead::Missing),
        Err(e) => return Err(e),
    };
    match serde_json::from_slice(&bytes) {
        Ok(v) => Ok(StateRead::Ok(v)),
        Err(e) => {
            let moved_to = move_aside(path)?;
            Ok(StateRead::Corrupt {
                moved_to,
                error: e.to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b.json");
        atomic_write(&p, b"one").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn state_is_created_private_whatever_the_umask_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state/sub/x.json");
        atomic_write(&p, b"{}").unwrap();
        assert_eq!(mode(&p), 0o600);
        assert_eq!(mode(&dir.path().join("state/sub")), 0o700);
        assert_eq!(mode(&dir.path().join("state")), 0o700);
        let log = dir.path().join("state/logs/a.log");
        create_private_dir_all(log.parent().unwrap()).unwrap();
        open_private(OpenOptions::new().append(true).create(true), &log).unwrap();
        assert_eq!(mode(&log), 0o600);
        assert_eq!(mode(&dir.path().join("state/logs")), 0o700);
    }

    #[test]
    fn tighten_fixes_looser_state_and_leaves_checkouts_and_links_alone() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("state");
        let loose = |p: &Path, m: u32| fs::set_permissions(p, Permissions::from_mode(m)).unwrap();
        fs::create_dir_all(root.join("sessions")).unwrap();
        fs::write(root.join("events.jsonl"), "").unwrap();
        fs::write(root.join("sessions/a.json"), "{}").unwrap();
        fs::write(root.join("already.json"), "{}").unwrap();
        loose(&root, 0o755);
        loose(&root.join("sessions"), 0o775);
        loose(&root.join("events.jsonl"), 0o644);
        loose(&root.join("sessions/a.json"), 0o666);
        loose(&root.join("already.json"), 0o600);
        // A worktree under the state root keeps its project's modes.
        let checkout = root.join("worktrees/octo-repo/1");
        fs::create_dir_all(checkout.join(".git")).unwrap();
        fs::write(checkout.join("run.sh"), "#!/bin/sh\n").unwrap();
        loose(&checkout.join("run.sh"), 0o755);
        loose(&checkout, 0o755);
        // A link is not followed out of the state root.
        let outside = dir.path().join("outside.txt");
        fs::write(&outside, "x").unwrap();
        loose(&outside, 0o644);
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();

        let report = tighten(&root);
        assert!(report.errors.is_empty(), "{report:?}");
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&root.join("sessions")), 0o700);
        assert_eq!(mode(&root.join("events.jsonl")), 0o600);
        assert_eq!(mode(&root.join("sessions/a.json")), 0o600);
        assert_eq!(mode(&root.join("already.json")), 0o600);
        assert_eq!(mode(&root.join("worktrees")), 0o700);
        assert_eq!(mode(&checkout), 0o755, "a checkout is left alone");
        assert_eq!(mode(&checkout.join("run.sh")), 0o755);
        assert_eq!(mode(&outside), 0o644, "links are not followed");
        assert_eq!(report.files, 2, "{report:?}");
        assert_eq!(tighten(&root), Tightened::default(), "idempotent");
    }

    #[test]
    fn corrupt_state_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        fs::write(&p, b"{not json").unwrap();
        match read_json_state::<serde_json::Value>(&p).unwrap() {
            StateRead::Corrupt { moved_to, .. } => {
                assert!(!p.exists());
                assert!(moved_to.to_string_lossy().contains(".corrupt-"));
                assert_eq!(fs::read(moved_to).unwrap(), b"{not json");
            }
            other => panic!("expected corrupt, got {other:?}"),
        }
        assert!(matches!(
            read_json_state::<serde_json::Value>(&p).unwrap(),
            StateRead::Missing
        ));
    }
}
