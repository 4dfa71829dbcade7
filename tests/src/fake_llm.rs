//! A fake LLM on 127.0.0.1 speaking the Anthropic Messages API (`POST /v1/messages`) and
//! OpenAI-compatible Chat Completions (`POST /v1/chat/completions`, as Ollama, vLLM and
//! the llama.cpp server do).
//!
//! Tests script replies by what the prompt contains (a specialist's name in the system
//! prompt, a phrase in the question), add latency, or make it fail, and then read back the
//! prompts it received. Point Parley at it with `LLM_PROVIDER=anthropic`,
//! `LLM_BASE_URL=<url>`, `LLM_API_KEY=test`.

use axum::Router;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::tripwire::HoldPoint;
pub use crate::tripwire::Tripwire;

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

#[derive(Debug, Clone)]
enum Reply {
    Text(String),
    Status(u16, String),
    /// A model that never stops: streamed, this passage again and again until the client
    /// hangs up; not streamed, an answer that never comes.
    Endless(String),
}

#[derive(Debug, Clone)]
struct Rule {
    contains: String,
    replies: Vec<Reply>,
    /// When the queue runs dry, keep answering with the last reply.
    sticky: bool,
    /// This rule's own delay, instead of the global latency (other rules keep theirs).
    latency: Option<Duration>,
}

#[derive(Default)]
struct State {
    /// Serve one request at a time, like a llama.cpp server with one slot: the others
    /// wait (their clients' timeouts running) until it is their turn.
    one_at_a_time: Option<Arc<tokio::sync::Mutex<()>>>,
    rules: Vec<Rule>,
    default_reply: Option<String>,
    latency: Duration,
    prompts: Vec<Prompt>,
    /// `(prompt fragment, tripwire)`, checked in order.
    tripwires: Vec<(String, Arc<Tripwire>)>,
    /// `response_format` types this server refuses with a 400, as older llama.cpp and
    /// some OpenAI-compatible proxies do for `json_schema`.
    refused_formats: Vec<String>,
    /// Refuse them as llama-cpp-python's server does: its request validation fails, and it
    /// answers 500 with the validation error as the message.
    refuse_with_500: bool,
    /// Serve this many requests at once, like a llama.cpp server started with
    /// `--parallel N`; the others wait in line (their clients' timeouts running).
    at_once: Option<Arc<tokio::sync::Semaphore>>,
    /// What `GET /props` says (`total_slots`), as llama.cpp's server does; 404 when unset.
    announced_slots: Option<usize>,
    /// Requests being answered now, and the most there ever were.
    in_flight: usize,
    most_in_flight: usize,
    /// Prompt prefixes seen with a cache marker (Anthropic `cache_control`): a later
    /// request with the same marked prefix is billed as a cache read, as Anthropic does.
    /// Each with the moment it can be read: when the answer that wrote it began, as
    /// Anthropic makes an entry available "after the first response begins". A request
    /// arriving before that writes the prefix again.
    cached_prefixes: std::collections::HashMap<String, Instant>,
    /// Every prompt's text so far, with the moment its answer began, for OpenAI's
    /// automatic prefix caching when emulated.
    openai_cache: Option<Vec<(String, Instant)>>,
    /// How long a streamed answer takes to begin (reading the prompt, before the first
    /// token), out of the call's latency; `None`: streams begin after the whole latency.
    time_to_first_token: Option<Duration>,
    /// Break off a running stream when another request is waiting, as llama-cpp-python's
    /// server does (`interrupt_requests`, on by default): the stream ends with `[DONE]`
    /// and no finish reason.
    interrupts: bool,
    /// Requests that arrived and wait for their turn.
    waiting: usize,
    /// Streams a client stopped reading before they ended.
    hang_ups: usize,
    /// `(prompt fragment, calls)`: a request that offers tools and contains the fragment,
    /// with no tool results yet, is answered with these tool calls.
    tool_scripts: Vec<(String, Vec<(String, Value)>)>,
    /// Refuse any request that carries `tools` with a 400, as Ollama does for a model
    /// without a tool template.
    refuse_tools: bool,
}

/// Anthropic's minimum cacheable prefix for the models the tests name (Sonnet 4.5).
const CACHE_MIN_TOKENS: usize = 1024;

