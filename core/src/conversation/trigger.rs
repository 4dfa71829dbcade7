//! The comment Parley is asked to answer, whichever way it arrived: a webhook job, or a
//! listing read by the pending-work sweep. Both go through the same gates.

use crate::job::{Actor, ConversationJob, Surface};
use crate::ports::github::{DiffSide, IssueComment, Review, ReviewComment};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

#[derive(Debug, Clone, PartialEq)]
pub struct Trigger {
    /// Comment id (review id for a review body).
    pub id: u64,
    pub surface: Surface,
    pub author: Actor,
    pub body: String,
    pub html_url: String,
    pub created_at: Option<OffsetDateTime>,
    /// For inline replies: the comment this one answers.
    pub in_reply_to_id: Option<u64>,
    /// For inline comments: where in the diff.
    pub path: Option<String>,
    pub line: Option<u64>,
    /// The commented line in the head's file: `None` on the diff's left side (a removed
    /// line, numbered in the old file) and on an outdated comment (numbered in the
    /// commit it was made on), whose numbers would point the code reader at other code.
    pub head_line: Option<u64>,
    pub diff_hunk: Option<String>,
}

impl Trigger {
    pub fn from_job(job: &ConversationJob) -> Self {
        let position = job.position.as_ref();
        Trigger {
            id: job.comment.id,
            surface: job.surface,
            author: job.comment.author.clone(),
            body: job.comment.body.clone(),
            html_url: job.comment.html_url.clone(),
            created_at: OffsetDateTime::parse(&job.comment.created_at, &Rfc3339).ok(),
            in_reply_to_id: job.in_reply_to_id,
            path: position.map(|p| p.path.clone()),
            line: position.and_then(|p| p.line),
            head_line: position
                .filter(|p| {
                    !p.side
                        .as_deref()
                        .is_some_and(|s| s.eq_ignore_ascii_case("left"))
                })
                .and_then(|p| p.line),
            diff_hunk: position.and_then(|p| p.diff_hunk.clone()),
        }
    }

    /// `None` for a comment whose account was deleted: nobody to answer.
    pub fn from_review_comment(comment: &ReviewComment) -> Option<Self> {
        Some(Trigger {
            id: comment.id,
            surface: Surface::ReviewComment,
            author: comment.user.as_ref()?.to_actor(),
            body: comment.body.clone(),
            html_url: comment.html_url.clone(),
            created_at: Some(comment.created_at),
            in_reply_to_id: comment.in_reply_to_id,
            path: Some(comment.path.clone()),
            line: comment.line.or(comment.original_line).map(u64::from),
            head_line: head_line(comment),
            diff_hunk: Some(comment.diff_hunk.clone()).filter(|h| !h.is_empty()),
        })
    }

    pub fn from_issue_comment(comment: &IssueComment) -> Option<Self> {
        Some(Trigger {
            id: comment.id,
            surface: Surface::IssueComment,
            author: comment.user.as_ref()?.to_actor(),
            body: comment.body.clone(),
            html_url: comment.html_url.clone(),
            created_at: Some(comment.created_at),
            in_reply_to_id: None,
            path: None,
            line: None,
            head_line: None,
            diff_hunk: None,
        })
    }

    /// A review's body, answered like a top-level comment. `None` for a deleted account
    /// or a review not yet submitted (a pending review is its author's draft).
    pub fn from_review(review: &Review) -> Option<Self> {
        Some(Trigger {
            id: review.id,
            surface: Surface::ReviewBody,
            author: review.user.as_ref()?.to_actor(),
            body: review.body.clone(),
            html_url: review.html_url.clone(),
            created_at: Some(review.submitted_at?),
            in_reply_to_id: None,
            path: None,
            line: None,
            head_line: None,
            diff_hunk: None,
        })
    }

    /// Inline surfaces are answered in their thread; the others with a top-level comment.
    pub fn is_inline(&self) -> bool {
        self.surface == Surface::ReviewComment
    }
}

/// Where `comment` sits in the head's file (see [`Trigger::head_line`]).
pub fn head_line(comment: &ReviewComment) -> Option<u64> {
    (comment.side != Some(DiffSide::Left))
        .then_some(comment.line)
        .flatten()
        .map(u64::from)
}
