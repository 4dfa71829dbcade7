//! Reading a streamed Chat Completions reply (`stream: true`) from a self-hosted server.
//!
//! A model on a laptop or a small GPU is slow, and a small one sometimes never closes the
//! JSON it was asked for: it writes until its output limit, minutes at a few tokens a
//! second. Waiting for the whole body under one timeout turns that into a timed-out call
//! (and the server, which never notices that Parley left, goes on writing for nobody).
//! Streamed, Parley sees the reply as it is written and can tell three things apart:
//!
//! - **nothing arrives** for the call's timeout (queued behind others, reading a long
//!   prompt, or a dead server): a timeout, as before, even where the server sent its
//!   headers at once (llama-cpp-python does, then waits for its one slot). The call limit
//!   ([`crate::limit`]) reads a timeout behind other calls as a queue on the server's side;
//!   an empty reply "cut off" there would read as a model that cannot write JSON;
//! - **the JSON value is complete**: the reply is read up to its end and the connection
//!   closed, so a model that goes on with whitespace or a second object costs nothing;
//! - **going round in circles**: the same passage written again and again (a small model
//!   stuck in a loop inside its JSON) is cut off as soon as it shows, like the next case;
//! - **still writing at the budget**, counted from the first chunk: the reply so far is
//!   returned as cut off at the time limit, which the structured-output helper treats as
//!   "too long" (and `parley review` names `LLM_TIMEOUT_SECS`), and the connection is
//!   closed, which stops llama.cpp, Ollama and vLLM generating.
//!
//! A stream that ends without a finish reason was broken off by the server (llama-cpp-python
//! ends a running stream when another request arrives): [`LlmError::Interrupted`], which
//! the call limit ([`crate::limit`]) reads like a call that waited in the server's queue.
//!
//! Tool calls stream too, in pieces by index (the first names the call, the rest add to
//! its arguments), put together when the stream ends; so does the first pass of a review
//! on any OpenAI-compatible server, whose first chunk tells the other passes the prompt
//! is in the cache.
//!
//! Server-sent events are parsed by `eventsource-stream`; each event's `data` is one
//! Chat Completions chunk, `[DONE]` ends the stream.

use crate::http::error_chain;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use parley_core::ports::llm::{AnswerStarted, CutOff, LlmError, ToolCall, Usage};
use serde::Deserialize;
use std::time::{Duration, Instant};

/// How long a streamed call may wait and write.
#[derive(Debug, Clone, Copy)]
pub struct StreamLimits {
    /// Longest silence: before the first chunk (queueing and prompt processing) and
    /// between chunks.
    pub idle: Duration,
    /// Longest time from the first chunk to the end; a reply still being written then is
    /// cut off.
    pub budget: Duration,
}

/// Why reading stopped before the server ended the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// A complete JSON value arrived (JSON was asked for); the rest was not read.
    JsonComplete,
    /// The budget ran out while the model was still writing.
    Budget,
    /// The reply's last passage had already been written twice before.
    Repeating,
}

impl Stop {
    /// Why the reply ends where Parley stopped reading rather than where the model ended it.
    pub fn cut_off(self) -> Option<CutOff> {
        match self {
            Stop::JsonComplete => None,
            Stop::Budget => Some(CutOff::TimeLimit),
            Stop::Repeating => Some(CutOff::Repeating),
        }
    }
}

/// The passage [`repeating`] looks for: long enough that findings which share a phrase
/// or a path are not mistaken for a loop.
const LOOP_PASSAGE: usize = 160;
/// Times a passage must already be in the reply before its next copy stops reading.
const LOOP_REPEATS: usize = 2;
/// Check for a loop every this many bytes of new text, not on every chunk.
const LOOP_CHECK_EVERY: usize = 64;

