//! The Lambda side of a worker: an SQS event in, a partial-batch response out.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use parley_core::ports::JobHandler;
use parley_core::worker::{BatchItem, process_fifo_batch};

/// Run a batch through `handler` and report which messages SQS must redeliver.
///
/// A record without a message id cannot be reported; with `ReportBatchItemFailures` an
/// unreportable failure would be deleted, so such a record fails the whole invocation
/// instead (SQS then retries the batch).
pub async fn respond(
    event: SqsEvent,
    handler: &dyn JobHandler,
) -> Result<SqsBatchResponse, String> {
    let mut items = Vec::with_capacity(event.records.len());
    for record in &event.records {
        let Some(message_id) = record.message_id.as_deref() else {
            return Err("SQS record without a message id".to_string());
        };
        items.push(BatchItem {
            message_id,
            body: record.body.as_deref().unwrap_or(""),
        });
    }
    let failed = process_fifo_batch(&items, handler).await;
    let mut response = SqsBatchResponse::default();
    for id in failed {
        response.add_failure(id);
    }
    Ok(response)
}
