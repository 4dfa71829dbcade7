//! The OpenAI-compatible adapter against a fake Chat Completions API on 127.0.0.1.

use crate::common;

use common::{Canned, FakeServer, fast_retries};
use parley_core::ports::llm::{CutOff, Llm, LlmError, LlmOptions, LlmRequest, Message, Usage};
use parley_llm::OpenAiLlm;
use serde_json::json;
use std::time::{Duration, Instant};

fn adapter(server: &FakeServer, key: Option<&str>, model: &str, timeout: Duration) -> OpenAiLlm {
    OpenAiLlm::new(
        &format!("{}/v1", server.base_url),
        key.map(str::to_owned),
        model,
        timeout,
        fast_retries(),
    )
    .unwrap()
}

fn gpt(server: &FakeServer) -> OpenAiLlm {
    adapter(server, Some("sk-test"), "gpt-4.1", Duration::from_secs(5))
}

fn request() -> LlmRequest {
    LlmRequest::new(
        "You are a careful reviewer.",
        vec![Message::user("Is this a bug?")],
    )
    .with_options(LlmOptions {
        max_tokens: 300,
        temperature: Some(0.0),
        json: false,
        ..LlmOptions::default()
    })
}

fn completion(text: &str, finish_reason: &str) -> Canned {
    Canned::json(
        200,
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "gpt-4.1-2025-04-14",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": null},
                "logprobs": null,
                "finish_reason": finish_reason
            }],
            "usage": {
                "prompt_tokens": 42,
                "completion_tokens": 7,
                "total_tokens": 49,
                "prompt_tokens_details": {"cached_tokens": 0}
            }
        }),
    )
}

fn error(status: u16, kind: &str, code: Option<&str>, message: &str) -> Canned {
    Canned::json(
        status,
        json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
    )
}

#[tokio::test]
async fn success_sends_chat_completions_and_parses_text_and_usage() {
    let server = FakeServer::start(vec![completion("Yes.", "stop")]).await;
    let reply = gpt(&server).complete(&request()).await.unwrap();
    assert_eq!(reply.text, "Yes.");
    assert_eq!(reply.usage, Usage::new(42, 7));
    assert_eq!(reply.model, "gpt-4.1-2025-04-14");
    assert!(!reply.truncated());

    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(
        seen[0].body,
        json!({
            "model": "gpt-4.1",
            "messages": [
                {"role": "system", "content": "You are a careful reviewer."},
                {"role": "user", "content": "Is this a bug?"}
            ],
            "max_tokens": 300,
            "temperature": 0.0
        })
    );
}

#[tokio::test]
async fn json_mode_asks_for_a_json_object() {
    let server = FakeServer::start(vec![completion("{\"a\": 1}", "stop")]).await;
    let mut request = request();
    request.options.json = true;
    gpt(&server).complete(&request).await.unwrap();
    assert_eq!(
        server.requests()[0].body["response_format"],
        json!({"type": "json_object"})
    );
}

#[tokio::test]
async fn a_local_server_gets_no_key_and_may_omit_usage() {
    let server = FakeServer::start(vec![Canned::json(
        200,
        json!({
            "model": "llama3.1:8b",
            "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "length"}]
        }),
    )])
    .await;
    let reply = adapter(&server, None, "llama3.1:8b", Duration::from_secs(5))
        .complete(&LlmRequest::new("", vec![Message::user("hello")]))
        .await
        .unwrap();
    assert_eq!(reply.text, "hi");
    // Counted here instead, and marked so: "hello" sent (2 tokens at four bytes a token),
    // "hi" received (1).
    assert_eq!(reply.usage, Usage::estimated(2, 1));
    assert!(reply.truncated());
    let sent = &server.requests()[0];
    assert_eq!(sent.header("authorization"), None);
    // No empty system message.
    assert_eq!(
        sent.body["messages"],
        json!([{"role": "user", "content": "hello"}])
    );
}

