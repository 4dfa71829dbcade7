//! What the two HTTP adapters (Anthropic, OpenAI-compatible) share: sending a JSON POST
//! with a deadline, and turning an HTTP failure into an [`LlmError`] a caller can act on.
//!
//! Error bodies differ in shape but not in meaning, so each adapter extracts an
//! [`ErrorInfo`] from its provider's body and [`classify`] does the rest.

use parley_core::ports::llm::LlmError;
use reqwest::header::HeaderMap;
use reqwest::{Client, RequestBuilder, StatusCode};
use serde::de::DeserializeOwned;
use std::time::{Duration, Instant};

/// How much of a provider's error message we keep. Error messages describe the request
/// (`model: x not found`), not its contents, but a proxy's HTML page can be long.
const MESSAGE_LIMIT: usize = 300;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A client builder for any of Parley's HTTP clients. reqwest is built without a TLS
/// crypto provider of its own and takes rustls' process default: aws-lc-rs, installed here
/// (the AWS SDK links it anyway; one copy of the algorithms is enough). A default someone
/// installed first is kept.
pub fn client_builder() -> reqwest::ClientBuilder {
    let _already_installed = rustls::crypto::aws_lc_rs::default_provider().install_default();
    Client::builder()
}

pub fn client() -> Result<Client, LlmError> {
    client_builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("parley/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| LlmError::Config(format!("cannot build the HTTP client: {e}")))
}

/// A provider's answer, before interpretation.
pub struct RawResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// Send `request` and read the whole body within `timeout`.
pub async fn send(request: RequestBuilder, timeout: Duration) -> Result<RawResponse, LlmError> {
    let started = Instant::now();
    let transport = |e: reqwest::Error| {
        if e.is_timeout() {
            LlmError::Timeout(timeout)
        } else if e.is_builder() {
            LlmError::Config(format!("invalid LLM request URL: {e}"))
        } else {
            LlmError::Network(error_chain(&e))
        }
    };
    // reqwest's per-request timeout covers connecting, sending and reading the body.
    let response = request.timeout(timeout).send().await.map_err(transport)?;
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.bytes().await.map_err(transport)?.to_vec();
    tracing::debug!(
        %status,
        elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        body_bytes = body.len(),
        "LLM HTTP response"
    );
    Ok(RawResponse {
        status,
        headers,
        body,
    })
}

/// An error status as the error a caller can act on, reading the provider's body with
/// `error_info`; a success passes.
pub fn check_status(
    response: &RawResponse,
    url: &str,
    error_info: fn(&RawResponse) -> ErrorInfo,
) -> Result<(), LlmError> {
    if response.status.is_success() {
        return Ok(());
    }
    Err(classify(
        response.status,
        &response.headers,
        error_info(response),
        url,
    ))
}

/// What a request that asked for a stream got back.
pub enum Opened {
    /// A 2xx event stream, to be read as it is written.
    Stream(reqwest::Response),
    /// An error status, or a server (or proxy) that ignored `stream` and answered with one
    /// body: read whole, to be handled like any reply.
    Whole(RawResponse),
}

/// Send a request that asks for a stream: `timeout` for the answer to start, and again
/// for a whole body to be read.
pub async fn open_stream(request: RequestBuilder, timeout: Duration) -> Result<Opened, LlmError> {
    let response = match tokio::time::timeout(timeout, request.send()).await {
        Err(_) => return Err(LlmError::Timeout(timeout)),
        Ok(Err(e)) if e.is_builder() => {
            return Err(LlmError::Config(format!("invalid LLM request URL: {e}")));
        }
        Ok(Err(e)) => return Err(LlmError::Network(error_chain(&e))),
        Ok(Ok(response)) => response,
    };
    let event_stream = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if response.status().is_success() && event_stream {
        return Ok(Opened::Stream(response));
    }
    let status = response.status();
    let headers = response.headers().clone();
    let body = match tokio::time::timeout(timeout, response.bytes()).await {
        Ok(Ok(bytes)) => bytes.to_vec(),
        Ok(Err(e)) => return Err(LlmError::Network(error_chain(&e))),
        Err(_) => return Err(LlmError::Timeout(timeout)),
    };
    Ok(Opened::Whole(RawResponse {
        status,
        headers,
        body,
    }))
}

/// reqwest's and the SDK's top-level messages hide the cause ("error sending request",
/// "dispatch failure"); the chain of sources says "connection refused".
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Decode a success body, or say it was not what the provider should send.
pub fn decode<T: DeserializeOwned>(provider: &str, response: &RawResponse) -> Result<T, LlmError> {
    serde_json::from_slice(&response.body).map_err(|e| {
        let content_type = response
            .headers
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none");
        // The body is the model's reply; we describe it rather than quote it.
        LlmError::Decode(format!(
            "{provider} returned {} bytes of {content_type} that are not a valid reply: {e}",
            response.body.len()
        ))
    })
}

/// The meaning-bearing parts of a provider's error body.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ErrorInfo {
    /// Error type or code (`overloaded_error`, `model_not_found`, `insufficient_quota`).
    pub kind: String,
    pub message: String,
}

