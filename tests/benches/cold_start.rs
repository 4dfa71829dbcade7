//! Cold start of the release binary: process start to the first 202 from `parley serve`.
//!
//! ```sh
//! cargo build --release -p parley-cli
//! cargo bench -p parley-tests --bench cold_start
//! ```
//!
//! Each run starts `parley serve` on a fresh SQLite file and a free port, then sends a
//! signed `pull_request.opened` delivery every millisecond until one is answered 202.
//! The time covers process start, opening and migrating the database, binding, and the
//! first verify + normalise + claim + enqueue. After the last run the same process takes
//! 1 000 more deliveries and its resident memory is read from `/proc` (Linux only).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 20;
const SECRET: &str = "cold-start-secret";

fn main() {
    let binary = release_binary();
    let body =
        std::fs::read(parley_tests::corpora().join("webhooks/pull_request/opened.payload.json"))
            .expect("read payload");
    let signature = parley_tests::sign(SECRET, &body);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let client = parley_llm::client_builder().build().expect("HTTP client");

    let mut samples = Vec::with_capacity(RUNS);
    for run in 0..RUNS {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let start = Instant::now();
        let mut child = Command::new(&binary)
            .arg("serve")
            .env_clear()
            .env("PORT", port.to_string())
            .env("PARLEY_DB_PATH", dir.path().join("parley.db"))
            .env("GITHUB_WEBHOOK_SECRET", SECRET)
            .env("RUST_LOG", "warn")
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn parley");
        let url = format!("http://127.0.0.1:{port}/webhook");
        let elapsed = runtime.block_on(async {
            loop {
                let sent = client
                    .post(&url)
                    .header("X-GitHub-Event", "pull_request")
                    .header("X-GitHub-Delivery", format!("cold-{run}"))
                    .header("X-Hub-Signature-256", &signature)
                    .body(body.clone())
                    .send()
                    .await;
                if let Ok(response) = sent {
                    assert_eq!(response.status().as_u16(), 202, "unexpected answer");
                    return start.elapsed();
                }
                assert!(
                    start.elapsed() < Duration::from_secs(30),
                    "parley serve did not answer in 30 s"
                );
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        if run == RUNS - 1 {
            let after_first = resident_memory(child.id());
            runtime.block_on(async {
                for i in 0..1000 {
                    let response = client
                        .post(&url)
                        .header("X-GitHub-Event", "pull_request")
                        .header("X-GitHub-Delivery", format!("load-{i}"))
                        .header("X-Hub-Signature-256", &signature)
                        .body(body.clone())
                        .send()
                        .await
                        .expect("delivery");
                    assert_eq!(response.status().as_u16(), 202);
                }
            });
            let after_load = resident_memory(child.id());
            println!(
                "resident memory (VmRSS / VmHWM): after first 202 {after_first}; after 1000 more deliveries {after_load}"
            );
        }
        let _ = child.kill();
        let _ = child.wait();
        samples.push(elapsed);
    }
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "cold start to first 202 over {RUNS} runs: min {:.1} ms, median {:.1} ms, max {:.1} ms",
        ms(samples[0]),
        ms(samples[RUNS / 2]),
        ms(samples[RUNS - 1])
    );
}

fn release_binary() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let binary = target.join("release/parley");
    assert!(
        binary.is_file(),
        "{} not found: run `cargo build --release -p parley-cli` first",
        binary.display()
    );
    binary
}

/// `VmRSS / VmHWM` of a process, in MiB, or "n/a" off Linux.
fn resident_memory(pid: u32) -> String {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return "n/a".to_string();
    };
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kib| kib.parse::<f64>().ok())
            .map(|kib| format!("{:.1} MiB", kib / 1024.0))
            .unwrap_or_else(|| "n/a".to_string())
    };
    format!("{} / {}", field("VmRSS:"), field("VmHWM:"))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}