/// A streamed reply, assembled.
#[derive(Debug, Default)]
pub struct Streamed {
    pub text: String,
    pub finish_reason: Option<String>,
    pub model: Option<String>,
    /// From the last chunk (or a whole reply), when the server sends usage (`stream_options.include_usage`).
    pub usage: Option<ChunkUsage>,
    /// Chunks that carried text: about one token each on llama.cpp and Ollama, the
    /// output count when the server sends no usage.
    pub content_chunks: u64,
    pub stop: Option<Stop>,
    /// Tool calls, assembled from their pieces (`delta.tool_calls`, by index).
    pub tool_calls: Vec<ToolCall>,
}

#[derive(Debug, Deserialize, Clone, Copy, Default)]
/// OpenAI's `usage`, in a whole reply or a stream's last chunk.
pub struct ChunkUsage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub prompt_tokens_details: Option<CachedTokens>,
}

impl ChunkUsage {
    /// `prompt_tokens` counts the cached part too; it is billed apart.
    pub fn usage(&self) -> Usage {
        let cached = self
            .prompt_tokens_details
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0)
            .min(self.prompt_tokens);
        Usage::new(self.prompt_tokens - cached, self.completion_tokens).with_cache(cached, 0)
    }
}

#[derive(Debug, Deserialize, Clone, Copy, Default)]
pub struct CachedTokens {
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

/// Read `response` (a 2xx with an event stream) within `limits`. With `json`, reading
/// stops once the reply holds a complete JSON object or array. `answer_started` is set at the
/// first chunk: the server has read the prompt.
pub async fn read(
    response: reqwest::Response,
    limits: StreamLimits,
    json: bool,
    answer_started: Option<&AnswerStarted>,
) -> Result<Streamed, LlmError> {
    let mut events = response.bytes_stream().eventsource();
    let mut reply = Streamed::default();
    // A tool call's id and name come in its first piece, its arguments in any number.
    let mut calls: Vec<Block> = Vec::new();
    // The budget runs from the first chunk: before it the model has not begun (the
    // request waits for a slot, or the prompt is being read), and only `idle` applies.
    let mut answering: Option<Instant> = None;
    loop {
        let wait = match answering {
            None => limits.idle,
            Some(since) => {
                let left = limits.budget.saturating_sub(since.elapsed());
                if left.is_zero() {
                    reply.stop = Some(Stop::Budget);
                    break;
                }
                limits.idle.min(left)
            }
        };
        let event = match tokio::time::timeout(wait, events.next()).await {
            Err(_) if wait < limits.idle => {
                reply.stop = Some(Stop::Budget);
                break;
            }
            Err(_) => return Err(LlmError::Timeout(limits.idle)),
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(LlmError::Network(format!(
                    "the reply stream broke off: {}",
                    error_chain(&e)
                )));
            }
            Ok(Some(Ok(event))) => event,
        };
        let chunk: Chunk = match event_data(&event.data, "Chat Completions chunk")? {
            Data::Done => break,
            Data::Empty => continue,
            Data::Value(chunk) => chunk,
        };
        if let Some(error) = chunk.error {
            return Err(LlmError::Server {
                status: 500,
                message: crate::http::truncate(&error.to_string()),
            });
        }
        answering.get_or_insert_with(Instant::now);
        if let Some(answer) = answer_started {
            answer.set();
        }
        if reply.model.is_none() {
            reply.model = chunk.model.filter(|m| !m.is_empty());
        }
        if chunk.usage.is_some() {
            reply.usage = chunk.usage;
        }
        let Some(choice) = chunk.choices.into_iter().next() else {
            continue;
        };
        if let Some(reason) = choice.finish_reason {
            reply.finish_reason = Some(reason);
        }
        for piece in choice.delta.tool_calls.into_iter().flatten() {
            add_tool_piece(&mut calls, piece);
        }
        let Some(text) = choice.delta.content.filter(|t| !t.is_empty()) else {
            continue;
        };
        reply.content_chunks += 1;
        let closes = text.contains(['}', ']']);
        let before = reply.text.len();
        reply.text.push_str(&text);
        if before / LOOP_CHECK_EVERY != reply.text.len() / LOOP_CHECK_EVERY
            && repeating(&reply.text)
        {
            reply.stop = Some(Stop::Repeating);
            break;
        }
        if json
            && closes
            && let Some(end) = complete_json_end(&reply.text)
        {
            reply.text.truncate(end);
            reply.stop = Some(Stop::JsonComplete);
            break;
        }
    }
    // Every complete stream names why the model stopped; one that ends without saying, before
    // Parley stopped reading, was broken off by the server.
    if reply.stop.is_none() && reply.finish_reason.is_none() {
        return Err(LlmError::Interrupted(format!(
            "the stream ended after {} chunks without a finish reason",
            reply.content_chunks
        )));
    }
    reply.tool_calls = assemble(calls).1;
    // Dropping `events` drops the connection: the server sees it close and stops.
    Ok(reply)
}

