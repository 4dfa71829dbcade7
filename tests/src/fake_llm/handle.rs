//! How the fake answers a request: the scripted reply its prompt picks, or a fault, in
//! the provider's shape (Anthropic Messages or OpenAI Chat Completions), whole or
//! streamed, with tool calls when the request offers tools.

use super::cache::{
    InFlight, anthropic_cache, anthropic_usage, openai_cached_tokens, openai_usage,
};
use super::state::{Prompt, Reply, State};
use super::stream::{Stream, anthropic_stream};
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Shared = axum::extract::State<Arc<Mutex<State>>>;

pub(super) async fn handle(
    shared: Shared,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let like_llama_cpp_python = shared
        .0
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .interrupts;
    // The body is read here only for the emulation; `answer` reads it for everything.
    let stream_asked = || {
        uri.path().ends_with("/chat/completions")
            && serde_json::from_slice::<Value>(&body).is_ok_and(|r| r["stream"] == true)
    };
    if like_llama_cpp_python && stream_asked() {
        return headers_first(answer(shared, uri, headers, body));
    }
    answer(shared, uri, headers, body).await
}

/// llama-cpp-python answers a streamed request with its headers at once and sends the
/// first chunk only once the request has the model (its one slot): a client waiting for
/// its turn sees a 200 and then nothing.
fn headers_first(answer: impl Future<Output = Response> + Send + 'static) -> Response {
    use futures_util::StreamExt;
    let (frames, received) = tokio::sync::mpsc::channel::<Result<Bytes, axum::Error>>(4);
    tokio::spawn(async move {
        let response = answer.await;
        let status = response.status();
        let mut body = response.into_body().into_data_stream();
        if !status.is_success() {
            // Too late for a status: the error goes in the stream, as llama-cpp-python sends it.
            let text = match body.next().await {
                Some(Ok(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
                _ => String::new(),
            };
            let error = json!({"error": {"message": text, "code": status.as_u16()}});
            let _ = frames
                .send(Ok(Bytes::from(format!("data: {error}\n\n"))))
                .await;
            return;
        }
        while let Some(frame) = body.next().await {
            // The client hung up: dropping `body` tells the stream (its hang-up is counted).
            if frames.send(frame).await.is_err() {
                break;
            }
        }
    });
    let body = futures_util::stream::unfold(received, |mut received| async move {
        received.recv().await.map(|frame| (frame, received))
    });
    let mut response = axum::body::Body::from_stream(body).into_response();
    response.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("text/event-stream"),
    );
    response
}

async fn answer(
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
        if s.refuse_tools && openai {
            s.prompts.push(prompt.clone());
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
        let answered = super::state::carries_tool_results(&request);
        let calls = s
            .tool_scripts
            .iter()
            .find(|(fragment, _)| text.contains(fragment.as_str()))
            .map(|(_, calls)| calls.clone())
            .filter(|_| !answered)
            .unwrap_or_default();
        // A model with nothing (more) to read answers like any other request, below.
        if !calls.is_empty() || s.done_instead_of_answering {
            s.prompts.push(prompt.clone());
            let model = request["model"].as_str().unwrap_or("fake").to_string();
            if request["stream"] == true && !calls.is_empty() {
                s.streamed_tool_calls += 1;
                return if openai {
                    super::stream::openai_tool_calls(&model, &calls)
                } else {
                    super::stream::anthropic_tool_calls(&model, &calls)
                };
            }
            return tool_reply(openai, &model, &calls);
        }
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
    let (interrupts, no_usage) = {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        s.waiting -= 1;
        (s.interrupts && streamed, s.no_usage)
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
    // A model writes no more than it was asked for (four bytes a token, as its usage says),
    // and says where it stopped in its API's words.
    let (reply, cut) = match (reply, max_tokens) {
        (Reply::Text(text), Some(limit)) if text.len() as u64 / 4 + 1 > limit => {
            (Reply::Text(cut_at(&text, limit as usize * 4)), true)
        }
        (reply, _) => (reply, false),
    };
    let (finish, stop_reason) = if cut {
        ("length", "max_tokens")
    } else {
        ("stop", "end_turn")
    };
    if streamed {
        let usage = openai_usage(body.len(), &reply, cache);
        let stream = Stream {
            finish,
            state: state.clone(),
            model,
            usage: request["stream_options"]["include_usage"] == true && !no_usage,
            interrupts,
            latency,
            ttft,
            _hold: (serving, slot, busy),
        };
        return stream.reply(reply, usage);
    }
    if anthropic_streamed && let Reply::Text(text) = &reply {
        let usage = anthropic_usage(body.len(), text, cache);
        return anthropic_stream(
            text,
            &model,
            (usage, stop_reason),
            ttft,
            latency,
            (serving, slot, busy),
        );
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
            let mut reply = json!({
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": model,
                "choices": [ { "index": 0, "message": { "role": "assistant", "content": text }, "finish_reason": finish } ],
            });
            if !no_usage {
                reply["usage"] = openai_usage(body.len(), &Reply::Text(text.clone()), cache);
            }
            axum::Json(reply).into_response()
        }
        Reply::Text(text) => {
            let usage = anthropic_usage(body.len(), &text, cache);
            axum::Json(json!({
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [ { "type": "text", "text": text } ],
                "stop_reason": stop_reason,
                "stop_sequence": null,
                "usage": usage
            }))
            .into_response()
        }
    }
}

/// `text` up to `bytes`, at a character boundary.
fn cut_at(text: &str, bytes: usize) -> String {
    let end = (0..=bytes.min(text.len()))
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    text[..end].to_string()
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
