//! The one check that a state root is the user's alone (SPEC §14.5, §18.5): a walk of
//! the whole tree — the-loop's state, worktrees and what agents wrote in them — that
//! finds nothing group or others may read, write or enter.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;

/// The bits that give group or others any access.
const OPEN_BITS: u32 = 0o077;

/// Every entry under `root` (and `root` itself) that group or others can use, one line
/// each: its mode, its kind and its path. Symbolic links are not followed (their own
/// mode means nothing); a socket counts as private when it is, or when its directory is
/// 0700 (connecting needs the directory).
pub fn open_entries(root: &Path) -> Vec<String> {
    let mut open = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            // Removed while we walked (a temp file renamed into place): nothing to judge.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => panic!("cannot read {}: {e}", path.display()),
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            continue;
        }
        let mode = meta.permissions().mode() & 0o7777;
        let socket_in_private_dir = kind.is_socket()
            && path.parent().is_some_and(|dir| {
                std::fs::symlink_metadata(dir)
                    .is_ok_and(|m| m.permissions().mode() & 0o777 == 0o700)
            });
        if mode & OPEN_BITS != 0 && !socket_in_private_dir {
            let what = if kind.is_dir() {
                "dir"
            } else if kind.is_socket() {
                "socket"
            } else if kind.is_file() {
                "file"
            } else {
                "other"
            };
            open.push(format!("{mode:04o} {what:6} {}", path.display()));
        }
        if kind.is_dir() {
            let entries = std::fs::read_dir(&path)
                .unwrap_or_else(|e| panic!("cannot list {}: {e}", path.display()));
            stack.extend(entries.filter_map(Result::ok).map(|e| e.path()));
        }
    }
    open.sort();
    open
}

/// Panics listing every entry under `root` that group or others can use.
pub fn assert_private_tree(root: &Path) {
    assert!(root.is_dir(), "no state root at {}", root.display());
    let open = open_entries(root);
    assert!(
        open.is_empty(),
        "{} path(s) under {} are open to group or others:\n{}",
        open.len(),
        root.display(),
        open.join("\n")
    );
}
