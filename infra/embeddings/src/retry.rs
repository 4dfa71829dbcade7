//! The retry loop both remote adapters share, with the LLM client's policy
//! ([`parley_llm::RetryPolicy`]: exponential backoff with jitter, a provider's
//! `Retry-After` honoured up to a cap).
//!
//! As with the LLM, a timeout is not retried here: a server that did not answer in time
//! is likely stuck, and the embedding job's queue retry is the better second chance.

use parley_core::ports::EmbeddingError;
use parley_llm::RetryPolicy;
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

/// Run `attempt` until it succeeds, fails for good, or the policy's retries are spent.
pub async fn with_retries<T, F, Fut>(
    policy: &RetryPolicy,
    provider: &'static str,
    model: &str,
    mut attempt: F,
) -> Result<T, EmbeddingError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let mut retry = 0;
    loop {
        let (error, hint) = match attempt().await {
            Ok(value) => return Ok(value),
            Err(Failure::Stop(error)) => return Err(error),
            Err(Failure::Retry(error, hint)) => (error, hint),
        };
        if retry >= policy.max_retries {
            return Err(error);
        }
        let Some(wait) = policy.delay(retry, hint) else {
            tracing::warn!(provider, model, %error, "embeddings provider asked for a longer wait than we retry for");
            return Err(error);
        };
        retry += 1;
        tracing::warn!(
            provider,
            model,
            %error,
            retry,
            wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            "embeddings call failed; retrying"
        );
        tokio::time::sleep(wait).await;
    }
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
