//! SPEC §16 figures: the time to create a worktree for a 10,000-file repository (and to
//! remove it again when its session ends clean), and the disk one worktree uses. Real
//! git: a bare origin with 10,000 files in 100 directories, cloned; each iteration is
//! one `Workspaces::place` (fetch, `worktree add`) then one `Workspaces::finish`
//! (status, rev-list, `worktree remove`, `branch -D`).
//!
//! Run: `cargo bench --bench workspace`. The disk figure is printed once, from `du -sk`
//! of a fresh worktree (the checked-out files plus its entry under `.git/worktrees`;
//! objects are shared with the checkout).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use the_loop::events::Source;
use the_loop::work_item::WorkItemRef;
use the_loop::workspace::Placement;
use the_loop::workspace::test_repo::TestRepo;

const FILES: usize = 10_000;

fn du_kib(path: &Path) -> u64 {
    let out = Command::new("du").arg("-sk").arg(path).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn bench_worktrees(c: &mut Criterion) {
    let git_repo = TestRepo::seeded(|seed| {
        for i in 0..FILES {
            let sub = seed.join(format!("src/m{:02}", i % 100));
            std::fs::create_dir_all(&sub).unwrap();
            std::fs::write(
                sub.join(format!("f{i:05}.rs")),
                format!("// file {i}\npub fn f{i}() -> usize {{ {i} }}\n"),
            )
            .unwrap();
        }
    });
    let clone = &git_repo.clone;
    let ws = git_repo.workspaces();
    let repo = git_repo.repo_config();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let item = WorkItemRef::new("octo", "repo", 1);

    // The disk figure, once.
    let placed = runtime
        .block_on(ws.place(&item, Some(&repo), Source::Cli))
        .unwrap();
    let Placement::Worktree(record) = placed else {
        panic!("expected a worktree")
    };
    let admin = clone.join(".git/worktrees");
    eprintln!(
        "workspace: one worktree of a {FILES}-file repository uses {} KiB (checkout {} KiB, .git/worktrees {} KiB; the clone itself is {} KiB)",
        du_kib(&record.dir) + du_kib(&admin),
        du_kib(&record.dir),
        du_kib(&admin),
        du_kib(clone),
    );
    runtime.block_on(ws.finish(&item, Source::Cli)).unwrap();

    let mut group = c.benchmark_group("workspace");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("create_and_remove_10k_files", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let placed = ws.place(&item, Some(&repo), Source::Cli).await.unwrap();
                assert!(matches!(placed, Placement::Worktree(_)));
                ws.finish(&item, Source::Cli).await.unwrap();
            })
        })
    });
    let item2 = WorkItemRef::new("octo", "repo", 2);
    runtime
        .block_on(ws.place(&item2, Some(&repo), Source::Cli))
        .unwrap();
    group.bench_function("reuse_10k_files", |b| {
        b.iter(|| {
            runtime
                .block_on(ws.place(&item2, Some(&repo), Source::Cli))
                .unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, bench_worktrees);
criterion_main!(benches);
