//! The SQS FIFO adapter.
//!
//! In Lambda only [`JobQueue::send`] runs (the webhook); the event source mapping receives
//! and deletes for the workers. The [`PollingQueue`] half is here so the same contract suite
//! covers SQS, and so the local runtime can be pointed at SQS or an emulator.

mod errors;
mod fifo_id;
mod provision;
mod urls;

pub use fifo_id::sqs_safe_id;
pub use provision::create_fifo_queues;
pub use urls::{
    CONVERSATION_DLQ_URL, CONVERSATION_QUEUE_URL, EMBEDDING_DLQ_URL, EMBEDDING_QUEUE_URL,
    QueueUrls, REVIEW_DLQ_URL, REVIEW_QUEUE_URL,
};

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{
    ChangeMessageVisibilityBatchRequestEntry, Message, MessageAttributeValue,
    MessageSystemAttributeName,
};
use errors::queue_error;
use parley_core::ports::{
    DeadLetter, JobQueue, OutgoingMessage, PollingQueue, QueueError, QueueName, ReceivedMessage,
};
use std::time::Duration;

/// How long a send (and one attempt of it) may take before it fails: the webhook must
/// answer within GitHub's ten seconds and release its claim on the delivery when the send
/// failed, which a send hanging past the function's timeout would prevent (see the store's
/// `CALL_TIMEOUT`). Receives are left to the SDK: a long poll waits up to 20 s by design.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(3);
pub const SEND_ATTEMPT_TIMEOUT: Duration = Duration::from_millis(1500);

/// [`SEND_TIMEOUT`] and [`SEND_ATTEMPT_TIMEOUT`] as the SDK takes them.
pub fn send_timeouts() -> aws_sdk_sqs::config::timeout::TimeoutConfig {
    aws_sdk_sqs::config::timeout::TimeoutConfig::builder()
        .operation_timeout(SEND_TIMEOUT)
        .operation_attempt_timeout(SEND_ATTEMPT_TIMEOUT)
        .build()
}

/// Message attribute carrying the caller's group id when SQS needed a hashed one, so that
/// consumers see the group they sent (`owner/repo#pr`), not its hash.
const GROUP_ID_ATTRIBUTE: &str = "parley-group-id";

/// SQS refuses visibility timeouts above 12 hours.
const MAX_VISIBILITY_SECONDS: u64 = 43_200;

/// How long [`PollingQueue::list_dead_letters`] hides what it read before putting it back. Long
/// enough that its own paging never sees a message twice; it releases them explicitly.
const PEEK_VISIBILITY_SECONDS: i32 = 30;

/// A ceiling on one `dead_letters` read, so that an operator command stays quick and
/// bounded even when a DLQ has filled up.
const MAX_DEAD_LETTERS_READ: usize = 1_000;

/// SQS batch APIs take at most ten entries.
const SQS_BATCH_LIMIT: usize = 10;

pub struct SqsQueue {
    client: Client,
    urls: QueueUrls,
}

impl SqsQueue {
    pub fn new(client: Client, urls: QueueUrls) -> Self {
        Self { client, urls }
    }

    /// Queue URLs from the `PARLEY_*_URL` variables, the client from the SDK's default
    /// chain (credentials, region, and `AWS_ENDPOINT_URL` for an emulator). The URLs are read
    /// first so a misconfigured function fails at once, without waiting on credentials.
    pub async fn from_env() -> Result<Self, QueueError> {
        let urls = QueueUrls::from_env()?;
        let config = parley_aws::load(parley_aws::Overrides::default()).await;
        Ok(Self::new(Client::new(&config), urls))
    }

    pub fn urls(&self) -> &QueueUrls {
        &self.urls
    }

    /// One `ReceiveMessage` for one message. See [`PollingQueue::receive`] for why one.
    async fn receive_one(
        &self,
        url: &str,
        visibility_seconds: i32,
    ) -> Result<Option<ReceivedMessage>, QueueError> {
        let output = self
            .client
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(1)
            .wait_time_seconds(0)
            .visibility_timeout(visibility_seconds)
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .message_system_attribute_names(MessageSystemAttributeName::MessageGroupId)
            .message_attribute_names(GROUP_ID_ATTRIBUTE)
            .send()
            .await
            .map_err(|err| queue_error("ReceiveMessage", url, err))?;
        output
            .messages
            .unwrap_or_default()
            .into_iter()
            .next()
            .map(|m| received(url, m))
            .transpose()
    }

