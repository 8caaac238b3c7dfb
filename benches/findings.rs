//! Findings (SPEC §21.3) are read after every critic round: the parse of a critic's
//! output and the check against its worktree must stay bounded when a critic names
//! 10 000 places. Two shapes: 10 000 places in one real file (the cap ends the checking
//! at 200, the rest are counted), and 10 000 places in 10 000 files that do not exist
//! (the first 1 000 looked up, the rest refused without a lookup).

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use the_loop::critic::findings::{check, named};

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary worktree");
    std::fs::create_dir_all(dir.path().join("src")).expect("src/");
    std::fs::write(dir.path().join("src/lib.rs"), "line\n".repeat(5_000)).expect("a file");

    let one_file: String = (0..10_000)
        .map(|i| format!("src/lib.rs:{}: warning: finding {i}\n", i % 5_000 + 1))
        .collect();
    c.bench_function("findings/10k_places_one_file", |b| {
        b.iter(|| check(named(black_box(&one_file), None), dir.path()))
    });

    let missing: String = (0..10_000)
        .map(|i| format!("src/missing_{i}.rs:1: finding {i}\n"))
        .collect();
    c.bench_function("findings/10k_places_missing_files", |b| {
        b.iter(|| check(named(black_box(&missing), None), dir.path()))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
