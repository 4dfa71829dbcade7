//! A store that can be switched off: any real store behind [`parley_core::ports::Store`],
//! answering [`StoreError::Unavailable`] on command, as DynamoDB does when it throttles or
//! the network drops. Every call is counted and named, so a test can take the store away
//! at job start, from the n-th call on (mid-job), or for the n-th call alone, and tell
//! which call that was; and a benchmark, left healthy, can tell what a job costs the
//! store (calls per turn, memory reads per review).

use async_trait::async_trait;
use parley_core::ports::{
    Claim, Claims, Counters, Finding, Findings, Installation, Installations, Memory, MemoryItem,
    ReviewRun, ReviewRuns, Store, StoreError, Tenancy,
};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// When calls fail. Call numbers count from 0 since the last [`FlakyStore::reset_calls`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outage {
    /// Every call succeeds (as far as the real store does).
    None,
    /// Every call fails.
    Down,
    /// Calls from number `n` on fail: the store goes away mid-job and stays away.
    From(usize),
    /// Call number `n` alone fails: a blip.
    Only(usize),
    /// The `n`-th call (from 0) of the method named so fails alone: a crash at a chosen
    /// write, wherever it falls in the job.
    Nth(&'static str, usize),
}

struct State {
    outage: Outage,
    /// Names of the calls made, in order (failed ones included).
    calls: Vec<&'static str>,
}

#[derive(Clone)]
pub struct FlakyStore {
    inner: Arc<dyn Store>,
    state: Arc<Mutex<State>>,
}

impl FlakyStore {
    pub fn new(inner: Arc<dyn Store>) -> Self {
        FlakyStore {
            inner,
            state: Arc::new(Mutex::new(State {
                outage: Outage::None,
                calls: Vec::new(),
            })),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_outage(&self, outage: Outage) {
        self.state().outage = outage;
    }

    /// Back up: every call goes through again.
    pub fn heal(&self) {
        self.set_outage(Outage::None);
    }

    /// The calls made since the last reset, by method name.
    pub fn calls(&self) -> Vec<&'static str> {
        self.state().calls.clone()
    }

    /// How many calls were made since the last reset, of every kind.
    pub fn call_count(&self) -> usize {
        self.state().calls.len()
    }

    /// How many calls of the method `name` were made since the last reset.
    pub fn count_of(&self, name: &str) -> usize {
        self.state()
            .calls
            .iter()
            .filter(|call| **call == name)
            .count()
    }

    /// Start counting calls from 0 again.
    pub fn reset_calls(&self) {
        self.state().calls.clear();
    }

    /// Count the call, and fail it if the outage says so.
    fn enter(&self, name: &'static str) -> Result<(), StoreError> {
        let mut state = self.state();
        let number = state.calls.len();
        let of_this_name = state.calls.iter().filter(|call| **call == name).count();
        state.calls.push(name);
        let fails = match state.outage {
            Outage::Nth(method, n) => method == name && of_this_name == n,
            Outage::None => false,
            Outage::Down => true,
            Outage::From(n) => number >= n,
            Outage::Only(n) => number == n,
        };
        if fails {
            Err(StoreError::Unavailable(format!(
                "injected outage: {name} (call {number})"
            )))
        } else {
            Ok(())
        }
    }
}

#[async_trait]
impl Claims for FlakyStore {
    async fn claim(&self, key: &str, ttl: Duration) -> Result<Claim, StoreError> {
        self.enter("claim")?;
        self.inner.claim(key, ttl).await
    }

    async fn release(&self, key: &str) -> Result<(), StoreError> {
        self.enter("release")?;
        self.inner.release(key).await
    }

    async fn is_claimed(&self, key: &str) -> Result<bool, StoreError> {
        self.enter("is_claimed")?;
        self.inner.is_claimed(key).await
    }

    async fn claim_as(&self, key: &str, owner: &str, ttl: Duration) -> Result<Claim, StoreError> {
        self.enter("claim_as")?;
        self.inner.claim_as(key, owner, ttl).await
    }
}

#[async_trait]
impl Counters for FlakyStore {
    async fn increment_within(
        &self,
        scope: &str,
        counter: &str,
        ceiling: u64,
    ) -> Result<Option<u64>, StoreError> {
        self.enter("increment_within")?;
        self.inner.increment_within(scope, counter, ceiling).await
    }

    async fn counter(&self, scope: &str, counter: &str) -> Result<u64, StoreError> {
        self.enter("counter")?;
        self.inner.counter(scope, counter).await
    }