#[derive(Clone)]
pub struct FakeLlm {
    pub url: String,
    state: Arc<Mutex<State>>,
}

impl FakeLlm {
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind fake llm");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let app = Router::new().fallback(handle).with_state(state.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
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
    pub fn interrupt_streams_like_llama_cpp_python(&self) {
        let mut state = self.state();
        state.one_at_a_time = Some(Arc::new(tokio::sync::Mutex::new(())));
        state.interrupts = true;
    }

    /// When a request that offers tools contains `contains` and carries no tool results
    /// yet, answer with `calls` (`(tool name, input)`); once results came back, "DONE". A
    /// request offering tools that no script matches is answered "DONE": a model with
    /// nothing to read.
    pub fn call_tools(&self, contains: &str, calls: &[(&str, Value)]) {
        self.state().tool_scripts.push((
            contains.to_string(),
            calls
                .iter()
                .map(|(name, input)| (name.to_string(), input.clone()))
                .collect(),
        ));
    }

    /// Refuse requests that carry `tools` (400), as Ollama does for a model without a
    /// tool template.
    pub fn refuse_tools(&self) {
        self.state().refuse_tools = true;
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

type Shared = axum::extract::State<Arc<Mutex<State>>>;

async fn handle(
    axum::extract::State(state): Shared,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    if uri.path() == "/props" {
        let announced = state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .announced_slots;
        return match announced {
            Some(n) => axum::Json(json!({ "total_slots": n, "default_generation_settings": {} }))
                .into_response(),
            None => (StatusCode::NOT_FOUND, "File Not Found").into_response(),
        };
    }
    if uri.path() == "/slots" {
        return (StatusCode::NOT_FOUND, "File Not Found").into_response();
    }
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(_) => return (StatusCode::BAD_REQUEST, "not json").into_response(),
    };
    let openai = uri.path().ends_with("/chat/completions");
    let api_key = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let all: Vec<(String, String)> = request["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .map(|m| {
                    (
                        m["role"].as_str().unwrap_or("").to_string(),
                        content_text(&m["content"]),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let max_tokens = request["max_tokens"]
        .as_u64()
        .or_else(|| request["max_completion_tokens"].as_u64());
    let prompt = if openai {
        Prompt {
            system: all
                .iter()
                .filter(|(role, _)| role == "system")
                .map(|(_, text)| text.clone())
                .collect::<Vec<_>>()
                .join("\n"),
            messages: all
                .into_iter()
                .filter(|(role, _)| role != "system")
                .collect(),
            response_format: request["response_format"]["type"]
                .as_str()
                .map(str::to_string),
            api_key,
            max_tokens,
            raw: request.clone(),
        }
    } else {
        Prompt {
            system: system_text(&request["system"]),
            messages: all,
            response_format: None,
            api_key,
            max_tokens,
            raw: request.clone(),
        }
    };
    if let Some(kind) = &prompt.response_format {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        if s.refused_formats.contains(kind) {
            s.prompts.push(prompt.clone());
            if s.refuse_with_500 {
                return (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    axum::Json(json!({"error": {
                        "message": format!("1 validation error:\n  {{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': '{kind}'}}"),
                        "type": "internal_server_error", "param": null, "code": null,
                    }})),
                )
                    .into_response();
            }
            return (
                StatusCode::BAD_REQUEST,
                axum::Json(json!({"error": {
                    "message": format!("response_format type {kind} is not supported by this server"),
                    "type": "invalid_request_error",
                }})),
            )
                .into_response();
        }
    }
    let offers_tools = request["tools"]
        .as_array()
        .is_some_and(|tools| !tools.is_empty());
    if offers_tools {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        s.prompts.push(prompt.clone());
        if s.refuse_tools && openai {
            return (
                StatusCode::BAD_REQUEST,
                axum::Json(json!({"error": {
                    "message": "registry.ollama.ai/library/tiny:1b does not support tools",
                    "type": "invalid_request_error",
                }})),
            )
                .into_response();
        }
        let text = prompt.text();
        let answered = has_tool_results(&request);
        let calls = s
            .tool_scripts
            .iter()
            .find(|(fragment, _)| text.contains(fragment.as_str()))
            .map(|(_, calls)| calls.clone())
            .filter(|_| !answered)
            .unwrap_or_default();
        let model = request["model"].as_str().unwrap_or("fake").to_string();
        return tool_reply(openai, &model, &calls);
    }
    let text = prompt.text();
    let streamed = openai && request["stream"] == true;
    let one_at_a_time = {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        s.waiting += 1;
        s.one_at_a_time.clone()
    };
    let serving = match &one_at_a_time {
        Some(line) => Some(line.clone().lock_owned().await),
        None => None,
    };
    let interrupts = {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        s.waiting -= 1;
        s.interrupts && streamed
    };
    let at_once = state
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .at_once
        .clone();
    let slot = match at_once {
        Some(slots) => slots.acquire_owned().await.ok(),
        None => None,
    };
    let busy = InFlight::enter(state.clone());
    let anthropic_streamed = !openai && request["stream"] == true;
    let (latency, ttft, reply, model, wire, cache) = {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        let (reply, rule_latency) = next_reply(&mut s, &text);
        let latency = rule_latency.unwrap_or(s.latency);
        let ttft = s.time_to_first_token.unwrap_or(latency).min(latency);
        // The prompt is in the cache from the moment its answer begins.
        let begins = Instant::now()
            + if streamed || anthropic_streamed {
                ttft
            } else {
                latency
            };
        let cache = if openai {
            openai_cached_tokens(&mut s, &text, begins)
        } else {
            anthropic_cache(&mut s, &request, begins)
        };
        s.prompts.push(prompt);
        let wire = s
            .tripwires
            .iter()
            .find(|(fragment, wire)| text.contains(fragment.as_str()) && wire.take())
            .map(|(_, wire)| wire.clone());
        (
            latency,
            ttft,
            reply,
            request["model"]
                .as_str()
                .unwrap_or("claude-fake")
                .to_string(),
            wire,
            cache,
        )
    };
    if let Some(wire) = wire
        && !wire.hold().await
    {
        return (StatusCode::BAD_GATEWAY, "abandoned").into_response();
    }
    if streamed {
        let usage = openai_usage(body.len(), &reply, cache);
        let stream = Stream {
            state: state.clone(),
            model,
            usage: request["stream_options"]["include_usage"] == true,
            interrupts,
            latency,
            ttft,
            _hold: (serving, slot, busy),
        };
        return stream.reply(reply, usage);
    }
    if anthropic_streamed && let Reply::Text(text) = &reply {
        let usage = anthropic_usage(body.len(), text, cache);
        return anthropic_stream(text, &model, usage, ttft, latency, (serving, slot, busy));
    }
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if matches!(reply, Reply::Endless(_)) {
        std::future::pending::<()>().await;
    }
    match reply {
        Reply::Status(status, body) => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            body,
        )
            .into_response(),
        Reply::Endless(_) => (StatusCode::INTERNAL_SERVER_ERROR, "unreachable").into_response(),
        Reply::Text(text) if openai => {
            let usage = openai_usage(body.len(), &Reply::Text(text.clone()), cache);
            axum::Json(json!({
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": model,
                "choices": [ { "index": 0, "message": { "role": "assistant", "content": text }, "finish_reason": "stop" } ],
                "usage": usage
            }))
            .into_response()
        }
        Reply::Text(text) => {
            let usage = anthropic_usage(body.len(), &text, cache);
            axum::Json(json!({
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [ { "type": "text", "text": text } ],
                "stop_reason": "end_turn",
                "stop_sequence": null,
                "usage": usage
            }))
            .into_response()
        }
    }
}

/// Whether the conversation already carries tool results (Anthropic `tool_result`
/// blocks, OpenAI `tool` messages).
fn has_tool_results(request: &Value) -> bool {
    request["messages"].as_array().is_some_and(|messages| {
        messages.iter().any(|m| {
            m["role"] == "tool"
                || m["content"]
                    .as_array()
                    .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
        })
    })
}

/// A reply calling `calls`, or "DONE" when there are none, in the provider's shape.
fn tool_reply(openai: bool, model: &str, calls: &[(String, Value)]) -> Response {
    let usage_in = 100;
    if openai {
        let tool_calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, input))| {
                json!({"id": format!("call_{i}"), "type": "function",
                       "function": {"name": name, "arguments": input.to_string()}})
            })
            .collect();
        let message = if tool_calls.is_empty() {
            json!({"role": "assistant", "content": "DONE"})
        } else {
            json!({"role": "assistant", "content": null, "tool_calls": tool_calls})
        };
        return axum::Json(json!({
            "id": "chatcmpl-fake", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": if calls.is_empty() { "stop" } else { "tool_calls" }}],
            "usage": {"prompt_tokens": usage_in, "completion_tokens": 10}
        }))
        .into_response();
    }
    let content: Vec<Value> = if calls.is_empty() {
        vec![json!({"type": "text", "text": "DONE"})]
    } else {
        calls
            .iter()
            .enumerate()
            .map(|(i, (name, input))| {
                json!({"type": "tool_use", "id": format!("toolu_{i}"), "name": name, "input": input})
            })
            .collect()
    };
    axum::Json(json!({
        "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
        "content": content,
        "stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" },
        "stop_sequence": null,
        "usage": {"input_tokens": usage_in, "output_tokens": 10,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    }))
    .into_response()
}

