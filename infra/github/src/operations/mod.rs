//! The operations Parley needs, grouped by GitHub API area. Each is a free function over
//! the client; `port.rs` maps the trait onto them.
//!
//! Every write names its [`Replay`] class where it is made, so the
//! "no duplicate comments" rule can be checked operation by operation.

pub(crate) mod app;
pub(crate) mod check_runs;
pub(crate) mod contents;
pub(crate) mod issue_comments;
pub(crate) mod linked_issues;
pub(crate) mod permissions;
pub(crate) mod protection;
pub(crate) mod pulls;
pub(crate) mod reactions;
pub(crate) mod review_comments;
pub(crate) mod review_threads;
pub(crate) mod reviews;

use crate::client::GitHubClient;
use crate::retry::Replay;
use parley_core::ports::github::{GitHubError, Listing, PageLimit, RepoScope};
use reqwest::{Method, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Adds GitHub's `since` filter (ISO 8601) when given.
pub(crate) fn with_since(mut url: Url, since: Option<OffsetDateTime>) -> Result<Url, GitHubError> {
    if let Some(since) = since {
        let formatted = since
            .format(&Rfc3339)
            .map_err(|err| GitHubError::InvalidRequest(format!("bad since timestamp: {err}")))?;
        url.query_pairs_mut().append_pair("since", &formatted);
    }
    Ok(url)
}

/// One resource of the repository, at `path` under it: a PR (`pulls/42`), an issue
/// (`issues/42`), a comment (`issues/comments/7`, `pulls/comments/7`).
pub(crate) async fn get_at<T: DeserializeOwned>(
    client: &GitHubClient,
    repo: &RepoScope,
    path: &[&str],
) -> Result<T, GitHubError> {
    let url = client.base.repo_url(repo, path)?;
    client.get_json(pulls::auth(repo), url).await
}

/// A PR's or issue's comments `under` "issues" (top-level) or "pulls" (inline), oldest
/// first: thread reconstruction walks them in creation order. Only the inline listing
/// takes a sort; GitHub lists issue comments oldest first and has no parameter for it.
pub(crate) async fn list_comments<T: DeserializeOwned>(
    client: &GitHubClient,
    repo: &RepoScope,
    (under, number): (&str, u64),
    since: Option<OffsetDateTime>,
    limit: PageLimit,
) -> Result<Listing<T>, GitHubError> {
    let number = number.to_string();
    let mut url = client.base.repo_url(repo, &[under, &number, "comments"])?;
    if under == "pulls" {
        url.query_pairs_mut()
            .append_pair("sort", "created")
            .append_pair("direction", "asc");
    }
    let url = with_since(url, since)?;
    client.get_paged(pulls::auth(repo), url, limit).await
}

/// An edit sets the body to the same text however often it runs, so it is replayed.
pub(crate) async fn edit_comment<T: DeserializeOwned>(
    client: &GitHubClient,
    repo: &RepoScope,
    under: &str,
    comment_id: u64,
    body: &str,
) -> Result<T, GitHubError> {
    let comment_id = comment_id.to_string();
    write_body(
        client,
        repo,
        (Method::PATCH, &[under, "comments", &comment_id]),
        body,
        Replay::Safe,
    )
    .await
}

/// Send `{"body": …}` to `path` under the repository: how a comment is written, replied
/// to and edited. `replay` is the write's own class (see the module doc).
pub(crate) async fn write_body<T: DeserializeOwned>(
    client: &GitHubClient,
    repo: &RepoScope,
    (method, path): (Method, &[&str]),
    body: &str,
    replay: Replay,
) -> Result<T, GitHubError> {
    #[derive(Serialize)]
    struct BodyOnly<'a> {
        body: &'a str,
    }
    let url = client.base.repo_url(repo, path)?;
    client
        .send_json(method, pulls::auth(repo), url, &BodyOnly { body }, replay)
        .await
}
