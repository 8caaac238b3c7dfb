//! A real OpenSSH server on loopback, for sessions on other hosts: `/usr/sbin/sshd` on
//! `127.0.0.1:<free port>` that lets in exactly one fresh unix user, by an ed25519 key,
//! and a client `ssh_config` whose host alias `remote-test` reaches it with that key and
//! a `known_hosts` pinning its host key. The user's processes — a tmux server started
//! over ssh above all — are the "remote host": a tmux server of its own, apart from the
//! test's (root's) tmux.
//!
//! Creating a user needs root, as CI runs. Outside CI a test calls [`Sshd::available`]
//! first and returns (saying so) when it is false; under CI (`CI` set) a missing sshd or
//! a non-root run fails the test instead.
//!
//! Dropping the server kills sshd (no new login can start), then everything its user
//! runs, then deletes the user with their home — also when the test panics.
//!
//! ```ignore
//! if !Sshd::available() { return; }
//! let sshd = Sshd::start();
//! // ssh -F <sshd.ssh_config()> -o BatchMode=yes remote-test -- whoami  →  sshd.user()
//! ```

use std::fs;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use tempfile::TempDir;

const SSHD: &str = "/usr/sbin/sshd";
/// The host alias the client config defines.
const ALIAS: &str = "remote-test";
/// How long sshd may take to accept its first TCP connection.
const READY: Duration = Duration::from_secs(10);
/// How many ports to try when another process takes the free one first.
const PORT_ATTEMPTS: u32 = 3;
/// How often `useradd`/`userdel` is retried while another process holds `/etc/passwd`.
const LOCK_ATTEMPTS: u32 = 20;

/// One user creation or deletion at a time in this process; other test processes are
/// waited out by retrying on shadow-utils' lock.
static ACCOUNTS: Mutex<()> = Mutex::new(());

/// A running sshd for one fresh user; stopped, and the user deleted, on drop.
pub struct Sshd {
    child: Child,
    port: u16,
    ssh_config: PathBuf,
    /// Dropped after `child` is killed, before `dir` is removed.
    account: Account,
    dir: TempDir,
}

impl Sshd {
    /// Whether these tests can run here: as root (to create a user) with `/usr/sbin/sshd`.
    /// Outside CI a `false` is printed as a skip; under CI it fails the test instead.
    pub fn available() -> bool {
        let missing = if !is_root() {
            "these tests need root: they create a unix user for sshd to log in"
        } else if !Path::new(SSHD).exists() {
            "these tests need /usr/sbin/sshd: install openssh-server (scripts/check does, as root)"
        } else {
            return true;
        };
        assert!(std::env::var_os("CI").is_none(), "{missing}");
        eprintln!("skipping: {missing}");
        false
    }

    /// Creates the user and keys, starts sshd, and waits until it accepts connections.
    pub fn start() -> Sshd {
        Self::start_with(&[])
    }

