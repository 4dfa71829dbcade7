//! Amazon Bedrock through the Converse API, the default when deployed: no API key to
//! manage, credentials come from the Lambda role, and the bill is the AWS account's.
//!
//! The SDK's own retry layer is switched off so Bedrock obeys the same `LLM_MAX_RETRIES`,
//! backoff and error classification as the other providers; the per-call timeout is
//! likewise ours. Converse has no plain JSON mode, so the `json` option is ignored. A
//! request whose caller waits for the answer to begin goes through ConverseStream
//! ([`stream`]).

mod stream;

use crate::cache;
use crate::retry::{RetryPolicy, with_retries};
use async_trait::async_trait;
use aws_sdk_bedrockruntime::Client;
use aws_sdk_bedrockruntime::config::http::HttpResponse;
use aws_sdk_bedrockruntime::config::retry::RetryConfig;
use aws_sdk_bedrockruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::operation::converse::ConverseOutput;
use aws_sdk_bedrockruntime::types::{
    CachePointBlock, CachePointType, ContentBlock, ConversationRole,
    ConverseOutput as ConverseResult, InferenceConfiguration, Message, StopReason,
    SystemContentBlock, Tool, ToolConfiguration, ToolInputSchema, ToolResultBlock,
    ToolResultContentBlock, ToolResultStatus, ToolSpecification, ToolUseBlock,
};
use aws_smithy_types::{Document, Number};
use parley_core::ports::llm::{
    CutOff, Llm, LlmError, LlmRequest, LlmResponse, PromptCache, Role, ToolCall, ToolSpec, Usage,
};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const PROVIDER: &str = "bedrock";

#[derive(Debug)]
pub struct BedrockLlm {
    client: Client,
    model: String,
    timeout: Duration,
    retry: RetryPolicy,
    /// Bedrock refused tool use for this model once: no later call sends tools.
    tools_refused: AtomicBool,
}

/// A Bedrock Runtime client from a loaded AWS configuration, with the SDK's own retries
/// off: Parley's [`RetryPolicy`] decides what is retried, once, for every provider (and
/// the embeddings' Titan calls share it).
pub fn client(sdk_config: &parley_aws::SdkConfig) -> Client {
    let config = aws_sdk_bedrockruntime::config::Builder::from(sdk_config)
        .retry_config(RetryConfig::disabled())
        .build();
    Client::from_conf(config)
}

/// The parts of one call, as both [`BedrockLlm::attempt`] and the streamed attempt take
/// them.
struct Call<'a> {
    messages: &'a [Message],
    system: Option<&'a SystemContentBlock>,
    inference: &'a InferenceConfiguration,
    tools: Option<&'a ToolConfiguration>,
    timeout: Duration,
}

impl BedrockLlm {
    /// Build from a loaded AWS configuration (region, credentials, and any endpoint
    /// override such as `AWS_ENDPOINT_URL` for an emulator).
    pub fn new(
        sdk_config: &parley_aws::SdkConfig,
        model: impl Into<String>,
        timeout: Duration,
        retry: RetryPolicy,
    ) -> Self {
        Self {
            client: client(sdk_config),
            model: model.into(),
            timeout,
            retry,
            tools_refused: AtomicBool::new(false),
        }
    }

