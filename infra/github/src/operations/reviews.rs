//! Pull request reviews.

use super::pulls::auth;
use crate::client::GitHubClient;
use crate::retry::Replay;
use parley_core::ports::github::{
    GitHubError, Listing, NewReview, PageLimit, RepoScope, Review, ReviewComment,
};
use reqwest::Method;

pub(crate) async fn list(
    client: &GitHubClient,
    repo: &RepoScope,
    number: u64,
    limit: PageLimit,
) -> Result<Listing<Review>, GitHubError> {
    let number = number.to_string();
    let url = client.base.repo_url(repo, &["pulls", &number, "reviews"])?;
    client.get_paged(auth(repo), url, limit).await
}

/// Creates a review: not replayed once GitHub may have it, since a second review would
/// duplicate every inline finding.
pub(crate) async fn create(
    client: &GitHubClient,
    repo: &RepoScope,
    number: u64,
    review: &NewReview,
) -> Result<Review, GitHubError> {
    let number = number.to_string();
    let url = client.base.repo_url(repo, &["pulls", &number, "reviews"])?;
    client
        .send_json(Method::POST, auth(repo), url, review, Replay::NotAfterSend)
        .await
}

pub(crate) async fn list_comments(
    client: &GitHubClient,
    repo: &RepoScope,
    number: u64,
    review_id: u64,
    limit: PageLimit,
) -> Result<Listing<ReviewComment>, GitHubError> {
    let number = number.to_string();
    let review_id = review_id.to_string();
    let url = client
        .base
        .repo_url(repo, &["pulls", &number, "reviews", &review_id, "comments"])?;
    client.get_paged(auth(repo), url, limit).await
}