/// Add one piece of a streamed tool call to the call at its index (a server that sends
/// no index sends its calls one after another: the piece belongs to the last one, or
/// starts the first).
fn add_tool_piece(calls: &mut Vec<Block>, piece: ToolCallPiece) {
    let index = piece.index.unwrap_or(calls.len().saturating_sub(1));
    while calls.len() <= index {
        calls.push(Block::Tool {
            id: String::new(),
            name: String::new(),
            json: String::new(),
        });
    }
    if let Block::Tool { id, name, json } = &mut calls[index] {
        if let Some(given) = piece.id.filter(|i| !i.is_empty()) {
            *id = given;
        }
        if let Some(function) = piece.function {
            if let Some(given) = function.name.filter(|n| !n.is_empty()) {
                *name = given;
            }
            json.push_str(function.arguments.as_deref().unwrap_or(""));
        }
    }
}

/// A content block of a streamed Anthropic or Bedrock reply, as it is assembled.
pub(crate) enum Block {
    Text(String),
    /// A tool call; its input arrives as pieces of JSON.
    Tool {
        id: String,
        name: String,
        json: String,
    },
    /// Thinking and other blocks Parley does not read.
    Other,
}

/// The reply's text and tool calls, from its blocks in order. A tool call without
/// arguments streams no JSON at all (`{}`); input that is not JSON is kept as a string,
/// for the tool to refuse with a reason.
pub(crate) fn assemble(blocks: impl IntoIterator<Item = Block>) -> (String, Vec<ToolCall>) {
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block {
            Block::Text(piece) => text.push_str(&piece),
            Block::Tool { id, name, json } => calls.push(ToolCall {
                id,
                name,
                input: if json.trim().is_empty() {
                    serde_json::Value::Object(Default::default())
                } else {
                    serde_json::from_str(&json).unwrap_or(serde_json::Value::String(json))
                },
            }),
            Block::Other => {}
        }
    }
    (text, calls)
}

/// One server-sent event's `data`.
pub(crate) enum Data<T> {
    /// `[DONE]`: OpenAI's end of stream (a proxy may add it to others).
    Done,
    /// Nothing to read (a keep-alive).
    Empty,
    Value(T),
}

/// Parse an event's `data` as `T` (`what` names it in the error: the body is the model's
/// reply, described rather than quoted).
pub(crate) fn event_data<T: serde::de::DeserializeOwned>(
    data: &str,
    what: &str,
) -> Result<Data<T>, LlmError> {
    let data = data.trim();
    if data == "[DONE]" {
        return Ok(Data::Done);
    }
    if data.is_empty() {
        return Ok(Data::Empty);
    }
    serde_json::from_str(data).map(Data::Value).map_err(|e| {
        LlmError::Decode(format!(
            "a streamed event of {} bytes is not a {what}: {e}",
            data.len()
        ))
    })
}

/// Whether the last [`LOOP_PASSAGE`] bytes of `text` were written [`LOOP_REPEATS`] times
/// before: the shape of a model that has lost its way and will write until stopped.
fn repeating(text: &str) -> bool {
    let Some(start) = text.len().checked_sub(LOOP_PASSAGE) else {
        return false;
    };
    let Some(start) = (start..text.len()).find(|i| text.is_char_boundary(*i)) else {
        return false;
    };
    let (earlier, tail) = text.split_at(start);
    tail.trim().len() >= LOOP_PASSAGE / 2 && earlier.matches(tail).count() >= LOOP_REPEATS
}

