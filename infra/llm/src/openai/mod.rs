//! OpenAI-compatible Chat Completions: `POST {base}/chat/completions`.
//!
//! One adapter for OpenAI, OpenRouter, vLLM, Ollama and the llama.cpp server, so it only
//! relies on what they all share. The key is optional because local servers take none.
//! Prompt caching needs no marker here: OpenAI and vLLM reuse a repeated prefix on their
//! own, which is why the shared part of a review's prompt comes first (see
//! `parley_core::review::prompts`); llama.cpp is asked to with `cache_prompt`.

use crate::http::{self, RawResponse};
use crate::retry::{self, RetryPolicy, retry_while};
use crate::stream;
use async_trait::async_trait;
use parley_core::llm::normalise_model_id;
use parley_core::ports::llm::{
    AnswerStarted, CutOff, Llm, LlmError, LlmRequest, LlmResponse, PromptCache, Role, ToolCall,
    Usage,
};
use reqwest::Client;
use serde_json::{Value, json};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

mod refusals;
mod wire;

use refusals::{error_info, refuses_format, refuses_tools};
use wire::{
    ChatMessage, ChatRequest, ChatResponse, JsonSchemaFormat, ResponseFormat, StreamOptions,
    estimated_tokens, tool_calls_len,
};

const PROVIDER: &str = "openai";

pub struct OpenAiLlm {
    client: Client,
    url: String,
    api_key: Option<String>,
    model: String,
    /// OpenAI's reasoning models reject `max_tokens` and `temperature`.
    reasoning: bool,
    timeout: Duration,
    retry: RetryPolicy,
    /// The strictest structured-output mode this server has not refused, learned once per
    /// process (see [`Format`]): after one refusal no later call pays for it again.
    format: AtomicU8,
    /// A llama.cpp server: ask it to keep the prompt's processed prefix in its slot
    /// (`cache_prompt`), so the next pass on that slot starts after the shared part.
    /// Only there: OpenAI's API refuses unknown fields.
    cache_prompt: bool,
    /// A self-hosted server: read replies as they are written ([`crate::stream`]), so a
    /// slow or runaway model is cut off with what it wrote instead of timing out.
    streaming: bool,
    /// No later call sends `tools`: the server refused them once (Ollama with a model that
    /// has no tool template, llama.cpp without `--jinja`), or its model never called one
    /// in [`UNUSED_TOOL_TURNS`] turns that were wasted (see [`Llm::tools_went_unused`]).
    tools_off: AtomicBool,
    /// The model called a tool at least once: it can, so a wasted turn is its choice.
    tools_called: AtomicBool,
    /// Turns that offered tools, called none and gave no usable answer.
    tools_unused: AtomicU32,
}

/// How many wasted turns of reading, with no tool call ever, stop the offer of tools.
/// A server can ignore `tools` without a word (llama-cpp-python unless it runs a
/// function-calling chat format): the model then answers the turn of reading (which has
/// no JSON mode) in prose, and every pass pays for that turn and asks again. The first
/// review's concurrent passes are enough to tell; later ones ask once.
const UNUSED_TOOL_TURNS: u32 = 3;

/// Structured-output modes, strictest first. OpenAI, vLLM and recent llama.cpp and Ollama
/// constrain decoding to a JSON Schema; older servers and some proxies reject
/// `json_schema` (400) but take `json_object`; a few reject `response_format` altogether.
/// A small self-hosted model gets the most help from the strictest mode the server takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
enum Format {
    /// OpenAI's `{"type": "json_schema", "json_schema": {…}}`.
    JsonSchema = 0,
    /// `{"type": "json_object", "schema": {…}}`: llama-cpp-python's form (Anyscale's and
    /// Together's too), which it turns into a grammar, so that even a small model can only
    /// write JSON of the schema's shape. Servers that know neither schema form refuse it or
    /// ignore the field.
    JsonObjectSchema = 1,
    JsonObject = 2,
    Plain = 3,
}

impl Format {
    fn from_u8(value: u8) -> Self {
        match value {
            0 => Format::JsonSchema,
            1 => Format::JsonObjectSchema,
            2 => Format::JsonObject,
            _ => Format::Plain,
        }
    }

    fn weaker(self) -> Option<Self> {
        match self {
            Format::JsonSchema => Some(Format::JsonObjectSchema),
            Format::JsonObjectSchema => Some(Format::JsonObject),
            Format::JsonObject => Some(Format::Plain),
            Format::Plain => None,
        }
    }
}

impl fmt::Debug for OpenAiLlm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiLlm")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

