//! The SQLite schema and its migrations.
//!
//! The database file is shared with the SQLite queue adapter, which opens its own
//! connection. Two consequences: every table is prefixed `store_`, and the schema
//! version lives in our own `store_schema` table instead of `PRAGMA user_version`,
//! which is one number per *file* and would be fought over by both adapters.

use parley_core::ports::StoreError;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

/// Each entry moves the schema from the previous version to its own number. Append only.
const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        "
    CREATE TABLE IF NOT EXISTS store_claims (
        key        TEXT PRIMARY KEY NOT NULL,
        -- epoch seconds, same rounding as the DynamoDB TTL attribute
        expires_at INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS store_counters (
        scope TEXT NOT NULL,
        name  TEXT NOT NULL,
        value INTEGER NOT NULL,
        PRIMARY KEY (scope, name)
    );
    CREATE TABLE IF NOT EXISTS store_installations (
        id     INTEGER PRIMARY KEY NOT NULL,
        record TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS store_findings (
        repo       TEXT NOT NULL,
        pr         INTEGER NOT NULL,
        id         TEXT NOT NULL,
        comment_id INTEGER,
        record     TEXT NOT NULL,
        PRIMARY KEY (repo, pr, id)
    );
    CREATE INDEX IF NOT EXISTS store_findings_by_comment
        ON store_findings (repo, comment_id);
    CREATE TABLE IF NOT EXISTS store_memory_rules (
        scope  TEXT NOT NULL,
        id     TEXT NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (scope, id)
    );
    ",
    ),
    (
        2,
        "
    -- Owned claims (claim_as): the same owner may claim again.
    ALTER TABLE store_claims ADD COLUMN owner TEXT;
    CREATE TABLE IF NOT EXISTS store_review_runs (
        repo     TEXT NOT NULL,
        pr       INTEGER NOT NULL,
        head_sha TEXT NOT NULL,
        record   TEXT NOT NULL,
        PRIMARY KEY (repo, pr, head_sha)
    );
    ",
    ),
    (
        3,
        "
    -- What Parley learned (learnings, false-positive patterns, statistics), as opaque
    -- versioned records. The memory rules it replaces could not be written by anyone.
    DROP TABLE IF EXISTS store_memory_rules;
    CREATE TABLE IF NOT EXISTS store_memory (
        partition TEXT NOT NULL,
        sort_key  TEXT NOT NULL,
        version   INTEGER NOT NULL,
        record    TEXT NOT NULL,
        PRIMARY KEY (partition, sort_key)
    );
    ",
    ),
    (
        4,
        "
    -- The corpus store (retrieval): one document per (repo, corpus, key), the document
    -- as JSON without its vector, the int8 vector as a blob beside it.
    CREATE TABLE IF NOT EXISTS store_documents (
        repo         TEXT NOT NULL,
        corpus       TEXT NOT NULL,
        key          TEXT NOT NULL,
        -- updated_at in epoch nanoseconds: the order of `documents`
        updated_ns   INTEGER NOT NULL,
        record       TEXT NOT NULL,
        vector_model TEXT,
        vector_scale REAL,
        vector       BLOB,
        PRIMARY KEY (repo, corpus, key)
    );
    CREATE INDEX IF NOT EXISTS store_documents_newest
        ON store_documents (repo, corpus, updated_ns DESC, key DESC);
    ",
    ),
    (
        5,
        "
    -- Each document's term counts (lexical search reads them instead of tokenising the
    -- text on every query). Rows written before stay NULL until upserted again.
    ALTER TABLE store_documents ADD COLUMN terms BLOB;
    ",
    ),
];

/// The version this build writes and understands.
pub(crate) const CURRENT_VERSION: i64 = 5;

/// Bring the schema up to [`CURRENT_VERSION`].
///
/// Runs under an immediate transaction so two processes opening a fresh file at once
/// cannot both apply a migration.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| super::unavailable("starting migration", &e))?;
    tx.execute_batch("CREATE TABLE IF NOT EXISTS store_schema (version INTEGER NOT NULL);")
        .map_err(|e| super::unavailable("creating store_schema", &e))?;
    let found: i64 = tx
        .query_row("SELECT max(version) FROM store_schema", [], |row| {
            row.get::<_, Option<i64>>(0)
        })
        .optional()
        .map_err(|e| super::unavailable("reading schema version", &e))?
        .flatten()
        .unwrap_or(0);
    if found > CURRENT_VERSION {
        return Err(StoreError::Config(format!(
            "store schema version {found} is newer than this build understands \
             ({CURRENT_VERSION}); upgrade parley"
        )));
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > found) {
        tracing::info!(version, "migrating SQLite store schema");
        tx.execute_batch(sql)
            .map_err(|e| super::unavailable("applying migration", &e))?;
    }
    if found < CURRENT_VERSION {
        tx.execute("DELETE FROM store_schema", [])
            .and_then(|_| {
                tx.execute(
                    "INSERT INTO store_schema (version) VALUES (?1)",
                    [CURRENT_VERSION],
                )
            })
            .map_err(|e| super::unavailable("recording schema version", &e))?;
    }
    tx.commit()
        .map_err(|e| super::unavailable("committing migration", &e))
}
