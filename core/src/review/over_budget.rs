//! A review asked for once the installation's monthly LLM budget is spent (see
//! [`crate::budget`]): no pass runs. An automatic review still concludes the "Parley
//! review" check, `neutral` and titled "Budget exhausted", or a team that requires the
//! check would wait forever (`action_required` where the team chose to wait for a review,
//! `gate.incomplete: hold`); like any review that did not run, it keeps a `failure` while
//! blocking findings of earlier reviews are still open. The PR gets one note a month
//! saying why, guarded by a claim so a redelivery or the next push does not repeat it.
//!
//! Public text names no amounts: what an organisation spends is not for every reader of a
//! public repository. The log line has them.

use super::{ReviewError, runs};
use crate::budget::Standing;
use crate::config::RepoConfig;
use crate::job::ReviewJob;
use crate::markers::{self, ReplyMarker};
use crate::ports::github::{PullRequest, RepoScope};
use crate::ports::{Claim, Store};
use crate::services::Services;
use std::time::Duration;

/// The check's title when nothing blocks.
pub const CHECK_TITLE: &str = "Budget exhausted";

/// Why the review did not run, for the check's summary ("Parley did not review this
/// commit: …").
const REASON: &str = "this installation's monthly LLM budget is used up";

/// Longer than a month, so the claim for this month's note outlives the month.
const NOTE_TTL: Duration = Duration::from_secs(40 * 24 * 3600);

/// The claim behind the PR's one note about the budget in `month` (`YYYY-MM`).
pub fn note_key(repo: &str, pr: u64, month: &str) -> String {
    format!("budget-note#review#{repo}#{pr}#{month}")
}

/// Conclude the check (automatic reviews of the current head) and post the month's note.
pub async fn conclude(
    services: &Services,
    scope: &RepoScope,
    job: &ReviewJob,
    pr: &PullRequest,
    config: &RepoConfig,
    standing: &Standing,
) -> Result<(), ReviewError> {
    let repo = job.repo.tenant().repo;
    tracing::info!(%repo, number = job.number, installation = standing.installation, spent_usd = standing.spent_usd(), limit_usd = standing.limit.map(|(usd, _)| usd), "review not run: monthly LLM budget exhausted");
    if !runs::is_manual(job.trigger) && pr.head.sha == job.head_sha {
        let title = Some(CHECK_TITLE);
        super::conclude::conclude_not_run(services, scope, job, pr, config, REASON, title, true)
            .await?;
    }
    note_once(services, scope, job, standing).await
}

/// The PR's note for this month, unless it was posted already. A failed post gives the
/// claim back and fails the job, so the queue's retry posts it.
async fn note_once(
    services: &Services,
    scope: &RepoScope,
    job: &ReviewJob,
    standing: &Standing,
) -> Result<(), ReviewError> {
    let store: &dyn Store = services.store.as_ref();
    let repo = job.repo.tenant().repo;
    let key = note_key(&repo, job.number, &standing.month);
    if store.claim(&key, NOTE_TTL).await? == Claim::AlreadyClaimed {
        return Ok(());
    }
    let asked = job
        .request
        .as_ref()
        .map(|r| format!("@{} ", r.author.login))
        .unwrap_or_default();
    let text = format!(
        "{asked}Parley did not review this pull request: the monthly LLM budget of this \
         GitHub App installation is used up. Reviews and answers resume next month, or as \
         soon as an operator raises the budget."
    );
    let marker = ReplyMarker::new(
        markers::kind::NOTE,
        job.request.as_ref().map_or(0, |r| r.comment_id),
    );
    let body = markers::append(&text, markers::kind::NOTE, &marker);
    if let Err(err) = services
        .github
        .create_issue_comment(scope, job.number, &body)
        .await
    {
        if let Err(release) = store.release(&key).await {
            tracing::warn!(key = %key, error = %release, "could not release the budget note's claim; it expires on its own");
        }
        return Err(err.into());
    }
    Ok(())
}
