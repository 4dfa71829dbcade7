//! The SQLite store, used by `parley serve` on one machine.
//!
//! Same decisions as DynamoDB, made the same way: each "only once" rule is one statement
//! (an upsert whose `DO UPDATE … WHERE` is the condition), so it stays atomic even when
//! another process, such as a second `parley serve` or an operator command, writes the same
//! file through its own connection. Records are stored as JSON next to the columns that
//! are looked up, so adding a field to a record needs no migration.

mod corpus;
mod counters;
mod runs;
mod schema;
mod tenancy;

use async_trait::async_trait;
use parley_core::ports::{
    Claim, Claims, Counters, Finding, Findings, Installation, Installations, Memory, MemoryItem,
    StoreError, Tenancy,
};
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use time::OffsetDateTime;

use crate::{expiry, ordering};

/// How long a statement waits for another connection's write lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct SqliteStore {
    /// rusqlite is blocking and a `Connection` is not `Sync`: calls run on the blocking
    /// pool, one at a time per store.
    conn: Arc<Mutex<Connection>>,
}

impl SqliteStore {
    /// Open (or create) the store in the database file at `path`, creating its parent
    /// directories, switching to WAL so readers never block the writer, and migrating.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| {
                StoreError::Unavailable(format!("creating {}: {e}", parent.display()))
            })?;
        }
        let conn = Connection::open(path)
            .map_err(|e| unavailable(&format!("opening {}", path.display()), &e))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| unavailable("setting busy_timeout", &e))?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(|e| unavailable("enabling WAL", &e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            // Still correct, only slower under concurrent readers (e.g. on a network
            // file system that cannot do WAL).
            tracing::warn!(path = %path.display(), mode, "SQLite store is not in WAL mode");
        }
        Self::from_connection(conn)
    }

    /// A private, throwaway store: for tests and one-shot commands.
    pub fn open_in_memory() -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory()
            .map_err(|e| unavailable("opening in-memory database", &e))?;
        Self::from_connection(conn)
    }

    fn from_connection(mut conn: Connection) -> Result<Self, StoreError> {
        schema::migrate(&mut conn)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Run `f` on the connection off the async runtime.
    async fn run<T, F>(&self, operation: &'static str, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            // A panic while holding the lock cannot leave a half-applied write behind:
            // every write is one statement or a transaction that rolls back on drop.
            let conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
            f(&conn)
        })
        .await
        .map_err(|e| StoreError::Unavailable(format!("sqlite {operation}: worker failed: {e}")))?
    }
}

#[async_trait]
impl Claims for SqliteStore {
    async fn claim(&self, key: &str, ttl: Duration) -> Result<Claim, StoreError> {
        let key = key.to_owned();
        let now = OffsetDateTime::now_utc();
        let expires_at = expiry::expires_at(now, ttl);
        let now = expiry::now_secs(now);
        self.run("claim", move |conn| {
            // Inserts a new claim, or takes over a lapsed one; a live claim makes the
            // WHERE false, so nothing changes and the caller lost.
            let changed = conn
                .execute(
                    "INSERT INTO store_claims (key, expires_at) VALUES (?1, ?2)
                     ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at
                     WHERE store_claims.expires_at <= ?3",
                    params![key, expires_at, now],
                )
                .map_err(|e| unavailable("claim", &e))?;
            Ok(if changed == 1 {
                Claim::Won
            } else {
                Claim::AlreadyClaimed
            })
        })
        .await
    }

    async fn release(&self, key: &str) -> Result<(), StoreError> {
        let key = key.to_owned();
        self.run("release", move |conn| {
            conn.execute("DELETE FROM store_claims WHERE key = ?1", [key])
                .map_err(|e| unavailable("release", &e))?;
            Ok(())
        })
        .await
    }

    async fn is_claimed(&self, key: &str) -> Result<bool, StoreError> {
        let key = key.to_owned();
        let now = expiry::now_secs(OffsetDateTime::now_utc());
        self.run("is_claimed", move |conn| {
            let expires_at: Option<i64> = conn
                .query_row(
                    "SELECT expires_at FROM store_claims WHERE key = ?1",
                    [key],
                    |row| row.get(0),
                )
                .optional()
                .map_err(|e| unavailable("is_claimed", &e))?;
            Ok(expires_at.is_some_and(|exp| expiry::is_live(exp, now)))
        })
        .await
    }