#[tokio::test]
async fn reasoning_models_get_max_completion_tokens_and_no_temperature() {
    let server = FakeServer::start(vec![completion("ok", "stop")]).await;
    adapter(&server, Some("k"), "o4-mini", Duration::from_secs(5))
        .complete(&request())
        .await
        .unwrap();
    let body = &server.requests()[0].body;
    assert_eq!(body["max_completion_tokens"], json!(300));
    assert!(body.get("max_tokens").is_none(), "{body}");
    assert!(body.get("temperature").is_none(), "{body}");
}

#[tokio::test]
async fn rate_limit_then_success_is_retried() {
    let server = FakeServer::start(vec![
        error(
            429,
            "requests",
            Some("rate_limit_exceeded"),
            "Rate limit reached",
        )
        .header("retry-after-ms", "5"),
        error(
            503,
            "server_error",
            None,
            "The engine is currently overloaded",
        ),
        completion("ok", "stop"),
    ])
    .await;
    let reply = gpt(&server).complete(&request()).await.unwrap();
    assert_eq!(reply.text, "ok");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn exhausted_retries_return_the_rate_limit_with_its_hint() {
    let server = FakeServer::start(vec![
        error(
            429,
            "requests",
            Some("rate_limit_exceeded"),
            "Rate limit reached"
        )
        .header("retry-after", "0");
        6
    ])
    .await;
    let result = gpt(&server).complete(&request()).await;
    assert_eq!(
        result,
        Err(LlmError::RateLimited {
            message: "Rate limit reached".into(),
            retry_after: Some(Duration::ZERO),
        })
    );
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn an_exhausted_quota_is_not_retried() {
    let server = FakeServer::start(vec![
        error(
            429,
            "insufficient_quota",
            Some("insufficient_quota"),
            "You exceeded your current quota",
        ),
        completion("never", "stop"),
    ])
    .await;
    let result = gpt(&server).complete(&request()).await;
    assert!(
        matches!(result, Err(LlmError::QuotaExceeded(_))),
        "{result:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let server = FakeServer::start(vec![
        completion("late", "stop").after(Duration::from_secs(3)),
    ])
    .await;
    let started = Instant::now();
    let result = adapter(&server, Some("k"), "gpt-4.1", Duration::from_millis(200))
        .complete(&request())
        .await;
    assert_eq!(result, Err(LlmError::Timeout(Duration::from_millis(200))));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_malformed_body_is_a_decode_error() {
    for canned in [
        Canned::raw(200, "data: {\"choices\": []}\n\n"),
        Canned::json(200, json!({"choices": []})),
        Canned::json(
            200,
            json!({"choices": [{"text": "legacy completions shape"}]}),
        ),
    ] {
        let server = FakeServer::start(vec![canned.clone()]).await;
        let result = gpt(&server).complete(&request()).await;
        assert!(
            matches!(result, Err(LlmError::Decode(_))),
            "{canned:?}: {result:?}"
        );
    }
}

#[tokio::test]
async fn a_bad_key_is_an_auth_error() {
    let server = FakeServer::start(vec![error(
        401,
        "invalid_request_error",
        Some("invalid_api_key"),
        "Incorrect API key provided",
    )])
    .await;
    let result = gpt(&server).complete(&request()).await;
    assert_eq!(
        result,
        Err(LlmError::Auth("Incorrect API key provided".into()))
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn unknown_models_are_recognised_across_servers() {
    let cases = [
        // OpenAI
        error(
            404,
            "invalid_request_error",
            Some("model_not_found"),
            "The model `gpt-9` does not exist or you do not have access to it.",
        ),
        // Ollama
        Canned::json(
            404,
            json!({"error": {"message": "model \"gpt-9\" not found, try pulling it first", "type": "api_error", "param": null, "code": null}}),
        ),
        // vLLM (numeric code)
        Canned::json(
            404,
            json!({"object": "error", "error": {"message": "The model `gpt-9` does not exist.", "type": "NotFoundError", "code": 404}}),
        ),
        // vLLM, older: the error fields at the top level
        Canned::json(
            404,
            json!({"object": "error", "message": "The model `gpt-9` does not exist.", "type": "NotFoundError", "param": null, "code": 404}),
        ),
        // older servers: a bare string
        Canned::json(404, json!({"error": "model 'gpt-9' not found"})),
    ];
    for canned in cases {
        let server = FakeServer::start(vec![canned.clone()]).await;
        let result = gpt(&server).complete(&request()).await;
        assert!(
            matches!(result, Err(LlmError::UnknownModel(_))),
            "{canned:?}: {result:?}"
        );
    }
}

#[tokio::test]
async fn a_404_that_is_not_about_the_model_points_at_the_base_url() {
    let server = FakeServer::start(vec![Canned::raw(404, "404 page not found")]).await;
    let result = gpt(&server).complete(&request()).await;
    assert!(
        matches!(&result, Err(LlmError::Config(m)) if m.contains("LLM_BASE_URL")),
        "{result:?}"
    );
}

/// OpenAI reports the cached part inside `prompt_tokens`
/// (`prompt_tokens_details.cached_tokens`, as its Chat Completions reference shows); it
/// is billed apart, so it is counted apart. Nothing is marked in the request (OpenAI
/// caches on its own) and no `cache_prompt` goes to a server that is not llama.cpp.
#[tokio::test]
async fn cached_prompt_tokens_are_counted_apart_and_nothing_is_marked() {
    let cached = Canned::json(
        200,
        json!({
            "id": "chatcmpl-2", "object": "chat.completion", "created": 1_700_000_000,
            "model": "gpt-4.1-2025-04-14",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
                      "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0}}
        }),
    );
    let server = FakeServer::start(vec![cached, completion("ok", "stop")]).await;
    let shared = "diff line\n".repeat(800);
    let request = LlmRequest::new("sys", vec![Message::user_with_shared(&shared, "task")]);
    let reply = gpt(&server).complete(&request).await.unwrap();
    assert_eq!(reply.usage, Usage::new(86, 300).with_cache(1920, 0));
    let sent = &server.requests()[0].body;
    assert_eq!(sent["messages"][1]["content"], format!("{shared}task"));
    assert!(sent.get("cache_prompt").is_none(), "{sent}");

    // A llama.cpp server is asked to keep the prompt in its slot.
    let llama = gpt(&server).with_cache_prompt(true);
    llama.complete(&request).await.unwrap();
    assert_eq!(server.requests()[1].body["cache_prompt"], true);
}

// ---- A self-hosted server, streamed ----

/// A self-hosted server's adapter: replies are streamed.
fn local(server: &FakeServer, timeout: Duration) -> OpenAiLlm {
    adapter(server, None, "qwen2.5-coder:7b", timeout).with_streaming(true)
}

fn json_request() -> LlmRequest {
    let mut request = request();
    request.options.json = true;
    request
}

/// One Chat Completions chunk carrying `text`, as llama.cpp and Ollama stream them.
fn chunk(text: &str) -> serde_json::Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "qwen2.5-coder:7b",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]
    })
}

