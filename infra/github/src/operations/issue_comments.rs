//! Top-level comments on PRs and issues.

use super::pulls::auth;
use super::{with_since, write_body};
use crate::client::GitHubClient;
use crate::retry::Replay;
use parley_core::ports::github::{GitHubError, IssueComment, Listing, PageLimit, RepoScope};
use reqwest::Method;
use time::OffsetDateTime;

/// GitHub lists issue comments oldest first (this endpoint has no sort parameter).
pub(crate) async fn list(
    client: &GitHubClient,
    repo: &RepoScope,
    number: u64,
    since: Option<OffsetDateTime>,
    limit: PageLimit,
) -> Result<Listing<IssueComment>, GitHubError> {
    let number = number.to_string();
    let url = client
        .base
        .repo_url(repo, &["issues", &number, "comments"])?;
    let url = with_since(url, since)?;
    client.get_paged(auth(repo), url, limit).await
}

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
