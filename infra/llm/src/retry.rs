//! Retrying the provider trouble that passes on its own.
//!
//! Rate limits, overload (Anthropic's 529 is routine at peak hours) and 5xx usually clear
//! within seconds, so each adapter retries them with exponential backoff and jitter (many
//! parallel review passes must not retry in lock-step). Timeouts are *not* retried: a
//! model that needed more than the timeout on this prompt will likely need it again, and
//! repeating it would multiply the wait inside a Lambda's time budget; the queue's
//! redelivery is the better second chance.

use parley_core::ports::llm::LlmError;
use rand::Rng;
use std::future::Future;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff; doubled on every retry.
    pub base_delay: Duration,
    /// The longest single wait. A provider asking for more (`Retry-After`) gets no retry:
    /// the error goes back to the caller, whose queue can wait longer than we should.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (0-based): the provider's hint if it gave one,
    /// otherwise "equal jitter" backoff, between half and all of `base * 2^retry`.
    /// `None` when the provider asked for longer than `max_delay`.
    pub fn delay(&self, retry: u32, hint: Option<Duration>) -> Option<Duration> {
        if let Some(hint) = hint {
            return (hint <= self.max_delay).then_some(hint);
        }
        let factor = 2u32.saturating_pow(retry);
        let ceiling = self.base_delay.saturating_mul(factor).min(self.max_delay);
        let ceiling_ms = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
        let jittered = rand::rng().random_range(ceiling_ms / 2..=ceiling_ms);
        Some(Duration::from_millis(jittered))
    }
}

/// Whether an adapter should try again by itself.
pub fn is_retryable(error: &LlmError) -> bool {
    matches!(
        error,
        LlmError::RateLimited { .. }
            | LlmError::Overloaded { .. }
            | LlmError::Server { .. }
            | LlmError::Network(_)
    )
}

/// Run `attempt` until it succeeds, fails for good, or the policy's retries are spent.
pub async fn with_retries<T, F, Fut>(
    policy: &RetryPolicy,
    provider: &'static str,
    model: &str,
    attempt: F,
) -> Result<T, LlmError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, LlmError>>,
{
    retry_while(policy, provider, model, attempt, |error: &LlmError| {
        is_retryable(error).then(|| error.retry_after())
    })
    .await
}

/// The loop every remote adapter shares (the LLM clients here, the embeddings clients in
/// parley-embeddings), so backoff, the `Retry-After` cap and the log line are one policy.
/// `retry` says whether an error is worth another attempt: `None` to stop, or
/// `Some(hint)` with the provider's own wait, if it gave one.
pub async fn retry_while<T, E, F, Fut>(
    policy: &RetryPolicy,
    provider: &'static str,
    model: &str,
    mut attempt: F,
    retry: impl Fn(&E) -> Option<Option<Duration>>,
) -> Result<T, E>
where
    E: std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut retries = 0;
    loop {
        let error = match attempt().await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        let Some(hint) = retry(&error).filter(|_| retries < policy.max_retries) else {
            return Err(error);
        };
        let Some(wait) = policy.delay(retries, hint) else {
            tracing::warn!(provider, model, %error, "provider asked for a longer wait than we retry for");
            return Err(error);
        };
        retries += 1;
        tracing::warn!(
            provider,
            model,
            %error,
            retry = retries,
            wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            "provider call failed; retrying"
        );
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn fast(max_retries: u32) -> RetryPolicy {
        RetryPolicy {
            max_retries,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(50),
        }
    }

    fn overloaded() -> LlmError {
        LlmError::Overloaded {
            message: "busy".into(),
            retry_after: None,
        }
    }

    #[tokio::test]
    async fn transient_errors_are_retried_until_success() {
        let calls = AtomicU32::new(0);
        let result = with_retries(&fast(3), "test", "m", || async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 => Err(overloaded()),
                1 => Err(LlmError::Network("reset".into())),
                _ => Ok("done"),
            }
        })
        .await;
        assert_eq!(result, Ok("done"));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn retries_stop_at_the_limit_with_the_last_error() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = with_retries(&fast(2), "test", "m", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(overloaded())
        })
        .await;
        assert_eq!(result, Err(overloaded()));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn permanent_errors_and_timeouts_are_not_retried() {
        for error in [
            LlmError::Auth("no".into()),
            LlmError::UnknownModel("m".into()),
            LlmError::Decode("junk".into()),
            LlmError::Timeout(Duration::from_millis(5)),
        ] {
            let calls = AtomicU32::new(0);
            let result: Result<(), _> = with_retries(&fast(3), "test", "m", || async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err(error.clone())
            })
            .await;
            assert_eq!(result, Err(error));
            assert_eq!(calls.load(Ordering::SeqCst), 1);
        }
    }

    #[tokio::test]
    async fn a_retry_after_beyond_the_cap_is_handed_back_at_once() {
        let calls = AtomicU32::new(0);
        let limited = LlmError::RateLimited {
            message: "slow down".into(),
            retry_after: Some(Duration::from_secs(3600)),
        };
        let result: Result<(), _> = with_retries(&fast(3), "test", "m", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(limited.clone())
        })
        .await;
        assert_eq!(result, Err(limited));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let policy = RetryPolicy {
            max_retries: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
        };
        for _ in 0..50 {
            let first = policy.delay(0, None).unwrap();
            assert!((50..=100).contains(&first.as_millis()), "{first:?}");
            let third = policy.delay(2, None).unwrap();
            assert!((200..=400).contains(&third.as_millis()), "{third:?}");
            let late = policy.delay(30, None).unwrap();
            assert!((500..=1000).contains(&late.as_millis()), "{late:?}");
        }
        assert_eq!(
            policy.delay(0, Some(Duration::from_millis(700))),
            Some(Duration::from_millis(700))
        );
        assert_eq!(policy.delay(0, Some(Duration::from_secs(2))), None);
    }
}
