//! `@parley review` and `@parley full review` (recognised by [`crate::commands`]):
//! reviewing is the review worker's job; this side queues the request with the comment
//! that asked, so the review can answer there. `@parley resume` queues the head's
//! automatic review instead.

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
    let request = ReviewRequest {
        comment_id: trigger.id,
        surface: trigger.surface,
        author: trigger.author.clone(),
        html_url: trigger.html_url.clone(),
    };
    let delivery_id = format!("{delivery_id}:review-request");
    let dedup = format!("review-request-{}-{}", snap.repo_ref.id, trigger.id);
    send(
        queue,
        snap,
        pr,
        trigger_kind,
        delivery_id,
        Some(request),
        dedup,
    )
    .await?;
    tracing::info!(repo = %snap.repo, pr = snap.number, comment = trigger.id, trigger = ?trigger_kind, "review requested from a comment; queued");
    Ok(())
}

/// Queue the head's automatic review, as a push would have, for `@parley resume`
/// ([`super::pause`]): what came while reviews were paused is reviewed (since the last
/// review) and the gate concluded on it. Nobody's request: it answers nowhere.
pub async fn resume_review(
    queue: &dyn JobQueue,
    snap: &PrSnapshot,
    pr: &PullRequest,
    trigger: &Trigger,
    delivery_id: &str,
) -> Result<(), ConversationError> {
    let delivery_id = format!("{delivery_id}:resume");
    let dedup = format!("resume-{}-{}", snap.repo_ref.id, trigger.id);
    let kind = ReviewTrigger::Synchronize;
    send(queue, snap, pr, kind, delivery_id, None, dedup).await?;
    tracing::info!(repo = %snap.repo, pr = snap.number, comment = trigger.id, head = %pr.head.sha, "reviews resumed; the head's automatic review queued");
    Ok(())
}

async fn send(
    queue: &dyn JobQueue,
    snap: &PrSnapshot,
    pr: &PullRequest,
    trigger_kind: ReviewTrigger,
    delivery_id: String,
    request: Option<ReviewRequest>,
    dedup: String,
) -> Result<(), ConversationError> {
    let job = Job::Review(ReviewJob {
        delivery_id,
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
        request,
        label: None,
        rerun_of: None,
        moved_from: None,
    });
    let message = job.message(dedup).map_err(|err| {
        ConversationError::Queue(crate::ports::QueueError::Config(format!(
            "could not encode the review job: {err}"
        )))
    })?;
    queue.send(message).await?;
    Ok(())
}
