//! `from_env()` as a deployed Lambda sees it: nothing LLM-specific set, so Bedrock with
//! the region's default Claude profile, reached through `AWS_ENDPOINT_URL`.
//!
//! `PARLEY_LLM_PRICES` is read here too.
//!
//! This binary holds a single test because it sets process environment variables, which
//! is only sound while no other thread reads them.

use crate::common;

use common::{Canned, FakeServer};
use parley_core::ports::llm::{LlmRequest, Message, Usage};
use serde_json::json;

#[test]
fn deployed_with_nothing_set_uses_bedrock_through_aws_endpoint_url() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let set = [
        ("AWS_LAMBDA_FUNCTION_NAME", "parley-review-worker"),
        ("AWS_REGION", "eu-west-1"),
        ("AWS_ACCESS_KEY_ID", "AKIDTEST"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_CONFIG_FILE", "/nonexistent/parley-test-config"),
        (
            "AWS_SHARED_CREDENTIALS_FILE",
            "/nonexistent/parley-test-credentials",
        ),
        ("LLM_RETRY_BASE_DELAY_MS", "1"),
        (
            "PARLEY_LLM_PRICES",
            r#"{"claude-sonnet-4-5": {"input": 3.3, "output": 16.5}}"#,
        ),
    ];
    let unset = [
        "LLM_PROVIDER",
        "LLM_MODEL",
        "LLM_BASE_URL",
        "LLM_API_KEY",
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
        "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
    ];
    // SAFETY: this is the only test in this binary and no runtime or other thread has
    // started yet, so nothing reads the environment concurrently.
    unsafe {
        for (name, value) in set {
            std::env::set_var(name, value);
        }
        for name in unset {
            std::env::remove_var(name);
        }
    }

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = FakeServer::start_on(
            listener,
            vec![
                Canned::json(429, json!({"message": "Too many requests"}))
                    .header("x-amzn-errortype", "ThrottlingException"),
                Canned::json(
                    200,
                    json!({
                        "output": {"message": {"role": "assistant", "content": [{"text": "hello"}]}},
                        "stopReason": "end_turn",
                        "usage": {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4},
                        "metrics": {"latencyMs": 5}
                    }),
                ),
            ],
        );
        let llm = parley_llm::from_env().await.unwrap();
        assert_eq!(llm.model(), "eu.anthropic.claude-sonnet-4-5-20250929-v1:0");

        let reply = llm
            .complete(&LlmRequest::new("", vec![Message::user("hi")]))
            .await
            .unwrap();
        assert_eq!(reply.text, "hello");
        assert_eq!(reply.usage, Usage::new(3, 1));

        let seen = server.requests();
        assert_eq!(seen.len(), 2, "one throttled attempt, one retry");
        assert_eq!(
            seen[1].path,
            "/model/eu.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
        );
        let authorization = seen[1].header("authorization").unwrap_or_default();
        assert!(authorization.contains("/eu-west-1/bedrock/"), "{authorization}");

        // The regional profile's premium, declared by the operator, prices this model.
        let prices = parley_llm::prices_from_env().unwrap();
        let cost = prices.cost_usd(llm.model(), Usage::new(1_000_000, 0));
        assert_eq!(cost, Some(3.3));
    });
}
