//! The Chat Completions request and reply as they go over the wire, and the token
//! estimates used when a server reports no usage.

use crate::stream;
use parley_core::ports::llm::ToolCall;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Serialize)]
pub(super) struct ChatRequest<'a> {
    pub(super) model: &'a str,
    pub(super) messages: Vec<ChatMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) response_format: Option<ResponseFormat>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) cache_prompt: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tools: Option<Vec<Value>>,
}

impl ChatRequest<'_> {
    /// What the request sends the model, in tokens as [`estimated_tokens`] counts them:
    /// every message's text and tool calls, and the tools offered.
    pub(super) fn estimated_input_tokens(&self) -> u64 {
        let json_len = |value: &Value| value.to_string().len();
        let messages: usize = self
            .messages
            .iter()
            .map(|m| {
                m.content.map_or(0, str::len)
                    + m.tool_calls.iter().flatten().map(json_len).sum::<usize>()
            })
            .sum();
        let tools: usize = self.tools.iter().flatten().map(json_len).sum();
        estimated_tokens(messages + tools)
    }
}

/// What the model wrote in tool calls, in bytes: a reply that only calls tools still
/// cost its writing.
pub(super) fn tool_calls_len(calls: &[ToolCall]) -> usize {
    calls
        .iter()
        .map(|call| call.name.len() + call.input.to_string().len())
        .sum()
}

/// About four bytes a token, as the review budgets count text: for when a server reports
/// no usage.
pub(super) fn estimated_tokens(bytes: usize) -> u64 {
    u64::try_from(bytes.div_ceil(4)).unwrap_or(u64::MAX)
}

/// Asks for usage in the stream's last chunk (OpenAI, vLLM, llama.cpp, Ollama).
#[derive(Serialize)]
pub(super) struct StreamOptions {
    pub(super) include_usage: bool,
}

#[derive(Serialize)]
pub(super) struct ChatMessage<'a> {
    pub(super) role: &'static str,
    /// `null` on an assistant turn that only called tools.
    pub(super) content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_calls: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_call_id: Option<&'a str>,
}

#[derive(Serialize)]
pub(super) struct ResponseFormat {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) json_schema: Option<JsonSchemaFormat>,
    /// For [`super::Format::JsonObjectSchema`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) schema: Option<serde_json::Value>,
}

#[derive(Serialize)]
pub(super) struct JsonSchemaFormat {
    pub(super) name: &'static str,
    pub(super) schema: serde_json::Value,
    /// OpenAI's strict mode needs every property required and no optional fields; the
    /// findings schema has optional ones, and the reply is validated by Parley anyway.
    pub(super) strict: bool,
}

#[derive(Deserialize)]
pub(super) struct ChatResponse {
    #[serde(default)]
    pub(super) model: Option<String>,
    pub(super) choices: Vec<Choice>,
    #[serde(default)]
    pub(super) usage: Option<stream::ChunkUsage>,
}

#[derive(Deserialize)]
pub(super) struct Choice {
    pub(super) message: ChoiceMessage,
    #[serde(default)]
    pub(super) finish_reason: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct ChoiceMessage {
    /// `null` when the model refused or only called tools.
    #[serde(default)]
    pub(super) content: Option<String>,
    #[serde(default)]
    pub(super) tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
pub(super) struct WireToolCall {
    #[serde(default)]
    pub(super) id: String,
    pub(super) function: WireFunction,
}

#[derive(Deserialize)]
pub(super) struct WireFunction {
    pub(super) name: String,
    #[serde(default)]
    pub(super) arguments: String,
}