impl OpenAiLlm {
    /// `base_url` includes the version path (`https://api.openai.com/v1`,
    /// `http://localhost:11434/v1`).
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        model: impl Into<String>,
        timeout: Duration,
        retry: RetryPolicy,
    ) -> Result<Self, LlmError> {
        let model = model.into();
        Ok(Self {
            client: http::client()?,
            url: format!("{}/chat/completions", base_url.trim_end_matches('/')),
            api_key,
            reasoning: is_reasoning_model(&model),
            model,
            timeout,
            retry,
            format: AtomicU8::new(Format::JsonSchema as u8),
            cache_prompt: false,
            streaming: false,
            tools_off: AtomicBool::new(false),
            tools_called: AtomicBool::new(false),
            tools_unused: AtomicU32::new(0),
        })
    }

    pub fn with_streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    pub fn with_cache_prompt(mut self, cache_prompt: bool) -> Self {
        self.cache_prompt = cache_prompt;
        self
    }

    /// The `response_format` for `request` in `format` (none for plain text, or when the
    /// caller wants no JSON).
    fn response_format(request: &LlmRequest, format: Format) -> Option<ResponseFormat> {
        if !request.options.json {
            return None;
        }
        match (format, &request.options.schema) {
            (Format::JsonSchema, Some(schema)) => Some(ResponseFormat {
                kind: "json_schema",
                json_schema: Some(JsonSchemaFormat {
                    name: schema.name,
                    schema: schema.schema.clone(),
                    strict: false,
                }),
                schema: None,
            }),
            (Format::JsonObjectSchema, Some(schema)) => Some(ResponseFormat {
                kind: "json_object",
                json_schema: None,
                schema: Some(schema.schema.clone()),
            }),
            (Format::JsonSchema | Format::JsonObjectSchema | Format::JsonObject, _) => {
                Some(ResponseFormat {
                    kind: "json_object",
                    json_schema: None,
                    schema: None,
                })
            }
            (Format::Plain, _) => None,
        }
    }

    /// Remember that the server refused `refused`; the next mode down is used from now on.
    /// Also whether this call was the one to step down: the passes of a review start at
    /// once and are all refused, and the operator needs to read that once, not five times.
    fn downgrade(&self, refused: Format) -> Option<(Format, bool)> {
        let weaker = refused.weaker()?;
        let before = self.format.fetch_max(weaker as u8, Ordering::SeqCst);
        Some((weaker, before < weaker as u8))
    }

    async fn attempt(
        &self,
        body: &ChatRequest<'_>,
        timeout: Duration,
        started: Option<&AnswerStarted>,
    ) -> Result<LlmResponse, LlmError> {
        let mut request = self.client.post(&self.url).json(body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        if body.stream == Some(true) {
            return self.attempt_streamed(request, timeout, body, started).await;
        }
        let response = http::send(request, timeout).await?;
        self.whole_reply(&response, body)
    }

    /// A reply read whole: an error status classified, else the completion decoded.
    fn whole_reply(
        &self,
        response: &RawResponse,
        body: &ChatRequest<'_>,
    ) -> Result<LlmResponse, LlmError> {
        http::check_status(response, &self.url, error_info)?;
        let reply: ChatResponse = http::decode(PROVIDER, response)?;
        let Some(choice) = reply.choices.into_iter().next() else {
            return Err(LlmError::Decode(format!("{PROVIDER} reply has no choices")));
        };
        let text = choice.message.content.unwrap_or_default();
        let tool_calls: Vec<ToolCall> = choice
            .message
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .map(|call| ToolCall {
                id: call.id,
                // The arguments are a JSON string the model wrote; left as a string when
                // it is not JSON, for the tool to refuse with a reason.
                input: serde_json::from_str(&call.function.arguments)
                    .unwrap_or(Value::String(call.function.arguments)),
                name: call.function.name,
            })
            .collect();
        let usage = reply.usage.map_or_else(
            || {
                tracing::debug!(model = %self.model, "LLM reply carries no usage; counting it here");
                Usage::estimated(
                    body.estimated_input_tokens(),
                    estimated_tokens(text.len() + tool_calls_len(&tool_calls)),
                )
            },
            |u| u.usage(),
        );
        Ok(LlmResponse {
            text,
            usage,
            model: reply
                .model
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| self.model.clone()),
            cut_off: at_output_limit(choice.finish_reason.as_deref()),
            tool_calls,
        })
    }

    /// One streamed attempt: `timeout` for the response to start and between chunks, and
    /// again for the whole reply once it has started (see [`crate::stream`]).
    async fn attempt_streamed(
        &self,
        request: reqwest::RequestBuilder,
        timeout: Duration,
        body: &ChatRequest<'_>,
        started: Option<&AnswerStarted>,
    ) -> Result<LlmResponse, LlmError> {
        let response = match http::open_stream(request, timeout).await? {
            http::Opened::Stream(response) => response,
            http::Opened::Whole(whole) => return self.whole_reply(&whole, body),
        };
        let limits = stream::StreamLimits {
            idle: timeout,
            budget: timeout,
        };
        // A self-hosted model may go on after its JSON for minutes; a cloud API ends its
        // reply, and its usage comes in the last chunk, after the JSON: read to the end.
        let stop_at_json = self.streaming && body.response_format.is_some();
        let reply = stream::read(response, limits, stop_at_json, started).await?;
        match reply.stop {
            Some(stream::Stop::Budget) => tracing::info!(
                model = %self.model,
                budget_secs = timeout.as_secs(),
                chunks = reply.content_chunks,
                "the model was still writing at the call's time limit; its reply is cut off there"
            ),
            Some(stream::Stop::Repeating) => tracing::info!(
                model = %self.model,
                chunks = reply.content_chunks,
                "the model was writing the same passage again and again; its reply is cut off there"
            ),
            _ => {}
        }
        let usage = match reply.usage {
            Some(u) => u.usage(),
            // Servers that send no usage in a stream: each chunk of text is about one
            // token; tool calls come in pieces of any size, so they count by length.
            None => Usage::estimated(
                body.estimated_input_tokens(),
                reply.content_chunks + estimated_tokens(tool_calls_len(&reply.tool_calls)),
            ),
        };
        Ok(LlmResponse {
            text: reply.text,
            usage,
            model: reply.model.unwrap_or_else(|| self.model.clone()),
            cut_off: reply
                .stop
                .and_then(stream::Stop::cut_off)
                .or(at_output_limit(reply.finish_reason.as_deref())),
            tool_calls: reply.tool_calls,
        })
    }
}

