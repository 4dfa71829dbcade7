//! The webhook path: verify a delivery, turn it into a job, dedupe it, enqueue it.
//!
//! Everything here answers within GitHub's 10 s deadline because nothing here calls GitHub
//! or an LLM: one store write (delivery dedup) and one queue send.

pub mod ingest;
pub mod normalise;
mod payload;
pub mod signature;
mod source;

pub use ingest::{Ingest, IngestSettings, Outcome, Rejection, WebhookRequest};
pub use normalise::{NormaliseContext, Normalised};
pub use signature::{SignatureError, WebhookSecrets};