    /// Make messages read by `dead_letters` visible again; if this fails they come back on
    /// their own after [`PEEK_VISIBILITY_SECONDS`].
    async fn release(&self, url: &str, receipts: &[String]) {
        for (chunk_index, chunk) in receipts.chunks(SQS_BATCH_LIMIT).enumerate() {
            let entries = chunk.iter().enumerate().filter_map(|(i, receipt)| {
                ChangeMessageVisibilityBatchRequestEntry::builder()
                    .id(format!("m{}", chunk_index * SQS_BATCH_LIMIT + i))
                    .receipt_handle(receipt)
                    .visibility_timeout(0)
                    .build()
                    .ok()
            });
            let result = self
                .client
                .change_message_visibility_batch()
                .queue_url(url)
                .set_entries(Some(entries.collect()))
                .send()
                .await;
            match result {
                Ok(output) if output.failed.is_empty() => {}
                Ok(output) => tracing::warn!(
                    queue = url,
                    failed = output.failed.len(),
                    "some dead letters stay hidden until their visibility timeout passes"
                ),
                Err(err) => tracing::warn!(
                    queue = url,
                    error = %queue_error("ChangeMessageVisibilityBatch", url, err),
                    "dead letters stay hidden until their visibility timeout passes"
                ),
            }
        }
    }
}

#[async_trait]
impl JobQueue for SqsQueue {
    async fn send(&self, message: OutgoingMessage) -> Result<(), QueueError> {
        let url = self.urls.queue(message.queue)?;
        let group_id = sqs_safe_id(&message.group_id);
        let dedup_id = sqs_safe_id(&message.dedup_id);
        let mut request = self
            .client
            .send_message()
            .queue_url(url)
            .message_group_id(group_id.as_ref())
            .message_deduplication_id(dedup_id.as_ref())
            .message_body(message.body);
        if group_id != message.group_id {
            let original = MessageAttributeValue::builder()
                .data_type("String")
                .string_value(&message.group_id)
                .build()
                .map_err(|err| QueueError::Unavailable(format!("group id attribute: {err}")))?;
            request = request.message_attributes(GROUP_ID_ATTRIBUTE, original);
        }
        let output = request
            .customize()
            .config_override(
                aws_sdk_sqs::config::Builder::default().timeout_config(send_timeouts()),
            )
            .send()
            .await
            .map_err(|err| queue_error("SendMessage", url, err))?;
        tracing::debug!(
            queue = url,
            group_id = %message.group_id,
            dedup_id = %message.dedup_id,
            message_id = output.message_id.as_deref().unwrap_or_default(),
            "sent"
        );
        Ok(())
    }
}

#[async_trait]
impl PollingQueue for SqsQueue {
    /// One message per `ReceiveMessage` call. SQS FIFO fills a batch with as many messages of
    /// one group as it can (A1, A2 together), which would break the port's promise of one
    /// in-flight message per group; a single-message receive locks the group at once, so the
    /// next call moves on to the next group. Releasing the surplus of a batch instead would
    /// count a receive against each released message and dead-letter it early.
    async fn receive(
        &self,
        queue: QueueName,
        max: usize,
        visibility: Duration,
    ) -> Result<Vec<ReceivedMessage>, QueueError> {
        let url = self.urls.queue(queue)?;
        let visibility_seconds = visibility_seconds(visibility)?;
        let mut messages = Vec::new();
        while messages.len() < max {
            match self.receive_one(url, visibility_seconds).await {
                Ok(Some(message)) => messages.push(message),
                Ok(None) => break,
                // What is already received is in flight: hand it out rather than leave it
                // hidden for a whole visibility timeout.
                Err(err) if !messages.is_empty() => {
                    tracing::warn!(queue = url, error = %err, received = messages.len(), "receive cut short");
                    break;
                }
                Err(err) => return Err(err),
            }
        }
        Ok(messages)
    }

