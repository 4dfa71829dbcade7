//! Amazon Bedrock through the Converse API, the default when deployed: no API key to
//! manage, credentials come from the Lambda role, and the bill is the AWS account's.
//!
//! The SDK's own retry layer is switched off so Bedrock obeys the same `LLM_MAX_RETRIES`,
//! backoff and error classification as the other providers; the per-call timeout is
//! likewise ours. Converse has no plain JSON mode, so the `json` option is ignored.

use crate::cache;
use crate::retry::{RetryPolicy, with_retries};
use async_trait::async_trait;
use aws_sdk_bedrockruntime::Client;
use aws_sdk_bedrockruntime::config::http::HttpResponse;
use aws_sdk_bedrockruntime::config::retry::RetryConfig;
use aws_sdk_bedrockruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::operation::converse::{ConverseError, ConverseOutput};
use aws_sdk_bedrockruntime::types::{
    CachePointBlock, CachePointType, ContentBlock, ConversationRole,
    ConverseOutput as ConverseResult, InferenceConfiguration, Message, StopReason,
    SystemContentBlock,
};
use parley_core::ports::llm::{Llm, LlmError, LlmRequest, LlmResponse, PromptCache, Role, Usage};
use std::time::Duration;

const PROVIDER: &str = "bedrock";

#[derive(Debug)]
pub struct BedrockLlm {
    client: Client,
    model: String,
    timeout: Duration,
    retry: RetryPolicy,
}

impl BedrockLlm {
    /// Build from a loaded AWS configuration (region, credentials, and any endpoint
    /// override such as `AWS_ENDPOINT_URL` for an emulator).
    pub fn new(
        sdk_config: &aws_config::SdkConfig,
        model: impl Into<String>,
        timeout: Duration,
        retry: RetryPolicy,
    ) -> Self {
        let config = aws_sdk_bedrockruntime::config::Builder::from(sdk_config)
            .retry_config(RetryConfig::disabled())
            .build();
        Self {
            client: Client::from_conf(config),
            model: model.into(),
            timeout,
            retry,
        }
    }

    async fn attempt(
        &self,
        messages: &[Message],
        system: Option<&SystemContentBlock>,
        inference: &InferenceConfiguration,
        timeout: Duration,
    ) -> Result<LlmResponse, LlmError> {
        let call = self
            .client
            .converse()
            .model_id(&self.model)
            .set_messages(Some(messages.to_vec()))
            .set_system(system.map(|block| vec![block.clone()]))
            .inference_config(inference.clone())
            .send();
        let output = match tokio::time::timeout(timeout, call).await {
            Err(_elapsed) => return Err(LlmError::Timeout(timeout)),
            Ok(Err(error)) => return Err(classify(error, &self.model, timeout)),
            Ok(Ok(output)) => output,
        };
        Ok(self.response(output))
    }

    fn response(&self, output: ConverseOutput) -> LlmResponse {
        let text = match output.output() {
            Some(ConverseResult::Message(message)) => message
                .content()
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text(text) => Some(text.as_str()),
                    _ => None,
                })
                .collect(),
            _ => String::new(),
        };
        let usage = output.usage().map_or_else(
            || {
                tracing::warn!(model = %self.model, "Bedrock reply carries no usage");
                Usage::default()
            },
            // `inputTokens` leaves out what was read from or written to the cache.
            |u| {
                Usage::new(tokens(u.input_tokens()), tokens(u.output_tokens())).with_cache(
                    u.cache_read_input_tokens().map_or(0, tokens),
                    u.cache_write_input_tokens().map_or(0, tokens),
                )
            },
        );
        LlmResponse {
            text,
            usage,
            // Converse does not echo the model; the configured id is what was billed.
            model: self.model.clone(),
            truncated: matches!(
                output.stop_reason(),
                StopReason::MaxTokens | StopReason::ModelContextWindowExceeded
            ),
        }
    }
}

fn tokens(count: i32) -> u64 {
    u64::try_from(count).unwrap_or(0)
}

