//! The Lambda side of a worker: an SQS event in, a partial-batch response out.

use crate::clients::{process_env, services_from_env};
use crate::{Settings, build_adapters, telemetry};
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{Error, LambdaEvent, service_fn};
use parley_core::ports::{Attempt, JobHandler};
use parley_core::services::Services;
use parley_core::worker::{BatchItem, process_fifo_batch};
use std::sync::Arc;

/// The whole life of a worker Lambda: build the services once per container, then hand
/// every SQS batch to the handler `make` builds from them.
pub async fn run_worker<H, F>(make: F) -> Result<(), Error>
where
    H: JobHandler + 'static,
    F: FnOnce(Services) -> H,
{
    telemetry::init();
    crate::metrics::init();
    let settings = Settings::from_env()?;
    let adapters = build_adapters(&settings).await?;
    let services = services_from_env(&process_env(), &settings, &adapters).await?;
    let handler = Arc::new(make(services));
    let max_receive_count = settings.max_receive_count;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let handler = handler.clone();
        async move {
            let response = respond(event.payload, handler.as_ref(), max_receive_count).await;
            crate::metrics::flush();
            Ok::<_, Error>(response?)
        }
    }))
    .await
}

/// Run a batch through `handler` and report which messages SQS must redeliver.
///
/// A record without a message id cannot be reported; with `ReportBatchItemFailures` an
/// unreportable failure would be deleted, so such a record fails the whole invocation
/// instead (SQS then retries the batch).
///
/// `max_receive_count` is the queues' redrive `maxReceiveCount` (`PARLEY_MAX_RECEIVE`, set
/// from the same template parameter): with each record's `ApproximateReceiveCount` it
/// tells a handler when an attempt is the last before the dead-letter queue.
pub async fn respond(
    event: SqsEvent,
    handler: &dyn JobHandler,
    max_receive_count: u32,
) -> Result<SqsBatchResponse, String> {
    let mut items = Vec::with_capacity(event.records.len());
    for record in &event.records {
        let Some(message_id) = record.message_id.as_deref() else {
            return Err("SQS record without a message id".to_string());
        };
        items.push(BatchItem {
            message_id,
            group_id: record.attributes.get("MessageGroupId").map(String::as_str),
            body: record.body.as_deref().unwrap_or(""),
            attempt: Attempt::from_count(
                record
                    .attributes
                    .get("ApproximateReceiveCount")
                    .and_then(|count| count.parse().ok()),
                max_receive_count,
            ),
        });
    }
    let failed = process_fifo_batch(&items, handler).await;
    let mut response = SqsBatchResponse::default();
    for id in failed {
        response.add_failure(id);
    }
    Ok(response)
}
