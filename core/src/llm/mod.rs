//! LLM helpers that need no I/O: getting typed JSON out of a model's reply, and
//! turning token counts into an estimated cost.
//!
//! They sit on top of the [`Llm`](crate::ports::llm::Llm) port, so every provider gets the
//! same extraction, validation and accounting, and the workers can test them with a fake.

pub mod extract;
pub mod pricing;
#[cfg(test)]
pub(crate) mod scripted;
pub mod structured;
pub mod usage;

pub use extract::json_candidates;
pub use pricing::{PRICES_ENV, Price, PriceTable, PricingError, normalise_model_id};
pub use structured::{JsonOutput, JsonReply, OutputError, SchemaSpec};
pub use usage::{MeteredLlm, UsageTally};
