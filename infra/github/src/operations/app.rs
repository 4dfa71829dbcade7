//! The App itself.

use crate::client::GitHubClient;
use crate::transport::Auth;
use parley_core::ports::github::{App, GitHubError};

/// `GET /app`: authenticated as the App, not an installation.
pub(crate) async fn get(client: &GitHubClient) -> Result<App, GitHubError> {
    client.get_json(Auth::App, client.base.url(&["app"])?).await
}
