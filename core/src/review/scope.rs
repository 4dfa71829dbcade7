//! What one run reviews: the whole PR, or only what changed since the last reviewed head.

use super::{ReviewError, ReviewHandler, runs};
use crate::job::{ReviewJob, ReviewTrigger};
use crate::ports::github::{PullRequest, RepoScope};
use std::collections::HashSet;

/// The most files GitHub's compare API lists (it truncates silently past this).
const COMPARE_MAX_FILES: usize = 300;

/// The files one run reviews and the range they span.
pub(super) struct ReviewScope {
    pub(super) files: Vec<crate::ports::github::ChangedFile>,
    pub(super) truncated: bool,
    pub(super) base_sha: String,
    pub(super) incremental: bool,
}

impl ReviewHandler {
    /// What this run reviews: everything since the last reviewed head on `synchronize`
    /// and `@parley review` (falling back to the whole PR after a force-push or when
    /// nothing was reviewed before), the whole PR otherwise.
    pub(super) async fn changes_to_review(
        &self,
        scope: &RepoScope,
        job: &ReviewJob,
        pr: &PullRequest,
        whole: &[crate::ports::github::ChangedFile],
        truncated: bool,
        head_sha: &str,
    ) -> Result<ReviewScope, ReviewError> {
        let full = ReviewScope {
            files: whole.to_vec(),
            truncated,
            base_sha: pr.base.sha.clone(),
            incremental: false,
        };
        if !matches!(
            job.trigger,
            ReviewTrigger::Synchronize
                | ReviewTrigger::Unlabeled
                | ReviewTrigger::ManualIncremental
        ) {
            return Ok(full);
        }
        let repo = job.repo.tenant().repo;
        let Some(previous) =
            runs::last_reviewed(self.services.store.as_ref(), &repo, job.number, head_sha).await?
        else {
            return Ok(full);
        };
        let comparison = match self
            .services
            .github
            .compare_commits(scope, &previous.head_sha, head_sha)
            .await
        {
            Ok(comparison) => comparison,
            Err(err) if err.is_absent() => return Ok(full),
            Err(err) => return Err(err.into()),
        };
        if comparison.status != "ahead" {
            tracing::info!(%repo, number = job.number, status = %comparison.status, "last reviewed head is not an ancestor; reviewing the whole PR");
            return Ok(full);
        }
        // Only files still changed by the PR: a commit that merged the base branch in
        // brings changes that are not the PR's.
        let in_pr: HashSet<&str> = whole.iter().map(|f| f.filename.as_str()).collect();
        // GitHub's compare lists at most 300 files and says nothing when it stops there:
        // a full list means some changes may be missing, and the review is partial.
        let compare_truncated = comparison.files.len() >= COMPARE_MAX_FILES;
        if compare_truncated {
            tracing::warn!(%repo, number = job.number, files = comparison.files.len(), "the compare since the last review lists GitHub's maximum of files; the review is partial");
        }
        let files = comparison
            .files
            .into_iter()
            .filter(|f| in_pr.contains(f.filename.as_str()))
            .collect();
        Ok(ReviewScope {
            files,
            truncated: truncated || compare_truncated,
            base_sha: previous.head_sha,
            incremental: true,
        })
    }
}
