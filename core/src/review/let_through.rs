//! "Let it through" on a held **Parley review** check. With `gate.incomplete: hold` a head
//! not reviewed in full concludes `action_required` (see [`gate`]), which a required check
//! does not let through. Re-run completes such a head once the cause is gone, but some
//! causes do not go: a PR too large for `review.maxPatchTokens`, text a model cannot get
//! past. The held check carries a button for that; GitHub sends `check_run`
//! `requested_action` with the login of whoever pressed it, and this answers it.
//!
//! Letting a head through loosens the gate, so it is decided as lifting a blocking finding
//! is: by someone with `gate.resolveBy` on the repository who is not the PR's author (the
//! author alone must not get their own PR past the check). GitHub shows the button to
//! anyone who may write to the repository, so the permission of whoever GitHub says
//! pressed it is looked up. Someone who may not gets the gate judged again (a published
//! review) or a held check saying why (a failed one), and never holds again a head that
//! was let through. It lets through only what
//! was missing: open blocking findings still fail the gate, and the head's check says who
//! let it through. It is remembered with the head's run when that has ended (published or
//! failed), so every later conclusion of the head (the gate judged again after a thread is
//! resolved, the queue's retry of a failed review, a Re-run while the budget is still
//! spent) passes it where it would have held it; a head no review ran for (the budget was
//! spent) gets a failed run to remember it by. While a review
//! of the head runs, that review decides, and the button does nothing; a review left
//! running by a worker that died (its claim expired) counts as failed.
//!
//! What the button reads can be stale by the time it writes: the queue's retry of a failed
//! review may start in between. So the mark is written alone (a retry's own writes keep it,
//! see [`crate::ports::ReviewRuns::let_run_through`]), and a run that ends finds a mark
//! made while it ran ([`arrived_during`]): its conclusion honours it, and a run of a head
//! that was let through is published as the newest check ([`complete_newest`]) whenever
//! a newer one of the name stands on the head, since the let-through's check, newer than
//! the one the run started with, would otherwise stand over a blocking finding it reports.

use super::{ReviewError, ReviewHandler, gate, pr_url, regate, repo_url, resolution, runs};
use crate::config::{Incomplete, RepoConfig};
use crate::job::{ReviewJob, ReviewTrigger};
use crate::ports::github::{
    CheckConclusion, CheckRunOutput, GitHub, GitHubError, PullRequest, RepoScope,
};
use crate::ports::{Claim, ReviewRun, RunState, Store};
use std::time::Duration;
use time::OffsetDateTime;

/// How long the head's claim is held while a let-through is written: long enough for two
/// store calls, short enough that a worker dying here holds up no review for long.
const MARKING: Duration = Duration::from_secs(60);

