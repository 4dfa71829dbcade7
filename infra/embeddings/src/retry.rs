//! The embeddings adapters' verdict on each failure, run through the LLM client's retry loop
//! ([`parley_llm::RetryPolicy`]: exponential backoff with jitter, a provider's
//! `Retry-After` honoured up to a cap).
//!
//! As with the LLM, a timeout is not retried here: a server that did not answer in time
//! is likely stuck, and the embedding job's queue retry is the better second chance.

use parley_core::ports::EmbeddingError;
use parley_llm::RetryPolicy;
use parley_llm::retry::retry_while;
use std::future::Future;
use std::time::Duration;

/// How one attempt failed.
#[derive(Debug)]
pub enum Failure {
    /// Worth another attempt now (rate limit, overload, 5xx, connection trouble), with
    /// the provider's hint of how long to wait.
    Retry(EmbeddingError, Option<Duration>),
    /// Not worth another attempt (a timeout, bad settings, garbage).
    Stop(EmbeddingError),
}

impl Failure {
    fn into_error(self) -> EmbeddingError {
        match self {
            Failure::Retry(error, _) | Failure::Stop(error) => error,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Retry(error, _) | Failure::Stop(error) => error.fmt(f),
        }
    }
}

/// Run `attempt` until it succeeds, fails for good, or the policy's retries are spent:
/// the LLM client's loop, with the adapter's own verdict on each failure.
pub async fn with_retries<T, F, Fut>(
    policy: &RetryPolicy,
    provider: &'static str,
    model: &str,
    attempt: F,
) -> Result<T, EmbeddingError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    retry_while(
        policy,
        provider,
        model,
        attempt,
        |failure: &Failure| match failure {
            Failure::Retry(_, hint) => Some(*hint),
            Failure::Stop(_) => None,
        },
    )
    .await
    .map_err(Failure::into_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn fast() -> RetryPolicy {
        RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(20),
        }
    }

    #[tokio::test]
    async fn retries_then_gives_the_last_error() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = with_retries(&fast(), "t", "m", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(Failure::Retry(
                EmbeddingError::Unavailable("busy".into()),
                None,
            ))
        })
        .await;
        assert!(matches!(result, Err(EmbeddingError::Unavailable(_))));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn stops_at_once_on_a_final_failure_or_a_long_hint() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = with_retries(&fast(), "t", "m", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(Failure::Stop(EmbeddingError::BadResponse("junk".into())))
        })
        .await;
        assert!(matches!(result, Err(EmbeddingError::BadResponse(_))));
        assert_eq!(calls.load(Ordering::SeqCst), 1);

        let calls = AtomicU32::new(0);
        let result: Result<(), _> = with_retries(&fast(), "t", "m", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(Failure::Retry(
                EmbeddingError::Unavailable("429".into()),
                Some(Duration::from_secs(3600)),
            ))
        })
        .await;
        assert!(result.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
