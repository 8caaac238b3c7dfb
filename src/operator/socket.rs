//! The operator socket: a Unix domain socket at `<state>/operator.sock`, served by the
//! running supervisor with the same accept loop (and limits) as the webhook listener.
//!
//! Who may connect is decided three times: the directory is made 0700 before the
//! socket exists (so the moment between `bind` and `chmod` exposes nothing), the socket
//! is 0600, and every connection's peer uid (`SO_PEERCRED`) must be ours — which also
//! keeps out root and anything handed a descriptor.
//!
//! The supervisor holds `supervisor.lock` before it binds, so a socket file already
//! there was left by a supervisor that died: it is replaced. Anything else at that path
//! (a file, a directory, a link) is left alone and reported. The file is removed on
//! shutdown — only if it is still the one this process bound.

use crate::server::serve::serve;
use crate::server::{Limits, Listener, Serving, StatsSnapshot};
use axum::Router;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tokio::net::{UnixListener, UnixStream};

#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error(
        "cannot prepare {} for the operator socket: {source}; check that the state directory (THE_LOOP_HOME) is yours and writable",
        dir.display()
    )]
    Dir { dir: PathBuf, source: io::Error },
    #[error(
        "{} exists and is not a socket; move it away so the supervisor can serve the operator socket there",
        path.display()
    )]
    NotASocket { path: PathBuf },
    #[error(
        "cannot listen on {}: {source}; a path over ~100 bytes is too long for a Unix socket — choose a shorter THE_LOOP_HOME",
        path.display()
    )]
    Bind { path: PathBuf, source: io::Error },
}

/// The bound socket, served until [`OperatorSocket::shutdown`] (or drop).
#[derive(Debug)]
pub struct OperatorSocket {
    path: PathBuf,
    /// (device, inode) of the file this process bound.
    identity: (u64, u64),
    serving: Option<Serving>,
}

