//! LLM settings from the environment.
//!
//! The same variable names work in Lambda and on a laptop. Deployed, nothing needs to be
//! set: Bedrock with a current Claude model and the function's role. Locally there is no
//! sensible default (which provider? which key?), so we refuse with a message that says
//! what to set instead of guessing.

use crate::retry::RetryPolicy;
use parley_core::ports::llm::LlmError;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

pub const PROVIDER_ENV: &str = "LLM_PROVIDER";
pub const MODEL_ENV: &str = "LLM_MODEL";
pub const BASE_URL_ENV: &str = "LLM_BASE_URL";
pub const API_KEY_ENV: &str = "LLM_API_KEY";
pub const TIMEOUT_ENV: &str = "LLM_TIMEOUT_SECS";
pub const MAX_RETRIES_ENV: &str = "LLM_MAX_RETRIES";
pub const RETRY_BASE_DELAY_ENV: &str = "LLM_RETRY_BASE_DELAY_MS";
/// Set by the Lambda runtime; its presence means "deployed".
const LAMBDA_ENV: &str = "AWS_LAMBDA_FUNCTION_NAME";

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// Claude Sonnet 4.5 on Bedrock. On-demand Claude 4 models are only served through
/// cross-region inference profiles, whose id starts with a geography; see
/// [`default_bedrock_model`].
pub const BEDROCK_CLAUDE_MODEL: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    Bedrock,
    Anthropic,
    /// Any OpenAI-compatible Chat Completions server: OpenAI, Ollama, vLLM, llama.cpp,
    /// OpenRouter.
    OpenAi,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Bedrock => "bedrock",
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
        }
    }
}

impl FromStr for Provider {
    type Err = LlmError;

    fn from_str(value: &str) -> Result<Self, LlmError> {
        match value.trim().to_ascii_lowercase().as_str() {
            "bedrock" => Ok(Provider::Bedrock),
            "anthropic" => Ok(Provider::Anthropic),
            "openai" | "openai-compatible" => Ok(Provider::OpenAi),
            other => Err(LlmError::Config(format!(
                "{PROVIDER_ENV}={other:?} is not a provider; use bedrock, anthropic or openai"
            ))),
        }
    }
}

/// Everything needed to build an adapter. The API key is redacted from `Debug` so the
/// config can be logged.
#[derive(Clone, PartialEq)]
pub struct LlmConfig {
    pub provider: Provider,
    /// `None` only for Bedrock, whose default depends on the region (known once the AWS
    /// configuration is loaded).
    pub model: Option<String>,
    /// Anthropic/OpenAI: the API root. Bedrock: an endpoint override (the SDK also honours
    /// `AWS_ENDPOINT_URL`).
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    /// Per attempt; a call with retries can take longer in total.
    pub timeout: Duration,
    pub retry: RetryPolicy,
}

impl fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmConfig")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

impl LlmConfig {
    /// The OpenAI-compatible API root in use.
    pub fn openai_base_url(&self) -> &str {
        self.base_url.as_deref().unwrap_or(DEFAULT_OPENAI_BASE_URL)
    }

    /// OpenAI's own API (the default base URL): a cloud service, not a server to probe.
    pub fn is_openai_cloud(&self) -> bool {
        reqwest::Url::parse(self.openai_base_url())
            .ok()
            .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
            .is_some_and(|host| host == "api.openai.com" || host.ends_with(".openai.azure.com"))
    }

    /// Read the process environment.
    pub fn from_env() -> Result<Self, LlmError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Read settings through `lookup`, so tests need not mutate the process environment.
    /// Blank values count as unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, LlmError> {
        let get = |name: &str| parley_core::env::value(lookup(name));

        let provider = match get(PROVIDER_ENV) {
            Some(value) => value.parse()?,
            None if get(LAMBDA_ENV).is_some() => Provider::Bedrock,
            None => {
                return Err(LlmError::Config(format!(
                    "set {PROVIDER_ENV} to bedrock, anthropic or openai (with {MODEL_ENV}, and \
                     {API_KEY_ENV} / {BASE_URL_ENV} as the provider needs); \
                     see docs/llm.md"
                )));
            }
        };
        let model = get(MODEL_ENV);
        let base_url = get(BASE_URL_ENV).map(|u| u.trim_end_matches('/').to_owned());
        let api_key = get(API_KEY_ENV);

        let model = match provider {
            Provider::Bedrock => model,
            Provider::Anthropic => Some(model.unwrap_or_else(|| DEFAULT_ANTHROPIC_MODEL.into())),
            Provider::OpenAi => Some(model.ok_or_else(|| {
                LlmError::Config(format!(
                    "{PROVIDER_ENV}=openai needs {MODEL_ENV} (e.g. gpt-4.1, or llama3.1:8b on \
                     Ollama)"
                ))
            })?),
        };
        if provider == Provider::Anthropic && api_key.is_none() {
            return Err(LlmError::Config(format!(
                "{PROVIDER_ENV}=anthropic needs {API_KEY_ENV}"
            )));
        }
        if let Some(url) = &base_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(LlmError::Config(format!(
                "{BASE_URL_ENV}={url:?} must start with http:// or https://"
            )));
        }

        let timeout_secs: u64 = parse_number(&get, TIMEOUT_ENV, DEFAULT_TIMEOUT.as_secs())?;
        if timeout_secs == 0 {
            return Err(LlmError::Config(format!(
                "{TIMEOUT_ENV} must be at least 1"
            )));
        }
        let defaults = RetryPolicy::default();
        let max_retries = parse_number(&get, MAX_RETRIES_ENV, defaults.max_retries)?;
        let base_delay_ms = parse_number(
            &get,
            RETRY_BASE_DELAY_ENV,
            u64::try_from(defaults.base_delay.as_millis()).unwrap_or(u64::MAX),
        )?;

        Ok(Self {
            provider,
            model,
            base_url,
            api_key,
            timeout: Duration::from_secs(timeout_secs),
            retry: RetryPolicy {
                max_retries,
                base_delay: Duration::from_millis(base_delay_ms),
                ..defaults
            },
        })
    }
}