    async fn ack(&self, queue: QueueName, receipt: &str) -> Result<(), QueueError> {
        let url = self.urls.queue(queue)?;
        self.client
            .delete_message()
            .queue_url(url)
            .receipt_handle(receipt)
            .send()
            .await
            .map_err(|err| queue_error("DeleteMessage", url, err))?;
        Ok(())
    }

    async fn nack(&self, queue: QueueName, receipt: &str) -> Result<(), QueueError> {
        let url = self.urls.queue(queue)?;
        self.client
            .change_message_visibility()
            .queue_url(url)
            .receipt_handle(receipt)
            .visibility_timeout(0)
            .send()
            .await
            .map_err(|err| queue_error("ChangeMessageVisibility", url, err))?;
        Ok(())
    }

    /// Reads the DLQ by receiving its messages with a short visibility timeout and then
    /// making them visible again; SQS has no peek. Limits that come with it: each read counts
    /// as a receive on the dead letter (harmless, a DLQ has no redrive policy of its own), a
    /// concurrent reader may see fewer messages, and because FIFO locks a group while any of
    /// its messages is in flight, a group with more dead letters than one batch (10) shows
    /// only its first batch.
    async fn list_dead_letters(&self, queue: QueueName) -> Result<Vec<DeadLetter>, QueueError> {
        let url = self.urls.dead_letter_queue(queue)?;
        let (letters, outcome) = self.peek_dead_letters(url).await;
        let receipts: Vec<String> = letters.iter().map(|(_, r)| r.clone()).collect();
        self.release(url, &receipts).await;
        outcome.map(|()| letters.into_iter().map(|(letter, _)| letter).collect())
    }

    /// SQS's own redrive (`StartMessageMoveTask`) moves a whole DLQ, not one message, so
    /// this sends the message back itself: to the source queue, in its group, with a dedup
    /// id derived from its id (a redrive retried within SQS's five minutes is not sent
    /// twice), then deletes it from the DLQ.
    async fn redrive_dead_letter(
        &self,
        queue: QueueName,
        message_id: &str,
    ) -> Result<bool, QueueError> {
        let url = self.urls.dead_letter_queue(queue)?;
        let (mut letters, outcome) = self.peek_dead_letters(url).await;
        let position = letters
            .iter()
            .position(|(letter, _)| letter.message_id == message_id);
        let found = position.map(|at| letters.remove(at));
        let others: Vec<String> = letters.into_iter().map(|(_, r)| r).collect();
        self.release(url, &others).await;
        let Some((letter, receipt)) = found else {
            return outcome.map(|()| false);
        };
        let sent = self
            .send(OutgoingMessage {
                queue,
                group_id: letter.group_id.clone(),
                dedup_id: format!("redrive-{}", letter.message_id),
                body: letter.body,
            })
            .await;
        if let Err(err) = sent {
            self.release(url, std::slice::from_ref(&receipt)).await;
            return Err(err);
        }
        self.client
            .delete_message()
            .queue_url(url)
            .receipt_handle(&receipt)
            .send()
            .await
            .map_err(|err| queue_error("DeleteMessage", url, err))?;
        tracing::info!(queue = queue.as_str(), message_id, group_id = %letter.group_id, "dead letter redriven");
        Ok(true)
    }
}

impl SqsQueue {
    /// Every dead letter of the DLQ at `url` with its receipt, hidden for
    /// [`PEEK_VISIBILITY_SECONDS`]; the caller releases (or deletes) them. What was read
    /// before an error is returned with the error.
    async fn peek_dead_letters(
        &self,
        url: &str,
    ) -> (Vec<(DeadLetter, String)>, Result<(), QueueError>) {
        let mut letters = Vec::new();
        let mut outcome = Ok(());
        while letters.len() < MAX_DEAD_LETTERS_READ {
            let batch = self
                .client
                .receive_message()
                .queue_url(url)
                .max_number_of_messages(SQS_BATCH_LIMIT as i32)
                .wait_time_seconds(0)
                .visibility_timeout(PEEK_VISIBILITY_SECONDS)
                .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
                .message_system_attribute_names(MessageSystemAttributeName::MessageGroupId)
                .message_attribute_names(GROUP_ID_ATTRIBUTE)
                .send()
                .await
                .map_err(|err| queue_error("ReceiveMessage", url, err));
            let messages = match batch {
                Ok(output) => output.messages.unwrap_or_default(),
                Err(err) => {
                    outcome = Err(err);
                    break;
                }
            };
            if messages.is_empty() {
                break;
            }
            for message in messages {
                match received(url, message) {
                    Ok(m) => letters.push((
                        DeadLetter {
                            message_id: m.message_id,
                            group_id: m.group_id,
                            body: m.body,
                            receive_count: Some(m.receive_count),
                        },
                        m.receipt,
                    )),
                    Err(err) => {
                        tracing::warn!(queue = url, error = %err, "a dead letter SQS described incompletely is left out");
                    }
                }
            }
        }
        if letters.len() >= MAX_DEAD_LETTERS_READ {
            tracing::warn!(
                queue = url,
                limit = MAX_DEAD_LETTERS_READ,
                "dead-letter read stopped at its limit"
            );
        }
        (letters, outcome)
    }
}

