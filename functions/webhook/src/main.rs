//! Webhook Lambda: API Gateway HTTP API → verify, normalise, dedupe, enqueue → 202.

use lambda_http::{Body, Error, Request, Response, service_fn};
use parley_runtime::{Settings, build_adapters, telemetry};

#[tokio::main]
async fn main() -> Result<(), Error> {
    telemetry::init();
    let settings = Settings::from_env()?;
    let adapters = build_adapters(&settings).await?;
    let ingest =
        parley_webhook::ingest_from_settings(&settings, adapters.store, adapters.queue).await?;

    lambda_http::run(service_fn(move |request: Request| {
        let ingest = ingest.clone();
        async move {
            let response =
                parley_webhook::respond(&ingest, request.headers(), request.body()).await;
            Ok::<Response<Body>, Error>(response.map(Body::from))
        }
    }))
    .await
}
