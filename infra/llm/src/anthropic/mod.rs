//! Anthropic Messages API: `POST {base}/v1/messages`.
//!
//! Anthropic has no JSON mode; the `json` option is ignored and the structured-output
//! helper's instructions and extraction do the work. A message's shared prefix gets a
//! `cache_control` breakpoint when it is long enough to cache (see [`crate::cache`]).
//! A request whose caller waits for the answer to begin is streamed ([`stream`]).

mod stream;

use crate::cache;
use crate::http::{self, ErrorInfo, RawResponse};
use crate::retry::{RetryPolicy, with_retries};
use async_trait::async_trait;
use parley_core::ports::llm::{
    AnswerStarted, CutOff, Llm, LlmError, LlmRequest, LlmResponse, Message, PromptCache, Role,
    ToolCall, Usage,
};
use reqwest::Client;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt;
use std::time::Duration;

const API_VERSION: &str = "2023-06-01";
const PROVIDER: &str = "anthropic";

pub struct AnthropicLlm {
    client: Client,
    url: String,
    api_key: String,
    model: String,
    timeout: Duration,
    retry: RetryPolicy,
}

impl fmt::Debug for AnthropicLlm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicLlm")
            .field("url", &self.url)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl AnthropicLlm {
    /// `base_url` is the API root (`https://api.anthropic.com`), without `/v1`.
    pub fn new(
        base_url: &str,
        api_key: impl Into<String>,
        model: impl Into<String>,
        timeout: Duration,
        retry: RetryPolicy,
    ) -> Result<Self, LlmError> {
        Ok(Self {
            client: http::client()?,
            url: format!("{}/v1/messages", base_url.trim_end_matches('/')),
            api_key: api_key.into(),
            model: model.into(),
            timeout,
            retry,
        })
    }

    fn post(&self, body: &MessagesRequest<'_>) -> reqwest::RequestBuilder {
        self.client
            .post(&self.url)
            .header("x-api-key", &self.api_key)
            .header("anthropic-version", API_VERSION)
            .json(body)
    }

    async fn attempt(
        &self,
        body: &MessagesRequest<'_>,
        timeout: Duration,
    ) -> Result<LlmResponse, LlmError> {
        let response = http::send(self.post(body), timeout).await?;
        self.whole_reply(&response)
    }

    /// A reply read whole: an error status classified, else the message decoded.
    fn whole_reply(&self, response: &RawResponse) -> Result<LlmResponse, LlmError> {
        http::check_status(response, &self.url, error_info)?;
        let reply: MessagesResponse = http::decode(PROVIDER, response)?;
        let text = reply
            .content
            .iter()
            .filter(|block| block.kind == "text")
            .filter_map(|block| block.text.as_deref())
            .collect::<String>();
        let tool_calls = reply
            .content
            .iter()
            .filter(|block| block.kind == "tool_use")
            .map(|block| ToolCall {
                id: block.id.clone().unwrap_or_default(),
                name: block.name.clone().unwrap_or_default(),
                input: block.input.clone().unwrap_or(Value::Null),
            })
            .collect();
        Ok(self.response(
            text,
            tool_calls,
            reply.model,
            reply.stop_reason,
            reply.usage,
        ))
    }

    /// One streamed attempt, all of it within `timeout` as a whole reply would be;
    /// `started` is set when the answer begins.
    async fn attempt_streamed(
        &self,
        body: &MessagesRequest<'_>,
        timeout: Duration,
        started: &AnswerStarted,
    ) -> Result<LlmResponse, LlmError> {
        let call = async {
            let response = match http::open_stream(self.post(body), timeout).await? {
                http::Opened::Stream(response) => response,
                http::Opened::Whole(whole) => {
                    let reply = self.whole_reply(&whole);
                    if reply.is_ok() {
                        // Begun and ended at once (a proxy that ignored `stream`).
                        started.set();
                    }
                    return reply;
                }
            };
            let reply = stream::read(response, started, &self.url).await?;
            Ok(self.response(
                reply.text,
                reply.tool_calls,
                reply.model,
                reply.stop_reason,
                reply.usage,
            ))
        };
        // Dropping the call at the deadline closes the connection: Anthropic stops.
        tokio::time::timeout(timeout, call)
            .await
            .unwrap_or(Err(LlmError::Timeout(timeout)))
    }

    fn response(
        &self,
        text: String,
        tool_calls: Vec<ToolCall>,
        model: Option<String>,
        stop_reason: Option<String>,
        usage: WireUsage,
    ) -> LlmResponse {
        LlmResponse {
            text,
            // `input_tokens` is what came after the last cache breakpoint: the three
            // parts are billed differently and never overlap.
            usage: Usage::new(usage.input_tokens, usage.output_tokens).with_cache(
                usage.cache_read_input_tokens.unwrap_or(0),
                usage.cache_creation_input_tokens.unwrap_or(0),
            ),
            model: model.unwrap_or_else(|| self.model.clone()),
            cut_off: (stop_reason.as_deref() == Some("max_tokens")).then_some(CutOff::OutputLimit),
            tool_calls,
        }
    }
}

