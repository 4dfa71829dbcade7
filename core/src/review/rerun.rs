//! "Re-run" on the head's **Parley review** check. GitHub sends the App that made a check
//! `check_run.rerequested` (`check_suite.rerequested` for "Re-run all checks") and does
//! nothing more itself: unanswered, the button does nothing, and a review that failed (the
//! model down or rate-limited past the queue's retries) stays failed until the next push.
//! What a re-run does depends on how the head's automatic review stands:
//!
//! - failed, never run (its job lost), or left running by a worker that died: the head's
//!   automatic review runs now, as its own job would have, and concludes a new check (a
//!   run another delivery is still working on keeps its claim, and this does nothing);
//! - published: the gate is judged again from the PR's open findings, as a new check (a
//!   finding resolved since counts). A published review is never redone: a re-run is no
//!   way to ask the model until it misses a finding, and the gate counts every open
//!   finding of the PR anyway. But a review that was partial (a pass failed, the model
//!   rate-limited) is completed first, once per head: a full review of the head runs as a
//!   manual one would (its own run and `neutral` check, see [`runs::manual_key`]), what
//!   it finds blocks like any finding when the gate is judged again, and, complete, it
//!   completes the head for the gate (see [`runs::head_partial`]);
//! - superseded, or the PR has moved on or closed: nothing; the newer head has its own.
//!
//! "Re-run" on a manual review's check (**Parley review (manual)**) runs the request
//! again only when its review failed; otherwise a manual review is asked for again in a
//! comment.
//!
//! A re-run loosens nothing: it runs the review the head was owed, or judges the gate
//! from the findings as they stand. So who asked decides nothing here (GitHub shows the
//! button to people who may write to the repository, and lets other Apps installed on it
//! ask through its API), and what asking again can cost is bounded: a published review is
//! only judged again, a partial one completed once, and a review is paid for again only
//! while its head has none.

use super::{ReviewError, ReviewHandler, regate, runs};
use crate::job::{Actor, ReviewJob, ReviewRequest, ReviewTrigger, Surface};
use crate::ports::github::{GitHubError, PageLimit, PullRequest, RepoScope};
use crate::ports::{Attempt, ReviewRun, RunState};

impl ReviewHandler {
    pub(super) async fn rerequested(
        &self,
        job: &ReviewJob,
        attempt: Option<Attempt>,
    ) -> Result<(), ReviewError> {
        let Some(AtHead { scope, pr, runs }) = self.at_head(job, "re-run of a check").await? else {
            return Ok(());
        };
        let repo = job.repo.tenant().repo;
        if let Some(key) = &job.rerun_of {
            return self
                .rerequested_manual(&scope, job, &pr, key, &runs, attempt)
                .await;
        }
        let own = runs.iter().find(|run| run.head_sha == job.head_sha);
        match own.map(|run| run.state) {
            Some(RunState::Published) => {
                if let Some(run) = own
                    && self.was_partial(&scope, job, run, &runs).await?
                {
                    self.complete_once(job, &pr, &runs, attempt).await?;
                }
                let outcome = regate::regate(
                    &self.services,
                    &scope,
                    job.number,
                    regate::RegateCause::Rerequested,
                )
                .await;
                tracing::info!(%repo, number = job.number, ?outcome, "re-run of a published review: the gate judged again");
                Ok(())
            }
            Some(RunState::Superseded) => {
                tracing::info!(%repo, number = job.number, "re-run of a superseded review: nothing to do");
                Ok(())
            }
            state @ (None | Some(RunState::Failed | RunState::Running)) => {
                self.release_if_failed(job, &job.head_sha, state).await?;
                let automatic = automatic_job(job, &pr, own, &runs);
                tracing::info!(%repo, number = job.number, head = %job.head_sha, trigger = ?automatic.trigger, "re-run: the head's automatic review runs again");
                Box::pin(self.review(&automatic, attempt)).await
            }
        }
    }
}

/// A PR still open at the head a job names: where it is, and its runs.
pub(super) struct AtHead {
    pub(super) scope: RepoScope,
    pub(super) pr: PullRequest,
    pub(super) runs: Vec<ReviewRun>,
}

