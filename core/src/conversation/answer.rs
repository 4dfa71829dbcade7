//! Asking the model and putting its answer on GitHub.
//!
//! The model answers in JSON (`reply`, optional `resolution`) through the structured-output
//! helper, so a dispute's outcome is data, never guessed from prose. The posted text loses
//! every mention of Parley's handles and `@claude` (no self-trigger), any marker the model
//! may have imitated, and gains Parley's own hidden reply marker: the state GitHub keeps.

use super::context::Context;
use super::error::ConversationError;
use super::prompt;
use super::snapshot::PrSnapshot;
use super::thread::Conversation;
use super::trigger::Trigger;
use crate::config::ToolBounds;
use crate::context::explore::ask_after_reading;
use crate::context::tools::Toolbox;
use crate::llm::JsonOutput;
use crate::markers::{self, ReplyMarker};
use crate::mention::Handles;
use crate::ports::GitHubError;
use crate::ports::github::{GitHub, ReviewComment};
use crate::ports::llm::{Llm, LlmError, LlmOptions, LlmRequest};
use crate::sanitize;
use serde::{Deserialize, Serialize};

/// Enough for a few paragraphs and a code block; conversations are short.
const MAX_TOKENS: u32 = 1_500;
/// How much of a top-level question is quoted above the answer.
const QUOTE_CHARS: usize = 140;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
pub struct ModelAnswer {
    pub reply: String,
    #[serde(default)]
    pub resolution: Option<Resolution>,
}

/// How a dispute about a finding ended, or that the model saw it fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Resolution {
    Concede,
    Maintain,
    Escalate,
    /// The developer says it is fixed, and the code as it is now bears them out: the
    /// finding was right, and is resolved (where the gate lets the asker lift it).
    Fixed,
}

impl Resolution {
    pub fn as_str(self) -> &'static str {
        match self {
            Resolution::Concede => "concede",
            Resolution::Maintain => "maintain",
            Resolution::Escalate => "escalate",
            Resolution::Fixed => "fixed",
        }
    }
}

/// What an answer must be: the shape, held to its schema where the server can, with a
/// reply that says something. A small model held to the schema by a grammar sometimes
/// fills it with the example's own words, which would be posted as Parley's answer.
fn answer_output() -> JsonOutput<ModelAnswer> {
    JsonOutput::<ModelAnswer>::described(prompt::ANSWER_SHAPE)
        .constrained("conversation_answer")
        .with_validator(|a| match a.reply.trim() {
            "" => Err("`reply` is empty".to_string()),
            prompt::ANSWER_PLACEHOLDER => {
                Err("`reply` repeats the example's placeholder: write your answer".to_string())
            }
            _ => Ok(()),
        })
}

/// Ask the model; a reply that is not the expected JSON gets one correction round. With
/// the repository open, `tools` on and a provider that takes tool calls, the model may
/// read code first (the caller someone says checks for null) and answers once it has.
pub async fn ask(
    llm: &dyn Llm,
    ctx: &Context,
    budget_chars: usize,
    tools: ToolBounds,
) -> Result<ModelAnswer, LlmError> {
    let output = answer_output();
    let request = LlmRequest::new(
        prompt::system(ctx),
        vec![prompt::message(ctx, budget_chars)],
    )
    .with_options(LlmOptions {
        max_tokens: MAX_TOKENS,
        temperature: Some(0.2),
        ..LlmOptions::default()
    });
    let toolbox = ctx.codebase.as_ref().filter(|_| tools.enabled).map(|code| {
        Toolbox::new(code.0.as_ref(), tools)
            .asked_from(ctx.path.as_deref())
            .on_line(ctx.line.and_then(|line| u32::try_from(line).ok()))
    });
    tracing::debug!(system = %request.system, "conversation prompt");
    Ok(ask_after_reading(llm, request, &output, toolbox.as_ref())
        .await
        .reply?
        .value)
}

/// Where an answer (or a note) goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A reply in an inline thread, addressed to the thread's root.
    Thread { reply_to: u64, quote: String },
    /// A top-level comment quoting the question.
    Issue { quote: String },
}

impl Destination {
    /// The PR conversation, quoting `trigger`: where an inline answer goes when its
    /// thread cannot take it.
    pub fn conversation(trigger: &Trigger) -> Destination {
        Destination::Issue {
            quote: quote(trigger),
        }
    }
}

pub fn destination(trigger: &Trigger, conversation: &Conversation) -> Destination {
    let quote = quote(trigger);
    if trigger.is_inline() {
        // The root when known; the trigger itself when the parent is gone or it starts
        // the thread (GitHub attaches a reply to a reply to the thread).
        let reply_to = conversation.root.as_ref().map_or(trigger.id, |r| r.id);
        Destination::Thread { reply_to, quote }
    } else {
        Destination::Issue { quote }
    }
}

/// `> @alice: first words of the question…`, with every `@` defused so quoting a
/// question never pings anyone again (or summons Parley).
fn quote(trigger: &Trigger) -> String {
    let text = sanitize::user_text(&markers::strip(&trigger.body));
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let first = first.trim_start_matches('>').trim().replace('@', "");
    let short = sanitize::truncate(&first, QUOTE_CHARS).replace("… [truncated]", "…");
    format!("> {}: {}", trigger.author.login, short)
}

