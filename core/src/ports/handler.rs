//! The port the workers drive: given a decoded job, do the work.

use crate::job::Job;
use async_trait::async_trait;

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Worth retrying: the queue redelivers, and dead-letters after too many attempts.
    #[error("transient failure: {0}")]
    Transient(String),
    /// Retrying the same message cannot help (it is not a job, its PR is gone, the model
    /// cannot produce the output even after the corrective retry): the queue does not
    /// retry it. The handler has already said so where people look (a PR comment, the
    /// check run); the message is logged with the error and deleted.
    #[error("permanent failure: {0}")]
    Permanent(String),
    /// Parley's own settings are wrong (missing or refused credentials, an unknown model):
    /// retried and then dead-lettered, so the jobs can be redriven once the settings are
    /// fixed, instead of lost.
    #[error("misconfigured: {0}")]
    Misconfigured(String),
}

impl JobError {
    /// Whether the queue should deliver the message again.
    pub fn is_retried(&self) -> bool {
        !matches!(self, JobError::Permanent(_))
    }
}

#[async_trait]
pub trait JobHandler: Send + Sync {
    async fn handle(&self, job: Job) -> Result<(), JobError>;
}
