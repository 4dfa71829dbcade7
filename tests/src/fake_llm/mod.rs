//! A fake LLM on 127.0.0.1 speaking the Anthropic Messages API (`POST /v1/messages`) and
//! OpenAI-compatible Chat Completions (`POST /v1/chat/completions`, as Ollama, vLLM and
//! the llama.cpp server do).
//!
//! Tests script replies by what the prompt contains (a specialist's name in the system
//! prompt, a phrase in the question), add latency, or make it fail, and then read back the
//! prompts it received. Point Parley at it with `LLM_PROVIDER=anthropic`,
//! `LLM_BASE_URL=<url>`, `LLM_API_KEY=test`.
//!
//! [`FakeLlm`] here is what a test holds: it scripts replies and faults and reads back
//! prompts. `state` is what the fake knows, `handle` how it answers a request, `stream`
//! its streamed answers, `cache` the providers' prompt caches as it emulates them.

mod cache;
mod handle;
mod state;
mod stream;

use axum::Router;
use handle::handle;
use serde_json::{Value, json};
use state::{Reply, Rule, State};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::tripwire::HoldPoint;

pub use crate::tripwire::Tripwire;
pub use state::Prompt;

#[derive(Clone)]
pub struct FakeLlm {
    pub url: String,
    state: Arc<Mutex<State>>,
}

impl FakeLlm {
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let app = Router::new().fallback(handle).with_state(state.clone());
        let url = crate::local_server::start("the fake LLM", app).await;
        FakeLlm { url, state }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Refuse requests whose `response_format.type` is one of `kinds` with a 400.
    pub fn refuse_response_formats(&self, kinds: &[&str]) {
        self.state().refused_formats = kinds.iter().map(|k| k.to_string()).collect();
    }

    /// Refuse `kinds` as llama-cpp-python's server (0.3) does: `500` with its validation
    /// error, in the words that server uses.
    pub fn refuse_response_formats_with_500(&self, kinds: &[&str]) {
        let mut state = self.state();
        state.refused_formats = kinds.iter().map(|k| k.to_string()).collect();
        state.refuse_with_500 = true;
    }

    /// Always answer `reply` when the prompt contains `contains`.
    pub fn answer(&self, contains: &str, reply: &str) {
        self.state().rules.push(Rule {
            contains: contains.into(),
            replies: vec![Reply::Text(reply.into())],
            sticky: true,
            latency: None,
        });
    }

    /// Answer these replies in turn when the prompt contains `contains`.
    pub fn answer_in_turn(&self, contains: &str, replies: &[&str]) {
        let replies = replies.iter().map(|r| Reply::Text((*r).into())).collect();
        self.state().rules.push(Rule {
            contains: contains.into(),
            replies,
            sticky: false,
            latency: None,
        });
    }

    /// Never stop writing when the prompt contains `contains`: a streamed reply is
    /// `passage` again and again until the client hangs up (a small model looping inside
    /// its JSON); an unstreamed one never comes.
    pub fn write_forever(&self, contains: &str, passage: &str) {
        self.state().rules.push(Rule {
            contains: contains.into(),
            replies: vec![Reply::Endless(passage.into())],
            sticky: true,
            latency: None,
        });
    }

    /// Serve one request at a time and break off the running stream when another one
    /// arrives, as llama-cpp-python's server does.
    /// It sends no usage in its streams either.
    pub fn interrupt_streams_like_llama_cpp_python(&self) {
        let mut state = self.state();
        state.one_at_a_time = Some(Arc::new(tokio::sync::Mutex::new(())));
        state.interrupts = true;
        state.no_usage = true;
    }

    /// Report no token usage on OpenAI-compatible replies, whole or streamed, as some
    /// self-hosted servers do.
    pub fn report_no_usage(&self) {
        self.state().no_usage = true;
    }

    /// When a request that offers tools contains `contains` and carries no tool results
    /// yet, answer with `calls` (`(tool name, input)`); once results came back, the
    /// scripted answer, as a model that has read enough answers. A request offering tools
    /// that no script matches is answered at once: a model with nothing to read.
    pub fn call_tools(&self, contains: &str, calls: &[(&str, Value)]) {
        self.state().tool_scripts.push((
            contains.to_string(),
            calls
                .iter()
                .map(|(name, input)| (name.to_string(), input.clone()))
                .collect(),
        ));
    }

    /// Answer every request that offers tools and calls none with the word "DONE" instead
    /// of an answer, as a model that takes "read what you need" for a separate step does.
    pub fn say_done_instead_of_answering(&self) {
        self.state().done_instead_of_answering = true;
    }

    /// Refuse requests that carry `tools` (400), as Ollama does for a model without a
    /// tool template.
    pub fn refuse_tools(&self) {
        self.state().refuse_tools = true;
    }

