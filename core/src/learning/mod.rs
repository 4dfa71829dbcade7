//! Learning: what a team teaches Parley, and what Parley learns from how its findings end.
//!
//! - [`record`]: a learning ("@parley remember …", "don't flag …", "be stricter about …"):
//!   scope, kind, text, structured [`record::Hints`], author, source, soft deletion.
//! - [`memory`]: everything learned about a repository, read in two store calls, and the
//!   versioned writes that keep concurrent jobs from losing each other's counts.
//! - [`hints`]: the words of a learning turned into hints a review applies without a model.
//! - [`apply`]: a review's learnings, thresholds and suppressed findings.
//! - [`outcomes`], [`patterns`], [`stats`]: accepted / rejected / ignored findings, the
//!   false-positive patterns they feed, and the tuned confidence threshold.
//! - [`judge`]: the judge pass over a review's merged findings.

pub mod apply;
pub mod hints;
pub mod judge;
pub mod memory;
pub mod outcomes;
pub mod patterns;
pub mod record;
pub mod stats;

pub use memory::RepoMemory;
pub use record::{Direction, Hints, Learning, LearningKind, Scope};
