//! The Bedrock adapter: the real AWS SDK pointed at a fake Converse endpoint on
//! 127.0.0.1, with dummy credentials, so signing, serialisation and error parsing are
//! the SDK's own.

use crate::common;

use aws_sdk_bedrockruntime::config::{Credentials, Region};
use common::{Canned, FakeServer, fast_retries};
use parley_core::ports::llm::{Llm, LlmError, LlmRequest, Message, Usage};
use parley_llm::BedrockLlm;
use serde_json::json;
use std::time::{Duration, Instant};

const MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

async fn adapter(server: &FakeServer, timeout: Duration) -> BedrockLlm {
    adapter_for(server, MODEL, timeout).await
}

/// An adapter for `model` on `server`, with test credentials.
async fn adapter_for(server: &FakeServer, model: &str, timeout: Duration) -> BedrockLlm {
    let sdk_config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("AKIDTEST", "secret", None, None, "test"))
        .endpoint_url(&server.base_url)
        .load()
        .await;
    BedrockLlm::new(&sdk_config, model, timeout, fast_retries())
}

fn request() -> LlmRequest {
    common::conversation(700, 0.5)
}

/// The usual conversation, to an adapter on `server` with a 5 s timeout.
async fn ask(server: &FakeServer) -> Result<parley_core::ports::llm::LlmResponse, LlmError> {
    adapter(server, Duration::from_secs(5))
        .await
        .complete(&request())
        .await
}

fn converse(text: &str, stop_reason: &str) -> Canned {
    Canned::json(
        200,
        json!({
            "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
            "stopReason": stop_reason,
            "usage": {"inputTokens": 31, "outputTokens": 12, "totalTokens": 43},
            "metrics": {"latencyMs": 120}
        }),
    )
}

/// Bedrock's restJson1 errors: the type in `x-amzn-errortype`, the message in the body.
fn aws_error(status: u16, kind: &str, message: &str) -> Canned {
    Canned::json(status, json!({"message": message})).header("x-amzn-errortype", kind)
}

