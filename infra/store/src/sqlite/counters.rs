//! Counters: a row per scope and counter. Each "only once" rule is one upsert; counters
//! added together go in one transaction, so a job's usage lands whole or not at all.

use super::{SqliteStore, unavailable};
use parley_core::ports::StoreError;
use rusqlite::{Connection, OptionalExtension, params};

impl SqliteStore {
    pub(super) async fn increment_counter_within(
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

    pub(super) async fn counter_values(
        &self,
        scope: &str,
        names: &[&str],
        operation: &'static str,
    ) -> Result<Vec<u64>, StoreError> {
        let scope = scope.to_owned();
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        self.run(operation, move |conn| {
            let mut statement = conn
                .prepare_cached("SELECT value FROM store_counters WHERE scope = ?1 AND name = ?2")
                .map_err(|e| unavailable(operation, &e))?;
            names
                .iter()
                .map(|name| {
                    let value: Option<i64> = statement
                        .query_row([&scope, name], |row| row.get(0))
                        .optional()
                        .map_err(|e| unavailable(operation, &e))?;
                    value.map_or(Ok(0), |v| counter_value(v, &scope, name))
                })
                .collect()
        })
        .await
    }

    pub(super) async fn add_to_one_counter(
        &self,
        scope: &str,
        counter: &str,
        delta: u64,
    ) -> Result<u64, StoreError> {
        let deltas = [(counter.to_owned(), sqlite_delta(delta)?)];
        let scope = scope.to_owned();
        self.run("add_to_counter", move |conn| {
            let value = add(conn, &scope, &deltas[0].0, deltas[0].1)
                .map_err(|e| unavailable("add_to_counter", &e))?;
            counter_value(value, &scope, &deltas[0].0)
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

fn add(conn: &Connection, scope: &str, counter: &str, delta: i64) -> rusqlite::Result<i64> {
    conn.query_row(
        "INSERT INTO store_counters (scope, name, value) VALUES (?1, ?2, ?3)
         ON CONFLICT (scope, name) DO UPDATE SET value = value + excluded.value
         RETURNING value",
        params![scope, counter, delta],
        |row| row.get(0),
    )
}

fn sqlite_delta(delta: u64) -> Result<i64, StoreError> {
    i64::try_from(delta)
        .map_err(|_| StoreError::Config(format!("counter delta {delta} exceeds the SQLite range")))
}

fn counter_value(value: i64, scope: &str, counter: &str) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt {
        key: format!("store_counters/{scope}/{counter}"),
        reason: format!("negative counter value {value}"),
    })
}