fn last_chunk(finish_reason: &str) -> serde_json::Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "qwen2.5-coder:7b",
        "choices": [{"index": 0, "delta": {}, "finish_reason": finish_reason}]
    })
}

fn usage_chunk(prompt: u64, completion: u64) -> serde_json::Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "qwen2.5-coder:7b",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    })
}

const GAP: Duration = Duration::from_millis(5);

/// "Yes, the caller checks." in three chunks `gap` apart, its finish, and its usage.
fn the_caller_checks(gap: Duration) -> Canned {
    Canned::sse(
        vec![
            chunk("Yes"),
            chunk(", the caller"),
            chunk(" checks."),
            last_chunk("stop"),
            usage_chunk(40, 4),
        ],
        gap,
    )
}

#[tokio::test]
async fn a_streamed_reply_is_assembled_with_the_usage_of_its_last_chunk() {
    let server = FakeServer::start(vec![the_caller_checks(GAP)]).await;
    let reply = local(&server, Duration::from_secs(5))
        .complete(&request())
        .await
        .unwrap();
    assert_eq!(reply.text, "Yes, the caller checks.");
    assert_eq!(reply.usage, Usage::new(40, 4));
    assert!(!reply.truncated());
    assert_eq!(server.hang_ups(), 0);
    let body = &server.requests()[0].body;
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
}

