//! Amazon Bedrock Titan Text Embeddings V2 (`amazon.titan-embed-text-v2:0`), the default
//! when deployed: the function's role pays, no key to manage.
//!
//! Titan takes one text per `InvokeModel`, so a batch is sent as concurrent calls, at most
//! [`MAX_CONCURRENT_CALLS`] at a time (the account's default quota is counted in requests
//! per minute; a job of 200 documents then takes a few seconds, not a burst of 200). As
//! in the LLM adapter, the SDK's own retries are off so the shared policy applies, and
//! the per-call timeout is ours.

use crate::retry::{Failure, with_retries};
use crate::vectors::normalised;
use async_trait::async_trait;
use aws_sdk_bedrockruntime::Client;
use aws_sdk_bedrockruntime::config::http::HttpResponse;
use aws_sdk_bedrockruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::operation::invoke_model::InvokeModelError;
use aws_sdk_bedrockruntime::primitives::Blob;
use futures::{StreamExt, TryStreamExt};
use parley_core::ports::{Embedder, EmbeddingError, Embeddings};
use parley_llm::RetryPolicy;
use serde::Deserialize;
use std::time::Duration;

const PROVIDER: &str = "bedrock";
/// Titan calls in flight per `embed`.
pub const MAX_CONCURRENT_CALLS: usize = 8;

#[derive(Debug)]
pub struct BedrockEmbedder {
    client: Client,
    model: String,
    dimensions: usize,
    timeout: Duration,
    retry: RetryPolicy,
}

impl BedrockEmbedder {
    /// From a loaded AWS configuration (region, credentials, and any endpoint override,
    /// such as a test's fake server).
    pub fn new(
        sdk_config: &parley_aws::SdkConfig,
        model: impl Into<String>,
        dimensions: usize,
        timeout: Duration,
        retry: RetryPolicy,
    ) -> Self {
        Self {
            client: parley_llm::bedrock::client(sdk_config),
            model: model.into(),
            dimensions,
            timeout,
            retry,
        }
    }

    async fn embed_one(&self, text: &str) -> Result<(Vec<f32>, u64), EmbeddingError> {
        let body = serde_json::json!({
            "inputText": text,
            "dimensions": self.dimensions,
            "normalize": true,
        });
        let body = Blob::new(body.to_string().into_bytes());
        let reply: Reply = with_retries(&self.retry, PROVIDER, &self.model, || {
            self.attempt(body.clone())
        })
        .await?;
        let vector = normalised(reply.embedding, self.dimensions)?;
        let tokens = reply
            .input_text_token_count
            .unwrap_or_else(|| crate::vectors::estimated_tokens(&[text.to_owned()]));
        Ok((vector, tokens))
    }

    async fn attempt(&self, body: Blob) -> Result<Reply, Failure> {
        let call = self
            .client
            .invoke_model()
            .model_id(&self.model)
            .content_type("application/json")
            .accept("application/json")
            .body(body)
            .send();
        let output = match tokio::time::timeout(self.timeout, call).await {
            Err(_elapsed) => {
                return Err(Failure::Stop(EmbeddingError::Unavailable(format!(
                    "Bedrock did not answer within {:?}",
                    self.timeout
                ))));
            }
            Ok(Err(error)) => return Err(classify(error, &self.model)),
            Ok(Ok(output)) => output,
        };
        serde_json::from_slice(output.body().as_ref()).map_err(|e| {
            Failure::Stop(EmbeddingError::BadResponse(format!(
                "Bedrock returned {} bytes that are not a Titan embedding: {e}",
                output.body().as_ref().len()
            )))
        })
    }
}