    async fn attempt(&self, call: &Call<'_>) -> Result<LlmResponse, LlmError> {
        let sent = self
            .client
            .converse()
            .model_id(&self.model)
            .set_messages(Some(call.messages.to_vec()))
            .set_system(call.system.map(|block| vec![block.clone()]))
            .inference_config(call.inference.clone())
            .set_tool_config(call.tools.cloned())
            .send();
        let output = match tokio::time::timeout(call.timeout, sent).await {
            Err(_elapsed) => return Err(LlmError::Timeout(call.timeout)),
            Ok(Err(error)) => return Err(classify(error, &self.model, call.timeout)),
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
        let tool_calls = match output.output() {
            Some(ConverseResult::Message(message)) => message
                .content()
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::ToolUse(call) => Some(ToolCall {
                        id: call.tool_use_id().to_owned(),
                        name: call.name().to_owned(),
                        input: to_json(call.input()),
                    }),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
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
            cut_off: matches!(
                output.stop_reason(),
                StopReason::MaxTokens | StopReason::ModelContextWindowExceeded
            )
            .then_some(CutOff::OutputLimit),
            tool_calls,
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
                    _ if !m.tool_calls.is_empty() || !m.tool_results.is_empty() => tool_blocks(m)?,
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
        let tools = if request.tools.is_empty() || !self.supports_tools() {
            None
        } else {
            Some(tool_config(&request.tools)?)
        };
        let timeout = request.options.timeout.unwrap_or(self.timeout);
        crate::trace_request(PROVIDER, &self.model, request);
        let call = Call {
            messages: &messages,
            system: system.as_ref(),
            inference: &inference,
            tools: tools.as_ref(),
            timeout,
        };
        let result = match &request.options.started {
            Some(started) => {
                with_retries(&self.retry, PROVIDER, &self.model, || {
                    self.attempt_streamed(&call, started)
                })
                .await
            }
            None => with_retries(&self.retry, PROVIDER, &self.model, || self.attempt(&call)).await,
        };
        match result {
            // "This model doesn't support tool use": Converse answers a ValidationException.
            Err(LlmError::InvalidRequest(message))
                if tools.is_some() && message.to_ascii_lowercase().contains("tool") =>
            {
                self.tools_refused.store(true, Ordering::SeqCst);
                tracing::warn!(model = %self.model, %message, "Bedrock refused tool use for this model; reviews read the static context alone from now on");
                Err(LlmError::ToolsUnsupported(message))
            }
            other => other,
        }
    }

    /// Until Bedrock refuses tool use for this model once.
    fn supports_tools(&self) -> bool {
        !self.tools_refused.load(Ordering::SeqCst)
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

/// A turn's tool calls (`toolUse` after its text) or tool results (`toolResult`).
fn tool_blocks(message: &parley_core::ports::llm::Message) -> Result<Vec<ContentBlock>, LlmError> {
    let build = |e: aws_sdk_bedrockruntime::error::BuildError| {
        LlmError::InvalidRequest(format!("cannot build a tool block: {e}"))
    };
    let mut blocks = Vec::new();
    if !message.text.trim().is_empty() {
        blocks.push(ContentBlock::Text(message.text.clone()));
    }
    for call in &message.tool_calls {
        blocks.push(ContentBlock::ToolUse(
            ToolUseBlock::builder()
                .tool_use_id(&call.id)
                .name(&call.name)
                .input(to_document(&call.input))
                .build()
                .map_err(build)?,
        ));
    }
    for result in &message.tool_results {
        blocks.push(ContentBlock::ToolResult(
            ToolResultBlock::builder()
                .tool_use_id(&result.call_id)
                .content(ToolResultContentBlock::Text(result.content.clone()))
                .set_status(result.is_error.then_some(ToolResultStatus::Error))
                .build()
                .map_err(build)?,
        ));
    }
    Ok(blocks)
}

fn tool_config(tools: &[ToolSpec]) -> Result<ToolConfiguration, LlmError> {
    let build = |e: aws_sdk_bedrockruntime::error::BuildError| {
        LlmError::InvalidRequest(format!("cannot build a tool definition: {e}"))
    };
    let specs = tools
        .iter()
        .map(|tool| {
            ToolSpecification::builder()
                .name(tool.name)
                .description(tool.description)
                .input_schema(ToolInputSchema::Json(to_document(&tool.input_schema)))
                .build()
                .map(Tool::ToolSpec)
                .map_err(build)
        })
        .collect::<Result<Vec<_>, _>>()?;
    ToolConfiguration::builder()
        .set_tools(Some(specs))
        .build()
        .map_err(build)
}

/// JSON as the SDK's `Document` (tool schemas and inputs). Written here because the
/// SDK's own serde support is behind an unstable cfg.
fn to_document(value: &Value) -> Document {
    match value {
        Value::Null => Document::Null,
        Value::Bool(b) => Document::Bool(*b),
        Value::Number(n) => Document::Number(if let Some(u) = n.as_u64() {
            Number::PosInt(u)
        } else if let Some(i) = n.as_i64() {
            Number::NegInt(i)
        } else {
            Number::Float(n.as_f64().unwrap_or(0.0))
        }),
        Value::String(s) => Document::String(s.clone()),
        Value::Array(items) => Document::Array(items.iter().map(to_document).collect()),
        Value::Object(map) => Document::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), to_document(v)))
                .collect(),
        ),
    }
}

