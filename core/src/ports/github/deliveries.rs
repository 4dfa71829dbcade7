//! The App's webhook deliveries as GitHub lists them (`GET /app/hook/deliveries`): how
//! Parley finds the events it failed to take, since GitHub does not send them again.

use serde::Deserialize;
use time::OffsetDateTime;

/// One attempt to deliver one event. Every attempt at the same event (the first and each
/// redelivery) shares its `guid`, the `X-GitHub-Delivery` the webhook saw.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WebhookDelivery {
    pub id: u64,
    pub guid: String,
    #[serde(with = "time::serde::rfc3339")]
    pub delivered_at: OffsetDateTime,
    #[serde(default)]
    pub redelivery: bool,
    /// GitHub's words for the outcome: `OK`, `Invalid HTTP Response: 502`, `timed out`.
    #[serde(default)]
    pub status: String,
    /// The HTTP status Parley answered; 0 when there was none (a timeout, no connection).
    #[serde(default)]
    pub status_code: u32,
    #[serde(default)]
    pub event: String,
    #[serde(default)]
    pub action: Option<String>,
    #[serde(default)]
    pub installation_id: Option<u64>,
}

impl WebhookDelivery {
    /// Whether Parley took this attempt (answered 2xx).
    pub fn taken(&self) -> bool {
        (200..300).contains(&self.status_code)
    }
}

/// One page of deliveries, newest first, and where the next (older) page starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveryPage {
    pub deliveries: Vec<WebhookDelivery>,
    /// GitHub's opaque cursor of the next page; `None` on the last.
    pub next: Option<String>,
}