    async fn claim_as(&self, key: &str, owner: &str, ttl: Duration) -> Result<Claim, StoreError> {
        let (key, owner) = (key.to_owned(), owner.to_owned());
        let now = OffsetDateTime::now_utc();
        let expires_at = expiry::expires_at(now, ttl);
        let now = expiry::now_secs(now);
        self.run("claim_as", move |conn| {
            // As `claim`, plus: the current owner may take it again (a retried job).
            let changed = conn
                .execute(
                    "INSERT INTO store_claims (key, expires_at, owner) VALUES (?1, ?2, ?3)
                     ON CONFLICT (key) DO UPDATE
                     SET expires_at = excluded.expires_at, owner = excluded.owner
                     WHERE store_claims.expires_at <= ?4 OR store_claims.owner = ?3",
                    params![key, expires_at, owner, now],
                )
                .map_err(|e| unavailable("claim_as", &e))?;
            Ok(if changed == 1 {
                Claim::Won
            } else {
                Claim::AlreadyClaimed
            })
        })
        .await
    }
}

#[async_trait]
impl Counters for SqliteStore {
    async fn increment_within(
        &self,
        scope: &str,
        counter: &str,
        ceiling: u64,
    ) -> Result<Option<u64>, StoreError> {
        if ceiling == 0 {
            return Ok(None);
        }
        let (scope, counter) = (scope.to_owned(), counter.to_owned());
        // A ceiling beyond i64 cannot be reached by a stored value anyway.
        let ceiling = i64::try_from(ceiling).unwrap_or(i64::MAX);
        self.run("increment_within", move |conn| {
            let value: Option<i64> = conn
                .query_row(
                    "INSERT INTO store_counters (scope, name, value) VALUES (?1, ?2, 1)
                     ON CONFLICT (scope, name) DO UPDATE SET value = value + 1
                     WHERE store_counters.value < ?3
                     RETURNING value",
                    params![scope, counter, ceiling],
                    |row| row.get(0),
                )
                .optional()
                .map_err(|e| unavailable("increment_within", &e))?;
            value
                .map(|v| counter_value(v, &scope, &counter))
                .transpose()
        })
        .await
    }

    async fn counter(&self, scope: &str, counter: &str) -> Result<u64, StoreError> {
        let values = self.counter_values(scope, &[counter]).await?;
        Ok(values.first().copied().unwrap_or(0))
    }

    async fn add_to_counter(
        &self,
        scope: &str,
        counter: &str,
        delta: u64,
    ) -> Result<u64, StoreError> {
        let (scope, counter) = (scope.to_owned(), counter.to_owned());
        let delta = counters::sqlite_delta(delta)?;
        self.run("add_to_counter", move |conn| {
            let value = counters::add(conn, &scope, &counter, delta)
                .map_err(|e| unavailable("add_to_counter", &e))?;
            counter_value(value, &scope, &counter)
        })
        .await
    }

    async fn add_to_counters(&self, scope: &str, deltas: &[(&str, u64)]) -> Result<(), StoreError> {
        self.add_to_counters_together(scope, deltas).await
    }

    async fn counters(&self, scope: &str, names: &[&str]) -> Result<Vec<u64>, StoreError> {
        self.counter_values(scope, names).await
    }
}

#[async_trait]
impl Installations for SqliteStore {
    async fn put_installation(&self, installation: &Installation) -> Result<(), StoreError> {
        let id = id_column(installation.id);
        let record = encode(installation, "installation")?;
        self.run("put_installation", move |conn| {
            conn.execute(
                "INSERT INTO store_installations (id, record) VALUES (?1, ?2)
                 ON CONFLICT (id) DO UPDATE SET record = excluded.record",
                params![id, record],
            )
            .map_err(|e| unavailable("put_installation", &e))?;
            Ok(())
        })
        .await
    }

    async fn installation(&self, id: u64) -> Result<Option<Installation>, StoreError> {
        self.run("installation", move |conn| {
            one_record(
                conn,
                "installation",
                "SELECT record FROM store_installations WHERE id = ?1",
                [id_column(id)],
                || format!("store_installations/{id}"),
            )
        })
        .await
    }

    async fn delete_installation(&self, id: u64) -> Result<(), StoreError> {
        self.run("delete_installation", move |conn| {
            conn.execute(
                "DELETE FROM store_installations WHERE id = ?1",
                [id_column(id)],
            )
            .map_err(|e| unavailable("delete_installation", &e))?;
            Ok(())
        })
        .await
    }
}

