//! Durable file writes: every state write is atomic (temp file in the same directory,
//! fsync, rename), and a corrupt state file is moved aside, never fatal (SPEC §2).

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically: readers see the old content or the new, never a
/// torn file, even if the process dies mid-write.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
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
        let mut f = File::create(&tmp)?;
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
