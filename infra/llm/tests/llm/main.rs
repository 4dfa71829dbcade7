//! The llm crate's integration tests, in one binary (one link instead of one per file).

mod anthropic;
mod bedrock;
mod common;
mod from_env;
mod openai;
mod provider_selection;
