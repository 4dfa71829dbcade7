//! Issues, and top-level comments on PRs and issues.

use super::null_as_default;
use super::people::User;
use serde::Deserialize;
use time::OffsetDateTime;

/// An issue, as `GET /repos/{o}/{r}/issues/{n}` gives it: a PR is one too, with a
/// `pull_request` object.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Issue {
    pub number: u64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub title: String,
    #[serde(default)]
    pub body: Option<String>,
    /// `open` or `closed`.
    #[serde(default)]
    pub state: String,
    #[serde(default, rename = "pull_request", deserialize_with = "present")]
    pub is_pull_request: bool,
}

/// An issue someone linked to a PR by hand (the sidebar's "Development"), which no
/// keyword in the PR's description names; it may be another repository's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueReference {
    /// `owner/name`, as GitHub spells it.
    pub repository: String,
    pub number: u64,
}

/// Whether a key is there with a value: only its presence tells an issue from a PR.
fn present<'de, D: serde::Deserializer<'de>>(de: D) -> Result<bool, D::Error> {
    let value: Option<serde::de::IgnoredAny> = serde::Deserialize::deserialize(de)?;
    Ok(value.is_some())
}

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
