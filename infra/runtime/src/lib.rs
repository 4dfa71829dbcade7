//! Wiring shared by every entrypoint, so each `main` stays one screen long.
//!
//! Lambda and `parley serve` read the same environment variable names; only the adapter
//! defaults differ (DynamoDB + SQS inside Lambda, SQLite elsewhere).

pub mod adapters;
#[cfg(feature = "worker")]
pub mod clients;
#[cfg(feature = "worker")]
pub mod metrics;
pub mod secrets;
pub mod settings;
#[cfg(feature = "worker")]
pub mod sqs_batch;
pub mod telemetry;

pub use adapters::{Adapters, build_adapters};
pub use settings::Settings;
