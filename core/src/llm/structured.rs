//! Typed JSON from a model: ask for it, find it, check it, and give the model one chance
//! to fix it.
//!
//! A review pass or a dispute resolution is only useful as data. Models usually comply,
//! and when they do not, telling them exactly what was wrong (the parse error, the
//! validator's complaint) fixes most replies on the second try. A second failure is final:
//! more rounds cost tokens and rarely help, and the caller has a fallback (report the
//! pass as failed, answer without a resolution).

use crate::llm::extract::json_candidates;
use crate::ports::llm::{CutOff, Llm, LlmError, LlmRequest, Message, Role, Usage, WireSchema};
use serde::de::DeserializeOwned;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

/// Checks a deserialised value beyond what its type enforces (confidence within 0-100, a
/// path that is in the diff). The message goes back to the model verbatim.
pub type Validator<T> = dyn Fn(&T) -> Result<(), String> + Send + Sync;

/// How many times the model is asked: once, plus one correction.
const MAX_ATTEMPTS: u32 = 2;

/// How the expected shape is described to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaSpec {
    /// A JSON Schema document, shown to the model as is.
    JsonSchema(String),
    /// Prose (or an example) describing the serde type, for shapes not worth a schema.
    Described(String),
}

/// Why a reply was not accepted; its text is what the model is told on the retry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputError {
    #[error("the reply contains no JSON object or array")]
    NoJson,
    #[error("the JSON does not match the required shape: {0}")]
    Mismatch(String),
    #[error("the JSON is well-formed but not acceptable: {0}")]
    Rejected(String),
}

/// A value the model produced, with what it cost across attempts.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonReply<T> {
    pub value: T,
    pub usage: Usage,
    pub model: String,
    /// 1 when the first reply was usable, 2 after a correction.
    pub attempts: u32,
}

/// What a caller expects back: the shape and an optional extra check. Built once and
/// reused (each review pass has one), hence a value rather than a function's arguments.
pub struct JsonOutput<T> {
    schema: SchemaSpec,
    /// Sent to providers that constrain output to a schema (see [`crate::ports::llm::LlmOptions::schema`]).
    wire: Option<Arc<WireSchema>>,
    validator: Option<Box<Validator<T>>>,
    _type: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for JsonOutput<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonOutput")
            .field("schema", &self.schema)
            .field("validator", &self.validator.is_some())
            .finish()
    }
}

impl<T: DeserializeOwned> JsonOutput<T> {
    /// Expect JSON matching this JSON Schema. Keep the top level an object: OpenAI's JSON
    /// mode can only produce objects.
    pub fn json_schema(schema: impl Into<String>) -> Self {
        Self::new(SchemaSpec::JsonSchema(schema.into()))
    }

    /// Expect JSON shaped as described in prose or by example.
    pub fn described(description: impl Into<String>) -> Self {
        Self::new(SchemaSpec::Described(description.into()))
    }

    pub fn new(schema: SchemaSpec) -> Self {
        Self {
            schema,
            wire: None,
            validator: None,
            _type: PhantomData,
        }
    }

    /// Also ask providers that can for output constrained to `schema` (the prompt's own
    /// description stays: a provider that ignores the schema still knows the shape).
    pub fn with_wire_schema(mut self, name: &'static str, schema: serde_json::Value) -> Self {
        self.wire = Some(Arc::new(WireSchema { name, schema }));
        self
    }

    pub fn with_validator(
        mut self,
        validator: impl Fn(&T) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.validator = Some(Box::new(validator));
        self
    }

    /// The text appended to the system prompt. Public so prompt tests can assert on it.
    pub fn instructions(&self) -> String {
        let shape = match &self.schema {
            SchemaSpec::JsonSchema(schema) => format!(
                "Your reply must be a single JSON value that validates against this JSON \
                 Schema:\n```json\n{}\n```",
                schema.trim()
            ),
            SchemaSpec::Described(description) => format!(
                "Your reply must be a single JSON value shaped like this:\n{}",
                description.trim()
            ),
        };
        format!(
            "{shape}\nReply with the JSON only: no prose before or after it, no code fences, \
             no comments."
        )
    }

