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

use super::regate::{self, RegateCause, RegateError};
use super::{gate, pr_url, repo_url, runs, summary};
use crate::ports::JobError;
use crate::ports::github::RepoScope;
use crate::services::Services;

/// A merge queue's commit for one PR (see [`crate::job::BookkeepingEvent::MergeGroup`]).
pub struct Group<'a> {
    pub number: u64,
    /// The PR's head the commit merges.
    pub pr_head: &'a str,
    /// The commit the queue asks the checks of.
    pub group_head: &'a str,
}

/// The PR, and its head, a merge queue's branch tests: GitHub names it
/// `gh-readonly-queue/{base}/pr-{number}-{head sha}` (under `refs/heads/` in the event).
/// The base may hold slashes; the last part names the PR. `None` for any other branch.
pub fn queued_pr(head_ref: &str) -> Option<(u64, &str)> {
    let queue = head_ref.strip_prefix("refs/heads/").unwrap_or(head_ref);
    let (_, last) = queue.strip_prefix("gh-readonly-queue/")?.rsplit_once('/')?;
    let (number, sha) = last.strip_prefix("pr-")?.split_once('-')?;
    let number = number.parse().ok().filter(|n| *n > 0)?;
    let is_sha = sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit());
    is_sha.then_some((number, sha))
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
    let pr = github.get_pull_request(scope, group.number).await?;
    let loaded = services.config.for_pull(scope, &pr).await;
    let config = &loaded.config;
    let cause = RegateCause::MergeGroup;
    let judged = regate::judged(services, scope, &pr, group.pr_head, config, cause).await;
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
                summary::short(group.pr_head)
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
    tracing::info!(%repo, number = group.number, pr_head = %group.pr_head, group_head = %group.group_head, ?conclusion, "merge queue's commit judged by the PR's gate");
    Ok(())
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
    fn a_queue_branch_names_its_pr_and_head() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let named = |base: &str| format!("refs/heads/gh-readonly-queue/{base}/pr-42-{sha}");
        assert_eq!(queued_pr(&named("main")), Some((42, sha)));
        assert_eq!(
            queued_pr(&named("release/1.0")),
            Some((42, sha)),
            "a base with slashes"
        );
        assert_eq!(
            queued_pr(&format!("gh-readonly-queue/main/pr-7-{sha}")),
            Some((7, sha))
        );
        for other in [
            format!("refs/heads/feature/pr-42-{sha}"),
            format!("refs/heads/gh-readonly-queue/main/pr-0-{sha}"),
            format!("refs/heads/gh-readonly-queue/main/pr-x-{sha}"),
            "refs/heads/gh-readonly-queue/main/pr-42-abc".to_string(),
            format!("refs/heads/gh-readonly-queue/pr-42-{sha}"),
        ] {
            assert_eq!(queued_pr(&other), None, "{other}");
        }
    }
}
