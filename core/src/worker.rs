//! Batch semantics shared by both workers.
//!
//! SQS FIFO hands a Lambda a batch in group order. If message 3 of a batch fails and we
//! let a later message of the *same* message group succeed, the retry of 3 would run after
//! it and break per-PR order. So after a failure every remaining message of that group is
//! reported failed too (`ReportBatchItemFailures`), and SQS redelivers them, in order,
//! after the failed one. Messages of other groups (other PRs) go on: one PR's poison
//! message must not drag unrelated PRs' jobs towards the dead-letter queue.

use crate::job::Job;
use crate::ports::{Attempt, JobError, JobHandler};
use std::collections::HashSet;
use std::time::{Duration, Instant};
use tracing::Instrument;

/// One queue message as the worker sees it.
#[derive(Debug, Clone)]
pub struct BatchItem<'a> {
    pub message_id: &'a str,
    /// The FIFO message group (`owner/repo#number`), from the SQS record's attributes.
    /// `None` when the record does not say: the group is then read from the job itself,
    /// and a body that is not a job shares a group with nothing.
    pub group_id: Option<&'a str>,
    pub body: &'a str,
    /// Which delivery this is, when the queue says (see [`Attempt`]).
    pub attempt: Option<Attempt>,
}

/// Run `items` through `handler` in order; return the ids of the messages to retry.
pub async fn process_fifo_batch(items: &[BatchItem<'_>], handler: &dyn JobHandler) -> Vec<String> {
    let mut failed = Vec::new();
    let mut failed_groups: HashSet<String> = HashSet::new();
    for item in items {
        let group = group_of(item);
        if let Some(group) = &group
            && failed_groups.contains(group)
        {
            tracing::warn!(
                message_id = item.message_id,
                group = %group,
                "skipped to keep FIFO order after an earlier failure in its group"
            );
            failed.push(item.message_id.to_string());
            continue;
        }
        if let Err(err) = process_one(item, handler).await {
            if !err.is_retried() {
                // Deleted, not dead-lettered: nothing a retry or a redrive could change.
                tracing::error!(message_id = item.message_id, error = %err, body = %preview(item.body), "job failed permanently; not retried");
                continue;
            }
            tracing::error!(message_id = item.message_id, error = %err, "job failed; it will be retried");
            failed.push(item.message_id.to_string());
            if let Some(group) = group {
                failed_groups.insert(group);
            }
        }
    }
    failed
}

/// The message group of an item: the record's own attribute, else the job's.
fn group_of(item: &BatchItem<'_>) -> Option<String> {
    match item.group_id {
        Some(group) => Some(group.to_string()),
        None => serde_json::from_str::<Job>(item.body)
            .ok()
            .map(|job| job.group_id()),
    }
}

/// Decode and handle one message, inside the job's span (see [`job_span`]).
pub async fn process_one(item: &BatchItem<'_>, handler: &dyn JobHandler) -> Result<(), JobError> {
    let job: Job = match serde_json::from_str(item.body) {
        Ok(job) => job,
        Err(err) => {
            crate::metrics::job_done("unknown", false, Duration::ZERO);
            return Err(JobError::Permanent(format!(
                "message {} is not a job: {err}",
                item.message_id
            )));
        }
    };
    let kind = job.kind();
    let span = job_span(&job, item.message_id, item.attempt);
    async move {
        tracing::info!(job = %job.describe(), "handling job");
        let started = Instant::now();
        let result = handler.handle_attempt(job, item.attempt).await;
        crate::metrics::job_done(kind, result.is_ok(), started.elapsed());
        result
    }
    .instrument(span)
    .await
}

/// The span every log line of a job carries: which delivery, repository, PR, kind of job
/// and queue message it is, so one job's lines can be found together (CloudWatch Logs
/// Insights: `filter span.delivery_id = "…"`).
pub fn job_span(job: &Job, message_id: &str, attempt: Option<Attempt>) -> tracing::Span {
    let (repo, pr) = job.subject();
    tracing::info_span!(
        "job",
        delivery_id = job.delivery_id(),
        repo = repo.as_deref(),
        pr,
        kind = job.kind(),
        message_id,
        attempt = attempt.map(|a| a.number),
    )
}

/// The start of a message body, for the log line of a message that is deleted unhandled.
fn preview(body: &str) -> &str {
    let end = body
        .char_indices()
        .map(|(i, _)| i)
        .find(|&i| i >= 2000)
        .unwrap_or(body.len());
    &body[..end]
}