impl ReviewHandler {
    pub(super) async fn let_through(&self, job: &ReviewJob) -> Result<(), ReviewError> {
        let installation = job.installation_id.ok_or(ReviewError::NoInstallation)?;
        let scope = RepoScope::for_repo(installation, &job.repo);
        let repo = job.repo.tenant().repo;
        let who = job.author.login.as_str();
        let github = self.services.github.as_ref();
        let pr = github.get_pull_request(&scope, job.number).await?;
        if pr.state != "open" || pr.head.sha != job.head_sha {
            tracing::info!(%repo, number = job.number, head = %job.head_sha, "let through on a closed PR or an older head: nothing to do");
            return Ok(());
        }
        let loaded = self.services.config.for_pull(&scope, &pr).await;
        let config = &loaded.settled()?.config;
        if config.gate.incomplete != Incomplete::Hold {
            tracing::info!(%repo, number = job.number, "let through, but the repository does not hold incomplete reviews: nothing to do");
            return Ok(());
        }
        let store = self.services.store.as_ref();
        let runs = store.review_runs(&repo, job.number).await?;
        let own = runs.iter().find(|run| run.head_sha == job.head_sha);
        // A review of the head running now (the queue's retry, behind a held check left
        // by the attempt before) decides: a check concluded here would be the newest, and
        // would stand over what that review concludes. (A running run is also rewritten
        // whole by its worker when it ends, which would drop the mark.) A run whose claim
        // has expired was left running by a worker that died: nothing will conclude it,
        // so it is let through as a failed one would be.
        if own.is_some_and(|run| run.state == RunState::Running) {
            let claim = runs::claim_key(&repo, job.number, &job.head_sha);
            if store.is_claimed(&claim).await? {
                tracing::info!(%repo, number = job.number, "let through while the head's review runs: that review decides");
                return Ok(());
            }
            tracing::info!(%repo, number = job.number, "the head's review was left running by a worker that died: let through as a failed one");
        }
        let published = own.filter(|run| runs::is_published_automatic(run));
        let refused = self.may_not_let_through(&scope, &pr, config, who).await?;
        if let Some(why_not) = &refused {
            tracing::info!(%repo, number = job.number, login = who, "let through refused: {why_not}");
        }
        // A published review: the gate is judged again from the PR's findings, which
        // says what the head's check says now (held only if it still is).
        if let Some(run) = published {
            let cause = if refused.is_some() {
                regate::RegateCause::LetThroughRefused
            } else {
                store.let_run_through(run, who).await?;
                crate::metrics::head_let_through();
                regate::RegateCause::LetThrough
            };
            let outcome = regate::regate(&self.services, &scope, job.number, cause).await;
            tracing::info!(%repo, number = job.number, login = who, ?outcome, "let through: the gate judged again");
            return Ok(());
        }
        // No review of the head stands (it failed, or none ran): earlier reviews' blocking
        // findings fail the head whatever anyone presses, and its check says so already.
        let findings = store.findings_for_pr(&repo, job.number).await?;
        if !gate::still_blocking(&findings, config).is_empty() {
            tracing::info!(%repo, number = job.number, "let through, but blocking findings are open: the gate stays as it is");
            return Ok(());
        }
        let failed = own.filter(|run| matches!(run.state, RunState::Failed | RunState::Running));
        match refused {
            // Held only while nobody let the head through: a refusal must not hold again
            // what someone entitled let through.
            Some(why_not) => match (own, failed) {
                (None, _) => self.refuse(&scope, &pr, job, &why_not).await,
                (_, Some(run)) if run.let_through_by.is_none() => {
                    self.refuse(&scope, &pr, job, &why_not).await
                }
                _ => Ok(()),
            },
            None => {
                let remembered = match (own, failed) {
                    (_, Some(run)) => store.let_run_through(run, who).await.map(|_| true)?,
                    (None, _) => self.remember_without_a_run(job, &pr, who).await?,
                    _ => true,
                };
                if !remembered {
                    tracing::info!(%repo, number = job.number, "let through just as a review of the head starts: that review decides");
                    return Ok(());
                }
                let output = CheckRunOutput {
                    title: format!("Let through by @{who} without a review"),
                    summary: format!(
                        "Parley did not review this commit in full, and @{who} let it through (`gate.incomplete: hold`). A review that runs for it later still fails on a blocking finding."
                    ),
                    text: None,
                };
                self.publish(&scope, &pr, job, CheckConclusion::Neutral, output)
                    .await?;
                crate::metrics::head_let_through();
                Ok(())
            }
        }
    }

    /// A head no review ran for (the installation's budget was spent) gets a run to
    /// remember the let-through by: `failed` (the review it was owed did not happen; a
    /// Re-run or the next review of the head runs it), so that a Re-run while the budget
    /// is still spent does not hold the head again. Written under the head's claim, which
    /// every review of the head takes before it writes its run: `false` when a review
    /// holds it (one is starting, and decides).
    async fn remember_without_a_run(
        &self,
        job: &ReviewJob,
        pr: &PullRequest,
        who: &str,
    ) -> Result<bool, ReviewError> {
        let store = self.services.store.as_ref();
        let repo = job.repo.tenant().repo;
        let claim = runs::claim_key(&repo, job.number, &job.head_sha);
        if store.claim_as(&claim, &job.delivery_id, MARKING).await? != Claim::Won {
            return Ok(false);
        }
        let marked = match store.review_run(&repo, job.number, &job.head_sha).await {
            Ok(Some(run)) => store.let_run_through(&run, who).await.map(|_| ()),
            Ok(None) => {
                let now = OffsetDateTime::now_utc();
                let run = ReviewRun {
                    repo: repo.clone(),
                    pr: job.number,
                    head_sha: job.head_sha.clone(),
                    base_sha: pr.base.sha.clone(),
                    trigger: runs::trigger_name(ReviewTrigger::LetThrough).to_string(),
                    state: RunState::Failed,
                    check_run_id: None,
                    review_id: None,
                    review_url: None,
                    started_at: now,
                    finished_at: Some(now),
                    let_through_by: Some(who.to_string()),
                    moved_from: None,
                };
                store.put_review_run(&run).await
            }
            Err(err) => Err(err),
        };
        // Given back whatever happened: a review of the head must not wait for it.
        let released = store.release(&claim).await;
        marked?;
        released?;
        Ok(true)
    }

