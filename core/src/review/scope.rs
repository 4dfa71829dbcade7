//! What one run reviews: the whole PR, or only what changed since the last reviewed head.

use super::{ReviewError, ReviewHandler, runs};
use crate::job::{ReviewJob, ReviewTrigger};
use crate::ports::github::{ChangedFile, PullRequest, RepoScope};
use std::collections::{HashMap, HashSet};

/// The most files GitHub's compare API lists (it truncates silently past this).
const COMPARE_MAX_FILES: usize = 300;

/// The files one run reviews and the range they span.
pub(super) struct ReviewScope {
    pub(super) files: Vec<crate::ports::github::ChangedFile>,
    pub(super) truncated: bool,
    pub(super) base_sha: String,
    pub(super) incremental: bool,
    /// The last reviewed head is no ancestor of this one (a force-push): `base_sha` is
    /// that head, and `files` are the PR's files whose changes differ from what it
    /// reviewed, with their whole patches against the PR's base (see
    /// [`ReviewHandler::after_a_force_push`]).
    pub(super) force_pushed: bool,
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
            force_pushed: false,
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
            return self
                .after_a_force_push(scope, job, pr, full, &previous.head_sha)
                .await;
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
        let mut files: Vec<_> = comparison
            .files
            .iter()
            .filter(|f| in_pr.contains(f.filename.as_str()))
            .cloned()
            .collect();
        // A merge of the base branch brings its changes to files the PR changes too: the
        // compare shows them as if they were the PR's. Those whose own changes in the PR
        // read as they did at the last reviewed head changed only by the merge.
        if comparison.commits.iter().any(|c| c.parents.len() > 1)
            && let Some(then) = self
                .pr_changes_at(scope, job, pr, &previous.head_sha)
                .await?
        {
            let before = files.len();
            files.retain(|f| !unchanged_in_pr(f, whole, &then));
            tracing::info!(%repo, number = job.number, merged_in = before - files.len(), "a merge commit since the last review: files whose own changes it left alone are not reviewed again");
        }
        Ok(ReviewScope {
            files,
            truncated: truncated || compare_truncated,
            base_sha: previous.head_sha,
            incremental: true,
            force_pushed: false,
        })
    }

    /// After a force-push (a rebase onto a moved base, an amended commit) the last
    /// reviewed head is no ancestor of this one, and what changed since cannot be read
    /// off a compare of the two. The PR's own changes then ([`Self::pr_changes_at`]) are
    /// set against the PR's changes now: a file whose patch reads the same was reviewed
    /// then; the others are reviewed now, whole. So a rebase re-reviews only what it
    /// changed in the PR, where before every file was reviewed, and paid for, again.
    /// Whatever cannot be told (a compare GitHub cuts short or will not give, a patch it
    /// does not send) is reviewed.
    async fn after_a_force_push(
        &self,
        scope: &RepoScope,
        job: &ReviewJob,
        pr: &PullRequest,
        full: ReviewScope,
        previous_head: &str,
    ) -> Result<ReviewScope, ReviewError> {
        let Some(then) = self.pr_changes_at(scope, job, pr, previous_head).await? else {
            return Ok(full);
        };
        let files: Vec<_> = full
            .files
            .iter()
            .filter(|f| !unchanged_in_pr(f, &full.files, &then))
            .cloned()
            .collect();
        let repo = job.repo.tenant().repo;
        tracing::info!(%repo, number = job.number, changed = files.len(), of = full.files.len(), "force-pushed: reviewing the files whose changes differ from the last reviewed head's");
        Ok(ReviewScope {
            files,
            base_sha: previous_head.to_string(),
            incremental: true,
            force_pushed: true,
            ..full
        })
    }

    /// The PR's own changes as they stood at `head`, a head reviewed before, file by
    /// file: GitHub's three-dot compare of the PR's base with it, which starts from their
    /// merge base. `None` when that cannot be told: the compare lists GitHub's maximum of
    /// files (it may have cut it short), or the head is gone.
    async fn pr_changes_at(
        &self,
        scope: &RepoScope,
        job: &ReviewJob,
        pr: &PullRequest,
        head: &str,
    ) -> Result<Option<HashMap<String, String>>, ReviewError> {
        let repo = job.repo.tenant().repo;
        match self
            .services
            .github
            .compare_commits(scope, &pr.base.sha, head)
            .await
        {
            Ok(then) if then.files.len() < COMPARE_MAX_FILES => Ok(Some(
                then.files
                    .into_iter()
                    .filter_map(|f| Some((f.filename, f.patch?)))
                    .collect(),
            )),
            Ok(_) => {
                tracing::info!(%repo, number = job.number, "the PR's changes at the last reviewed head are more than a compare lists: every file counts as changed");
                Ok(None)
            }
            Err(err) if err.is_absent() => {
                tracing::info!(%repo, number = job.number, error = %err, "the last reviewed head is gone: every file counts as changed");
                Ok(None)
            }
            Err(err) => Err(err.into()),
        }
    }
}

/// Whether the PR changes `file` now as it did at a head reviewed before (`then`: the
/// PR's patches at that head), by [`same_changes`]. A patch missing on either side
/// (GitHub sends none for a large file) cannot be compared and counts as changed.
fn unchanged_in_pr(
    file: &ChangedFile,
    now: &[ChangedFile],
    then: &HashMap<String, String>,
) -> bool {
    let now = now
        .iter()
        .find(|f| f.filename == file.filename)
        .and_then(|f| f.patch.as_deref());
    match (now, then.get(&file.filename)) {
        (Some(now), Some(then)) => same_changes(now, then),
        _ => false,
    }
}

/// Whether two patches of one file make the same changes: the same lines added, removed
/// and around them, hunk by hunk. The hunk headers are left out (a rebase moves the
/// line numbers, and the enclosing function GitHub names after them is context).
fn same_changes(a: &str, b: &str) -> bool {
    fn body(patch: &str) -> impl Iterator<Item = &str> {
        patch
            .lines()
            .map(|line| if line.starts_with("@@") { "@@" } else { line })
    }
    body(a).eq(body(b))
}

#[cfg(test)]
mod tests {
    use super::same_changes;

    #[test]
    fn a_patch_moved_by_a_rebase_makes_the_same_changes() {
        let reviewed = "@@ -10,3 +10,4 @@ fn main() {\n a\n+b\n c\n d";
        let moved = "@@ -42,3 +42,4 @@ fn start() {\n a\n+b\n c\n d";
        assert!(same_changes(reviewed, moved));
        // Another line added, a context line changed upstream, a hunk split in two.
        assert!(!same_changes(
            reviewed,
            "@@ -10,3 +10,5 @@\n a\n+b\n+e\n c\n d"
        ));
        assert!(!same_changes(reviewed, "@@ -10,3 +10,4 @@\n A\n+b\n c\n d"));
        assert!(!same_changes(
            reviewed,
            "@@ -10,1 +10,2 @@\n a\n+b\n@@ -11,2 +12,2 @@\n c\n d"
        ));
    }
}
