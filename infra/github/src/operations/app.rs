//! The App itself.

use crate::client::GitHubClient;
use crate::request::Auth;
use parley_core::ports::github::{App, GitHubError};

/// `GET /app`: authenticated as the App, not an installation.
pub(crate) async fn get(client: &GitHubClient) -> Result<App, GitHubError> {
    client.get_json(Auth::App, client.base.url(&["app"])?).await
}

#[derive(serde::Deserialize)]
struct InstallationWire {
    id: u64,
}

/// `GET /repos/{owner}/{repo}/installation`: authenticated as the App.
pub(crate) async fn repo_installation(
    client: &GitHubClient,
    owner: &str,
    name: &str,
) -> Result<u64, GitHubError> {
    let url = client.base.url(&["repos", owner, name, "installation"])?;
    let wire: InstallationWire = client.get_json(Auth::App, url).await?;
    Ok(wire.id)
}