    async fn add_to_counter(
        &self,
        scope: &str,
        counter: &str,
        delta: u64,
    ) -> Result<u64, StoreError> {
        self.enter("add_to_counter")?;
        self.inner.add_to_counter(scope, counter, delta).await
    }

    async fn add_to_counters(&self, scope: &str, deltas: &[(&str, u64)]) -> Result<(), StoreError> {
        self.enter("add_to_counters")?;
        self.inner.add_to_counters(scope, deltas).await
    }

    async fn counters(&self, scope: &str, names: &[&str]) -> Result<Vec<u64>, StoreError> {
        self.enter("counters")?;
        self.inner.counters(scope, names).await
    }
}

#[async_trait]
impl ReviewRuns for FlakyStore {
    async fn put_review_run(&self, run: &ReviewRun) -> Result<(), StoreError> {
        self.enter("put_review_run")?;
        self.inner.put_review_run(run).await
    }

    async fn let_run_through(&self, run: &ReviewRun, who: &str) -> Result<bool, StoreError> {
        self.enter("let_run_through")?;
        self.inner.let_run_through(run, who).await
    }

    async fn review_run(
        &self,
        repo: &str,
        pr: u64,
        head_sha: &str,
    ) -> Result<Option<ReviewRun>, StoreError> {
        self.enter("review_run")?;
        self.inner.review_run(repo, pr, head_sha).await
    }

    async fn review_runs(&self, repo: &str, pr: u64) -> Result<Vec<ReviewRun>, StoreError> {
        self.enter("review_runs")?;
        self.inner.review_runs(repo, pr).await
    }
}

#[async_trait]
impl Installations for FlakyStore {
    async fn put_installation(&self, installation: &Installation) -> Result<(), StoreError> {
        self.enter("put_installation")?;
        self.inner.put_installation(installation).await
    }

    async fn installation(&self, id: u64) -> Result<Option<Installation>, StoreError> {
        self.enter("installation")?;
        self.inner.installation(id).await
    }

    async fn delete_installation(&self, id: u64) -> Result<(), StoreError> {
        self.enter("delete_installation")?;
        self.inner.delete_installation(id).await
    }
}

#[async_trait]
impl Findings for FlakyStore {
    async fn put_finding(&self, finding: &Finding) -> Result<(), StoreError> {
        self.enter("put_finding")?;
        self.inner.put_finding(finding).await
    }

    async fn put_finding_if(
        &self,
        finding: &Finding,
        read: Option<&Finding>,
    ) -> Result<bool, StoreError> {
        self.enter("put_finding_if")?;
        self.inner.put_finding_if(finding, read).await
    }

    async fn finding_by_comment(
        &self,
        repo: &str,
        comment_id: u64,
    ) -> Result<Option<Finding>, StoreError> {
        self.enter("finding_by_comment")?;
        self.inner.finding_by_comment(repo, comment_id).await
    }

    async fn findings_for_pr(&self, repo: &str, pr: u64) -> Result<Vec<Finding>, StoreError> {
        self.enter("findings_for_pr")?;
        self.inner.findings_for_pr(repo, pr).await
    }
}

#[async_trait]
impl Memory for FlakyStore {
    async fn memory(&self, partition: &str) -> Result<Vec<MemoryItem>, StoreError> {
        self.enter("memory")?;
        self.inner.memory(partition).await
    }

    async fn put_memory(
        &self,
        partition: &str,
        sort_key: &str,
        record: &serde_json::Value,
        expected: u64,
    ) -> Result<bool, StoreError> {
        self.enter("put_memory")?;
        self.inner
            .put_memory(partition, sort_key, record, expected)
            .await
    }
}

#[async_trait]
impl Tenancy for FlakyStore {
    async fn rekey_repository(&self, from: &str, to: &str) -> Result<u64, StoreError> {
        self.enter("rekey_repository")?;
        self.inner.rekey_repository(from, to).await
    }

    async fn rekey_memory(&self, from: &str, to: &str) -> Result<u64, StoreError> {
        self.enter("rekey_memory")?;
        self.inner.rekey_memory(from, to).await
    }

    async fn purge_repository(&self, repo: &str) -> Result<u64, StoreError> {
        self.enter("purge_repository")?;
        self.inner.purge_repository(repo).await
    }

    async fn purge_memory(&self, partition: &str) -> Result<u64, StoreError> {
        self.enter("purge_memory")?;
        self.inner.purge_memory(partition).await
    }
}
