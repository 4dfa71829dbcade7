//! The queue port. Three FIFO queues: conversations and reviews, grouped by PR so work on
//! one PR is serialised while different PRs run in parallel, and embeddings, grouped by
//! repository (see [`crate::embedding`]).

use async_trait::async_trait;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("queue backend unavailable: {0}")]
    Unavailable(String),
    #[error("queue misconfigured: {0}")]
    Config(String),
    /// The receipt no longer refers to an in-flight message (it timed out and was
    /// redelivered, or was already acknowledged).
    #[error("stale receipt: {0}")]
    StaleReceipt(String),
}

/// Which of the work queues a job goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueName {
    Conversation,
    Review,
    /// Embedding documents after a review is published: its own queue, so a slow or
    /// failing embeddings provider never holds up a review or a reply.
    Embedding,
}

impl QueueName {
    pub const ALL: [QueueName; 3] = [
        QueueName::Conversation,
        QueueName::Review,
        QueueName::Embedding,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            QueueName::Conversation => "conversation",
            QueueName::Review => "review",
            QueueName::Embedding => "embedding",
        }
    }
}

/// A message to enqueue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingMessage {
    pub queue: QueueName,
    /// FIFO group: messages of one group are delivered one at a time, in order.
    pub group_id: String,
    /// A second send with the same id (within the dedup window) is dropped by the queue.
    pub dedup_id: String,
    pub body: String,
}

/// A message handed to a consumer. It stays invisible to other consumers until `ack`ed,
/// `nack`ed or its visibility timeout passes; then it is delivered again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedMessage {
    pub message_id: String,
    /// Opaque handle for `ack` / `nack`.
    pub receipt: String,
    pub group_id: String,
    pub body: String,
    /// How many times this message has been received, this time included.
    pub receive_count: u32,
}

/// A message that exhausted its attempts, as an operator sees it (`parley dlq`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    pub message_id: String,
    /// The FIFO group it was sent with (`owner/repo#pr`).
    pub group_id: String,
    pub body: String,
    /// How often it was received, when the queue says.
    pub receive_count: Option<u32>,
}

/// Producer side: what the webhook needs.
#[async_trait]
pub trait JobQueue: Send + Sync {
    async fn send(&self, message: OutgoingMessage) -> Result<(), QueueError>;
}

/// Consumer side: what a polling worker needs (the local runtime, and the contract tests
/// for SQS; in Lambda the event source mapping polls for us).
#[async_trait]
pub trait PollingQueue: JobQueue {
    /// Receive up to `max` messages, hiding them for `visibility`. Never returns a second
    /// message of a group while one of that group is in flight.
    async fn receive(
        &self,
        queue: QueueName,
        max: usize,
        visibility: Duration,
    ) -> Result<Vec<ReceivedMessage>, QueueError>;

    /// Done: delete the message.
    async fn ack(&self, queue: QueueName, receipt: &str) -> Result<(), QueueError>;

    /// Failed: make the message visible again at once (it is retried, and dead-lettered
    /// once it has been received too many times).
    async fn nack(&self, queue: QueueName, receipt: &str) -> Result<(), QueueError>;

    /// The bodies of the messages that exhausted their attempts, oldest first.
    async fn dead_letters(&self, queue: QueueName) -> Result<Vec<String>, QueueError> {
        Ok(self
            .list_dead_letters(queue)
            .await?
            .into_iter()
            .map(|letter| letter.body)
            .collect())
    }

    /// The messages that exhausted their attempts, oldest first; reading leaves them there.
    async fn list_dead_letters(&self, queue: QueueName) -> Result<Vec<DeadLetter>, QueueError>;

    /// Send the dead letter `message_id` back to `queue`, in its own group and at the end
    /// of it, with its attempts counted from zero, and remove it from the dead letters.
    /// `false` when there is no such dead letter (already redriven, or a wrong id).
    async fn redrive_dead_letter(
        &self,
        queue: QueueName,
        message_id: &str,
    ) -> Result<bool, QueueError>;
}