fn to_json(document: &Document) -> Value {
    match document {
        Document::Null => Value::Null,
        Document::Bool(b) => Value::Bool(*b),
        Document::Number(Number::PosInt(u)) => Value::from(*u),
        Document::Number(Number::NegInt(i)) => Value::from(*i),
        Document::Number(Number::Float(f)) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Document::String(s) => Value::String(s.clone()),
        Document::Array(items) => Value::Array(items.iter().map(to_json).collect()),
        Document::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
        }
    }
}

fn cache_point() -> Result<CachePointBlock, LlmError> {
    CachePointBlock::builder()
        .r#type(CachePointType::Default)
        .build()
        .map_err(|e| LlmError::InvalidRequest(format!("cannot build a cache point: {e}")))
}

/// An error from Converse or ConverseStream (before its stream starts) as what a caller
/// can do about it. The two operations model the same exceptions as different types, so
/// they are told apart by their code ([`by_code`]).
fn classify<E>(error: SdkError<E, HttpResponse>, model: &str, timeout: Duration) -> LlmError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    // The SDK's own Display is terse ("dispatch failure"); the chain of sources has the
    // cause. (Not `DisplayErrorContext`: it prints the raw response, body included.)
    let text = crate::http::error_chain(&error);
    match error {
        // A 200 whose body the SDK could not parse also arrives as a service error.
        SdkError::ServiceError(context) if context.raw().status().is_success() => LlmError::Decode(
            format!("Bedrock returned a response that is not a Converse reply: {text}"),
        ),
        SdkError::ServiceError(context) => {
            let status = context.raw().status().as_u16();
            let service = context.into_err();
            by_code(service.code(), service.message(), status, model, timeout)
        }
        SdkError::TimeoutError(_) => LlmError::Timeout(timeout),
        SdkError::DispatchFailure(failure) => {
            if failure.is_timeout() {
                LlmError::Timeout(timeout)
            } else if text.to_ascii_lowercase().contains("credentials") {
                LlmError::Auth(format!("no usable AWS credentials: {text}"))
            } else if failure.is_user() {
                LlmError::Config(text)
            } else {
                LlmError::Network(text)
            }
        }
        SdkError::ResponseError(_) => LlmError::Decode(format!(
            "Bedrock returned a response that is not a Converse reply: {text}"
        )),
        SdkError::ConstructionFailure(_) => {
            LlmError::Config(format!("cannot build the Bedrock request: {text}"))
        }
        _ => LlmError::Network(text),
    }
}

/// A Bedrock exception by its code: `ThrottlingException` as an HTTP error type,
/// `throttlingException` inside an event stream. `status` is the HTTP status where there
/// is one (500 mid-stream).
fn by_code(
    code: Option<&str>,
    message: Option<&str>,
    status: u16,
    model: &str,
    timeout: Duration,
) -> LlmError {
    let message = message
        .map(crate::http::truncate)
        .unwrap_or_else(|| code.unwrap_or("unknown error").to_owned());
    let about_model = || {
        let lower = message.to_ascii_lowercase();
        lower.contains("model identifier") || lower.contains("model id")
    };
    match code.unwrap_or_default().to_ascii_lowercase().as_str() {
        "accessdeniedexception" => LlmError::Auth(message),
        "resourcenotfoundexception" => LlmError::UnknownModel(format!("{model}: {message}")),
        "throttlingexception" => LlmError::RateLimited {
            message,
            retry_after: None,
        },
        "serviceunavailableexception" | "modelnotreadyexception" => LlmError::Overloaded {
            message,
            retry_after: None,
        },
        "modeltimeoutexception" => LlmError::Timeout(timeout),
        "internalserverexception" | "modelerrorexception" | "modelstreamerrorexception" => {
            LlmError::Server {
                status: status.max(500),
                message,
            }
        }
        // Bedrock reports an unknown or unsupported model id as a validation error.
        "validationexception" if about_model() => {
            LlmError::UnknownModel(format!("{model}: {message}"))
        }
        "validationexception" => LlmError::InvalidRequest(message),
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
