//! Queue adapters behind core's [`JobQueue`](parley_core::ports::JobQueue) and
//! [`PollingQueue`](parley_core::ports::PollingQueue) ports.
//!
//! - [`sqs::SqsQueue`]: the two SQS FIFO queues of the deployed stack. Lambda's event source
//!   mapping does the polling in production; the polling half exists for the contract tests
//!   and for running the local runtime against real or emulated SQS.
//! - [`sqlite::SqliteQueue`]: a durable FIFO queue in a SQLite file for `parley serve`. It
//!   copies the SQS FIFO rules a worker can observe (group order, visibility timeout,
//!   receive counts, redrive to a dead-letter table, five-minute dedup window, receipts that
//!   go stale) so that code which is correct locally is correct on AWS.
//!
//! Both pass one contract suite, `tests/contract.rs`.

#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod sqs;
