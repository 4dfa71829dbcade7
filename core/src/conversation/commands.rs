//! Commands addressed to Parley in a comment: `@parley review`, `@parley full review` and
//! `@parley dismiss <finding id>`.
//!
//! A command is the whole rest of the line after the mention, so "@parley review" asks for
//! a review while "@parley review this loop for races?" is a question to answer.
//! Reviewing is the review worker's job; this side only recognises the request and queues
//! it with the comment that asked, so the review can answer there.

use super::error::ConversationError;
use super::snapshot::PrSnapshot;
use super::trigger::Trigger;
use crate::job::{Actor, Job, ReviewJob, ReviewRequest, ReviewTrigger};
use crate::mention::{Handles, mention_spans};
use crate::ports::github::PullRequest;
use crate::ports::{JobQueue, OutgoingMessage, QueueName};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `@parley review`: review what changed since the last review.
    Review,
    /// `@parley full review`: review the whole PR from scratch.
    FullReview,
    /// `@parley dismiss f_…` (or `resolve`): a maintainer lifts a finding by its id, the
    /// way out for findings listed only in a review summary, which have no thread.
    Dismiss { finding: String },
}

impl Command {
    /// The review a review command asks for; `None` for other commands.
    pub fn trigger(&self) -> Option<ReviewTrigger> {
        match self {
            Command::Review => Some(ReviewTrigger::ManualIncremental),
            Command::FullReview => Some(ReviewTrigger::ManualFull),
            Command::Dismiss { .. } => None,
        }
    }
}

/// A finding id as Parley writes them: `f_` and twelve hex digits.
fn finding_id(word: &str) -> Option<String> {
    let word = word.trim_matches(|c| c == '`' || c == '"' || c == '\'');
    let hex = word.strip_prefix("f_")?;
    (hex.len() >= 6 && hex.len() <= 32 && hex.chars().all(|c| c.is_ascii_hexdigit()))
        .then(|| word.to_string())
}

/// The command in `body`, if a mention of Parley is followed by one on its line.
pub fn parse(body: &str, handles: &Handles) -> Option<Command> {
    handles.names().iter().find_map(|name| {
        mention_spans(body, name).find_map(|span| {
            let rest = &body[span.end..];
            let rest = rest.strip_prefix("[bot]").unwrap_or(rest);
            let line = rest.lines().next().unwrap_or("");
            let words: Vec<String> = line
                .trim()
                .trim_end_matches(['.', '!'])
                .split_whitespace()
                .map(str::to_ascii_lowercase)
                .collect();
            match words.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                ["review"] => Some(Command::Review),
                ["full", "review"] => Some(Command::FullReview),
                ["dismiss" | "resolve", id] | ["dismiss" | "resolve", "finding", id] => {
                    finding_id(id).map(|finding| Command::Dismiss { finding })
                }
                _ => None,
            }
        })
    })
}

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
    });
    let body = serde_json::to_string(&job).map_err(|err| {
        ConversationError::Queue(crate::ports::QueueError::Config(format!(
            "could not encode the review job: {err}"
        )))
    })?;
    queue
        .send(OutgoingMessage {
            queue: QueueName::Review,
            group_id: job.group_id(),
            dedup_id: format!("review-request-{}-{}", snap.repo_ref.id, trigger.id),
            body,
        })
        .await?;
    tracing::info!(repo = %snap.repo, pr = snap.number, comment = trigger.id, trigger = ?trigger_kind, "review requested from a comment; queued");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handles() -> Handles {
        Handles::new("parley", &[])
    }

    #[test]
    fn recognises_review_commands() {
        let h = handles();
        assert_eq!(parse("@parley review", &h), Some(Command::Review));
        assert_eq!(parse("@Parley Review.", &h), Some(Command::Review));
        assert_eq!(
            parse("hi\n@parley full review\nthanks", &h),
            Some(Command::FullReview)
        );
        assert_eq!(parse("@parley[bot] review", &h), Some(Command::Review));
    }

    #[test]
    fn recognises_dismissals_by_finding_id() {
        let h = handles();
        let dismiss = |id: &str| Some(Command::Dismiss { finding: id.into() });
        assert_eq!(
            parse("@parley dismiss f_0a1b2c3d4e5f", &h),
            dismiss("f_0a1b2c3d4e5f")
        );
        assert_eq!(
            parse("@parley resolve `f_0a1b2c3d4e5f`.", &h),
            dismiss("f_0a1b2c3d4e5f")
        );
        assert_eq!(
            parse("@parley dismiss finding F_0A1B2C", &h),
            dismiss("f_0a1b2c")
        );
        assert_eq!(parse("@parley dismiss this finding", &h), None);
        assert_eq!(parse("@parley dismiss f_xyz", &h), None);
        assert_eq!(
            parse("@parley dismiss f_0a1b2c please and thanks", &h),
            None
        );
    }

    #[test]
    fn questions_are_not_commands() {
        let h = handles();
        assert_eq!(parse("@parley review this loop for races?", &h), None);
        assert_eq!(parse("@parley why is this a bug?", &h), None);
        assert_eq!(parse("please review @parley", &h), None);
        assert_eq!(parse("@parleybot review", &h), None);
    }
}
