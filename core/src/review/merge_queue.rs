//! GitHub's merge queue tests each queued PR on a commit of its own (the base branch
//! with the PRs queued ahead and this one merged in) and waits there for the branch's
//! required checks (`merge_group.checks_requested`). A required "Parley review" that
//! never comes to that commit holds the queue until it gives up, and nothing merges
//! through it.
//!
//! Parley does not review the queue's commit: the PR was reviewed, and what the commit
//! adds is the base and the PRs ahead, each queued on its own gate. It concludes "Parley
//! review" there as the PR's gate stands now, judged from the store as any regate is
//! ([`super::regate::judged`]): an open blocking finding fails it (one reopened after the
//! PR joined the queue too), a head reviewed only in part is `neutral` or held as
//! `gate.incomplete` says, and a head no review of Parley's has published is not
//! reviewed (`neutral`, as its own check was, or `failure` while a blocking finding is
//! open). Whoever queued the PR decides nothing.
//!
//! The queue asks once per commit and merges on what that commit's checks say, so a
//! judgement of the PR's gate that comes later (a thread reopened while the PR waits, a
//! manual review's blocking finding) is carried to the commits the queue is testing the
//! PR on ([`carry`]), found by their branches' names (looked for only once the queue has
//! asked about the PR, which the store notes); "Re-run" on the queue's check
//! judges it again. Which head the queue merged in is read from the PR (a push takes a
//! PR out of the queue), never from the branch name.

use super::regate::{self, RegateCause, RegateError};
use super::{gate, pr_url, repo_url, runs, summary};
use crate::ports::JobError;
use crate::ports::github::{CheckConclusion, CheckRunOutput, PullRequest, RepoScope};
use crate::services::Services;

/// The branches of GitHub's merge queue, under `refs/heads/`.
const QUEUE_BRANCHES: &str = "gh-readonly-queue/";

/// Who notes that the merge queue asked about a PR ([`queued_key`]): one owner, so that
/// each request extends the note.
const QUEUED_BY: &str = "merge-queue";

/// How long a PR counts as one the merge queue asked about since it last did: far longer
/// than a PR waits in a queue.
const QUEUED_FOR: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// The store's note that the merge queue asked for checks on a commit for PR `number`:
/// only then can a later judgement of the PR's gate have a queue commit to carry to, so
/// every other PR's regate is spared the `git/matching-refs` call that looks for them.
fn queued_key(repo: &str, number: u64) -> String {
    format!("merge-queue#{repo}#{number}")
}

/// A merge queue's commit for one PR (see [`crate::job::BookkeepingEvent::MergeGroup`]).
pub struct Group<'a> {
    pub number: u64,
    /// The commit the queue asks the checks of.
    pub group_head: &'a str,
    /// Judge it only where Parley has judged it for this PR before (see [`judged_for`]).
    pub verify: bool,
}

/// The PR a merge queue's branch tests: GitHub names it
/// `gh-readonly-queue/{base}/pr-{number}-{sha}` (under `refs/heads/` in the event), the
/// commit there being one of the queue's, not the PR's head. The base may hold slashes;
/// the last part names the PR. `None` for any other branch.
pub fn queued_pr(head_ref: &str) -> Option<u64> {
    let queue = head_ref.strip_prefix("refs/heads/").unwrap_or(head_ref);
    let (_, last) = queue.strip_prefix(QUEUE_BRANCHES)?.rsplit_once('/')?;
    let named = last.strip_prefix("pr-")?;
    let number = named.split_once('-').map_or(named, |(number, _)| number);
    number.parse().ok().filter(|n| *n > 0)
}

/// Conclude "Parley review" on the queue's commit for `group` as the PR's gate stands.
/// GitHub or store trouble fails the job, for the queue to try again: the merge queue
/// waits for this check, so it is never given up on quietly.
pub async fn conclude(
    services: &Services,
    scope: &RepoScope,
    group: &Group<'_>,
) -> Result<(), JobError> {
    let github = services.github.as_ref();
    let repo = scope.tenant().repo;
    if group.verify && !judged_for(services, scope, group.number, group.group_head).await {
        tracing::info!(%repo, number = group.number, group_head = %group.group_head, "asked to judge a commit on a branch named like the merge queue's that Parley never judged for the PR: nothing done");
        return Ok(());
    }
    // Noted before anything is concluded, so that a later judgement of the PR's gate
    // looks for the queue's commits ([`carry`]).
    services
        .store
        .claim_as(&queued_key(&repo, group.number), QUEUED_BY, QUEUED_FOR)
        .await
        .map_err(|err| JobError::Transient(err.to_string()))?;
    let pr = github.get_pull_request(scope, group.number).await?;
    let pr_head = pr.head.sha.as_str();
    let loaded = services.config.for_pull(scope, &pr).await;
    let config = &loaded.settled()?.config;
    let cause = RegateCause::MergeGroup;
    let judged = regate::judged(services, scope, &pr, pr_head, config, cause).await;
    let (conclusion, output) = match judged.map_err(regate_error)? {
        Some(judged) => judged,
        None => {
            let findings = services
                .store
                .findings_for_pr(&repo, group.number)
                .await
                .map_err(|err| JobError::Transient(err.to_string()))?;
            let reason = format!(
                "no review of this PR's head `{}` by Parley has published (skipped, failed or not run yet), so the merge queue's commit for it is not reviewed either",
                summary::short(pr_head)
            );
            let repo_url = repo_url(&pr, &scope.full_name());
            let verdict = gate::Verdict::Skipped {
                reason: &reason,
                open: gate::still_blocking(&findings, config),
                repo_url: &repo_url,
                pr_url: &pr_url(&pr, &repo_url),
                owed: false,
                let_through_by: None,
            };
            gate::conclude(&verdict, &config.gate)
        }
    };
    let key = runs::claim_key(&repo, group.number, group.group_head);
    gate::publish(github, scope, group.group_head, &key, conclusion, output).await?;
    tracing::info!(%repo, number = group.number, %pr_head, group_head = %group.group_head, ?conclusion, "merge queue's commit judged by the PR's gate");
    Ok(())
}