#[tokio::test]
async fn success_signs_a_converse_call_and_parses_text_and_usage() {
    let server = FakeServer::start(vec![converse("Yes, it is.", "end_turn")]).await;
    let reply = ask(&server).await.unwrap();
    assert_eq!(reply.text, "Yes, it is.");
    assert_eq!(reply.usage, Usage::new(31, 12));
    assert_eq!(reply.model, MODEL);
    assert!(!reply.truncated());

    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    let sent = &seen[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(
        sent.path,
        "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
    );
    let authorization = sent.header("authorization").unwrap_or_default();
    assert!(
        authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDTEST/"),
        "{authorization}"
    );
    assert!(
        authorization.contains("/us-east-1/bedrock/aws4_request"),
        "{authorization}"
    );
    assert_eq!(
        sent.body,
        json!({
            "messages": [
                {"role": "user", "content": [{"text": "Is this a bug?"}]},
                {"role": "assistant", "content": [{"text": "Which line?"}]},
                {"role": "user", "content": [{"text": "Line 3."}]}
            ],
            "system": [{"text": "You are a careful reviewer."}],
            "inferenceConfig": {"maxTokens": 700, "temperature": 0.5}
        })
    );
}

#[tokio::test]
async fn max_tokens_marks_the_reply_truncated_and_an_empty_system_is_omitted() {
    let server = FakeServer::start(vec![converse("{\"cut\": ", "max_tokens")]).await;
    let reply = adapter(&server, Duration::from_secs(5))
        .await
        .complete(&LlmRequest::new(" ", vec![Message::user("hi")]))
        .await
        .unwrap();
    assert!(reply.truncated());
    assert!(server.requests()[0].body.get("system").is_none());
}

#[tokio::test]
async fn throttling_then_success_is_retried_by_us() {
    let server = FakeServer::start(vec![
        aws_error(429, "ThrottlingException", "Too many requests, please wait"),
        aws_error(503, "ServiceUnavailableException", "Service unavailable"),
        converse("ok", "end_turn"),
    ])
    .await;
    let reply = ask(&server).await.unwrap();
    assert_eq!(reply.text, "ok");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn persistent_throttling_ends_as_rate_limited_after_our_retries() {
    let server = FakeServer::start(vec![
        aws_error(
            429,
            "ThrottlingException",
            "Too many requests"
        );
        10
    ])
    .await;
    let result = ask(&server).await;
    assert!(
        matches!(&result, Err(LlmError::RateLimited { message, .. }) if message == "Too many requests"),
        "{result:?}"
    );
    // The SDK's own retries are off: exactly our one attempt plus three retries.
    assert_eq!(server.requests().len(), 4);
}

/// What a test expects of an error.
type Expected = dyn Fn(&LlmError) -> bool;

/// Bedrock's errors, each to the error a caller acts on, after one request (none of
/// them is retried): access denied is auth; a model it does not know (404, or a
/// validation error that says so) is an unknown model; any other validation error is
/// the request's fault.
#[tokio::test]
async fn errors_become_what_the_caller_acts_on_without_a_retry() {
    let unknown = |e: &LlmError| matches!(e, LlmError::UnknownModel(m) if m.starts_with(MODEL));
    let cases: [(Canned, &Expected); 4] = [
        (
            aws_error(
                403,
                "AccessDeniedException",
                "You don't have access to the model with the specified model ID.",
            ),
            &|e| matches!(e, LlmError::Auth(_)),
        ),
        (
            aws_error(404, "ResourceNotFoundException", "Model not found."),
            &unknown,
        ),
        (
            aws_error(
                400,
                "ValidationException",
                "The provided model identifier is invalid.",
            ),
            &unknown,
        ),
        (
            aws_error(
                400,
                "ValidationException",
                "Input is too long for requested model.",
            ),
            &|e| *e == LlmError::InvalidRequest("Input is too long for requested model.".into()),
        ),
    ];
    for (answer, expected) in cases {
        let server = FakeServer::start(vec![answer.clone()]).await;
        let result = ask(&server).await;
        assert!(
            result.as_ref().is_err_and(expected),
            "{answer:?}: {result:?}"
        );
        assert_eq!(server.requests().len(), 1, "{answer:?}");
    }
}

#[tokio::test]
async fn a_malformed_body_is_a_decode_error() {
    let server = FakeServer::start(vec![
        Canned::raw(200, "<html>not json</html>").header("content-type", "application/json"),
    ])
    .await;
    let result = ask(&server).await;
    assert!(matches!(&result, Err(LlmError::Decode(_))), "{result:?}");
    // The body is the model's reply: described, never quoted into logs.
    assert!(!format!("{result:?}").contains("not json"), "{result:?}");
}

#[tokio::test]
async fn a_slow_endpoint_times_out() {
    let server = FakeServer::start(vec![
        converse("late", "end_turn").after(Duration::from_secs(3)),
    ])
    .await;
    let started = Instant::now();
    let result = adapter(&server, Duration::from_millis(200))
        .await
        .complete(&request())
        .await;
    assert_eq!(result, Err(LlmError::Timeout(Duration::from_millis(200))));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_unreachable_endpoint_is_a_network_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let sdk_config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("AKIDTEST", "secret", None, None, "test"))
        .endpoint_url(format!("http://127.0.0.1:{port}"))
        .load()
        .await;
    let llm = BedrockLlm::new(
        &sdk_config,
        MODEL,
        Duration::from_secs(5),
        parley_llm::RetryPolicy {
            max_retries: 1,
            ..fast_retries()
        },
    );
    let result = llm.complete(&request()).await;
    assert!(
        matches!(&result, Err(LlmError::Network(m)) if m.contains("onnect")),
        "{result:?}"
    );
}

/// A model with prompt caching gets a `cachePoint` block after a long shared prefix, and
/// Bedrock's cache usage is parsed (`cacheReadInputTokens` / `cacheWriteInputTokens`, as
/// the Converse API documents them); a model without caching gets no marker at all.
#[tokio::test]
async fn a_caching_model_gets_a_cache_point_and_its_cache_usage_is_read() {
    let shared = "diff line\n".repeat(500);
    let server = FakeServer::start(vec![Canned::json(
        200,
        json!({
            "output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 9, "outputTokens": 2, "totalTokens": 1311,
                      "cacheReadInputTokens": 1300, "cacheWriteInputTokens": 0},
            "metrics": {"latencyMs": 80}
        }),
    )])
    .await;
    let request = LlmRequest::new("sys", vec![Message::user_with_shared(&shared, "task")]);
    let reply = adapter(&server, Duration::from_secs(5))
        .await
        .complete(&request)
        .await
        .unwrap();
    assert_eq!(reply.usage, Usage::new(9, 2).with_cache(1300, 0));
    assert_eq!(
        server.requests()[0].body["messages"][0]["content"],
        json!([{"text": shared}, {"cachePoint": {"type": "default"}}, {"text": "task"}])
    );

    let server = FakeServer::start(vec![converse("ok", "end_turn")]).await;
    let llama = adapter_for(
        &server,
        "meta.llama3-70b-instruct-v1:0",
        Duration::from_secs(5),
    )
    .await;
    llama.complete(&request).await.unwrap();
    assert_eq!(
        server.requests()[0].body["messages"][0]["content"],
        json!([{"text": format!("{shared}task")}])
    );
}

