//! Reading the repository under review: a snapshot of its files at the reviewed head
//! (GitHub's tarball, or a local working tree) and a tree-sitter index of it, behind
//! core's [`Codebase`](parley_core::ports::code::Codebase) port. The worker Lambdas and
//! `parley` link it; the webhook does not (no grammars in its bootstrap).

pub mod cache;
pub mod index;
pub mod search;
pub mod snapshot;
pub mod source;
mod words;

pub use cache::ArchiveCache;
pub use index::CodeIndex;
pub use snapshot::{Limits, Snapshot, SnapshotError};
pub use source::{GitHubCode, LastOpened};