    /// How many replies with scripted tool calls went out as a stream.
    pub fn streamed_tool_calls(&self) -> usize {
        self.state().streamed_tool_calls
    }

    /// How many streamed replies the client stopped reading before their end.
    pub fn hang_ups(&self) -> usize {
        self.state().hang_ups
    }

    /// Fail with `status` (e.g. 500, 529) when the prompt contains `contains` (`""` = all).
    pub fn fail(&self, contains: &str, status: u16) {
        let body = json!({ "type": "error", "error": { "type": if status == 529 { "overloaded_error" } else { "api_error" }, "message": "fake failure" } }).to_string();
        self.state().rules.push(Rule {
            contains: contains.into(),
            replies: vec![Reply::Status(status, body)],
            sticky: true,
            latency: None,
        });
    }

    /// Always answer `reply` when the prompt contains `contains`, but only after `latency`
    /// (this rule alone: every other request keeps the global latency).
    pub fn answer_after(&self, contains: &str, reply: &str, latency: Duration) {
        self.state().rules.push(Rule {
            contains: contains.into(),
            replies: vec![Reply::Text(reply.into())],
            sticky: true,
            latency: Some(latency),
        });
    }

    /// Fail with `status` the next `times` requests whose prompt contains `contains`, then
    /// let the other rules answer again.
    pub fn fail_times(&self, contains: &str, status: u16, times: usize) {
        let body =
            json!({ "type": "error", "error": { "type": "api_error", "message": "fake failure" } })
                .to_string();
        self.state().rules.push(Rule {
            contains: contains.into(),
            replies: vec![Reply::Status(status, body); times],
            sticky: false,
            latency: None,
        });
    }

    /// Answer `reply` after `latency` to the next `times` requests whose prompt contains
    /// `contains`, then let the other rules answer again.
    pub fn slow_times(&self, contains: &str, reply: &str, latency: Duration, times: usize) {
        self.state().rules.push(Rule {
            contains: contains.into(),
            replies: vec![Reply::Text(reply.into()); times],
            sticky: false,
            latency: Some(latency),
        });
    }

    /// Drop every rule scripted with exactly `contains` (a fault is over).
    pub fn remove_rules(&self, contains: &str) {
        self.state().rules.retain(|rule| rule.contains != contains);
    }

    /// Answer anything no rule matched with `reply`.
    pub fn default_reply(&self, reply: &str) {
        self.state().default_reply = Some(reply.into());
    }

    /// Hold the first `catches` requests whose prompt contains `contains` before answering,
    /// until the returned tripwire is released (or abandoned: then it fails): the model is "thinking" for as long as the
    /// test needs (to kill the caller mid-call). Later matching requests are answered as
    /// usual.
    pub fn tripwire(&self, contains: &str, catches: usize) -> Arc<Tripwire> {
        let wire = Tripwire::new(HoldPoint::BeforeApplying, catches);
        self.state()
            .tripwires
            .push((contains.to_string(), wire.clone()));
        wire
    }

    /// Serve one request at a time (see `State::one_at_a_time`).
    pub fn serve_one_at_a_time(&self) {
        self.state().one_at_a_time = Some(Arc::new(tokio::sync::Mutex::new(())));
    }

    /// Serve `n` requests at once, the rest waiting in line on the server.
    pub fn serve_at_once(&self, n: usize) {
        self.state().at_once = Some(Arc::new(tokio::sync::Semaphore::new(n.max(1))));
    }

    /// Answer `GET /props` with `{"total_slots": n}`, as a llama.cpp server does.
    pub fn announce_slots(&self, n: usize) {
        self.state().announced_slots = Some(n);
    }

    /// The most requests this server ever had in hand at once.
    pub fn most_in_flight(&self) -> usize {
        self.state().most_in_flight
    }

    /// Bill repeated prompt prefixes on the OpenAI API as OpenAI does: the longest prefix
    /// shared with an earlier prompt, in whole 128-token blocks from 1,024 tokens on, is
    /// `prompt_tokens_details.cached_tokens`.
    pub fn emulate_openai_cache(&self) {
        self.state().openai_cache = Some(Vec::new());
    }

    pub fn set_latency(&self, latency: Duration) {
        self.state().latency = latency;
    }

    /// Streamed answers begin `ttft` into their latency: Anthropic's `message_start`, or
    /// the first Chat Completions chunk, comes then, the rest at the end of the latency.
    pub fn set_time_to_first_token(&self, ttft: Duration) {
        self.state().time_to_first_token = Some(ttft);
    }

    /// How many calls were made with `fragment` in their prompt.
    pub fn calls_containing(&self, fragment: &str) -> usize {
        self.prompts()
            .iter()
            .filter(|p| p.text().contains(fragment))
            .count()
    }

    pub fn prompts(&self) -> Vec<Prompt> {
        self.state().prompts.clone()
    }
}
