//! A store that counts the calls it forwards: how benchmarks measure what a job costs the
//! store (calls per turn, reads per review).

use async_trait::async_trait;
use parley_core::ports::Store;
use parley_core::ports::store::{Claim, Finding, Installation, MemoryItem, ReviewRun, StoreError};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Counts every store call, then forwards it.
pub struct CountingStore {
    inner: Arc<dyn Store>,
    calls: AtomicUsize,
    memory_reads: AtomicUsize,
}

impl CountingStore {
    pub fn new(inner: Arc<dyn Store>) -> Self {
        CountingStore {
            inner,
            calls: AtomicUsize::new(0),
            memory_reads: AtomicUsize::new(0),
        }
    }

    /// Store calls so far, of every kind.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Reads of memory partitions (what learning costs a review) so far.
    pub fn memory_reads(&self) -> usize {
        self.memory_reads.load(Ordering::SeqCst)
    }

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
    async fn put_finding_if(
        &self,
        finding: &Finding,
        read: Option<&Finding>,
    ) -> Result<bool, StoreError> {
        self.tick();
        self.inner.put_finding_if(finding, read).await
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
        self.memory_reads.fetch_add(1, Ordering::SeqCst);
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

    async fn rekey_repository(&self, from: &str, to: &str) -> Result<u64, StoreError> {
        self.tick();
        self.inner.rekey_repository(from, to).await
    }
    async fn rekey_memory(&self, from: &str, to: &str) -> Result<u64, StoreError> {
        self.tick();
        self.inner.rekey_memory(from, to).await
    }
    async fn purge_repository(&self, repo: &str) -> Result<u64, StoreError> {
        self.tick();
        self.inner.purge_repository(repo).await
    }

    async fn purge_memory(&self, partition: &str) -> Result<u64, StoreError> {
        self.tick();
        self.inner.purge_memory(partition).await
    }
}