impl ReviewHandler {
    /// The PR of `job` with its runs, unless it closed or its head moved on since the event
    /// (`what`, for the log): the newer head has its own jobs, and a closed PR needs none.
    pub(super) async fn at_head(
        &self,
        job: &ReviewJob,
        what: &str,
    ) -> Result<Option<AtHead>, ReviewError> {
        let installation = job.installation_id.ok_or(ReviewError::NoInstallation)?;
        let scope = RepoScope::for_repo(installation, &job.repo);
        let repo = job.repo.tenant().repo;
        let pr = self
            .services
            .github
            .get_pull_request(&scope, job.number)
            .await?;
        if pr.state != "open" || pr.head.sha != job.head_sha {
            tracing::info!(%repo, number = job.number, head = %job.head_sha, pr_head = %pr.head.sha, state = %pr.state, "{what} on a closed PR or an older head: nothing to do");
            return Ok(None);
        }
        let runs = self.services.store.review_runs(&repo, job.number).await?;
        Ok(Some(AtHead { scope, pr, runs }))
    }

    /// "Re-run" on a manual review's check: the request it answers runs again when its
    /// review failed (or was left running by a worker that died; a live claim still
    /// wins), and answers the request as it would have. A published review is not
    /// redone: a manual review is asked for again in a comment, within
    /// `review.manualReviewsPerHour`. The request is read back from GitHub (the comment or
    /// review that asked, and its author): one since deleted runs nothing.
    async fn rerequested_manual(
        &self,
        scope: &RepoScope,
        job: &ReviewJob,
        pr: &PullRequest,
        key: &str,
        runs: &[ReviewRun],
        attempt: Option<Attempt>,
    ) -> Result<(), ReviewError> {
        let repo = job.repo.tenant().repo;
        let (head, request) = runs::parse_key(key);
        let state = runs
            .iter()
            .find(|run| run.head_sha == key)
            .map(|run| run.state);
        let (Some(trigger), Some(comment_id), true, Some(RunState::Failed | RunState::Running)) = (
            runs::manual_trigger_of_key(key),
            request,
            head == job.head_sha,
            state,
        ) else {
            tracing::info!(%repo, number = job.number, run = %key, ?state, "re-run of a manual review that did not fail: nothing to do; it is asked for again in a comment");
            return Ok(());
        };
        if runs::is_retarget_request(comment_id) {
            // A retargeted head's full review (see `super::retarget`), which failed: it
            // runs again, and the head's gate is judged after it, as after the move.
            self.full_review_under(job, pr, key, runs, attempt).await?;
            regate::regate(
                &self.services,
                scope,
                job.number,
                regate::RegateCause::Retargeted,
            )
            .await;
            return Ok(());
        }
        let Some(request) = self.request_of(scope, job.number, comment_id).await? else {
            tracing::info!(%repo, number = job.number, comment_id, "re-run of a manual review whose request is gone: nothing to do");
            return Ok(());
        };
        self.release_if_failed(job, key, state).await?;
        tracing::info!(%repo, number = job.number, run = %key, "re-run of a failed manual review: its request runs again");
        let manual = ReviewJob {
            trigger,
            request: Some(request),
            ..automatic_job(job, pr, None, runs)
        };
        Box::pin(self.review(&manual, attempt)).await
    }

    /// The comment behind manual request `comment_id` on PR `number`, read back from
    /// GitHub: a top-level comment, a review comment, or a review's body. `None` when it
    /// is gone, or is not on this PR.
    async fn request_of(
        &self,
        scope: &RepoScope,
        number: u64,
        comment_id: u64,
    ) -> Result<Option<ReviewRequest>, ReviewError> {
        let github = self.services.github.as_ref();
        let found = match github.get_issue_comment(scope, comment_id).await {
            Ok(comment) => comment
                .issue_url
                .ends_with(&format!("/issues/{number}"))
                .then_some((Surface::IssueComment, comment.user, comment.html_url)),
            Err(GitHubError::NotFound(_)) => {
                match github.get_review_comment(scope, comment_id).await {
                    Ok(comment) => comment
                        .pull_request_url
                        .ends_with(&format!("/pulls/{number}"))
                        .then_some((Surface::ReviewComment, comment.user, comment.html_url)),
                    // A review's body: among the PR's reviews (listed: the port reads no
                    // single review), as the review that asked.
                    Err(GitHubError::NotFound(_)) => github
                        .list_reviews(scope, number, PageLimit::pages(5))
                        .await?
                        .items
                        .into_iter()
                        .find(|review| review.id == comment_id)
                        .map(|review| (Surface::ReviewBody, review.user, review.html_url)),
                    Err(err) => return Err(err.into()),
                }
            }
            Err(err) => return Err(err.into()),
        };
        Ok(found.and_then(|(surface, user, html_url)| {
            Some(ReviewRequest {
                comment_id,
                surface,
                author: user?.to_actor(),
                html_url,
            })
        }))
    }

