//! The async runtime every command (and the demo) runs on: one way to build it.

/// How many threads a runtime runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// This thread only: a command that waits on one thing at a time.
    One,
    /// A pool (tokio's default size when `None`): the supervisor, the screen.
    Pool(Option<usize>),
}

/// A runtime with timers and I/O enabled.
pub fn build(threads: Threads) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = match threads {
        Threads::One => tokio::runtime::Builder::new_current_thread(),
        Threads::Pool(workers) => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            if let Some(workers) = workers {
                builder.worker_threads(workers);
            }
            builder
        }
    };
    builder.enable_all().build()
}
