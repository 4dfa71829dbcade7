//! A PR moved to another base branch (`pull_request.edited` with `changes.base`). Its head
//! does not change, so no push comes, but its diff is another: commits the new base lacks
//! join it, and a head skipped for its base branch (`review.baseBranches`) may now be one
//! to review. Unanswered, the head's "Parley review" check kept what was concluded against
//! the old base: a `neutral` "skipped" that branch protection takes as passing, or a
//! `success` from a review that never read the new diff. So:
//!
//! - the head's automatic review not published (skipped for the old base, failed, lost):
//!   it runs now, as its own job would have, against the new base (and is skipped again
//!   if that base is not reviewed either);
//! - published against the old base: a full review of the head against the new one runs
//!   under a run of its own per base commit ([`runs::retarget_key`]; moving the PR back
//!   and forth reviews each base once), unless the head's own review would be skipped
//!   against the new base (`review.baseBranches`, a skipped author or label). What it
//!   finds is the PR's like any review's, and the head's gate is judged again from the
//!   PR's open findings ([`super::regate`]).
//!
//! Who moved the PR decides nothing: the move only ever adds a review.

use super::regate::{self, RegateCause};
use super::rerun::{AtHead, automatic_job};
use super::{ReviewError, ReviewHandler, runs};
use crate::job::{ReviewJob, ReviewTrigger};
use crate::ports::github::PullRequest;
use crate::ports::{Attempt, ReviewRun, RunState};

impl ReviewHandler {
    pub(super) async fn retargeted(
        &self,
        job: &ReviewJob,
        attempt: Option<Attempt>,
    ) -> Result<(), ReviewError> {
        let Some(AtHead { scope, pr, runs }) = self.at_head(job, "base changed").await? else {
            return Ok(());
        };
        let repo = job.repo.tenant().repo;
        let own = runs.iter().find(|run| run.head_sha == job.head_sha);
        if own.is_some_and(|run| run.state == RunState::Published) {
            // Only where the head's own review would run against the new base: a base
            // the repository does not review (`review.baseBranches`), a skipped author or
            // label, gets no review for the move either.
            let loaded = self.services.config.for_pull(&scope, &pr).await;
            let automatic = automatic_job(job, &pr, own, &runs);
            if let Some(reason) = super::skip_reason(&automatic, &pr, &loaded.config) {
                tracing::info!(%repo, number = job.number, %reason, "base changed to one not reviewed: nothing to do");
                return Ok(());
            }
            let key = runs::retarget_key(&job.head_sha, &pr.base.sha);
            tracing::info!(%repo, number = job.number, head = %job.head_sha, base = %pr.base.ref_name, "base changed after the head was reviewed: a full review against the new base");
            self.full_review_under(job, &pr, &key, &runs, attempt)
                .await?;
            // A review with no request leaves the gate to its caller (as a re-run's does).
            regate::regate(&self.services, &scope, job.number, RegateCause::Retargeted).await;
            return Ok(());
        }
        let state = own.map(|run| run.state);
        self.release_if_failed(job, &job.head_sha, state).await?;
        let automatic = automatic_job(job, &pr, own, &runs);
        tracing::info!(%repo, number = job.number, head = %job.head_sha, base = %pr.base.ref_name, "base changed before the head was reviewed: its automatic review runs against the new base");
        Box::pin(self.review(&automatic, attempt)).await
    }

    /// A full review of the head under run `key`, once: a published one is not redone,
    /// a failed one runs again (its claim released).
    pub(super) async fn full_review_under(
        &self,
        job: &ReviewJob,
        pr: &PullRequest,
        key: &str,
        runs: &[ReviewRun],
        attempt: Option<Attempt>,
    ) -> Result<(), ReviewError> {
        let state = runs
            .iter()
            .find(|run| run.head_sha == key)
            .map(|run| run.state);
        if matches!(state, Some(RunState::Published | RunState::Superseded)) {
            return Ok(());
        }
        self.release_if_failed(job, key, state).await?;
        let full = ReviewJob {
            trigger: ReviewTrigger::ManualFull,
            rerun_of: Some(key.to_string()),
            ..automatic_job(job, pr, None, runs)
        };
        Box::pin(self.review(&full, attempt)).await
    }
}
