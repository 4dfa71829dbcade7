//! Streamed answers: OpenAI-compatible chunks and Anthropic's server-sent events, sent
//! in pieces at the scripted pace, and what happens when the client hangs up.

use super::cache::InFlight;
use super::state::{Reply, State};
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A streamed Chat Completions reply (`stream: true`), as server-sent events.
pub(super) struct Stream {
    pub(super) state: Arc<Mutex<State>>,
    pub(super) model: String,
    /// The last chunk's `finish_reason`: `length` when the reply was cut at `max_tokens`.
    pub(super) finish: &'static str,
    /// `stream_options.include_usage` was asked for.
    pub(super) usage: bool,
    /// Break off when another request waits (see `State::interrupts`).
    pub(super) interrupts: bool,
    /// Spread over the reply's chunks when interrupting (so there is a running stream to
    /// break off), else waited before the first.
    pub(super) latency: Duration,
    /// When not interrupting, the first chunk comes this far into the latency and the rest
    /// at its end (the whole latency when no time to first token was set).
    pub(super) ttft: Duration,
    /// The serving turn, the slot and the in-flight count, held until the stream ends or
    /// the client hangs up.
    pub(super) _hold: (
        Option<tokio::sync::OwnedMutexGuard<()>>,
        Option<tokio::sync::OwnedSemaphorePermit>,
        InFlight,
    ),
}

/// What the stream sends next.
pub(super) enum Next {
    Chunk(String),
    Finish,
    Usage,
    Done,
    End,
}

impl Stream {
    pub(super) fn reply(self, reply: Reply, usage: Value) -> Response {
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
                            "choices": [{"index": 0, "delta": {}, "finish_reason": this.finish}]
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

/// A call's JSON arguments in two pieces, split mid-way (at a character boundary), as
/// servers stream them.
fn halves(input: &Value) -> [String; 2] {
    let arguments = input.to_string();
    let middle = (0..=arguments.len() / 2)
        .rev()
        .find(|i| arguments.is_char_boundary(*i))
        .unwrap_or(0);
    let (head, tail) = arguments.split_at(middle);
    [head.to_string(), tail.to_string()]
}

/// Tool calls streamed as Anthropic sends them: `message_start`, then per call a
/// `tool_use` block whose input comes as two `input_json_delta` pieces, then the stop
/// reason `tool_use` and `message_stop`.
pub(super) fn anthropic_tool_calls(model: &str, calls: &[(String, Value)]) -> Response {
    let mut events = vec![json!({"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "content": [], "model": model,
        "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 100, "output_tokens": 1,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}})];
    for (index, (name, input)) in calls.iter().enumerate() {
        events.push(
            json!({"type": "content_block_start", "index": index, "content_block":
            {"type": "tool_use", "id": format!("toolu_{index}"), "name": name, "input": {}}}),
        );
        for piece in halves(input) {
            events.push(json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "input_json_delta", "partial_json": piece}}));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
                       "usage": {"output_tokens": 10}}),
    );
    events.push(json!({"type": "message_stop"}));
    let body: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect();
    event_stream(body)
}

fn event_stream(body: String) -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
        body,
    )
        .into_response()
}

/// Tool calls streamed as OpenAI and llama.cpp send them: a call's first piece names it
/// (id, function name, no arguments yet), its arguments follow in two pieces, then the
/// finish reason, the usage and `[DONE]`.
pub(super) fn openai_tool_calls(model: &str, calls: &[(String, Value)]) -> Response {
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
        })
    };
    let mut events = Vec::new();
    for (index, (name, input)) in calls.iter().enumerate() {
        events.push(chunk(
            json!({"tool_calls": [{"index": index, "id": format!("call_{index}"), "type": "function",
                                   "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        ));
        for piece in halves(input) {
            events.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    events.push(chunk(json!({}), json!("tool_calls")));
    events.push(json!({
        "id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model,
        "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 10}
    }));
    let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    event_stream(body)
}

/// A reply in pieces of about a token or two, as model servers stream them.
pub(super) fn chunks(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(8).map(|c| c.iter().collect()).collect()
}

/// Counts a stream the client stopped reading before its end.
pub(super) struct HangUp {
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

/// A streamed Messages reply as Anthropic sends it: `message_start` (with the input
/// usage) `ttft` in, the text in deltas at the end of `latency`, then `message_delta` and
/// `message_stop`. Holds the serving turn, the slot and the in-flight count to its end.
pub(super) fn anthropic_stream(
    text: &str,
    model: &str,
    (usage, stop_reason): (Value, &str),
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
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
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
