//! Which run a review job is (the head's automatic run, or a manual request's own), and
//! whether that run still needs reviewing. See [`runs`] for the keys and the claim.

use super::{ReviewError, ReviewHandler, runs};
use crate::job::{ReviewJob, ReviewTrigger};
use crate::mention::Handles;
use crate::ports::RunState;
use crate::ports::github::RepoScope;

impl ReviewHandler {
    /// The run this job is about. An automatic job's is the head's own run, which owns the
    /// merge gate. A manual request never takes that run (see [`runs::manual_key`]): it
    /// gets a run of its own, so the automatic review of the head still runs and concludes
    /// "Parley review" whoever asked first. Only `@parley review` (incremental) is answered
    /// "already reviewed", when a published run already covers the head: "full" asks for
    /// the whole PR from scratch.
    pub(super) async fn run_key(
        &self,
        job: &ReviewJob,
        head_sha: &str,
    ) -> Result<String, ReviewError> {
        if !runs::is_manual(job.trigger) {
            return Ok(head_sha.to_string());
        }
        // A full review under a key it was given (a retargeted head's, see
        // `runs::retarget_key`) answers no comment.
        if let (ReviewTrigger::ManualFull, None, Some(key)) =
            (job.trigger, &job.request, job.rerun_of.as_deref())
            && runs::head_of(key) == head_sha
        {
            return Ok(key.to_string());
        }
        let request = job.request.as_ref().map_or(0, |r| r.comment_id);
        let own = runs::manual_key(head_sha, job.trigger, request);
        if job.trigger != ReviewTrigger::ManualIncremental {
            return Ok(own);
        }
        let known = self
            .services
            .store
            .review_runs(&job.repo.tenant().repo, job.number)
            .await?;
        // A redelivered or retried request resumes its own run.
        if known.iter().any(|run| run.head_sha == own) {
            return Ok(own);
        }
        // Otherwise a published review of this head answers it: the automatic one first,
        // as that is the review the PR is judged by, else a manual one.
        let covering = known
            .iter()
            .filter(|run| {
                run.state == RunState::Published && runs::head_of(&run.head_sha) == head_sha
            })
            .min_by_key(|run| runs::is_manual_key(&run.head_sha));
        Ok(covering.map_or(own, |run| run.head_sha.clone()))
    }

    /// Whether this run needs no review: published already (a manual request for the
    /// head's own run then gets "already reviewed"), or superseded.
    pub(super) async fn settled(
        &self,
        scope: &RepoScope,
        job: &ReviewJob,
        run_key: &str,
        parley: &Handles,
    ) -> Result<bool, ReviewError> {
        let repo = job.repo.tenant().repo;
        let head_sha = runs::head_of(run_key);
        let Some(run) = self
            .services
            .store
            .review_run(&repo, job.number, run_key)
            .await?
        else {
            return Ok(false);
        };
        match run.state {
            RunState::Published => {
                // A manual run that was published has answered its own request already;
                // any other run covering the head answers this request "already reviewed".
                let request = job.request.as_ref().map(|r| r.comment_id);
                let own = request.is_some() && runs::parse_key(run_key).1 == request;
                if runs::is_manual(job.trigger) && !own {
                    runs::answer_already_reviewed(
                        self.services.github.as_ref(),
                        scope,
                        job,
                        &run,
                        parley,
                    )
                    .await?;
                }
                tracing::info!(%repo, number = job.number, %head_sha, "already reviewed");
                Ok(true)
            }
            RunState::Superseded => Ok(true),
            RunState::Running | RunState::Failed => Ok(false),
        }
    }
}
