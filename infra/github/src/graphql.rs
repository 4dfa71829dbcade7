//! GitHub's GraphQL endpoint, for the few things REST cannot do (resolving review threads).
//!
//! GraphQL answers 200 even when the operation failed; the `errors` array is mapped onto
//! the same typed errors REST produces so callers handle both alike.

use crate::client::GitHubClient;
use crate::request::Auth;
use crate::retry::Replay;
use parley_core::ports::github::{ApiErrorDetail, GitHubError, RepoScope};
use reqwest::Method;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

#[derive(Serialize)]
struct Request<'a, V: Serialize> {
    query: &'a str,
    variables: V,
}

#[derive(Deserialize)]
struct Response<T> {
    data: Option<T>,
    #[serde(default)]
    errors: Vec<GraphQlError>,
}

#[derive(Debug, Deserialize)]
struct GraphQlError {
    #[serde(default)]
    message: String,
    /// `NOT_FOUND`, `FORBIDDEN`, `RATE_LIMITED`, … (GitHub's extension to the spec).
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

/// Runs `query` as the installation. Only queries and idempotent mutations go through
/// here, so the call is replayable.
pub(crate) async fn execute<T: DeserializeOwned, V: Serialize>(
    client: &GitHubClient,
    installation_id: u64,
    query: &str,
    variables: V,
) -> Result<T, GitHubError> {
    let url = client.base.graphql().clone();
    let response: Response<T> = client
        .send_json(
            Method::POST,
            Auth::Installation(installation_id),
            url,
            &Request { query, variables },
            Replay::Safe,
        )
        .await?;
    if !response.errors.is_empty() {
        return Err(errors_to_github_error(response.errors));
    }
    response
        .data
        .ok_or_else(|| GitHubError::Decode("GraphQL response has neither data nor errors".into()))
}

/// `repository { pullRequest { … } }`: the shape of every query about one PR.
#[derive(Deserialize)]
pub(crate) struct PullRequestData<P> {
    repository: Option<RepositoryNode<P>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RepositoryNode<P> {
    pull_request: Option<P>,
}

impl<P> PullRequestData<P> {
    /// The PR's part, or GitHub's 404 as REST says it: GraphQL answers `null` for a
    /// repository or PR it does not find (or the installation may not see).
    pub(crate) fn pull_request(self, repo: &RepoScope, number: u64) -> Result<P, GitHubError> {
        self.repository
            .and_then(|repository| repository.pull_request)
            .ok_or_else(|| {
                GitHubError::NotFound(format!(
                    "GraphQL: pull request {}#{number}",
                    repo.full_name()
                ))
            })
    }
}

fn errors_to_github_error(errors: Vec<GraphQlError>) -> GitHubError {
    let message = errors
        .iter()
        .map(|error| error.message.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    let message = format!("GraphQL: {message}");
    match errors.first().and_then(|error| error.kind.as_deref()) {
        Some("NOT_FOUND") => GitHubError::NotFound(message),
        Some("FORBIDDEN") => GitHubError::Forbidden(message),
        Some("RATE_LIMITED") => GitHubError::RateLimited { retry_after: None },
        _ => GitHubError::Unprocessable {
            message,
            errors: errors
                .into_iter()
                .map(|error| ApiErrorDetail {
                    code: error.kind,
                    message: Some(error.message),
                    ..ApiErrorDetail::default()
                })
                .collect(),
        },
    }
}
