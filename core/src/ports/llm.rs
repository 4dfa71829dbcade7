//! The LLM provider port.
//!
//! Everything Parley says goes through [`Llm::complete`]: one system prompt, a short
//! conversation, and back comes text plus what it cost in tokens. The shape is the common
//! denominator of Anthropic Messages, OpenAI Chat Completions and Bedrock Converse, so the
//! workers never know which provider answers, and tests can script a fake in a few lines.
//!
//! Errors are typed by what a caller can *do* about them: retry later (rate limit,
//! overload, server trouble), fix the configuration (auth, unknown model), shrink the
//! prompt (invalid request), or give up on this output (invalid structured output).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::ops::{Add, AddAssign};
use std::time::Duration;

/// Default cap on the reply length. Review passes return a JSON list of findings with
/// bodies and suggestions, which fits comfortably; a caller that needs more says so.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

#[async_trait]
pub trait Llm: Send + Sync {
    /// Send one request and wait for the whole reply. Adapters retry transient failures
    /// (rate limits, overload, 5xx) themselves, so an error here is final for this call.
    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError>;

    /// The configured model id, for logs and price look-ups before any call is made.
    fn model(&self) -> &str;

    /// How this provider and model reuse a prompt prefix they saw before: what decides
    /// whether a review warms the cache with one pass before sending the rest.
    fn prompt_cache(&self) -> PromptCache {
        PromptCache::None
    }

    /// Whether requests may carry [`LlmRequest::tools`]. `false` once the provider has
    /// refused them ([`LlmError::ToolsUnsupported`]): a process asks once, then reads
    /// code from the static context alone.
    fn supports_tools(&self) -> bool {
        false
    }

    /// Told when a reply to a request that offered tools called none and its answer was
    /// not usable: the turn of reading was paid for and gave nothing, and the answer is
    /// asked for again. A provider whose model has never called a tool may stop offering
    /// them after a few such turns ([`Llm::supports_tools`] turns `false`): a server can
    /// ignore tools without a word.
    fn tools_went_unused(&self) {}
}

/// A function the model may call to read the repository (`read_file`, `search`, ...),
/// described the way all three providers take it: a name, what it is for, and a JSON
/// Schema of its input.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: serde_json::Value,
}

/// A call the model made: answered with a [`ToolResult`] carrying the same `id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments, as the model wrote them (unchecked: the model is not trusted).
    pub input: serde_json::Value,
}

/// What a tool call returned; `is_error` when it was refused or failed, so the model
/// can correct itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    pub call_id: String,
    pub content: String,
    pub is_error: bool,
}

/// Whether (and from what length) a provider bills a repeated prompt prefix as a cache
/// read. A review shares one long prefix across its passes and the judge; with a cache,
/// the diff is paid for once instead of six times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptCache {
    /// No cache Parley can count on (or none at all).
    None,
    /// Cached where the request marks it (Anthropic `cache_control`, Bedrock
    /// `cachePoint`), from `min_tokens` of prefix; a marker before that is ignored.
    Marked { min_tokens: usize },
    /// Cached by the provider on its own when prefixes repeat (OpenAI, from 1,024
    /// tokens), with nothing to mark.
    Automatic { min_tokens: usize },
}

impl PromptCache {
    /// Whether a shared prefix of `tokens` gets cached.
    pub fn caches(self, tokens: usize) -> bool {
        match self {
            PromptCache::None => false,
            PromptCache::Marked { min_tokens } | PromptCache::Automatic { min_tokens } => {
                tokens >= min_tokens
            }
        }
    }
}

