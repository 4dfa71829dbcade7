//! The issues linked to a PR by hand: GitHub's "Development" sidebar, which REST does not
//! show. Those a closing keyword in the description links are read from the description
//! itself (`parley_core::review::linked_issues`), so they are left out here.

use crate::client::GitHubClient;
use crate::graphql::{self, PullRequestData};
use parley_core::ports::github::{GitHubError, IssueReference, RepoScope};
use serde::{Deserialize, Serialize};

/// Ten at most: a review reads three, and a PR linked by hand to more is rare.
const BY_HAND_QUERY: &str = "query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      closingIssuesReferences(first: 10, userLinkedOnly: true) {
        nodes { number repository { nameWithOwner } }
      }
    }
  }
}";

#[derive(Serialize)]
struct Variables<'a> {
    owner: &'a str,
    name: &'a str,
    number: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PullRequestNode {
    closing_issues_references: IssueConnection,
}

#[derive(Deserialize)]
struct IssueConnection {
    #[serde(default)]
    nodes: Vec<Option<IssueNode>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IssueNode {
    number: u64,
    repository: Owner,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Owner {
    name_with_owner: String,
}

pub(crate) async fn by_hand(
    client: &GitHubClient,
    repo: &RepoScope,
    number: u64,
) -> Result<Vec<IssueReference>, GitHubError> {
    let variables = Variables {
        owner: &repo.owner,
        name: &repo.name,
        number,
    };
    let data: PullRequestData<PullRequestNode> =
        graphql::execute(client, repo.installation_id, BY_HAND_QUERY, variables).await?;
    let issues = data.pull_request(repo, number)?.closing_issues_references;
    Ok(issues
        .nodes
        .into_iter()
        .flatten()
        .map(|issue| IssueReference {
            repository: issue.repository.name_with_owner,
            number: issue.number,
        })
        .collect())
}
