//! Where a secret could show on this machine while a test runs: any process's argv,
//! any file under a directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Every process's argv that holds `needle`, sampled until `stop`; with the number of
/// sweeps made.
pub fn sample_cmdlines(
    needle: &'static str,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<(usize, Vec<String>)> {
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut samples = 0;
        while !stop.load(Ordering::SeqCst) {
            for entry in std::fs::read_dir("/proc").unwrap().flatten() {
                if let Ok(raw) = std::fs::read(entry.path().join("cmdline")) {
                    let line = String::from_utf8_lossy(&raw).replace('\0', " ");
                    if line.contains(needle) {
                        seen.push(line);
                    }
                }
            }
            samples += 1;
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        (samples, seen)
    })
}

/// The regular files under `root` (symbolic links not followed) that hold `needle`.
pub fn files_holding(root: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file()
                && std::fs::read(entry.path())
                    .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(needle))
            {
                found.push(entry.path());
            }
        }
    }
    found
}