    /// Whether the head stands reviewed only in part: its automatic review says it was
    /// partial, and no full review of the head has completed it since (a `@parley full
    /// review` may have). A review Parley cannot find (or did not write) says nothing, and
    /// nothing is completed.
    async fn was_partial(
        &self,
        scope: &RepoScope,
        job: &ReviewJob,
        run: &ReviewRun,
        runs: &[ReviewRun],
    ) -> Result<bool, ReviewError> {
        let github = self.services.github.as_ref();
        let parley = self.services.identity.handles(github, false).await?;
        let partial = runs::head_partial(github, scope, job.number, run, runs, &parley).await?;
        Ok(partial == Some(true))
    }

    /// Release the claim of run `run_key` when it failed: that claim belongs to the
    /// delivery that failed and outlives it, and nothing holds the run now (the PR's
    /// reviews run one at a time, and this job is the one running).
    pub(super) async fn release_if_failed(
        &self,
        job: &ReviewJob,
        run_key: &str,
        state: Option<RunState>,
    ) -> Result<(), ReviewError> {
        if state == Some(RunState::Failed) {
            let claim = runs::claim_key(&job.repo.tenant().repo, job.number, run_key);
            self.services.store.release(&claim).await?;
        }
        Ok(())
    }

    /// A full review of the head, under the one manual run key a re-run uses (request 0):
    /// run once, then never again for this head, however often Re-run is pressed; a
    /// failed one runs again (its claim released, as for the automatic run).
    async fn complete_once(
        &self,
        job: &ReviewJob,
        pr: &PullRequest,
        runs: &[ReviewRun],
        attempt: Option<Attempt>,
    ) -> Result<(), ReviewError> {
        let key = runs::manual_key(&job.head_sha, ReviewTrigger::ManualFull, 0);
        let repo = job.repo.tenant().repo;
        tracing::info!(%repo, number = job.number, head = %job.head_sha, "re-run of a partial review: a full review of the head completes it");
        self.full_review_under(job, pr, &key, runs, attempt).await
    }
}

/// The head's automatic review as its own job would have asked for it: the trigger the
/// run was recorded with (a push for one that was not an automatic trigger's), or for a
/// head never run, what a lost job is queued as. The re-run's delivery id stays, so the
/// queue's retry of the re-run resumes the run it claimed.
pub(super) fn automatic_job(
    job: &ReviewJob,
    pr: &PullRequest,
    own: Option<&ReviewRun>,
    runs: &[ReviewRun],
) -> ReviewJob {
    let trigger = match own.and_then(|run| runs::trigger_from_name(&run.trigger)) {
        Some(
            trigger @ (ReviewTrigger::Opened
            | ReviewTrigger::Reopened
            | ReviewTrigger::ReadyForReview
            | ReviewTrigger::Synchronize),
        ) => trigger,
        Some(_) => ReviewTrigger::Synchronize,
        None => runs::lost_trigger(runs),
    };
    ReviewJob {
        trigger,
        base_sha: pr.base.sha.clone(),
        base_ref: pr.base.ref_name.clone(),
        before_sha: None,
        author: pr.user.as_ref().map_or_else(
            || job.author.clone(),
            |user| Actor {
                login: user.login.clone(),
                kind: user.kind.clone(),
            },
        ),
        title: pr.title.clone(),
        request: None,
        label: None,
        rerun_of: None,
        moved_from: None,
        ..job.clone()
    }
}
