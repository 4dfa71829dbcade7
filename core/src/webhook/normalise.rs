//! From `(X-GitHub-Event, payload)` to a typed [`Job`], or a reason to ignore the event.
//!
//! The webhook filters only what it can decide from the payload alone (self-events, bot
//! authors, drafts, comments that do not concern Parley). Everything that needs GitHub or
//! the store (permissions, whether a thread's root is a finding, turn limits) is the
//! worker's call.

use super::payload::{
    Envelope, InstallationEvent, IssueCommentEvent, PullRequestEvent, Repository,
    ReviewCommentEvent, ReviewEvent, ReviewThreadEvent, User,
};
use crate::job::{
    Actor, BookkeepingEvent, BookkeepingJob, Comment, ConversationJob, InlinePosition, Job,
    RepoRef, ReviewJob, ReviewTrigger, Surface, Topic,
};
use crate::mention::Handles;

/// An issue description can run to 65 536 characters; the prompt needs far less, and the
/// queue message (256 kB on SQS) must stay small.
const MAX_TOPIC_BODY_CHARS: usize = 4000;
use serde::de::DeserializeOwned;

/// What the webhook knows about Parley itself.
#[derive(Debug, Clone, Default)]
pub struct NormaliseContext {
    /// The bot's handles, when `GITHUB_APP_SLUG` is set. `None` means "unknown": every
    /// comment event is forwarded and the worker, which can ask `GET /app`, decides.
    pub handles: Option<Handles>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Normalised {
    /// `ping`: GitHub checking the hook works.
    Ping,
    Job(Box<Job>),
    /// Not for Parley; the reason is logged and returned to GitHub in the 202 body.
    Ignored(String),
    /// JSON that parsed but lacks what this event must carry.
    Malformed(String),
}

/// Classify one delivery. `payload` has already been parsed as JSON.
pub fn normalise(
    event: &str,
    delivery_id: &str,
    payload: &serde_json::Value,
    ctx: &NormaliseContext,
) -> Normalised {
    if event == "ping" {
        return Normalised::Ping;
    }
    let envelope: Envelope = match decode(payload) {
        Ok(envelope) => envelope,
        Err(reason) => return Normalised::Malformed(reason),
    };
    if let (Some(handles), Some(sender)) = (&ctx.handles, &envelope.sender)
        && handles.is_self(&sender.login)
    {
        return Normalised::Ignored(format!("event from Parley itself ({})", sender.login));
    }
    let action = envelope.action.as_deref().unwrap_or("");
    let meta = Meta {
        delivery_id,
        installation_id: envelope.installation.as_ref().map(|i| i.id),
        sender: envelope
            .sender
            .as_ref()
            .map(|s| s.login.as_str())
            .unwrap_or(""),
    };
    let result = match (event, action) {
        ("pull_request", "opened" | "reopened" | "ready_for_review" | "synchronize") => {
            review(&meta, action, payload)
        }
        ("pull_request", "closed") => closed(&meta, payload),
        ("issue_comment", "created") => issue_comment(&meta, payload, ctx),
        ("pull_request_review_comment", "created") => review_comment(&meta, payload, ctx),
        ("pull_request_review", "submitted") => review_body(&meta, payload, ctx),
        ("pull_request_review_thread", "resolved" | "unresolved") => {
            review_thread(&meta, action, payload)
        }
        ("installation" | "installation_repositories", _) => installation(&meta, action, payload),
        (
            "pull_request"
            | "issue_comment"
            | "pull_request_review_comment"
            | "pull_request_review"
            | "pull_request_review_thread",
            _,
        ) => Ok(Normalised::Ignored(format!(
            "{event}.{action} is not handled"
        ))),
        _ => Ok(Normalised::Ignored(format!("event {event} is not handled"))),
    };
    result.unwrap_or_else(Normalised::Malformed)
}

struct Meta<'a> {
    delivery_id: &'a str,
    installation_id: Option<u64>,
    sender: &'a str,
}

type Step = Result<Normalised, String>;

