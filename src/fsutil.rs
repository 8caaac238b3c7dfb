//! Durable, private file writes: every state write is atomic (temp file in the same
//! directory, fsync, rename), a corrupt state file is moved aside, never fatal (SPEC §2),
//! and state is the user's alone — directories 0700, files 0600, whatever the umask
//! (SPEC §14.5) — worktrees and what agents write in them included (SPEC §18.5).

use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The mode of every directory the-loop creates for its state.
pub const PRIVATE_DIR_MODE: u32 = 0o700;
/// The mode of every state file.
pub const PRIVATE_FILE_MODE: u32 = 0o600;

/// Sets this process's umask to 077: what it creates from now on, and what the program
/// it then `exec`s creates, is private. Process-wide, so only for a process about to
/// become another program (a session's first process, `exec-env`) — never the
/// supervisor, whose umask a tmux server it starts would hand to every pane in it.
pub fn use_private_umask() {
    use nix::sys::stat::{Mode, umask};
    umask(Mode::S_IRWXG | Mode::S_IRWXO);
}

/// `create_dir_all` whose new directories are 0700, each of them exactly (a umask may
/// take owner bits too, and each must stay usable to us). An existing directory is left
/// as it is ([`tighten`] fixes looser ones at start).
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    let missing: Vec<&Path> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.is_dir())
        .collect();
    for d in missing.into_iter().rev() {
        match DirBuilder::new().mode(PRIVATE_DIR_MODE).create(d) {
            Ok(()) => fs::set_permissions(d, Permissions::from_mode(PRIVATE_DIR_MODE))?,
            // Made meanwhile by another process.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && d.is_dir() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
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

/// An exclusive `flock` on `path` (created 0600 in a private directory), held until
/// the guard drops: one read-modify-write of a state file at a time across processes.
pub fn lock_exclusive(path: &Path) -> io::Result<nix::fcntl::Flock<File>> {
    if let Some(dir) = path.parent() {
        create_private_dir_all(dir)?;
    }
    let file = open_private(
        File::options().create(true).truncate(false).write(true),
        path,
    )?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, errno)| io::Error::from(errno))
}

/// What [`tighten`] changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tightened {
    pub dirs: usize,
    pub files: usize,
    /// Paths whose mode could not be read or changed, with why.
    pub errors: Vec<String>,
}

/// Makes everything under `root` (and `root`) private: directories and files lose every
/// group and other bit; a file the-loop writes also loses an owner execute bit (0600).
/// Inside a git checkout (below a directory holding `.git`, such as a session's
/// worktree) a file keeps its owner's bits: git records the execute bit, and a checkout
/// whose scripts stopped being executable would show every one of them as changed.
/// Symbolic links are not followed. Only modes that allow more than that are changed,
/// so a second call changes nothing.
pub fn tighten(root: &Path) -> Tightened {
    let mut report = Tightened::default();
    tighten_dir(root, false, &mut report);
    report
}

fn tighten_dir(dir: &Path, in_checkout: bool, report: &mut Tightened) {
    let Ok(meta) = fs::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let in_checkout = in_checkout || fs::symlink_metadata(dir.join(".git")).is_ok();
    set_mode(dir, &meta, PRIVATE_DIR_MODE, report);
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            report.errors.push(format!("{}: {e}", dir.display()));
            return;
        }
    };
    let file_mode = if in_checkout {
        OWNER_ONLY
    } else {
        PRIVATE_FILE_MODE
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            tighten_dir(&path, in_checkout, report);
        } else if !meta.file_type().is_symlink() {
            set_mode(&path, &meta, file_mode, report);
        }
    }
}

/// The owner's bits, and nobody else's.
const OWNER_ONLY: u32 = 0o700;

