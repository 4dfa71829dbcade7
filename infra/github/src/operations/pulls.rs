//! Pull requests, their files, and commit comparisons.

use crate::client::GitHubClient;
use crate::request::Auth;
use crate::retry::Replay;
use parley_core::ports::github::{
    ChangedFile, Comparison, GitHubError, Listing, PageLimit, PullRequest, RepoScope,
    ReviewerRequest,
};
use reqwest::Method;

pub(crate) async fn list_files(
    client: &GitHubClient,
    repo: &RepoScope,
    number: u64,
    limit: PageLimit,
) -> Result<Listing<ChangedFile>, GitHubError> {
    let number = number.to_string();
    let url = client.base.repo_url(repo, &["pulls", &number, "files"])?;
    client.get_paged(auth(repo), url, limit).await
}

/// `GET /repos/{o}/{r}/compare/{base}...{head}`. One page: its commits are capped at 250
/// and its files at 300 by GitHub, which bounds it already.
pub(crate) async fn compare(
    client: &GitHubClient,
    repo: &RepoScope,
    base: &str,
    head: &str,
) -> Result<Comparison, GitHubError> {
    let range = format!("{base}...{head}");
    let url = client.base.repo_url(repo, &["compare", &range])?;
    client.get_json(auth(repo), url).await
}

/// Requesting the same reviewer twice is a no-op on GitHub's side, so this may be retried.
pub(crate) async fn request_reviewers(
    client: &GitHubClient,
    repo: &RepoScope,
    number: u64,
    request: &ReviewerRequest,
) -> Result<PullRequest, GitHubError> {
    let number = number.to_string();
    let url = client
        .base
        .repo_url(repo, &["pulls", &number, "requested_reviewers"])?;
    client
        .send_json(Method::POST, auth(repo), url, request, Replay::Safe)
        .await
}

pub(crate) fn auth(repo: &RepoScope) -> Auth {
    Auth::Installation(repo.installation_id)
}
