//! Why a review job failed, and whether its queue should try it again.

use super::publish;
use crate::ports::github::GitHubError;
use crate::ports::llm::LlmError;
use crate::ports::{JobError, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("the job names no installation, so Parley cannot act on the repository")]
    NoInstallation,
    #[error("GitHub: {0}")]
    GitHub(#[from] GitHubError),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("every specialist pass failed; first error: {0}")]
    AllPassesFailed(LlmError),
}

impl From<publish::RecordError> for ReviewError {
    fn from(err: publish::RecordError) -> Self {
        match err {
            publish::RecordError::GitHub(e) => ReviewError::GitHub(e),
            publish::RecordError::Store(e) => ReviewError::Store(e),
        }
    }
}

impl ReviewError {
    /// What failed, for public text (check runs, PR notes): never the raw error.
    pub fn public_reason(&self) -> &'static str {
        match self {
            ReviewError::NoInstallation => "the event named no App installation",
            ReviewError::GitHub(e) => e.public_reason(),
            ReviewError::Store(_) => "Parley's storage was unavailable",
            ReviewError::AllPassesFailed(e) => e.public_reason(),
        }
    }

    pub(super) fn is_transient(&self) -> bool {
        match self {
            ReviewError::NoInstallation => false,
            ReviewError::GitHub(e) => e.is_transient(),
            ReviewError::Store(e) => matches!(e, StoreError::Unavailable(_)),
            ReviewError::AllPassesFailed(e) => e.is_transient(),
        }
    }
}

impl ReviewError {
    pub(super) fn is_config(&self) -> bool {
        match self {
            ReviewError::NoInstallation => false,
            ReviewError::GitHub(e) => e.is_config(),
            ReviewError::Store(e) => matches!(e, StoreError::Config(_)),
            ReviewError::AllPassesFailed(e) => e.is_config(),
        }
    }
}

impl From<ReviewError> for JobError {
    fn from(err: ReviewError) -> Self {
        JobError::classify(&err, err.is_transient(), err.is_config())
    }
}
