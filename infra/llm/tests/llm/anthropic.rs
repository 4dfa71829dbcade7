//! The Anthropic adapter against a fake Messages API on 127.0.0.1.

use crate::common;

use common::{Canned, FakeServer, fast_retries};
use parley_core::ports::llm::{Llm, LlmError, LlmRequest, Message, Usage};
use parley_llm::AnthropicLlm;
use serde_json::json;
use std::time::{Duration, Instant};

const MODEL: &str = "claude-sonnet-4-5";

fn adapter(server: &FakeServer, timeout: Duration) -> AnthropicLlm {
    AnthropicLlm::new(
        &server.base_url,
        "sk-ant-test",
        MODEL,
        timeout,
        fast_retries(),
    )
    .unwrap()
}

fn request() -> LlmRequest {
    common::conversation(512, 0.2)
}

/// The usual conversation, to an adapter on `server` with a 5 s timeout.
async fn ask(server: &FakeServer) -> Result<parley_core::ports::llm::LlmResponse, LlmError> {
    adapter(server, Duration::from_secs(5))
        .complete(&request())
        .await
}

fn success(text: &str) -> Canned {
    message(
        json!([{"type": "text", "text": text}]),
        json!({"input_tokens": 25, "output_tokens": 9}),
    )
}

/// A Messages API answer of `content` blocks, ended by the model, that used `usage`.
fn message(content: serde_json::Value, usage: serde_json::Value) -> Canned {
    Canned::json(
        200,
        json!({
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": content,
            "stop_reason": "end_turn",
            "stop_sequence": null,
            "usage": usage
        }),
    )
}

fn error(status: u16, kind: &str, message: &str) -> Canned {
    Canned::json(
        status,
        json!({"type": "error", "error": {"type": kind, "message": message}}),
    )
}