/// A cloud API (read whole otherwise) streams a request whose caller waits for the answer
/// to begin, and says it has at the first chunk, well before the reply ends.
#[tokio::test]
async fn a_request_that_waits_for_the_answer_to_begin_is_streamed_and_told_at_the_first_chunk() {
    let gap = Duration::from_millis(60);
    let server = FakeServer::start(vec![the_caller_checks(gap)]).await;
    let (began, reply, ended) = common::begin_and_end(&gpt(&server), request()).await;
    assert_eq!(reply.unwrap().text, "Yes, the caller checks.");
    assert!(began + 3 * gap <= ended, "began {began:?}, ended {ended:?}");
    assert_eq!(server.requests()[0].body["stream"], true);
}

/// A cloud API streamed for the warm-up is read to its end even in JSON mode: its usage
/// (cached tokens included) comes in the last chunk, after the JSON is complete.
#[tokio::test]
async fn a_cloud_stream_in_json_mode_is_read_to_its_usage() {
    let mut usage = usage_chunk(1500, 4);
    usage["usage"]["prompt_tokens_details"] = json!({"cached_tokens": 1280});
    let server = FakeServer::start(vec![Canned::sse(
        vec![
            chunk("{\"findings\": ["),
            chunk("]}"),
            last_chunk("stop"),
            usage,
        ],
        GAP,
    )])
    .await;
    let (_, reply, _) = common::begin_and_end(&gpt(&server), json_request()).await;
    let reply = reply.unwrap();
    assert_eq!(reply.text, "{\"findings\": []}");
    assert_eq!(reply.usage, Usage::new(220, 4).with_cache(1280, 0));
}

#[tokio::test]
async fn a_stream_without_usage_is_counted_here_and_marked_estimated() {
    let server = FakeServer::start(vec![Canned::sse(
        vec![chunk("a"), chunk("b"), chunk("c"), last_chunk("length")],
        GAP,
    )])
    .await;
    let reply = local(&server, Duration::from_secs(5))
        .complete(&request())
        .await
        .unwrap();
    // The system prompt and the question, 41 bytes: 11 tokens; a chunk a token out.
    assert_eq!(reply.usage, Usage::estimated(11, 3));
    assert_eq!(
        reply.cut_off,
        Some(CutOff::OutputLimit),
        "finish_reason length"
    );
}

/// A complete JSON value is the whole reply: what the model writes after it (here,
/// whitespace for ever) is not waited for, and the server is told to stop.
#[tokio::test]
async fn reading_stops_once_the_json_value_is_complete() {
    let server = FakeServer::start(vec![Canned::sse_forever(
        vec![chunk("{\"findings\": ["), chunk("]"), chunk("}")],
        vec![chunk("\n"), chunk("  ")],
        GAP,
    )])
    .await;
    let started = Instant::now();
    let reply = local(&server, Duration::from_secs(5))
        .complete(&json_request())
        .await
        .unwrap();
    assert_eq!(reply.text, "{\"findings\": []}");
    assert!(!reply.truncated());
    assert!(started.elapsed() < Duration::from_secs(2));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(server.hang_ups(), 1, "the connection was closed");
}

/// A model that is still writing at the call's time limit is cut off there: the reply
/// so far comes back marked as cut off, not as a timeout, and the server stops.
#[tokio::test]
async fn a_model_still_writing_at_the_limit_is_cut_off_not_timed_out() {
    let words: Vec<_> = (0..400).map(|i| chunk(&format!(" word{i}"))).collect();
    let server = FakeServer::start(vec![Canned::sse_forever(
        vec![chunk("{\"findings\": [{\"body\": \"")],
        words,
        Duration::from_millis(2),
    )])
    .await;
    let started = Instant::now();
    let reply = local(&server, Duration::from_millis(400))
        .complete(&json_request())
        .await
        .expect("a cut-off reply, not an error");
    assert_eq!(reply.cut_off, Some(CutOff::TimeLimit));
    assert!(
        reply
            .text
            .starts_with("{\"findings\": [{\"body\": \" word0")
    );
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(400), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(server.hang_ups(), 1);
}

