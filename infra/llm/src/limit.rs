//! At most N LLM calls in flight per process, and at most M output tokens asked for in
//! any of them (`LLM_MAX_OUTPUT_TOKENS`).
//!
//! **N.** `LLM_MAX_CONCURRENCY` when set. Otherwise Parley finds out: a cloud API
//! (Anthropic, Bedrock, OpenAI) takes a review's passes all at once, so they go at once
//! ([`CLOUD_CONCURRENCY`]); a llama.cpp server says how many requests it serves at a
//! time (`/props`: `total_slots`), so that many go; any other self-hosted server (Ollama,
//! vLLM) gets an adaptive limit: it starts at [`ADAPTIVE_START`], halves when a call
//! times out while others were in flight (the shape of a call left waiting in the
//! server's queue) or has its streamed reply broken off for another request (what
//! llama-cpp-python does; then it drops to one for good) and tries that call again, and grows back by one after a run of
//! calls that all answered.
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

use crate::config::{LlmConfig, Provider};
use async_trait::async_trait;
use parley_core::ports::llm::{Llm, LlmError, LlmRequest, LlmResponse, PromptCache};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::Notify;

pub const MAX_CONCURRENCY_ENV: &str = "LLM_MAX_CONCURRENCY";
/// Calls in flight for a cloud API: a five-pass review and the judge, and a reply or two.
pub const CLOUD_CONCURRENCY: usize = 8;
/// Where the adaptive limit starts, and the most it grows to.
pub const ADAPTIVE_START: usize = 4;
pub const ADAPTIVE_MAX: usize = 8;
/// Answered calls in a row, per slot, before the adaptive limit grows by one.
const GROW_AFTER_PER_SLOT: usize = 4;
pub const MAX_OUTPUT_TOKENS_ENV: &str = "LLM_MAX_OUTPUT_TOKENS";

/// How many calls may be in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concurrency {
    Fixed(usize),
    /// Start here and adapt to the server (see the module docs).
    Adaptive(usize),
}

/// An [`Llm`] that lets a limited number of calls through at once (the others wait in
/// line, their timeouts not yet running) and, with an output cap, lowers any request's
/// `max_tokens` to it.
pub struct Limited {
    inner: Arc<dyn Llm>,
    slots: Slots,
    output_cap: Option<u32>,
}

impl Limited {
    pub fn new(inner: Arc<dyn Llm>, slots: usize) -> Self {
        Self::with_concurrency(inner, Concurrency::Fixed(slots))
    }

    pub fn with_concurrency(inner: Arc<dyn Llm>, concurrency: Concurrency) -> Self {
        let (limit, adaptive) = match concurrency {
            Concurrency::Fixed(n) => (n.max(1), false),
            Concurrency::Adaptive(n) => (n.clamp(1, ADAPTIVE_MAX), true),
        };
        Limited {
            inner,
            slots: Slots {
                state: Mutex::new(SlotState {
                    limit,
                    ceiling: ADAPTIVE_MAX,
                    in_flight: 0,
                    answered_in_a_row: 0,
                }),
                freed: Notify::new(),
                adaptive,
            },
            output_cap: None,
        }
    }

    pub fn with_output_cap(mut self, cap: Option<u32>) -> Self {
        self.output_cap = cap;
        self
    }

    /// The limit in force now (it moves only when adaptive).
    pub fn limit(&self) -> usize {
        self.slots.lock().limit
    }

    async fn call(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        match self.output_cap {
            Some(cap) if request.options.max_tokens > cap => {
                let mut capped = request.clone();
                capped.options.max_tokens = cap;
                self.inner.complete(&capped).await
            }
            _ => self.inner.complete(request).await,
        }
    }
}

#[async_trait]
impl Llm for Limited {
    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let mut retried = false;
        loop {
            let slot = self.slots.acquire().await;
            let result = self.call(request).await;
            let queued = slot.release(&result);
            // A call that timed out behind others most likely waited in the server's
            // queue, not on the model (or the server dropped it for another): the limit
            // is now lower, so it goes again, once. Calls that were in flight together
            // all come back this way; only the one that lowered the limit warns.
            if let (Some(lowered), false) = (queued, retried) {
                retried = true;
                if lowered {
                    tracing::warn!(
                        limit = self.limit(),
                        "an LLM call waited in the server's queue or was broken off for another; fewer at once from now on, and this one again"
                    );
                } else {
                    tracing::info!(
                        limit = self.limit(),
                        "an LLM call waited in the server's queue or was broken off for another; this one again"
                    );
                }
                continue;
            }
            return result;
        }
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn prompt_cache(&self) -> PromptCache {
        self.inner.prompt_cache()
    }
    fn supports_tools(&self) -> bool {
        self.inner.supports_tools()
    }

    fn tools_went_unused(&self) {
        self.inner.tools_went_unused()
    }
}

/// The slots and who waits for one. A `tokio::sync::Semaphore` cannot shrink while its
/// permits are out; this count can.
struct Slots {
    state: Mutex<SlotState>,
    freed: Notify,
    adaptive: bool,
}

