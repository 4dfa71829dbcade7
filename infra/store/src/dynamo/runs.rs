//! `ReviewRuns` on DynamoDB: one item per run in the conversations table, under its PR's
//! partition. A let-through is the one attribute written by someone other than the worker
//! running the review, so it is set by an update of that attribute alone, and a whole-item
//! write that would drop it is conditional on there being none.

use super::DynamoStore;
use super::items::{conditional, decode, encode, s};
use crate::ordering;
use async_trait::async_trait;
use parley_core::ports::store::keys;
use parley_core::ports::{ReviewRun, ReviewRuns, StoreError};

const RUN_PREFIX: &str = "run#";
/// `ReviewRun::let_through_by` as serialised.
const LET_THROUGH: &str = "let_through_by";

#[async_trait]
impl ReviewRuns for DynamoStore {
    async fn put_review_run(&self, run: &ReviewRun) -> Result<(), StoreError> {
        let (pk, sk) = item_key(&run.repo, run.pr, &run.head_sha);
        let item = encode(run, &[("pk", &pk), ("sk", &sk)], "review run")?;
        if run.let_through_by.is_some() {
            return self
                .put(&self.tables.conversations, item, "put_review_run")
                .await;
        }
        let written = self
            .client
            .put_item()
            .table_name(&self.tables.conversations)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#let)")
            .expression_attribute_names("#let", LET_THROUGH)
            .send()
            .await;
        if conditional(written, "put_review_run")?.is_some() {
            return Ok(());
        }
        // Someone let the head through since this copy was read: keep it. A let-through
        // never changes once recorded, so this write needs no condition.
        let stored = self.review_run(&run.repo, run.pr, &run.head_sha).await?;
        let run = ReviewRun {
            let_through_by: stored.and_then(|stored| stored.let_through_by),
            ..run.clone()
        };
        let item = encode(&run, &[("pk", &pk), ("sk", &sk)], "review run")?;
        self.put(&self.tables.conversations, item, "put_review_run")
            .await
    }

    async fn let_run_through(&self, run: &ReviewRun, who: &str) -> Result<bool, StoreError> {
        let (pk, sk) = item_key(&run.repo, run.pr, &run.head_sha);
        let updated = self
            .client
            .update_item()
            .table_name(&self.tables.conversations)
            .key("pk", s(&pk))
            .key("sk", s(&sk))
            .update_expression("SET #let = :who")
            .condition_expression("attribute_exists(pk) AND attribute_not_exists(#let)")
            .expression_attribute_names("#let", LET_THROUGH)
            .expression_attribute_values(":who", s(who))
            .send()
            .await;
        if conditional(updated, "let_run_through")?.is_some() {
            return Ok(true);
        }
        // No such run, or one already let through (the first let-through stands).
        let stored = self.review_run(&run.repo, run.pr, &run.head_sha).await?;
        Ok(stored.is_some())
    }

    async fn review_run(
        &self,
        repo: &str,
        pr: u64,
        head_sha: &str,
    ) -> Result<Option<ReviewRun>, StoreError> {
        let (pk, sk) = item_key(repo, pr, head_sha);
        let item = self
            .get(
                &self.tables.conversations,
                &[("pk", &pk), ("sk", &sk)],
                "review_run",
            )
            .await?;
        let location = format!("{}/{pk}/{sk}", self.tables.conversations);
        item.map(|item| decode(item, &location)).transpose()
    }

    async fn review_runs(&self, repo: &str, pr: u64) -> Result<Vec<ReviewRun>, StoreError> {
        let pk = keys::pr_scope(repo, pr);
        let mut runs: Vec<ReviewRun> = self
            .records(&self.tables.conversations, &pk, RUN_PREFIX, "review_runs")
            .await?;
        ordering::runs_oldest_first(&mut runs);
        Ok(runs)
    }
}

/// The partition and sort key of run `run_key` of a PR.
fn item_key(repo: &str, pr: u64, run_key: &str) -> (String, String) {
    (keys::pr_scope(repo, pr), format!("{RUN_PREFIX}{run_key}"))
}
