//! Counters added and read together: one transaction, so a job's usage lands whole or not
//! at all, and one trip to the connection's thread to read them. (SQLite keeps a row per
//! scope and counter either way; the combined item is DynamoDB's.)

use super::{SqliteStore, unavailable};
use parley_core::ports::StoreError;
use rusqlite::{Connection, OptionalExtension, params};

impl SqliteStore {
    pub(super) async fn counter_values(
        &self,
        scope: &str,
        names: &[&str],
    ) -> Result<Vec<u64>, StoreError> {
        let scope = scope.to_owned();
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        self.run("counters", move |conn| {
            let failed = |e: rusqlite::Error| unavailable("counters", &e);
            let mut read = conn
                .prepare_cached("SELECT value FROM store_counters WHERE scope = ?1 AND name = ?2")
                .map_err(failed)?;
            names
                .iter()
                .map(|name| {
                    let value: Option<i64> = read
                        .query_row([&scope, name], |row| row.get(0))
                        .optional()
                        .map_err(failed)?;
                    value.map_or(Ok(0), |v| super::counter_value(v, &scope, name))
                })
                .collect()
        })
        .await
    }

    pub(super) async fn add_to_counters_together(
        &self,
        scope: &str,
        deltas: &[(&str, u64)],
    ) -> Result<(), StoreError> {
        let deltas = deltas
            .iter()
            .filter(|(_, delta)| *delta > 0)
            .map(|(counter, delta)| Ok(((*counter).to_owned(), sqlite_delta(*delta)?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        let scope = scope.to_owned();
        self.run("add_to_counters", move |conn| {
            let failed = |e: rusqlite::Error| unavailable("add_to_counters", &e);
            let tx = conn.unchecked_transaction().map_err(failed)?;
            for (counter, delta) in &deltas {
                add(&tx, &scope, counter, *delta).map_err(failed)?;
            }
            tx.commit().map_err(failed)
        })
        .await
    }
}

/// Add `delta` to one counter, returning its new value.
pub(super) fn add(
    conn: &Connection,
    scope: &str,
    counter: &str,
    delta: i64,
) -> rusqlite::Result<i64> {
    conn.query_row(
        "INSERT INTO store_counters (scope, name, value) VALUES (?1, ?2, ?3)
         ON CONFLICT (scope, name) DO UPDATE SET value = value + excluded.value
         RETURNING value",
        params![scope, counter, delta],
        |row| row.get(0),
    )
}

pub(super) fn sqlite_delta(delta: u64) -> Result<i64, StoreError> {
    i64::try_from(delta)
        .map_err(|_| StoreError::Config(format!("counter delta {delta} exceeds the SQLite range")))
}
