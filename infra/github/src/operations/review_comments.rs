//! Inline review comments and replies in their threads.

use super::pulls::auth;
use super::write_body;
use crate::client::GitHubClient;
use crate::retry::Replay;
use parley_core::ports::github::{GitHubError, NewReviewComment, RepoScope, ReviewComment};
use reqwest::Method;
use serde::Serialize;

#[derive(Serialize)]
struct NewCommentBody<'a> {
    commit_id: &'a str,
    #[serde(flatten)]
    comment: &'a NewReviewComment,
}

/// Creates a comment: not replayed once GitHub may have it.
pub(crate) async fn create(
    client: &GitHubClient,
    repo: &RepoScope,
    number: u64,
    commit_id: &str,
    comment: &NewReviewComment,
) -> Result<ReviewComment, GitHubError> {
    let number = number.to_string();
    let url = client
        .base
        .repo_url(repo, &["pulls", &number, "comments"])?;
    let body = NewCommentBody { commit_id, comment };
    client
        .send_json(Method::POST, auth(repo), url, &body, Replay::NotAfterSend)
        .await
}

/// Creates a reply: not replayed once GitHub may have it (a double answer in a thread is
/// exactly what the hidden markers exist to prevent).
pub(crate) async fn reply(
    client: &GitHubClient,
    repo: &RepoScope,
    number: u64,
    comment_id: u64,
    body: &str,
) -> Result<ReviewComment, GitHubError> {
    let number = number.to_string();
    let comment_id = comment_id.to_string();
    write_body(
        client,
        repo,
        (
            Method::POST,
            &["pulls", &number, "comments", &comment_id, "replies"],
        ),
        body,
        Replay::NotAfterSend,
    )
    .await
}
