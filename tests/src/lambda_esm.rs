//! The SQS event source mapping, played by the test the way AWS documents it for a FIFO
//! queue with `ReportBatchItemFailures` ("Using Lambda with Amazon SQS"):
//!
//! 1. receive up to the mapping's batch size, with the queue's own visibility timeout;
//! 2. invoke the function synchronously with an `SQSEvent` whose records carry what the
//!    real mapping sets (`messageId`, `receiptHandle`, `body`, `md5OfBody`, the system
//!    attributes `ApproximateReceiveCount`, `SentTimestamp`, `SenderId`,
//!    `ApproximateFirstReceiveTimestamp`, `MessageGroupId`, `MessageDeduplicationId`,
//!    `SequenceNumber`, the message attributes, `eventSource`, `eventSourceARN`,
//!    `awsRegion`);
//! 3. on a response, delete every record not listed in `batchItemFailures`; a listed
//!    identifier that is empty or not in the batch fails the whole batch (nothing is
//!    deleted); on a function error or timeout nothing is deleted;
//! 4. what was not deleted comes back after the visibility timeout. The test does not
//!    wait 18 or 30 minutes for that: [`EventSourceMapping::expire`] sets the visibility
//!    of those messages to 0 (`ChangeMessageVisibility`), which is what the timeout
//!    running out does.
//!
//! Dead-lettering is SQS's part, not the mapping's: moto applies the queue's redrive
//! policy on receive, like SQS (a message received `maxReceiveCount` times is moved to
//! the dead-letter queue instead of being delivered again), so the driver does nothing
//! for it.

use crate::lambda_emulator::{LambdaFunction, Outcome};
use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage, SqsMessageAttribute};
use aws_sdk_sqs::types::{
    DeleteMessageBatchRequestEntry, MessageSystemAttributeName, QueueAttributeName,
};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;

/// One message as the function received it.
#[derive(Debug, Clone)]
pub struct Received {
    pub message_id: String,
    pub receipt_handle: String,
    pub receive_count: u32,
    pub group: String,
    pub body: String,
}

/// What one poll did.
#[derive(Debug, Clone)]
pub struct Poll {
    pub received: Vec<Received>,
    /// `None` when nothing was received (no invocation).
    pub outcome: Option<Outcome>,
    /// Message ids left on the queue for a retry.
    pub failed: Vec<String>,
}

pub struct EventSourceMapping {
    /// SQS under the function's role: what the mapping itself calls (receive, delete,
    /// the queue's attributes), as Lambda's mapping does with the execution role.
    sqs: aws_sdk_sqs::Client,
    /// SQS as the test: what stands in for time passing (a visibility timeout running out).
    clock: aws_sdk_sqs::Client,
    queue_url: String,
    queue_arn: String,
    batch_size: i32,
    function: Arc<LambdaFunction>,
    region: String,
}

impl EventSourceMapping {
    pub async fn new(
        sqs: aws_sdk_sqs::Client,
        clock: aws_sdk_sqs::Client,
        queue_url: &str,
        batch_size: i32,
        function: Arc<LambdaFunction>,
    ) -> EventSourceMapping {
        let attributes = sqs
            .get_queue_attributes()
            .queue_url(queue_url)
            .attribute_names(QueueAttributeName::QueueArn)
            .send()
            .await
            .expect("the queue's attributes")
            .attributes
            .unwrap_or_default();
        let queue_arn = attributes
            .get(&QueueAttributeName::QueueArn)
            .cloned()
            .expect("a queue has an ARN");
        EventSourceMapping {
            sqs,
            clock,
            queue_url: queue_url.to_string(),
            region: queue_arn
                .split(':')
                .nth(3)
                .unwrap_or("us-east-1")
                .to_string(),
            queue_arn,
            batch_size,
            function,
        }
    }

    pub fn queue_url(&self) -> &str {
        &self.queue_url
    }