struct SlotState {
    limit: usize,
    /// The most the adaptive limit grows back to.
    ceiling: usize,
    in_flight: usize,
    answered_in_a_row: usize,
}

impl Slots {
    fn lock(&self) -> std::sync::MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn acquire(&self) -> Slot<'_> {
        loop {
            let freed = self.freed.notified();
            {
                let mut state = self.lock();
                if state.in_flight < state.limit {
                    state.in_flight += 1;
                    return Slot {
                        slots: self,
                        crowded: state.in_flight > 1,
                        released: false,
                    };
                }
            }
            freed.await;
        }
    }
}

/// One call's place in line. Dropped without [`Slot::release`] (the call was abandoned
/// at a deadline), it is given back all the same.
struct Slot<'a> {
    slots: &'a Slots,
    /// Others were in flight when this call started.
    crowded: bool,
    released: bool,
}

impl Slot<'_> {
    /// Give the slot back and learn from how the call went; `Some` when it timed out in
    /// a way that says the server queued it, `Some(true)` when that lowered the adaptive
    /// limit (`false`: another call lowered it first, as far as it goes).
    fn release(mut self, result: &Result<LlmResponse, LlmError>) -> Option<bool> {
        self.released = true;
        let mut state = self.slots.lock();
        // Broken off for another request: that one is in flight now, whether or not
        // anything was when this call started.
        let overtaken = state.in_flight > 1;
        state.in_flight = state.in_flight.saturating_sub(1);
        let mut queued = None;
        let before = state.limit;
        if self.slots.adaptive {
            match result {
                Err(LlmError::Timeout(_)) if self.crowded => {
                    state.limit = (state.limit / 2).max(1);
                    state.answered_in_a_row = 0;
                    queued = Some(state.limit < before);
                }
                // A server that breaks off one reply for the next serves one at a time,
                // for as long as this process runs: no halving in steps, no growing back.
                Err(LlmError::Interrupted(_)) if self.crowded || overtaken => {
                    state.limit = 1;
                    state.ceiling = 1;
                    state.answered_in_a_row = 0;
                    queued = Some(state.limit < before);
                }
                Ok(_) => {
                    state.answered_in_a_row += 1;
                    if state.answered_in_a_row >= state.limit * GROW_AFTER_PER_SLOT
                        && state.limit < state.ceiling
                    {
                        state.limit += 1;
                        state.answered_in_a_row = 0;
                    }
                }
                Err(_) => state.answered_in_a_row = 0,
            }
        }
        drop(state);
        self.slots.freed.notify_waiters();
        queued
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if !self.released {
            let mut state = self.slots.lock();
            state.in_flight = state.in_flight.saturating_sub(1);
            drop(state);
            self.slots.freed.notify_waiters();
        }
    }
}

/// How many calls to let through when `LLM_MAX_CONCURRENCY` is not set (see the module
/// docs), given what a self-hosted server said about itself.
pub fn discover(config: &LlmConfig, server: Option<crate::server::LocalServer>) -> Concurrency {
    match (config.provider, server) {
        (Provider::Anthropic | Provider::Bedrock, _) => Concurrency::Fixed(CLOUD_CONCURRENCY),
        (Provider::OpenAi, _) if config.is_openai_cloud() => Concurrency::Fixed(CLOUD_CONCURRENCY),
        (Provider::OpenAi, Some(server)) => Concurrency::Fixed(server.slots),
        (Provider::OpenAi, None) => Concurrency::Adaptive(ADAPTIVE_START),
    }
}

