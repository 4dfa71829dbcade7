//! Embeddings settings from the environment.
//!
//! Same names in Lambda and locally. Deployed, Bedrock Titan Text Embeddings V2 is the
//! default (no key to manage, the function's role pays). Locally nothing is assumed:
//! without `EMBEDDINGS_PROVIDER` there is no embedder and retrieval is lexical only,
//! which is a complete, working configuration rather than an error.

use parley_core::ports::EmbeddingError;
use parley_llm::RetryPolicy;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

pub const PROVIDER_ENV: &str = "EMBEDDINGS_PROVIDER";
pub const MODEL_ENV: &str = "EMBEDDINGS_MODEL";
pub const BASE_URL_ENV: &str = "EMBEDDINGS_BASE_URL";
pub const API_KEY_ENV: &str = "EMBEDDINGS_API_KEY";
pub const DIMENSIONS_ENV: &str = "EMBEDDINGS_DIMENSIONS";
pub const TIMEOUT_ENV: &str = "EMBEDDINGS_TIMEOUT_SECS";
/// Set by the Lambda runtime; its presence means "deployed".
const LAMBDA_ENV: &str = "AWS_LAMBDA_FUNCTION_NAME";

pub const TITAN_V2: &str = "amazon.titan-embed-text-v2:0";
/// Titan V2's sizes. 512 by default: half the bytes of 1024 for every stored vector and
/// every candidate read, for a small loss of retrieval quality.
pub const TITAN_DIMENSIONS: [usize; 3] = [256, 512, 1024];
pub const DEFAULT_TITAN_DIMENSIONS: usize = 512;
pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
pub const DEFAULT_OPENAI_MODEL: &str = "text-embedding-3-small";
/// An embedding call is short (milliseconds per text); a minute means the server is stuck.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Native sizes of common OpenAI-compatible embedding models, so `EMBEDDINGS_DIMENSIONS`
/// is only needed for others.
const KNOWN_DIMENSIONS: &[(&str, usize)] = &[
    ("text-embedding-3-small", 1536),
    ("text-embedding-3-large", 3072),
    ("text-embedding-ada-002", 1536),
    ("nomic-embed-text", 768),
    ("mxbai-embed-large", 1024),
    ("all-minilm", 384),
    ("bge-m3", 1024),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    Bedrock,
    /// Any OpenAI-compatible `/embeddings` endpoint: OpenAI, Ollama, llama.cpp, vLLM.
    OpenAi,
    /// A model2vec static model in a local directory.
    Static,
    /// No embeddings: lexical retrieval only.
    None,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Bedrock => "bedrock",
            Provider::OpenAi => "openai",
            Provider::Static => "static",
            Provider::None => "none",
        }
    }
}

impl FromStr for Provider {
    type Err = EmbeddingError;

    fn from_str(value: &str) -> Result<Self, EmbeddingError> {
        match value.trim().to_ascii_lowercase().as_str() {
            "bedrock" => Ok(Provider::Bedrock),
            "openai" | "openai-compatible" => Ok(Provider::OpenAi),
            "static" | "model2vec" => Ok(Provider::Static),
            "none" | "off" => Ok(Provider::None),
            other => Err(EmbeddingError::Config(format!(
                "{PROVIDER_ENV}={other:?} is not a provider; use bedrock, openai, static or none"
            ))),
        }
    }
}

/// Everything needed to build an embedder. The API key is redacted from `Debug`.
#[derive(Clone, PartialEq)]
pub struct EmbeddingsConfig {
    pub provider: Provider,
    /// Bedrock and OpenAI: the model id. Static: unused (see `model_path`).
    pub model: String,
    /// Static: the local model directory (`EMBEDDINGS_MODEL`).
    pub model_path: Option<PathBuf>,
    /// OpenAI: the API root (Parley posts to `{base}/embeddings`). Bedrock: an endpoint
    /// override.
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    /// `None` for a static model: it has the size it was trained with.
    pub dimensions: Option<usize>,
    /// Per attempt.
    pub timeout: Duration,
    pub retry: RetryPolicy,
}