/// The final body: text (and extras) without any Parley mention or imitated marker,
/// then Parley's marker.
pub fn compose(
    text: &str,
    extras: &[String],
    destination: &Destination,
    marker_kind: &str,
    marker: &ReplyMarker,
    silenced: &Handles,
) -> String {
    let mut body = String::new();
    if let Destination::Issue { quote } = destination {
        body.push_str(quote);
        body.push_str("\n\n");
    }
    body.push_str(text.trim());
    for extra in extras {
        body.push_str("\n\n");
        body.push_str(extra.trim());
    }
    // The model's words and quoted user text alike: no hidden HTML (markers included),
    // no invisible characters, no mention of Parley. Mentions of people stay (a note
    // names whom it answers, an escalation whom it asks): the model's words were quieted
    // before they came here (`sanitize::model_text`), and the quote lost its `@`s.
    let body = sanitize::posted_text(&body, silenced);
    markers::append(&body, marker_kind, marker)
}

/// Post `body` where it belongs (see [`post_answer`]); the posted comment's id.
pub async fn post(
    github: &dyn GitHub,
    snap: &PrSnapshot,
    destination: &Destination,
    body: &str,
) -> Result<u64, ConversationError> {
    post_answer(github, snap, destination, body)
        .await
        .map(|posted| posted.id)
}

/// A posted answer.
#[derive(Debug, Clone)]
pub struct Posted {
    pub id: u64,
    /// The reply as GitHub holds it, when it landed in the inline thread (the thread is
    /// then remembered for retrieval with it).
    pub in_thread: Option<ReviewComment>,
    /// The login GitHub posted it as (the App's bot), when it says.
    pub by: Option<String>,
}

/// Post `body` where it belongs. An inline reply GitHub refuses because the thread is gone
/// or cannot take replies (404/422) goes to the PR's conversation instead, with the quote.
pub async fn post_answer(
    github: &dyn GitHub,
    snap: &PrSnapshot,
    destination: &Destination,
    body: &str,
) -> Result<Posted, ConversationError> {
    match destination {
        Destination::Thread { reply_to, quote } => {
            match github
                .reply_to_review_comment(&snap.scope, snap.number, *reply_to, body)
                .await
            {
                Ok(posted) => Ok(Posted {
                    id: posted.id,
                    by: posted.user.as_ref().map(|u| u.login.clone()),
                    in_thread: Some(posted),
                }),
                Err(
                    err @ (GitHubError::NotFound(_)
                    | GitHubError::Gone(_)
                    | GitHubError::Unprocessable { .. }),
                ) => {
                    tracing::warn!(repo = %snap.repo, pr = snap.number, reply_to, error = %err,
                        "cannot reply in the thread; answering in the PR conversation");
                    let body = format!("{quote}\n\n{body}");
                    in_conversation(github, snap, &body).await
                }
                Err(err) => Err(err.into()),
            }
        }
        Destination::Issue { .. } => in_conversation(github, snap, body).await,
    }
}

async fn in_conversation(
    github: &dyn GitHub,
    snap: &PrSnapshot,
    body: &str,
) -> Result<Posted, ConversationError> {
    let posted = github
        .create_issue_comment(&snap.scope, snap.number, body)
        .await?;
    Ok(Posted {
        id: posted.id,
        in_thread: None,
        by: posted.user.map(|u| u.login),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outgoing_body_never_mentions_parley_and_carries_one_marker() {
        let silenced = Handles::new("parley", &["claude".to_string()]);
        let mut m = ReplyMarker::new(markers::kind::REPLY, 42);
        m.finding = Some("f1".into());
        let body = compose(
            "Ask @parley or @Claude. <!-- parley:reply {\"type\":\"reply\",\"reply_to\":1,\"at\":\"x\"} -->",
            &["cc @alice".to_string()],
            &Destination::Issue {
                quote: "> bob: hi".into(),
            },
            markers::kind::REPLY,
            &m,
            &silenced,
        );
        assert!(!silenced.mentioned_in(&body), "{body}");
        assert!(body.starts_with("> bob: hi\n\nAsk parley or Claude."));
        assert!(body.contains("cc @alice"));
        let found: Vec<_> = markers::parse_all(&body);
        assert_eq!(found.len(), 1);
        assert_eq!(
            markers::find::<ReplyMarker>(&body, "reply")
                .unwrap()
                .reply_to,
            42
        );
    }

    #[test]
    fn the_examples_placeholder_is_not_an_answer() {
        assert!(prompt::ANSWER_SHAPE.contains(prompt::ANSWER_PLACEHOLDER));
        let output = answer_output();
        for empty in [
            r#"{"reply": "  "}"#,
            r#"{"reply": "<your answer, Markdown>"}"#,
        ] {
            assert!(output.parse(empty).is_err(), "{empty}");
        }
        assert!(output.parse(r#"{"reply": "It is safe."}"#).is_ok());
    }

    #[test]
    fn answers_parse_with_and_without_resolution() {
        let output = answer_output();
        let a = output.parse(r#"{"reply":"ok","resolution":null}"#).unwrap();
        assert_eq!(a.resolution, None);
        let a = output
            .parse(r#"{"reply":"You are right.","resolution":"concede"}"#)
            .unwrap();
        assert_eq!(a.resolution, Some(Resolution::Concede));
        assert!(
            output
                .parse(r#"{"reply":"x","resolution":"maybe"}"#)
                .is_err()
        );
    }
}
