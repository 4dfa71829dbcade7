//! `parley replay <payload.json> --event E [--url URL] [--delivery ID]`: send a GitHub
//! delivery again, signed with `GITHUB_WEBHOOK_SECRET` (the first one, when several are
//! set for a rotation).
//!
//! With `--url` it is POSTed to a running webhook (`parley serve`, or the stack's
//! `WebhookUrl`) exactly as GitHub sends it. Without, it goes through the same webhook
//! handler in this process, onto the queue the settings select: verification, dedup on
//! the delivery id and normalisation all happen as for a real delivery.

use anyhow::{Context, bail};
use clap::Parser;
use http::{HeaderMap, HeaderValue};
use parley_core::mention::Handles;
use parley_core::ports::{JobQueue, Store};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, Parser)]
#[command(name = "parley replay", about = "Sign and send a webhook delivery")]
pub struct ReplayCommand {
    /// The delivery's JSON body, e.g. a payload saved from the App's "Recent Deliveries".
    pub payload: PathBuf,
    /// The `X-GitHub-Event` header: pull_request, issue_comment, …
    #[arg(long)]
    pub event: String,
    /// A running webhook endpoint. Without it, the delivery is enqueued through the webhook
    /// handler in this process.
    #[arg(long)]
    pub url: Option<String>,
    /// The `X-GitHub-Delivery` id; a new UUID by default. Reuse one to see deduplication.
    #[arg(long)]
    pub delivery: Option<String>,
}

/// A delivery as GitHub would send it.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// What the webhook answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

/// `parley replay …` from the process environment.
pub async fn main(args: &[String]) -> anyhow::Result<()> {
    let command = ReplayCommand::try_parse_from(
        std::iter::once("parley replay".to_string()).chain(args.iter().cloned()),
    )
    .unwrap_or_else(|err| err.exit());
    let settings = parley_runtime::Settings::from_env()?;
    let secret = match settings.webhook_secret.clone() {
        Some(value) => parley_runtime::secrets::resolve(value).await?,
        None => bail!("GITHUB_WEBHOOK_SECRET is not set: a delivery cannot be signed without it"),
    };
    let delivery = signed(&command, &secret)?;
    let answer = match &command.url {
        Some(url) => post(url, &delivery).await?,
        None => {
            let adapters = parley_runtime::build_adapters(&settings)
                .await
                .context("opening the store and queue")?;
            through_handler(
                &delivery,
                &secret,
                settings.handles(),
                adapters.store,
                adapters.queue,
            )
            .await
        }
    };
    report(&answer, &mut std::io::stdout())
}

/// Print the answer; a refusal (4xx, 5xx) is an error, so scripts see it.
pub fn report(answer: &Answer, out: &mut dyn Write) -> anyhow::Result<()> {
    writeln!(out, "{} {}", answer.status, answer.body)?;
    if answer.status >= 400 {
        bail!("the webhook refused the delivery ({})", answer.status);
    }
    Ok(())
}

/// The payload read and checked, with GitHub's headers and the signature over its bytes.
pub fn signed(command: &ReplayCommand, secrets: &str) -> anyhow::Result<Delivery> {
    let body = std::fs::read(&command.payload)
        .with_context(|| format!("reading {}", command.payload.display()))?;
    serde_json::from_slice::<serde_json::Value>(&body)
        .with_context(|| format!("{} is not JSON", command.payload.display()))?;
    let Some(secret) = secrets.split(',').map(str::trim).find(|s| !s.is_empty()) else {
        bail!("GITHUB_WEBHOOK_SECRET holds no secret to sign with");
    };
    let delivery_id = command
        .delivery
        .clone()
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let signature = parley_core::webhook::signature::sign(secret.as_bytes(), &body);
    let mut headers = HeaderMap::new();
    for (name, value) in [
        ("x-github-event", command.event.as_str()),
        ("x-github-delivery", delivery_id.as_str()),
        ("x-hub-signature-256", signature.as_str()),
        ("content-type", "application/json"),
        ("user-agent", "parley-replay"),
    ] {
        let value = HeaderValue::from_str(value)
            .with_context(|| format!("{value:?} cannot be sent as the {name} header"))?;
        headers.insert(name, value);
    }
    Ok(Delivery { headers, body })
}

/// POST the delivery to a running webhook.
pub async fn post(url: &str, delivery: &Delivery) -> anyhow::Result<Answer> {
    let response = parley_llm::client_builder()
        .build()?
        .post(url)
        .headers(delivery.headers.clone())
        .body(delivery.body.clone())
        .send()
        .await
        .with_context(|| format!("sending the delivery to {url}"))?;
    let status = response.status().as_u16();
    let body = response
        .text()
        .await
        .with_context(|| format!("reading the answer of {url}"))?;
    Ok(Answer { status, body })
}

/// Hand the delivery to the webhook handler in this process, as `parley serve` and the
/// webhook Lambda do.
pub async fn through_handler(
    delivery: &Delivery,
    secret: &str,
    handles: Option<Handles>,
    store: Arc<dyn Store>,
    queue: Arc<dyn JobQueue>,
) -> Answer {
    let ingest = parley_webhook::ingest(Some(secret), handles, store, queue);
    let response = parley_webhook::respond(&ingest, &delivery.headers, &delivery.body).await;
    Answer {
        status: response.status().as_u16(),
        body: response.into_body(),
    }
}
