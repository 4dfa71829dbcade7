//! Review threads, which only GraphQL exposes: finding one and resolving it.

use crate::client::GitHubClient;
use crate::graphql::{self, PullRequestData};
use parley_core::ports::github::{GitHubError, RepoScope, ReviewThread};
use serde::{Deserialize, Deserializer, Serialize};

/// Pages of 100 threads at most: 1 000 threads, far beyond any real PR, so the scan is
/// bounded without missing anything in practice.
const MAX_THREAD_PAGES: usize = 10;

/// Only each thread's first comment is fetched: a finding is always a thread's root.
/// `fullDatabaseId` is the REST id as a string; `databaseId` overflows 32 bits on new ids.
const FIND_THREAD_QUERY: &str =
    "query($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes { id isResolved comments(first: 1) { nodes { fullDatabaseId } } }
      }
    }
  }
}";

const RESOLVE_THREAD_MUTATION: &str = "mutation($threadId: ID!) {
  resolveReviewThread(input: {threadId: $threadId}) { thread { id isResolved } }
}";

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FindVariables<'a> {
    owner: &'a str,
    name: &'a str,
    number: u64,
    after: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PullRequestNode {
    review_threads: ThreadConnection,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ThreadConnection {
    page_info: PageInfo,
    #[serde(default)]
    nodes: Vec<Option<ThreadNode>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageInfo {
    has_next_page: bool,
    end_cursor: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ThreadNode {
    id: String,
    is_resolved: bool,
    comments: CommentConnection,
}

#[derive(Deserialize)]
struct CommentConnection {
    #[serde(default)]
    nodes: Vec<Option<CommentNode>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CommentNode {
    #[serde(default, deserialize_with = "big_int")]
    full_database_id: Option<u64>,
}

/// GraphQL `BigInt` arrives as a string; accept a number too.
fn big_int<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Wire {
        Text(String),
        Number(u64),
    }
    Ok(match Option::<Wire>::deserialize(deserializer)? {
        Some(Wire::Text(text)) => text.parse().ok(),
        Some(Wire::Number(number)) => Some(number),
        None => None,
    })
}

pub(crate) async fn find(
    client: &GitHubClient,
    repo: &RepoScope,
    number: u64,
    root_comment_id: u64,
) -> Result<Option<ReviewThread>, GitHubError> {
    let mut after = None;
    for _ in 0..MAX_THREAD_PAGES {
        let variables = FindVariables {
            owner: &repo.owner,
            name: &repo.name,
            number,
            after: after.take(),
        };
        let data: PullRequestData<PullRequestNode> =
            graphql::execute(client, repo.installation_id, FIND_THREAD_QUERY, variables).await?;
        let threads = data.pull_request(repo, number)?.review_threads;
        let found = threads.nodes.into_iter().flatten().find(|thread| {
            thread
                .comments
                .nodes
                .iter()
                .flatten()
                .next()
                .and_then(|root| root.full_database_id)
                == Some(root_comment_id)
        });
        if let Some(thread) = found {
            return Ok(Some(ReviewThread {
                id: thread.id,
                is_resolved: thread.is_resolved,
            }));
        }
        match threads.page_info {
            PageInfo {
                has_next_page: true,
                end_cursor: Some(cursor),
            } => after = Some(cursor),
            _ => return Ok(None),
        }
    }
    tracing::warn!(repo = %repo.full_name(), number, root_comment_id, "review thread not found within the scan cap");
    Ok(None)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResolveVariables<'a> {
    thread_id: &'a str,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResolveData {
    resolve_review_thread: Option<ResolvePayload>,
}

#[derive(Deserialize)]
struct ResolvePayload {
    thread: Option<ResolvedThread>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResolvedThread {
    id: String,
    is_resolved: bool,
}

pub(crate) async fn resolve(
    client: &GitHubClient,
    repo: &RepoScope,
    thread_id: &str,
) -> Result<ReviewThread, GitHubError> {
    let data: ResolveData = graphql::execute(
        client,
        repo.installation_id,
        RESOLVE_THREAD_MUTATION,
        ResolveVariables { thread_id },
    )
    .await?;
    let thread = data
        .resolve_review_thread
        .and_then(|payload| payload.thread)
        .ok_or_else(|| GitHubError::Decode("resolveReviewThread returned no thread".into()))?;
    Ok(ReviewThread {
        id: thread.id,
        is_resolved: thread.is_resolved,
    })
}
