//! Connection setup and tables.
//!
//! The queue shares its database file with the SQLite store, which opens its own
//! connection: every table here is prefixed `queue_`, and nothing file-wide is claimed
//! (no `PRAGMA user_version`, which belongs to whoever migrates the file first).

use rusqlite::Connection;
use std::time::Duration;

/// How long a writer waits for the other connection's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// `seq` is the rowid: SQLite hands out `max(rowid) + 1`, so it grows with every send and
/// orders messages within a group. A group's head is its lowest `seq`.
///
/// A message is in flight while `receipt` is set and `visible_at_ms` lies in the future;
/// once that passes it is visible again, and the receipt is stale.
const TABLES: &str = "
CREATE TABLE IF NOT EXISTS queue_messages (
    seq           INTEGER PRIMARY KEY,
    queue         TEXT    NOT NULL,
    message_id    TEXT    NOT NULL UNIQUE,
    group_id      TEXT    NOT NULL,
    body          TEXT    NOT NULL,
    sent_at_ms    INTEGER NOT NULL,
    receive_count INTEGER NOT NULL DEFAULT 0,
    visible_at_ms INTEGER NOT NULL,
    receipt       TEXT    UNIQUE
);
CREATE INDEX IF NOT EXISTS queue_messages_by_group ON queue_messages (queue, group_id, seq);

CREATE TABLE IF NOT EXISTS queue_dedup (
    queue         TEXT    NOT NULL,
    dedup_id      TEXT    NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    PRIMARY KEY (queue, dedup_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS queue_dedup_by_expiry ON queue_dedup (expires_at_ms);

CREATE TABLE IF NOT EXISTS queue_dead_letters (
    seq           INTEGER PRIMARY KEY,
    queue         TEXT    NOT NULL,
    message_id    TEXT    NOT NULL,
    group_id      TEXT    NOT NULL,
    body          TEXT    NOT NULL,
    sent_at_ms    INTEGER NOT NULL,
    receive_count INTEGER NOT NULL,
    dead_at_ms    INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS queue_dead_letters_by_queue ON queue_dead_letters (queue, seq);
";

/// WAL lets the store's connection read while the queue writes. `synchronous = FULL`
/// because the webhook answers GitHub once `send` returns: a job acknowledged to GitHub must
/// survive a power cut, not only a crash of the process.
pub(super) fn prepare(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Returns the resulting mode ("memory" for an in-memory database), which is fine.
    let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.execute_batch(TABLES)
}
