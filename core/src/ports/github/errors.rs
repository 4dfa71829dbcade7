//! What went wrong talking to GitHub, typed by what a caller can do about it.

use serde::{Deserialize, Deserializer, Serialize};
use std::time::Duration;

/// What went wrong talking to GitHub, split by what the caller can do about it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GitHubError {
    /// 404: the thing is absent or the App cannot see it (GitHub does not tell which).
    /// A deleted parent comment lands here.
    #[error("not found: {0}")]
    NotFound(String),
    /// 410: the thing existed and was removed (or the feature is disabled on the repo).
    #[error("gone: {0}")]
    Gone(String),
    /// 422: GitHub understood the request and refused it, e.g. an inline comment on a line
    /// that is not part of the diff. `errors` carries GitHub's details verbatim.
    #[error("unprocessable: {message}{}", describe_details(.errors))]
    Unprocessable {
        message: String,
        errors: Vec<ApiErrorDetail>,
    },
    /// Primary or secondary rate limit, still in force after the client's wait budget.
    /// `retry_after` is GitHub's own estimate, when it gave one: use it to delay a requeue.
    #[error("rate limited by GitHub{}", describe_retry_after(.retry_after))]
    RateLimited { retry_after: Option<Duration> },
    /// 401 even with a freshly minted token: wrong App id or key, or a clock far off.
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// 403 that is not a rate limit: the App lacks a permission or the repo blocks it.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// Any other 4xx (400, 409, …): the request itself was wrong for GitHub.
    #[error("rejected with {status}: {message}")]
    Rejected { status: u16, message: String },
    /// 5xx after the retries the request was allowed, or at once for a write that a retry
    /// could duplicate. For such a write the caller must look on GitHub (the hidden marker)
    /// before posting again: the first attempt may have gone through.
    #[error("GitHub server error {status}: {message}")]
    Server { status: u16, message: String },
    /// The connection failed or timed out, after the retries the request was allowed.
    #[error("network error: {0}")]
    Network(String),
    /// Credentials or settings are missing or malformed. Retrying cannot help.
    #[error("GitHub client misconfigured: {0}")]
    Config(String),
    /// The caller asked for something that cannot be expressed as a request (an empty
    /// repository name, a `..` path segment). A bug on our side, never GitHub's.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// GitHub answered 2xx with a body that does not fit the model.
    #[error("could not decode GitHub's response: {0}")]
    Decode(String),
}

impl GitHubError {
    /// What failed, in words fit for a public check run or comment; the `Display` text
    /// (GitHub's message, URLs of a GitHub Enterprise host) goes to the logs only.
    pub fn public_reason(&self) -> &'static str {
        match self {
            GitHubError::NotFound(_) | GitHubError::Gone(_) => {
                "something Parley needed on GitHub was not found"
            }
            GitHubError::Unprocessable { .. } | GitHubError::Rejected { .. } => {
                "GitHub refused one of Parley's requests"
            }
            GitHubError::RateLimited { .. } => "GitHub rate-limited Parley",
            GitHubError::Unauthorized(_) | GitHubError::Forbidden(_) => {
                "GitHub refused Parley's access (check the App's permissions)"
            }
            GitHubError::Server { .. } => "GitHub had a server error",
            GitHubError::Network(_) => "GitHub could not be reached",
            GitHubError::Config(_) | GitHubError::InvalidRequest(_) => {
                "Parley's GitHub settings are incomplete"
            }
            GitHubError::Decode(_) => "GitHub's answer could not be read",
        }
    }

    /// Worth retrying later (requeue with a delay): the failure was GitHub's load or the
    /// network, not the request.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            GitHubError::RateLimited { .. } | GitHubError::Server { .. } | GitHubError::Network(_)
        )
    }

    /// Parley's credentials or settings are at fault, not the request: fixing them and
    /// redriving the job helps.
    pub fn is_config(&self) -> bool {
        matches!(self, GitHubError::Config(_) | GitHubError::Unauthorized(_))
    }

    /// The target no longer exists: 404 or 410. Callers treat both as "absent".
    pub fn is_absent(&self) -> bool {
        matches!(self, GitHubError::NotFound(_) | GitHubError::Gone(_))
    }
}

fn describe_details(errors: &[ApiErrorDetail]) -> String {
    if errors.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = errors.iter().map(ApiErrorDetail::to_string).collect();
    format!(" ({})", parts.join("; "))
}

fn describe_retry_after(retry_after: &Option<Duration>) -> String {
    match retry_after {
        Some(wait) => format!(", retry after {} s", wait.as_secs()),
        None => String::new(),
    }
}

/// One entry of the `errors` array in a GitHub error body.
///
/// GitHub sends either objects (`{"resource","field","code","message"}`) or bare strings
/// (`"Pull request review thread line must be part of the diff"`); both end up here, a bare
/// string as `message`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ApiErrorDetail {
    pub resource: Option<String>,
    pub field: Option<String>,
    pub code: Option<String>,
    pub message: Option<String>,
}

impl std::fmt::Display for ApiErrorDetail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<&str> = [&self.resource, &self.field, &self.code, &self.message]
            .into_iter()
            .filter_map(|part| part.as_deref())
            .collect();
        f.write_str(&parts.join(" "))
    }
}

impl<'de> Deserialize<'de> for ApiErrorDetail {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Text(String),
            Object {
                #[serde(default)]
                resource: Option<String>,
                #[serde(default)]
                field: Option<String>,
                #[serde(default)]
                code: Option<String>,
                #[serde(default)]
                message: Option<String>,
            },
            // Anything else (a number, a nested array) is kept as its JSON text so no detail
            // GitHub sends is lost or fails the decode of the whole error.
            Other(serde_json::Value),
        }
        Ok(match Wire::deserialize(deserializer)? {
            Wire::Text(message) => ApiErrorDetail {
                message: Some(message),
                ..Default::default()
            },
            Wire::Object {
                resource,
                field,
                code,
                message,
            } => ApiErrorDetail {
                resource,
                field,
                code,
                message,
            },
            Wire::Other(value) => ApiErrorDetail {
                message: Some(value.to_string()),
                ..Default::default()
            },
        })
    }
}
