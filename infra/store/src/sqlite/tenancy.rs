//! What is kept per repository, taken whole: purged when the App loses access to it,
//! moved when its records change key (name-keyed records adopted by the repository's id:
//! see `parley_core::tenancy`). Each runs as one transaction: it happened or it did not.

use super::{SqliteStore, unavailable};
use parley_core::ports::StoreError;
use parley_core::ports::store::keys;
use rusqlite::params;

impl SqliteStore {
    pub(super) async fn purge_repository_rows(&self, repo: &str) -> Result<u64, StoreError> {
        let repo = repo.to_owned();
        self.run("purge_repository", move |conn| {
            let failed = |e: rusqlite::Error| unavailable("purge_repository", &e);
            // One transaction: a purge either happened or did not.
            let tx = conn.unchecked_transaction().map_err(failed)?;
            let [pr_scopes, usage_scopes] = keys::repo_scope_prefixes(&repo);
            let mut deleted = 0;
            for (sql, args) in [
                ("DELETE FROM store_findings WHERE repo = ?1", params![repo]),
                (
                    "DELETE FROM store_review_runs WHERE repo = ?1",
                    params![repo],
                ),
                (
                    "DELETE FROM store_memory WHERE partition = ?1",
                    params![repo],
                ),
                // By prefix, compared as text (LIKE would read `_` and `%` in a name).
                (
                    "DELETE FROM store_counters WHERE substr(scope, 1, length(?1)) = ?1 \
                     OR substr(scope, 1, length(?2)) = ?2",
                    params![pr_scopes, usage_scopes],
                ),
            ] {
                deleted += tx.execute(sql, args).map_err(failed)?;
            }
            tx.commit().map_err(failed)?;
            Ok(deleted as u64)
        })
        .await
    }

    pub(super) async fn rekey_repository_rows(
        &self,
        from: &str,
        to: &str,
    ) -> Result<u64, StoreError> {
        let (from, to) = (from.to_owned(), to.to_owned());
        self.run("rekey_repository", move |conn| {
            let failed = |e: rusqlite::Error| unavailable("rekey_repository", &e);
            // One transaction: a move either happened or did not. `UPDATE OR IGNORE`
            // leaves a row whose new key is taken where it was; the DELETE after drops it.
            let tx = conn.unchecked_transaction().map_err(failed)?;
            let [from_prs, from_usage] = keys::repo_scope_prefixes(&from);
            let [to_prs, to_usage] = keys::repo_scope_prefixes(&to);
            let mut moved = 0;
            for table in ["store_findings", "store_review_runs"] {
                moved += tx
                    .execute(
                        &format!(
                            "UPDATE OR IGNORE {table} SET repo = ?2, \
                             record = json_set(record, '$.repo', ?2) WHERE repo = ?1"
                        ),
                        params![from, to],
                    )
                    .map_err(failed)?;
                tx.execute(
                    &format!("DELETE FROM {table} WHERE repo = ?1"),
                    params![from],
                )
                .map_err(failed)?;
            }
            moved += rekey_memory_rows(&tx, &from, &to).map_err(failed)?;
            for (old, new) in [(from_prs, to_prs), (from_usage, to_usage)] {
                // By prefix, compared as text (LIKE would read `_` and `%` in a name).
                moved += tx
                    .execute(
                        "UPDATE OR IGNORE store_counters \
                         SET scope = ?2 || substr(scope, length(?1) + 1) \
                         WHERE substr(scope, 1, length(?1)) = ?1",
                        params![old, new],
                    )
                    .map_err(failed)?;
                tx.execute(
                    "DELETE FROM store_counters WHERE substr(scope, 1, length(?1)) = ?1",
                    params![old],
                )
                .map_err(failed)?;
            }
            tx.commit().map_err(failed)?;
            Ok(moved as u64)
        })
        .await
    }

    pub(super) async fn rekey_memory_partition(
        &self,
        from: &str,
        to: &str,
    ) -> Result<u64, StoreError> {
        let (from, to) = (from.to_owned(), to.to_owned());
        self.run("rekey_memory", move |conn| {
            let failed = |e: rusqlite::Error| unavailable("rekey_memory", &e);
            let tx = conn.unchecked_transaction().map_err(failed)?;
            let moved = rekey_memory_rows(&tx, &from, &to).map_err(failed)?;
            tx.commit().map_err(failed)?;
            Ok(moved as u64)
        })
        .await
    }

    pub(super) async fn purge_memory_partition(&self, partition: &str) -> Result<u64, StoreError> {
        let partition = partition.to_owned();
        self.run("purge_memory", move |conn| {
            let deleted = conn
                .execute(
                    "DELETE FROM store_memory WHERE partition = ?1",
                    params![partition],
                )
                .map_err(|e| unavailable("purge_memory", &e))?;
            Ok(deleted as u64)
        })
        .await
    }
}

/// Move memory partition `from` to `to`; a learning's `repo` is rewritten only when it
/// names `from` (an organisation's learnings name the repositories they were taught in).
fn rekey_memory_rows(
    tx: &rusqlite::Transaction<'_>,
    from: &str,
    to: &str,
) -> Result<usize, rusqlite::Error> {
    let moved = tx.execute(
        "UPDATE OR IGNORE store_memory SET partition = ?2, \
         record = CASE WHEN json_extract(record, '$.repo') = ?1 \
                       THEN json_set(record, '$.repo', ?2) ELSE record END \
         WHERE partition = ?1",
        params![from, to],
    )?;
    tx.execute(
        "DELETE FROM store_memory WHERE partition = ?1",
        params![from],
    )?;
    Ok(moved)
}
