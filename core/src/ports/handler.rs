//! The port the workers drive: given a decoded job, do the work.

use crate::job::Job;
use async_trait::async_trait;

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Worth retrying: the queue redelivers, and dead-letters after too many attempts.
    #[error("transient failure: {0}")]
    Transient(String),
    /// Retrying cannot help (missing credentials, a job this worker cannot handle). The
    /// message still goes through the retry/DLQ path so nothing is silently dropped.
    #[error("permanent failure: {0}")]
    Permanent(String),
}

#[async_trait]
pub trait JobHandler: Send + Sync {
    async fn handle(&self, job: Job) -> Result<(), JobError>;
}
