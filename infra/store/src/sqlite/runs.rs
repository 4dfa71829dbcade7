//! `ReviewRuns` on SQLite: one row per run, its record as JSON. A let-through is the one
//! part of a run written by someone other than the worker running it, so both writes that
//! touch it read and write under one immediate transaction.

use super::{SqliteStore, decode, encode, id_column, immediate, one_record, unavailable};
use crate::ordering;
use async_trait::async_trait;
use parley_core::ports::{ReviewRun, ReviewRuns, StoreError};
use rusqlite::{Connection, params};

#[async_trait]
impl ReviewRuns for SqliteStore {
    async fn put_review_run(&self, run: &ReviewRun) -> Result<(), StoreError> {
        let mut run = run.clone();
        self.run("put_review_run", move |conn| {
            let failed = |e: rusqlite::Error| unavailable("put_review_run", &e);
            let tx = immediate(conn).map_err(failed)?;
            if run.let_through_by.is_none()
                && let Some(stored) = stored_run(&tx, &run.repo, run.pr, &run.head_sha)?
            {
                run.let_through_by = stored.let_through_by;
            }
            tx.execute(
                "INSERT INTO store_review_runs (repo, pr, head_sha, record) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (repo, pr, head_sha) DO UPDATE SET record = excluded.record",
                params![
                    run.repo,
                    id_column(run.pr),
                    run.head_sha,
                    encode(&run, "review run")?
                ],
            )
            .map_err(failed)?;
            tx.commit().map_err(failed)
        })
        .await
    }

    async fn let_run_through(&self, run: &ReviewRun, who: &str) -> Result<bool, StoreError> {
        let (repo, pr, run_key) = (run.repo.clone(), run.pr, run.head_sha.clone());
        let who = who.to_owned();
        self.run("let_run_through", move |conn| {
            let failed = |e: rusqlite::Error| unavailable("let_run_through", &e);
            let tx = immediate(conn).map_err(failed)?;
            let Some(mut run) = stored_run(&tx, &repo, pr, &run_key)? else {
                return Ok(false);
            };
            if run.let_through_by.is_none() {
                run.let_through_by = Some(who);
                tx.execute(
                    "UPDATE store_review_runs SET record = ?4
                     WHERE repo = ?1 AND pr = ?2 AND head_sha = ?3",
                    params![repo, id_column(pr), run_key, encode(&run, "review run")?],
                )
                .map_err(failed)?;
                tx.commit().map_err(failed)?;
            }
            Ok(true)
        })
        .await
    }

    async fn review_run(
        &self,
        repo: &str,
        pr: u64,
        head_sha: &str,
    ) -> Result<Option<ReviewRun>, StoreError> {
        let (repo, sha) = (repo.to_owned(), head_sha.to_owned());
        self.run("review_run", move |conn| stored_run(conn, &repo, pr, &sha))
            .await
    }

    async fn review_runs(&self, repo: &str, pr: u64) -> Result<Vec<ReviewRun>, StoreError> {
        let repo = repo.to_owned();
        let mut runs: Vec<ReviewRun> = self
            .run("review_runs", move |conn| {
                let mut statement = conn
                    .prepare("SELECT head_sha, record FROM store_review_runs WHERE repo = ?1 AND pr = ?2")
                    .map_err(|e| unavailable("review_runs", &e))?;
                let rows = statement
                    .query_map(params![repo, id_column(pr)], |row| {
                        Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                    })
                    .map_err(|e| unavailable("review_runs", &e))?;
                let mut runs = Vec::new();
                for row in rows {
                    let (sha, record) = row.map_err(|e| unavailable("review_runs", &e))?;
                    runs.push(decode(&record, format!("store_review_runs/{repo}#{pr}/{sha}"))?);
                }
                Ok(runs)
            })
            .await?;
        ordering::runs_oldest_first(&mut runs);
        Ok(runs)
    }
}

fn stored_run(
    conn: &Connection,
    repo: &str,
    pr: u64,
    run_key: &str,
) -> Result<Option<ReviewRun>, StoreError> {
    one_record(
        conn,
        "review_run",
        "SELECT record FROM store_review_runs WHERE repo = ?1 AND pr = ?2 AND head_sha = ?3",
        params![repo, id_column(pr), run_key],
        || format!("store_review_runs/{repo}#{pr}/{run_key}"),
    )
}
