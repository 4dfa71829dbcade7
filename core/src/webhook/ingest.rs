//! One webhook delivery from bytes to an answer: the story the webhook Lambda and
//! `parley serve` both tell.
//!
//! The order matters. Size first (cheapest, and protects everything after it), then the
//! signature (nothing unauthenticated is parsed), then headers and JSON, then the
//! normalised job, then dedup and enqueue. Only a job that will be enqueued costs a store
//! write, so ignored events and pings are free.

use super::normalise::{NormaliseContext, Normalised, normalise_body};
use super::signature::{SignatureError, WebhookSecrets};
use crate::job::Job;
use crate::ports::store::keys;
use crate::ports::{Claim, Claims, JobQueue, OutgoingMessage};
use std::sync::Arc;
use std::time::Duration;

/// GitHub caps payloads at 25 MB; API Gateway at 10 MB. We take the smaller so a local
/// run rejects exactly what the deployed stack would.
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// How long a delivery id is remembered. GitHub lets people redeliver for 3 days.
pub const DELIVERY_TTL: Duration = Duration::from_secs(3 * 24 * 60 * 60);

/// The parts of an HTTP request the webhook reads. Header values are raw; `None` when the
/// header was absent or not valid UTF-8.
#[derive(Debug, Clone, Copy)]
pub struct WebhookRequest<'a> {
    pub event: Option<&'a str>,
    pub delivery: Option<&'a str>,
    pub signature: Option<&'a str>,
    pub body: &'a [u8],
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Pong,
    Accepted { delivery: String, job: String },
    Duplicate { delivery: String },
    Ignored { delivery: String, reason: String },
    Rejected(Rejection),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    TooLarge {
        bytes: usize,
    },
    Unauthorized(SignatureError),
    MissingHeader(&'static str),
    Malformed(String),
    /// The store or queue failed: nothing was enqueued and the dedup claim was released,
    /// so a redelivery from GitHub will be processed.
    Unavailable(String),
}

impl Outcome {
    pub fn status(&self) -> u16 {
        match self {
            Outcome::Pong => 200,
            Outcome::Accepted { .. } | Outcome::Duplicate { .. } | Outcome::Ignored { .. } => 202,
            Outcome::Rejected(rejection) => match rejection {
                Rejection::TooLarge { .. } => 413,
                Rejection::Unauthorized(_) => 401,
                Rejection::MissingHeader(_) | Rejection::Malformed(_) => 400,
                Rejection::Unavailable(_) => 503,
            },
        }
    }

    /// JSON body: short and machine-readable, so GitHub's delivery log says what happened.
    pub fn body(&self) -> String {
        let value = match self {
            Outcome::Pong => serde_json::json!({ "status": "pong" }),
            Outcome::Accepted { delivery, job } => {
                serde_json::json!({ "status": "accepted", "delivery": delivery, "job": job })
            }
            Outcome::Duplicate { delivery } => {
                serde_json::json!({ "status": "duplicate", "delivery": delivery })
            }
            Outcome::Ignored { delivery, reason } => {
                serde_json::json!({ "status": "ignored", "delivery": delivery, "reason": reason })
            }
            Outcome::Rejected(rejection) => {
                serde_json::json!({ "status": "rejected", "error": rejection.to_string() })
            }
        };
        value.to_string()
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejection::TooLarge { bytes } => {
                write!(
                    f,
                    "body of {bytes} bytes exceeds the {MAX_BODY_BYTES}-byte limit"
                )
            }
            Rejection::Unauthorized(err) => write!(f, "{err}"),
            Rejection::MissingHeader(name) => write!(f, "missing {name} header"),
            Rejection::Malformed(reason) => write!(f, "malformed payload: {reason}"),
            Rejection::Unavailable(reason) => write!(f, "temporarily unavailable: {reason}"),
        }
    }
}

/// Settings the webhook needs besides its adapters.
#[derive(Debug, Clone, Default)]
pub struct IngestSettings {
    pub secrets: WebhookSecrets,
    pub context: NormaliseContext,
}