/// Where the first JSON object or array in `text` ends, once it is complete.
fn complete_json_end(text: &str) -> Option<usize> {
    let start = text.find(['{', '['])?;
    let mut values =
        serde_json::Deserializer::from_str(&text[start..]).into_iter::<serde::de::IgnoredAny>();
    match values.next() {
        Some(Ok(_)) => Some(start + values.byte_offset()),
        _ => None,
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<ChunkUsage>,
    /// Some servers report a failure mid-stream as an `error` event body.
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Delta,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallPiece>>,
}

/// A piece of a streamed tool call: the first names it, the rest add to its arguments.
#[derive(Deserialize)]
struct ToolCallPiece {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionPiece>,
}

#[derive(Deserialize)]
struct FunctionPiece {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::{
        Block, LOOP_PASSAGE, ToolCallPiece, add_tool_piece, assemble, complete_json_end, repeating,
    };

    /// What a server writes is not trusted: pieces without an index belong to the call
    /// before them (or start the first), and arguments that never became JSON (a stream
    /// cut off mid-call) are kept as a string for the tool to refuse with a reason.
    #[test]
    fn tool_pieces_without_an_index_or_whole_json_are_kept_as_sent() {
        let mut calls: Vec<Block> = Vec::new();
        for piece in [
            r#"{"id": "a", "function": {"name": "read_file", "arguments": "{\"path\""}}"#,
            r#"{"function": {"arguments": ": \"src/"}}"#,
            r#"{"index": 1, "id": "b", "function": {"name": "list_dir"}}"#,
        ] {
            let piece: ToolCallPiece = serde_json::from_str(piece).expect("a piece");
            add_tool_piece(&mut calls, piece);
        }
        let (text, calls) = assemble(calls);
        assert_eq!(text, "");
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("a", "read_file")
        );
        assert_eq!(
            calls[0].input,
            serde_json::Value::String(r#"{"path": "src/"#.into())
        );
        assert_eq!(calls[1].name, "list_dir");
        assert_eq!(calls[1].input, serde_json::json!({}), "no arguments: none");
    }

    #[test]
    fn a_passage_written_three_times_is_a_loop_and_shared_phrases_are_not() {
        let block = "  {\"type\": \"report\", \"url\": \"https://github.com/SrEK1234567890-sir-john-doe\"},\n";
        let looped = block.repeat(3 * LOOP_PASSAGE / block.len() + 3);
        assert!(repeating(&looped));
        let findings: String = (0..12)
            .map(|i| {
                format!(
                    "{{\"path\": \"src/db/users.rs\", \"line\": {i}, \"severity\": \"high\", \
                     \"title\": \"SQL built from input #{i}\", \"body\": \"The query in function {i} \
                     is built by formatting the id into the string.\"}},\n"
                )
            })
            .collect();
        assert!(!repeating(&findings));
        assert!(!repeating("short"));
        assert!(
            !repeating(&" ".repeat(4 * LOOP_PASSAGE)),
            "whitespace alone is not a passage"
        );
    }

    #[test]
    fn a_json_value_is_complete_only_when_its_outer_bracket_closes() {
        assert_eq!(complete_json_end(r#"{"findings": []}"#), Some(16));
        assert_eq!(complete_json_end(r#"{"findings": [{"a": "}"}"#), None);
        let text = "```json\n{\"a\": \"x]}\"}\n```\n\n\n   ";
        let end = complete_json_end(text).expect("complete");
        assert_eq!(&text[..end], "```json\n{\"a\": \"x]}\"}");
        assert_eq!(complete_json_end("no json yet"), None);
        assert_eq!(complete_json_end(r#"{"a": 1"#), None);
    }
}