/// OpenAI's `usage` for a reply to a request of `request_bytes`, about four bytes a token.
fn openai_usage(request_bytes: usize, reply: &Reply, cache: Cache) -> Value {
    let input_tokens = (request_bytes / 4) as u64;
    let output_tokens = match reply {
        Reply::Text(text) => (text.len() / 4) as u64 + 1,
        _ => 0,
    };
    let mut usage = json!({ "prompt_tokens": input_tokens, "completion_tokens": output_tokens });
    if let Cache::Read(cached) = cache {
        usage["prompt_tokens_details"] = json!({ "cached_tokens": cached.min(input_tokens) });
    }
    usage
}

/// A streamed Chat Completions reply (`stream: true`), as server-sent events.
struct Stream {
    state: Arc<Mutex<State>>,
    model: String,
    /// `stream_options.include_usage` was asked for.
    usage: bool,
    /// Break off when another request waits (see `State::interrupts`).
    interrupts: bool,
    /// Spread over the reply's chunks when interrupting (so there is a running stream to
    /// break off), else waited before the first.
    latency: Duration,
    /// When not interrupting, the first chunk comes this far into the latency and the rest
    /// at its end (the whole latency when no time to first token was set).
    ttft: Duration,
    /// The serving turn, the slot and the in-flight count, held until the stream ends or
    /// the client hangs up.
    _hold: (
        Option<tokio::sync::OwnedMutexGuard<()>>,
        Option<tokio::sync::OwnedSemaphorePermit>,
        InFlight,
    ),
}

