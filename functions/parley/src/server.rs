//! The HTTP side of `parley serve`: `POST /webhook` (the Lambda's handler) and `GET /healthz`.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use parley_core::webhook::Ingest;
use parley_core::webhook::ingest::MAX_BODY_BYTES;
use tokio_util::sync::CancellationToken;

pub fn router(ingest: Ingest) -> Router {
    Router::new()
        .route("/webhook", post(webhook))
        .route("/healthz", get(|| async { "ok" }))
        // Let bodies slightly over the limit through so the shared handler answers 413
        // with its own message; anything far larger is cut off by axum, also with 413.
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES + 1024 * 1024))
        .with_state(ingest)
}

pub async fn run(
    listener: tokio::net::TcpListener,
    ingest: Ingest,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    axum::serve(listener, router(ingest))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await?;
    tracing::info!("http server stopped");
    Ok(())
}

async fn webhook(
    State(ingest): State<Ingest>,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    parley_webhook::respond(&ingest, &headers, &body).await
}