/// A small model looping inside its JSON (the same passage again and again, as
/// SmolLM2-135M does on a review prompt) is cut off as soon as the loop shows.
#[tokio::test]
async fn a_model_writing_the_same_passage_again_and_again_is_cut_off_early() {
    let passage = vec![
        chunk("\n  \"type\": \"report\",\n  \"description_url\" : {\n"),
        chunk("    \"url\": \"https://github.com/SrEK1234567890-sir-john-doe-forskulaben\"\n"),
        chunk("  },"),
    ];
    let server = FakeServer::start(vec![Canned::sse_forever(
        vec![chunk("{")],
        passage,
        Duration::from_millis(2),
    )])
    .await;
    let started = Instant::now();
    let reply = local(&server, Duration::from_secs(10))
        .complete(&json_request())
        .await
        .unwrap();
    assert_eq!(reply.cut_off, Some(CutOff::Repeating));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "long before the limit"
    );
    assert!(reply.text.len() < 2_000, "{} bytes", reply.text.len());
}

/// A reply that never begins is a timeout, whether the headers are late too or came at
/// once: llama-cpp-python sends its headers at once and its first chunk only when the
/// request has the server's one slot. A request that waited there past the call's timeout
/// timed out (which the call limit reads as a queue on the server): it is not an empty
/// reply "cut off" while being written, which would read as a model that cannot write JSON.
#[tokio::test]
async fn a_stream_that_never_starts_times_out_whether_or_not_its_headers_came() {
    let late = || Canned::sse(vec![chunk("late"), last_chunk("stop")], GAP);
    for canned in [
        late().after(Duration::from_secs(3)),
        late().first_event_after(Duration::from_secs(3)),
    ] {
        let server = FakeServer::start(vec![canned]).await;
        let started = Instant::now();
        let result = local(&server, Duration::from_millis(300))
            .complete(&json_request())
            .await;
        assert_eq!(result, Err(LlmError::Timeout(Duration::from_millis(300))));
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}

/// The time a model may spend writing runs from its first chunk: a reply that began late
/// (still within the timeout) and ends within the timeout after that is whole.
#[tokio::test]
async fn the_writing_budget_runs_from_the_first_chunk() {
    let words: Vec<_> = (0..20).map(|i| chunk(&format!(" w{i}"))).collect();
    let server = FakeServer::start(vec![
        Canned::sse(
            [words, vec![last_chunk("stop")]].concat(),
            Duration::from_millis(10),
        )
        .first_event_after(Duration::from_millis(350)),
    ])
    .await;
    let reply = local(&server, Duration::from_millis(500))
        .complete(&request())
        .await
        .expect("a whole reply");
    assert_eq!(reply.cut_off, None);
    assert!(reply.text.ends_with(" w19"), "{}", reply.text);
}

#[tokio::test]
async fn a_streamed_call_refused_with_a_status_is_classified_and_retried() {
    let server = FakeServer::start(vec![
        error(503, "server_error", None, "loading model"),
        Canned::sse(vec![chunk("ok"), last_chunk("stop")], GAP),
    ])
    .await;
    let reply = local(&server, Duration::from_secs(5))
        .complete(&request())
        .await
        .unwrap();
    assert_eq!(reply.text, "ok");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_garbled_chunk_is_a_decode_error() {
    let server = FakeServer::start(vec![
        Canned::raw(200, "data: {not json\n\n").header("content-type", "text/event-stream"),
    ])
    .await;
    let result = local(&server, Duration::from_secs(5))
        .complete(&request())
        .await;
    assert!(matches!(result, Err(LlmError::Decode(_))), "{result:?}");
}

/// llama-cpp-python ends a running stream with `[DONE]` when another request arrives:
/// no finish reason, so not a complete reply.
#[tokio::test]
async fn a_stream_broken_off_without_a_finish_reason_is_interrupted() {
    let server = FakeServer::start(vec![Canned::sse(
        vec![chunk("{\"findings\": [{\"title\": \"SQL")],
        GAP,
    )])
    .await;
    let result = local(&server, Duration::from_secs(5))
        .complete(&json_request())
        .await;
    assert!(
        matches!(result, Err(LlmError::Interrupted(_))),
        "{result:?}"
    );
}

// ---- Tool calls ----

/// Tools go out as `functions`, earlier calls as the assistant's `tool_calls` and their
/// results as `tool` messages; a reply's `tool_calls` (arguments as a JSON string, as
/// OpenAI documents them) come back parsed. Asked as a stream from a local server (which
/// answers here with one body, as a server that ignores `stream` does).
#[tokio::test]
async fn tools_go_out_as_functions_and_tool_calls_come_back_parsed() {
    let server = FakeServer::start(vec![Canned::json(
        200,
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "qwen2.5-coder:7b",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "call_2", "type": "function",
                    "function": {"name": "search", "arguments": "{\"pattern\": \"load_user\\\\(\"}"}}]
            }}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 12}
        }),
    )])
    .await;
    let llm = local(&server, Duration::from_secs(5));
    let reply = llm
        .complete(&common::tool_request("call_1", "", false))
        .await
        .unwrap();
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].id, "call_2");
    assert_eq!(reply.tool_calls[0].name, "search");
    assert_eq!(
        reply.tool_calls[0].input,
        json!({"pattern": "load_user\\("})
    );
    assert_eq!(reply.usage, Usage::new(50, 12));

    let body = &server.requests()[0].body;
    assert_eq!(body["stream"], true);
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "read_file");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[2]["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["arguments"],
        "{\"path\":\"src/app.rs\",\"start_line\":3}"
    );
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "call_1");
}

