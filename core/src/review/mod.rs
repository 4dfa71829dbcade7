//! The review worker's job handler. Reviewing is issue 5 and lands here; until then it
//! acknowledges review jobs so the pipeline can be exercised end to end.

use crate::job::Job;
use crate::ports::{JobError, JobHandler};
use crate::services::Services;
use async_trait::async_trait;

pub struct ReviewHandler {
    #[allow(dead_code)] // used once reviewing lands (issue 5)
    services: Services,
}

impl ReviewHandler {
    pub fn new(services: Services) -> Self {
        ReviewHandler { services }
    }
}

#[async_trait]
impl JobHandler for ReviewHandler {
    async fn handle(&self, job: Job) -> Result<(), JobError> {
        match job {
            Job::Review(job) => {
                tracing::info!(
                    repo = %job.repo.full_name(),
                    number = job.number,
                    trigger = ?job.trigger,
                    head_sha = %job.head_sha,
                    "review job received; reviewing is not built yet"
                );
                Ok(())
            }
            other => Err(JobError::Permanent(format!(
                "{} reached the review worker",
                other.describe()
            ))),
        }
    }
}
