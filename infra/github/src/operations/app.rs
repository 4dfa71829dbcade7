//! The App itself.

use crate::client::GitHubClient;
use crate::pagination::{next_link, same_origin_link};
use crate::request::{Auth, Call};
use crate::responses::decode;
use crate::retry::Replay;
use parley_core::ports::github::{App, DeliveryPage, GitHubError, Installation, WebhookDelivery};
use reqwest::Method;

/// `GET /app`: authenticated as the App, not an installation.
pub(crate) async fn get(client: &GitHubClient) -> Result<App, GitHubError> {
    client.get_json(Auth::App, client.base.url(&["app"])?).await
}

/// `GET /repos/{owner}/{repo}/installation`: authenticated as the App.
pub(crate) async fn repo_installation(
    client: &GitHubClient,
    owner: &str,
    name: &str,
) -> Result<Installation, GitHubError> {
    let url = client.base.url(&["repos", owner, name, "installation"])?;
    client.get_json(Auth::App, url).await
}

/// GitHub's largest page of deliveries.
const DELIVERIES_PER_PAGE: &str = "100";

/// `GET /app/hook/deliveries`: one page, newest first. GitHub pages this listing by an
/// opaque cursor carried in the `Link` header's next URL; the cursor is handed back rather
/// than the URL, so the caller decides how far back to read.
pub(crate) async fn list_deliveries(
    client: &GitHubClient,
    cursor: Option<&str>,
) -> Result<DeliveryPage, GitHubError> {
    let mut url = client.base.url(&["app", "hook", "deliveries"])?;
    url.query_pairs_mut()
        .append_pair("per_page", DELIVERIES_PER_PAGE);
    if let Some(cursor) = cursor {
        url.query_pairs_mut().append_pair("cursor", cursor);
    }
    let reply = client.send(&Call::get(url, Auth::App)).await?;
    let deliveries: Vec<WebhookDelivery> = decode(&reply.body, "GET /app/hook/deliveries")?;
    let next = match next_link(&reply.headers) {
        Some(link) => same_origin_link(client.base.rest(), &link)?
            .query_pairs()
            .find(|(name, _)| name == "cursor")
            .map(|(_, value)| value.into_owned()),
        None => None,
    };
    Ok(DeliveryPage { deliveries, next })
}

/// `POST /app/hook/deliveries/{id}/attempts` (202, no body worth reading). Replayed on a
/// lost answer: a second redelivery of an event is one the webhook has already taken.
pub(crate) async fn redeliver(client: &GitHubClient, id: u64) -> Result<(), GitHubError> {
    let id = id.to_string();
    let url = client
        .base
        .url(&["app", "hook", "deliveries", &id, "attempts"])?;
    client
        .send(&Call {
            method: Method::POST,
            url,
            auth: Auth::App,
            body: None,
            replay: Replay::Safe,
        })
        .await?;
    Ok(())
}
