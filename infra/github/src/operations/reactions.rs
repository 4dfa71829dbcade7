//! Reactions: the `eyes` acknowledgement, and reading 👍 / 👎 on findings.

use super::pulls::auth;
use crate::client::GitHubClient;
use crate::retry::Replay;
use parley_core::ports::github::{
    GitHubError, Listing, PageLimit, Reaction, ReactionContent, RepoScope,
};
use reqwest::Method;
use serde::Serialize;

#[derive(Serialize)]
struct NewReaction {
    content: ReactionContent,
}

/// GitHub answers 200 with the existing reaction when the same one is added again, so
/// replaying cannot duplicate it.
pub(crate) async fn on_issue_comment(
    client: &GitHubClient,
    repo: &RepoScope,
    comment_id: u64,
    content: ReactionContent,
) -> Result<Reaction, GitHubError> {
    react(client, repo, ["issues", "comments"], comment_id, content).await
}

/// Same idempotence as [`on_issue_comment`].
pub(crate) async fn on_review_comment(
    client: &GitHubClient,
    repo: &RepoScope,
    comment_id: u64,
    content: ReactionContent,
) -> Result<Reaction, GitHubError> {
    react(client, repo, ["pulls", "comments"], comment_id, content).await
}

async fn react(
    client: &GitHubClient,
    repo: &RepoScope,
    [area, kind]: [&str; 2],
    comment_id: u64,
    content: ReactionContent,
) -> Result<Reaction, GitHubError> {
    let comment_id = comment_id.to_string();
    let url = client
        .base
        .repo_url(repo, &[area, kind, &comment_id, "reactions"])?;
    let reaction = NewReaction { content };
    client
        .send_json(Method::POST, auth(repo), url, &reaction, Replay::Safe)
        .await
}

/// Who reacted to an inline comment, and how.
pub(crate) async fn list_on_review_comment(
    client: &GitHubClient,
    repo: &RepoScope,
    comment_id: u64,
    limit: PageLimit,
) -> Result<Listing<Reaction>, GitHubError> {
    let comment_id = comment_id.to_string();
    let url = client
        .base
        .repo_url(repo, &["pulls", "comments", &comment_id, "reactions"])?;
    client.get_paged(auth(repo), url, limit).await
}
