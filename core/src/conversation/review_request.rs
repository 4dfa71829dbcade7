//! `@parley review` and `@parley full review` (recognised by [`crate::commands`]):
//! reviewing is the review worker's job; this side queues the request with the comment
//! that asked, so the review can answer there.

use super::error::ConversationError;
use super::snapshot::PrSnapshot;
use super::trigger::Trigger;
use crate::job::{Actor, Job, ReviewJob, ReviewRequest, ReviewTrigger};
use crate::ports::JobQueue;
use crate::ports::github::PullRequest;

/// Queue the review the comment asked for. The dedup id derives from the comment, so a
/// redelivered request queues at most one review.
pub async fn request_review(
    queue: &dyn JobQueue,
    snap: &PrSnapshot,
    pr: &PullRequest,
    trigger: &Trigger,
    trigger_kind: ReviewTrigger,
    delivery_id: &str,
) -> Result<(), ConversationError> {
    let job = Job::Review(ReviewJob {
        delivery_id: format!("{delivery_id}:review-request"),
        installation_id: Some(snap.scope.installation_id),
        repo: snap.repo_ref.clone(),
        number: snap.number,
        trigger: trigger_kind,
        head_sha: pr.head.sha.clone(),
        base_sha: pr.base.sha.clone(),
        base_ref: pr.base.ref_name.clone(),
        before_sha: None,
        author: pr.user.as_ref().map_or_else(
            || Actor {
                login: "ghost".to_string(),
                kind: "User".to_string(),
            },
            |u| u.to_actor(),
        ),
        title: pr.title.clone(),
        request: Some(ReviewRequest {
            comment_id: trigger.id,
            surface: trigger.surface,
            author: trigger.author.clone(),
            html_url: trigger.html_url.clone(),
        }),
        label: None,
        rerun_of: None,
        moved_from: None,
    });
    let message = job
        .message(format!(
            "review-request-{}-{}",
            snap.repo_ref.id, trigger.id
        ))
        .map_err(|err| {
            ConversationError::Queue(crate::ports::QueueError::Config(format!(
                "could not encode the review job: {err}"
            )))
        })?;
    queue.send(message).await?;
    tracing::info!(repo = %snap.repo, pr = snap.number, comment = trigger.id, trigger = ?trigger_kind, "review requested from a comment; queued");
    Ok(())
}