#[async_trait]
impl Llm for AnthropicLlm {
    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        // A breakpoint where the shared prefix ends, when it is long enough for this
        // model to cache (the cache covers the system prompt and everything before it).
        let cache = request
            .cacheable_tokens()
            .is_some_and(|tokens| tokens >= cache::anthropic_min_tokens(&self.model));
        let body = MessagesRequest {
            model: &self.model,
            max_tokens: request.options.max_tokens,
            system: Some(request.system.as_str()).filter(|s| !s.trim().is_empty()),
            messages: request
                .messages
                .iter()
                .map(|m| WireMessage {
                    role: match m.role {
                        Role::User => "user",
                        Role::Assistant => "assistant",
                    },
                    content: match m.split_at_cache_prefix().filter(|_| cache) {
                        _ if !m.tool_calls.is_empty() || !m.tool_results.is_empty() => {
                            Content::Tools(tool_blocks(m))
                        }
                        Some((shared, own)) => Content::Blocks(vec![
                            TextBlock {
                                kind: "text",
                                text: shared,
                                cache_control: Some(CacheControl { kind: "ephemeral" }),
                            },
                            TextBlock {
                                kind: "text",
                                text: own,
                                cache_control: None,
                            },
                        ]),
                        None => Content::Text(&m.text),
                    },
                })
                .collect(),
            temperature: request.options.temperature,
            tools: (!request.tools.is_empty()).then(|| {
                request
                    .tools
                    .iter()
                    .map(|t| {
                        json!({"name": t.name, "description": t.description, "input_schema": t.input_schema})
                    })
                    .collect()
            }),
            stream: None,
        };
        let timeout = request.options.timeout.unwrap_or(self.timeout);
        crate::trace_request(PROVIDER, &self.model, request);
        match &request.options.started {
            Some(started) => {
                let body = MessagesRequest {
                    stream: Some(true),
                    ..body
                };
                with_retries(&self.retry, PROVIDER, &self.model, || {
                    self.attempt_streamed(&body, timeout, started)
                })
                .await
            }
            None => {
                with_retries(&self.retry, PROVIDER, &self.model, || {
                    self.attempt(&body, timeout)
                })
                .await
            }
        }
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn prompt_cache(&self) -> PromptCache {
        PromptCache::Marked {
            min_tokens: cache::anthropic_min_tokens(&self.model),
        }
    }

    /// Every current Claude model takes tools.
    fn supports_tools(&self) -> bool {
        true
    }
}

/// A turn with tool calls (`tool_use` blocks after its text) or tool results
/// (`tool_result` blocks), as the Messages API takes them.
fn tool_blocks(message: &Message) -> Vec<Value> {
    let mut blocks = Vec::new();
    if !message.text.trim().is_empty() {
        blocks.push(json!({"type": "text", "text": message.text}));
    }
    for call in &message.tool_calls {
        blocks.push(
            json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.input}),
        );
    }
    for result in &message.tool_results {
        blocks.push(json!({
            "type": "tool_result",
            "tool_use_id": result.call_id,
            "content": result.content,
            "is_error": result.is_error,
        }));
    }
    blocks
}

fn error_info(response: &RawResponse) -> ErrorInfo {
    #[derive(Deserialize)]
    struct Envelope {
        error: Detail,
    }
    #[derive(Deserialize)]
    struct Detail {
        #[serde(rename = "type", default)]
        kind: String,
        #[serde(default)]
        message: String,
    }
    match serde_json::from_slice::<Envelope>(&response.body) {
        Ok(Envelope { error }) => ErrorInfo {
            kind: error.kind,
            message: http::truncate(&error.message),
        },
        Err(_) => ErrorInfo::from_raw(&response.body),
    }
}

#[derive(Serialize)]
struct MessagesRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a str>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Content<'a>,
}

/// A message's content: plain text, or text blocks when part of it is marked for the
/// prompt cache.
#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(&'a str),
    Blocks(Vec<TextBlock<'a>>),
    Tools(Vec<Value>),
}

#[derive(Serialize)]
struct TextBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Deserialize)]
struct MessagesResponse {
    #[serde(default)]
    model: Option<String>,
    content: Vec<ContentBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    usage: WireUsage,
}

#[derive(Deserialize)]
struct ContentBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    /// A `tool_use` block's call.
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    input_tokens: u64,
    output_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// A stream's `message_delta` counts are cumulative: they replace what
    /// `message_start` said, where they are given.
    fn merge(&mut self, later: stream::DeltaUsage) {
        self.output_tokens = later.output_tokens.unwrap_or(self.output_tokens);
        self.input_tokens = later.input_tokens.unwrap_or(self.input_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = later
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
    }
}
