//! What the fake knows: the scripted replies and faults, the prompts it received, and
//! what its prompt caches and concurrency limits hold right now.

use crate::tripwire::Tripwire;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one request carried.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub system: String,
    /// `(role, text)` in order.
    pub messages: Vec<(String, String)>,
    /// The OpenAI `response_format.type` asked for (`json_schema`, `json_object`).
    pub response_format: Option<String>,
    /// The `x-api-key` header the client sent.
    pub api_key: Option<String>,
    /// The output tokens asked for (`max_tokens`, or OpenAI's `max_completion_tokens`).
    pub max_tokens: Option<u64>,
    /// The request as sent, for assertions on provider-specific fields (cache markers,
    /// `cache_prompt`).
    pub raw: Value,
}

impl Prompt {
    /// An exploring request: it offered the model tools to read code.
    pub fn offers_tools(&self) -> bool {
        self.raw["tools"].as_array().is_some_and(|t| !t.is_empty())
    }

    /// A later round of reading: the conversation already carries tool results
    /// (Anthropic `tool_result` blocks, OpenAI `tool` messages).
    pub fn carries_tool_results(&self) -> bool {
        carries_tool_results(&self.raw)
    }

    /// Everything the model was shown, for `contains` assertions.
    pub fn text(&self) -> String {
        let mut all = self.system.clone();
        for (_, text) in &self.messages {
            all.push('\n');
            all.push_str(text);
        }
        all
    }
}

pub(super) fn carries_tool_results(request: &Value) -> bool {
    request["messages"].as_array().is_some_and(|messages| {
        messages.iter().any(|m| {
            m["role"] == "tool"
                || m["content"]
                    .as_array()
                    .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
        })
    })
}

#[derive(Debug, Clone)]
pub(super) enum Reply {
    Text(String),
    Status(u16, String),
    /// A model that never stops: streamed, this passage again and again until the client
    /// hangs up; not streamed, an answer that never comes.
    Endless(String),
}

#[derive(Debug, Clone)]
pub(super) struct Rule {
    pub(super) contains: String,
    pub(super) replies: Vec<Reply>,
    /// When the queue runs dry, keep answering with the last reply.
    pub(super) sticky: bool,
    /// This rule's own delay, instead of the global latency (other rules keep theirs).
    pub(super) latency: Option<Duration>,
}

#[derive(Default)]
pub(super) struct State {
    /// Serve one request at a time, like a llama.cpp server with one slot: the others
    /// wait (their clients' timeouts running) until it is their turn.
    pub(super) one_at_a_time: Option<Arc<tokio::sync::Mutex<()>>>,
    pub(super) rules: Vec<Rule>,
    pub(super) default_reply: Option<String>,
    pub(super) latency: Duration,
    pub(super) prompts: Vec<Prompt>,
    /// `(prompt fragment, tripwire)`, checked in order.
    pub(super) tripwires: Vec<(String, Arc<Tripwire>)>,
    /// `response_format` types this server refuses with a 400, as older llama.cpp and
    /// some OpenAI-compatible proxies do for `json_schema`.
    pub(super) refused_formats: Vec<String>,
    /// Refuse them as llama-cpp-python's server does: its request validation fails, and it
    /// answers 500 with the validation error as the message.
    pub(super) refuse_with_500: bool,
    /// Serve this many requests at once, like a llama.cpp server started with
    /// `--parallel N`; the others wait in line (their clients' timeouts running).
    pub(super) at_once: Option<Arc<tokio::sync::Semaphore>>,
    /// What `GET /props` says (`total_slots`), as llama.cpp's server does; 404 when unset.
    pub(super) announced_slots: Option<usize>,
    /// Requests being answered now, and the most there ever were.
    pub(super) in_flight: usize,
    pub(super) most_in_flight: usize,
    /// Prompt prefixes seen with a cache marker (Anthropic `cache_control`): a later
    /// request with the same marked prefix is billed as a cache read, as Anthropic does.
    /// Each with the moment it can be read: when the answer that wrote it began, as
    /// Anthropic makes an entry available "after the first response begins". A request
    /// arriving before that writes the prefix again.
    pub(super) cached_prefixes: std::collections::HashMap<String, Instant>,
    /// Every prompt's text so far, with the moment its answer began, for OpenAI's
    /// automatic prefix caching when emulated.
    pub(super) openai_cache: Option<Vec<(String, Instant)>>,
    /// How long a streamed answer takes to begin (reading the prompt, before the first
    /// token), out of the call's latency; `None`: streams begin after the whole latency.
    pub(super) time_to_first_token: Option<Duration>,
    /// Break off a running stream when another request is waiting, as llama-cpp-python's
    /// server does (`interrupt_requests`, on by default): the stream ends with `[DONE]`
    /// and no finish reason.
    pub(super) interrupts: bool,
    /// Send no `usage`, in whole replies or streams (llama-cpp-python's server sends none
    /// in a stream, whatever `stream_options` asks).
    pub(super) no_usage: bool,
    /// Requests that arrived and wait for their turn.
    pub(super) waiting: usize,
    /// Streams a client stopped reading before they ended.
    pub(super) hang_ups: usize,
    /// `(prompt fragment, calls)`: a request that offers tools and contains the fragment,
    /// with no tool results yet, is answered with these tool calls.
    pub(super) tool_scripts: Vec<(String, Vec<(String, Value)>)>,
    /// Scripted tool calls sent as a stream (a request that asked for one).
    pub(super) streamed_tool_calls: usize,
    /// Refuse any request that carries `tools` with a 400, as Ollama does for a model
    /// without a tool template.
    pub(super) refuse_tools: bool,
    /// Answer "DONE" where a request offering tools calls none (see
    /// `FakeLlm::say_done_instead_of_answering`).
    pub(super) done_instead_of_answering: bool,
}

/// Anthropic's minimum cacheable prefix for the models the tests name (Sonnet 4.5).
pub(super) const CACHE_MIN_TOKENS: usize = 1024;