/// What the stream sends next.
enum Next {
    Chunk(String),
    Finish,
    Usage,
    Done,
    End,
}

impl Stream {
    fn reply(self, reply: Reply, usage: Value) -> Response {
        let (pieces, endless): (Vec<String>, bool) = match reply {
            Reply::Text(text) => (chunks(&text), false),
            Reply::Endless(passage) => (chunks(&passage), true),
            Reply::Status(status, body) => {
                return (
                    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                    body,
                )
                    .into_response();
            }
        };
        let gap = if self.interrupts || endless {
            (self.latency / pieces.len().max(1) as u32).max(Duration::from_millis(1))
        } else {
            Duration::ZERO
        };
        let hang_up = HangUp {
            state: self.state.clone(),
            ended: false,
        };
        let stream = futures_util::stream::unfold(
            (0usize, self, hang_up),
            move |(i, this, mut hang_up)| {
                let pieces = pieces.clone();
                let usage = usage.clone();
                async move {
                    if gap.is_zero() {
                        match i {
                            0 => tokio::time::sleep(this.ttft).await,
                            1 => tokio::time::sleep(this.latency.saturating_sub(this.ttft)).await,
                            _ => {}
                        }
                    } else if i > 0 {
                        tokio::time::sleep(gap).await;
                    }
                    let broken_off = this.interrupts
                        && i > 0
                        && this.state.lock().unwrap_or_else(|e| e.into_inner()).waiting > 0;
                    let next = match i {
                        _ if hang_up.ended => Next::End,
                        _ if broken_off => Next::Done,
                        i if i < pieces.len() => Next::Chunk(pieces[i].clone()),
                        i if endless => Next::Chunk(pieces[i % pieces.len()].clone()),
                        i if i == pieces.len() => Next::Finish,
                        i if i == pieces.len() + 1 && this.usage => Next::Usage,
                        _ => Next::Done,
                    };
                    let data = match next {
                        Next::End => return None,
                        Next::Chunk(text) => json!({
                            "id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": this.model,
                            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]
                        })
                        .to_string(),
                        Next::Finish => json!({
                            "id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": this.model,
                            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]
                        })
                        .to_string(),
                        Next::Usage => json!({
                            "id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": this.model,
                            "choices": [], "usage": usage
                        })
                        .to_string(),
                        Next::Done => {
                            hang_up.ended = true;
                            "[DONE]".to_string()
                        }
                    };
                    let frame = Bytes::from(format!("data: {data}\n\n"));
                    Some((
                        Ok::<_, std::convert::Infallible>(frame),
                        (i + 1, this, hang_up),
                    ))
                }
            },
        );
        let mut response = axum::body::Body::from_stream(stream).into_response();
        response.headers_mut().insert(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("text/event-stream"),
        );
        response
    }
}

