//! Reading a streamed Messages reply (`stream: true`).
//!
//! Parley streams a Messages call when the caller wants to know the moment Anthropic
//! begins answering ([`AnswerStarted`]): a review's first pass, after which the other
//! passes may go and read the prompt cache it has just written. Anthropic makes a cache
//! entry available once the first response begins, and `message_start` is that moment.
//! The rest of the stream is assembled into the same reply a whole body would give:
//! text blocks, `tool_use` blocks (their input arrives as pieces of JSON), the stop
//! reason and the usage, split as Anthropic bills it.
//!
//! Events are parsed by `eventsource-stream`; their `data` is one JSON object whose
//! `type` names the event. An `error` event mid-stream (`overloaded_error` after a 200)
//! becomes the error the same failure would have been as a status.

use super::WireUsage;
use crate::http::{self, ErrorInfo, error_chain};
use crate::stream::{Block, Data, assemble, event_data};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use parley_core::ports::llm::{AnswerStarted, LlmError, ToolCall};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde::Deserialize;

/// A streamed reply, assembled.
#[derive(Debug, Default)]
pub(super) struct Streamed {
    pub model: Option<String>,
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub stop_reason: Option<String>,
    pub usage: WireUsage,
}

/// Read `response` (a 2xx event stream) to its `message_stop`, setting `started` at
/// `message_start`. The caller bounds the whole call in time.
pub(super) async fn read(
    response: reqwest::Response,
    started: &AnswerStarted,
    url: &str,
) -> Result<Streamed, LlmError> {
    let mut events = response.bytes_stream().eventsource();
    let mut reply = Streamed::default();
    let mut blocks: Vec<Block> = Vec::new();
    let mut stopped = false;
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| {
            LlmError::Network(format!("the reply stream broke off: {}", error_chain(&e)))
        })?;
        // Anthropic ends with `message_stop`; a proxy in front of it may add `[DONE]`.
        let event: Event = match event_data(&event.data, "Messages event")? {
            Data::Done => break,
            Data::Empty => continue,
            Data::Value(event) => event,
        };
        match event {
            Event::MessageStart { message } => {
                reply.model = message.model.filter(|m| !m.is_empty());
                reply.usage = message.usage;
                started.set();
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = match content_block {
                    BlockStart::Text { text } => Block::Text(text),
                    BlockStart::ToolUse { id, name } => Block::Tool {
                        id,
                        name,
                        json: String::new(),
                    },
                    BlockStart::Other => Block::Other,
                };
                if blocks.len() <= index {
                    blocks.resize_with(index + 1, || Block::Other);
                }
                blocks[index] = block;
            }
            Event::ContentBlockDelta { index, delta } => match (blocks.get_mut(index), delta) {
                (Some(Block::Text(text)), Delta::Text { text: piece }) => text.push_str(&piece),
                (Some(Block::Tool { json, .. }), Delta::Json { partial_json }) => {
                    json.push_str(&partial_json)
                }
                _ => {}
            },
            Event::MessageDelta { delta, usage } => {
                reply.stop_reason = delta.stop_reason.or(reply.stop_reason);
                if let Some(usage) = usage {
                    reply.usage.merge(usage);
                }
            }
            Event::MessageStop => {
                stopped = true;
                break;
            }
            Event::Error { error } => return Err(mid_stream_error(error, url)),
            Event::ContentBlockStop | Event::Ping | Event::Other => {}
        }
    }
    if !stopped {
        return Err(LlmError::Network(
            "the reply stream ended before message_stop".into(),
        ));
    }
    (reply.text, reply.tool_calls) = assemble(blocks);
    Ok(reply)
}

/// An `error` event after the 200: the status the same error carries when it comes first.
fn mid_stream_error(error: ErrorBody, url: &str) -> LlmError {
    let status = match error.kind.as_str() {
        "overloaded_error" => 529,
        "rate_limit_error" => 429,
        "invalid_request_error" => 400,
        _ => 500,
    };
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let info = ErrorInfo {
        kind: error.kind,
        message: http::truncate(&error.message),
    };
    http::classify(status, &HeaderMap::new(), info, url)
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: BlockStart,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop,
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<DeltaUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: ErrorBody,
    },
    /// Events added to the API later are ignored, as Anthropic asks clients to.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    model: Option<String>,
    usage: WireUsage,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockStart {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    Json { partial_json: String },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

/// `message_delta`'s usage: cumulative counts, output always, the others when the API
/// sends them.
#[derive(Deserialize)]
pub(super) struct DeltaUsage {
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}
