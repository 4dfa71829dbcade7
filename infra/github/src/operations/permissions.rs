//! Who may talk to Parley on a repository.

use super::pulls::auth;
use crate::client::GitHubClient;
use parley_core::ports::github::{CollaboratorPermission, GitHubError, OrgMembership, RepoScope};

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

/// A 404 is "not a member" (or the owner is a user account): GitHub answers the same for
/// both, and neither makes someone an organisation admin.
pub(crate) async fn org_membership(
    client: &GitHubClient,
    repo: &RepoScope,
    username: &str,
) -> Result<Option<OrgMembership>, GitHubError> {
    let url = client
        .base
        .url(&["orgs", repo.owner.as_str(), "memberships", username])?;
    match client.get_json(auth(repo), url).await {
        Ok(membership) => Ok(Some(membership)),
        Err(GitHubError::NotFound(_)) => Ok(None),
        Err(err) => Err(err),
    }
}
