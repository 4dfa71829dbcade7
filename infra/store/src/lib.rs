//! Store adapters for [`parley_core::ports::Store`].
//!
//! Two backends, one behaviour: [`dynamo::DynamoStore`] for Lambda and
//! [`sqlite::SqliteStore`] for `parley serve` on a laptop. Both pass the contract suite
//! in `tests/contract.rs`, so a behaviour seen locally is the behaviour seen in AWS.
//!
//! The rules both adapters share live here rather than in each adapter, because a
//! subtle difference between them (when a claim lapses, how findings are ordered) would
//! only show up in production:
//! - [`expiry`]: claim lapse time, rounded to DynamoDB's whole-second TTL.
//! - [`ordering`]: "oldest first" for findings and memory rules.
//! - [`corpus_rules`]: how a corpus document upsert merges, what one document may hold,
//!   and "newest first" for the retrieval candidate set.
//!
//! Both adapters implement [`parley_core::ports::CorpusStore`] too, in the same database
//! (SQLite: the `store_documents` table; DynamoDB: the Snippets table).

pub mod corpus_rules;
pub mod dynamo;
mod expiry;
mod ordering;
#[cfg(feature = "sqlite")]
pub mod sqlite;

pub use dynamo::{DynamoStore, TableNames, create_tables};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
