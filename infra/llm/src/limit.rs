//! At most N LLM calls in flight per process (`LLM_MAX_CONCURRENCY`).
//!
//! A self-hosted model server (llama.cpp, Ollama on a small machine) serves one request at
//! a time. Sent five specialist passes at once, it queues them on its side, where each
//! call's timeout is already running: the last ones time out waiting, the review fails,
//! and every retry does the same. Queueing inside Parley instead means a call's timeout
//! starts only once it holds a slot, i.e. once it is actually being served.
//!
//! **Deadlines.** With `N` slots, `P` passes and a per-call time `t`, the passes take
//! about `ceil(P / N) * t`; `review.passTimeoutSecs` (default 180 s) must cover that, and
//! the review worker's timeout (300 s; the queue's visibility timeout is 6x it) must cover
//! the passes plus the judge pass (one more `t`) plus reading and publishing. For a local
//! model at ~20 s a call and `N = 1`: 5 x 20 + 20 = 120 s, inside both.

use async_trait::async_trait;
use parley_core::ports::llm::{Llm, LlmError, LlmRequest, LlmResponse};
use std::sync::Arc;
use tokio::sync::Semaphore;

pub const MAX_CONCURRENCY_ENV: &str = "LLM_MAX_CONCURRENCY";
pub const DEFAULT_MAX_CONCURRENCY: usize = 4;

/// An [`Llm`] that lets at most `slots` calls through at once; the others wait in line.
pub struct Limited {
    inner: Arc<dyn Llm>,
    slots: Arc<Semaphore>,
}

impl Limited {
    pub fn new(inner: Arc<dyn Llm>, slots: usize) -> Self {
        Limited {
            inner,
            slots: Arc::new(Semaphore::new(slots.max(1))),
        }
    }
}

#[async_trait]
impl Llm for Limited {
    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| LlmError::Config("the LLM call limiter was shut down".into()))?;
        self.inner.complete(request).await
    }

    fn model(&self) -> &str {
        self.inner.model()
    }
}

/// `LLM_MAX_CONCURRENCY` as a number of slots: unset means the default; anything but a
/// whole number of at least 1 is an error (a limit silently ignored would bring back the
/// timeouts it exists to prevent).
pub fn slots_from(value: Option<&str>) -> Result<usize, LlmError> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(DEFAULT_MAX_CONCURRENCY),
        Some(v) => v.parse::<usize>().ok().filter(|n| *n >= 1).ok_or_else(|| {
            LlmError::Config(format!(
                "{MAX_CONCURRENCY_ENV} must be a whole number of at least 1, got {v:?}"
            ))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_core::ports::llm::Usage;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    struct Slow {
        in_flight: AtomicUsize,
        most: AtomicUsize,
    }

    #[async_trait]
    impl Llm for Slow {
        async fn complete(&self, _request: &LlmRequest) -> Result<LlmResponse, LlmError> {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            Ok(LlmResponse {
                text: "{}".into(),
                usage: Usage::new(1, 1),
                model: "m".into(),
                truncated: false,
            })
        }
        fn model(&self) -> &str {
            "m"
        }
    }

    #[tokio::test]
    async fn no_more_than_the_slots_run_at_once() {
        let slow = Arc::new(Slow {
            in_flight: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
        });
        let limited = Arc::new(Limited::new(slow.clone(), 2));
        let request = LlmRequest::new("s".to_string(), vec![]);
        let calls: Vec<_> = (0..6)
            .map(|_| {
                let limited = limited.clone();
                let request = request.clone();
                tokio::spawn(async move { limited.complete(&request).await })
            })
            .collect();
        for call in calls {
            call.await.expect("joined").expect("answered");
        }
        assert_eq!(slow.most.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn the_setting_is_checked() {
        assert_eq!(slots_from(None).unwrap(), DEFAULT_MAX_CONCURRENCY);
        assert_eq!(slots_from(Some(" 1 ")).unwrap(), 1);
        assert!(slots_from(Some("0")).is_err());
        assert!(slots_from(Some("many")).is_err());
    }
}
