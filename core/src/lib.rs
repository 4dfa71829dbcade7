//! Parley's domain: everything that decides what Parley does, with no I/O of its own.
//!
//! Adapters in `infra/` implement the [`ports`]; entrypoints in `functions/` wire them up.
//! Keeping this crate free of network and storage code is what lets the Lambda functions
//! and the local `parley serve` run the very same logic.

pub mod body_limit;
pub mod bookkeeping;
pub mod budget;
pub mod commands;
pub mod concurrently;
pub mod config;
pub mod context;
pub mod conversation;
pub mod embedding;
pub mod env;
pub mod job;
pub mod learning;
pub mod llm;
pub mod markers;
pub mod mention;
pub mod metrics;
pub mod ports;
pub mod redelivery;
pub mod repo;
pub mod retrieval;
pub mod review;
pub mod sanitize;
pub mod scripts;
pub mod services;
pub mod tenancy;
pub mod webhook;
pub mod worker;

pub use job::Job;
