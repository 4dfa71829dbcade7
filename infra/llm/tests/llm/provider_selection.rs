//! `build()` turns a configuration into a working adapter for each HTTP provider.

use crate::common;

use common::{Canned, FakeServer, fast_retries};
use parley_core::ports::llm::{LlmRequest, Message};
use parley_llm::{LlmConfig, Provider};
use serde_json::json;
use std::time::Duration;

fn config(provider: Provider, base_url: String, api_key: Option<&str>, model: &str) -> LlmConfig {
    LlmConfig {
        provider,
        model: Some(model.to_owned()),
        base_url: Some(base_url),
        api_key: api_key.map(str::to_owned),
        timeout: Duration::from_secs(5),
        retry: fast_retries(),
    }
}

fn ask() -> LlmRequest {
    LlmRequest::new("system", vec![Message::user("hi")])
}

#[tokio::test]
async fn an_anthropic_config_builds_an_anthropic_adapter() {
    let server = FakeServer::start(vec![Canned::json(
        200,
        json!({"content": [{"type": "text", "text": "hello"}], "usage": {"input_tokens": 1, "output_tokens": 1}}),
    )])
    .await;
    let llm = parley_llm::build(config(
        Provider::Anthropic,
        server.base_url.clone(),
        Some("sk-ant"),
        "claude-haiku-4-5",
    ))
    .await
    .unwrap();
    assert_eq!(llm.model(), "claude-haiku-4-5");
    assert_eq!(llm.complete(&ask()).await.unwrap().text, "hello");
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant"));
}

#[tokio::test]
async fn an_openai_config_builds_an_openai_compatible_adapter() {
    let server = FakeServer::start(vec![Canned::json(
        200,
        json!({"choices": [{"message": {"content": "hello"}, "finish_reason": "stop"}]}),
    )])
    .await;
    let llm = parley_llm::build(config(
        Provider::OpenAi,
        format!("{}/v1", server.base_url),
        None,
        "qwen2.5-coder:7b",
    ))
    .await
    .unwrap();
    assert_eq!(llm.complete(&ask()).await.unwrap().text, "hello");
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.body["model"], "qwen2.5-coder:7b");
}

#[tokio::test]
async fn an_unresolved_secret_arn_is_refused_before_any_call() {
    let server = FakeServer::start(vec![]).await;
    let result = parley_llm::build(config(
        Provider::Anthropic,
        server.base_url.clone(),
        Some("arn:aws:secretsmanager:eu-west-1:123456789012:secret:parley-llm-AbCdEf"),
        "claude-sonnet-4-5",
    ))
    .await;
    assert!(
        matches!(&result, Err(parley_core::ports::llm::LlmError::Config(m)) if m.contains("Secrets Manager")),
        "{:?}",
        result.err()
    );
    assert!(server.requests().is_empty());
}
