//! LLM providers behind [`parley_core::ports::llm::Llm`]: Anthropic Messages,
//! OpenAI-compatible Chat Completions, and Amazon Bedrock Converse.
//!
//! Entrypoints call [`from_env`] once per process (a warm Lambda reuses the client and its
//! connection pool) and wrap the result per job in
//! [`MeteredLlm`](parley_core::llm::MeteredLlm) with [`prices_from_env`] to account for
//! cost. See `docs/llm.md` for the settings.

pub mod anthropic;
pub mod bedrock;
pub mod cache;
pub mod config;
mod http;
pub mod limit;
pub mod openai;
pub mod retry;
pub mod server;
pub mod stream;

pub use anthropic::AnthropicLlm;
pub use bedrock::BedrockLlm;
pub use config::{LlmConfig, Provider};
pub use http::{client_builder, error_chain};
pub use openai::OpenAiLlm;
pub use retry::RetryPolicy;

use parley_core::llm::{PRICES_ENV, PriceTable, PricingError};
use parley_core::ports::llm::{Llm, LlmError};
use std::sync::Arc;

/// The provider behind its call limit: `max_concurrency` (`LLM_MAX_CONCURRENCY`) when
/// set, else what [`limit::discover`] finds; a llama.cpp server found on the way also
/// gets `cache_prompt`. One probe of a self-hosted server per process.
pub async fn build_limited(
    config: LlmConfig,
    max_concurrency: Option<usize>,
    output_cap: Option<u32>,
) -> Result<Arc<dyn Llm>, LlmError> {
    let server = if config.provider == Provider::OpenAi && !config.is_openai_cloud() {
        server::probe(config.openai_base_url()).await
    } else {
        None
    };
    let concurrency = match max_concurrency {
        Some(n) => limit::Concurrency::Fixed(n),
        None => limit::discover(&config, server),
    };
    tracing::info!(?concurrency, llama_cpp = server.is_some(), "LLM call limit");
    let self_hosted = config.provider == Provider::OpenAi && !config.is_openai_cloud();
    let llm = build_with(config, server.is_some(), self_hosted).await?;
    Ok(Arc::new(
        limit::Limited::with_concurrency(llm, concurrency).with_output_cap(output_cap),
    ))
}

/// The provider the environment asks for. See [`LlmConfig::from_env`].
pub async fn from_env() -> Result<Arc<dyn Llm>, LlmError> {
    build(LlmConfig::from_env()?).await
}

/// The adapter for `config`. Async because Bedrock loads the AWS configuration (region,
/// role credentials, endpoint override).
pub async fn build(config: LlmConfig) -> Result<Arc<dyn Llm>, LlmError> {
    build_with(config, false, false).await
}

/// `llama_cpp`: the server said it is one (it gets `cache_prompt`). `self_hosted`: not a
/// cloud API, so replies are streamed (see [`stream`]).
async fn build_with(
    config: LlmConfig,
    llama_cpp: bool,
    self_hosted: bool,
) -> Result<Arc<dyn Llm>, LlmError> {
    // In Lambda the template passes the key as a Secrets Manager ARN; sending the ARN as
    // a key would fail later as a confusing 401.
    if config
        .api_key
        .as_deref()
        .is_some_and(|key| key.starts_with("arn:") && key.contains(":secretsmanager:"))
    {
        return Err(LlmError::Config(
            "LLM_API_KEY is a Secrets Manager ARN; resolve it to the secret's value before \
             building the LLM client"
                .into(),
        ));
    }
    let llm: Arc<dyn Llm> = match config.provider {
        Provider::Anthropic => Arc::new(AnthropicLlm::new(
            config
                .base_url
                .as_deref()
                .unwrap_or(config::DEFAULT_ANTHROPIC_BASE_URL),
            config
                .api_key
                .ok_or_else(|| LlmError::Config("anthropic needs LLM_API_KEY".into()))?,
            required_model(config.model)?,
            config.timeout,
            config.retry,
        )?),
        Provider::OpenAi => Arc::new(
            OpenAiLlm::new(
                config
                    .base_url
                    .as_deref()
                    .unwrap_or(config::DEFAULT_OPENAI_BASE_URL),
                config.api_key,
                required_model(config.model)?,
                config.timeout,
                config.retry,
            )?
            .with_cache_prompt(llama_cpp)
            .with_streaming(self_hosted),
        ),
        Provider::Bedrock => {
            let sdk_config = parley_aws::load(parley_aws::Overrides {
                endpoint_url: config.base_url.clone(),
                ..Default::default()
            })
            .await;
            let Some(region) = sdk_config.region().map(|r| r.to_string()) else {
                return Err(LlmError::Config(
                    "LLM_PROVIDER=bedrock needs an AWS region (set AWS_REGION)".into(),
                ));
            };
            let model = config
                .model
                .unwrap_or_else(|| config::default_bedrock_model(Some(&region)));
            Arc::new(BedrockLlm::new(
                &sdk_config,
                model,
                config.timeout,
                config.retry,
            ))
        }
    };
    tracing::info!(
        provider = config.provider.as_str(),
        model = llm.model(),
        timeout_secs = config.timeout.as_secs(),
        max_retries = config.retry.max_retries,
        "LLM provider configured"
    );
    Ok(llm)
}

fn required_model(model: Option<String>) -> Result<String, LlmError> {
    model.ok_or_else(|| LlmError::Config("set LLM_MODEL".into()))
}

/// The built-in price table with `PARLEY_LLM_PRICES` applied. A malformed override is an
/// error rather than silently wrong cost figures.
pub fn prices_from_env() -> Result<PriceTable, PricingError> {
    match std::env::var(PRICES_ENV) {
        Ok(json) if !json.trim().is_empty() => PriceTable::builtin().with_overrides_json(&json),
        _ => Ok(PriceTable::builtin()),
    }
}

/// The one debug line every provider writes as a call starts (sizes only: the prompt
/// holds repository code and people's comments).
pub(crate) fn trace_request(
    provider: &str,
    model: &str,
    request: &parley_core::ports::llm::LlmRequest,
) {
    tracing::debug!(
        provider,
        model,
        messages = request.messages.len(),
        system_chars = request.system.len(),
        "LLM request"
    );
}
