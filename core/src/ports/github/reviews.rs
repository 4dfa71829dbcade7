//! Reviews, inline review comments and review threads.

use super::null_as_default;
use super::people::User;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// Which side of a diff a line number refers to: `Right` is the new file, `Left` the old.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum DiffSide {
    Left,
    Right,
}

/// An inline comment on a PR's diff, or a reply in such a thread.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ReviewComment {
    pub id: u64,
    #[serde(default)]
    pub node_id: String,
    #[serde(default)]
    pub pull_request_review_id: Option<u64>,
    /// Set on replies: the comment this one answers (GitHub points replies at the root).
    #[serde(default)]
    pub in_reply_to_id: Option<u64>,
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub diff_hunk: String,
    /// Line in the current diff; `None` when the comment is outdated.
    #[serde(default)]
    pub line: Option<u32>,
    #[serde(default)]
    pub original_line: Option<u32>,
    #[serde(default)]
    pub start_line: Option<u32>,
    #[serde(default)]
    pub original_start_line: Option<u32>,
    #[serde(default)]
    pub side: Option<DiffSide>,
    #[serde(default)]
    pub start_side: Option<DiffSide>,
    #[serde(default)]
    pub commit_id: String,
    #[serde(default)]
    pub original_commit_id: String,
    /// `None` for comments by deleted accounts.
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub body: String,
    #[serde(default)]
    pub html_url: String,
    /// The API URL of the PR it is on (`…/pulls/<number>`).
    #[serde(default)]
    pub pull_request_url: String,
    #[serde(default)]
    pub author_association: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// A submitted (or pending) review.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Review {
    pub id: u64,
    #[serde(default)]
    pub node_id: String,
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub body: String,
    /// `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`, `DISMISSED` or `PENDING`.
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub html_url: String,
    #[serde(default)]
    pub commit_id: Option<String>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub submitted_at: Option<OffsetDateTime>,
}

/// A review to create in one call: summary body plus inline comments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewReview {
    /// The head SHA the review was computed for. Set it: GitHub then rejects the review if
    /// the lines no longer exist instead of placing comments on a newer commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit_id: Option<String>,
    pub body: String,
    pub event: ReviewEvent,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub comments: Vec<NewReviewComment>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReviewEvent {
    Comment,
    Approve,
    RequestChanges,
}

/// An inline comment addressed by file line (not the deprecated diff `position`).
/// A multi-line comment sets `start_line` (and `start_side`) below `line`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewReviewComment {
    pub path: String,
    pub body: String,
    pub line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side: Option<DiffSide>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_side: Option<DiffSide>,
}

/// A review thread as GraphQL sees it; its `id` is what `resolveReviewThread` takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewThread {
    pub id: String,
    pub is_resolved: bool,
}