/// `LLM_MAX_CONCURRENCY` as a number of slots: unset means "find out" (`None`); anything
/// but a whole number of at least 1 is an error (a limit silently ignored would bring
/// back the timeouts it exists to prevent).
pub fn slots_from(value: Option<&str>) -> Result<Option<usize>, LlmError> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| *n >= 1)
            .map(Some)
            .ok_or_else(|| {
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
            Ok(LlmResponse::answer("{}", Usage::new(1, 1), "m"))
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
        assert_eq!(slots_from(None).unwrap(), None);
        assert_eq!(slots_from(Some(" 1 ")).unwrap(), Some(1));
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

    /// A server that serves one request at a time: a call that arrives while another is
    /// being served waits in its queue until its client gives up (a timeout), as a
    /// single-slot llama.cpp or Ollama server does to a client that sends too many.
    /// With `interrupts`, the call that arrives breaks off its streamed reply at once
    /// instead (llama-cpp-python).
    #[derive(Default)]
    struct OneSlotServer {
        busy: AtomicUsize,
        answered: AtomicUsize,
        interrupts: bool,
    }

    #[async_trait]
    impl Llm for OneSlotServer {
        async fn complete(&self, _: &LlmRequest) -> Result<LlmResponse, LlmError> {
            if self.busy.fetch_add(1, Ordering::SeqCst) > 0 {
                if self.interrupts {
                    self.busy.fetch_sub(1, Ordering::SeqCst);
                    return Err(LlmError::Interrupted("ended early".into()));
                }
                tokio::time::sleep(Duration::from_millis(30)).await;
                self.busy.fetch_sub(1, Ordering::SeqCst);
                return Err(LlmError::Timeout(Duration::from_millis(30)));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
            self.busy.fetch_sub(1, Ordering::SeqCst);
            self.answered.fetch_add(1, Ordering::SeqCst);
            Ok(LlmResponse::answer("{}", Usage::new(1, 1), "m"))
        }
        fn model(&self) -> &str {
            "m"
        }
    }

    /// Five passes at once against a one-slot server, with nothing configured: the calls
    /// left waiting time out, the limit halves down to one, and each of them goes again,
    /// so all five are answered; with a fixed four, the waiting ones fail.
    #[tokio::test]
    async fn an_adaptive_limit_finds_a_one_slot_server_and_loses_no_call() {
        for interrupts in [false, true] {
            a_one_slot_server_is_found(OneSlotServer {
                interrupts,
                ..OneSlotServer::default()
            })
            .await;
        }
    }

    async fn a_one_slot_server_is_found(server: OneSlotServer) {
        let server = Arc::new(server);
        let limited = Arc::new(Limited::with_concurrency(
            server.clone(),
            Concurrency::Adaptive(ADAPTIVE_START),
        ));
        let calls: Vec<_> = (0..5)
            .map(|_| {
                let limited = limited.clone();
                tokio::spawn(async move {
                    limited
                        .complete(&LlmRequest::new("s".to_string(), vec![]))
                        .await
                })
            })
            .collect();
        for call in calls {
            call.await
                .expect("joined")
                .expect("answered after adapting");
        }
        assert_eq!(server.answered.load(Ordering::SeqCst), 5);
        assert!(
            limited.limit() < ADAPTIVE_START,
            "the limit came down: {}",
            limited.limit()
        );

        let fixed = Arc::new(Limited::new(Arc::new(OneSlotServer::default()), 4));
        let calls: Vec<_> = (0..5)
            .map(|_| {
                let fixed = fixed.clone();
                tokio::spawn(async move {
                    fixed
                        .complete(&LlmRequest::new("s".to_string(), vec![]))
                        .await
                })
            })
            .collect();
        let mut failed = 0;
        for call in calls {
            failed += usize::from(call.await.expect("joined").is_err());
        }
        assert!(failed >= 2, "a fixed limit does not adapt: {failed} failed");
    }

    /// Calls broken off together all come back as queued, but only the first lowered
    /// the limit: the others must not say "fewer at once" again.
    #[tokio::test]
    async fn only_the_call_that_lowers_the_limit_says_so() {
        let limited =
            Limited::with_concurrency(Arc::new(Slow::default()), Concurrency::Adaptive(4));
        let broken = Err(LlmError::Interrupted("broken off".into()));
        let first = limited.slots.acquire().await;
        let second = limited.slots.acquire().await;
        let third = limited.slots.acquire().await;
        assert_eq!(second.release(&broken), Some(true));
        assert_eq!(limited.limit(), 1);
        assert_eq!(third.release(&broken), Some(false), "already one at a time");
        assert_eq!(
            first.release(&Ok(LlmResponse::answer("{}", Usage::new(1, 1), "m"))),
            None
        );
    }

    /// The limit grows back, slowly, once calls keep being answered.
    #[tokio::test]
    async fn an_adaptive_limit_grows_back_after_a_run_of_answers() {
        let limited =
            Limited::with_concurrency(Arc::new(Slow::default()), Concurrency::Adaptive(1));
        for _ in 0..GROW_AFTER_PER_SLOT {
            limited
                .complete(&LlmRequest::new("s".to_string(), vec![]))
                .await
                .expect("answered");
        }
        assert_eq!(limited.limit(), 2);
    }

    #[test]
    fn cloud_apis_keep_full_parallelism_and_servers_say_what_they_serve() {
        let config = |provider, base: Option<&str>| LlmConfig {
            provider,
            model: Some("m".into()),
            base_url: base.map(str::to_owned),
            api_key: None,
            timeout: Duration::from_secs(60),
            retry: crate::RetryPolicy::default(),
        };
        let local = crate::server::LocalServer { slots: 2 };
        assert_eq!(
            discover(&config(Provider::Anthropic, None), None),
            Concurrency::Fixed(CLOUD_CONCURRENCY)
        );
        assert_eq!(
            discover(&config(Provider::OpenAi, None), None),
            Concurrency::Fixed(CLOUD_CONCURRENCY)
        );
        assert_eq!(
            discover(
                &config(Provider::OpenAi, Some("http://127.0.0.1:8080/v1")),
                Some(local)
            ),
            Concurrency::Fixed(2)
        );
        assert_eq!(
            discover(
                &config(Provider::OpenAi, Some("http://localhost:11434/v1")),
                None
            ),
            Concurrency::Adaptive(ADAPTIVE_START)
        );
    }
}
