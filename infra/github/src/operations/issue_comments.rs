//! Top-level comments on PRs and issues.

use super::write_body;
use crate::client::GitHubClient;
use crate::retry::Replay;
use parley_core::ports::github::{GitHubError, IssueComment, RepoScope};
use reqwest::Method;

/// Creates a comment: not replayed once GitHub may have it.
pub(crate) async fn create(
    client: &GitHubClient,
    repo: &RepoScope,
    number: u64,
    body: &str,
) -> Result<IssueComment, GitHubError> {
    let number = number.to_string();
    write_body(
        client,
        repo,
        (Method::POST, &["issues", &number, "comments"]),
        body,
        Replay::NotAfterSend,
    )
    .await
}
