//! What one run reviews: the whole PR, or only what changed since the last reviewed head.

use super::summary::Narrowed;
use super::{ReviewError, ReviewHandler, runs};
use crate::job::{ReviewJob, ReviewTrigger};
use crate::ports::github::{ChangedFile, FileStatus, PullRequest, RepoScope};
use std::collections::{HashMap, HashSet};

/// The files one run reviews and the range they span.
pub(super) struct ReviewScope {
    pub(super) files: Vec<crate::ports::github::ChangedFile>,
    pub(super) truncated: bool,
    pub(super) base_sha: String,
    pub(super) incremental: bool,
    /// Some of the PR's files, each with its whole patch against the PR's base, the
    /// others' changes having been reviewed before: after a force-push (`base_sha` is the
    /// last reviewed head, see [`ReviewHandler::after_a_force_push`]) or a move to another
    /// base ([`ReviewHandler::against_a_new_base`]).
    pub(super) narrowed: Option<Narrowed>,
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
            narrowed: None,
        };
        if runs::is_retarget_job(job) {
            return self
                .against_a_new_base(scope, job, pr, full, head_sha)
                .await;
        }
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
        let compare_truncated = comparison.may_be_cut();
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
        // read as they did at the last reviewed head changed only by the merge. GitHub
        // lists 250 of a compare's commits: past that, a merge may be among those unlisted.
        let unlisted = comparison.total_commits > comparison.commits.len() as u64;
        if (unlisted || comparison.commits.iter().any(|c| c.parents.len() > 1))
            && let Some(then) = self
                .pr_changes_at(scope, job, &pr.base.sha, &previous.head_sha)
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
            narrowed: None,
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
        let Some(then) = self
            .pr_changes_at(scope, job, &pr.base.sha, previous_head)
            .await?
        else {
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
            narrowed: Some(Narrowed::ForcePush),
            ..full
        })
    }

    /// A reviewed head's full review after the PR moved to another base branch (see
    /// [`super::retarget`]): what the move brings into the diff, not what was read
    /// already. Left out are the files whose changes read as they did against the base
    /// the PR left (`job.moved_from`, which the head's review read, by
    /// [`unchanged_in_pr`]) and those the new base already holds as the head has them
    /// (the same blob on both: merging changes nothing there). So a PR moved from
    /// `develop` to `release` is reviewed for the commits `develop` had and `release`
    /// lacks, and the upper PR of a stack whose lower PR was squash-merged, which GitHub
    /// moves to the base, is not reviewed again for the lower PR's files. Whatever cannot
    /// be told (a compare GitHub will not give or cuts short, a patch it does not send, a
    /// move GitHub did not name the old commit of) is reviewed.
    async fn against_a_new_base(
        &self,
        scope: &RepoScope,
        job: &ReviewJob,
        pr: &PullRequest,
        full: ReviewScope,
        head_sha: &str,
    ) -> Result<ReviewScope, ReviewError> {
        let then = match &job.moved_from {
            Some(old_base) => self.pr_changes_at(scope, job, old_base, head_sha).await?,
            None => None,
        };
        let on_base = self
            .changed_on_base(scope, job, &pr.base.sha, head_sha)
            .await?;
        let (mut reviewed_before, mut already_on_base) = (0, 0);
        let files: Vec<_> = full
            .files
            .iter()
            .filter(|f| {
                if then
                    .as_ref()
                    .is_some_and(|then| unchanged_in_pr(f, &full.files, then))
                {
                    reviewed_before += 1;
                    false
                } else if on_base.iter().any(|b| same_on_both(f, b)) {
                    already_on_base += 1;
                    false
                } else {
                    true
                }
            })
            .cloned()
            .collect();
        let repo = job.repo.tenant().repo;
        tracing::info!(%repo, number = job.number, reviewing = files.len(), of = full.files.len(), reviewed_before, already_on_base, "moved to another base: reviewing what the move brings");
        Ok(ReviewScope {
            files,
            incremental: true,
            narrowed: Some(Narrowed::NewBase {
                reviewed_before,
                already_on_base,
            }),
            ..full
        })
    }

    /// The files the PR's base branch changed since it and the head parted (GitHub's
    /// three-dot compare of the head with the base), each with its blob at the base.
    /// Empty when GitHub will not tell: then every file counts as not on the base.
    async fn changed_on_base(
        &self,
        scope: &RepoScope,
        job: &ReviewJob,
        base: &str,
        head: &str,
    ) -> Result<Vec<ChangedFile>, ReviewError> {
        match self
            .services
            .github
            .compare_commits(scope, head, base)
            .await
        {
            Ok(comparison) => Ok(comparison.files),
            Err(err) if err.is_absent() => {
                let repo = job.repo.tenant().repo;
                tracing::info!(%repo, number = job.number, error = %err, "what the new base changed cannot be read: every file counts as not on it");
                Ok(Vec::new())
            }
            Err(err) => Err(err.into()),
        }
    }

    /// The PR's own changes against `base` as they stood at `head`, a head reviewed
    /// before, file by file: GitHub's three-dot compare of the two, which starts from
    /// their merge base. `None` when that cannot be told: the compare lists GitHub's
    /// maximum of files (it may have cut it short), or the head or base is gone.
    async fn pr_changes_at(
        &self,
        scope: &RepoScope,
        job: &ReviewJob,
        base: &str,
        head: &str,
    ) -> Result<Option<HashMap<String, String>>, ReviewError> {
        let repo = job.repo.tenant().repo;
        match self
            .services
            .github
            .compare_commits(scope, base, head)
            .await
        {
            Ok(then) if !then.may_be_cut() => Ok(Some(
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
                tracing::info!(%repo, number = job.number, error = %err, "the reviewed head or its base is gone: every file counts as changed");
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

/// Whether the PR's `file` is as the base has it (`on_base`, a file the base changed since
/// it and the head parted): the same blob, or removed on both. Merging the PR changes
/// nothing in it. A blob GitHub does not name counts as another.
fn same_on_both(file: &ChangedFile, on_base: &ChangedFile) -> bool {
    if file.filename != on_base.filename {
        return false;
    }
    match (file.status, on_base.status) {
        (FileStatus::Removed, FileStatus::Removed) => true,
        (FileStatus::Removed, _) | (_, FileStatus::Removed) => false,
        _ => file.sha.is_some() && file.sha == on_base.sha,
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
    use super::{same_changes, same_on_both};
    use crate::ports::github::{ChangedFile, FileStatus};

    /// A file is on the base as the head has it only where GitHub names one blob on both
    /// sides (or both removed it): never by its name alone.
    #[test]
    fn a_file_is_on_the_base_only_with_the_same_blob() {
        let file = |name: &str, status, sha: Option<&str>| ChangedFile {
            sha: sha.map(str::to_string),
            ..ChangedFile::listed(name, status, Some("@@ -0,0 +1 @@\n+x"))
        };
        let head = file("a.rs", FileStatus::Added, Some("b1"));
        assert!(same_on_both(
            &head,
            &file("a.rs", FileStatus::Added, Some("b1"))
        ));
        assert!(same_on_both(
            &head,
            &file("a.rs", FileStatus::Modified, Some("b1"))
        ));
        assert!(!same_on_both(
            &head,
            &file("a.rs", FileStatus::Added, Some("b2"))
        ));
        assert!(!same_on_both(
            &head,
            &file("b.rs", FileStatus::Added, Some("b1"))
        ));
        let unnamed = file("a.rs", FileStatus::Added, None);
        assert!(!same_on_both(&unnamed, &unnamed), "no blob named: read it");
        let removed = file("a.rs", FileStatus::Removed, Some("b1"));
        assert!(same_on_both(
            &removed,
            &file("a.rs", FileStatus::Removed, None)
        ));
        assert!(!same_on_both(&removed, &head), "removed on one side only");
        assert!(!same_on_both(&head, &removed));
    }

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
