//! Top-level comments on PRs and issues.

use super::null_as_default;
use super::people::User;
use serde::Deserialize;
use time::OffsetDateTime;

/// A top-level comment on a PR or issue.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IssueComment {
    pub id: u64,
    #[serde(default)]
    pub node_id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub body: String,
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default)]
    pub html_url: String,
    /// The API URL of the issue or PR it is on (`…/issues/<number>`).
    #[serde(default)]
    pub issue_url: String,
    #[serde(default)]
    pub author_association: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}
