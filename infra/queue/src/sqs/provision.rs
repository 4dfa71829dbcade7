//! Creating the queue pairs, for tests and local development against an emulator. The
//! deployed stack gets its queues from `template.yaml`; keep the two in step (FIFO, no
//! content-based dedup since every job carries its own dedup id, a redrive policy).

use super::errors::queue_error;
use super::urls::QueueUrls;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::QueueAttributeName;
use parley_core::ports::{QueueError, QueueName};

/// Queue names: up to 80 characters of `[A-Za-z0-9_-]`, then `.fifo`.
const MAX_QUEUE_NAME_LEN: usize = 80;
/// The longest name we derive from a prefix is `<prefix>-conversation-dlq.fifo`.
const LONGEST_SUFFIX: &str = "-conversation-dlq.fifo";
/// SQS's bounds for a redrive policy's `maxReceiveCount`.
const RECEIVE_COUNT_RANGE: std::ops::RangeInclusive<u32> = 1..=1000;
/// Dead letters wait for an operator, so keep them as long as SQS allows (14 days).
const DLQ_RETENTION_SECONDS: &str = "1209600";

/// Create `<prefix>-conversation.fifo`, `<prefix>-review.fifo` and
/// `<prefix>-embedding.fifo`, each with a dead-letter
/// queue `…-dlq.fifo` that takes a message once it has been received `max_receive_count`
/// times. Creating queues that already exist with the same attributes is a no-op, so this
/// is safe to call at every start of a local run.
pub async fn create_fifo_queues(
    client: &Client,
    prefix: &str,
    max_receive_count: u32,
) -> Result<QueueUrls, QueueError> {
    validate(prefix, max_receive_count)?;
    let (conversation, conversation_dlq) =
        create_pair(client, prefix, QueueName::Conversation, max_receive_count).await?;
    let (review, review_dlq) =
        create_pair(client, prefix, QueueName::Review, max_receive_count).await?;
    let (embedding, embedding_dlq) =
        create_pair(client, prefix, QueueName::Embedding, max_receive_count).await?;
    Ok(QueueUrls {
        conversation,
        review,
        embedding: Some(embedding),
        conversation_dlq: Some(conversation_dlq),
        review_dlq: Some(review_dlq),
        embedding_dlq: Some(embedding_dlq),
    })
}

fn validate(prefix: &str, max_receive_count: u32) -> Result<(), QueueError> {
    let valid_chars = prefix
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if prefix.is_empty() || !valid_chars || prefix.len() + LONGEST_SUFFIX.len() > MAX_QUEUE_NAME_LEN
    {
        return Err(QueueError::Config(format!(
            "queue prefix {prefix:?} must be 1 to {} characters of A-Z, a-z, 0-9, '-' and '_'",
            MAX_QUEUE_NAME_LEN - LONGEST_SUFFIX.len()
        )));
    }
    if !RECEIVE_COUNT_RANGE.contains(&max_receive_count) {
        return Err(QueueError::Config(format!(
            "max_receive_count {max_receive_count} is outside SQS's range {RECEIVE_COUNT_RANGE:?}"
        )));
    }
    Ok(())
}

/// The DLQ first: the work queue's redrive policy names it by ARN.
async fn create_pair(
    client: &Client,
    prefix: &str,
    queue: QueueName,
    max_receive_count: u32,
) -> Result<(String, String), QueueError> {
    let base = format!("{prefix}-{}", queue.as_str());
    let dlq_url = create_fifo(
        client,
        &format!("{base}-dlq.fifo"),
        &[(
            QueueAttributeName::MessageRetentionPeriod,
            DLQ_RETENTION_SECONDS.to_string(),
        )],
    )
    .await?;
    let dlq_arn = queue_arn(client, &dlq_url).await?;
    let redrive =
        serde_json::json!({ "deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receive_count });
    let url = create_fifo(
        client,
        &format!("{base}.fifo"),
        &[(QueueAttributeName::RedrivePolicy, redrive.to_string())],
    )
    .await?;
    tracing::info!(queue = %url, dead_letter_queue = %dlq_url, max_receive_count, "FIFO queue ready");
    Ok((url, dlq_url))
}

async fn create_fifo(
    client: &Client,
    name: &str,
    attributes: &[(QueueAttributeName, String)],
) -> Result<String, QueueError> {
    let mut request = client
        .create_queue()
        .queue_name(name)
        .attributes(QueueAttributeName::FifoQueue, "true")
        .attributes(QueueAttributeName::ContentBasedDeduplication, "false");
    for (key, value) in attributes {
        request = request.attributes(key.clone(), value);
    }
    let output = request
        .send()
        .await
        .map_err(|err| queue_error("CreateQueue", name, err))?;
    output
        .queue_url
        .ok_or_else(|| QueueError::Unavailable(format!("CreateQueue {name} returned no queue URL")))
}

async fn queue_arn(client: &Client, url: &str) -> Result<String, QueueError> {
    let output = client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|err| queue_error("GetQueueAttributes", url, err))?;
    output
        .attributes
        .and_then(|mut attributes| attributes.remove(&QueueAttributeName::QueueArn))
        .ok_or_else(|| {
            QueueError::Unavailable(format!("GetQueueAttributes {url} returned no QueueArn"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_prefixes_sqs_would_refuse() {
        assert!(validate("parley-dev_1", 5).is_ok());
        assert!(validate(&"p".repeat(MAX_QUEUE_NAME_LEN - LONGEST_SUFFIX.len()), 5).is_ok());
        for bad in [
            "",
            "has space",
            "dots.not.allowed",
            &"p".repeat(MAX_QUEUE_NAME_LEN),
        ] {
            assert!(
                matches!(validate(bad, 5), Err(QueueError::Config(_))),
                "{bad:?} accepted"
            );
        }
    }

    #[test]
    fn rejects_receive_counts_sqs_would_refuse() {
        assert!(matches!(validate("p", 0), Err(QueueError::Config(_))));
        assert!(matches!(validate("p", 1001), Err(QueueError::Config(_))));
        assert!(validate("p", 1000).is_ok());
    }
}
