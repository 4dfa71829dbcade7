//! Embeddings providers behind [`parley_core::ports::Embedder`]:
//!
//! - [`bedrock::BedrockEmbedder`]: Amazon Bedrock Titan Text Embeddings V2, the default
//!   when deployed.
//! - [`openai::OpenAiEmbedder`]: any OpenAI-compatible `/embeddings` endpoint (OpenAI,
//!   Ollama, llama.cpp, vLLM).
//! - `static_model::StaticEmbedder` (cargo feature `static`): a model2vec static model
//!   from a local directory, for local runs and tests without a service.
//!
//! Entrypoints call [`from_env`] (or [`build`]) once per process. With no provider
//! configured there is no embedder and retrieval is lexical only.

pub mod bedrock;
pub mod config;
pub mod openai;
mod retry;
#[cfg(feature = "static")]
pub mod static_model;
pub mod vectors;

pub use bedrock::BedrockEmbedder;
pub use config::{EmbeddingsConfig, Provider};
pub use openai::OpenAiEmbedder;

use parley_core::ports::{Embedder, EmbeddingError};
use std::sync::Arc;

/// The embedder the environment asks for, or `None` for lexical-only retrieval.
pub async fn from_env() -> Result<Option<Arc<dyn Embedder>>, EmbeddingError> {
    build(EmbeddingsConfig::from_env()?).await
}

/// The adapter for `config`. Async because Bedrock loads the AWS configuration.
pub async fn build(config: EmbeddingsConfig) -> Result<Option<Arc<dyn Embedder>>, EmbeddingError> {
    // In Lambda the template passes the key as a Secrets Manager ARN; the entrypoint
    // resolves it. Sent as a key it would fail later as a confusing 401.
    if config
        .api_key
        .as_deref()
        .is_some_and(|key| key.starts_with("arn:") && key.contains(":secretsmanager:"))
    {
        return Err(EmbeddingError::Config(
            "EMBEDDINGS_API_KEY is a Secrets Manager ARN; resolve it to the secret's value \
             before building the embeddings client"
                .into(),
        ));
    }
    let dimensions = |config: &EmbeddingsConfig| {
        config.dimensions.ok_or_else(|| {
            EmbeddingError::Config(format!(
                "{} needs EMBEDDINGS_DIMENSIONS",
                config.provider.as_str()
            ))
        })
    };
    let embedder: Arc<dyn Embedder> = match config.provider {
        Provider::None => {
            tracing::info!(
                "no embeddings provider (EMBEDDINGS_PROVIDER): retrieval is lexical only"
            );
            return Ok(None);
        }
        Provider::OpenAi => Arc::new(OpenAiEmbedder::new(
            config
                .base_url
                .as_deref()
                .unwrap_or(config::DEFAULT_OPENAI_BASE_URL),
            config.api_key.clone(),
            config.model.clone(),
            dimensions(&config)?,
            config.timeout,
            config.retry,
        )?),
        Provider::Bedrock => {
            let sdk_config = parley_aws::load(parley_aws::Overrides {
                endpoint_url: config.base_url.clone(),
                ..Default::default()
            })
            .await;
            if sdk_config.region().is_none() {
                return Err(EmbeddingError::Config(
                    "EMBEDDINGS_PROVIDER=bedrock needs an AWS region (set AWS_REGION)".into(),
                ));
            }
            Arc::new(BedrockEmbedder::new(
                &sdk_config,
                config.model.clone(),
                dimensions(&config)?,
                config.timeout,
                config.retry,
            ))
        }
        Provider::Static => static_embedder(&config)?,
    };
    tracing::info!(
        provider = config.provider.as_str(),
        model = embedder.model(),
        dimensions = embedder.dimensions(),
        "embeddings provider configured"
    );
    Ok(Some(embedder))
}

#[cfg(feature = "static")]
fn static_embedder(config: &EmbeddingsConfig) -> Result<Arc<dyn Embedder>, EmbeddingError> {
    let dir = config.model_path.as_deref().ok_or_else(|| {
        EmbeddingError::Config("EMBEDDINGS_PROVIDER=static needs EMBEDDINGS_MODEL".into())
    })?;
    Ok(Arc::new(static_model::StaticEmbedder::load(
        dir,
        config.dimensions,
    )?))
}

#[cfg(not(feature = "static"))]
fn static_embedder(_config: &EmbeddingsConfig) -> Result<Arc<dyn Embedder>, EmbeddingError> {
    Err(EmbeddingError::Config(
        "EMBEDDINGS_PROVIDER=static: this binary was built without static models (the \
         `static` feature of parley-embeddings; the `parley` CLI has it, the Lambda \
         functions do not)"
            .into(),
    ))
}