/// Who said a message. The system prompt is separate ([`LlmRequest::system`]) because
/// every provider treats it separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub text: String,
    /// How many leading bytes of `text` other requests of the same review or thread send
    /// byte for byte too: where a provider may cache the prompt up to. 0: none.
    #[serde(skip)]
    pub cache_prefix: usize,
    /// An assistant turn's tool calls (its `text` may be empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// A user turn answering the previous turn's tool calls (its `text` is then empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<ToolResult>,
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            text: text.into(),
            cache_prefix: 0,
            tool_calls: Vec::new(),
            tool_results: Vec::new(),
        }
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            ..Self::user(text)
        }
    }

    /// The model's turn that called tools, to send back before their results.
    pub fn tool_calls(text: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls: calls,
            ..Self::assistant(text)
        }
    }

    /// The results of the previous turn's tool calls.
    pub fn tool_results(results: Vec<ToolResult>) -> Self {
        Self {
            tool_results: results,
            ..Self::user(String::new())
        }
    }

    /// A user message that starts with `shared` (the same in every pass) and ends with
    /// `own` (this request's instructions).
    pub fn user_with_shared(shared: &str, own: &str) -> Self {
        Self {
            cache_prefix: shared.len(),
            ..Self::user(format!("{shared}{own}"))
        }
    }

    /// `text` split where the shared prefix ends, when there is one to mark.
    pub fn split_at_cache_prefix(&self) -> Option<(&str, &str)> {
        let at = self.cache_prefix;
        (at > 0 && at <= self.text.len() && self.text.is_char_boundary(at))
            .then(|| self.text.split_at(at))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LlmRequest {
    /// May be empty; adapters then send no system prompt at all (some providers reject an
    /// empty one).
    pub system: String,
    /// Alternating user/assistant turns, starting and ending with the user.
    pub messages: Vec<Message>,
    pub options: LlmOptions,
    /// Tools the model may call; only sent where [`Llm::supports_tools`].
    pub tools: Vec<ToolSpec>,
}

impl LlmRequest {
    pub fn new(system: impl Into<String>, messages: Vec<Message>) -> Self {
        Self {
            system: system.into(),
            messages,
            options: LlmOptions::default(),
            tools: Vec::new(),
        }
    }

    pub fn with_options(mut self, options: LlmOptions) -> Self {
        self.options = options;
        self
    }

    /// Estimated tokens up to the end of the first marked prefix, system prompt
    /// included (about four characters a token, as Parley's budgets count): what a
    /// provider would cache. `None` when nothing is marked.
    pub fn cacheable_tokens(&self) -> Option<usize> {
        let mut chars = self.system.len();
        for message in &self.messages {
            if message.split_at_cache_prefix().is_some() {
                return Some((chars + message.cache_prefix).div_ceil(4));
            }
            chars += message.text.len();
        }
        None
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LlmOptions {
    pub max_tokens: u32,
    /// `None` leaves the provider's default (and is required for reasoning models that
    /// reject the parameter).
    pub temperature: Option<f32>,
    /// Ask the provider for a JSON-only reply where it has such a mode (OpenAI-compatible
    /// `response_format: json_object`). Others ignore it; the structured-output helper
    /// extracts JSON from prose either way.
    pub json: bool,
    /// The JSON Schema the reply must match, for providers that can constrain their output
    /// to it (OpenAI-compatible `response_format: json_schema`). Others ignore it.
    pub schema: Option<std::sync::Arc<WireSchema>>,
    /// Overrides the adapter's per-attempt timeout, for calls known to be short or long.
    pub timeout: Option<Duration>,
    /// Set by the adapter once the provider begins answering (see [`AnswerStarted`]).
    pub started: Option<AnswerStarted>,
}

/// Set once the provider has begun answering a request. By then it has read the whole
/// prompt, and a prefix it caches can be read by the next request: Anthropic makes a cache
/// entry available only once the first response begins, so requests sent alongside it
/// would each write the prefix again. A review sends its first pass with one of these and
/// the other passes once it is set: they read the cached prefix, and the review loses the
/// first pass's time to its first token instead of its whole reply.
///
/// Adapters that stream set it at the stream's first event. The others never set it; the
/// caller then goes on when the call ends, which is as late as it can be.
#[derive(Clone, Default)]
pub struct AnswerStarted(std::sync::Arc<std::sync::Mutex<StartedState>>);

#[derive(Default)]
struct StartedState {
    set: bool,
    waiting: Vec<std::task::Waker>,
}

impl AnswerStarted {
    /// Mark the answer begun and wake whoever waits; later calls change nothing.
    pub fn set(&self) {
        let waiting = {
            let mut state = self.0.lock().unwrap_or_else(|e| e.into_inner());
            state.set = true;
            std::mem::take(&mut state.waiting)
        };
        waiting.into_iter().for_each(std::task::Waker::wake);
    }

    pub fn is_set(&self) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).set
    }

    /// Ready once [`AnswerStarted::set`] has been called (at once if it has been). The
    /// domain has no async runtime of its own, so this is a waker list, not a channel.
    pub async fn wait(&self) {
        std::future::poll_fn(|cx| {
            let mut state = self.0.lock().unwrap_or_else(|e| e.into_inner());
            if state.set {
                std::task::Poll::Ready(())
            } else {
                if !state.waiting.iter().any(|w| w.will_wake(cx.waker())) {
                    state.waiting.push(cx.waker().clone());
                }
                std::task::Poll::Pending
            }
        })
        .await
    }
}

impl std::fmt::Debug for AnswerStarted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "AnswerStarted({})",
            if self.is_set() { "set" } else { "waiting" }
        )
    }
}