#[async_trait]
impl Findings for SqliteStore {
    async fn put_finding(&self, finding: &Finding) -> Result<(), StoreError> {
        let record = encode(finding, "finding")?;
        let (repo, pr, id) = (
            finding.repo.clone(),
            id_column(finding.pr),
            finding.id.clone(),
        );
        let comment_id = finding.comment_id.map(id_column);
        self.run("put_finding", move |conn| {
            conn.execute(
                "INSERT INTO store_findings (repo, pr, id, comment_id, record)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (repo, pr, id) DO UPDATE
                 SET comment_id = excluded.comment_id, record = excluded.record",
                params![repo, pr, id, comment_id, record],
            )
            .map_err(|e| unavailable("put_finding", &e))?;
            Ok(())
        })
        .await
    }

    async fn put_finding_if(
        &self,
        finding: &Finding,
        read: Option<&Finding>,
    ) -> Result<bool, StoreError> {
        let record = encode(finding, "finding")?;
        let (repo, pr, id) = (
            finding.repo.clone(),
            id_column(finding.pr),
            finding.id.clone(),
        );
        let comment_id = finding.comment_id.map(id_column);
        let expected = read.map(Finding::decision_token);
        self.run("put_finding_if", move |conn| {
            // Read, compare and write under one immediate transaction: no other writer
            // (another connection to the file) can slip in between.
            let tx = immediate(conn).map_err(|e| unavailable("put_finding_if", &e))?;
            let stored: Option<String> = tx
                .query_row(
                    "SELECT record FROM store_findings WHERE repo = ?1 AND pr = ?2 AND id = ?3",
                    params![repo, pr, id],
                    |row| row.get(0),
                )
                .optional()
                .map_err(|e| unavailable("put_finding_if", &e))?;
            let holds = match (&expected, stored) {
                (None, None) => true,
                (Some(expected), Some(stored)) => {
                    let stored: Finding =
                        decode(&stored, format!("store_findings/{repo}#{pr}/{id}"))?;
                    stored.decision_token() == *expected
                }
                _ => false,
            };
            if !holds {
                return Ok(false);
            }
            tx.execute(
                "INSERT INTO store_findings (repo, pr, id, comment_id, record)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (repo, pr, id) DO UPDATE
                 SET comment_id = excluded.comment_id, record = excluded.record",
                params![repo, pr, id, comment_id, record],
            )
            .map_err(|e| unavailable("put_finding_if", &e))?;
            tx.commit().map_err(|e| unavailable("put_finding_if", &e))?;
            Ok(true)
        })
        .await
    }

    async fn finding_by_comment(
        &self,
        repo: &str,
        comment_id: u64,
    ) -> Result<Option<Finding>, StoreError> {
        let repo = repo.to_owned();
        self.run("finding_by_comment", move |conn| {
            let mut statement = conn
                .prepare_cached(
                    "SELECT record FROM store_findings WHERE repo = ?1 AND comment_id = ?2
                     LIMIT 2",
                )
                .map_err(|e| unavailable("finding_by_comment", &e))?;
            let records = statement
                .query_map(params![repo, id_column(comment_id)], |row| {
                    row.get::<_, String>(0)
                })
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .map_err(|e| unavailable("finding_by_comment", &e))?;
            if records.len() > 1 {
                tracing::warn!(
                    repo,
                    comment_id,
                    "several findings claim one review comment; using the first"
                );
            }
            records
                .first()
                .map(|r| decode(r, format!("store_findings/{repo}/comment/{comment_id}")))
                .transpose()
        })
        .await
    }

    async fn findings_for_pr(&self, repo: &str, pr: u64) -> Result<Vec<Finding>, StoreError> {
        let repo = repo.to_owned();
        self.run("findings_for_pr", move |conn| {
            let mut statement = conn
                .prepare_cached("SELECT id, record FROM store_findings WHERE repo = ?1 AND pr = ?2")
                .map_err(|e| unavailable("findings_for_pr", &e))?;
            let rows = statement
                .query_map(params![repo, id_column(pr)], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                })
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .map_err(|e| unavailable("findings_for_pr", &e))?;
            let mut findings = rows
                .iter()
                .map(|(id, record)| decode(record, format!("store_findings/{repo}#{pr}/{id}")))
                .collect::<Result<Vec<Finding>, _>>()?;
            ordering::findings_oldest_first(&mut findings);
            Ok(findings)
        })
        .await
    }
}