/// A reply in pieces of about a token or two, as model servers stream them.
fn chunks(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(8).map(|c| c.iter().collect()).collect()
}

/// Counts a stream the client stopped reading before its end.
struct HangUp {
    state: Arc<Mutex<State>>,
    ended: bool,
}

impl Drop for HangUp {
    fn drop(&mut self) {
        if !self.ended {
            self.state
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .hang_ups += 1;
        }
    }
}

/// The reply for `text`, and the matched rule's own latency if it has one.
fn next_reply(s: &mut State, text: &str) -> (Reply, Option<Duration>) {
    // Later rules win, so a test can override an earlier default.
    for rule in s.rules.iter_mut().rev() {
        if !text.contains(&rule.contains) || rule.replies.is_empty() {
            continue;
        }
        if rule.replies.len() == 1 && rule.sticky {
            return (rule.replies[0].clone(), rule.latency);
        }
        return (rule.replies.remove(0), rule.latency);
    }
    let reply = Reply::Text(
        s.default_reply
            .clone()
            .unwrap_or_else(|| "I have nothing to add.".to_string()),
    );
    (reply, None)
}

/// How a request's prompt met the cache.
#[derive(Debug, Clone, Copy)]
enum Cache {
    None,
    Read(u64),
    Written(u64),
}

/// Counts a request in flight while it is alive (dropped when answered or abandoned).
struct InFlight(Arc<Mutex<State>>);

impl InFlight {
    fn enter(state: Arc<Mutex<State>>) -> Self {
        {
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            s.in_flight += 1;
            s.most_in_flight = s.most_in_flight.max(s.in_flight);
        }
        InFlight(state)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        s.in_flight = s.in_flight.saturating_sub(1);
    }
}

/// Anthropic's accounting: the prompt up to the last block carrying `cache_control`
/// (system blocks, then message blocks, in order) is the cached prefix, when it is at
/// least the model's minimum. Read if an earlier answer with it has begun; written
/// otherwise, readable from `begins`.
fn anthropic_cache(s: &mut State, request: &Value, begins: Instant) -> Cache {
    let mut text = String::new();
    let mut prefix: Option<usize> = None;
    let mut add = |content: &Value, text: &mut String| match content {
        Value::String(t) => text.push_str(t),
        Value::Array(blocks) => {
            for block in blocks {
                text.push_str(block["text"].as_str().unwrap_or_default());
                if block.get("cache_control").is_some() {
                    prefix = Some(text.len());
                }
            }
        }
        _ => {}
    };
    add(&request["system"], &mut text);
    for message in request["messages"].as_array().into_iter().flatten() {
        add(&message["content"], &mut text);
    }
    let Some(end) = prefix else {
        return Cache::None;
    };
    let tokens = end / 4;
    if tokens < CACHE_MIN_TOKENS {
        return Cache::None;
    }
    use std::collections::hash_map::Entry;
    match s.cached_prefixes.entry(text[..end].to_string()) {
        Entry::Occupied(ready) if *ready.get() <= Instant::now() => Cache::Read(tokens as u64),
        Entry::Occupied(mut ready) => {
            let sooner = (*ready.get()).min(begins);
            ready.insert(sooner);
            Cache::Written(tokens as u64)
        }
        Entry::Vacant(entry) => {
            entry.insert(begins);
            Cache::Written(tokens as u64)
        }
    }
}

