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
    /// The failure an error becomes, from what the error knows of itself: a transient one
    /// is retried, a configuration one retried and then dead-lettered for a redrive, and
    /// the rest dropped.
    pub fn classify(
        error: &(impl std::fmt::Display + ?Sized),
        transient: bool,
        config: bool,
    ) -> Self {
        let message = error.to_string();
        if transient {
            JobError::Transient(message)
        } else if config {
            JobError::Misconfigured(message)
        } else {
            JobError::Permanent(message)
        }
    }

    /// Whether the queue should deliver the message again.
    pub fn is_retried(&self) -> bool {
        !matches!(self, JobError::Permanent(_))
    }
}

/// A GitHub failure a job ends on, as GitHub's error classifies itself.
impl From<crate::ports::github::GitHubError> for JobError {
    fn from(err: crate::ports::github::GitHubError) -> Self {
        JobError::classify(&err, err.is_transient(), err.is_config())
    }
}

/// Which delivery of its queue message a job is on. A handler whose failures people
/// wait on (a review: the PR shows "in progress") says so on the last one, because after
/// it the message goes to the dead-letter queue and nothing else will.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    /// 1 for the first delivery (SQS `ApproximateReceiveCount`, the SQLite queue's count).
    pub number: u32,
    /// Deliveries before the message is dead-lettered (the queue's `maxReceiveCount`).
    pub of: u32,
}

impl Attempt {
    /// `None` when the queue did not say how often the message was received: then no
    /// attempt is taken for the last (a job never says "giving up" and then runs again).
    pub fn from_count(received: Option<u32>, max_receive_count: u32) -> Option<Attempt> {
        received.map(|number| Attempt {
            number,
            of: max_receive_count,
        })
    }

    pub fn is_last(&self) -> bool {
        self.number >= self.of
    }
}

#[async_trait]
pub trait JobHandler: Send + Sync {
    async fn handle(&self, job: Job) -> Result<(), JobError>;

    /// [`handle`](JobHandler::handle), knowing which delivery this is (`None`: unknown).
    /// The workers call this; handlers that treat the last attempt differently override
    /// it, and a router must forward it.
    async fn handle_attempt(&self, job: Job, attempt: Option<Attempt>) -> Result<(), JobError> {
        let _ = attempt;
        self.handle(job).await
    }
}

#[cfg(test)]
mod tests {
    use super::Attempt;

    #[test]
    fn the_last_attempt_is_the_queues_max_receive_count() {
        assert_eq!(Attempt::from_count(None, 5), None);
        let attempt = |n| Attempt::from_count(Some(n), 5).expect("counted");
        assert!(!attempt(1).is_last());
        assert!(!attempt(4).is_last());
        assert!(attempt(5).is_last());
        // A queue whose maxReceiveCount is higher than Parley was told still ends some
        // time: past the count Parley knows, every attempt says so (once per head anyway).
        assert!(attempt(6).is_last());
    }
}