#[async_trait]
impl Embedder for BedrockEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Embeddings, EmbeddingError> {
        // `buffered` keeps input order while running calls side by side.
        // The calls are built up front (futures do nothing until polled): a closure in
        // the stream would not be `Send` for every lifetime, as `async_trait` needs.
        let calls: Vec<_> = texts.iter().map(|text| self.embed_one(text)).collect();
        let results: Vec<(Vec<f32>, u64)> = futures::stream::iter(calls)
            .buffered(MAX_CONCURRENT_CALLS)
            .try_collect()
            .await?;
        let input_tokens = results.iter().map(|(_, t)| t).sum();
        Ok(Embeddings {
            vectors: results.into_iter().map(|(v, _)| v).collect(),
            input_tokens,
        })
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reply {
    embedding: Vec<f32>,
    input_text_token_count: Option<u64>,
}

fn classify(error: SdkError<InvokeModelError, HttpResponse>, model: &str) -> Failure {
    // Not `DisplayErrorContext`: it prints the raw response, body included.
    let text = parley_llm::error_chain(&error);
    let unavailable = |m: String| Failure::Retry(EmbeddingError::Unavailable(m), None);
    let (service, status) = match error {
        SdkError::ServiceError(context) if context.raw().status().is_success() => {
            return Failure::Stop(EmbeddingError::BadResponse(format!(
                "Bedrock returned a reply that is not an InvokeModel answer: {text}"
            )));
        }
        SdkError::ServiceError(context) => {
            let status = context.raw().status().as_u16();
            (context.into_err(), status)
        }
        SdkError::TimeoutError(_) => {
            return Failure::Stop(EmbeddingError::Unavailable(format!(
                "Bedrock timed out: {text}"
            )));
        }
        SdkError::DispatchFailure(failure) => {
            return if text.to_ascii_lowercase().contains("credentials") {
                Failure::Stop(EmbeddingError::Config(format!(
                    "no usable AWS credentials: {text}"
                )))
            } else if failure.is_user() {
                Failure::Stop(EmbeddingError::Config(text))
            } else {
                unavailable(text)
            };
        }
        SdkError::ResponseError(_) => {
            return Failure::Stop(EmbeddingError::BadResponse(format!(
                "Bedrock returned a reply that is not an InvokeModel answer: {text}"
            )));
        }
        SdkError::ConstructionFailure(_) => {
            return Failure::Stop(EmbeddingError::Config(format!(
                "cannot build the Bedrock request: {text}"
            )));
        }
        _ => return unavailable(text),
    };
    let message = service
        .message()
        .map(str::to_owned)
        .unwrap_or_else(|| service.code().unwrap_or("unknown error").to_owned());
    match &service {
        InvokeModelError::ThrottlingException(_)
        | InvokeModelError::ServiceUnavailableException(_)
        | InvokeModelError::ModelNotReadyException(_)
        | InvokeModelError::InternalServerException(_)
        | InvokeModelError::ModelErrorException(_) => {
            unavailable(format!("Bedrock {model}: {message}"))
        }
        InvokeModelError::ModelTimeoutException(_) => Failure::Stop(EmbeddingError::Unavailable(
            format!("Bedrock {model} timed out: {message}"),
        )),
        InvokeModelError::AccessDeniedException(_) => {
            Failure::Stop(EmbeddingError::Config(format!(
                "Bedrock denied {model} (model access granted? IAM allows bedrock:InvokeModel?): {message}"
            )))
        }
        InvokeModelError::ResourceNotFoundException(_) => {
            Failure::Stop(EmbeddingError::Config(format!(
                "Bedrock has no model {model} here (check EMBEDDINGS_MODEL and the region): {message}"
            )))
        }
        InvokeModelError::ServiceQuotaExceededException(_)
        | InvokeModelError::ValidationException(_) => Failure::Stop(EmbeddingError::Config(
            format!("Bedrock refused the request for {model}: {message}"),
        )),
        // Errors InvokeModel does not model (signature, gateway trouble): by status.
        _ => match status {
            429 | 500..=599 => unavailable(format!("Bedrock HTTP {status}: {message}")),
            _ => Failure::Stop(EmbeddingError::Config(format!(
                "Bedrock HTTP {status}: {message}"
            ))),
        },
    }
}