/// Takes from `path`'s mode every bit `keep` does not hold, when it has any.
fn set_mode(path: &Path, meta: &fs::Metadata, keep: u32, report: &mut Tightened) {
    let mode = meta.permissions().mode() & 0o777;
    if mode & !keep == 0 {
        return;
    }
    match fs::set_permissions(path, Permissions::from_mode(mode & keep)) {
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
    fn every_directory_made_is_0700_and_an_existing_one_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mine = dir.path().join("operators");
        fs::create_dir(&mine).unwrap();
        loose(&mine, 0o755);
        let deep = mine.join("state/harness/slug");
        create_private_dir_all(&deep).unwrap();
        for d in [&mine.join("state"), &mine.join("state/harness"), &deep] {
            assert_eq!(mode(d), 0o700, "{}", d.display());
        }
        assert_eq!(mode(&mine), 0o755, "not made here");
        create_private_dir_all(&deep).unwrap();
        // A file in the way is an error, not a directory.
        fs::write(deep.join("file"), "").unwrap();
        let err = create_private_dir_all(&deep.join("file/sub")).unwrap_err();
        assert!(
            matches!(
                err.kind(),
                io::ErrorKind::NotADirectory | io::ErrorKind::AlreadyExists
            ),
            "{err:?}"
        );
    }

    #[test]
    fn tighten_fixes_looser_state_and_leaves_links_alone() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("state");
        fs::create_dir_all(root.join("sessions")).unwrap();
        fs::write(root.join("events.jsonl"), "").unwrap();
        fs::write(root.join("sessions/a.json"), "{}").unwrap();
        fs::write(root.join("already.json"), "{}").unwrap();
        fs::write(root.join("stray-script"), "").unwrap();
        loose(&root, 0o755);
        loose(&root.join("sessions"), 0o775);
        loose(&root.join("events.jsonl"), 0o644);
        loose(&root.join("sessions/a.json"), 0o666);
        loose(&root.join("already.json"), 0o600);
        loose(&root.join("stray-script"), 0o755);
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
        assert_eq!(mode(&root.join("stray-script")), 0o600, "state is not run");
        assert_eq!(mode(&outside), 0o644, "links are not followed");
        assert_eq!((report.dirs, report.files), (2, 3), "{report:?}");
        assert_eq!(tighten(&root), Tightened::default(), "idempotent");
    }

    fn loose(path: &Path, mode: u32) {
        fs::set_permissions(path, Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn tighten_makes_checkouts_private_and_keeps_their_owners_bits() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("state");
        // A worktree (`.git` is a file) with a script, a read-only file and a
        // subdirectory, and a full clone (`.git` a directory) beside it.
        let worktree = root.join("worktrees/octo-repo/1");
        fs::create_dir_all(worktree.join("src")).unwrap();
        fs::write(
            worktree.join(".git"),
            "gitdir: /src/repo/.git/worktrees/1\n",
        )
        .unwrap();
        fs::write(worktree.join("run.sh"), "#!/bin/sh\n").unwrap();
        fs::write(worktree.join("src/lib.rs"), "").unwrap();
        fs::write(worktree.join("LOCKED"), "").unwrap();
        let clone = root.join("clone");
        fs::create_dir_all(clone.join(".git/objects/ab")).unwrap();
        fs::write(clone.join(".git/objects/ab/cdef"), "").unwrap();
        for d in [
            &root.join("worktrees"),
            &worktree,
            &worktree.join("src"),
            &clone,
        ] {
            loose(d, 0o755);
        }
        loose(&clone.join(".git/objects/ab"), 0o775);
        loose(&worktree.join("run.sh"), 0o775);
        loose(&worktree.join("src/lib.rs"), 0o664);
        loose(&worktree.join("LOCKED"), 0o444);
        loose(&clone.join(".git/objects/ab/cdef"), 0o444);

        let report = tighten(&root);
        assert!(report.errors.is_empty(), "{report:?}");
        for d in [
            &worktree,
            &worktree.join("src"),
            &clone.join(".git/objects/ab"),
        ] {
            assert_eq!(mode(d), 0o700, "{}", d.display());
        }
        assert_eq!(mode(&worktree.join("run.sh")), 0o700, "still executable");
        assert_eq!(mode(&worktree.join("src/lib.rs")), 0o600);
        assert_eq!(mode(&worktree.join("LOCKED")), 0o400, "never given more");
        assert_eq!(mode(&worktree.join(".git")), 0o600);
        assert_eq!(mode(&clone.join(".git/objects/ab/cdef")), 0o400);
        assert_eq!(tighten(&root), Tightened::default(), "idempotent");
        // The top of a checkout is one too: its scripts stay executable.
        loose(&worktree.join("run.sh"), 0o755);
        tighten(&worktree);
        assert_eq!(mode(&worktree.join("run.sh")), 0o700);
    }

    #[test]
    fn tighten_of_nothing_or_a_file_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(tighten(&dir.path().join("missing")), Tightened::default());
        let file = dir.path().join("f");
        fs::write(&file, "").unwrap();
        loose(&file, 0o644);
        assert_eq!(tighten(&file), Tightened::default());
        assert_eq!(mode(&file), 0o644, "only directories are walked");
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
