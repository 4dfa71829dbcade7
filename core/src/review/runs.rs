//! One review per (repo, PR, head SHA): claiming it, remembering it, and never posting it
//! twice.
//!
//! SQS delivers at least once and a Lambda can die after posting. Three guards stack up:
//! the claim in the store (owned by the delivery, so the queue's retry of the same job
//! resumes instead of locking itself out), the run record (a published run is never
//! redone), and GitHub itself (a review whose hidden marker names this head means the
//! review was posted even if the store never heard of it).

use crate::job::{ReviewJob, ReviewTrigger, Surface};
use crate::markers::{self, ReplyMarker};
use crate::ports::github::{GitHub, GitHubError, PageLimit, RepoScope, Review};
use crate::ports::{Claim, ReviewRun, RunState, Store, StoreError};
use crate::review::summary::{ReviewMarker, short};
use std::time::Duration;
use time::OffsetDateTime;

/// Longer than a review can take (Lambda's limit is 15 minutes), so a live run is never
/// taken over, and short enough that a dead one frees its head soon.
pub const CLAIM_TTL: Duration = Duration::from_secs(20 * 60);

/// Marker kind on the "already reviewed" answer to a manual request.
pub const DISMISSED: &str = "dismissed";

pub fn claim_key(repo: &str, number: u64, head_sha: &str) -> String {
    format!("review#{repo}#{number}#{head_sha}")
}

/// Claim the run for this delivery. `false` when another delivery holds it.
pub async fn claim(store: &dyn Store, job: &ReviewJob, head_sha: &str) -> Result<bool, StoreError> {
    let key = claim_key(&job.repo.full_name(), job.number, head_sha);
    Ok(store.claim_as(&key, &job.delivery_id, CLAIM_TTL).await? == Claim::Won)
}

pub fn trigger_name(trigger: ReviewTrigger) -> &'static str {
    match trigger {
        ReviewTrigger::Opened => "opened",
        ReviewTrigger::Reopened => "reopened",
        ReviewTrigger::ReadyForReview => "ready_for_review",
        ReviewTrigger::Synchronize => "synchronize",
        ReviewTrigger::ManualIncremental => "manual",
        ReviewTrigger::ManualFull => "manual_full",
    }
}

pub fn is_manual(trigger: ReviewTrigger) -> bool {
    matches!(
        trigger,
        ReviewTrigger::ManualIncremental | ReviewTrigger::ManualFull
    )
}

/// The newest published run of this PR for another head: where an incremental review
/// starts.
pub async fn last_reviewed(
    store: &dyn Store,
    repo: &str,
    number: u64,
    head_sha: &str,
) -> Result<Option<ReviewRun>, StoreError> {
    let runs = store.review_runs(repo, number).await?;
    Ok(runs
        .into_iter()
        .rev()
        .find(|run| run.state == RunState::Published && run.head_sha != head_sha))
}

/// A review Parley already posted on GitHub for `head_sha`, found by its summary marker.
pub async fn review_on_github(
    github: &dyn GitHub,
    scope: &RepoScope,
    number: u64,
    head_sha: &str,
) -> Result<Option<Review>, GitHubError> {
    let reviews = github
        .list_reviews(scope, number, PageLimit::pages(5))
        .await?;
    Ok(reviews.items.into_iter().find(|review| {
        markers::find::<ReviewMarker>(&review.body, markers::kind::REVIEW)
            .is_some_and(|marker| marker.head_sha == head_sha)
    }))
}

/// Mark a run finished in `state`.
pub async fn finish(
    store: &dyn Store,
    run: &mut ReviewRun,
    state: RunState,
) -> Result<(), StoreError> {
    run.state = state;
    run.finished_at = Some(OffsetDateTime::now_utc());
    store.put_review_run(run).await
}

/// Answer a manual request for a head that was already reviewed: "already reviewed at
/// <sha>" with a link, and a hidden marker naming the request, so a redelivered request
/// finds the answer and does not post it again.
pub async fn answer_already_reviewed(
    github: &dyn GitHub,
    scope: &RepoScope,
    job: &ReviewJob,
    run: &ReviewRun,
) -> Result<(), GitHubError> {
    let Some(request) = &job.request else {
        return Ok(());
    };
    let answered = |body: &str| {
        markers::find::<ReplyMarker>(body, DISMISSED)
            .is_some_and(|m| m.reply_to == request.comment_id)
    };
    let link = run
        .review_url
        .as_deref()
        .map(|url| format!(" — [see the review]({url})"))
        .unwrap_or_default();
    let text = format!(
        "Already reviewed at `{}`{link}. Nothing has changed since; push new commits for a new review.",
        short(&run.head_sha)
    );
    let marker = ReplyMarker {
        kind: DISMISSED.to_string(),
        reply_to: request.comment_id,
        finding: None,
        resolution: None,
        at: OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
    };
    let body = markers::append(&text, DISMISSED, &marker);
    match request.surface {
        Surface::ReviewComment => {
            let existing = github
                .list_review_comments(scope, job.number, None, PageLimit::pages(10))
                .await?;
            if existing.items.iter().any(|c| answered(&c.body)) {
                return Ok(());
            }
            github
                .reply_to_review_comment(scope, job.number, request.comment_id, &body)
                .await?;
        }
        Surface::IssueComment | Surface::ReviewBody => {
            let existing = github
                .list_issue_comments(scope, job.number, None, PageLimit::pages(10))
                .await?;
            if existing.items.iter().any(|c| answered(&c.body)) {
                return Ok(());
            }
            github
                .create_issue_comment(scope, job.number, &body)
                .await?;
        }
    }
    Ok(())
}
