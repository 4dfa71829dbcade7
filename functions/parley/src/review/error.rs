//! Why `parley review` stopped, each message naming the fix: the errors, and the advice
//! for a model that is missing, slow, or cannot follow the review format.

use super::{local, target};
use parley_core::ports::GitHubError;
use parley_core::ports::llm::CutOff;

/// Why `parley review` stopped; each message names the fix. Nothing is posted after any
/// of these.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Reference(#[from] target::BadReference),
    #[error("{0}")]
    NoLlm(String),
    #[error(
        "no GitHub credentials: set GITHUB_TOKEN to a token that can read {0} \
         (or GITHUB_APP_ID and GITHUB_PRIVATE_KEY_FILE for the App)"
    )]
    NoGitHub(String),
    #[error("GitHub refused the credentials ({0}): check GITHUB_TOKEN, or the App's id and key")]
    BadCredentials(String),
    #[error(
        "{0} was not found: check the reference, and that the token can read the repository \
         (or that the App is installed on it)"
    )]
    NotFound(String),
    #[error(
        "GitHub refused to post the review ({0}): the token needs \"Pull requests: write\" \
         (a classic token: the repo scope)"
    )]
    CannotPost(String),
    #[error("GitHub: {0}")]
    GitHub(GitHubError),
    #[error(
        "the model did not answer ({0}); check LLM_PROVIDER, LLM_BASE_URL and that the server \
         is running"
    )]
    Llm(String),
    /// The server is there but slower than Parley's limits: a self-hosted model on a small
    /// machine, or one request at a time with the passes queued behind each other.
    #[error(
        "the model did not answer in time ({0}); {SLOW_MODEL}, e.g. LLM_TIMEOUT_SECS=600 \
         PARLEY_PASS_TIMEOUT_SECS=1800"
    )]
    TooSlow(String),
    /// The model answered every pass, but never in a shape a review can use: the server
    /// is fine, the model (or a limit on its replies) is not.
    #[error("the model answered, but not with a usable review ({reason}); {advice}")]
    Unusable {
        reason: &'static str,
        advice: &'static str,
    },
    #[error(transparent)]
    Local(#[from] local::LocalError),
    /// `--post` to a PR URL on one server while `GITHUB_API_URL` names another: posting
    /// would go to (or fail on) the wrong GitHub.
    #[error(
        "{url} is on {origin}, but GITHUB_API_URL is {api_url}: not posting there. Unset \
         GITHUB_API_URL (Parley then uses {derived}), or give a PR on that server"
    )]
    HostMismatch {
        url: String,
        origin: String,
        api_url: String,
        derived: String,
    },
    #[error("{0}")]
    Setup(String),
}

impl CliError {
    pub(super) fn from_github(err: GitHubError, what: &str) -> Self {
        match err {
            GitHubError::NotFound(_) => CliError::NotFound(what.to_string()),
            GitHubError::Unauthorized(m) => CliError::BadCredentials(m),
            GitHubError::Config(m) => CliError::Setup(m),
            other => CliError::GitHub(other),
        }
    }
}

/// The advice for a model slower than Parley's limits, whether it never answered in time
/// or was cut off while still writing.
const SLOW_MODEL: &str = "a slow self-hosted model needs longer: raise LLM_TIMEOUT_SECS \
                          (each call) and PARLEY_PASS_TIMEOUT_SECS (each pass)";
/// The advice for a model that answers, but not in the review's shape.
const LARGER_MODEL: &str = "small models often cannot follow the review format: try a larger one";

/// What to change depends on how the last reply ended: each cut-off has its own limit.
pub(super) fn unusable(cut_off: Option<CutOff>) -> CliError {
    let (reason, advice) = match cut_off {
        Some(cut @ CutOff::OutputLimit) => (
            cut.describe(),
            "raise or unset LLM_MAX_OUTPUT_TOKENS, or try a model that writes less",
        ),
        Some(cut @ CutOff::TimeLimit) => (cut.describe(), SLOW_MODEL),
        Some(cut @ CutOff::Repeating) => (cut.describe(), LARGER_MODEL),
        None => ("its replies did not fit the review format", LARGER_MODEL),
    };
    CliError::Unusable { reason, advice }
}

pub fn first_run_message(reason: &str) -> String {
    format!(
        "Parley needs an LLM, and {reason}. Pick one:\n\
         \n  Ollama or any OpenAI-compatible server (local, no key):\n\
         \x20   LLM_PROVIDER=openai LLM_BASE_URL=http://localhost:11434/v1 LLM_MODEL=qwen2.5-coder:7b LLM_MAX_CONCURRENCY=1\n\
         \n  Anthropic:\n\
         \x20   LLM_PROVIDER=anthropic LLM_API_KEY=sk-ant-...\n\
         \n  Amazon Bedrock (AWS credentials from the usual places):\n\
         \x20   LLM_PROVIDER=bedrock AWS_REGION=us-east-1\n\
         \nPut them in the environment or in .env, then run parley review again."
    )
}