/// The webhook handler, independent of the HTTP framework in front of it. Of the store it
/// holds claims only (one per delivery): it keeps nothing else, and its IAM role in the
/// template reaches the idempotency table alone.
#[derive(Clone)]
pub struct Ingest {
    settings: Arc<IngestSettings>,
    store: Arc<dyn Claims>,
    queue: Arc<dyn JobQueue>,
}

impl Ingest {
    pub fn new(settings: IngestSettings, store: Arc<dyn Claims>, queue: Arc<dyn JobQueue>) -> Self {
        Ingest {
            settings: Arc::new(settings),
            store,
            queue,
        }
    }

    pub async fn handle(&self, request: WebhookRequest<'_>) -> Outcome {
        let outcome = self.decide(request).await;
        log_outcome(request, &outcome);
        outcome
    }

    async fn decide(&self, request: WebhookRequest<'_>) -> Outcome {
        if request.body.len() > MAX_BODY_BYTES {
            return reject(Rejection::TooLarge {
                bytes: request.body.len(),
            });
        }
        if let Err(err) = self
            .settings
            .secrets
            .verify(request.signature, request.body)
        {
            return reject(Rejection::Unauthorized(err));
        }
        let Some(event) = request.event.filter(|e| !e.is_empty()) else {
            return reject(Rejection::MissingHeader("X-GitHub-Event"));
        };
        let Some(delivery) = request.delivery.filter(|d| !d.is_empty()) else {
            return reject(Rejection::MissingHeader("X-GitHub-Delivery"));
        };
        match normalise_body(event, delivery, request.body, &self.settings.context) {
            Normalised::Ping => Outcome::Pong,
            Normalised::Malformed(reason) => reject(Rejection::Malformed(reason)),
            Normalised::Ignored(reason) => Outcome::Ignored {
                delivery: delivery.to_string(),
                reason,
            },
            Normalised::Job(job) => self.enqueue_once(delivery, *job).await,
        }
    }

    /// Claim the delivery, then send. If the send fails the claim is released, so GitHub's
    /// redelivery is not mistaken for a duplicate of something that was never queued.
    async fn enqueue_once(&self, delivery: &str, job: Job) -> Outcome {
        let key = keys::delivery(delivery);
        match self.store.claim(&key, DELIVERY_TTL).await {
            Ok(Claim::Won) => {}
            Ok(Claim::AlreadyClaimed) => {
                return Outcome::Duplicate {
                    delivery: delivery.to_string(),
                };
            }
            Err(err) => return reject(Rejection::Unavailable(format!("store: {err}"))),
        }
        let message = match to_message(delivery, &job) {
            Ok(message) => message,
            Err(err) => {
                let _ = self.store.release(&key).await;
                return reject(Rejection::Unavailable(err));
            }
        };
        if let Err(err) = self.queue.send(message).await {
            if let Err(release_err) = self.store.release(&key).await {
                tracing::error!(delivery, error = %release_err, "could not release the delivery claim after a failed send; a redelivery within 3 days will be dropped");
            }
            return reject(Rejection::Unavailable(format!("queue: {err}")));
        }
        Outcome::Accepted {
            delivery: delivery.to_string(),
            job: job.describe(),
        }
    }
}

fn to_message(delivery: &str, job: &Job) -> Result<OutgoingMessage, String> {
    job.message(delivery.to_string())
        .map_err(|err| format!("cannot encode job: {err}"))
}

fn reject(rejection: Rejection) -> Outcome {
    Outcome::Rejected(rejection)
}

fn log_outcome(request: WebhookRequest<'_>, outcome: &Outcome) {
    let event = request.event.unwrap_or("-");
    let delivery = request.delivery.unwrap_or("-");
    match outcome {
        Outcome::Pong => tracing::info!(event, delivery, "ping"),
        Outcome::Accepted { job, .. } => tracing::info!(event, delivery, job, "enqueued"),
        Outcome::Duplicate { .. } => tracing::info!(event, delivery, "redelivery ignored"),
        Outcome::Ignored { reason, .. } => tracing::info!(event, delivery, reason, "ignored"),
        Outcome::Rejected(rejection @ Rejection::Unavailable(_)) => {
            tracing::error!(event, delivery, error = %rejection, "not enqueued")
        }
        Outcome::Rejected(rejection) => {
            tracing::warn!(event, delivery, error = %rejection, "rejected")
        }
    }
}
