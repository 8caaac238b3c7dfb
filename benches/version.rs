//! What knowing the client's release costs (issue 30): `claude --version` is asked once
//! per binary and kept by path, size and mtime, so every later look-up — at each
//! session's start and respawn, and for an old record on each paste — is a `stat` and a
//! map look-up. Printed: the first look-up (one process), the cached one, and how many
//! processes ran (`harness::version::runs`, the program's own counter).
//!
//! `cargo bench --bench version` (a plain `main`). With `THE_LOOP_CLAUDE_BIN` set, the
//! real Claude Code is the binary asked; else a stand-in script.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::time::Instant;
use the_loop::harness::version;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let bin = match std::env::var_os("THE_LOOP_CLAUDE_BIN") {
        Some(bin) => std::path::PathBuf::from(bin),
        None => {
            let bin = dir.path().join("claude");
            std::fs::write(&bin, "#!/bin/sh\necho '2.1.332 (Claude Code)'\n").unwrap();
            std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
            bin
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let first = runtime.block_on(version::of(&bin)).unwrap();
    let first_took = started.elapsed();
    const N: u32 = 10_000;
    let started = Instant::now();
    for _ in 0..N {
        let again = runtime.block_on(version::of(&bin)).unwrap();
        assert_eq!(again, first);
    }
    let cached = started.elapsed() / N;
    println!(
        "version look-up of {} ({first}): first {:.1} ms (runs the binary), cached {:.2} µs each over {N}; processes run: {}",
        bin.display(),
        first_took.as_secs_f64() * 1e3,
        cached.as_secs_f64() * 1e6,
        version::runs()
    );
}
