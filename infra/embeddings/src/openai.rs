//! Any OpenAI-compatible `POST {base}/embeddings`: OpenAI itself, Ollama (`/v1`),
//! llama.cpp's server, vLLM.
//!
//! Inputs are sent in batches of [`MAX_INPUTS_PER_REQUEST`]; each answer is checked (one
//! vector per input, by `index`, of the configured size) and every vector normalised,
//! since local servers do not all normalise.

use crate::retry::{Failure, with_retries};
use crate::vectors::{estimated_tokens, normalised};
use async_trait::async_trait;
use parley_core::ports::{Embedder, EmbeddingError, Embeddings};
use parley_llm::RetryPolicy;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{Client, StatusCode};
use serde::{Deserialize, Serialize};
use std::time::Duration;

const PROVIDER: &str = "openai";
/// Inputs per request. OpenAI takes up to 2048, but a request also has a token cap
/// (300k) and local servers process a request's inputs in one batch of their own.
pub const MAX_INPUTS_PER_REQUEST: usize = 64;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of an error body we quote: enough for the message, not a whole HTML page.
const MESSAGE_LIMIT: usize = 300;

#[derive(Debug)]
pub struct OpenAiEmbedder {
    client: Client,
    url: String,
    api_key: Option<String>,
    model: String,
    dimensions: usize,
    /// Only OpenAI's text-embedding-3 models take a `dimensions` parameter; other servers
    /// may reject an unknown field, so it is sent to those models only.
    send_dimensions: bool,
    timeout: Duration,
    retry: RetryPolicy,
}

