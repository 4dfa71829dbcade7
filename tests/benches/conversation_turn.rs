//! One conversation turn, excluding the LLM: the fake GitHub adds 50 ms to every call, the
//! fake LLM answers at once. Reports GitHub calls, store calls and wall time per turn, for
//! a cold process (first turn) and a warm one (later turns on the same PR).
//!
//! `cargo bench -p parley-tests --bench conversation_turn`

use async_trait::async_trait;
use parley_core::conversation::ConversationHandler;
use parley_core::ports::store::{Claim, Finding, Installation, MemoryItem, ReviewRun, StoreError};
use parley_core::ports::{JobHandler, Store};
use parley_tests::conversation_harness::{Backend, Harness, PR, REPO};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Counts every store call, then forwards it.
struct CountingStore {
    inner: Arc<dyn Store>,
    calls: AtomicUsize,
}

impl CountingStore {
    fn tick(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl Store for CountingStore {
    async fn claim(&self, key: &str, ttl: Duration) -> Result<Claim, StoreError> {
        self.tick();
        self.inner.claim(key, ttl).await
    }
    async fn release(&self, key: &str) -> Result<(), StoreError> {
        self.tick();
        self.inner.release(key).await
    }
    async fn is_claimed(&self, key: &str) -> Result<bool, StoreError> {
        self.tick();
        self.inner.is_claimed(key).await
    }
    async fn claim_as(&self, key: &str, owner: &str, ttl: Duration) -> Result<Claim, StoreError> {
        self.tick();
        self.inner.claim_as(key, owner, ttl).await
    }
    async fn increment_within(
        &self,
        scope: &str,
        counter: &str,
        ceiling: u64,
    ) -> Result<Option<u64>, StoreError> {
        self.tick();
        self.inner.increment_within(scope, counter, ceiling).await
    }
    async fn counter(&self, scope: &str, counter: &str) -> Result<u64, StoreError> {
        self.tick();
        self.inner.counter(scope, counter).await
    }
    async fn add_to_counter(
        &self,
        scope: &str,
        counter: &str,
        delta: u64,
    ) -> Result<u64, StoreError> {
        self.tick();
        self.inner.add_to_counter(scope, counter, delta).await
    }
    async fn put_review_run(&self, run: &ReviewRun) -> Result<(), StoreError> {
        self.tick();
        self.inner.put_review_run(run).await
    }
    async fn review_run(
        &self,
        repo: &str,
        pr: u64,
        head_sha: &str,
    ) -> Result<Option<ReviewRun>, StoreError> {
        self.tick();
        self.inner.review_run(repo, pr, head_sha).await
    }
    async fn review_runs(&self, repo: &str, pr: u64) -> Result<Vec<ReviewRun>, StoreError> {
        self.tick();
        self.inner.review_runs(repo, pr).await
    }
    async fn put_installation(&self, installation: &Installation) -> Result<(), StoreError> {
        self.tick();
        self.inner.put_installation(installation).await
    }
    async fn installation(&self, id: u64) -> Result<Option<Installation>, StoreError> {
        self.tick();
        self.inner.installation(id).await
    }
    async fn delete_installation(&self, id: u64) -> Result<(), StoreError> {
        self.tick();
        self.inner.delete_installation(id).await
    }
    async fn put_finding(&self, finding: &Finding) -> Result<(), StoreError> {
        self.tick();
        self.inner.put_finding(finding).await
    }
    async fn finding_by_comment(
        &self,
        repo: &str,
        comment_id: u64,
    ) -> Result<Option<Finding>, StoreError> {
        self.tick();
        self.inner.finding_by_comment(repo, comment_id).await
    }
    async fn findings_for_pr(&self, repo: &str, pr: u64) -> Result<Vec<Finding>, StoreError> {
        self.tick();
        self.inner.findings_for_pr(repo, pr).await
    }
    async fn memory(&self, partition: &str) -> Result<Vec<MemoryItem>, StoreError> {
        self.tick();
        self.inner.memory(partition).await
    }
    async fn put_memory(
        &self,
        partition: &str,
        sort_key: &str,
        record: &serde_json::Value,
        expected: u64,
    ) -> Result<bool, StoreError> {
        self.tick();
        self.inner
            .put_memory(partition, sort_key, record, expected)
            .await
    }
}

const TURNS: usize = 5;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

async fn run() {
    let h = Harness::start(Backend::Sqlite).await;
    let (root, _) = h.seed_finding(true).await;
    let counting = Arc::new(CountingStore {
        inner: h.store.clone(),
        calls: AtomicUsize::new(0),
    });
    let mut services = h.services.clone();
    services.store = counting.clone();
    let handler = ConversationHandler::new(services);
    h.github.set_latency(Duration::from_millis(50));

    println!("conversation turn, fake GitHub +50 ms per call, LLM instant ({REPO}#{PR})");
    println!(
        "{:<6} {:>12} {:>12} {:>10}",
        "turn", "github calls", "store calls", "wall ms"
    );
    let mut warm = (0usize, 0usize, Duration::ZERO);
    for turn in 0..TURNS {
        let job = h.inline_comment(
            "bob",
            &format!("Question {turn}: is this still a problem?"),
            Some(root),
        );
        let github_before = h.github.requests().len();
        let store_before = counting.calls.load(Ordering::SeqCst);
        let started = Instant::now();
        handler.handle(job).await.expect("turn");
        let wall = started.elapsed();
        let github_calls = h.github.requests().len() - github_before;
        let store_calls = counting.calls.load(Ordering::SeqCst) - store_before;
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
    let paths: Vec<String> = h
        .github
        .requests()
        .iter()
        .rev()
        .take(12)
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    println!(
        "last turn's calls (newest first):\n  {}",
        paths.join("\n  ")
    );
}