#[async_trait]
impl Llm for OpenAiLlm {
    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let system = Some(request.system.as_str())
            .filter(|s| !s.trim().is_empty())
            .map(|content| ChatMessage {
                role: "system",
                content: Some(content),
                tool_calls: None,
                tool_call_id: None,
            });
        let messages = system
            .into_iter()
            .chain(request.messages.iter().flat_map(|m| {
                if !m.tool_results.is_empty() {
                    // One `tool` message per result, after the assistant's calls.
                    return m
                        .tool_results
                        .iter()
                        .map(|r| ChatMessage {
                            role: "tool",
                            content: Some(r.content.as_str()),
                            tool_calls: None,
                            tool_call_id: Some(r.call_id.as_str()),
                        })
                        .collect::<Vec<_>>();
                }
                let tool_calls = (!m.tool_calls.is_empty()).then(|| {
                    m.tool_calls
                        .iter()
                        .map(|c| {
                            json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.input.to_string()}})
                        })
                        .collect()
                });
                vec![ChatMessage {
                    role: match m.role {
                        Role::User => "user",
                        Role::Assistant => "assistant",
                    },
                    content: Some(m.text.as_str()).filter(|t| tool_calls.is_none() || !t.is_empty()),
                    tool_calls,
                    tool_call_id: None,
                }]
            }))
            .collect();
        let tools: Option<Vec<Value>> = (!request.tools.is_empty()
            && !self.tools_off.load(Ordering::SeqCst))
        .then(|| {
            request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}})
                })
                .collect()
        });
        // Streamed for a self-hosted server (see `crate::stream`), and for a caller that
        // waits for the answer to begin (the first chunk says it has): a review's first
        // pass, whose turn of reading may be its whole answer. Tool calls stream in
        // pieces, put together once the reply ends.
        let streaming = self.streaming || request.options.started.is_some();
        let started = request.options.started.as_ref();
        let max_tokens = request.options.max_tokens;
        let body = ChatRequest {
            model: &self.model,
            messages,
            max_tokens: (!self.reasoning).then_some(max_tokens),
            max_completion_tokens: self.reasoning.then_some(max_tokens),
            temperature: request.options.temperature.filter(|_| !self.reasoning),
            response_format: None,
            cache_prompt: self.cache_prompt.then_some(true),
            stream: streaming.then_some(true),
            stream_options: streaming.then_some(StreamOptions {
                include_usage: true,
            }),
            tools,
        };
        let mut body = body;
        let timeout = request.options.timeout.unwrap_or(self.timeout);
        crate::trace_request(PROVIDER, &self.model, request);
        let mut format = Format::from_u8(self.format.load(Ordering::SeqCst));
        loop {
            body.response_format = Self::response_format(request, format);
            let asked = body.response_format.as_ref().map(|f| f.kind);
            // A refused format is not retried as it is: the loop below asks again in a
            // weaker mode at once, whatever status the server gave it.
            let result = retry_while(
                &self.retry,
                PROVIDER,
                &self.model,
                || self.attempt(&body, timeout, started),
                |err: &LlmError| {
                    if asked.is_some() && refuses_format(err) {
                        return None;
                    }
                    if body.tools.is_some() && refuses_tools(err) {
                        return None;
                    }
                    retry::is_retryable(err).then(|| err.retry_after())
                },
            )
            .await;
            match result {
                Err(err) if body.tools.is_some() && refuses_tools(&err) => {
                    self.tools_off.store(true, Ordering::SeqCst);
                    tracing::warn!(
                        model = %self.model, error = %err,
                        "the server refused tool definitions; reviews read the static context alone from now on"
                    );
                    return Err(LlmError::ToolsUnsupported(err.to_string()));
                }
                Err(err) if asked.is_some() && refuses_format(&err) => {
                    let Some((weaker, first)) = self.downgrade(format) else {
                        return Err(err);
                    };
                    if first {
                        tracing::warn!(
                            model = %self.model, refused = ?asked, now = ?weaker,
                            "the server refused this response_format; using a weaker one from now on"
                        );
                    }
                    format = weaker;
                }
                Ok(reply) => {
                    if !reply.tool_calls.is_empty() {
                        self.tools_called.store(true, Ordering::SeqCst);
                    }
                    return Ok(reply);
                }
                other => return other,
            }
        }
    }

    fn model(&self) -> &str {
        &self.model
    }

    /// Until the server refuses them once, or its model shows it does not use them.
    fn supports_tools(&self) -> bool {
        !self.tools_off.load(Ordering::SeqCst)
    }

    fn tools_went_unused(&self) {
        if self.tools_called.load(Ordering::SeqCst) {
            return;
        }
        if self.tools_unused.fetch_add(1, Ordering::SeqCst) + 1 == UNUSED_TOOL_TURNS
            && !self.tools_off.swap(true, Ordering::SeqCst)
        {
            tracing::warn!(
                model = %self.model,
                turns = UNUSED_TOOL_TURNS,
                "the model has not called a tool in the turns that offered them and answered unusably; reviews read the static context alone from now on (the server may ignore `tools`: llama-cpp-python does unless started with a function-calling chat format)"
            );
        }
    }

    /// OpenAI caches long prefixes on its own; what other servers keep (a llama.cpp
    /// slot's last prompt) is not a cache a review can count on across its passes.
    fn prompt_cache(&self) -> PromptCache {
        if is_openai_api(&self.url) {
            PromptCache::Automatic {
                min_tokens: crate::cache::OPENAI_MIN_TOKENS,
            }
        } else {
            PromptCache::None
        }
    }
}