// ---- Tool use ----

/// Converse tool use: the request carries `toolConfig` and the calls and results as
/// `toolUse` / `toolResult` blocks; a reply's `toolUse` comes back as a call. A model
/// Bedrock says cannot use tools is not sent them again.
#[tokio::test]
async fn tool_use_goes_out_in_tool_config_and_comes_back_as_calls() {
    let server = FakeServer::start(vec![
        Canned::json(
            200,
            json!({
                "output": {"message": {"role": "assistant", "content": [
                    {"toolUse": {"toolUseId": "tooluse_2", "name": "find_definition", "input": {"symbol": "load_user"}}}
                ]}},
                "stopReason": "tool_use",
                "usage": {"inputTokens": 31, "outputTokens": 12, "totalTokens": 43},
                "metrics": {"latencyMs": 120}
            }),
        ),
        aws_error(400, "ValidationException", "This model doesn't support tool use."),
        converse("fine", "end_turn"),
    ])
    .await;
    let llm = adapter(&server, Duration::from_secs(5)).await;
    let request = common::tool_request("tooluse_1", "", true);
    let reply = llm.complete(&request).await.unwrap();
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].id, "tooluse_2");
    assert_eq!(reply.tool_calls[0].input, json!({"symbol": "load_user"}));
    let body = &server.requests()[0].body;
    assert_eq!(
        body["toolConfig"]["tools"][0]["toolSpec"]["name"],
        "read_file"
    );
    assert_eq!(
        body["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["type"],
        "object"
    );
    assert_eq!(
        body["messages"][1]["content"][0]["toolUse"]["toolUseId"],
        "tooluse_1"
    );
    assert_eq!(
        body["messages"][1]["content"][0]["toolUse"]["input"]["start_line"],
        3
    );
    assert_eq!(
        body["messages"][2]["content"][0]["toolResult"]["status"],
        "error"
    );

    let refused = llm.complete(&request).await;
    assert!(
        matches!(refused, Err(LlmError::ToolsUnsupported(_))),
        "{refused:?}"
    );
    assert!(!llm.supports_tools());
    llm.complete(&request).await.unwrap();
    assert!(server.requests()[2].body.get("toolConfig").is_none());
}

/// One ConverseStream event in AWS's binary event-stream framing, as Bedrock sends it:
/// `:message-type` event, `:event-type` naming the member, its JSON as the payload.
fn event(kind: &str, payload: serde_json::Value) -> Vec<u8> {
    frame("event", ":event-type", kind, payload)
}

/// An exception inside the stream (`:message-type` exception).
fn stream_exception(kind: &str, message: &str) -> Vec<u8> {
    frame(
        "exception",
        ":exception-type",
        kind,
        json!({ "message": message }),
    )
}

fn frame(message_type: &str, kind_header: &str, kind: &str, payload: serde_json::Value) -> Vec<u8> {
    use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
    let string = |value: &str| HeaderValue::String(value.to_owned().into());
    let message = Message::new(payload.to_string().into_bytes())
        .add_header(Header::new(":message-type", string(message_type)))
        .add_header(Header::new(kind_header.to_owned(), string(kind)))
        .add_header(Header::new(":content-type", string("application/json")));
    let mut frame = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&message, &mut frame).unwrap();
    frame
}