impl fmt::Debug for EmbeddingsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddingsConfig")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("model_path", &self.model_path)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("dimensions", &self.dimensions)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl EmbeddingsConfig {
    pub fn from_env() -> Result<Self, EmbeddingError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Read settings through `lookup`, so tests need not mutate the process environment.
    /// Blank values count as unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, EmbeddingError> {
        let get = |name: &str| parley_core::env::value(lookup(name));
        let provider = match get(PROVIDER_ENV) {
            Some(value) => value.parse()?,
            None if get(LAMBDA_ENV).is_some() => Provider::Bedrock,
            None => Provider::None,
        };
        let base_url = get(BASE_URL_ENV).map(|u| u.trim_end_matches('/').to_owned());
        if let Some(url) = &base_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(EmbeddingError::Config(format!(
                "{BASE_URL_ENV}={url:?} must start with http:// or https://"
            )));
        }
        let dimensions =
            match get(DIMENSIONS_ENV) {
                None => None,
                Some(raw) => Some(raw.parse::<usize>().ok().filter(|d| *d > 0).ok_or_else(
                    || {
                        EmbeddingError::Config(format!(
                            "{DIMENSIONS_ENV}={raw:?} is not a positive whole number"
                        ))
                    },
                )?),
            };
        let timeout = match get(TIMEOUT_ENV) {
            None => DEFAULT_TIMEOUT,
            Some(raw) => Duration::from_secs(
                raw.parse::<u64>().ok().filter(|s| *s > 0).ok_or_else(|| {
                    EmbeddingError::Config(format!(
                        "{TIMEOUT_ENV}={raw:?} is not a whole number of seconds (at least 1)"
                    ))
                })?,
            ),
        };
        let model = get(MODEL_ENV);
        let (model, model_path, dimensions) = match provider {
            Provider::None => (String::new(), None, None),
            Provider::Bedrock => {
                let model = model.unwrap_or_else(|| TITAN_V2.to_owned());
                let dimensions = dimensions.unwrap_or(DEFAULT_TITAN_DIMENSIONS);
                if model.contains("titan-embed-text-v2") && !TITAN_DIMENSIONS.contains(&dimensions)
                {
                    return Err(EmbeddingError::Config(format!(
                        "{DIMENSIONS_ENV}={dimensions}: Titan Text Embeddings V2 makes 256, 512 or 1024"
                    )));
                }
                (model, None, Some(dimensions))
            }
            Provider::OpenAi => {
                let model = match (model, &base_url) {
                    (Some(model), _) => model,
                    (None, None) => DEFAULT_OPENAI_MODEL.to_owned(),
                    (None, Some(url)) => {
                        return Err(EmbeddingError::Config(format!(
                            "{PROVIDER_ENV}=openai with {BASE_URL_ENV}={url} needs {MODEL_ENV} \
                             (e.g. nomic-embed-text on Ollama)"
                        )));
                    }
                };
                let dimensions = dimensions.or_else(|| known_dimensions(&model)).ok_or_else(|| {
                    EmbeddingError::Config(format!(
                        "set {DIMENSIONS_ENV} to the size of {model}'s vectors (Parley knows the sizes of \
                         text-embedding-3-*, nomic-embed-text, mxbai-embed-large, all-minilm, bge-m3)"
                    ))
                })?;
                (model, None, Some(dimensions))
            }
            Provider::Static => {
                let path = model.ok_or_else(|| {
                    EmbeddingError::Config(format!(
                        "{PROVIDER_ENV}=static needs {MODEL_ENV} set to the directory of a model2vec \
                         model (tokenizer.json, model.safetensors, config.json), e.g. a download of \
                         minishlab/potion-base-8M"
                    ))
                })?;
                (String::new(), Some(PathBuf::from(path)), dimensions)
            }
        };
        Ok(Self {
            provider,
            model,
            model_path,
            base_url,
            api_key: get(API_KEY_ENV),
            dimensions,
            timeout,
            retry: RetryPolicy::default(),
        })
    }
}

