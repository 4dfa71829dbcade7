//! Judging the merge gate again when a finding changes state after its review.
//!
//! The gate counts the PR's open blocking findings, not only the ones the head's review
//! found ([`gate::open_blocking`]), so a `failure` lasts until people act on the findings:
//! fix the code and resolve the thread, or argue the finding out with Parley. When they do
//! (a thread resolved or unresolved, a dispute conceded), the head's "Parley review" check
//! would still show the old conclusion until the next push. So would it when a manual
//! review adds a blocking finding, or a full review of the head completes one that was
//! partial, and when "Re-run" is pressed ([`RegateCause`]). This module concludes it
//! again: a new completed check of the same name, because GitHub never reopens a
//! completed check and branch protection reads the newest one.
//!
//! What is concluded on the head is concluded too on the commits GitHub's merge queue
//! is testing the PR on ([`merge_queue::carry`]), which the queue merges on.
//!
//! Only a head whose automatic review has published is judged here: before that, the
//! review in progress (or the one still to come) concludes the gate with the findings as
//! they are then. Fail open for this extra step: any trouble leaves the previous check
//! standing and is only logged (the next push judges again), and trouble never produces a
//! `failure` — only open findings do.

use crate::config::RepoConfig;
use crate::ports::StoreError;
use crate::ports::github::{CheckConclusion, CheckRunOutput, GitHubError, PullRequest, RepoScope};
use crate::review::gate;
pub use crate::review::gate::RegateCause;
use crate::review::{merge_queue, pr_url, repo_url, runs};
use crate::services::Services;

/// What a re-evaluation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Regated {
    /// A new "Parley review" check was created on the head with this conclusion.
    Concluded(CheckConclusion),
    /// Nothing to judge (why): the head's automatic review has not published, or the PR
    /// is closed. The next review concludes the gate.
    Skipped(String),
    /// Parley had trouble (why); the previous check stands.
    Failed(String),
}

