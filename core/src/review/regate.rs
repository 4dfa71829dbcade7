//! Judging the merge gate again when a finding changes state after its review.
//!
//! The gate counts the PR's open blocking findings, not only the ones the head's review
//! found ([`gate::open_blocking`]), so a `failure` lasts until people act on the findings:
//! fix the code and resolve the thread, or argue the finding out with Parley. When they do
//! (a thread resolved or unresolved, a dispute conceded), the head's "Parley review" check
//! would still show the old conclusion until the next push. This module concludes it
//! again: a new completed check of the same name, because GitHub never reopens a
//! completed check and branch protection reads the newest one.
//!
//! Only a head whose automatic review has published is judged here: before that, the
//! review in progress (or the one still to come) concludes the gate with the findings as
//! they are then. Fail open for this extra step: any trouble leaves the previous check
//! standing and is only logged (the next push judges again), and trouble never produces a
//! `failure` — only open findings do.

use crate::ports::github::{CheckConclusion, GitHubError, RepoScope};
use crate::ports::{RunState, StoreError};
use crate::review::gate;
use crate::review::{pr_url, repo_url, runs};
use crate::services::Services;
use std::collections::HashSet;

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
enum RegateError {
    #[error("GitHub: {0}")]
    GitHub(#[from] GitHubError),
    #[error("store: {0}")]
    Store(#[from] StoreError),
}

/// Judge the gate of PR `number`'s current head again from the PR's open findings, and
/// publish the result as a new "Parley review" check when the head's automatic review has
/// published. Never fails its caller: trouble is logged and reported as
/// [`Regated::Failed`], leaving the previous check as it was.
pub async fn regate(services: &Services, scope: &RepoScope, number: u64) -> Regated {
    let repo = scope.full_name();
    match try_regate(services, scope, number).await {
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

async fn try_regate(
    services: &Services,
    scope: &RepoScope,
    number: u64,
) -> Result<Regated, RegateError> {
    let github = services.github.as_ref();
    let store = services.store.as_ref();
    let repo = scope.tenant().repo;

    let pr = github.get_pull_request(scope, number).await?;
    if pr.state != "open" {
        return Ok(Regated::Skipped(format!("the PR is {}", pr.state)));
    }
    let head_sha = pr.head.sha.clone();
    // The head's own key is the automatic run's (manual runs have keys of their own). Runs
    // stored before manual keys existed may still be manual under the head's key: the
    // trigger tells.
    let run = store.review_run(&repo, number, &head_sha).await?;
    let Some(run) = run.filter(|run| {
        run.state == RunState::Published
            && !runs::is_manual_key(&run.head_sha)
            && !runs::is_manual_trigger_name(&run.trigger)
    }) else {
        return Ok(Regated::Skipped(format!(
            "no published automatic review of the head {}",
            runs::head_of(&head_sha)
        )));
    };

    let loaded = services.config.for_pull(scope, &pr).await;
    let config = &loaded.config;
    let findings = store.findings_for_pr(&repo, number).await?;
    let open = gate::open_blocking(
        &findings,
        &config.gate,
        config.review.min_confidence,
        &HashSet::new(),
    );
    // Whether the review was partial matters only when nothing blocks. Not known means
    // `neutral`, never `success`.
    let partial = if open.is_empty() {
        let parley = services.identity.handles(github, false).await?;
        runs::published_partial(github, scope, number, &run, &parley).await?
    } else {
        None
    };
    let repo_url = repo_url(&pr, &scope.full_name());
    let pr_url = pr_url(&pr, &repo_url);
    let verdict = gate::Verdict::Regated {
        open,
        partial,
        review_url: run.review_url.as_deref().unwrap_or(&pr_url),
        repo_url: &repo_url,
        pr_url: &pr_url,
    };
    let (conclusion, output) = gate::conclude(&verdict, &config.gate);
    let key = runs::claim_key(&repo, number, &head_sha);
    gate::publish(github, scope, &head_sha, &key, conclusion, output).await?;
    Ok(Regated::Concluded(conclusion))
}
