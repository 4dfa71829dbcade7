//! Batch semantics shared by both workers.
//!
//! SQS FIFO hands a Lambda a batch in group order. If message 3 of a batch fails and we
//! let 4 and 5 succeed, a later retry of 3 would run after them and break per-PR order.
//! So after the first failure every remaining message is reported failed too
//! (`ReportBatchItemFailures`), and SQS redelivers them, in order, after the failed one.

use crate::job::Job;
use crate::ports::{JobError, JobHandler};

/// One queue message as the worker sees it.
#[derive(Debug, Clone)]
pub struct BatchItem<'a> {
    pub message_id: &'a str,
    pub body: &'a str,
}

/// Run `items` through `handler` in order; return the ids of the messages to retry.
pub async fn process_fifo_batch(items: &[BatchItem<'_>], handler: &dyn JobHandler) -> Vec<String> {
    let mut failed = Vec::new();
    for item in items {
        if !failed.is_empty() {
            tracing::warn!(
                message_id = item.message_id,
                "skipped to keep FIFO order after an earlier failure"
            );
            failed.push(item.message_id.to_string());
            continue;
        }
        if let Err(err) = process_one(item, handler).await {
            tracing::error!(message_id = item.message_id, error = %err, "job failed; it will be retried");
            failed.push(item.message_id.to_string());
        }
    }
    failed
}

/// Decode and handle one message.
pub async fn process_one(item: &BatchItem<'_>, handler: &dyn JobHandler) -> Result<(), JobError> {
    let job: Job = serde_json::from_str(item.body).map_err(|err| {
        JobError::Permanent(format!("message {} is not a job: {err}", item.message_id))
    })?;
    tracing::info!(message_id = item.message_id, delivery_id = job.delivery_id(), job = %job.describe(), "handling job");
    handler.handle(job).await
}
