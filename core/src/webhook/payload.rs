//! The slices of GitHub's webhook payloads that Parley reads.
//!
//! Hand-written rather than a generated crate (octocrab's models, github-webhook-types)
//! because we need a dozen fields from six events, and every extra required field is one
//! more way a real payload fails to parse. Optional where GitHub omits or nulls them.

use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub struct User {
    pub login: String,
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Repository {
    pub id: u64,
    pub name: String,
    pub full_name: Option<String>,
    pub owner: User,
}

#[derive(Debug, Deserialize)]
pub struct InstallationRef {
    pub id: u64,
}

/// Fields every event may carry.
#[derive(Debug, Deserialize)]
pub struct Envelope {
    pub action: Option<String>,
    pub sender: Option<User>,
    pub installation: Option<InstallationRef>,
}

#[derive(Debug, Deserialize)]
pub struct GitRef {
    pub sha: String,
    #[serde(rename = "ref")]
    pub name: String,
}

#[derive(Debug, Deserialize)]
pub struct PullRequest {
    pub number: u64,
    #[serde(default)]
    pub draft: bool,
    #[serde(default)]
    pub merged: Option<bool>,
    pub title: String,
    pub user: User,
    pub head: GitRef,
    pub base: GitRef,
}

#[derive(Debug, Deserialize)]
pub struct PullRequestEvent {
    pub pull_request: PullRequest,
    pub repository: Repository,
    pub before: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Issue {
    pub number: u64,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub body: Option<String>,
    /// Present (an object of links) only when the issue is a pull request.
    pub pull_request: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
pub struct IssueComment {
    pub id: u64,
    pub user: User,
    #[serde(default)]
    pub body: Option<String>,
    pub html_url: String,
    pub created_at: String,
}

#[derive(Debug, Deserialize)]
pub struct IssueCommentEvent {
    pub issue: Issue,
    pub comment: IssueComment,
    pub repository: Repository,
}

#[derive(Debug, Deserialize)]
pub struct PullRequestNumber {
    pub number: u64,
}

#[derive(Debug, Deserialize)]
pub struct ReviewComment {
    pub id: u64,
    pub user: User,
    #[serde(default)]
    pub body: Option<String>,
    pub html_url: String,
    pub created_at: String,
    pub in_reply_to_id: Option<u64>,
    pub path: String,
    pub line: Option<u64>,
    pub start_line: Option<u64>,
    pub side: Option<String>,
    pub diff_hunk: Option<String>,
    pub commit_id: Option<String>,
    pub pull_request_review_id: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub struct ReviewCommentEvent {
    pub comment: ReviewComment,
    pub pull_request: PullRequestNumber,
    pub repository: Repository,
}

#[derive(Debug, Deserialize)]
pub struct Review {
    pub id: u64,
    pub user: User,
    #[serde(default)]
    pub body: Option<String>,
    pub html_url: String,
    pub submitted_at: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct ReviewEvent {
    pub review: Review,
    pub pull_request: PullRequestNumber,
    pub repository: Repository,
}

#[derive(Debug, Deserialize)]
pub struct ThreadComment {
    pub id: u64,
}

#[derive(Debug, Deserialize)]
pub struct Thread {
    #[serde(default)]
    pub comments: Vec<ThreadComment>,
}

#[derive(Debug, Deserialize)]
pub struct ReviewThreadEvent {
    pub thread: Thread,
    pub pull_request: PullRequestNumber,
    pub repository: Repository,
}

#[derive(Debug, Deserialize)]
pub struct RepositoryName {
    pub full_name: String,
}

#[derive(Debug, Deserialize)]
pub struct InstallationDetail {
    pub id: u64,
    pub account: User,
}

#[derive(Debug, Deserialize)]
pub struct InstallationEvent {
    pub installation: InstallationDetail,
    #[serde(default)]
    pub repositories: Option<Vec<RepositoryName>>,
    #[serde(default)]
    pub repositories_added: Vec<RepositoryName>,
    #[serde(default)]
    pub repositories_removed: Vec<RepositoryName>,
}
