//! At most N LLM calls in flight per process (`LLM_MAX_CONCURRENCY`), and at most M
//! output tokens asked for in any of them (`LLM_MAX_OUTPUT_TOKENS`).
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
//!
//! **Output cap.** Each kind of call asks for what it may need (a specialist pass 4,096
//! tokens, an answer fewer). A small local model asked for JSON sometimes never closes
//! it and generates until that limit: at a few tokens a second one such call outlasts
//! the pass timeout, and the calls queued behind it time out too. A cap makes such a
//! call end early as a truncated reply, which the caller already treats as a failed
//! pass, with the review going on (and saying so) instead of timing out.

use async_trait::async_trait;
use parley_core::ports::llm::{Llm, LlmError, LlmRequest, LlmResponse, PromptCache};
use std::sync::Arc;
use tokio::sync::Semaphore;

pub const MAX_CONCURRENCY_ENV: &str = "LLM_MAX_CONCURRENCY";
pub const DEFAULT_MAX_CONCURRENCY: usize = 4;
pub const MAX_OUTPUT_TOKENS_ENV: &str = "LLM_MAX_OUTPUT_TOKENS";

/// An [`Llm`] that lets at most `slots` calls through at once (the others wait in line)
/// and, with an output cap, lowers any request's `max_tokens` to it.
pub struct Limited {
    inner: Arc<dyn Llm>,
    slots: Arc<Semaphore>,
    output_cap: Option<u32>,
}

impl Limited {
    pub fn new(inner: Arc<dyn Llm>, slots: usize) -> Self {
        Limited {
            inner,
            slots: Arc::new(Semaphore::new(slots.max(1))),
            output_cap: None,
        }
    }

    pub fn with_output_cap(mut self, cap: Option<u32>) -> Self {
        self.output_cap = cap;
        self
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
        match self.output_cap {
            Some(cap) if request.options.max_tokens > cap => {
                let mut capped = request.clone();
                capped.options.max_tokens = cap;
                self.inner.complete(&capped).await
            }
            _ => self.inner.complete(request).await,
        }
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn prompt_cache(&self) -> PromptCache {
        self.inner.prompt_cache()
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

/// The smallest cap accepted: below it not even a one-finding reply fits, so a smaller
/// value is a typo rather than a choice.
pub const MIN_OUTPUT_TOKENS: u32 = 256;

/// `LLM_MAX_OUTPUT_TOKENS`: unset means no cap (each call asks for what it needs);
/// anything but a whole number of at least [`MIN_OUTPUT_TOKENS`] is an error.
pub fn output_cap_from(value: Option<&str>) -> Result<Option<u32>, LlmError> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v
            .parse::<u32>()
            .ok()
            .filter(|n| *n >= MIN_OUTPUT_TOKENS)
            .map(Some)
            .ok_or_else(|| {
                LlmError::Config(format!(
                    "{MAX_OUTPUT_TOKENS_ENV} must be a whole number of at least {MIN_OUTPUT_TOKENS}, got {v:?}"
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

    /// A model taking 20 ms a call that records how many calls were in flight at most and
    /// the `max_tokens` each asked for.
    #[derive(Default)]
    struct Slow {
        in_flight: AtomicUsize,
        most: AtomicUsize,
        asked: std::sync::Mutex<Vec<u32>>,
    }

    #[async_trait]
    impl Llm for Slow {
        async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
            self.asked
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(request.options.max_tokens);
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
        let slow = Arc::new(Slow::default());
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

        assert_eq!(output_cap_from(None).unwrap(), None);
        assert_eq!(output_cap_from(Some(" ")).unwrap(), None);
        assert_eq!(output_cap_from(Some("1024")).unwrap(), Some(1024));
        for bad in ["0", "255", "-5", "lots", "1e3"] {
            let err = output_cap_from(Some(bad)).unwrap_err().to_string();
            assert!(err.contains(MAX_OUTPUT_TOKENS_ENV), "{bad}: {err}");
        }
    }

    #[tokio::test]
    async fn the_output_cap_lowers_what_is_asked_and_never_raises_it() {
        let asked = Arc::new(Slow::default());
        let capped = Limited::new(asked.clone(), 1).with_output_cap(Some(1024));
        let uncapped = Limited::new(asked.clone(), 1);
        for max_tokens in [4096, 1024, 300] {
            let mut request = LlmRequest::new("s".to_string(), vec![]);
            request.options.max_tokens = max_tokens;
            capped.complete(&request).await.expect("answered");
            uncapped.complete(&request).await.expect("answered");
        }
        let asked = asked.asked.lock().unwrap().clone();
        assert_eq!(asked, [1024, 4096, 1024, 1024, 300, 300]);
    }
}