impl ErrorInfo {
    /// For bodies that are not the provider's error JSON: a trimmed excerpt.
    pub fn from_raw(body: &[u8]) -> Self {
        Self {
            kind: String::new(),
            message: truncate(String::from_utf8_lossy(body).trim()),
        }
    }
}

pub fn truncate(text: &str) -> String {
    match text.char_indices().nth(MESSAGE_LIMIT) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Map a failed HTTP status and the provider's error to what the caller can do about it.
pub fn classify(status: StatusCode, headers: &HeaderMap, info: ErrorInfo, url: &str) -> LlmError {
    let kind = info.kind.to_ascii_lowercase();
    let message = if info.message.is_empty() {
        format!("HTTP {status}")
    } else {
        info.message
    };
    let retry_after = retry_after(headers);
    // Anthropic answers an unknown model and an unknown path alike (`not_found_error`);
    // only the message tells them apart.
    let about_model = message.to_ascii_lowercase().contains("model");

    if kind.contains("overloaded")
        || status.as_u16() == 529
        || status == StatusCode::SERVICE_UNAVAILABLE
    {
        return LlmError::Overloaded {
            message,
            retry_after,
        };
    }
    if kind.contains("insufficient_quota") {
        return LlmError::QuotaExceeded(message);
    }
    if kind.contains("model_not_found") {
        return LlmError::UnknownModel(message);
    }
    match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => LlmError::Auth(message),
        StatusCode::NOT_FOUND if about_model => LlmError::UnknownModel(message),
        // A 404 that is not about the model means the URL is wrong.
        StatusCode::NOT_FOUND => LlmError::Config(format!(
            "no LLM API at {url} (HTTP 404: {message}); check LLM_BASE_URL"
        )),
        StatusCode::TOO_MANY_REQUESTS => LlmError::RateLimited {
            message,
            retry_after,
        },
        s if s.is_server_error() || s == StatusCode::REQUEST_TIMEOUT => LlmError::Server {
            status: s.as_u16(),
            message,
        },
        s if s.is_client_error() => LlmError::InvalidRequest(format!("HTTP {s}: {message}")),
        s => LlmError::Decode(format!("unexpected HTTP status {s}: {message}")),
    }
}

/// `retry-after-ms` (OpenAI) or `retry-after` in seconds. The HTTP-date form is not used
/// by LLM providers and is ignored (we fall back to our own backoff).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return seconds(ms / 1000.0);
    }
    header("retry-after")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(seconds)
}

fn seconds(value: f64) -> Option<Duration> {
    (value.is_finite() && value >= 0.0).then(|| Duration::from_secs_f64(value.min(86_400.0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn info(kind: &str, message: &str) -> ErrorInfo {
        ErrorInfo {
            kind: kind.into(),
            message: message.into(),
        }
    }

    fn classify_status(status: u16, info: ErrorInfo) -> LlmError {
        let status = StatusCode::from_u16(status).unwrap();
        classify(status, &HeaderMap::new(), info, "http://x")
    }

    #[test]
    fn statuses_map_to_what_a_caller_can_do() {
        assert!(
            matches!(classify_status(401, info("", "bad key")), LlmError::Auth(m) if m == "bad key")
        );
        assert!(matches!(
            classify_status(403, info("permission_error", "")),
            LlmError::Auth(_)
        ));
        assert!(matches!(
            classify_status(404, info("not_found_error", "model: claude-9")),
            LlmError::UnknownModel(_)
        ));
        assert!(matches!(
            classify_status(400, info("model_not_found", "no such model")),
            LlmError::UnknownModel(_)
        ));
        assert!(matches!(
            classify_status(404, info("not_found_error", "Not Found")),
            LlmError::Config(m) if m.contains("LLM_BASE_URL")
        ));
        assert!(matches!(
            classify_status(429, info("rate_limit_error", "")),
            LlmError::RateLimited { .. }
        ));
        assert!(matches!(
            classify_status(429, info("insufficient_quota", "pay up")),
            LlmError::QuotaExceeded(_)
        ));
        assert!(matches!(
            classify_status(529, info("", "")),
            LlmError::Overloaded { .. }
        ));
        assert!(matches!(
            classify_status(503, info("", "")),
            LlmError::Overloaded { .. }
        ));
        assert!(matches!(
            classify_status(500, info("overloaded_error", "")),
            LlmError::Overloaded { .. }
        ));
        assert!(matches!(
            classify_status(502, info("", "")),
            LlmError::Server { status: 502, .. }
        ));
        assert!(matches!(
            classify_status(413, info("", "too big")),
            LlmError::InvalidRequest(_)
        ));
        assert!(matches!(
            classify_status(400, info("invalid_request_error", "")),
            LlmError::InvalidRequest(_)
        ));
    }

    #[test]
    fn retry_after_headers_are_read() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        let mut dated = HeaderMap::new();
        dated.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&dated), None);
    }

    #[test]
    fn long_messages_are_truncated_on_a_char_boundary() {
        let long = "é".repeat(1000);
        let short = truncate(&long);
        assert_eq!(short.chars().count(), MESSAGE_LIMIT + 1);
        assert!(short.ends_with('…'));
    }
}
