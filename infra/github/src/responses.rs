//! Turning GitHub's answers into values or typed errors.

use parley_core::ports::github::{ApiErrorDetail, GitHubError};
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// GitHub's error body: `{"message", "errors", "documentation_url"}`, every part optional.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorBody {
    #[serde(default)]
    pub(crate) message: Option<String>,
    #[serde(default)]
    pub(crate) errors: Vec<ApiErrorDetail>,
}

impl ErrorBody {
    /// Any body, JSON or not (proxies in front of GHES answer HTML); a non-JSON body becomes
    /// the message, shortened so an HTML page does not flood the logs.
    pub(crate) fn parse(body: &[u8]) -> Self {
        match serde_json::from_slice::<ErrorBody>(body) {
            Ok(parsed) => parsed,
            Err(_) => ErrorBody {
                message: Some(shorten(&String::from_utf8_lossy(body), 300)),
                errors: Vec::new(),
            },
        }
    }

    pub(crate) fn message(&self) -> &str {
        self.message.as_deref().unwrap_or("")
    }
}

/// The typed error for a non-success status that is not retried (or no longer).
/// `context` names the request (`GET /repos/o/r/pulls/1`) so the log says what failed.
pub(crate) fn status_error(status: u16, body: ErrorBody, context: &str) -> GitHubError {
    let message = format!("{context}: {}", body.message())
        .trim_end_matches(": ")
        .to_owned();
    match status {
        401 => GitHubError::Unauthorized(message),
        403 => GitHubError::Forbidden(message),
        404 => GitHubError::NotFound(message),
        410 => GitHubError::Gone(message),
        422 => GitHubError::Unprocessable {
            message,
            errors: body.errors,
        },
        429 => GitHubError::RateLimited { retry_after: None },
        500..=599 => GitHubError::Server { status, message },
        _ => GitHubError::Rejected { status, message },
    }
}

pub(crate) fn decode<T: DeserializeOwned>(body: &[u8], context: &str) -> Result<T, GitHubError> {
    serde_json::from_slice(body).map_err(|err| GitHubError::Decode(format!("{context}: {err}")))
}

fn shorten(text: &str, max_chars: usize) -> String {
    let trimmed = text.trim();
    match trimmed.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &trimmed[..cut]),
        None => trimmed.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_statuses_callers_act_on() {
        let body = || ErrorBody::parse(br#"{"message":"Not Found"}"#);
        assert!(
            matches!(status_error(404, body(), "GET /x"), GitHubError::NotFound(m) if m == "GET /x: Not Found")
        );
        assert!(matches!(
            status_error(410, body(), "x"),
            GitHubError::Gone(_)
        ));
        assert!(matches!(
            status_error(409, body(), "x"),
            GitHubError::Rejected { status: 409, .. }
        ));
        assert!(matches!(
            status_error(502, body(), "x"),
            GitHubError::Server { status: 502, .. }
        ));
    }

    #[test]
    fn html_error_pages_become_short_messages() {
        let page = format!("<html>{}</html>", "x".repeat(1000));
        let parsed = ErrorBody::parse(page.as_bytes());
        assert!(parsed.message().chars().count() <= 301);
        assert!(parsed.errors.is_empty());
    }
}