/// OpenAI's automatic caching, when emulated: the longest prefix shared with an earlier
/// prompt whose answer has begun, in whole 128-token blocks, from 1,024 tokens.
fn openai_cached_tokens(s: &mut State, text: &str, begins: Instant) -> Cache {
    let Some(seen) = s.openai_cache.as_mut() else {
        return Cache::None;
    };
    let now = Instant::now();
    let shared = seen
        .iter()
        .filter(|(_, ready)| *ready <= now)
        .map(|(earlier, _)| {
            earlier
                .bytes()
                .zip(text.bytes())
                .take_while(|(a, b)| a == b)
                .count()
        })
        .max()
        .unwrap_or(0);
    seen.push((text.to_string(), begins));
    let tokens = (shared / 4) / 128 * 128;
    if tokens >= 1024 {
        Cache::Read(tokens as u64)
    } else {
        Cache::None
    }
}

/// Anthropic's `usage` for a reply of `text` to a request of `request_bytes`, about four
/// bytes a token: input after the cached prefix, and the prefix as read or written.
fn anthropic_usage(request_bytes: usize, text: &str, cache: Cache) -> Value {
    let all_input = (request_bytes / 4) as u64;
    let (read, write) = match cache {
        Cache::Read(tokens) => (tokens, 0),
        Cache::Written(tokens) => (0, tokens),
        Cache::None => (0, 0),
    };
    json!({
        "input_tokens": all_input.saturating_sub(read + write),
        "output_tokens": (text.len() / 4) as u64 + 1,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read
    })
}

/// A streamed Messages reply as Anthropic sends it: `message_start` (with the input
/// usage) `ttft` in, the text in deltas at the end of `latency`, then `message_delta` and
/// `message_stop`. Holds the serving turn, the slot and the in-flight count to its end.
fn anthropic_stream(
    text: &str,
    model: &str,
    usage: Value,
    ttft: Duration,
    latency: Duration,
    hold: (
        Option<tokio::sync::OwnedMutexGuard<()>>,
        Option<tokio::sync::OwnedSemaphorePermit>,
        InFlight,
    ),
) -> Response {
    let event = |kind: &str, data: Value| format!("event: {kind}\ndata: {data}\n\n");
    let mut start_usage = usage.clone();
    start_usage["output_tokens"] = json!(1);
    let mut frames = vec![(
        ttft,
        event(
            "message_start",
            json!({"type": "message_start", "message": {
                "id": "msg_fake", "type": "message", "role": "assistant", "content": [],
                "model": model, "stop_reason": null, "stop_sequence": null, "usage": start_usage}}),
        ),
    )];
    let mut rest = vec![event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    )];
    for piece in chunks(text) {
        rest.push(event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}),
        ));
    }
    rest.push(event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    rest.push(event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
               "usage": {"output_tokens": usage["output_tokens"]}}),
    ));
    rest.push(event("message_stop", json!({"type": "message_stop"})));
    frames.push((latency.saturating_sub(ttft), rest.concat()));
    let stream = futures_util::stream::unfold(
        (frames.into_iter(), hold),
        |(mut frames, hold)| async move {
            let (wait, frame) = frames.next()?;
            tokio::time::sleep(wait).await;
            Some((
                Ok::<_, std::convert::Infallible>(Bytes::from(frame)),
                (frames, hold),
            ))
        },
    );
    let mut response = axum::body::Body::from_stream(stream).into_response();
    response.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("text/event-stream"),
    );
    response
}

fn system_text(system: &Value) -> String {
    match system {
        Value::String(s) => s.clone(),
        other => content_text(other),
    }
}

fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        // The blocks as the model reads them: one text, in order (tool results too).
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str().or_else(|| b["content"].as_str()))
            .collect(),
        _ => String::new(),
    }
}