#[derive(Debug, thiserror::Error)]
pub enum RegateError {
    #[error("GitHub: {0}")]
    GitHub(#[from] GitHubError),
    #[error("store: {0}")]
    Store(#[from] StoreError),
}

/// Judge the gate of PR `number`'s current head again from the PR's open findings, and
/// publish the result as a new "Parley review" check when the head's automatic review has
/// published. Never fails its caller: trouble is logged and reported as
/// [`Regated::Failed`], leaving the previous check as it was.
pub async fn regate(
    services: &Services,
    scope: &RepoScope,
    number: u64,
    cause: RegateCause,
) -> Regated {
    let repo = scope.full_name();
    match try_regate(services, scope, number, cause).await {
        Ok(Regated::Concluded(conclusion)) => {
            tracing::info!(%repo, number, ?conclusion, "merge gate judged again");
            Regated::Concluded(conclusion)
        }
        Ok(other) => {
            tracing::info!(%repo, number, outcome = ?other, "merge gate not judged again");
            other
        }
        Err(err) => {
            tracing::warn!(%repo, number, error = %err, "could not judge the merge gate again; the previous check stands until the next review");
            Regated::Failed(err.to_string())
        }
    }
}

/// [`regate`] after a finding changed state: a thread resolved or reopened, a dispute
/// settled, a finding dismissed.
pub async fn finding_changed(services: &Services, scope: &RepoScope, number: u64) -> Regated {
    regate(services, scope, number, RegateCause::FindingChanged).await
}

/// What a published manual review did that may change what the head's gate says.
#[derive(Debug, Clone, Copy)]
pub struct ManualReview {
    /// A `@parley full review` (the whole PR), not an incremental one.
    pub full: bool,
    pub partial: bool,
    /// It reported a finding whose severity is in `gate.blockOn`.
    pub blocking: bool,
    /// It closed or reopened earlier findings.
    pub changed: bool,
}

/// After a manual review published, judge the head's gate again when what it published
/// changes it: findings it closed or reopened; a blocking finding it reported (the gate
/// counts every open finding of the PR, so without this it would block only from the next
/// push); or, a full review that ran complete, a head whose automatic review was partial
/// now reviewed in full ([`runs::head_partial`]). None of these loosens the gate on anyone's
/// say: findings close only by the rules every review follows, and a complete full review
/// of the head is what its automatic review would have been. A complete full review of a
/// head that was complete already changes nothing, and no check is added.
pub async fn after_manual_review(
    services: &Services,
    scope: &RepoScope,
    number: u64,
    head_sha: &str,
    review: ManualReview,
) {
    let completes = review.full
        && !review.partial
        && !review.blocking
        && !review.changed
        && automatic_review_partial(services, scope, number, head_sha).await;
    if review.blocking || review.changed || completes {
        regate(services, scope, number, RegateCause::ManualReview).await;
    }
}

/// Whether the head's published automatic review does not say it was complete (partial,
/// or not known). Trouble answers `false`: the gate's check stands as it was.
async fn automatic_review_partial(
    services: &Services,
    scope: &RepoScope,
    number: u64,
    head_sha: &str,
) -> bool {
    let github = services.github.as_ref();
    let repo = scope.tenant().repo;
    let partial = async {
        let Some(run) = services.store.review_run(&repo, number, head_sha).await? else {
            return Ok(None);
        };
        if !runs::is_published_automatic(&run) {
            return Ok(None);
        }
        let parley = services.identity.handles(github, false).await?;
        Ok::<_, RegateError>(Some(
            runs::published_partial(github, scope, number, &run, &parley).await?,
        ))
    };
    match partial.await {
        Ok(Some(partial)) => partial != Some(false),
        Ok(None) => false,
        Err(err) => {
            tracing::warn!(repo = %scope.full_name(), number, error = %err, "could not tell whether the head's automatic review was partial; its check stands");
            false
        }
    }
}

async fn try_regate(
    services: &Services,
    scope: &RepoScope,
    number: u64,
    cause: RegateCause,
) -> Result<Regated, RegateError> {
    let github = services.github.as_ref();
    let repo = scope.tenant().repo;

    let pr = github.get_pull_request(scope, number).await?;
    if pr.state != "open" {
        return Ok(Regated::Skipped(format!("the PR is {}", pr.state)));
    }
    let head_sha = pr.head.sha.clone();
    let loaded = services.config.for_pull(scope, &pr).await;
    loaded.settled()?;
    let judged = judged(services, scope, &pr, &head_sha, &loaded.config, cause);
    let Some((conclusion, output)) = judged.await? else {
        return Ok(Regated::Skipped(format!(
            "no published automatic review of the head {}",
            runs::head_of(&head_sha)
        )));
    };
    let key = runs::claim_key(&repo, number, &head_sha);
    gate::publish(github, scope, &head_sha, &key, conclusion, output.clone()).await?;
    merge_queue::carry(services, scope, &pr, conclusion, &output).await;
    Ok(Regated::Concluded(conclusion))
}

/// The gate of `pr` at `head_sha` from the PR's findings and the head's published
/// automatic review: its open blocking findings, whether that review was partial, who let
/// the head through. `None` when no automatic review of the head has published.
pub(super) async fn judged(
    services: &Services,
    scope: &RepoScope,
    pr: &PullRequest,
    head_sha: &str,
    config: &RepoConfig,
    cause: RegateCause,
) -> Result<Option<(CheckConclusion, CheckRunOutput)>, RegateError> {
    let github = services.github.as_ref();
    let repo = scope.tenant().repo;
    let number = pr.number;
    let runs = services.store.review_runs(&repo, number).await?;
    let run = runs.iter().find(|run| run.head_sha == head_sha);
    let Some(run) = run.filter(|run| runs::is_published_automatic(run)) else {
        return Ok(None);
    };
    let findings = services.store.findings_for_pr(&repo, number).await?;
    let open = gate::still_blocking(&findings, config);
    // Whether the head was reviewed only in part matters only when nothing blocks. Not
    // known means `neutral`, never `success`.
    let partial = if open.is_empty() {
        let parley = services.identity.handles(github, false).await?;
        runs::head_partial(github, scope, number, run, &runs, &parley).await?
    } else {
        None
    };
    let repo_url = repo_url(pr, &scope.full_name());
    let pr_url = pr_url(pr, &repo_url);
    let verdict = gate::Verdict::Regated {
        cause,
        open,
        partial,
        let_through_by: run.let_through_by.as_deref(),
        review_url: run.review_url.as_deref().unwrap_or(&pr_url),
        repo_url: &repo_url,
        pr_url: &pr_url,
    };
    Ok(Some(gate::conclude(&verdict, &config.gate)))
}
