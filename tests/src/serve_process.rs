//! `parley serve` as a child process: the real binary, on a SQLite file the test owns,
//! pointed at the fakes.
//!
//! In-process tests (`tests/serve.rs`) cannot lose a process halfway through a job, and a
//! benchmark of the release binary must not share a runtime with its load generator. Both
//! need the binary itself, its environment and the SQLite queue it leaves behind, which is
//! what this module gathers.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The `parley` binary of the profile this test or bench was built with, built first if
/// needed (see [`workspace_binaries`]).
/// `parley serve` started inside the test's process on a free port, its workers polling
/// every 20 ms, reading settings from `env`. Cancel the token to stop it.
pub async fn in_process(
    env: parley_runtime::clients::Env,
) -> (parley_cli::Running, tokio_util::sync::CancellationToken) {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let options = parley_cli::ServeOptions {
        addr: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        env,
        poller: parley_cli::poller::PollerOptions {
            idle_wait: Duration::from_millis(20),
            ..parley_cli::poller::PollerOptions::default()
        },
    };
    let running = parley_cli::start(options, shutdown.clone())
        .await
        .expect("parley serve starts");
    (running, shutdown)
}

pub fn parley_binary() -> PathBuf {
    workspace_binaries().join("parley")
}

/// The packages and binaries [`workspace_binaries`] builds: `parley serve` and the three
/// Lambda functions.
const BINARIES: [(&str, &str); 4] = [
    ("parley-cli", "parley"),
    ("parley-webhook", "webhook"),
    ("parley-conversation-worker", "conversation-worker"),
    ("parley-review-worker", "review-worker"),
];

/// The directory holding the workspace's binaries of the profile this test or bench was
/// built with, built first if needed. A test target gets no `CARGO_BIN_EXE_*` for another
/// package's binary, and a stale binary would test old code, so one `cargo build` of all
/// of them runs once per test process (a no-op when they are up to date; cargo's own lock
/// serialises parallel test processes). One command for all four, always the same: each
/// package set resolves features its own way, and a second set would build a second copy
/// of half the dependency tree.
pub fn workspace_binaries() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            // <target>/<profile dir>/deps/<this executable>
            let exe = std::env::current_exe().expect("current exe");
            let profile_dir = exe
                .parent()
                .and_then(Path::parent)
                .expect("a test executable lives in <target>/<profile>/deps");
            let target_dir = profile_dir.parent().expect("target dir");
            let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
                Some("debug") => "dev",
                Some(other) => other,
                None => "dev",
            };
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut build = Command::new(cargo);
            // Cargo gives this process the variables of the crate under test
            // (CARGO_PKG_NAME, …). Build scripts track some of them (ring's does), so a
            // build that inherits them would rebuild half the dependency tree here, and
            // again in the next ordinary `cargo` command.
            for (name, _) in std::env::vars_os() {
                let name = name.to_string_lossy();
                let per_crate = ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_BIN_", "CARGO_CFG_"]
                    .iter()
                    .any(|prefix| name.starts_with(prefix))
                    || [
                        "CARGO_CRATE_NAME",
                        "CARGO_PRIMARY_PACKAGE",
                        "CARGO_TARGET_TMPDIR",
                        "CARGO_RUSTC_CURRENT_DIR",
                        "OUT_DIR",
                    ]
                    .contains(&name.as_ref());
                if per_crate {
                    build.env_remove(name.as_ref());
                }
            }
            build.args(["build", "--quiet"]);
            for (package, binary) in BINARIES {
                build.args(["-p", package, "--bin", binary]);
            }
            let status = build
                .args(["--profile", profile])
                .arg("--target-dir")
                .arg(target_dir)
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("run cargo build for the workspace binaries");
            assert!(status.success(), "building the workspace binaries failed");
            for (_, binary) in BINARIES {
                let binary = profile_dir.join(binary);
                assert!(
                    binary.is_file(),
                    "{} not found after the build",
                    binary.display()
                );
            }
            profile_dir.to_path_buf()
        })
        .clone()
}

/// A running `parley serve`. Killed (SIGKILL) when dropped.
pub struct ServeProcess {
    child: Child,
    /// `http://127.0.0.1:<port>/webhook`.
    pub webhook_url: String,
    log: PathBuf,
}

