//! A local worker: poll the durable queue, run the job, acknowledge.
//!
//! It mirrors the Lambda event source mapping: a failed job is not retried at once but
//! becomes visible again after `retry_delay`, and the queue dead-letters it after too many
//! receives. On shutdown it stops taking new messages and finishes the one in hand.

use parley_core::ports::{Attempt, JobHandler, PollingQueue, QueueName, ReceivedMessage};
use parley_core::worker::{BatchItem, process_one};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone)]
pub struct PollerOptions {
    pub workers_per_queue: usize,
    /// How long to wait when the queue is empty.
    pub idle_wait: Duration,
    /// How long a received message stays hidden; a worker that dies mid-job loses its
    /// message for this long, then it is redelivered.
    pub visibility: Duration,
    /// Delay before a failed job is retried.
    pub retry_delay: Duration,
    /// Deliveries before the queue dead-letters a message, so the handlers know which
    /// attempt is the last. `start` sets it from `PARLEY_MAX_RECEIVE`, the count the
    /// SQLite queue itself uses.
    pub max_receive_count: u32,
}

impl Default for PollerOptions {
    fn default() -> Self {
        PollerOptions {
            workers_per_queue: 2,
            idle_wait: Duration::from_millis(250),
            visibility: Duration::from_secs(15 * 60),
            retry_delay: Duration::from_secs(10),
            max_receive_count: 5,
        }
    }
}

pub async fn run(
    queue: Arc<dyn PollingQueue>,
    name: QueueName,
    handler: Arc<dyn JobHandler>,
    options: PollerOptions,
    shutdown: CancellationToken,
    worker: usize,
) -> anyhow::Result<()> {
    let queue_name = name.as_str();
    while !shutdown.is_cancelled() {
        let messages = match queue.receive(name, 1, options.visibility).await {
            Ok(messages) => messages,
            Err(err) => {
                tracing::error!(queue = queue_name, worker, error = %err, "receive failed; retrying");
                Vec::new()
            }
        };
        if messages.is_empty() {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(options.idle_wait) => continue,
            }
        }
        for message in messages {
            handle(&queue, name, handler.as_ref(), &options, message).await;
        }
    }
    tracing::info!(queue = queue_name, worker, "worker drained and stopped");
    Ok(())
}

async fn handle(
    queue: &Arc<dyn PollingQueue>,
    name: QueueName,
    handler: &dyn JobHandler,
    options: &PollerOptions,
    message: ReceivedMessage,
) {
    let item = BatchItem {
        message_id: &message.message_id,
        group_id: None,
        body: &message.body,
        attempt: Some(Attempt {
            number: message.receive_count,
            of: options.max_receive_count,
        }),
    };
    match process_one(&item, handler).await {
        Ok(()) => {
            if let Err(err) = queue.ack(name, &message.receipt).await {
                tracing::error!(message_id = %message.message_id, error = %err, "ack failed; the job may run again");
            }
        }
        Err(err) if !err.is_retried() => {
            tracing::error!(
                message_id = %message.message_id,
                error = %err,
                "job failed permanently; not retried"
            );
            if let Err(err) = queue.ack(name, &message.receipt).await {
                tracing::error!(message_id = %message.message_id, error = %err, "ack failed; the job may run again");
            }
        }
        Err(err) => {
            tracing::error!(
                message_id = %message.message_id,
                attempt = message.receive_count,
                error = %err,
                "job failed; it will be retried, then dead-lettered"
            );
            // Retry later without holding up this worker; if the process stops first the
            // visibility timeout brings the message back anyway.
            let queue = queue.clone();
            let delay = options.retry_delay;
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                if let Err(err) = queue.nack(name, &message.receipt).await {
                    tracing::warn!(message_id = %message.message_id, error = %err, "could not release a failed message early");
                }
            });
        }
    }
}