#[async_trait]
impl Llm for BedrockLlm {
    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        // A `cachePoint` after the shared prefix, for a model with prompt caching and a
        // prefix long enough for it; Bedrock refuses one on other models.
        let cache = match (
            cache::bedrock_min_tokens(&self.model),
            request.cacheable_tokens(),
        ) {
            (Some(min), Some(tokens)) => tokens >= min,
            _ => false,
        };
        let messages = request
            .messages
            .iter()
            .map(|m| {
                let content = match m.split_at_cache_prefix().filter(|_| cache) {
                    Some((shared, own)) => vec![
                        ContentBlock::Text(shared.to_owned()),
                        ContentBlock::CachePoint(cache_point()?),
                        ContentBlock::Text(own.to_owned()),
                    ],
                    None => vec![ContentBlock::Text(m.text.clone())],
                };
                Message::builder()
                    .role(match m.role {
                        Role::User => ConversationRole::User,
                        Role::Assistant => ConversationRole::Assistant,
                    })
                    .set_content(Some(content))
                    .build()
                    .map_err(|e| LlmError::InvalidRequest(format!("cannot build message: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let system = Some(request.system.trim())
            .filter(|s| !s.is_empty())
            .map(|_| SystemContentBlock::Text(request.system.clone()));
        let inference = InferenceConfiguration::builder()
            .max_tokens(i32::try_from(request.options.max_tokens).unwrap_or(i32::MAX))
            .set_temperature(request.options.temperature)
            .build();
        let timeout = request.options.timeout.unwrap_or(self.timeout);
        tracing::debug!(
            provider = PROVIDER,
            model = %self.model,
            messages = request.messages.len(),
            system_chars = request.system.len(),
            "LLM request"
        );
        with_retries(&self.retry, PROVIDER, &self.model, || {
            self.attempt(&messages, system.as_ref(), &inference, timeout)
        })
        .await
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn prompt_cache(&self) -> PromptCache {
        match cache::bedrock_min_tokens(&self.model) {
            Some(min_tokens) => PromptCache::Marked { min_tokens },
            None => PromptCache::None,
        }
    }
}

fn cache_point() -> Result<CachePointBlock, LlmError> {
    CachePointBlock::builder()
        .r#type(CachePointType::Default)
        .build()
        .map_err(|e| LlmError::InvalidRequest(format!("cannot build a cache point: {e}")))
}

fn classify(
    error: SdkError<ConverseError, HttpResponse>,
    model: &str,
    timeout: Duration,
) -> LlmError {
    // The SDK's own Display is terse ("dispatch failure"); the chain of sources has the
    // cause. (Not `DisplayErrorContext`: it prints the raw response, body included.)
    let text = crate::http::error_chain(&error);
    let (service, status) = match error {
        // A 200 whose body the SDK could not parse also arrives as a service error.
        SdkError::ServiceError(context) if context.raw().status().is_success() => {
            return LlmError::Decode(format!(
                "Bedrock returned a response that is not a Converse reply: {text}"
            ));
        }
        SdkError::ServiceError(context) => {
            let status = context.raw().status().as_u16();
            (context.into_err(), status)
        }
        SdkError::TimeoutError(_) => return LlmError::Timeout(timeout),
        SdkError::DispatchFailure(failure) => {
            return if failure.is_timeout() {
                LlmError::Timeout(timeout)
            } else if text.to_ascii_lowercase().contains("credentials") {
                LlmError::Auth(format!("no usable AWS credentials: {text}"))
            } else if failure.is_user() {
                LlmError::Config(text)
            } else {
                LlmError::Network(text)
            };
        }
        SdkError::ResponseError(_) => {
            return LlmError::Decode(format!(
                "Bedrock returned a response that is not a Converse reply: {text}"
            ));
        }
        SdkError::ConstructionFailure(_) => {
            return LlmError::Config(format!("cannot build the Bedrock request: {text}"));
        }
        _ => return LlmError::Network(text),
    };

    let message = service
        .message()
        .map(crate::http::truncate)
        .unwrap_or_else(|| service.code().unwrap_or("unknown error").to_owned());
    match &service {
        ConverseError::AccessDeniedException(_) => LlmError::Auth(message),
        ConverseError::ResourceNotFoundException(_) => {
            LlmError::UnknownModel(format!("{model}: {message}"))
        }
        ConverseError::ThrottlingException(_) => LlmError::RateLimited {
            message,
            retry_after: None,
        },
        ConverseError::ServiceUnavailableException(_)
        | ConverseError::ModelNotReadyException(_) => LlmError::Overloaded {
            message,
            retry_after: None,
        },
        ConverseError::ModelTimeoutException(_) => LlmError::Timeout(timeout),
        ConverseError::InternalServerException(_) | ConverseError::ModelErrorException(_) => {
            LlmError::Server { status, message }
        }
        // Bedrock reports an unknown or unsupported model id as a validation error.
        ConverseError::ValidationException(_)
            if message.to_ascii_lowercase().contains("model identifier")
                || message.to_ascii_lowercase().contains("model id") =>
        {
            LlmError::UnknownModel(format!("{model}: {message}"))
        }
        ConverseError::ValidationException(_) => LlmError::InvalidRequest(message),
        // Errors Converse does not model (signature, token, gateway trouble): by status.
        _ => match status {
            401 | 403 => LlmError::Auth(message),
            429 => LlmError::RateLimited {
                message,
                retry_after: None,
            },
            503 => LlmError::Overloaded {
                message,
                retry_after: None,
            },
            s if s >= 500 => LlmError::Server { status: s, message },
            s => LlmError::InvalidRequest(format!("HTTP {s}: {message}")),
        },
    }
}