/// Conclude on each commit the merge queue is testing `pr` on what the PR's gate was just
/// judged to be (see [`regate`]), so that the queue does not merge on an older judgement.
/// Fails open as a regate does: trouble leaves those checks as they were and is logged.
pub(super) async fn carry(
    services: &Services,
    scope: &RepoScope,
    pr: &PullRequest,
    conclusion: CheckConclusion,
    output: &CheckRunOutput,
) {
    let github = services.github.as_ref();
    let repo = scope.tenant().repo;
    match services
        .store
        .is_claimed(&queued_key(&repo, pr.number))
        .await
    {
        Ok(true) => {}
        Ok(false) => {
            tracing::debug!(%repo, number = pr.number, "the merge queue never asked about the PR: no commit of its to carry the gate to");
            return;
        }
        Err(err) => {
            tracing::warn!(%repo, number = pr.number, error = %err, "could not read whether the merge queue asked about the PR; looking for its commits");
        }
    }
    let prefix = format!(
        "heads/{QUEUE_BRANCHES}{}/pr-{}-",
        pr.base.ref_name, pr.number
    );
    let queued = match github.list_matching_refs(scope, &prefix).await {
        Ok(queued) => queued,
        Err(err) => {
            tracing::warn!(%repo, number = pr.number, error = %err, "could not look for the merge queue's commits for the PR; a check there stands as it was");
            return;
        }
    };
    for group in queued
        .iter()
        .filter(|group| queued_pr(&group.name) == Some(pr.number))
    {
        let sha = &group.object.sha;
        if !judged_for(services, scope, pr.number, sha).await {
            tracing::warn!(%repo, number = pr.number, group_head = %sha, "a merge queue branch for the PR points at a commit the queue never asked Parley about; nothing carried there");
            continue;
        }
        let key = runs::claim_key(&repo, pr.number, sha);
        match gate::publish(github, scope, sha, &key, conclusion, output.clone()).await {
            Ok(_) => {
                tracing::info!(%repo, number = pr.number, group_head = %sha, ?conclusion, "the PR's gate carried to the merge queue's commit")
            }
            Err(err) => {
                tracing::warn!(%repo, number = pr.number, group_head = %sha, error = %err, "could not carry the PR's gate to the merge queue's commit; its check stands as it was")
            }
        }
    }
}

/// Whether Parley concluded "Parley review" on `sha` for PR `number` already, which it
/// does first when the queue asks (`merge_group`, sent by GitHub alone). Anyone who may
/// push can make a branch under the queue's prefix, pointing at any commit (another PR's
/// failing head, say): only a commit Parley judged for this PR is the queue's, so a
/// branch name never moves this PR's conclusion onto another's commit. The check must be
/// Parley's own: any App, or a workflow's token, may name a check "Parley review".
/// Trouble answers `false` (nothing carried, logged by the caller).
async fn judged_for(services: &Services, scope: &RepoScope, number: u64, sha: &str) -> bool {
    let github = services.github.as_ref();
    let (Ok(parley), Ok(checks)) = (
        services.identity.slug(github).await,
        github.list_check_runs(scope, sha, gate::CHECK_NAME).await,
    ) else {
        return false;
    };
    checks.iter().any(|check| {
        let by_parley = check.app.as_ref().and_then(|app| app.slug.as_deref()) == Some(&parley);
        let named = check.external_id.as_deref().filter(|id| {
            runs::pr_of_check(id) == Some(number) && runs::run_key_of_check(id) == Some(sha)
        });
        by_parley && named.is_some()
    })
}

fn regate_error(err: RegateError) -> JobError {
    match err {
        RegateError::GitHub(err) => err.into(),
        RegateError::Store(err) => JobError::Transient(err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::queued_pr;

    #[test]
    fn a_queue_branch_names_its_pr() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let named = |base: &str| format!("refs/heads/gh-readonly-queue/{base}/pr-42-{sha}");
        assert_eq!(queued_pr(&named("main")), Some(42));
        assert_eq!(
            queued_pr(&named("release/1.0")),
            Some(42),
            "a base with slashes"
        );
        assert_eq!(
            queued_pr(&format!("gh-readonly-queue/main/pr-7-{sha}")),
            Some(7)
        );
        assert_eq!(queued_pr("refs/heads/gh-readonly-queue/main/pr-7"), Some(7));
        for other in [
            format!("refs/heads/feature/pr-42-{sha}"),
            format!("refs/heads/gh-readonly-queue/main/pr-0-{sha}"),
            format!("refs/heads/gh-readonly-queue/main/pr-x-{sha}"),
            format!("refs/heads/gh-readonly-queue/pr-42-{sha}"),
            format!("refs/heads/gh-readonly-queue/main/42-{sha}"),
        ] {
            assert_eq!(queued_pr(&other), None, "{other}");
        }
    }
}