fn review(meta: &Meta<'_>, action: &str, payload: &serde_json::Value) -> Step {
    let event: PullRequestEvent = decode(payload)?;
    let pr = event.pull_request;
    if pr.draft {
        return Ok(Normalised::Ignored(format!(
            "pull request #{} is a draft; it is reviewed when marked ready",
            pr.number
        )));
    }
    let trigger = match action {
        "opened" => ReviewTrigger::Opened,
        "reopened" => ReviewTrigger::Reopened,
        "ready_for_review" => ReviewTrigger::ReadyForReview,
        _ => ReviewTrigger::Synchronize,
    };
    Ok(job(Job::Review(ReviewJob {
        delivery_id: meta.delivery_id.to_string(),
        installation_id: meta.installation_id,
        repo: repo_ref(&event.repository),
        number: pr.number,
        trigger,
        head_sha: pr.head.sha,
        base_sha: pr.base.sha,
        base_ref: pr.base.name,
        before_sha: event
            .before
            .filter(|_| trigger == ReviewTrigger::Synchronize),
        author: actor(&pr.user),
        title: pr.title,
        request: None,
    })))
}

fn closed(meta: &Meta<'_>, payload: &serde_json::Value) -> Step {
    let event: PullRequestEvent = decode(payload)?;
    Ok(bookkeeping(
        meta,
        BookkeepingEvent::PullRequestClosed {
            repo: repo_ref(&event.repository),
            number: event.pull_request.number,
            merged: event.pull_request.merged.unwrap_or(false),
        },
    ))
}

fn issue_comment(meta: &Meta<'_>, payload: &serde_json::Value, ctx: &NormaliseContext) -> Step {
    let event: IssueCommentEvent = decode(payload)?;
    let c = event.comment;
    let body = c.body.unwrap_or_default();
    let Some(mentions_bot) = candidate(ctx, &c.user, &body, false) else {
        return Ok(Normalised::Ignored(format!(
            "comment {} does not mention Parley",
            c.id
        )));
    };
    Ok(job(Job::Conversation(ConversationJob {
        delivery_id: meta.delivery_id.to_string(),
        installation_id: meta.installation_id,
        repo: repo_ref(&event.repository),
        number: event.issue.number,
        is_pull_request: event.issue.pull_request.is_some(),
        surface: Surface::IssueComment,
        comment: Comment {
            id: c.id,
            author: actor(&c.user),
            body,
            html_url: c.html_url,
            created_at: c.created_at,
        },
        in_reply_to_id: None,
        position: None,
        review_id: None,
        mentions_bot,
        topic: Some(Topic {
            title: event.issue.title.unwrap_or_default(),
            body: crate::sanitize::truncate(
                &event.issue.body.unwrap_or_default(),
                MAX_TOPIC_BODY_CHARS,
            ),
        }),
    })))
}

fn review_comment(meta: &Meta<'_>, payload: &serde_json::Value, ctx: &NormaliseContext) -> Step {
    let event: ReviewCommentEvent = decode(payload)?;
    let c = event.comment;
    let body = c.body.unwrap_or_default();
    let is_reply = c.in_reply_to_id.is_some();
    let Some(mentions_bot) = candidate(ctx, &c.user, &body, is_reply) else {
        return Ok(Normalised::Ignored(format!(
            "review comment {} neither mentions Parley nor replies in a thread",
            c.id
        )));
    };
    Ok(job(Job::Conversation(ConversationJob {
        delivery_id: meta.delivery_id.to_string(),
        installation_id: meta.installation_id,
        repo: repo_ref(&event.repository),
        number: event.pull_request.number,
        is_pull_request: true,
        surface: Surface::ReviewComment,
        comment: Comment {
            id: c.id,
            author: actor(&c.user),
            body,
            html_url: c.html_url,
            created_at: c.created_at,
        },
        in_reply_to_id: c.in_reply_to_id,
        position: Some(InlinePosition {
            path: c.path,
            line: c.line,
            start_line: c.start_line,
            side: c.side,
            diff_hunk: c.diff_hunk,
            commit_id: c.commit_id,
        }),
        review_id: c.pull_request_review_id,
        mentions_bot,
        topic: None,
    })))
}