impl OperatorSocket {
    /// Binds `path` and serves `app` there under `limits`. Must run inside a tokio
    /// runtime.
    pub fn bind(path: &Path, app: Router, limits: Limits) -> Result<Self, SocketError> {
        let dir = path.parent().unwrap_or(Path::new("."));
        private_dir(dir).map_err(|source| SocketError::Dir {
            dir: dir.to_path_buf(),
            source,
        })?;
        remove_stale(path)?;
        let bind_error = |source| SocketError::Bind {
            path: path.to_path_buf(),
            source,
        };
        let listener = UnixListener::bind(path).map_err(bind_error)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(bind_error)?;
        let meta = std::fs::symlink_metadata(path).map_err(bind_error)?;
        let listener = PeerChecked {
            inner: listener,
            uid: nix::unistd::getuid().as_raw(),
        };
        Ok(Self {
            path: path.to_path_buf(),
            identity: (meta.dev(), meta.ino()),
            serving: Some(serve(listener, app, limits)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn stats(&self) -> StatsSnapshot {
        self.serving
            .as_ref()
            .map(Serving::stats)
            .unwrap_or_default()
    }

    /// Stops accepting, lets requests in progress finish, removes the file.
    pub async fn shutdown(mut self) {
        if let Some(serving) = self.serving.take() {
            serving.shutdown().await;
        }
        self.remove();
    }

    fn remove(&self) {
        let ours = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| (m.dev(), m.ino()) == self.identity);
        if ours && let Err(e) = std::fs::remove_file(&self.path) {
            tracing::warn!(path = %self.path.display(), error = %e, "operator socket not removed");
        }
    }
}

impl Drop for OperatorSocket {
    fn drop(&mut self) {
        // Stop accepting before the file goes (the serving task sees the drop).
        drop(self.serving.take());
        self.remove();
    }
}

/// `dir` exists and is 0700.
/// The socket's directory, 0700 even when it already existed looser.
fn private_dir(dir: &Path) -> io::Result<()> {
    crate::fsutil::create_private_dir_all(dir)?;
    std::fs::set_permissions(
        dir,
        std::fs::Permissions::from_mode(crate::fsutil::PRIVATE_DIR_MODE),
    )
}

/// Removes a dead supervisor's socket; refuses to touch anything else.
fn remove_stale(path: &Path) -> Result<(), SocketError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            std::fs::remove_file(path).map_err(|source| SocketError::Bind {
                path: path.to_path_buf(),
                source,
            })
        }
        Ok(_) => Err(SocketError::NotASocket {
            path: path.to_path_buf(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(SocketError::Bind {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The Unix listener, admitting only peers that run as `uid`.
struct PeerChecked {
    inner: UnixListener,
    uid: u32,
}

impl Listener for PeerChecked {
    type Io = UnixStream;

    async fn accept(&self) -> io::Result<UnixStream> {
        self.inner.accept().await.map(|(stream, _)| stream)
    }

    fn admit(&self, io: &UnixStream) -> bool {
        let peer = io.peer_cred().ok().map(|cred| cred.uid());
        let allowed = peer_allowed(peer, self.uid);
        if !allowed {
            tracing::warn!(
                peer_uid = ?peer,
                "operator socket: a connection from another user was closed"
            );
        }
        allowed
    }

    fn peer_pid(&self, io: &UnixStream) -> Option<u32> {
        let pid = io.peer_cred().ok()?.pid()?;
        u32::try_from(pid).ok().filter(|p| *p > 0)
    }
}

/// Only our own uid; an unknown peer is refused.
pub fn peer_allowed(peer: Option<u32>, ours: u32) -> bool {
    peer == Some(ours)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;

    fn app() -> Router {
        Router::new().route("/healthz", get(|| async { "ok\n" }))
    }

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn only_our_own_uid_is_admitted() {
        assert!(peer_allowed(Some(1000), 1000));
        assert!(!peer_allowed(Some(0), 1000), "not even root");
        assert!(!peer_allowed(Some(1001), 1000));
        assert!(!peer_allowed(None, 1000), "a peer we cannot identify");
    }

    #[tokio::test]
    async fn the_socket_is_private_replaces_a_stale_one_and_goes_on_shutdown() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        std::fs::create_dir(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = state.join("operator.sock");
        // What a killed supervisor leaves: a socket file nobody listens on.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        assert!(UnixStream::connect(&path).await.is_err());

        let socket = OperatorSocket::bind(&path, app(), Limits::default()).unwrap();
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&state), 0o700);
        let stream = UnixStream::connect(&path).await.unwrap();
        drop(stream);
        socket.shutdown().await;
        assert!(!path.exists(), "removed on shutdown");
    }

    /// Waits for the server to close `stream`, ignoring what it sent.
    async fn closed(stream: &mut UnixStream) -> bool {
        use tokio::io::AsyncReadExt;
        let mut buf = [0u8; 256];
        let wait = tokio::time::timeout(std::time::Duration::from_secs(20), async {
            while let Ok(1..) = stream.read(&mut buf).await {}
        });
        wait.await.is_ok()
    }

    #[tokio::test]
    async fn the_socket_has_the_listeners_cap_and_timeouts() {
        use tokio::io::AsyncWriteExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("operator.sock");
        let limits = Limits {
            timeouts: crate::server::Timeouts {
                header_read: std::time::Duration::from_millis(300),
                ..Default::default()
            },
            max_connections: 1,
            ..Limits::default()
        };
        let socket = OperatorSocket::bind(&path, app(), limits).unwrap();
        let mut held = UnixStream::connect(&path).await.unwrap();
        held.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
        let mut over = UnixStream::connect(&path).await.unwrap();
        assert!(
            closed(&mut held).await,
            "over the cap: the oldest half-open gives way"
        );
        assert!(closed(&mut over).await, "a head that never ends: closed");
        let stats = socket.stats();
        assert_eq!((stats.evicted, stats.timed_out), (1, 1), "{stats:?}");
        socket.shutdown().await;
    }

    #[tokio::test]
    async fn anything_but_a_socket_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("operator.sock");
        std::fs::write(&path, "precious").unwrap();
        let err = OperatorSocket::bind(&path, app(), Limits::default()).unwrap_err();
        assert!(matches!(err, SocketError::NotASocket { .. }), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
    }

    #[tokio::test]
    async fn a_socket_that_is_no_longer_ours_is_not_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("operator.sock");
        let socket = OperatorSocket::bind(&path, app(), Limits::default()).unwrap();
        // Someone else's socket now lives at the path (a newer supervisor's).
        std::fs::remove_file(&path).unwrap();
        let _theirs = std::os::unix::net::UnixListener::bind(&path).unwrap();
        drop(socket);
        assert!(path.exists());
    }

    #[tokio::test]
    async fn a_path_too_long_for_a_socket_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("d".repeat(120));
        let err = OperatorSocket::bind(&deep.join("operator.sock"), app(), Limits::default())
            .unwrap_err();
        assert!(matches!(err, SocketError::Bind { .. }), "{err}");
        assert!(err.to_string().contains("shorter THE_LOOP_HOME"), "{err}");
    }
}