impl OpenAiEmbedder {
    /// `base_url` with the version path (`https://api.openai.com/v1`,
    /// `http://localhost:11434/v1`); requests go to `{base_url}/embeddings`.
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        model: impl Into<String>,
        dimensions: usize,
        timeout: Duration,
        retry: RetryPolicy,
    ) -> Result<Self, EmbeddingError> {
        let client = parley_llm::client_builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("parley/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| EmbeddingError::Config(format!("cannot build the HTTP client: {e}")))?;
        let model = model.into();
        Ok(Self {
            client,
            url: format!("{}/embeddings", base_url.trim_end_matches('/')),
            api_key,
            send_dimensions: model.starts_with("text-embedding-3"),
            model,
            dimensions,
            timeout,
            retry,
        })
    }

    async fn batch(&self, inputs: &[String]) -> Result<Embeddings, EmbeddingError> {
        let request = Request {
            model: &self.model,
            input: inputs,
            encoding_format: "float",
            dimensions: self.send_dimensions.then_some(self.dimensions),
        };
        let reply: Reply = with_retries(&self.retry, PROVIDER, &self.model, || {
            self.attempt(&request)
        })
        .await?;
        self.vectors(reply, inputs)
    }

    async fn attempt(&self, request: &Request<'_>) -> Result<Reply, Failure> {
        let mut call = self
            .client
            .post(&self.url)
            .timeout(self.timeout)
            .json(request);
        if let Some(key) = &self.api_key {
            call = call.bearer_auth(key);
        }
        let response = call.send().await.map_err(|e| self.transport(&e))?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await.map_err(|e| self.transport(&e))?;
        if !status.is_success() {
            return Err(self.refused(status, &headers, &body));
        }
        serde_json::from_slice(&body).map_err(|e| {
            Failure::Stop(EmbeddingError::BadResponse(format!(
                "{} returned {} bytes that are not an embeddings reply: {e}",
                self.url,
                body.len()
            )))
        })
    }

    /// The vectors in input order, checked and normalised.
    fn vectors(&self, reply: Reply, inputs: &[String]) -> Result<Embeddings, EmbeddingError> {
        if reply.data.len() != inputs.len() {
            return Err(EmbeddingError::BadResponse(format!(
                "{} vectors for {} inputs",
                reply.data.len(),
                inputs.len()
            )));
        }
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; inputs.len()];
        for (position, item) in reply.data.into_iter().enumerate() {
            // Servers that omit `index` answer in input order.
            let index = item.index.unwrap_or(position);
            let slot = slots.get_mut(index).ok_or_else(|| {
                EmbeddingError::BadResponse(format!(
                    "a vector for input {index} of {}",
                    inputs.len()
                ))
            })?;
            if slot.is_some() {
                return Err(EmbeddingError::BadResponse(format!(
                    "two vectors for input {index}"
                )));
            }
            *slot = Some(normalised(item.embedding, self.dimensions)?);
        }
        let vectors = slots.into_iter().flatten().collect();
        let input_tokens = reply
            .usage
            .and_then(|u| u.prompt_tokens.or(u.total_tokens))
            .unwrap_or_else(|| estimated_tokens(inputs));
        Ok(Embeddings {
            vectors,
            input_tokens,
        })
    }

    fn transport(&self, error: &reqwest::Error) -> Failure {
        if error.is_timeout() {
            Failure::Stop(EmbeddingError::Unavailable(format!(
                "{} did not answer within {:?}",
                self.url, self.timeout
            )))
        } else if error.is_builder() {
            Failure::Stop(EmbeddingError::Config(format!(
                "invalid embeddings URL {}: {error}",
                self.url
            )))
        } else {
            Failure::Retry(
                EmbeddingError::Unavailable(format!(
                    "{}: {}",
                    self.url,
                    parley_llm::error_chain(error)
                )),
                None,
            )
        }
    }

    fn refused(&self, status: StatusCode, headers: &HeaderMap, body: &[u8]) -> Failure {
        let message = error_message(body);
        let said = format!("{} answered HTTP {status}: {message}", self.url);
        match status {
            StatusCode::TOO_MANY_REQUESTS | StatusCode::REQUEST_TIMEOUT => {
                Failure::Retry(EmbeddingError::Unavailable(said), retry_after(headers))
            }
            s if s.is_server_error() => {
                Failure::Retry(EmbeddingError::Unavailable(said), retry_after(headers))
            }
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Failure::Stop(
                EmbeddingError::Config(format!("{said} (check EMBEDDINGS_API_KEY)")),
            ),
            StatusCode::NOT_FOUND => Failure::Stop(EmbeddingError::Config(format!(
                "{said} (check EMBEDDINGS_BASE_URL and EMBEDDINGS_MODEL)"
            ))),
            s if s.is_client_error() => Failure::Stop(EmbeddingError::Config(said)),
            _ => Failure::Stop(EmbeddingError::BadResponse(said)),
        }
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Embeddings, EmbeddingError> {
        let mut all = Embeddings {
            vectors: Vec::with_capacity(texts.len()),
            input_tokens: 0,
        };
        for inputs in texts.chunks(MAX_INPUTS_PER_REQUEST) {
            let batch = self.batch(inputs).await?;
            all.vectors.extend(batch.vectors);
            all.input_tokens += batch.input_tokens;
        }
        Ok(all)
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    input: &'a [String],
    encoding_format: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    dimensions: Option<usize>,
}

#[derive(Deserialize)]
struct Reply {
    data: Vec<Item>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Item {
    embedding: Vec<f32>,
    index: Option<usize>,
}

#[derive(Deserialize)]
struct Usage {
    prompt_tokens: Option<u64>,
    total_tokens: Option<u64>,
}

/// `error.message` from OpenAI-style error JSON (`{"error": "…"}` from llama.cpp and
/// Ollama too), else a trimmed excerpt of the body.
fn error_message(body: &[u8]) -> String {
    let json: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let from_json = json.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error"))
            .or_else(|| v.get("message"))
            .and_then(|m| m.as_str())
            .map(str::to_owned)
    });
    let text = from_json.unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_owned());
    match text.char_indices().nth(MESSAGE_LIMIT) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// `Retry-After` in seconds (the HTTP-date form is not used by these servers).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Duration::from_secs_f64(s.min(86_400.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_are_read_from_either_shape_and_cut() {
        assert_eq!(
            error_message(br#"{"error": {"message": "bad key", "type": "invalid_request_error"}}"#),
            "bad key"
        );
        assert_eq!(
            error_message(br#"{"error": "model not found"}"#),
            "model not found"
        );
        assert_eq!(error_message(b"  <html>oops</html> "), "<html>oops</html>");
        let long = "x".repeat(1000);
        assert_eq!(
            error_message(long.as_bytes()).chars().count(),
            MESSAGE_LIMIT + 1
        );
    }

    #[test]
    fn dimensions_are_sent_to_text_embedding_3_only() {
        let make = |model: &str| {
            OpenAiEmbedder::new(
                "http://x/v1/",
                None,
                model,
                256,
                Duration::from_secs(1),
                RetryPolicy::default(),
            )
            .unwrap()
        };
        assert!(make("text-embedding-3-small").send_dimensions);
        assert!(!make("nomic-embed-text").send_dimensions);
        assert_eq!(make("m").url, "http://x/v1/embeddings");
    }
}
