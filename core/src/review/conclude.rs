//! How a run ends on GitHub besides a published review: a skipped PR, the check concluded
//! from the open findings, a run superseded by a newer push. (A failure's note on the PR
//! is [`super::failure_note`].)

use super::merge::Candidate;
use super::{ReviewError, ReviewHandler, gate, let_through, pr_url, repo_url, runs};
use crate::config::{Incomplete, RepoConfig};
use crate::job::ReviewJob;
use crate::ports::github::{CheckConclusion, CheckRunOutput, PullRequest, RepoScope, Review};
use crate::ports::{Finding, ReviewRun, RunState};
use crate::services::Services;
use std::collections::HashSet;

impl ReviewHandler {
    /// An automatic review that is not wanted (draft, trigger off, skipped author) still
    /// ends with a completed "Parley review" check on the head, or a team that requires
    /// the check waits forever. It is `neutral` (nothing was reviewed), unless blocking
    /// findings of earlier reviews are still open on the PR: skipping a review must not
    /// lift a `failure` (a push with `synchronize` turned off, say). A closed PR and a
    /// manual request get no check: nobody merges the one, and the other never gates.
    pub(super) async fn conclude_skipped(
        &self,
        scope: &RepoScope,
        job: &ReviewJob,
        pr: &PullRequest,
        config: &RepoConfig,
        reason: &str,
        owed: bool,
    ) -> Result<(), ReviewError> {
        if pr.state != "open" || runs::is_manual(job.trigger) || pr.head.sha != job.head_sha {
            return Ok(());
        }
        conclude_not_run(&self.services, scope, job, pr, config, reason, None, owed).await
    }

    /// Conclude the head's check on what a published review found, then mark the run
    /// published with its review (`None`: a push with nothing new, which posts no review;
    /// see [`super::publish::quiet`]). In this order: a failure in between retries the
    /// conclusion, and a run is never published while its check still runs.
    pub(super) async fn conclude_published(
        &self,
        scope: &RepoScope,
        run: &mut ReviewRun,
        config: &RepoConfig,
        review: Option<&Review>,
        published: Published<'_>,
    ) -> Result<(), ReviewError> {
        let head_sha = runs::head_of(&run.head_sha).to_string();
        let_through::arrived_during(self.services.store.as_ref(), run).await;
        // Blocking findings of earlier reviews nobody resolved or won block this head
        // too: an incremental review sees only the new commits, so without them any push
        // that leaves an old finding alone would turn the gate green. A manual review
        // never concludes the gate, so it needs none of them.
        let earlier_open = if published.automatic {
            gate::open_blocking(
                published.on_pr,
                &config.gate,
                config.review.min_confidence,
                published.this_run,
            )
        } else {
            Vec::new()
        };
        let verdict = gate::Verdict::Reviewed {
            automatic: published.automatic,
            reported: published.reported,
            earlier_open,
            partial: published.partial,
            nothing_read: published.nothing_read,
            review_url: review.map(|r| r.html_url.as_str()),
            let_through_by: run.let_through_by.as_deref(),
            reviewed: published.reviewed,
            repo_url: published.repo_url,
            pr_url: published.pr_url,
            head_sha: &head_sha,
        };
        let (conclusion, output) = gate::conclude(&verdict, &config.gate);
        self.conclude_check(scope, run, &head_sha, (conclusion, output))
            .await?;
        run.review_id = review.map(|r| r.id);
        run.review_url = review.map(|r| r.html_url.clone());
        runs::finish(self.services.store.as_ref(), run, RunState::Published).await?;
        Ok(())
    }

    /// Conclude the run's check (creating it completed if it never was created) and
    /// remember its id on the run.
    async fn conclude_check(
        &self,
        scope: &RepoScope,
        run: &mut ReviewRun,
        head_sha: &str,
        (conclusion, output): (CheckConclusion, CheckRunOutput),
    ) -> Result<(), ReviewError> {
        let key = runs::claim_key(&run.repo, run.pr, &run.head_sha);
        let check = gate::Check {
            id: run.check_run_id,
            name: gate::check_name(&run.head_sha),
            head_sha,
            external_id: &key,
        };
        let id = let_through::complete_newest(
            self.services.github.as_ref(),
            scope,
            &check,
            conclusion,
            output,
            run.let_through_by.is_some(),
        )
        .await?;
        run.check_run_id = Some(id);
        Ok(())
    }

