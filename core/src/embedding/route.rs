//! One worker, two queues: the review worker also consumes the embedding queue.

use super::EmbeddingHandler;
use crate::job::Job;
use crate::ports::{Attempt, JobError, JobHandler};
use async_trait::async_trait;

/// Sends embedding jobs to an [`EmbeddingHandler`] and every other job to `inner`, so a
/// Lambda with two SQS event sources (its own queue and the embedding queue) needs no
/// second binary. Each event source invokes with batches from its own queue only, so
/// the FIFO batch rules are unchanged.
pub struct WithEmbedding<H> {
    inner: H,
    embedding: EmbeddingHandler,
}

impl<H: JobHandler> WithEmbedding<H> {
    pub fn new(inner: H, embedding: EmbeddingHandler) -> Self {
        Self { inner, embedding }
    }
}

#[async_trait]
impl<H: JobHandler> JobHandler for WithEmbedding<H> {
    async fn handle(&self, job: Job) -> Result<(), JobError> {
        match job {
            Job::Embed(_) => self.embedding.handle(job).await,
            other => self.inner.handle(other).await,
        }
    }

    async fn handle_attempt(&self, job: Job, attempt: Option<Attempt>) -> Result<(), JobError> {
        match job {
            Job::Embed(_) => self.embedding.handle_attempt(job, attempt).await,
            other => self.inner.handle_attempt(other, attempt).await,
        }
    }
}
