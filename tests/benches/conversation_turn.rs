//! One conversation turn, excluding the LLM: the fake GitHub adds 50 ms to every call, the
//! fake LLM answers at once. Reports GitHub calls, store calls and wall time per turn, for
//! a cold process (first turn) and a warm one (later turns on the same PR).
//!
//! `cargo bench -p parley-tests --bench conversation_turn`

use parley_core::conversation::ConversationHandler;
use parley_core::ports::JobHandler;
use parley_tests::conversation_harness::{Backend, HEAD, Harness, PR, REPO};
use parley_tests::fake_github::tarball;
use parley_tests::flaky_store::FlakyStore;
use std::sync::Arc;
use std::time::{Duration, Instant};

const TURNS: usize = 5;

#[tokio::main]
async fn main() {
    let h = Harness::start(Backend::Sqlite).await;
    let (root, _) = h.seed_finding(true).await;
    let counting = Arc::new(FlakyStore::new(h.store.clone()));
    let mut services = h.services.clone();
    services.store = counting.clone();
    // As deployed: the repository has an archive at the head, kept on local disk, so a
    // warm worker downloads it once (the test rig's default downloads every time).
    h.github.set_tarball(
        REPO,
        HEAD,
        tarball(&[(
            "src/db.rs",
            "use std::io;\npub fn find(id: &str) -> String {\n    format!(\"SELECT * FROM users WHERE id = '{}'\", id)\n}\n",
        )]),
    );
    let archives = tempfile::tempdir().expect("archive dir");
    services.code = Some(Arc::new(parley_code::GitHubCode {
        cache: Some(parley_code::ArchiveCache::new(archives.path(), 64 << 20)),
        ..parley_code::GitHubCode::default()
    }));
    let handler = ConversationHandler::new(services);
    h.github.set_latency(Duration::from_millis(50));

    println!("conversation turn, fake GitHub +50 ms per call, LLM instant ({REPO}#{PR})");
    println!(
        "{:<6} {:>12} {:>12} {:>10}",
        "turn", "github calls", "store calls", "wall ms"
    );
    let mut warm = (0usize, 0usize, Duration::ZERO);
    let mut last_github = Vec::new();
    let mut last_store = Vec::new();
    for turn in 0..TURNS {
        let job = h.inline_comment(
            "bob",
            &format!("Question {turn}: is this still a problem?"),
            Some(root),
        );
        let github_before = h.github.requests().len();
        let store_before = counting.call_count();
        let started = Instant::now();
        handler.handle(job).await.expect("turn");
        let wall = started.elapsed();
        let github_calls = h.github.requests().len() - github_before;
        let store_calls = counting.call_count() - store_before;
        last_github = h.github.requests()[github_before..]
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        last_store = counting.calls()[store_before..].to_vec();
        let label = if turn == 0 { "cold" } else { "warm" };
        println!(
            "{label:<6} {github_calls:>12} {store_calls:>12} {:>10}",
            wall.as_millis()
        );
        if turn > 0 {
            warm.0 += github_calls;
            warm.1 += store_calls;
            warm.2 += wall;
        }
    }
    let n = TURNS - 1;
    println!(
        "warm mean: {:.1} GitHub calls, {:.1} store calls, {} ms per turn",
        warm.0 as f64 / n as f64,
        warm.1 as f64 / n as f64,
        (warm.2 / n as u32).as_millis()
    );
    println!("last turn's GitHub calls:\n  {}", last_github.join("\n  "));
    println!("last turn's store calls: {}", last_store.join(", "));
}