/// A reply that only calls tools, from a server that reports no usage, still counts what
/// the model wrote: whole or streamed.
#[tokio::test]
async fn a_tool_call_without_usage_counts_what_it_wrote() {
    // `search` and `{"pattern":"load_user"}`: 6 + 23 bytes, 8 tokens at four a token.
    let whole = FakeServer::start(vec![Canned::json(
        200,
        json!({
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "call_2", "type": "function",
                    "function": {"name": "search", "arguments": "{\"pattern\": \"load_user\"}"}}]
            }}]
        }),
    )])
    .await;
    let streamed = FakeServer::start(vec![Canned::sse(
        vec![
            tool_piece(0, Some("call_2"), Some("search"), "{\"pattern\": "),
            tool_piece(0, None, None, "\"load_user\"}"),
            last_chunk("tool_calls"),
        ],
        GAP,
    )])
    .await;
    for server in [whole, streamed] {
        let reply = local(&server, Duration::from_secs(5))
            .complete(&common::tool_request("call_1", "", false))
            .await
            .unwrap();
        assert_eq!(reply.tool_calls.len(), 1);
        assert!(reply.usage.estimated, "{:?}", reply.usage);
        assert_eq!(reply.usage.output_tokens, 8, "{:?}", reply.usage);
    }
}

/// A piece of a streamed tool call, as OpenAI and llama.cpp send them: the first names
/// the call, the next add to its arguments.
fn tool_piece(
    index: usize,
    id: Option<&str>,
    name: Option<&str>,
    arguments: &str,
) -> serde_json::Value {
    let mut function = json!({"arguments": arguments});
    if let Some(name) = name {
        function["name"] = name.into();
    }
    let mut call = json!({"index": index, "function": function});
    if let Some(id) = id {
        call["id"] = id.into();
        call["type"] = "function".into();
    }
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "qwen2.5-coder:7b",
        "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]
    })
}