    /// One receive, invocation and delete.
    pub async fn poll(&self) -> Poll {
        let messages = self
            .sqs
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(self.batch_size)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .message_attribute_names("All")
            .send()
            .await
            .expect("receive from the queue")
            .messages
            .unwrap_or_default();
        if messages.is_empty() {
            return Poll {
                received: Vec::new(),
                outcome: None,
                failed: Vec::new(),
            };
        }
        let records: Vec<SqsMessage> = messages.iter().map(|m| self.record(m)).collect();
        let received: Vec<Received> = records.iter().map(received).collect();
        let mut event = SqsEvent::default();
        event.records = records;
        let event = serde_json::to_value(&event).expect("encode the SQS event");
        let outcome = self.function.invoke(&event).await;

        let ids: HashSet<&str> = received.iter().map(|r| r.message_id.as_str()).collect();
        let failed: Vec<String> = match &outcome {
            Outcome::Response(response) => match batch_item_failures(response) {
                Some(failures) if failures.iter().all(|id| ids.contains(id.as_str())) => failures,
                // An identifier Lambda cannot match fails the whole batch.
                _ => ids.iter().map(|id| id.to_string()).collect(),
            },
            _ => ids.iter().map(|id| id.to_string()).collect(),
        };
        let done: Vec<&Received> = received
            .iter()
            .filter(|r| !failed.contains(&r.message_id))
            .collect();
        if !done.is_empty() {
            let entries = done
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    DeleteMessageBatchRequestEntry::builder()
                        .id(format!("m{i}"))
                        .receipt_handle(&r.receipt_handle)
                        .build()
                        .expect("delete entry")
                })
                .collect();
            let deleted = self
                .sqs
                .delete_message_batch()
                .queue_url(&self.queue_url)
                .set_entries(Some(entries))
                .send()
                .await
                .expect("delete the processed messages");
            assert!(
                deleted.failed.is_empty(),
                "deleting processed messages failed: {:?}",
                deleted.failed
            );
        }
        Poll {
            received,
            outcome: Some(outcome),
            failed,
        }
    }

    /// Let the visibility timeout of the messages `poll` left on the queue run out now.
    pub async fn expire(&self, poll: &Poll) {
        for message in poll
            .received
            .iter()
            .filter(|r| poll.failed.contains(&r.message_id))
        {
            self.clock
                .change_message_visibility()
                .queue_url(&self.queue_url)
                .receipt_handle(&message.receipt_handle)
                .visibility_timeout(0)
                .send()
                .await
                .expect("change the message's visibility");
        }
    }

    /// Poll until a receive finds nothing, expiring what each poll left behind, at most
    /// `max_polls` times. Returns every poll that received something.
    pub async fn drain(&self, max_polls: usize) -> Vec<Poll> {
        let mut polls = Vec::new();
        for _ in 0..max_polls {
            let poll = self.poll().await;
            if poll.received.is_empty() {
                return polls;
            }
            self.expire(&poll).await;
            polls.push(poll);
        }
        panic!(
            "{} still had messages after {max_polls} polls: {polls:#?}",
            self.queue_url
        );
    }

    /// The record the mapping builds for one received message.
    fn record(&self, message: &aws_sdk_sqs::types::Message) -> SqsMessage {
        let mut record = SqsMessage::default();
        record.message_id = message.message_id.clone();
        record.receipt_handle = message.receipt_handle.clone();
        record.body = message.body.clone();
        record.md5_of_body = message.md5_of_body.clone();
        record.md5_of_message_attributes = message.md5_of_message_attributes.clone();
        record.attributes = message
            .attributes
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|(name, value)| (name.as_str().to_string(), value))
            .collect();
        record.message_attributes = message
            .message_attributes
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|(name, value)| {
                let mut attribute = SqsMessageAttribute::default();
                attribute.string_value = value.string_value;
                attribute.data_type = Some(value.data_type);
                (name, attribute)
            })
            .collect();
        record.event_source = Some("aws:sqs".to_string());
        record.event_source_arn = Some(self.queue_arn.clone());
        record.aws_region = Some(self.region.clone());
        record
    }
}

fn received(record: &SqsMessage) -> Received {
    let attribute = |name: &str| record.attributes.get(name).cloned().unwrap_or_default();
    Received {
        message_id: record.message_id.clone().unwrap_or_default(),
        receipt_handle: record.receipt_handle.clone().unwrap_or_default(),
        receive_count: attribute("ApproximateReceiveCount").parse().unwrap_or(0),
        group: attribute("MessageGroupId"),
        body: record.body.clone().unwrap_or_default(),
    }
}

/// The ids in a `{"batchItemFailures": [{"itemIdentifier": …}]}` response; `None` when
/// an entry has no usable identifier. No response, or no list, means all succeeded.
fn batch_item_failures(response: &Value) -> Option<Vec<String>> {
    let Some(failures) = response.get("batchItemFailures").and_then(Value::as_array) else {
        return Some(Vec::new());
    };
    failures
        .iter()
        .map(|failure| {
            failure["itemIdentifier"]
                .as_str()
                .filter(|id| !id.is_empty())
                .map(str::to_string)
        })
        .collect()
}