fn review_body(meta: &Meta<'_>, payload: &serde_json::Value, ctx: &NormaliseContext) -> Step {
    let event: ReviewEvent = decode(payload)?;
    let r = event.review;
    let body = r.body.unwrap_or_default();
    if body.trim().is_empty() {
        return Ok(Normalised::Ignored(format!("review {} has no body", r.id)));
    }
    let Some(mentions_bot) = candidate(ctx, &r.user, &body, false) else {
        return Ok(Normalised::Ignored(format!(
            "review {} does not mention Parley",
            r.id
        )));
    };
    Ok(job(Job::Conversation(ConversationJob {
        delivery_id: meta.delivery_id.to_string(),
        installation_id: meta.installation_id,
        repo: repo_ref(&event.repository),
        number: event.pull_request.number,
        is_pull_request: true,
        surface: Surface::ReviewBody,
        comment: Comment {
            id: r.id,
            author: actor(&r.user),
            body,
            html_url: r.html_url,
            created_at: r.submitted_at.unwrap_or_default(),
        },
        in_reply_to_id: None,
        position: None,
        review_id: Some(r.id),
        mentions_bot,
        topic: None,
    })))
}

fn review_thread(meta: &Meta<'_>, action: &str, payload: &serde_json::Value) -> Step {
    let event: ReviewThreadEvent = decode(payload)?;
    Ok(bookkeeping(
        meta,
        BookkeepingEvent::ReviewThread {
            repo: repo_ref(&event.repository),
            number: event.pull_request.number,
            resolved: action == "resolved",
            comment_ids: event.thread.comments.iter().map(|c| c.id).collect(),
            actor: meta.sender.to_string(),
        },
    ))
}

fn installation(meta: &Meta<'_>, action: &str, payload: &serde_json::Value) -> Step {
    let event: InstallationEvent = decode(payload)?;
    let names = |repos: &[super::payload::RepositoryName]| {
        repos
            .iter()
            .map(|r| r.full_name.clone())
            .collect::<Vec<_>>()
    };
    let mut added = names(&event.repositories_added);
    if let Some(repos) = &event.repositories {
        added.extend(names(repos));
    }
    Ok(bookkeeping(
        meta,
        BookkeepingEvent::Installation {
            action: action.to_string(),
            installation_id: event.installation.id,
            account: event.installation.account.login,
            repositories_added: added,
            repositories_removed: names(&event.repositories_removed),
        },
    ))
}

/// Whether a comment is worth a worker's time: `None` if not, else `Some(mentions_bot)`.
/// Bots are never answered, so their comments stop here.
fn candidate(
    ctx: &NormaliseContext,
    author: &User,
    body: &str,
    is_thread_reply: bool,
) -> Option<bool> {
    if actor(author).is_bot() {
        return None;
    }
    match &ctx.handles {
        None => Some(false),
        Some(handles) => {
            let mentions = handles.mentioned_in(body);
            (mentions || is_thread_reply).then_some(mentions)
        }
    }
}

fn job(job: Job) -> Normalised {
    Normalised::Job(Box::new(job))
}

fn bookkeeping(meta: &Meta<'_>, event: BookkeepingEvent) -> Normalised {
    job(Job::Bookkeeping(BookkeepingJob {
        delivery_id: meta.delivery_id.to_string(),
        installation_id: meta.installation_id,
        event,
    }))
}

fn repo_ref(repo: &Repository) -> RepoRef {
    // `full_name` is authoritative when present (owner logins can be renamed mid-flight).
    let (owner, name) = repo
        .full_name
        .as_deref()
        .and_then(|full| full.split_once('/'))
        .map(|(o, n)| (o.to_string(), n.to_string()))
        .unwrap_or_else(|| (repo.owner.login.clone(), repo.name.clone()));
    RepoRef {
        id: repo.id,
        owner,
        name,
    }
}

fn actor(user: &User) -> Actor {
    Actor {
        login: user.login.clone(),
        kind: user.kind.clone().unwrap_or_else(|| "User".to_string()),
    }
}

fn decode<T: DeserializeOwned>(payload: &serde_json::Value) -> Result<T, String> {
    T::deserialize(payload).map_err(|err| format!("payload does not match the event: {err}"))
}