    /// [`Sshd::start`] with `first` at the top of its sshd_config: sshd takes the first
    /// value of a keyword, so these win over the harness's own (`"AllowTcpForwarding no"`).
    pub fn start_with(first: &[&str]) -> Sshd {
        assert!(
            is_root(),
            "these tests need root: they create a unix user for sshd to log in (CI runs as root)"
        );
        assert!(
            Path::new(SSHD).exists(),
            "these tests need {SSHD}: install openssh-server"
        );
        // Without it sshd refuses to start ("Missing privilege separation directory").
        fs::create_dir_all("/run/sshd").expect("create /run/sshd");
        fs::set_permissions("/run/sshd", fs::Permissions::from_mode(0o755))
            .expect("chmod /run/sshd");

        let dir = tempfile::Builder::new()
            .prefix("the-loop-sshd-")
            .tempdir()
            .expect("create the sshd directory");
        // sshd opens AuthorizedKeysFile as the user, so the user must be able to pass.
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o711))
            .expect("chmod the sshd directory");
        keygen(&dir.path().join("host_key"));
        keygen(&dir.path().join("client_key"));
        let authorized = dir.path().join("authorized_keys");
        fs::copy(dir.path().join("client_key.pub"), &authorized).expect("write authorized_keys");
        fs::set_permissions(&authorized, fs::Permissions::from_mode(0o644))
            .expect("chmod authorized_keys");

        let account = Account::create();
        let user = account.name.clone();
        let (port, child) = spawn_listening(dir.path(), &user, first);
        let ssh_config = write_client_config(dir.path(), &user, port);
        Sshd {
            child,
            port,
            ssh_config,
            account,
            dir,
        }
    }

    /// The host alias of [`Sshd::ssh_config`]: `ssh -F <config> remote-test`.
    pub fn alias() -> &'static str {
        ALIAS
    }

    /// The client config (`ssh -F`): alias, port, user, key, pinned host key.
    pub fn ssh_config(&self) -> &Path {
        &self.ssh_config
    }

    pub fn user(&self) -> &str {
        &self.account.name
    }

    pub fn home(&self) -> PathBuf {
        self.account.home.clone()
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Everything sshd logged so far (`LogLevel VERBOSE`).
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// How many connections sshd let in so far (its "Accepted publickey" lines).
    pub fn connections(&self) -> usize {
        self.log()
            .lines()
            .filter(|l| l.contains("Accepted publickey for "))
            .count()
    }

    /// The host drops off the network: sshd and every connection it serves are killed
    /// (a master on the other end sees its connection reset). What the user runs — its
    /// tmux server and the agents in it — goes on, as on a host that is only unreachable.
    pub fn stop(&mut self) {
        // Already stopped (and reaped): its pid may be another process's by now.
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        let pid = self.child.id().to_string();
        // Stopped first, the listener forks no connection between the children's kill and
        // its own (a login accepted then would outlive the harness, its user process
        // forked after the account's processes were killed).
        let _ = Command::new("kill").args(["-STOP", &pid]).status();
        let _ = Command::new("pkill").args(["-KILL", "-P", &pid]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The host is back: sshd listens again on the same port, with the same keys.
    pub fn restart(&mut self) {
        let mut child = spawn_sshd(self.dir.path());
        if let Err(why) = wait_listening(&mut child, self.dir.path(), self.port) {
            let _ = child.kill();
            panic!(
                "sshd did not come back on port {} ({why}):\n{}",
                self.port,
                self.log()
            );
        }
        self.child = child;
    }

    /// Runs `argv` locally as the user (`runuser`), for set-up and inspection of the
    /// "remote" side. `TMUX_TMPDIR` is removed too, so a `tmux -L` here reaches the same
    /// server a command over ssh does.
    pub fn run_as_user(&self, argv: &[&str]) -> Output {
        self.run_as_user_with(argv, None)
    }

    /// [`Sshd::run_as_user`] with `input` on its stdin (else none).
    pub fn run_as_user_with(&self, argv: &[&str], input: Option<&[u8]>) -> Output {
        use std::io::Write;
        let mut child = Command::new("runuser")
            .args(["-u", &self.account.name, "--"])
            .args(argv)
            .current_dir(&self.account.home)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .env_remove("TMUX_TMPDIR")
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run runuser");
        if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin.write_all(input).expect("write runuser's stdin");
        }
        child.wait_with_output().expect("wait for runuser")
    }
}

impl Drop for Sshd {
    /// Every connection's monitor goes with the listener, so none forks a user process
    /// after the account's processes are killed.
    fn drop(&mut self) {
        self.stop();
    }
}

/// A unix user made for one sshd; on drop its processes are killed and it is deleted
/// with its home (also when `start` fails after creating it).
struct Account {
    name: String,
    uid: u32,
    home: PathBuf,
}

impl Account {
    /// Creates `tlr<pid><n>` with a home. A name left by a crashed earlier process with
    /// this pid is skipped.
    fn create() -> Account {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let _held = ACCOUNTS.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let name = format!("tlr{}{n}", std::process::id());
            assert!(name.len() <= 16, "user name {name} is too long");
            let mut useradd = Command::new("useradd");
            // `-p '*'`: useradd's default password `!` marks the account locked, and sshd
            // without PAM refuses locked accounts even for key logins.
            useradd.args(["-m", "-s", "/bin/sh", "-p", "*", &name]);
            let out = retry_on_lock(useradd);
            // 9: the name is taken.
            if out.status.code() == Some(9) {
                continue;
            }
            assert!(
                out.status.success(),
                "useradd {name} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let entry = Command::new("getent")
                .args(["passwd", &name])
                .output()
                .expect("run getent");
            let entry = String::from_utf8_lossy(&entry.stdout).into_owned();
            let fields: Vec<&str> = entry.trim().split(':').collect();
            assert!(fields.len() >= 7, "getent passwd {name}: {entry:?}");
            return Account {
                uid: fields[2].parse().expect("a numeric uid"),
                home: PathBuf::from(fields[5]),
                name,
            };
        }
    }
}

impl Drop for Account {
    fn drop(&mut self) {
        kill_user_processes(&self.name);
        // The tmux servers the user started leave their socket directory in /tmp.
        let _ = fs::remove_dir_all(format!("/tmp/tmux-{}", self.uid));
        let _held = ACCOUNTS.lock().unwrap_or_else(|e| e.into_inner());
        let mut userdel = Command::new("userdel");
        userdel.args(["-r", &self.name]);
        let out = retry_on_lock(userdel);
        // "mail spool (/var/mail/…) not found" is a warning of a successful deletion.
        if !out.status.success() {
            eprintln!(
                "warning: userdel -r {} failed: {}",
                self.name,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().expect("run id -u");
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

fn keygen(path: &Path) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-N", "", "-t", "ed25519", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .expect("run ssh-keygen");
    assert!(
        out.status.success(),
        "ssh-keygen {} failed: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A free port on loopback: bound, read and released (sshd may lose it to another
/// process in between; `start` then tries another).
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// Runs `cmd` (useradd/userdel) until it does not fail on `/etc/passwd`'s lock, which
/// any other process creating or deleting a user holds for a moment.
fn retry_on_lock(mut cmd: Command) -> Output {
    let mut attempt = 1;
    loop {
        let out = cmd.output().expect("run useradd/userdel");
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() || !stderr.contains("lock") || attempt == LOCK_ATTEMPTS {
            return out;
        }
        attempt += 1;
        std::thread::sleep(Duration::from_millis(100 * u64::from(attempt)));
    }
}

/// Kills every process of `user` until none is left (bounded: a process may fork while
/// it is being killed). sshd's root-owned monitor of each connection exits with them.
fn kill_user_processes(user: &str) {
    for _ in 0..50 {
        let _ = Command::new("pkill").args(["-KILL", "-u", user]).status();
        let left = Command::new("pgrep").args(["-u", user]).output();
        if left.is_ok_and(|o| o.stdout.is_empty()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("warning: processes of {user} survived pkill -KILL");
}

fn write_sshd_config(dir: &Path, user: &str, port: u16, first: &[&str]) {
    let d = dir.display();
    let first: String = first.iter().map(|line| format!("{line}\n")).collect();
    let config = format!(
        "{first}ListenAddress 127.0.0.1
Port {port}
HostKey {d}/host_key
PidFile {d}/sshd.pid
AuthorizedKeysFile {d}/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowUsers {user}
PermitRootLogin no
LogLevel VERBOSE
MaxSessions 10
AllowStreamLocalForwarding yes
StreamLocalBindUnlink yes
AllowTcpForwarding remote
X11Forwarding no
PermitTTY yes
Subsystem sftp internal-sftp
"
    );
    fs::write(dir.join("sshd_config"), config).expect("write sshd_config");
}

/// Starts sshd on a free port and waits until it accepts connections; tries another
/// port when a different process took the free one first.
fn spawn_listening(dir: &Path, user: &str, first: &[&str]) -> (u16, Child) {
    let mut attempt = 1;
    loop {
        let port = free_port();
        write_sshd_config(dir, user, port, first);
        let mut child = spawn_sshd(dir);
        let Err(why) = wait_listening(&mut child, dir, port) else {
            return (port, child);
        };
        let _ = child.kill();
        let _ = child.wait();
        let log = fs::read_to_string(dir.join("sshd.log")).unwrap_or_default();
        assert!(
            attempt < PORT_ATTEMPTS && log.contains("Address already in use"),
            "sshd did not start on 127.0.0.1:{port} ({why}); its log:\n{log}"
        );
        attempt += 1;
    }
}

/// `sshd -D -e`: in the foreground, logging to its stderr, which goes to `sshd.log`.
fn spawn_sshd(dir: &Path) -> Child {
    // Appended: a restarted sshd keeps the count of connections let in before.
    let log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("sshd.log"))
        .expect("open sshd.log");
    Command::new(SSHD)
        .args(["-D", "-e", "-f"])
        .arg(dir.join("sshd_config"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .spawn()
        .expect("spawn sshd")
}

/// Waits for sshd's "Server listening" line, then for a TCP connection it accepts: the
/// line tells it is our sshd that holds the port, not a process that took it first.
fn wait_listening(child: &mut Child, dir: &Path, port: u16) -> Result<(), String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let listening = format!("Server listening on 127.0.0.1 port {port}.");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("poll sshd") {
            return Err(format!("it exited: {status}"));
        }
        let log = fs::read_to_string(dir.join("sshd.log")).unwrap_or_default();
        if log.contains(&listening)
            && TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
        {
            return Ok(());
        }
        if start.elapsed() > READY {
            return Err(format!("not listening after {READY:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Writes `known_hosts` and `ssh_config`; returns the config's path.
fn write_client_config(dir: &Path, user: &str, port: u16) -> PathBuf {
    let host_key = fs::read_to_string(dir.join("host_key.pub")).expect("read host_key.pub");
    let host_key: Vec<&str> = host_key.split_whitespace().take(2).collect();
    fs::write(
        dir.join("known_hosts"),
        format!("[127.0.0.1]:{port} {}\n", host_key.join(" ")),
    )
    .expect("write known_hosts");
    let d = dir.display();
    let config = format!(
        "Host {ALIAS}
  HostName 127.0.0.1
  Port {port}
  User {user}
  IdentityFile {d}/client_key
  IdentitiesOnly yes
  UserKnownHostsFile {d}/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  LogLevel ERROR
"
    );
    let path = dir.join("ssh_config");
    fs::write(&path, config).expect("write ssh_config");
    path
}