impl ServeProcess {
    /// Start `binary serve` with exactly `env` (nothing inherited, no `.env` found: the
    /// working directory is `dir`) on a port of its own choosing, and return once it says
    /// it is listening. Everything it writes (its log goes to stdout off a terminal) ends
    /// up in `dir/<log_name>`.
    pub fn start(
        binary: &Path,
        env: &[(String, String)],
        dir: &Path,
        log_name: &str,
    ) -> ServeProcess {
        let log = dir.join(log_name);
        let append = || {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .expect("open log file")
        };
        let mut child = Command::new(binary)
            .arg("serve")
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("PORT", "0")
            .env("HOST", "127.0.0.1")
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(append()))
            .spawn()
            .expect("spawn parley serve");
        let stdout = child.stdout.take().expect("stdout");
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<String>();
        let mut copy = append();
        // The binary prints its address once the webhook is bound and both workers run:
        // that line, not a poll of the port, says it is ready. The pipe is drained to the
        // end so the child never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("parley listening on ") {
                    let _ = ready_tx.send(url.trim().to_string());
                }
                let _ = writeln!(copy, "{line}");
            }
        });
        match ready_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(webhook_url) => ServeProcess {
                child,
                webhook_url,
                log,
            },
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "parley serve did not start within 60 s; its output:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `kill -9` and reap: the process gets no chance to finish, acknowledge or release
    /// anything.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether the process is still running (it exits only when told to, or on a crash).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Everything the process wrote so far.
    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Resident memory of a process from `/proc/<pid>/status`, in KiB: `(VmRSS, VmHWM)`.
/// `None` off Linux or once the process is gone.
pub fn resident_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kib| kib.parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// POST a signed delivery. Returns the status and the body.
pub async fn deliver(
    client: &reqwest::Client,
    url: &str,
    secret: &str,
    event: &str,
    delivery: &str,
    payload: &serde_json::Value,
) -> (u16, String) {
    let body = serde_json::to_vec(payload).expect("encode payload");
    let response = client
        .post(url)
        .header("X-GitHub-Event", event)
        .header("X-GitHub-Delivery", delivery)
        .header("X-Hub-Signature-256", crate::sign(secret, &body))
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap_or_else(|err| panic!("delivering {delivery}: {err}"));
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

/// The local queue as `parley serve` left it in its SQLite file, read without taking
/// anything off it (a `receive` would hide messages from the server).
pub mod queue_file {
    use super::*;
    use rusqlite::{Connection, params};

    /// Messages of one queue (`conversation` or `review`).
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct Depth {
        /// Waiting to be received.
        pub visible: u64,
        /// Received and not acknowledged, their visibility timeout still running.
        pub in_flight: u64,
        pub dead: u64,
    }

    impl Depth {
        pub fn is_drained(&self) -> bool {
            self.visible == 0 && self.in_flight == 0
        }
    }

    fn open(db: &Path) -> Connection {
        let conn = Connection::open(db).expect("open the queue file");
        conn.busy_timeout(Duration::from_secs(5))
            .expect("busy timeout");
        conn
    }

    fn now_ms() -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or_default()
    }

    pub fn depth(db: &Path, queue: &str) -> Depth {
        let conn = open(db);
        let now = now_ms();
        let (visible, in_flight): (i64, i64) = conn
            .query_row(
                "SELECT coalesce(sum(visible_at_ms <= ?2), 0), coalesce(sum(visible_at_ms > ?2), 0)
                 FROM queue_messages WHERE queue = ?1",
                params![queue, now],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .expect("count queued messages");
        let dead: i64 = conn
            .query_row(
                "SELECT count(*) FROM queue_dead_letters WHERE queue = ?1",
                params![queue],
                |row| row.get(0),
            )
            .expect("count dead letters");
        Depth {
            visible: visible as u64,
            in_flight: in_flight as u64,
            dead: dead as u64,
        }
    }

    /// How long the in-flight messages of `queue` stay hidden from now, longest first.
    pub fn hidden_for(db: &Path, queue: &str) -> Vec<Duration> {
        let conn = open(db);
        let now = now_ms();
        let mut statement = conn
            .prepare(
                "SELECT visible_at_ms - ?2 FROM queue_messages
                 WHERE queue = ?1 AND receipt IS NOT NULL AND visible_at_ms > ?2
                 ORDER BY visible_at_ms DESC",
            )
            .expect("prepare");
        statement
            .query_map(params![queue, now], |row| row.get::<_, i64>(0))
            .expect("query")
            .filter_map(Result::ok)
            .map(|ms| Duration::from_millis(ms.max(0) as u64))
            .collect()
    }

    /// Let the visibility timeout of every in-flight message run out now, as it would
    /// after a dead worker's timeout: the message becomes visible and its receipt stale.
    /// `parley serve` hides a received message for 15 minutes and has no setting to
    /// shorten that, so a test moves the deadline instead of waiting for it. Returns how
    /// many messages were in flight.
    pub fn expire_in_flight(db: &Path) -> usize {
        let conn = open(db);
        let now = now_ms();
        conn.execute(
            "UPDATE queue_messages SET visible_at_ms = ?1
             WHERE receipt IS NOT NULL AND visible_at_ms > ?1",
            params![now],
        )
        .expect("expire in-flight messages")
    }
}