    /// Why `who` may not let the head through, if they may not: the PR's author, or
    /// below `gate.resolveBy`.
    async fn may_not_let_through(
        &self,
        scope: &RepoScope,
        pr: &PullRequest,
        config: &RepoConfig,
        who: &str,
    ) -> Result<Option<String>, ReviewError> {
        let author = pr.user.as_ref().map(|user| user.login.as_str());
        if author.is_some_and(|author| author.eq_ignore_ascii_case(who)) {
            return Ok(Some(
                "the PR's author may not let their own PR through".into(),
            ));
        }
        let needs = resolution::permission(config.gate.resolve_by);
        let has = resolution::level(self.services.github.as_ref(), scope, who).await?;
        Ok((has < needs).then(|| {
            format!(
                "letting a head through needs `{}` on the repository (`gate.resolveBy`)",
                config.gate.resolve_by.name()
            )
        }))
    }

    /// A new held check on a head whose review failed, saying who asked and why it did
    /// not count, so that pressing the button is not met with silence.
    async fn refuse(
        &self,
        scope: &RepoScope,
        pr: &PullRequest,
        job: &ReviewJob,
        why_not: &str,
    ) -> Result<(), ReviewError> {
        let who = &job.author.login;
        let repo_url = repo_url(pr, &job.repo.full_name());
        let output = CheckRunOutput {
            title: "Held: not reviewed in full".to_string(),
            summary: format!(
                "@{who} asked to let this head through, but {why_not}. The [PR]({}) waits for a complete review: press Re-run once the cause is gone, or ask someone with `gate.resolveBy` who is not its author.",
                pr_url(pr, &repo_url)
            ),
            text: None,
        };
        self.publish(scope, pr, job, CheckConclusion::ActionRequired, output)
            .await
    }

    /// A new completed gate check on the head (see [`gate::publish`]).
    async fn publish(
        &self,
        scope: &RepoScope,
        pr: &PullRequest,
        job: &ReviewJob,
        conclusion: CheckConclusion,
        output: CheckRunOutput,
    ) -> Result<(), ReviewError> {
        let key = runs::claim_key(&job.repo.tenant().repo, job.number, &pr.head.sha);
        let github = self.services.github.as_ref();
        gate::publish(github, scope, &pr.head.sha, &key, conclusion, output).await?;
        Ok(())
    }
}

/// Take into `run` a let-through made while it was under way (a mark the copy it started
/// from does not have), so that the run concludes as let through. A store that cannot be
/// read leaves the run as it is: the check then says what the run found, which is no
/// worse than before the button was pressed.
pub(super) async fn arrived_during(store: &dyn Store, run: &mut ReviewRun) {
    if run.let_through_by.is_some() {
        return;
    }
    match store.review_run(&run.repo, run.pr, &run.head_sha).await {
        Ok(Some(ReviewRun {
            let_through_by: Some(who),
            ..
        })) => {
            tracing::info!(repo = %run.repo, number = run.pr, run = %run.head_sha, login = %who, "the head was let through while its review ran");
            run.let_through_by = Some(who);
        }
        Ok(_) => {}
        Err(err) => {
            tracing::warn!(repo = %run.repo, number = run.pr, error = %err, "could not read whether the head was let through meanwhile");
        }
    }
}

/// Conclude `check`; on a head someone let through (`let_through`), conclude it once more
/// as a new check run when a newer one of its name stands on the head (the let-through's:
/// GitHub's ids only grow), so that this run's conclusion is the newest, the one branch
/// protection reads. Asked of GitHub rather than inferred, so it holds however the run got
/// here (a let-through while it ran, a retry after the second write failed). When GitHub
/// cannot say, the run's conclusion is published anew: one completed check too many is
/// harmless, a let-through standing over a blocking finding is not.
pub(super) async fn complete_newest(
    github: &dyn GitHub,
    scope: &RepoScope,
    check: &gate::Check<'_>,
    conclusion: CheckConclusion,
    output: CheckRunOutput,
    let_through: bool,
) -> Result<u64, GitHubError> {
    let id = gate::complete(github, scope, check, conclusion, output.clone()).await?;
    if !let_through {
        return Ok(id);
    }
    let newer = match github
        .list_check_runs(scope, check.head_sha, check.name)
        .await
    {
        Ok(runs) => runs.iter().any(|run| run.id > id),
        Err(err) => {
            tracing::warn!(repo = %scope.full_name(), error = %err, "could not list the head's checks; concluding in a new one");
            true
        }
    };
    if !newer {
        return Ok(id);
    }
    let newest = gate::Check { id: None, ..*check };
    gate::complete(github, scope, &newest, conclusion, output).await
}