/// Tool calls streamed in pieces (two calls, their arguments split mid-string) come
/// back whole, in order; the caller waiting for the answer to begin hears at the first
/// piece.
#[tokio::test]
async fn streamed_tool_calls_are_put_together_from_their_pieces() {
    let server = FakeServer::start(vec![Canned::sse(
        vec![
            tool_piece(0, Some("call_a"), Some("read_file"), ""),
            tool_piece(0, None, None, "{\"path\": \"src/"),
            tool_piece(1, Some("call_b"), Some("find_references"), "{\"symbol\""),
            tool_piece(0, None, None, "app.rs\"}"),
            tool_piece(1, None, None, ": \"load_user\"}"),
            last_chunk("tool_calls"),
            usage_chunk(60, 20),
        ],
        GAP,
    )])
    .await;
    let started = parley_core::ports::llm::AnswerStarted::default();
    let mut request = common::tool_request("call_1", "", false);
    request.options.started = Some(started.clone());
    let reply = adapter(&server, Some("sk-test"), "gpt-4.1", Duration::from_secs(5))
        .complete(&request)
        .await
        .unwrap();
    assert!(started.is_set());
    let calls: Vec<(&str, &str, serde_json::Value)> = reply
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.input.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("call_a", "read_file", json!({"path": "src/app.rs"})),
            ("call_b", "find_references", json!({"symbol": "load_user"})),
        ]
    );
    assert_eq!(reply.usage, Usage::new(60, 20));
    assert_eq!(server.requests()[0].body["stream"], true);
}

/// A server that takes `tools` but whose model never calls one (llama-cpp-python ignores
/// them unless started with a function-calling chat format) stops being offered them
/// after three wasted turns; a model that has called a tool once keeps them.
#[tokio::test]
async fn a_model_that_never_calls_tools_stops_being_offered_them() {
    let server = FakeServer::start(vec![
        completion("This module uses the query helper.", "stop"),
        completion("plain", "stop"),
    ])
    .await;
    let llm = local(&server, Duration::from_secs(5));
    llm.complete(&common::tool_request("call_1", "", false))
        .await
        .unwrap();
    llm.tools_went_unused();
    llm.tools_went_unused();
    assert!(
        llm.supports_tools(),
        "two wasted turns are not enough to tell"
    );
    llm.tools_went_unused();
    assert!(!llm.supports_tools());
    llm.complete(&common::tool_request("call_1", "", false))
        .await
        .unwrap();
    let seen = server.requests();
    assert!(seen[0].body.get("tools").is_some());
    assert!(seen[1].body.get("tools").is_none(), "no longer offered");

    let calls = FakeServer::start(vec![Canned::sse(
        vec![
            tool_piece(0, Some("call_a"), Some("read_file"), "{\"path\": \"a.rs\"}"),
            last_chunk("tool_calls"),
        ],
        GAP,
    )])
    .await;
    let llm = local(&calls, Duration::from_secs(5));
    llm.complete(&common::tool_request("call_1", "", false))
        .await
        .unwrap();
    for _ in 0..5 {
        llm.tools_went_unused();
    }
    assert!(llm.supports_tools(), "it has called a tool: its choice");
}

/// A server that refuses `tools` (Ollama: "does not support tools") is not asked again:
/// the refusal is remembered for the process.
#[tokio::test]
async fn a_server_that_refuses_tools_is_not_sent_them_again() {
    let server = FakeServer::start(vec![
        error(
            400,
            "invalid_request_error",
            None,
            "registry.ollama.ai/library/tiny:1b does not support tools",
        ),
        completion("plain", "stop"),
    ])
    .await;
    let llm = local(&server, Duration::from_secs(5));
    assert!(llm.supports_tools());
    let refused = llm
        .complete(&common::tool_request("call_1", "", false))
        .await;
    assert!(
        matches!(refused, Err(LlmError::ToolsUnsupported(_))),
        "{refused:?}"
    );
    assert!(!llm.supports_tools());
    llm.complete(&common::tool_request("call_1", "", false))
        .await
        .unwrap();
    let seen = server.requests();
    assert_eq!(seen.len(), 2, "no retry of the refusal");
    assert!(seen[1].body.get("tools").is_none());
    // Asked to stream, the server answered with one JSON body: read as such.
    assert_eq!(seen[1].body["stream"], true);
}