/// Two requests are alike whatever their signals: the signal is where an answer is
/// reported, not what is asked.
impl PartialEq for AnswerStarted {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// A named JSON Schema, as OpenAI's `response_format.json_schema` takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct WireSchema {
    /// `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: &'static str,
    pub schema: serde_json::Value,
}

impl Default for LlmOptions {
    fn default() -> Self {
        Self {
            max_tokens: DEFAULT_MAX_TOKENS,
            temperature: None,
            json: false,
            schema: None,
            timeout: None,
            started: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LlmResponse {
    pub text: String,
    pub usage: Usage,
    /// The model that actually answered, as the provider reports it (an alias such as
    /// `claude-sonnet-4-5` comes back dated); the configured id when the provider is silent.
    pub model: String,
    /// The reply ends where Parley or the provider stopped it, not where the model did:
    /// JSON in it is probably incomplete, and a caller should say why rather than blame
    /// the model's formatting.
    pub cut_off: Option<CutOff>,
    /// Tools the model called instead of (or besides) answering.
    pub tool_calls: Vec<ToolCall>,
}

/// Why a reply was cut off. Each has its own fix, and whoever reads the error (the model
/// asked again, the person running `parley review`) is told the right one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutOff {
    /// At `max_tokens`: the request's own, or `LLM_MAX_OUTPUT_TOKENS`.
    OutputLimit,
    /// Still being written when the call's time ran out: a slow self-hosted model.
    TimeLimit,
    /// The same passage written again and again: a small model caught in a loop.
    Repeating,
}

impl CutOff {
    pub fn describe(self) -> &'static str {
        match self {
            CutOff::OutputLimit => "the reply was cut off at the output token limit",
            CutOff::TimeLimit => {
                "the reply was cut off at the call's time limit while still being written"
            }
            CutOff::Repeating => {
                "the reply was cut off for writing the same passage again and again"
            }
        }
    }
}

impl LlmResponse {
    /// A whole answer in text: not cut off, no tool called. What most replies are, and
    /// what a test's model says.
    pub fn answer(text: impl Into<String>, usage: Usage, model: impl Into<String>) -> Self {
        LlmResponse {
            text: text.into(),
            usage,
            model: model.into(),
            cut_off: None,
            tool_calls: Vec::new(),
        }
    }

    pub fn truncated(&self) -> bool {
        self.cut_off.is_some()
    }
}

/// Tokens one or more calls consumed; summed across calls for a review or a reply.
///
/// Input is counted in three parts because it is billed in three: `input_tokens` at the
/// full price, `cache_read_tokens` (a prefix the provider had cached) at a fraction of
/// it, `cache_write_tokens` (a prefix it cached now) at a premium. Providers report them
/// differently (OpenAI's `prompt_tokens` includes the cached part); adapters normalise.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Counted by Parley, not reported by the provider: some self-hosted servers send no
    /// usage, and zero tokens would read as a free call to whoever sizes a model's
    /// context or prices it. Shown with a `~` wherever usage is printed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

impl Usage {
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            estimated: false,
        }
    }

    /// Usage Parley counted itself when the provider reported none.
    pub fn estimated(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            estimated: true,
            ..Self::new(input_tokens, output_tokens)
        }
    }

    /// `"120 input + 30 output tokens"`, or with `~` and a reason when Parley counted them.
    pub fn describe(&self) -> String {
        if self.estimated {
            format!(
                "~{} input + ~{} output tokens (estimated: the model server reported none)",
                self.input_tokens, self.output_tokens
            )
        } else {
            format!(
                "{} input + {} output tokens",
                self.input_tokens, self.output_tokens
            )
        }
    }

    pub fn with_cache(mut self, read: u64, write: u64) -> Self {
        self.cache_read_tokens = read;
        self.cache_write_tokens = write;
        self
    }

    /// Every input token, whatever it was billed at.
    pub fn all_input(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }

    pub fn total(&self) -> u64 {
        self.all_input().saturating_add(self.output_tokens)
    }
}

