//! The conversation worker's job handler.
//!
//! Today it records bookkeeping and acknowledges conversation jobs; answering mentions and
//! holding threads about findings is issue 4 and lands here.

use crate::bookkeeping;
use crate::job::Job;
use crate::ports::{JobError, JobHandler};
use crate::services::Services;
use async_trait::async_trait;

pub struct ConversationHandler {
    services: Services,
}

impl ConversationHandler {
    pub fn new(services: Services) -> Self {
        ConversationHandler { services }
    }
}

#[async_trait]
impl JobHandler for ConversationHandler {
    async fn handle(&self, job: Job) -> Result<(), JobError> {
        match job {
            Job::Bookkeeping(job) => bookkeeping::record(self.services.store.as_ref(), &job).await,
            Job::Conversation(job) => {
                tracing::info!(
                    repo = %job.repo.full_name(),
                    number = job.number,
                    comment_id = job.comment.id,
                    author = %job.comment.author.login,
                    mentions_bot = job.mentions_bot,
                    "conversation job received; answering is not built yet"
                );
                Ok(())
            }
            Job::Review(job) => Err(JobError::Permanent(format!(
                "review job for {}#{} reached the conversation worker",
                job.repo.full_name(),
                job.number
            ))),
        }
    }
}