    pub(super) async fn supersede(
        &self,
        scope: &RepoScope,
        config: &RepoConfig,
        run: &mut ReviewRun,
        newer: &str,
    ) -> Result<(), ReviewError> {
        tracing::info!(repo = %run.repo, number = run.pr, head_sha = %run.head_sha, %newer, "review superseded before publishing");
        runs::finish(self.services.store.as_ref(), run, RunState::Superseded).await?;
        let (conclusion, output) =
            gate::conclude(&gate::Verdict::Superseded { by: newer }, &config.gate);
        gate::finish(
            self.services.github.as_ref(),
            scope,
            run.check_run_id,
            conclusion,
            output,
        )
        .await;
        Ok(())
    }
}

/// What a published review found, for concluding its check.
pub(super) struct Published<'a> {
    pub automatic: bool,
    /// Whether some pass or file went unreviewed: then nothing blocking is `neutral`.
    pub partial: bool,
    /// No changed file was read (see [`gate::Verdict::Reviewed`]).
    pub nothing_read: bool,
    /// The range and files reviewed, for a check that has no review to link to.
    pub reviewed: &'a str,
    /// The findings this run reported.
    pub reported: Vec<&'a Candidate>,
    /// Every finding stored for the PR.
    pub on_pr: &'a [Finding],
    /// Fingerprints of this run's findings, which the earlier ones that still block
    /// leave out.
    pub this_run: &'a HashSet<&'a str>,
    pub repo_url: &'a str,
    pub pr_url: &'a str,
}

/// The check of a run that failed: Parley's trouble, saying what failed and never the raw
/// error (provider messages carry internal hostnames and request ids). For the head's
/// automatic review, `failure` while blocking findings of earlier reviews are still open,
/// as when a review is skipped; they are read from the store, which may be what failed,
/// and then only the trouble is reported.
pub(super) async fn failed(
    services: &Services,
    job: &ReviewJob,
    pr: &PullRequest,
    config: &RepoConfig,
    run_key: &str,
    let_through_by: Option<&str>,
    err: &ReviewError,
) -> (CheckConclusion, CheckRunOutput) {
    let automatic = !runs::is_manual_key(run_key);
    let repo = job.repo.tenant().repo;
    let findings = if automatic {
        match services.store.findings_for_pr(&repo, job.number).await {
            Ok(findings) => findings,
            Err(store_err) => {
                tracing::warn!(%repo, number = job.number, error = %store_err, "could not read the PR's findings for a failed review's check");
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    let open = gate::still_blocking(&findings, config);
    let repo_url = repo_url(pr, &job.repo.full_name());
    let pr_url = pr_url(pr, &repo_url);
    let verdict = gate::Verdict::Trouble {
        reason: format!(
            "Parley could not finish the review: {}.",
            err.public_reason()
        ),
        automatic,
        open,
        repo_url: &repo_url,
        pr_url: &pr_url,
        let_through_by,
    };
    gate::conclude(&verdict, &config.gate)
}

/// Conclude the head's "Parley review" check for an automatic review that did not run:
/// `neutral` with `reason`, or `failure` while blocking findings of earlier reviews are
/// still open. `neutral_title` replaces the check's title when nothing blocks. `owed`: the
/// review should have run (the budget was spent), so `gate.incomplete: hold` holds it,
/// unless someone let the head through (remembered on its run, see [`let_through`]).
#[allow(clippy::too_many_arguments)] // two call sites, each part a different thing
pub(super) async fn conclude_not_run(
    services: &Services,
    scope: &RepoScope,
    job: &ReviewJob,
    pr: &PullRequest,
    config: &RepoConfig,
    reason: &str,
    neutral_title: Option<&str>,
    owed: bool,
) -> Result<(), ReviewError> {
    let repo = job.repo.tenant().repo;
    let findings = services.store.findings_for_pr(&repo, job.number).await?;
    let open = gate::still_blocking(&findings, config);
    let repo_url = repo_url(pr, &job.repo.full_name());
    let pr_url = pr_url(pr, &repo_url);
    // Only a held head can have been let through; others are not read for it.
    let held = owed && config.gate.incomplete == Incomplete::Hold;
    let let_through_by = match held {
        true => services
            .store
            .review_run(&repo, job.number, &pr.head.sha)
            .await?
            .and_then(|run| run.let_through_by),
        false => None,
    };
    let verdict = gate::Verdict::Skipped {
        reason,
        open,
        repo_url: &repo_url,
        pr_url: &pr_url,
        owed,
        let_through_by: let_through_by.as_deref(),
    };
    let (conclusion, mut output) = gate::conclude(&verdict, &config.gate);
    if let Some(title) = neutral_title.filter(|_| conclusion != CheckConclusion::Failure) {
        output.title = title.to_string();
    }
    let key = runs::claim_key(&repo, job.number, &pr.head.sha);
    let github = services.github.as_ref();
    gate::publish(github, scope, &pr.head.sha, &key, conclusion, output).await?;
    Ok(())
}