fn parse_number<T: FromStr>(
    get: &impl Fn(&str) -> Option<String>,
    name: &str,
    default: T,
) -> Result<T, LlmError> {
    match get(name) {
        None => Ok(default),
        Some(raw) => raw.parse().map_err(|_| {
            LlmError::Config(format!("{name}={raw:?} is not a non-negative whole number"))
        }),
    }
}

/// The Bedrock model when `LLM_MODEL` is unset: Claude Sonnet 4.5 through the inference
/// profile of the region's geography, so requests stay in the US or EU when the stack
/// does; elsewhere the global profile.
pub fn default_bedrock_model(region: Option<&str>) -> String {
    let geography = match region {
        Some(r) if r.starts_with("us-") && !r.starts_with("us-gov-") => "us",
        Some(r) if r.starts_with("eu-") => "eu",
        _ => "global",
    };
    format!("{geography}.{BEDROCK_CLAUDE_MODEL}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<LlmConfig, LlmError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        LlmConfig::from_lookup(|name| vars.get(name).cloned())
    }

    fn config_error(vars: &[(&str, &str)]) -> String {
        match config(vars) {
            Err(LlmError::Config(message)) => message,
            other => panic!("expected a Config error, got {other:?}"),
        }
    }

    #[test]
    fn nothing_set_locally_is_a_clear_config_error() {
        let message = config_error(&[]);
        assert!(message.contains("set LLM_PROVIDER"), "{message}");
    }

    #[test]
    fn deployed_defaults_to_bedrock_with_region_default_model_and_standard_limits() {
        let config = config(&[("AWS_LAMBDA_FUNCTION_NAME", "review-worker")]).unwrap();
        assert_eq!(config.provider, Provider::Bedrock);
        assert_eq!(config.model, None);
        assert_eq!(config.timeout, Duration::from_secs(60));
        assert_eq!(config.retry.max_retries, 3);
    }

    #[test]
    fn the_bedrock_default_model_follows_the_region_geography() {
        assert_eq!(
            default_bedrock_model(Some("us-west-2")),
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
        );
        assert_eq!(
            default_bedrock_model(Some("eu-central-1")),
            "eu.anthropic.claude-sonnet-4-5-20250929-v1:0"
        );
        assert_eq!(
            default_bedrock_model(Some("ap-northeast-1")),
            "global.anthropic.claude-sonnet-4-5-20250929-v1:0"
        );
        assert!(default_bedrock_model(None).starts_with("global."));
    }

    #[test]
    fn explicit_settings_win() {
        let config = config(&[
            ("AWS_LAMBDA_FUNCTION_NAME", "f"),
            ("LLM_PROVIDER", " OpenAI "),
            ("LLM_MODEL", "llama3.1:8b"),
            ("LLM_BASE_URL", "http://localhost:11434/v1/"),
            ("LLM_TIMEOUT_SECS", "5"),
            ("LLM_MAX_RETRIES", "0"),
            ("LLM_RETRY_BASE_DELAY_MS", "1"),
        ])
        .unwrap();
        assert_eq!(config.provider, Provider::OpenAi);
        assert_eq!(config.model.as_deref(), Some("llama3.1:8b"));
        assert_eq!(
            config.base_url.as_deref(),
            Some("http://localhost:11434/v1")
        );
        assert_eq!(config.api_key, None);
        assert_eq!(config.timeout, Duration::from_secs(5));
        assert_eq!(config.retry.max_retries, 0);
        assert_eq!(config.retry.base_delay, Duration::from_millis(1));
    }

    #[test]
    fn anthropic_defaults_its_model_but_needs_a_key() {
        let config = config(&[("LLM_PROVIDER", "anthropic"), ("LLM_API_KEY", "sk-ant")]).unwrap();
        assert_eq!(config.model.as_deref(), Some(DEFAULT_ANTHROPIC_MODEL));
        let message = config_error(&[("LLM_PROVIDER", "anthropic")]);
        assert!(message.contains("LLM_API_KEY"), "{message}");
    }

    #[test]
    fn invalid_values_name_the_variable() {
        for (vars, needle) in [
            (vec![("LLM_PROVIDER", "gemini")], "LLM_PROVIDER"),
            (vec![("LLM_PROVIDER", "openai")], "LLM_MODEL"),
            (
                vec![("LLM_PROVIDER", "bedrock"), ("LLM_TIMEOUT_SECS", "soon")],
                "LLM_TIMEOUT_SECS",
            ),
            (
                vec![("LLM_PROVIDER", "bedrock"), ("LLM_TIMEOUT_SECS", "0")],
                "LLM_TIMEOUT_SECS",
            ),
            (
                vec![("LLM_PROVIDER", "bedrock"), ("LLM_MAX_RETRIES", "-1")],
                "LLM_MAX_RETRIES",
            ),
            (
                vec![
                    ("LLM_PROVIDER", "bedrock"),
                    ("LLM_BASE_URL", "localhost:4566"),
                ],
                "LLM_BASE_URL",
            ),
        ] {
            let message = config_error(&vars);
            assert!(message.contains(needle), "{vars:?}: {message}");
        }
    }

    #[test]
    fn debug_output_never_shows_the_api_key() {
        let config =
            config(&[("LLM_PROVIDER", "anthropic"), ("LLM_API_KEY", "sk-secret")]).unwrap();
        let shown = format!("{config:?}");
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(shown.contains("<redacted>"));
    }
}