/// A ConverseStream reply with text, then a tool call whose input arrives in pieces, the
/// stop reason and the usage with cache counts (the shapes Bedrock documents).
fn streamed(stop_reason: &str) -> Vec<Vec<u8>> {
    vec![
        event("messageStart", json!({"role": "assistant"})),
        event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "{\"findings\": "}}),
        ),
        event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "[]}"}}),
        ),
        event("contentBlockStop", json!({"contentBlockIndex": 0})),
        event(
            "contentBlockStart",
            json!({"contentBlockIndex": 1,
            "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "read_file"}}}),
        ),
        event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"path\": "}}}),
        ),
        event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "\"src/db.rs\"}"}}}),
        ),
        event("contentBlockStop", json!({"contentBlockIndex": 1})),
        event("messageStop", json!({"stopReason": stop_reason})),
        event(
            "metadata",
            json!({
            "usage": {"inputTokens": 21, "outputTokens": 89, "totalTokens": 1410,
                      "cacheReadInputTokens": 1300, "cacheWriteInputTokens": 0},
            "metrics": {"latencyMs": 900}}),
        ),
    ]
}

/// A request whose caller waits for the answer to begin goes through ConverseStream: the
/// start is told at `messageStart`, long before the end, and the reply is the one Converse
/// would have given (text, tool call, cache usage, truncation).
#[tokio::test]
async fn a_request_that_waits_for_the_answer_to_begin_is_streamed() {
    let gap = Duration::from_millis(60);
    let server = FakeServer::start(vec![
        Canned::frames(streamed("end_turn"), gap),
        Canned::frames(streamed("max_tokens"), Duration::ZERO),
    ])
    .await;
    let llm = adapter(&server, Duration::from_secs(5)).await;
    let (began, reply, ended) = common::begin_and_end(&llm, request()).await;
    let reply = reply.unwrap();
    assert!(began + 6 * gap <= ended, "began {began:?}, ended {ended:?}");
    assert_eq!(reply.text, "{\"findings\": []}");
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].id, "tooluse_1");
    assert_eq!(reply.tool_calls[0].input, json!({"path": "src/db.rs"}));
    assert_eq!(reply.usage, Usage::new(21, 89).with_cache(1300, 0));
    assert!(!reply.truncated());
    let seen = server.requests();
    assert!(
        seen[0].path.ends_with("/converse-stream"),
        "{}",
        seen[0].path
    );
    let (_, cut, _) = common::begin_and_end(&llm, request()).await;
    assert!(cut.unwrap().truncated());
}

/// A throttling exception inside the stream is retried like a 429; a stream cut before
/// `messageStop` is a broken connection, retried too; an error status before the stream
/// is classified as Converse's would be.
#[tokio::test]
async fn a_streamed_reply_that_fails_midway_is_an_error_a_caller_can_act_on() {
    use parley_core::ports::llm::AnswerStarted;
    let throttled = vec![
        event("messageStart", json!({"role": "assistant"})),
        stream_exception("throttlingException", "Too many tokens, please wait"),
    ];
    let cut: Vec<_> = streamed("end_turn").into_iter().take(3).collect();
    let server = FakeServer::start(vec![
        Canned::frames(throttled, Duration::ZERO),
        Canned::frames(cut, Duration::ZERO),
        Canned::frames(streamed("end_turn"), Duration::ZERO),
        aws_error(
            403,
            "AccessDeniedException",
            "not authorized to invoke this model",
        ),
    ])
    .await;
    let llm = adapter(&server, Duration::from_secs(5)).await;
    let mut waiting = request();
    waiting.options.started = Some(AnswerStarted::default());
    let reply = llm.complete(&waiting).await.unwrap();
    assert_eq!(reply.text, "{\"findings\": []}");
    assert_eq!(server.requests().len(), 3, "two failures retried");
    let err = llm.complete(&waiting).await.unwrap_err();
    assert!(matches!(err, LlmError::Auth(_)), "{err:?}");
}