/// `finish_reason: "length"`: the reply stopped at `max_tokens`.
fn at_output_limit(finish_reason: Option<&str>) -> Option<CutOff> {
    (finish_reason == Some("length")).then_some(CutOff::OutputLimit)
}

fn is_openai_api(url: &str) -> bool {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
        .is_some_and(|host| host == "api.openai.com")
}

/// o-series and GPT-5 models take `max_completion_tokens` and only the default
/// temperature. Other servers (Ollama, vLLM) still expect `max_tokens`.
fn is_reasoning_model(model: &str) -> bool {
    let id = normalise_model_id(model);
    ["o1", "o3", "o4", "gpt-5"].iter().any(|family| {
        id.strip_prefix(family)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '.', ':']))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The passes that were refused together step down once: only the first says so.
    #[test]
    fn a_refused_format_is_stepped_down_once_however_many_calls_were_refused() {
        let llm = OpenAiLlm::new(
            "http://127.0.0.1:9",
            None,
            "local",
            Duration::from_secs(1),
            RetryPolicy::default(),
        )
        .expect("client");
        assert_eq!(
            llm.downgrade(Format::JsonSchema),
            Some((Format::JsonObjectSchema, true))
        );
        assert_eq!(
            llm.downgrade(Format::JsonSchema),
            Some((Format::JsonObjectSchema, false)),
            "a second refusal of the same format changes nothing"
        );
        assert_eq!(
            llm.downgrade(Format::JsonObjectSchema),
            Some((Format::JsonObject, true))
        );
        assert_eq!(
            llm.downgrade(Format::JsonObject),
            Some((Format::Plain, true))
        );
        assert_eq!(llm.downgrade(Format::Plain), None);
    }

    #[test]
    fn reasoning_models_are_recognised_by_family() {
        for model in [
            "o1",
            "o3-mini",
            "o4-mini-2025-04-16",
            "gpt-5",
            "gpt-5.1",
            "openai/o3",
        ] {
            assert!(is_reasoning_model(model), "{model}");
        }
        for model in ["gpt-4o", "gpt-4.1-mini", "llama3.1:8b", "o10", "qwen3:32b"] {
            assert!(!is_reasoning_model(model), "{model}");
        }
    }
}
