//! An automatic review lost before it was queued. GitHub does not redeliver a webhook
//! the webhook failed to take (an outage, a throttled queue), so the head's "Parley
//! review" check would never come and a PR that requires it would wait for ever: a
//! manual review never concludes the gate, and pushing again is the only other way out.
//!
//! Someone asking for a review (`@parley review`) is the moment to notice. When the
//! head has no automatic run in the store and no gate check on GitHub, the automatic job
//! is queued again behind the manual one. Its run's claim keeps the original, if it was
//! only late, from reviewing the head a second time; a head held off by a setting (a
//! draft, a skip label) gets the same "Not reviewed" check its push would have given.

use super::{ReviewHandler, gate, runs};
use crate::job::{Job, ReviewJob, ReviewTrigger};
use crate::ports::github::{GitHubError, PullRequest, RepoScope};
use crate::ports::{QueueError, StoreError};

#[derive(Debug, thiserror::Error)]
enum LostError {
    #[error("GitHub: {0}")]
    GitHub(#[from] GitHubError),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("queue: {0}")]
    Queue(#[from] QueueError),
    #[error("could not encode the review job: {0}")]
    Encode(#[from] serde_json::Error),
}

impl ReviewHandler {
    /// Best effort: the manual review that was asked for goes on whatever happens here.
    pub(super) async fn requeue_lost_automatic_run(
        &self,
        scope: &RepoScope,
        job: &ReviewJob,
        pr: &PullRequest,
    ) {
        match self.lost_automatic_run(scope, job, pr).await {
            Ok(Some(trigger)) => {
                tracing::info!(repo = %scope.full_name(), number = job.number, head = %pr.head.sha, ?trigger, "the head's automatic review never came; queued again");
            }
            Ok(None) => {}
            Err(err) => {
                tracing::warn!(repo = %scope.full_name(), number = job.number, error = %err, "could not look for a lost automatic review");
            }
        }
    }

    /// Queue the head's automatic review when it was lost; the trigger it was queued as.
    async fn lost_automatic_run(
        &self,
        scope: &RepoScope,
        job: &ReviewJob,
        pr: &PullRequest,
    ) -> Result<Option<ReviewTrigger>, LostError> {
        let repo = job.repo.tenant().repo;
        let head = &pr.head.sha;
        let runs = self.services.store.review_runs(&repo, job.number).await?;
        if runs.iter().any(|run| run.head_sha == *head) {
            return Ok(None);
        }
        let checks = self
            .services
            .github
            .list_check_runs(scope, head, gate::CHECK_NAME)
            .await?;
        if !checks.is_empty() {
            return Ok(None);
        }
        let trigger = runs::lost_trigger(&runs);
        let lost = Job::Review(ReviewJob {
            delivery_id: format!("lost-{}", job.delivery_id),
            trigger,
            head_sha: head.clone(),
            base_sha: pr.base.sha.clone(),
            base_ref: pr.base.ref_name.clone(),
            before_sha: None,
            request: None,
            label: None,
            rerun_of: None,
            moved_from: None,
            ..job.clone()
        });
        let message = lost.message(format!("lost-{}-{}-{head}", job.repo.id, job.number))?;
        self.services.queue.send(message).await?;
        Ok(Some(trigger))
    }
}
