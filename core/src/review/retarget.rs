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
//!   against the new base (`review.baseBranches`, a skipped author or label). It reads
//!   what the move brings into the diff, not what the head's review read already (when
//!   it read all of it) nor what the new base already holds
//!   (`ReviewHandler::against_a_new_base`, in `scope`).
//!   What it finds is the PR's like any review's, and the head's gate is judged again
//!   from the PR's open findings ([`super::regate`]).
//!
//! While that review fails, the head's check says it is not reviewed against the new
//! base (`neutral`, or held with `gate.incomplete: hold`), never the old base's verdict.
//!
//! Who moved the PR decides nothing: the move only ever adds a review.

use super::conclude::conclude_not_run;
use super::regate::{self, RegateCause};
use super::rerun::{AtHead, automatic_job};
use super::{ReviewError, ReviewHandler, runs};
use crate::config::RepoConfig;
use crate::job::{ReviewJob, ReviewTrigger};
use crate::ports::github::{PullRequest, RepoScope};
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
            loaded.settled_unless_last(attempt)?;
            let automatic = automatic_job(job, &pr, own, &runs);
            if let Some(reason) = super::skip_reason(&automatic, &pr, &loaded.config) {
                tracing::info!(%repo, number = job.number, %reason, "base changed to one not reviewed: nothing to do");
                return Ok(());
            }
            if super::pause::is_paused(self.services.store.as_ref(), &repo, job.number).await? {
                tracing::info!(%repo, number = job.number, "base changed while automatic reviews are paused: nothing to do");
                return Ok(());
            }
            let key = runs::retarget_key(&job.head_sha, &pr.base.sha);
            tracing::info!(%repo, number = job.number, head = %job.head_sha, base = %pr.base.ref_name, "base changed after the head was reviewed: a full review against the new base");
            let job = &self
                .leaving_out_what_was_read(&scope, job, own, &runs)
                .await;
            if let Err(err) = self.full_review_under(job, &pr, &key, &runs, attempt).await {
                self.not_reviewed_against_the_new_base(&scope, job, &pr, &loaded.config)
                    .await;
                return Err(err);
            }
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

    /// The move's job as the review against the new base should take it: naming the base
    /// the PR left (so that what the head's review read there is not read again) only
    /// when that review read all of it. A head reviewed in part (a pass failed, files
    /// left out) and not completed since, or one whose review cannot be found, has its
    /// diff read whole against the new base; nothing it never read is counted as read.
    async fn leaving_out_what_was_read(
        &self,
        scope: &RepoScope,
        job: &ReviewJob,
        own: Option<&ReviewRun>,
        runs: &[ReviewRun],
    ) -> ReviewJob {
        let github = self.services.github.as_ref();
        let complete = async {
            let Some(run) = own else { return Ok(false) };
            let parley = self.services.identity.handles(github, false).await?;
            let partial = runs::head_partial(github, scope, job.number, run, runs, &parley);
            Ok::<_, ReviewError>(partial.await? == Some(false))
        };
        match complete.await {
            Ok(true) => job.clone(),
            outcome => {
                if let Err(err) = outcome {
                    tracing::warn!(repo = %scope.full_name(), number = job.number, error = %err, "cannot tell whether the head's review read all of it: its diff is read whole against the new base");
                }
                ReviewJob {
                    moved_from: None,
                    ..job.clone()
                }
            }
        }
    }

    /// The head's check while its review against the new base fails: not the verdict
    /// earned against the old base, but "not reviewed" (`neutral`, or held with
    /// `gate.incomplete: hold`; `failure` while a blocking finding is open), as for any
    /// review owed. The queue's retry, or "Re-run" on the review's own check, then
    /// judges it again. Fails open: the job's error is what counts.
    async fn not_reviewed_against_the_new_base(
        &self,
        scope: &RepoScope,
        job: &ReviewJob,
        pr: &PullRequest,
        config: &RepoConfig,
    ) {
        let reason = format!(
            "the PR moved to {} and its review against it failed; it is tried again",
            super::skip::quoted(&pr.base.ref_name)
        );
        let title = Some("Not reviewed against the new base");
        let concluded =
            conclude_not_run(&self.services, scope, job, pr, config, &reason, title, true).await;
        if let Err(err) = concluded {
            tracing::warn!(repo = %scope.full_name(), number = job.number, error = %err, "could not say on the check that the head is not reviewed against its new base");
        }
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
        let stored = runs.iter().find(|run| run.head_sha == key);
        let state = stored.map(|run| run.state);
        if matches!(state, Some(RunState::Published | RunState::Superseded)) {
            return Ok(());
        }
        self.release_if_failed(job, key, state).await?;
        let full = ReviewJob {
            trigger: ReviewTrigger::ManualFull,
            rerun_of: Some(key.to_string()),
            // A re-run's job does not name the base the PR left; the first attempt's run
            // kept it.
            moved_from: (job.moved_from.clone())
                .or_else(|| stored.and_then(|run| run.moved_from.clone())),
            ..automatic_job(job, pr, None, runs)
        };
        Box::pin(self.review(&full, attempt)).await
    }
}
