//! Where the queues are. URLs, not names: that is what every SQS call takes, and what the
//! SAM template exports, so no `GetQueueUrl` round trip happens on a cold start.

use parley_core::ports::{QueueError, QueueName};

pub const CONVERSATION_QUEUE_URL: &str = "PARLEY_CONVERSATION_QUEUE_URL";
pub const REVIEW_QUEUE_URL: &str = "PARLEY_REVIEW_QUEUE_URL";
pub const CONVERSATION_DLQ_URL: &str = "PARLEY_CONVERSATION_DLQ_URL";
pub const REVIEW_DLQ_URL: &str = "PARLEY_REVIEW_DLQ_URL";
pub const EMBEDDING_QUEUE_URL: &str = "PARLEY_EMBEDDING_QUEUE_URL";
pub const EMBEDDING_DLQ_URL: &str = "PARLEY_EMBEDDING_DLQ_URL";

/// The work queues and, where known, their dead-letter queues. The DLQs are optional
/// because only operators and tests read them; sending and receiving work without. The
/// embedding queue is optional too: the webhook never uses it, and without it the
/// workers only lose embeddings (retrieval stays lexical), so its absence is reported
/// when a message would go there rather than refusing to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueUrls {
    pub conversation: String,
    pub review: String,
    pub embedding: Option<String>,
    pub conversation_dlq: Option<String>,
    pub review_dlq: Option<String>,
    pub embedding_dlq: Option<String>,
}

impl QueueUrls {
    /// From `PARLEY_CONVERSATION_QUEUE_URL`, `PARLEY_REVIEW_QUEUE_URL` and the optional
    /// `PARLEY_EMBEDDING_QUEUE_URL`, `PARLEY_CONVERSATION_DLQ_URL`, `PARLEY_REVIEW_DLQ_URL`,
    /// `PARLEY_EMBEDDING_DLQ_URL`.
    pub fn from_env() -> Result<Self, QueueError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env) with any source of variables, so tests need not
    /// mutate the process environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, QueueError> {
        let optional = |name: &str| parley_core::env::value(lookup(name));
        let required = |name: &str| {
            optional(name).ok_or_else(|| QueueError::Config(format!("{name} is not set")))
        };
        Ok(Self {
            conversation: required(CONVERSATION_QUEUE_URL)?,
            review: required(REVIEW_QUEUE_URL)?,
            embedding: optional(EMBEDDING_QUEUE_URL),
            conversation_dlq: optional(CONVERSATION_DLQ_URL),
            review_dlq: optional(REVIEW_DLQ_URL),
            embedding_dlq: optional(EMBEDDING_DLQ_URL),
        })
    }

    /// The queue's URL, or a configuration error naming the variable that would set it.
    pub fn queue(&self, queue: QueueName) -> Result<&str, QueueError> {
        match queue {
            QueueName::Conversation => Ok(&self.conversation),
            QueueName::Review => Ok(&self.review),
            QueueName::Embedding => self.embedding.as_deref().ok_or_else(|| {
                QueueError::Config(format!(
                    "{EMBEDDING_QUEUE_URL} is not set, so embedding jobs cannot be queued"
                ))
            }),
        }
    }

    /// The DLQ URL, or a configuration error naming the variable that would have set it.
    pub fn dead_letter_queue(&self, queue: QueueName) -> Result<&str, QueueError> {
        let (url, variable) = match queue {
            QueueName::Conversation => (&self.conversation_dlq, CONVERSATION_DLQ_URL),
            QueueName::Review => (&self.review_dlq, REVIEW_DLQ_URL),
            QueueName::Embedding => (&self.embedding_dlq, EMBEDDING_DLQ_URL),
        };
        url.as_deref().ok_or_else(|| {
            QueueError::Config(format!(
                "{variable} is not set, so the {} dead letters cannot be read",
                queue.as_str()
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| vars.get(name).cloned()
    }

    #[test]
    fn reads_required_and_optional_urls() {
        let urls = QueueUrls::from_lookup(lookup(&[
            (CONVERSATION_QUEUE_URL, "http://q/c.fifo"),
            (REVIEW_QUEUE_URL, "http://q/r.fifo"),
            (REVIEW_DLQ_URL, "http://q/r-dlq.fifo"),
        ]))
        .unwrap();
        assert_eq!(
            urls.queue(QueueName::Conversation).unwrap(),
            "http://q/c.fifo"
        );
        assert_eq!(urls.queue(QueueName::Review).unwrap(), "http://q/r.fifo");
        let err = urls.queue(QueueName::Embedding).unwrap_err();
        assert!(
            matches!(&err, QueueError::Config(m) if m.contains(EMBEDDING_QUEUE_URL)),
            "{err}"
        );
        assert_eq!(
            urls.dead_letter_queue(QueueName::Review).unwrap(),
            "http://q/r-dlq.fifo"
        );
        let err = urls.dead_letter_queue(QueueName::Conversation).unwrap_err();
        assert!(err.to_string().contains(CONVERSATION_DLQ_URL), "{err}");
    }

    #[test]
    fn a_missing_or_blank_required_url_names_its_variable() {
        let err = QueueUrls::from_lookup(lookup(&[(CONVERSATION_QUEUE_URL, "http://q/c.fifo")]))
            .unwrap_err();
        assert!(
            matches!(&err, QueueError::Config(m) if m.contains(REVIEW_QUEUE_URL)),
            "{err}"
        );

        let err = QueueUrls::from_lookup(lookup(&[
            (CONVERSATION_QUEUE_URL, "  "),
            (REVIEW_QUEUE_URL, "http://q/r.fifo"),
        ]))
        .unwrap_err();
        assert!(
            matches!(&err, QueueError::Config(m) if m.contains(CONVERSATION_QUEUE_URL)),
            "{err}"
        );
    }

    #[test]
    fn the_embedding_queue_is_read_when_set() {
        let urls = QueueUrls::from_lookup(lookup(&[
            (CONVERSATION_QUEUE_URL, "http://q/c.fifo"),
            (REVIEW_QUEUE_URL, "http://q/r.fifo"),
            (EMBEDDING_QUEUE_URL, "http://q/e.fifo"),
            (EMBEDDING_DLQ_URL, "http://q/e-dlq.fifo"),
        ]))
        .unwrap();
        assert_eq!(urls.queue(QueueName::Embedding).unwrap(), "http://q/e.fifo");
        assert_eq!(
            urls.dead_letter_queue(QueueName::Embedding).unwrap(),
            "http://q/e-dlq.fifo"
        );
    }
}