impl Add for Usage {
    type Output = Usage;

    fn add(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            cache_read_tokens: self
                .cache_read_tokens
                .saturating_add(other.cache_read_tokens),
            cache_write_tokens: self
                .cache_write_tokens
                .saturating_add(other.cache_write_tokens),
            estimated: self.estimated || other.estimated,
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        *self = *self + other;
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// Bad or missing credentials, or no access to the model (401/403). A human must fix
    /// the configuration; retrying cannot help.
    #[error("LLM authentication failed: {0}")]
    Auth(String),
    /// The provider does not know the model id (or this account cannot see it).
    #[error("unknown LLM model: {0}")]
    UnknownModel(String),
    /// Still rate limited after the adapter's retries.
    #[error("LLM rate limited: {message}")]
    RateLimited {
        message: String,
        /// What the provider asked us to wait, when it said.
        retry_after: Option<Duration>,
    },
    /// The provider is overloaded (Anthropic 529, HTTP 503, Bedrock ServiceUnavailable).
    #[error("LLM provider overloaded: {message}")]
    Overloaded {
        message: String,
        retry_after: Option<Duration>,
    },
    /// No complete reply within the per-call timeout.
    #[error("LLM call timed out after {0:?}")]
    Timeout(Duration),
    /// The provider failed on its side (5xx other than overload).
    #[error("LLM provider error (HTTP {status}): {message}")]
    Server { status: u16, message: String },
    /// The provider could not be reached, or the connection broke.
    #[error("network error talking to the LLM: {0}")]
    Network(String),
    /// A streamed reply ended before the model finished it, without an error: the mark of
    /// a self-hosted server that dropped this request for another one (llama-cpp-python
    /// ends a running stream when the next request arrives).
    #[error("the LLM server ended the reply early: {0}")]
    Interrupted(String),
    /// A success status with a body that is not the provider's reply format.
    #[error("LLM reply could not be decoded: {0}")]
    Decode(String),
    /// Parley's own LLM settings are missing or invalid.
    #[error("LLM misconfigured: {0}")]
    Config(String),
    /// The provider refused this request as malformed or too large (400/413/422): the
    /// caller may shrink the prompt, but sending it again unchanged will fail again.
    #[error("LLM request rejected: {0}")]
    InvalidRequest(String),
    /// The provider (or this model on it) does not take tool definitions. The adapter
    /// remembers it; the caller goes on without tools.
    #[error("the LLM provider does not support tool calls: {0}")]
    ToolsUnsupported(String),
    /// The account is out of credit or quota; a human must act (OpenAI `insufficient_quota`).
    #[error("LLM quota exhausted: {0}")]
    QuotaExceeded(String),
    /// The model's reply did not match the expected structure, even after being told what
    /// was wrong. Carries the tokens spent so the cost is still accounted for.
    #[error("LLM output invalid after {attempts} attempts: {reason}")]
    InvalidOutput {
        reason: String,
        attempts: u32,
        usage: Usage,
        /// Why the last reply was cut off, if it was: what to change is different for each.
        cut_off: Option<CutOff>,
    },
}

impl LlmError {
    /// Worth trying again later (for a worker: a transient job failure, so the queue
    /// redelivers). Everything else needs a human or a different request.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Overloaded { .. }
                | LlmError::Timeout(_)
                | LlmError::Server { .. }
                | LlmError::Network(_)
                | LlmError::Interrupted(_)
        )
    }

    /// Parley's provider settings are at fault (credentials, model id, quota): fixing them
    /// and redriving the job helps.
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            LlmError::Auth(_)
                | LlmError::UnknownModel(_)
                | LlmError::Config(_)
                | LlmError::QuotaExceeded(_)
        )
    }

    /// What failed, in words fit for a public check run or PR comment. The `Display` text
    /// carries the provider's own message (internal hostnames, account details, request
    /// ids); that goes to the logs only.
    pub fn public_reason(&self) -> &'static str {
        match self {
            LlmError::Auth(_) => "the language model refused Parley's credentials",
            LlmError::UnknownModel(_) => "the configured language model does not exist",
            LlmError::RateLimited { .. } => "the language model provider rate-limited Parley",
            LlmError::Overloaded { .. } => "the language model provider was overloaded",
            LlmError::Timeout(_) => "the language model did not answer in time",
            LlmError::Server { .. } => "the language model provider had a server error",
            LlmError::Network(_) => "the language model provider could not be reached",
            LlmError::Interrupted(_) => "the language model server broke off its answer",
            LlmError::Decode(_) | LlmError::InvalidOutput { .. } => {
                "the language model's answer could not be used"
            }
            LlmError::Config(_) => "Parley's language model settings are incomplete",
            LlmError::InvalidRequest(_) => "the language model rejected the request",
            LlmError::ToolsUnsupported(_) => "the language model does not support tool calls",
            LlmError::QuotaExceeded(_) => "the language model account is out of quota",
        }
    }

    /// How long the provider asked us to wait before the next attempt, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after, .. }
            | LlmError::Overloaded { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_adds_up_and_saturates() {
        let mut total = Usage::new(10, 5);
        total += Usage::new(1, 2);
        assert_eq!(total, Usage::new(11, 7));
        assert_eq!(total.total(), 18);
        assert_eq!(
            Usage::new(u64::MAX, 0) + Usage::new(1, 0),
            Usage::new(u64::MAX, 0)
        );
    }

    /// One call Parley had to count makes the whole tally a count, not a bill.
    #[test]
    fn estimated_usage_stays_marked_when_added_up() {
        let reported = Usage::new(1200, 80);
        assert_eq!(reported.describe(), "1200 input + 80 output tokens");
        let total = reported + Usage::estimated(300, 20);
        assert!(total.estimated);
        assert_eq!(total.input_tokens, 1500);
        assert_eq!(
            total.describe(),
            "~1500 input + ~100 output tokens (estimated: the model server reported none)"
        );
        let round_trip: Usage =
            serde_json::from_value(serde_json::to_value(total).unwrap()).expect("usage reads back");
        assert_eq!(round_trip, total);
        assert!(
            serde_json::to_value(reported)
                .unwrap()
                .get("estimated")
                .is_none(),
            "reported usage is stored as before"
        );
    }

    #[test]
    fn only_provider_trouble_is_transient() {
        let transient = [
            LlmError::RateLimited {
                message: String::new(),
                retry_after: None,
            },
            LlmError::Overloaded {
                message: String::new(),
                retry_after: None,
            },
            LlmError::Timeout(Duration::from_secs(1)),
            LlmError::Server {
                status: 500,
                message: String::new(),
            },
            LlmError::Network(String::new()),
            LlmError::Interrupted(String::new()),
        ];
        let permanent = [
            LlmError::Auth(String::new()),
            LlmError::UnknownModel(String::new()),
            LlmError::Decode(String::new()),
            LlmError::Config(String::new()),
            LlmError::InvalidRequest(String::new()),
            LlmError::QuotaExceeded(String::new()),
            LlmError::InvalidOutput {
                reason: String::new(),
                attempts: 2,
                usage: Usage::default(),
                cut_off: None,
            },
        ];
        assert!(transient.iter().all(LlmError::is_transient));
        assert!(!permanent.iter().any(LlmError::is_transient));
    }

    #[test]
    fn message_roles_serialise_as_the_providers_spell_them() {
        let json = serde_json::to_string(&Message::assistant("hi")).unwrap();
        assert_eq!(json, r#"{"role":"assistant","text":"hi"}"#);
    }
}
