//! The webhook endpoint as an HTTP handler, independent of what serves it.
//!
//! `main.rs` puts it behind `lambda_http`; `parley serve` puts it behind axum. Both call
//! [`respond`], so a local run exercises exactly the deployed code path.

use http::{HeaderMap, Response, StatusCode};
use parley_core::mention::Handles;
use parley_core::ports::{Claims, JobQueue};
use parley_core::webhook::{
    Ingest, IngestSettings, NormaliseContext, WebhookRequest, WebhookSecrets,
};
use std::sync::Arc;

/// The handler as a deployment configures it: the webhook secret resolved (a Secrets
/// Manager ARN is fetched once, at start), the App's handles, the adapters' store and
/// queue. The Lambda and `parley serve` both start this way.
pub async fn ingest_from_settings(
    settings: &parley_runtime::Settings,
    store: Arc<dyn Claims>,
    queue: Arc<dyn JobQueue>,
) -> Result<Ingest, parley_runtime::secrets::SecretError> {
    let secret = match settings.webhook_secret.clone() {
        Some(value) => Some(parley_runtime::secrets::resolve(value).await?),
        None => None,
    };
    Ok(ingest(secret.as_deref(), settings.handles(), store, queue))
}

/// Build the framework-free handler from resolved settings.
///
/// `webhook_secret` is the resolved secret list (not an ARN). `None` or empty means every
/// delivery is refused with 401: an unauthenticated webhook is never the default.
pub fn ingest(
    webhook_secret: Option<&str>,
    handles: Option<Handles>,
    store: Arc<dyn Claims>,
    queue: Arc<dyn JobQueue>,
) -> Ingest {
    let secrets = WebhookSecrets::parse(webhook_secret.unwrap_or(""));
    if secrets.is_empty() {
        tracing::warn!("GITHUB_WEBHOOK_SECRET is not set: every delivery will be refused with 401");
    }
    if handles.is_none() {
        tracing::info!(
            "GITHUB_APP_SLUG is not set: forwarding every comment event; workers learn the handle from GET /app"
        );
    }
    let settings = IngestSettings {
        secrets,
        context: NormaliseContext { handles },
    };
    Ingest::new(settings, store, queue)
}

/// Answer one webhook request.
pub async fn respond(ingest: &Ingest, headers: &HeaderMap, body: &[u8]) -> Response<String> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let outcome = ingest
        .handle(WebhookRequest {
            event: header("x-github-event"),
            delivery: header("x-github-delivery"),
            signature: header("x-hub-signature-256"),
            body,
        })
        .await;
    let status =
        StatusCode::from_u16(outcome.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = Response::new(outcome.body());
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
