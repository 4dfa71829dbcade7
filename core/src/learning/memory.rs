//! Everything Parley learned about a repository, read in two store calls (the
//! repository's partition and its organisation's), and the typed writes over the store's
//! versioned records.
//!
//! Writes that change a shared record (the statistics, a pattern, a learning's counters)
//! are read-modify-write with the record's version: a writer that lost the race reads
//! again and retries, so concurrent jobs on different PRs of one repository never lose
//! each other's counts.

use super::patterns::{PATTERN_PREFIX, Pattern};
use super::record::{LEARNING_PREFIX, Learning, partition, sort_key};
use super::stats::RepoStats;
use crate::ports::{MemoryItem, Store, StoreError};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub const STATS_KEY: &str = "stats";
/// Attempts of one read-modify-write before giving up (each loss means another writer
/// made progress).
const ATTEMPTS: usize = 8;

/// A repository's learnings (with its organisation's), patterns and statistics.
#[derive(Debug, Clone, Default)]
pub struct RepoMemory {
    pub learnings: Vec<Learning>,
    pub patterns: Vec<(String, Pattern)>,
    pub stats: RepoStats,
    /// Records that could not be read (a newer format, corruption): reported, skipped.
    pub unreadable: Vec<String>,
}

impl RepoMemory {
    /// Learnings not forgotten, oldest first.
    pub fn active(&self) -> impl Iterator<Item = &Learning> {
        self.learnings.iter().filter(|l| l.is_active())
    }

    pub fn find(&self, id: &str) -> Option<&Learning> {
        self.learnings.iter().find(|l| l.id == id)
    }
}

/// Read everything: the repository's partition and the organisation's.
pub async fn load(store: &dyn Store, repo: &str, org: &str) -> Result<RepoMemory, StoreError> {
    let mut memory = RepoMemory::default();
    for item in store.memory(repo).await? {
        absorb(&mut memory, item, true);
    }
    for item in store.memory(org).await? {
        absorb(&mut memory, item, false);
    }
    memory
        .learnings
        .sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    Ok(memory)
}

fn absorb(memory: &mut RepoMemory, item: MemoryItem, own_repo: bool) {
    let key = item.sort_key.clone();
    let unreadable = |memory: &mut RepoMemory, err: serde_json::Error| {
        tracing::warn!(key, error = %err, "unreadable memory record; skipped");
        memory.unreadable.push(key.clone());
    };
    if key.starts_with(LEARNING_PREFIX) {
        match serde_json::from_value::<Learning>(item.record) {
            Ok(learning) => memory.learnings.push(learning),
            Err(err) => unreadable(memory, err),
        }
    } else if own_repo && key.starts_with(PATTERN_PREFIX) {
        match serde_json::from_value::<Pattern>(item.record) {
            Ok(pattern) => memory.patterns.push((key.clone(), pattern)),
            Err(err) => unreadable(memory, err),
        }
    } else if own_repo && key == STATS_KEY {
        match serde_json::from_value::<RepoStats>(item.record) {
            Ok(stats) => memory.stats = stats,
            Err(err) => unreadable(memory, err),
        }
    }
}

/// Insert a learning unless its source comment already taught one. Returns the stored
/// learning: the new one, or the one that comment added before (a redelivery).
pub async fn add_learning(
    store: &dyn Store,
    org: &str,
    mut learning: Learning,
) -> Result<(Learning, bool), StoreError> {
    let partition = partition(&learning.repo, org, &learning.scope);
    for long in [false, true] {
        learning.id = super::record::learning_id(&learning.repo, learning.source_comment_id, long);
        let record = to_value(&learning)?;
        if store
            .put_memory(&partition, &sort_key(&learning.id), &record, 0)
            .await?
        {
            return Ok((learning, true));
        }
        // Taken: by this very comment (a redelivery), or by another one (a clash of the
        // short id, then the longer one is tried).
        let existing = read::<Learning>(store, &partition, &sort_key(&learning.id)).await?;
        if let Some((existing, _)) = existing
            && existing.source_comment_id == learning.source_comment_id
            && existing.repo == learning.repo
        {
            return Ok((existing, false));
        }
    }
    Err(StoreError::Corrupt {
        key: format!("{partition}/{}", sort_key(&learning.id)),
        reason: "learning ids clash with other comments' twice".into(),
    })
}

/// Change one learning (forget it, count it), retrying on concurrent writes. `None` when
/// there is no such learning.
pub async fn update_learning(
    store: &dyn Store,
    partition: &str,
    id: &str,
    change: impl Fn(&mut Learning),
) -> Result<Option<Learning>, StoreError> {
    update::<Learning>(store, partition, &sort_key(id), |current| {
        let mut learning = current?;
        change(&mut learning);
        Some(learning)
    })
    .await
}

/// Change the repository's statistics, retrying on concurrent writes.
pub async fn update_stats(
    store: &dyn Store,
    repo: &str,
    change: impl Fn(&mut RepoStats),
) -> Result<(), StoreError> {
    update::<RepoStats>(store, repo, STATS_KEY, |current| {
        let mut stats = current.unwrap_or_default();
        change(&mut stats);
        Some(stats)
    })
    .await
    .map(|_| ())
}

/// Change (or create) one pattern, retrying on concurrent writes.
pub async fn update_pattern(
    store: &dyn Store,
    repo: &str,
    key: &str,
    change: impl Fn(Option<Pattern>) -> Pattern,
) -> Result<(), StoreError> {
    update::<Pattern>(store, repo, key, |current| Some(change(current)))
        .await
        .map(|_| ())
}

/// Read-modify-write one record with its version. `change` gets the current record
/// (`None` when absent) and returns the new one (`None`: leave it).
pub(crate) async fn update<T: Serialize + DeserializeOwned + Clone>(
    store: &dyn Store,
    partition: &str,
    key: &str,
    change: impl Fn(Option<T>) -> Option<T>,
) -> Result<Option<T>, StoreError> {
    for _ in 0..ATTEMPTS {
        let current = read::<T>(store, partition, key).await?;
        let version = current.as_ref().map_or(0, |(_, v)| *v);
        let Some(next) = change(current.map(|(record, _)| record)) else {
            return Ok(None);
        };
        if store
            .put_memory(partition, key, &to_value(&next)?, version)
            .await?
        {
            return Ok(Some(next));
        }
    }
    Err(StoreError::Unavailable(format!(
        "{partition}/{key}: still contended after {ATTEMPTS} attempts"
    )))
}

async fn read<T: DeserializeOwned>(
    store: &dyn Store,
    partition: &str,
    key: &str,
) -> Result<Option<(T, u64)>, StoreError> {
    // The store reads a partition at once; memory partitions are small (learnings,
    // patterns and one statistics record per repository).
    let Some(item) = store
        .memory(partition)
        .await?
        .into_iter()
        .find(|item| item.sort_key == key)
    else {
        return Ok(None);
    };
    serde_json::from_value(item.record)
        .map(|record| Some((record, item.version)))
        .map_err(|e| StoreError::Corrupt {
            key: format!("{partition}/{key}"),
            reason: e.to_string(),
        })
}

fn to_value<T: Serialize>(record: &T) -> Result<serde_json::Value, StoreError> {
    serde_json::to_value(record)
        .map_err(|e| StoreError::Config(format!("encoding a memory record: {e}")))
}
