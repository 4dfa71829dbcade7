//! Parley end to end, in one test binary: real HTTP fakes for GitHub and the LLM, the
//! stores on SQLite and on DynamoDB (moto), the workers, the webhook and the CLI.
//!
//! One binary rather than one per file: each test binary links the whole of Parley and the
//! AWS SDK (about 130 MB in a debug build), so twenty-five of them cost CI minutes of
//! linking and gigabytes of disk. nextest still runs every test in its own process;
//! `-E 'test(/^review::/)'` picks one file's tests.

mod budget;
mod cli;
mod code_context;
mod conversation;
mod conversation_integrity;
mod crash;
mod embedding_job;
mod embeddings;
mod faults;
mod gate;
mod gate_integrity;
mod lambda_deployed;
mod lambda_roles;
mod learning;
mod merge_queue;
mod metrics;
mod org_config;
mod pause;
mod prompt_cache;
mod redelivery;
mod retrieval_e2e;
mod review;
mod review_diff;
mod self_hosted;
mod serve;
mod signals;
mod tenancy;
mod trust;
mod trust_property;
mod webhook;