#[async_trait]
impl Memory for SqliteStore {
    async fn memory(&self, partition: &str) -> Result<Vec<MemoryItem>, StoreError> {
        let partition = partition.to_owned();
        self.run("memory", move |conn| {
            let mut statement = conn
                .prepare_cached(
                    "SELECT sort_key, version, record FROM store_memory
                     WHERE partition = ?1 ORDER BY sort_key",
                )
                .map_err(|e| unavailable("memory", &e))?;
            let rows = statement
                .query_map([&partition], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, String>(2)?,
                    ))
                })
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .map_err(|e| unavailable("memory", &e))?;
            rows.into_iter()
                .map(|(sort_key, version, record)| {
                    let location = format!("store_memory/{partition}/{sort_key}");
                    Ok(MemoryItem {
                        version: u64::try_from(version).map_err(|_| StoreError::Corrupt {
                            key: location.clone(),
                            reason: format!("negative version {version}"),
                        })?,
                        record: decode(&record, location)?,
                        sort_key,
                    })
                })
                .collect()
        })
        .await
    }

    async fn put_memory(
        &self,
        partition: &str,
        sort_key: &str,
        record: &serde_json::Value,
        expected: u64,
    ) -> Result<bool, StoreError> {
        let record = encode(record, "memory record")?;
        let (partition, sort_key) = (partition.to_owned(), sort_key.to_owned());
        let expected = i64::try_from(expected)
            .map_err(|_| StoreError::Config(format!("memory version {expected} too large")))?;
        self.run("put_memory", move |conn| {
            // One statement each way, so the version check and the write are atomic.
            let changed = if expected == 0 {
                conn.execute(
                    "INSERT INTO store_memory (partition, sort_key, version, record)
                     VALUES (?1, ?2, 1, ?3) ON CONFLICT (partition, sort_key) DO NOTHING",
                    params![partition, sort_key, record],
                )
            } else {
                conn.execute(
                    "UPDATE store_memory SET version = version + 1, record = ?3
                     WHERE partition = ?1 AND sort_key = ?2 AND version = ?4",
                    params![partition, sort_key, record, expected],
                )
            }
            .map_err(|e| unavailable("put_memory", &e))?;
            Ok(changed == 1)
        })
        .await
    }
}

#[async_trait]
impl Tenancy for SqliteStore {
    async fn purge_repository(&self, repo: &str) -> Result<u64, StoreError> {
        self.purge_repository_rows(repo).await
    }

    async fn rekey_repository(&self, from: &str, to: &str) -> Result<u64, StoreError> {
        self.rekey_repository_rows(from, to).await
    }

    async fn rekey_memory(&self, from: &str, to: &str) -> Result<u64, StoreError> {
        self.rekey_memory_partition(from, to).await
    }

    async fn purge_memory(&self, partition: &str) -> Result<u64, StoreError> {
        self.purge_memory_partition(partition).await
    }
}

/// GitHub ids are `u64` but SQLite integers are `i64`. The ids are only ever compared
/// for equality, so reinterpreting the bits is a lossless one-to-one mapping, and ids
/// above `i64::MAX` (none exist today) still round-trip.
fn id_column(id: u64) -> i64 {
    i64::from_ne_bytes(id.to_ne_bytes())
}

fn counter_value(value: i64, scope: &str, counter: &str) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt {
        key: format!("store_counters/{scope}/{counter}"),
        reason: format!("negative counter value {value}"),
    })
}

fn encode<T: Serialize>(record: &T, what: &str) -> Result<String, StoreError> {
    // Our own types always serialise; reaching this means a type changed shape.
    serde_json::to_string(record)
        .map_err(|e| StoreError::Config(format!("encoding {what} as JSON: {e}")))
}

/// The record (first column) of the one row `sql` selects, decoded; `None` without one.
fn one_record<T: DeserializeOwned>(
    conn: &Connection,
    operation: &str,
    sql: &str,
    params: impl rusqlite::Params,
    location: impl FnOnce() -> String,
) -> Result<Option<T>, StoreError> {
    let record: Option<String> = conn
        .query_row(sql, params, |row| row.get(0))
        .optional()
        .map_err(|e| unavailable(operation, &e))?;
    record.map(|r| decode(&r, location())).transpose()
}

/// An immediate transaction: no other connection to the file writes between its read and
/// its write (a deferred one would take the write lock only at the write).
fn immediate(conn: &Connection) -> rusqlite::Result<rusqlite::Transaction<'_>> {
    rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)
}

fn decode<T: DeserializeOwned>(record: &str, location: String) -> Result<T, StoreError> {
    serde_json::from_str(record).map_err(|e| StoreError::Corrupt {
        key: location,
        reason: e.to_string(),
    })
}

pub(crate) fn unavailable(what: &str, error: &rusqlite::Error) -> StoreError {
    StoreError::Unavailable(format!("sqlite {what}: {error}"))
}
