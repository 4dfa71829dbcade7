//! Who may talk to Parley on a repository.

use super::pulls::auth;
use crate::client::GitHubClient;
use parley_core::ports::github::{CollaboratorPermission, GitHubError, RepoScope};

pub(crate) async fn collaborator(
    client: &GitHubClient,
    repo: &RepoScope,
    username: &str,
) -> Result<CollaboratorPermission, GitHubError> {
    let url = client
        .base
        .repo_url(repo, &["collaborators", username, "permission"])?;
    client.get_json(auth(repo), url).await
}