    /// Find and check the value in a reply, without calling anyone. The first JSON in the
    /// reply that deserialises and passes the validator wins; when none does, the error is
    /// the one for the largest JSON found, as the likeliest intended answer.
    pub fn parse(&self, reply: &str) -> Result<T, OutputError> {
        let mut best: Option<(usize, OutputError)> = None;
        for candidate in json_candidates(reply) {
            let error = match serde_json::from_str::<T>(candidate) {
                Ok(value) => match self
                    .validator
                    .as_ref()
                    .map_or(Ok(()), |check| check(&value))
                {
                    Ok(()) => return Ok(value),
                    Err(reason) => OutputError::Rejected(reason),
                },
                Err(e) => OutputError::Mismatch(e.to_string()),
            };
            if best.as_ref().is_none_or(|(len, _)| candidate.len() > *len) {
                best = Some((candidate.len(), error));
            }
        }
        Err(best.map_or(OutputError::NoJson, |(_, error)| error))
    }

    /// Ask `llm` for the value: the shape instructions end the last user message and
    /// JSON mode is switched on. If the reply is unusable, the model sees its reply and
    /// what was wrong with it, once; then [`LlmError::InvalidOutput`].
    ///
    /// At the end, not in the system prompt: calls that want different shapes (the review
    /// passes and the judge) then share their system prompt and everything before their
    /// own instructions, which is what a provider's prompt cache can reuse.
    ///
    /// Provider errors are returned as they are (the adapters already retried them).
    pub async fn ask(&self, llm: &dyn Llm, request: LlmRequest) -> Result<JsonReply<T>, LlmError>
    where
        T: Send,
    {
        let mut request = request;
        match request.messages.last_mut().filter(|m| m.role == Role::User) {
            Some(last) => {
                last.text = format!("{}\n\n{}", last.text.trim_end(), self.instructions());
                last.cache_prefix = last.cache_prefix.min(last.text.len());
            }
            None if request.system.trim().is_empty() => request.system = self.instructions(),
            None => {
                request.system = format!("{}\n\n{}", request.system.trim_end(), self.instructions())
            }
        }
        request.options.json = true;
        request.options.schema = self.wire.clone();

        let mut usage = Usage::default();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let reply = llm.complete(&request).await?;
            usage += reply.usage;
            let error = match self.parse(&reply.text) {
                Ok(value) => {
                    return Ok(JsonReply {
                        value,
                        usage,
                        model: reply.model,
                        attempts: attempt,
                    });
                }
                Err(error) => error,
            };
            let reason = match reply.cut_off {
                Some(cut) => format!("{} ({error})", cut.describe()),
                None => error.to_string(),
            };
            // The reason can quote the model's output; keep it out of info-level logs.
            tracing::info!(
                model = %reply.model,
                attempt,
                cut_off = ?reply.cut_off,
                "structured LLM output unusable"
            );
            tracing::debug!(model = %reply.model, attempt, %reason, "structured output error");
            if attempt >= MAX_ATTEMPTS {
                return Err(LlmError::InvalidOutput {
                    reason,
                    attempts: attempt,
                    usage,
                    cut_off: reply.cut_off,
                });
            }
            request
                .messages
                .push(Message::assistant(if reply.text.trim().is_empty() {
                    "(empty reply)".to_owned()
                } else {
                    reply.text
                }));
            request
                .messages
                .push(Message::user(correction(&reason, reply.cut_off)));
        }
    }
}

impl<T: DeserializeOwned + schemars::JsonSchema> JsonOutput<T> {
    /// [`with_wire_schema`](Self::with_wire_schema) with the schema of `T` itself, the
    /// type the reply is parsed into: a server that constrains its output to it (OpenAI's
    /// `json_schema`, llama-cpp-python's grammar) leaves even a small model no way to
    /// answer with prose or another shape.
    pub fn constrained(self, name: &'static str) -> Self {
        let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
        self.with_wire_schema(name, schema)
    }
}