/// SQS counts visibility in whole seconds; round up so a message is never hidden for less
/// than the caller asked.
fn visibility_seconds(visibility: Duration) -> Result<i32, QueueError> {
    let seconds = visibility.as_secs() + u64::from(visibility.subsec_nanos() > 0);
    if seconds > MAX_VISIBILITY_SECONDS {
        return Err(QueueError::Config(format!(
            "visibility timeout {visibility:?} exceeds SQS's maximum of {MAX_VISIBILITY_SECONDS} s"
        )));
    }
    // At most 43 200, so it fits.
    Ok(seconds as i32)
}

fn received(url: &str, message: Message) -> Result<ReceivedMessage, QueueError> {
    let missing = |what: &str| {
        QueueError::Unavailable(format!(
            "ReceiveMessage on {url} returned a message without {what}"
        ))
    };
    let system = message.attributes.unwrap_or_default();
    let receive_count = system
        .get(&MessageSystemAttributeName::ApproximateReceiveCount)
        .and_then(|count| count.parse::<u32>().ok())
        .ok_or_else(|| missing("a numeric ApproximateReceiveCount"))?;
    let original_group = message
        .message_attributes
        .unwrap_or_default()
        .remove(GROUP_ID_ATTRIBUTE)
        .and_then(|value| value.string_value);
    let group_id = original_group
        .or_else(|| {
            system
                .get(&MessageSystemAttributeName::MessageGroupId)
                .cloned()
        })
        .ok_or_else(|| missing("a MessageGroupId"))?;
    Ok(ReceivedMessage {
        message_id: message.message_id.ok_or_else(|| missing("a MessageId"))?,
        receipt: message
            .receipt_handle
            .ok_or_else(|| missing("a ReceiptHandle"))?,
        group_id,
        body: message.body.unwrap_or_default(),
        receive_count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reading_dead_letters_without_a_dlq_url_names_the_variable() {
        let config = aws_sdk_sqs::Config::builder()
            .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
            .build();
        let urls = QueueUrls {
            conversation: "http://unused/c.fifo".into(),
            review: "http://unused/r.fifo".into(),
            embedding: None,
            conversation_dlq: None,
            review_dlq: None,
            embedding_dlq: None,
        };
        let q = SqsQueue::new(Client::from_conf(config), urls);
        let err = q.dead_letters(QueueName::Review).await.unwrap_err();
        assert!(
            matches!(&err, QueueError::Config(m) if m.contains(REVIEW_DLQ_URL)),
            "{err}"
        );
    }

    #[test]
    fn visibility_rounds_up_to_whole_seconds() {
        assert_eq!(visibility_seconds(Duration::ZERO).unwrap(), 0);
        assert_eq!(visibility_seconds(Duration::from_millis(1)).unwrap(), 1);
        assert_eq!(visibility_seconds(Duration::from_millis(1500)).unwrap(), 2);
        assert_eq!(visibility_seconds(Duration::from_secs(30)).unwrap(), 30);
        assert_eq!(
            visibility_seconds(Duration::from_secs(MAX_VISIBILITY_SECONDS)).unwrap(),
            43_200
        );
        assert!(matches!(
            visibility_seconds(Duration::from_secs(MAX_VISIBILITY_SECONDS + 1)),
            Err(QueueError::Config(_))
        ));
    }
}