/// The native size of a known model, matching `vendor/` paths and `:tag` suffixes
/// (`nomic-embed-text:latest`).
fn known_dimensions(model: &str) -> Option<usize> {
    let name = model.rsplit('/').next().unwrap_or(model);
    let name = name.split(':').next().unwrap_or(name).to_ascii_lowercase();
    KNOWN_DIMENSIONS
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, d)| *d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<EmbeddingsConfig, EmbeddingError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        EmbeddingsConfig::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn nothing_set_locally_means_no_embeddings() {
        assert_eq!(config(&[]).unwrap().provider, Provider::None);
        assert_eq!(
            config(&[(PROVIDER_ENV, "none")]).unwrap().provider,
            Provider::None
        );
    }

    #[test]
    fn deployed_defaults_to_titan_v2_at_512() {
        let c = config(&[(LAMBDA_ENV, "review-worker")]).unwrap();
        assert_eq!(c.provider, Provider::Bedrock);
        assert_eq!(c.model, TITAN_V2);
        assert_eq!(c.dimensions, Some(512));
        let c = config(&[(PROVIDER_ENV, "bedrock"), (DIMENSIONS_ENV, "1024")]).unwrap();
        assert_eq!(c.dimensions, Some(1024));
        let err = config(&[(PROVIDER_ENV, "bedrock"), (DIMENSIONS_ENV, "768")]).unwrap_err();
        assert!(err.to_string().contains("256, 512 or 1024"), "{err}");
    }

    #[test]
    fn openai_defaults_and_known_sizes() {
        let c = config(&[(PROVIDER_ENV, "openai"), (API_KEY_ENV, "sk-test")]).unwrap();
        assert_eq!(c.model, DEFAULT_OPENAI_MODEL);
        assert_eq!(c.dimensions, Some(1536));
        let c = config(&[
            (PROVIDER_ENV, "openai"),
            (BASE_URL_ENV, "http://localhost:11434/v1/"),
            (MODEL_ENV, "nomic-embed-text:latest"),
        ])
        .unwrap();
        assert_eq!(c.base_url.as_deref(), Some("http://localhost:11434/v1"));
        assert_eq!(c.dimensions, Some(768));
        let err = config(&[
            (PROVIDER_ENV, "openai"),
            (BASE_URL_ENV, "http://localhost:8080/v1"),
            (MODEL_ENV, "my-own-model"),
        ])
        .unwrap_err();
        assert!(err.to_string().contains(DIMENSIONS_ENV), "{err}");
        let err = config(&[(PROVIDER_ENV, "openai"), (BASE_URL_ENV, "http://x/v1")]).unwrap_err();
        assert!(err.to_string().contains(MODEL_ENV), "{err}");
    }

    #[test]
    fn static_needs_a_directory() {
        let err = config(&[(PROVIDER_ENV, "static")]).unwrap_err();
        assert!(err.to_string().contains(MODEL_ENV), "{err}");
        let c = config(&[(PROVIDER_ENV, "static"), (MODEL_ENV, "/models/potion")]).unwrap();
        assert_eq!(c.model_path, Some(PathBuf::from("/models/potion")));
    }

    #[test]
    fn bad_values_are_named() {
        for (vars, name) in [
            (vec![(PROVIDER_ENV, "word2vec")], PROVIDER_ENV),
            (
                vec![(PROVIDER_ENV, "openai"), (DIMENSIONS_ENV, "0")],
                DIMENSIONS_ENV,
            ),
            (
                vec![(PROVIDER_ENV, "openai"), (DIMENSIONS_ENV, "lots")],
                DIMENSIONS_ENV,
            ),
            (
                vec![(PROVIDER_ENV, "openai"), (BASE_URL_ENV, "localhost:1")],
                BASE_URL_ENV,
            ),
            (
                vec![(PROVIDER_ENV, "bedrock"), (TIMEOUT_ENV, "0")],
                TIMEOUT_ENV,
            ),
        ] {
            let err = config(&vars).unwrap_err();
            assert!(
                matches!(&err, EmbeddingError::Config(m) if m.contains(name)),
                "{err}"
            );
        }
    }

    #[test]
    fn the_key_never_shows_in_debug() {
        let c = config(&[(PROVIDER_ENV, "openai"), (API_KEY_ENV, "sk-secret-value")]).unwrap();
        assert!(!format!("{c:?}").contains("sk-secret-value"));
    }
}