fn correction(reason: &str, cut_off: Option<CutOff>) -> String {
    let advice = match cut_off {
        Some(CutOff::Repeating) => {
            "Reply again with the JSON value only, each item once, and close it when done."
        }
        Some(CutOff::OutputLimit | CutOff::TimeLimit) => {
            "Reply again with a shorter JSON value: fewer items, shorter text."
        }
        None => "Reply again with the corrected JSON value only.",
    };
    format!("Your reply could not be used: {reason}.\n{advice}")
}

/// An answer of verdicts on numbered items. One not mentioned keeps what it had, so an
/// answer without any changes nothing.
#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
#[serde(bound(deserialize = "V: serde::Deserialize<'de>"))]
pub struct Verdicts<V> {
    #[serde(default = "Vec::<V>::new")]
    pub verdicts: Vec<V>,
}

/// What a verdict says of the items: the index of the one it is about, and its reason.
pub type Numbered<V> = for<'a> fn(&'a V) -> (usize, &'a str);

impl<V: DeserializeOwned + schemars::JsonSchema + 'static> Verdicts<V> {
    /// Verdicts on `count` items, shaped like `shape`, held to their schema where the
    /// server can: every index names one of them, and no reason is `example_reason`, the
    /// example's placeholder, which a small model held to the schema by a grammar copies
    /// verbatim (its verdict would then stand for item 0).
    pub fn output(
        shape: &str,
        name: &'static str,
        count: usize,
        example_reason: &'static str,
        numbered: Numbered<V>,
    ) -> JsonOutput<Self> {
        JsonOutput::<Self>::described(shape)
            .constrained(name)
            .with_validator(move |out: &Self| {
                for (index, reason) in out.verdicts.iter().map(numbered) {
                    if index >= count {
                        return Err(format!(
                            "an index is out of range (there are {count} findings)"
                        ));
                    }
                    if reason.trim() == example_reason {
                        return Err(
                            "a verdict repeats the example's placeholder reason: give your own"
                                .into(),
                        );
                    }
                }
                Ok(())
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::scripted::ScriptedLlm;
    use crate::ports::llm::LlmResponse;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Verdict {
        resolution: String,
        confidence: u8,
    }

    fn verdict_output() -> JsonOutput<Verdict> {
        JsonOutput::described(r#"{"resolution": "concede|maintain|escalate", "confidence": 0-100}"#)
            .with_validator(|v: &Verdict| {
                if ["concede", "maintain", "escalate"].contains(&v.resolution.as_str()) {
                    Ok(())
                } else {
                    Err(format!(
                        "resolution must be concede, maintain or escalate, not {:?}",
                        v.resolution
                    ))
                }
            })
    }

    fn request() -> LlmRequest {
        LlmRequest::new("You review code.", vec![Message::user("Is this a bug?")])
    }

    #[tokio::test]
    async fn a_good_first_reply_is_one_call_in_json_mode_with_instructions() {
        let llm = ScriptedLlm::new(vec![Ok((
            "Sure:\n```json\n{\"resolution\": \"maintain\", \"confidence\": 80}\n```",
            false,
        ))]);
        let reply = verdict_output().ask(&llm, request()).await.unwrap();
        assert_eq!(
            reply.value,
            Verdict {
                resolution: "maintain".into(),
                confidence: 80
            }
        );
        assert_eq!(reply.attempts, 1);
        assert_eq!(reply.usage, Usage::new(100, 10));
        assert_eq!(reply.model, "fake-model");
        let seen = llm.seen();
        assert_eq!(seen.len(), 1);
        assert!(seen[0].options.json);
        // The system prompt is left as it was (requests wanting different shapes share
        // it); the shape ends the question.
        assert_eq!(seen[0].system, "You review code.");
        let question = &seen[0].messages[0].text;
        assert!(question.starts_with("Is this a bug?\n\n"), "{question}");
        assert!(question.contains("concede|maintain|escalate"), "{question}");
    }

    #[tokio::test]
    async fn a_bad_reply_is_retried_once_with_the_error_in_the_conversation() {
        let llm = ScriptedLlm::new(vec![
            Ok((
                "{\"resolution\": \"maintain\", \"confidence\": \"high\"}",
                false,
            )),
            Ok(("{\"resolution\": \"maintain\", \"confidence\": 90}", false)),
        ]);
        let reply = verdict_output().ask(&llm, request()).await.unwrap();
        assert_eq!(reply.value.confidence, 90);
        assert_eq!(reply.attempts, 2);
        assert_eq!(reply.usage, Usage::new(200, 20));

        let seen = llm.seen();
        assert_eq!(seen.len(), 2);
        let retry = &seen[1].messages;
        assert_eq!(retry.len(), 3);
        assert!(
            retry[0]
                .text
                .starts_with("Is this a bug?\n\nYour reply must be")
        );
        assert_eq!(
            retry[1],
            Message::assistant("{\"resolution\": \"maintain\", \"confidence\": \"high\"}")
        );
        assert_eq!(retry[2].role, crate::ports::llm::Role::User);
        assert!(
            retry[2].text.contains("invalid type: string \"high\""),
            "{}",
            retry[2].text
        );
    }

    #[tokio::test]
    async fn the_validators_complaint_is_what_the_model_is_told() {
        let llm = ScriptedLlm::new(vec![
            Ok(("{\"resolution\": \"shrug\", \"confidence\": 50}", false)),
            Ok(("{\"resolution\": \"escalate\", \"confidence\": 50}", false)),
        ]);
        let reply = verdict_output().ask(&llm, request()).await.unwrap();
        assert_eq!(reply.value.resolution, "escalate");
        let seen = llm.seen();
        assert!(seen[1].messages[2].text.contains("not \"shrug\""));
    }

    #[tokio::test]
    async fn two_bad_replies_fail_with_invalid_output_and_the_usage_spent() {
        let llm = ScriptedLlm::new(vec![
            Ok(("I think you are right.", false)),
            Ok(("Still no JSON, sorry.", false)),
            Ok(("{\"resolution\": \"concede\", \"confidence\": 1}", false)),
        ]);
        let error = verdict_output().ask(&llm, request()).await.unwrap_err();
        match error {
            LlmError::InvalidOutput {
                reason,
                attempts,
                usage,
                cut_off,
            } => {
                assert_eq!(attempts, 2);
                assert_eq!(cut_off, None);
                assert_eq!(usage, Usage::new(200, 20));
                assert!(reason.contains("no JSON"), "{reason}");
            }
            other => panic!("expected InvalidOutput, got {other:?}"),
        }
        // Exactly one retry: the third scripted reply was never asked for.
        assert_eq!(llm.seen().len(), 2);
    }

    #[tokio::test]
    async fn a_truncated_reply_asks_for_something_shorter() {
        let llm = ScriptedLlm::new(vec![
            Ok(("{\"resolution\": \"maint", true)),
            Ok(("{\"resolution\": \"maintain\", \"confidence\": 70}", false)),
        ]);
        verdict_output().ask(&llm, request()).await.unwrap();
        let retry = &llm.seen()[1].messages[2].text;
        assert!(retry.contains("cut off"), "{retry}");
        assert!(retry.contains("shorter"), "{retry}");
    }

    /// Each way a reply is cut off is named as it happened, to the model asked again and in
    /// the error its caller reads (which tells a person what limit to change).
    #[tokio::test]
    async fn how_a_reply_was_cut_off_is_said_and_kept() {
        let cut = |text: &str, how| LlmResponse {
            cut_off: Some(how),
            ..LlmResponse::answer(text, Usage::new(100, 10), "fake-model")
        };
        let llm = ScriptedLlm::replying(vec![
            cut("{\"resolution\": \"maint", CutOff::Repeating),
            cut("{\"resolution\": ", CutOff::TimeLimit),
        ]);
        let error = verdict_output().ask(&llm, request()).await.unwrap_err();
        let retry = &llm.seen()[1].messages[2].text;
        assert!(retry.contains("same passage again and again"), "{retry}");
        assert!(retry.contains("each item once"), "{retry}");
        match error {
            LlmError::InvalidOutput {
                reason, cut_off, ..
            } => {
                assert_eq!(cut_off, Some(CutOff::TimeLimit));
                assert!(reason.contains("time limit"), "{reason}");
            }
            other => panic!("expected InvalidOutput, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn provider_errors_pass_through_untouched() {
        let llm = ScriptedLlm::new(vec![Err(LlmError::Auth("bad key".into()))]);
        let error = verdict_output().ask(&llm, request()).await.unwrap_err();
        assert_eq!(error, LlmError::Auth("bad key".into()));
    }

    #[tokio::test]
    async fn an_empty_reply_still_leaves_a_valid_conversation() {
        let llm = ScriptedLlm::new(vec![
            Ok(("   ", false)),
            Ok(("{\"resolution\": \"concede\", \"confidence\": 60}", false)),
        ]);
        verdict_output().ask(&llm, request()).await.unwrap();
        let retry = &llm.seen()[1].messages;
        assert_eq!(retry[1], Message::assistant("(empty reply)"));
    }

    #[test]
    fn parse_skips_example_json_that_does_not_fit() {
        let reply = "The input looked like {\"path\": \"a.rs\"}. My verdict:\n\
                     {\"resolution\": \"concede\", \"confidence\": 95} (done)";
        let value = verdict_output().parse(reply).unwrap();
        assert_eq!(value.resolution, "concede");
    }

    #[test]
    fn parse_reports_the_error_for_the_largest_json() {
        let reply = "[1] then {\"resolution\": \"maintain\", \"confidence\": 700}";
        let error = verdict_output().parse(reply).unwrap_err();
        assert!(
            matches!(&error, OutputError::Mismatch(m) if m.contains("700")),
            "{error:?}"
        );
        assert_eq!(
            verdict_output().parse("nothing here"),
            Err(OutputError::NoJson)
        );
    }

    #[test]
    fn ask_can_run_on_a_spawned_task() {
        fn assert_send<F: std::future::Future + Send>(_: F) {}
        let llm = ScriptedLlm::new(vec![]);
        let output = verdict_output();
        assert_send(output.ask(&llm, request()));
    }

    #[test]
    fn json_schema_instructions_embed_the_schema() {
        let output: JsonOutput<Verdict> =
            JsonOutput::json_schema("{\"type\": \"object\", \"required\": [\"resolution\"]}");
        let text = output.instructions();
        assert!(text.contains("JSON Schema"));
        assert!(text.contains("\"required\": [\"resolution\"]"));
    }

    #[tokio::test]
    async fn without_a_question_the_instructions_go_to_the_system_prompt() {
        let llm = ScriptedLlm::new(vec![Ok((
            "{\"resolution\": \"concede\", \"confidence\": 60}",
            false,
        ))]);
        let output = verdict_output();
        output.ask(&llm, LlmRequest::new("", vec![])).await.unwrap();
        assert_eq!(llm.seen()[0].system, output.instructions());
    }

    /// The shape ends the message after its shared prefix, which stays marked: two asks
    /// with different shapes on one shared prefix send it byte for byte the same.
    #[tokio::test]
    async fn the_shape_follows_the_shared_prefix_and_keeps_it_marked() {
        let llm = ScriptedLlm::new(vec![Ok((
            "{\"resolution\": \"concede\", \"confidence\": 60}",
            false,
        ))]);
        let shared = "the diff, the same for every pass\n";
        let request = LlmRequest::new("sys", vec![Message::user_with_shared(shared, "own task")]);
        verdict_output().ask(&llm, request).await.unwrap();
        let sent = &llm.seen()[0].messages[0];
        assert_eq!(sent.split_at_cache_prefix().map(|(a, _)| a), Some(shared));
        assert!(sent.text.ends_with("no comments."), "{}", sent.text);
        assert_eq!(llm.seen()[0].system, "sys");
    }
}
