//! What can stop a conversation turn, split the way the queue needs it: worth a retry, or
//! not.

use crate::ports::github::GitHubError;
use crate::ports::llm::LlmError;
use crate::ports::{JobError, QueueError, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum ConversationError {
    #[error("GitHub: {0}")]
    GitHub(#[from] GitHubError),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("LLM: {0}")]
    Llm(#[from] LlmError),
    #[error("queue: {0}")]
    Queue(#[from] QueueError),
    /// The job names no installation, so there is no token to act with.
    #[error("job has no installation id")]
    NoInstallation,
}

impl ConversationError {
    /// Transient failures go back to the queue for another attempt, and so do Parley's own
    /// misconfigurations (then to the DLQ, for a redrive once fixed); the rest cannot
    /// succeed on a retry and are not retried.
    pub fn is_transient(&self) -> bool {
        match self {
            ConversationError::GitHub(err) => err.is_transient(),
            ConversationError::Store(err) => matches!(err, StoreError::Unavailable(_)),
            ConversationError::Llm(err) => err.is_transient(),
            ConversationError::Queue(err) => matches!(err, QueueError::Unavailable(_)),
            ConversationError::NoInstallation => false,
        }
    }

    /// Parley's own settings are at fault: the job waits in the dead-letter queue for an
    /// operator to fix them and redrive it.
    pub fn is_config(&self) -> bool {
        match self {
            ConversationError::GitHub(e) => e.is_config(),
            ConversationError::Store(e) => matches!(e, StoreError::Config(_)),
            ConversationError::Llm(e) => e.is_config(),
            ConversationError::Queue(e) => matches!(e, QueueError::Config(_)),
            ConversationError::NoInstallation => false,
        }
    }
}

impl From<ConversationError> for JobError {
    fn from(err: ConversationError) -> Self {
        JobError::classify(&err, err.is_transient(), err.is_config())
    }
}