#[tokio::test]
async fn success_sends_the_documented_request_and_parses_text_and_usage() {
    let server = FakeServer::start(vec![message(
        json!([
            {"type": "thinking", "thinking": "hmm", "signature": "x"},
            {"type": "text", "text": "Yes, "},
            {"type": "text", "text": "it is."}
        ]),
        json!({
            "input_tokens": 100,
            "output_tokens": 20,
            "cache_creation_input_tokens": 5,
            "cache_read_input_tokens": 7
        }),
    )])
    .await;

    let reply = ask(&server).await.unwrap();
    assert_eq!(reply.text, "Yes, it is.");
    // Anthropic's three input counts, billed apart: uncached, read, written.
    assert_eq!(reply.usage, Usage::new(100, 20).with_cache(7, 5));
    assert_eq!(reply.model, "claude-sonnet-4-5-20250929");
    assert!(!reply.truncated());

    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    let sent = &seen[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(
        sent.body,
        json!({
            "model": MODEL,
            "max_tokens": 512,
            "system": "You are a careful reviewer.",
            "messages": [
                {"role": "user", "content": "Is this a bug?"},
                {"role": "assistant", "content": "Which line?"},
                {"role": "user", "content": "Line 3."}
            ],
            "temperature": 0.2
        })
    );
}

#[tokio::test]
async fn an_empty_system_prompt_is_left_out_and_max_tokens_marks_truncation() {
    let server = FakeServer::start(vec![Canned::json(
        200,
        json!({
            "content": [{"type": "text", "text": "{\"partial\": "}],
            "stop_reason": "max_tokens",
            "usage": {"input_tokens": 1, "output_tokens": 512}
        }),
    )])
    .await;
    let reply = adapter(&server, Duration::from_secs(5))
        .complete(&LlmRequest::new("", vec![Message::user("hi")]))
        .await
        .unwrap();
    assert!(reply.truncated());
    // No model in the reply: the configured one is reported.
    assert_eq!(reply.model, MODEL);
    let body = &server.requests()[0].body;
    assert!(body.get("system").is_none(), "{body}");
    assert!(body.get("temperature").is_none(), "{body}");
}

#[tokio::test]
async fn rate_limit_then_success_is_retried() {
    let server = FakeServer::start(vec![
        error(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your rate limit",
        ),
        success("ok"),
    ])
    .await;
    let reply = ask(&server).await.unwrap();
    assert_eq!(reply.text, "ok");
    assert_eq!(reply.usage, Usage::new(25, 9));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn overload_529_and_server_errors_are_retried() {
    let server = FakeServer::start(vec![
        error(529, "overloaded_error", "Overloaded"),
        error(500, "api_error", "Internal server error"),
        success("finally"),
    ])
    .await;
    let reply = ask(&server).await.unwrap();
    assert_eq!(reply.text, "finally");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let server = FakeServer::start(vec![
        error(429, "rate_limit_error", "slow down").header("retry-after", "0.4"),
        success("ok"),
    ])
    .await;
    let started = Instant::now();
    ask(&server).await.unwrap();
    // The policy's own backoff is a millisecond; only the header explains the wait.
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn persistent_overload_gives_up_after_the_configured_retries() {
    let server = FakeServer::start(vec![error(529, "overloaded_error", "Overloaded"); 10]).await;
    let result = ask(&server).await;
    assert!(
        matches!(&result, Err(LlmError::Overloaded { message, .. }) if message == "Overloaded"),
        "{result:?}"
    );
    assert_eq!(server.requests().len(), 4, "one attempt and three retries");
}

#[tokio::test]
async fn a_slow_server_times_out_without_a_retry() {
    let server = FakeServer::start(vec![
        success("too late").after(Duration::from_secs(3)),
        success("never asked"),
    ])
    .await;
    let started = Instant::now();
    let result = adapter(&server, Duration::from_millis(200))
        .complete(&request())
        .await;
    assert_eq!(result, Err(LlmError::Timeout(Duration::from_millis(200))));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn the_per_call_timeout_overrides_the_adapters() {
    let server = FakeServer::start(vec![success("late").after(Duration::from_secs(3))]).await;
    let mut request = request();
    request.options.timeout = Some(Duration::from_millis(150));
    let result = adapter(&server, Duration::from_secs(30))
        .complete(&request)
        .await;
    assert_eq!(result, Err(LlmError::Timeout(Duration::from_millis(150))));
}

#[tokio::test]
async fn a_malformed_body_is_a_decode_error() {
    for body in [
        "<html>502 Bad Gateway</html>",
        r#"{"content": "not a list"}"#,
        "",
    ] {
        let server = FakeServer::start(vec![Canned::raw(200, body)]).await;
        let result = ask(&server).await;
        assert!(
            matches!(result, Err(LlmError::Decode(_))),
            "{body:?}: {result:?}"
        );
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn a_bad_key_is_an_auth_error_without_retries() {
    let server = FakeServer::start(vec![
        error(401, "authentication_error", "invalid x-api-key"),
        success("never"),
    ])
    .await;
    let result = ask(&server).await;
    assert_eq!(result, Err(LlmError::Auth("invalid x-api-key".into())));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_unknown_model_is_reported_as_such() {
    let server = FakeServer::start(vec![error(404, "not_found_error", "model: claude-nope")]).await;
    let result = ask(&server).await;
    assert_eq!(
        result,
        Err(LlmError::UnknownModel("model: claude-nope".into()))
    );
}

#[tokio::test]
async fn a_wrong_base_url_is_a_config_error() {
    let server = FakeServer::start(vec![error(404, "not_found_error", "Not Found")]).await;
    let result = ask(&server).await;
    assert!(
        matches!(&result, Err(LlmError::Config(m)) if m.contains("/v1/messages")),
        "{result:?}"
    );
}

#[tokio::test]
async fn an_oversized_prompt_is_rejected_without_retries() {
    let server = FakeServer::start(vec![error(
        400,
        "invalid_request_error",
        "prompt is too long: 250000 tokens > 200000 maximum",
    )])
    .await;
    let result = ask(&server).await;
    assert!(
        matches!(&result, Err(LlmError::InvalidRequest(m)) if m.contains("prompt is too long")),
        "{result:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_unreachable_server_is_a_network_error() {
    // Bind and drop to find a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let llm = AnthropicLlm::new(
        &format!("http://127.0.0.1:{port}"),
        "k",
        MODEL,
        Duration::from_secs(5),
        parley_llm::RetryPolicy {
            max_retries: 1,
            ..fast_retries()
        },
    )
    .unwrap();
    let result = llm.complete(&request()).await;
    assert!(matches!(result, Err(LlmError::Network(_))), "{result:?}");
}

/// A long shared prefix gets one `cache_control` breakpoint where it ends (the system
/// prompt is part of the cached prefix without one of its own); a prefix below the
/// model's minimum gets none; usage with cache fields is parsed as Anthropic documents it.
#[tokio::test]
async fn a_long_shared_prefix_is_marked_for_the_cache_and_a_short_one_is_not() {
    let shared = "diff line\n".repeat(500); // ~1,250 tokens: over Sonnet 4.5's 1,024
    let server = FakeServer::start(vec![
        Canned::json(
            200,
            json!({
                "id": "msg_01", "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "text", "text": "ok"}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 21, "cache_creation_input_tokens": 1300,
                          "cache_read_input_tokens": 0, "output_tokens": 3}
            }),
        ),
        success("ok"),
    ])
    .await;
    let llm = adapter(&server, Duration::from_secs(5));
    let long = LlmRequest::new("sys", vec![Message::user_with_shared(&shared, "your task")]);
    let reply = llm.complete(&long).await.unwrap();
    assert_eq!(reply.usage, Usage::new(21, 3).with_cache(0, 1300));
    let short = LlmRequest::new(
        "sys",
        vec![Message::user_with_shared("a short diff", "task")],
    );
    llm.complete(&short).await.unwrap();

    let seen = server.requests();
    assert_eq!(
        seen[0].body["messages"][0]["content"],
        json!([
            {"type": "text", "text": shared, "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "your task"}
        ])
    );
    assert_eq!(seen[0].body["system"], "sys");
    assert_eq!(
        seen[1].body["messages"][0]["content"],
        json!("a short difftask"),
        "below the minimum: plain text, no marker"
    );
    assert!(!seen[1].body.to_string().contains("cache_control"));
}

// ---- Tool use ----

/// The request carries the tools and the earlier calls and results as `tool_use` and
/// `tool_result` blocks; a reply's `tool_use` blocks come back as tool calls (Anthropic's
/// documented tool-use response).
#[tokio::test]
async fn tools_go_out_as_blocks_and_tool_use_comes_back_as_calls() {
    let server = FakeServer::start(vec![Canned::json(
        200,
        json!({
            "id": "msg_01", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [
                {"type": "text", "text": "I need the definition."},
                {"type": "tool_use", "id": "toolu_2", "name": "find_definition", "input": {"symbol": "load_user"}}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 40, "output_tokens": 20}
        }),
    )])
    .await;
    let llm = adapter(&server, Duration::from_secs(5));
    assert!(llm.supports_tools());
    let reply = llm
        .complete(&common::tool_request(
            "toolu_1",
            "Reading the caller.",
            false,
        ))
        .await
        .unwrap();
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].id, "toolu_2");
    assert_eq!(reply.tool_calls[0].name, "find_definition");
    assert_eq!(reply.tool_calls[0].input, json!({"symbol": "load_user"}));
    assert_eq!(reply.text, "I need the definition.");

    let body = &server.requests()[0].body;
    assert_eq!(body["tools"][0]["name"], "read_file");
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    let calls = &body["messages"][1]["content"];
    assert_eq!(calls[0]["type"], "text");
    assert_eq!(calls[1]["type"], "tool_use");
    assert_eq!(calls[1]["id"], "toolu_1");
    let results = &body["messages"][2]["content"];
    assert_eq!(body["messages"][2]["role"], "user");
    assert_eq!(results[0]["type"], "tool_result");
    assert_eq!(results[0]["tool_use_id"], "toolu_1");
    assert_eq!(results[0]["is_error"], false);
}

/// Anthropic's documented stream for a reply with text and a tool call: `message_start`
/// (usage with the cache counts), the blocks with their deltas, `message_delta` (stop
/// reason, cumulative output), `message_stop`.
fn streamed_reply(stop_reason: &str) -> Vec<serde_json::Value> {
    vec![
        json!({"type": "message_start", "message": {
            "id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "type": "message", "role": "assistant",
            "content": [], "model": "claude-sonnet-4-5-20250929", "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 21, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 1300, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "{\"findings\": "}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "[]}"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block":
            {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "read_file", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"src/"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "db.rs\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": 89}}),
        json!({"type": "message_stop"}),
    ]
}

/// A request whose caller waits for the answer to begin is streamed: `started` is set at
/// `message_start`, long before the reply ends, and the reply is the one a whole body
/// would have given (text, tool call from pieces of JSON, cache usage, truncation).
#[tokio::test]
async fn a_request_that_waits_for_the_answer_to_begin_is_streamed() {
    let gap = Duration::from_millis(60);
    let server = FakeServer::start(vec![
        Canned::sse(streamed_reply("end_turn"), gap),
        Canned::sse(streamed_reply("max_tokens"), Duration::ZERO),
    ])
    .await;
    let llm = adapter(&server, Duration::from_secs(5));
    let (began, reply, ended) = common::begin_and_end(&llm, request()).await;
    let reply = reply.unwrap();
    assert!(
        began + 8 * gap <= ended,
        "began {began:?}, ended {ended:?}: the start is told at the first event"
    );
    assert_eq!(reply.text, "{\"findings\": []}");
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].id, "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
    assert_eq!(reply.tool_calls[0].input, json!({"path": "src/db.rs"}));
    assert_eq!(reply.usage, Usage::new(21, 89).with_cache(1300, 0));
    assert_eq!(reply.model, "claude-sonnet-4-5-20250929");
    assert!(!reply.truncated());
    assert_eq!(server.requests()[0].body["stream"], true);

    let (_, cut, _) = common::begin_and_end(&llm, request()).await;
    assert!(
        cut.unwrap().truncated(),
        "max_tokens in message_delta marks truncation"
    );
    // Without a caller waiting, the same adapter reads whole replies.
    let server = FakeServer::start(vec![success("whole")]).await;
    let reply = ask(&server).await.unwrap();
    assert_eq!(reply.text, "whole");
    assert!(server.requests()[0].body.get("stream").is_none());
}

/// An `overloaded_error` event after the 200 is retried like a 529; a stream that stops
/// before `message_stop` is a broken connection, retried too; an error status before the
/// stream is classified as usual; a stream slower than the call's timeout times out.
#[tokio::test]
async fn a_streamed_reply_that_fails_midway_is_an_error_a_caller_can_act_on() {
    use parley_core::ports::llm::AnswerStarted;
    let overloaded = vec![
        streamed_reply("end_turn")[0].clone(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ];
    let broken: Vec<_> = streamed_reply("end_turn").into_iter().take(5).collect();
    let server = FakeServer::start(vec![
        Canned::sse(overloaded, Duration::ZERO),
        Canned::sse(broken, Duration::ZERO),
        Canned::sse(streamed_reply("end_turn"), Duration::ZERO),
        error(401, "authentication_error", "invalid x-api-key"),
        Canned::sse(streamed_reply("end_turn"), Duration::from_millis(100)),
    ])
    .await;
    let llm = adapter(&server, Duration::from_millis(500));
    let mut streamed = request();
    streamed.options.started = Some(AnswerStarted::default());
    let reply = llm.complete(&streamed).await.unwrap();
    assert_eq!(reply.text, "{\"findings\": []}");
    assert_eq!(server.requests().len(), 3, "two failures retried");

    let err = llm.complete(&streamed).await.unwrap_err();
    assert!(matches!(err, LlmError::Auth(_)), "{err:?}");

    let err = llm.complete(&streamed).await.unwrap_err();
    assert!(matches!(err, LlmError::Timeout(_)), "{err:?}");
}

/// A streamed event that is not a Messages event is a decode error, described (its size)
/// rather than quoted, and not retried: the same bytes would come again.
#[tokio::test]
async fn a_garbled_streamed_event_is_a_decode_error() {
    let server = FakeServer::start(vec![
        Canned::raw(200, "event: message_start\ndata: {not json\n\n")
            .header("content-type", "text/event-stream"),
    ])
    .await;
    let mut waiting = request();
    waiting.options.started = Some(parley_core::ports::llm::AnswerStarted::default());
    let err = adapter(&server, Duration::from_secs(5))
        .complete(&waiting)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LlmError::Decode(message) if message.contains("not a Messages event") && !message.contains("not json")),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 1);
}
