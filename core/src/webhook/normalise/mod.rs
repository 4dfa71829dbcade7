//! From `(X-GitHub-Event, payload)` to a typed [`Job`], or a reason to ignore the event.
//!
//! The webhook filters only what it can decide from the payload alone (self-events, bot
//! authors, drafts, comments that do not concern Parley). Everything that needs GitHub or
//! the store (permissions, whether a thread's root is a finding, turn limits) is the
//! worker's call.
//!
//! One set of rules reads two sources: the raw body ([`normalise_body`], the webhook's hot
//! path, which borrows what it reads and skips the rest) and an already parsed
//! `serde_json::Value` ([`normalise`], for callers that build payloads as values). Both go
//! through [`Source`], so they cannot drift apart.

use super::payload::{
    EditedEvent, Envelope, InstallationEvent, IssueCommentEvent, PullRequestEvent, Repository,
    ReviewCommentEvent, ReviewEvent, ReviewThreadEvent, Text, User,
};
use super::source::{FromText, FromValue, Source};
use crate::job::{
    Actor, BookkeepingEvent, BookkeepingJob, Comment, ConversationJob, InlinePosition, Job,
    RepoRef, ReviewJob, ReviewTrigger, Surface, Topic,
};
use crate::mention::Handles;
use serde::de::IgnoredAny;

mod checks;
use checks::{
    check_run_requested_action, check_run_rerequested, check_suite_rerequested, merge_group,
};

/// An issue description can run to 65 536 characters; the prompt needs far less, and the
/// queue message (256 kB on SQS) must stay small.
const MAX_TOPIC_BODY_CHARS: usize = 4000;

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
    /// Not JSON, or JSON that lacks what this event must carry; the reason is the parser's.
    Malformed(String),
}

/// Every webhook event Parley acts on (some actions of each): what the App subscribes
/// to (`parley app manifest`). Kept beside the match below, which a test holds it to.
pub const HANDLED_EVENTS: [&str; 10] = [
    "pull_request",
    "check_run",
    "check_suite",
    "merge_group",
    "issue_comment",
    "pull_request_review_comment",
    "pull_request_review",
    "pull_request_review_thread",
    "installation",
    "installation_repositories",
];

/// Classify one delivery from its raw body: the webhook's path.
///
/// The body is read once into the few fields Parley uses, borrowing their text, and
/// everything else is skipped without being built. Any failure on that fast path is
/// answered by [`normalise`] over a full `serde_json::Value` instead, so a bad body gets
/// exactly the reason it always got (`invalid JSON: …` with the parser's position, or
/// `payload does not match the event: …`), and a payload repeating a key Parley reads
/// still means what it did (the last one wins), while good deliveries, nearly all of
/// them, never pay for the full tree.
///
/// The fast path can only be more lenient, never stricter, and only about values Parley
/// never reads: skipping does not range-check numbers, pair `\u` surrogate escapes or cap
/// nesting inside them. Such a body needs a valid signature, i.e. comes from GitHub.
pub fn normalise_body(
    event: &str,
    delivery_id: &str,
    body: &[u8],
    ctx: &NormaliseContext,
) -> Normalised {
    // UTF-8 is checked up front because skipped strings are not checked on the way.
    if let Ok(text) = std::str::from_utf8(body) {
        let fast = if event == "ping" {
            match serde_json::from_str::<IgnoredAny>(text) {
                Ok(_) => Normalised::Ping,
                Err(err) => Normalised::Malformed(err.to_string()),
            }
        } else {
            normalise_from(event, delivery_id, &FromText(text), ctx)
        };
        if !matches!(fast, Normalised::Malformed(_)) {
            return fast;
        }
    }
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(payload) => normalise(event, delivery_id, &payload, ctx),
        Err(err) => Normalised::Malformed(format!("invalid JSON: {err}")),
    }
}

/// Classify one delivery. `payload` has already been parsed as JSON.
pub fn normalise(
    event: &str,
    delivery_id: &str,
    payload: &serde_json::Value,
    ctx: &NormaliseContext,
) -> Normalised {
    normalise_from(event, delivery_id, &FromValue(payload), ctx)
}

fn normalise_from<'de>(
    event: &str,
    delivery_id: &str,
    payload: &impl Source<'de>,
    ctx: &NormaliseContext,
) -> Normalised {
    if event == "ping" {
        return Normalised::Ping;
    }
    let envelope: Envelope<'de> = match payload.decode() {
        Ok(envelope) => envelope,
        Err(reason) => return Normalised::Malformed(reason),
    };
    if let (Some(handles), Some(sender)) = (&ctx.handles, &envelope.sender)
        && handles.is_self(sender.login.as_str())
    {
        return Normalised::Ignored(format!(
            "event from Parley itself ({})",
            sender.login.as_str()
        ));
    }
    let action = envelope.action.as_ref().map_or("", Text::as_str);
    let meta = Meta {
        delivery_id,
        installation_id: envelope.installation.as_ref().map(|i| i.id),
        sender: envelope.sender.as_ref().map_or("", |s| s.login.as_str()),
    };
    let result = match (event, action) {
        (
            "pull_request",
            "opened" | "reopened" | "ready_for_review" | "synchronize" | "unlabeled",
        ) => review(&meta, action, payload, None),
        ("pull_request", "closed") => closed(&meta, payload),
        ("pull_request", "edited") => match retargeted(payload) {
            Ok(Some(moved_from)) => review(&meta, action, payload, moved_from),
            Ok(None) => Ok(Normalised::Ignored(
                "pull_request.edited did not change the base branch".into(),
            )),
            Err(err) => Err(err),
        },
        ("issue_comment", "created") => issue_comment(&meta, payload, ctx),
        ("pull_request_review_comment", "created") => review_comment(&meta, payload, ctx),
        ("issue_comment", "edited") => match edit_asks(payload, ctx) {
            Ok(true) => issue_comment(&meta, payload, ctx),
            Ok(false) => Ok(edit_ignored(event)),
            Err(err) => Err(err),
        },
        ("pull_request_review_comment", "edited") => match edit_asks(payload, ctx) {
            Ok(true) => review_comment(&meta, payload, ctx),
            Ok(false) => Ok(edit_ignored(event)),
            Err(err) => Err(err),
        },
        ("pull_request_review_comment", "deleted") => review_comment_deleted(&meta, payload, ctx),
        ("pull_request_review", "submitted") => review_body(&meta, payload, ctx),
        ("pull_request_review_thread", "resolved" | "unresolved") => {
            review_thread(&meta, action, payload)
        }
        ("installation" | "installation_repositories", _) => installation(&meta, action, payload),
        ("check_run", "rerequested") => check_run_rerequested(&meta, payload),
        ("check_run", "requested_action") => check_run_requested_action(&meta, payload),
        ("check_suite", "rerequested") => check_suite_rerequested(&meta, payload),
        ("merge_group", "checks_requested") => merge_group(&meta, payload),
        (
            "pull_request"
            | "check_run"
            | "check_suite"
            | "merge_group"
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

fn review<'de>(
    meta: &Meta<'_>,
    action: &str,
    payload: &impl Source<'de>,
    moved_from: Option<String>,
) -> Step {
    let event: PullRequestEvent<'de> = payload.decode()?;
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
        "unlabeled" => ReviewTrigger::Unlabeled,
        "edited" => ReviewTrigger::Retargeted,
        _ => ReviewTrigger::Synchronize,
    };
    Ok(job(Job::Review(ReviewJob {
        delivery_id: meta.delivery_id.to_string(),
        installation_id: meta.installation_id,
        repo: repo_ref(&event.repository),
        number: pr.number,
        trigger,
        head_sha: pr.head.sha.into_string(),
        base_sha: pr.base.sha.into_string(),
        base_ref: pr.base.name.into_string(),
        before_sha: event
            .before
            .filter(|_| trigger == ReviewTrigger::Synchronize)
            .map(Text::into_string),
        author: actor(&pr.user),
        title: pr.title.into_string(),
        request: None,
        label: event
            .label
            .filter(|_| trigger == ReviewTrigger::Unlabeled)
            .map(|label| label.name.into_string()),
        rerun_of: None,
        moved_from,
    })))
}

fn closed<'de>(meta: &Meta<'_>, payload: &impl Source<'de>) -> Step {
    let event: PullRequestEvent<'de> = payload.decode()?;
    Ok(bookkeeping(
        meta,
        BookkeepingEvent::PullRequestClosed {
            repo: repo_ref(&event.repository),
            number: event.pull_request.number,
            merged: event.pull_request.merged.unwrap_or(false),
        },
    ))
}

fn issue_comment<'de>(meta: &Meta<'_>, payload: &impl Source<'de>, ctx: &NormaliseContext) -> Step {
    let event: IssueCommentEvent<'de> = payload.decode()?;
    let c = event.comment;
    let body = c.body.map(Text::into_string).unwrap_or_default();
    let Some(mentions_bot) = candidate(ctx, &c.user, &body, false) else {
        return Ok(Normalised::Ignored(format!(
            "comment {} does not mention Parley",
            c.id
        )));
    };
    let comment = Comment {
        id: c.id,
        author: actor(&c.user),
        body,
        html_url: c.html_url.into_string(),
        created_at: c.created_at.into_string(),
    };
    Ok(job(Job::Conversation(ConversationJob {
        is_pull_request: event.issue.pull_request.is_some(),
        topic: Some(Topic {
            title: event.issue.title.map(Text::into_string).unwrap_or_default(),
            body: crate::sanitize::truncate(
                event.issue.body.as_ref().map_or("", Text::as_str),
                MAX_TOPIC_BODY_CHARS,
            ),
        }),
        ..conversation(
            meta,
            &event.repository,
            event.issue.number,
            Surface::IssueComment,
            comment,
            mentions_bot,
        )
    })))
}

fn review_comment<'de>(
    meta: &Meta<'_>,
    payload: &impl Source<'de>,
    ctx: &NormaliseContext,
) -> Step {
    let event: ReviewCommentEvent<'de> = payload.decode()?;
    let c = event.comment;
    let body = c.body.map(Text::into_string).unwrap_or_default();
    let is_reply = c.in_reply_to_id.is_some();
    let Some(mentions_bot) = candidate(ctx, &c.user, &body, is_reply) else {
        return Ok(Normalised::Ignored(format!(
            "review comment {} neither mentions Parley nor replies in a thread",
            c.id
        )));
    };
    let comment = Comment {
        id: c.id,
        author: actor(&c.user),
        body,
        html_url: c.html_url.into_string(),
        created_at: c.created_at.into_string(),
    };
    let (number, on) = (event.pull_request.number, Surface::ReviewComment);
    Ok(job(Job::Conversation(ConversationJob {
        in_reply_to_id: c.in_reply_to_id,
        position: Some(InlinePosition {
            path: c.path.into_string(),
            line: c.line,
            start_line: c.start_line,
            side: c.side.map(Text::into_string),
            diff_hunk: c.diff_hunk.map(Text::into_string),
            commit_id: c.commit_id.map(Text::into_string),
        }),
        review_id: c.pull_request_review_id,
        ..conversation(meta, &event.repository, number, on, comment, mentions_bot)
    })))
}

/// A deleted review comment matters only where it began a thread of Parley's: the finding
/// posted there lost its thread (see [`crate::bookkeeping`]). Replies, and comments by
/// anyone but Parley (by any bot where Parley's handle is not known here), stop here.
fn review_comment_deleted<'de>(
    meta: &Meta<'_>,
    payload: &impl Source<'de>,
    ctx: &NormaliseContext,
) -> Step {
    let event: ReviewCommentEvent<'de> = payload.decode()?;
    let c = event.comment;
    let parleys = match &ctx.handles {
        Some(handles) => handles.is_self(c.user.login.as_str()),
        None => actor(&c.user).is_bot(),
    };
    if c.in_reply_to_id.is_some() || !parleys {
        return Ok(Normalised::Ignored(format!(
            "deleted review comment {} did not begin a thread of Parley's",
            c.id
        )));
    }
    Ok(bookkeeping(
        meta,
        BookkeepingEvent::FindingCommentDeleted {
            repo: repo_ref(&event.repository),
            number: event.pull_request.number,
            comment_id: c.id,
            actor: meta.sender.to_string(),
        },
    ))
}

fn review_body<'de>(meta: &Meta<'_>, payload: &impl Source<'de>, ctx: &NormaliseContext) -> Step {
    let event: ReviewEvent<'de> = payload.decode()?;
    let r = event.review;
    let body = r.body.map(Text::into_string).unwrap_or_default();
    if body.trim().is_empty() {
        return Ok(Normalised::Ignored(format!("review {} has no body", r.id)));
    }
    let Some(mentions_bot) = candidate(ctx, &r.user, &body, false) else {
        return Ok(Normalised::Ignored(format!(
            "review {} does not mention Parley",
            r.id
        )));
    };
    let comment = Comment {
        id: r.id,
        author: actor(&r.user),
        body,
        html_url: r.html_url.into_string(),
        created_at: r.submitted_at.map(Text::into_string).unwrap_or_default(),
    };
    let (number, on) = (event.pull_request.number, Surface::ReviewBody);
    Ok(job(Job::Conversation(ConversationJob {
        review_id: Some(r.id),
        ..conversation(meta, &event.repository, number, on, comment, mentions_bot)
    })))
}

/// Whether an edited comment asks Parley something: only when the edit adds a mention of
/// it (people often tag the bot after posting). Any other edit changes nothing: what the
/// comment asked was answered or turned away already, and answering edits would spam the
/// thread. Without a known handle the worker decides, and its record of answers (a claim,
/// then GitHub's reply markers) keeps a comment from being answered twice.
fn edit_asks<'de>(payload: &impl Source<'de>, ctx: &NormaliseContext) -> Result<bool, String> {
    let event: EditedEvent<'de> = payload.decode()?;
    let Some(before) = event.changes.and_then(|changes| changes.body) else {
        return Ok(false);
    };
    Ok(ctx
        .handles
        .as_ref()
        .is_none_or(|handles| !handles.mentioned_in(before.from.as_str())))
}

/// Whether a `pull_request.edited` moved the PR to another base branch: its diff is then
/// another, which the head's review did not read. `Some` with the commit it was moved
/// from, when GitHub names it.
fn retargeted<'de>(payload: &impl Source<'de>) -> Result<Option<Option<String>>, String> {
    let event: EditedEvent<'de> = payload.decode()?;
    Ok(event
        .changes
        .and_then(|changes| changes.base)
        .map(|base| base.sha.map(|sha| sha.from.into_string())))
}

fn edit_ignored(event: &str) -> Normalised {
    Normalised::Ignored(format!("{event}.edited does not add a mention of Parley"))
}

/// A conversation job about `comment` on pull request `number`: the fields every surface
/// fills alike; each caller adds what its surface knows (thread, position, topic).
fn conversation(
    meta: &Meta<'_>,
    repository: &Repository<'_>,
    number: u64,
    surface: Surface,
    comment: Comment,
    mentions_bot: bool,
) -> ConversationJob {
    ConversationJob {
        delivery_id: meta.delivery_id.to_string(),
        installation_id: meta.installation_id,
        repo: repo_ref(repository),
        number,
        is_pull_request: true,
        surface,
        comment,
        in_reply_to_id: None,
        position: None,
        review_id: None,
        mentions_bot,
        topic: None,
    }
}

fn review_thread<'de>(meta: &Meta<'_>, action: &str, payload: &impl Source<'de>) -> Step {
    let event: ReviewThreadEvent<'de> = payload.decode()?;
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

fn installation<'de>(meta: &Meta<'_>, action: &str, payload: &impl Source<'de>) -> Step {
    let event: InstallationEvent<'de> = payload.decode()?;
    let names = |repos: Vec<super::payload::RepositoryName<'de>>| {
        repos
            .into_iter()
            .map(|r| r.full_name.into_string())
            .collect::<Vec<_>>()
    };
    let ids = |repos: &[super::payload::RepositoryName<'de>]| {
        repos
            .iter()
            .map(|r| r.id)
            .filter(|id| *id != 0)
            .collect::<Vec<u64>>()
    };
    let mut added_ids = ids(&event.repositories_added);
    let mut added = names(event.repositories_added);
    if let Some(repos) = event.repositories {
        added_ids.extend(ids(&repos));
        added.extend(names(repos));
    }
    let removed_ids = ids(&event.repositories_removed);
    Ok(bookkeeping(
        meta,
        BookkeepingEvent::Installation {
            action: action.to_string(),
            installation_id: event.installation.id,
            account: event.installation.account.login.as_str().to_string(),
            account_id: event.installation.account.id,
            repositories_added: added,
            repository_ids_added: added_ids,
            repositories_removed: names(event.repositories_removed),
            repository_ids_removed: removed_ids,
        },
    ))
}

/// Whether a comment is worth a worker's time: `None` if not, else `Some(mentions_bot)`.
/// Bots are never answered, so their comments stop here.
fn candidate(
    ctx: &NormaliseContext,
    author: &User<'_>,
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

fn repo_ref(repo: &Repository<'_>) -> RepoRef {
    // `full_name` is authoritative when present (owner logins can be renamed mid-flight).
    let (owner, name) = repo
        .full_name
        .as_ref()
        .and_then(|full| full.as_str().split_once('/'))
        .unwrap_or((repo.owner.login.as_str(), repo.name.as_str()));
    RepoRef {
        id: repo.id,
        owner: owner.to_string(),
        name: name.to_string(),
        owner_id: repo.owner.id,
    }
}

fn actor(user: &User<'_>) -> Actor {
    Actor {
        login: user.login.as_str().to_string(),
        kind: user.kind.as_ref().map_or("User", Text::as_str).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> NormaliseContext {
        NormaliseContext {
            handles: Some(Handles::new("parley", &[])),
        }
    }

    /// What the webhook did before the fast path: parse a `Value`, then normalise it.
    fn through_value(event: &str, body: &[u8]) -> Normalised {
        match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(payload) => normalise(event, "d", &payload, &ctx()),
            Err(err) => Normalised::Malformed(format!("invalid JSON: {err}")),
        }
    }

    fn comment(body_json: &str) -> String {
        format!(
            r#"{{"action":"created","sender":{{"login":"alice"}},"installation":{{"id":9}},
            "issue":{{"number":4,"title":"T\u00e9st \"q\"","body":null,"pull_request":{{"url":"x"}}}},
            "comment":{{"id":7,"user":{{"login":"al\/ice","type":"User"}},"body":{body_json},
                "html_url":"https://x/7","created_at":"2024-01-01T00:00:00Z"}},
            "repository":{{"id":1,"name":"r","full_name":"o/r","owner":{{"login":"o"}}}},
            "ignored":[1.5,-2e3,{{"deep":[[[]]]}},"\ud83d\ude00",true,null]}}"#
        )
    }

    #[test]
    fn handled_events_are_exactly_the_ones_the_match_knows() {
        let payload = serde_json::json!({"action": "no-such-action", "sender": {"login": "alice"}});
        for event in HANDLED_EVENTS {
            let said = format!("{:?}", normalise(event, "d", &payload, &ctx()));
            assert!(
                !said.contains(&format!("event {event} is not handled")),
                "{event}: {said}"
            );
        }
        let said = format!("{:?}", normalise("star", "d", &payload, &ctx()));
        assert!(said.contains("event star is not handled"), "{said}");
    }

    /// "Re-run" on Parley's gate check: a review job for the PR the check's external id
    /// names (GitHub names no PR for a fork's), else the first PR GitHub names. Another
    /// check, or one that names no PR, is ignored.
    /// "Re-run" on the gate's check on a merge queue's commit (GitHub names the queue's
    /// branch, not the PR) judges that commit again, but only when the check is the one
    /// Parley made for that PR there: a branch anyone may name like the queue's, pointing
    /// at another PR's head, stays a re-run of that PR's own check.
    #[test]
    fn a_rerun_on_a_queue_branch_is_the_queues_only_for_its_own_check() {
        use serde_json::json;
        let payload = |external_id: &str| {
            json!({
                "action": "rerequested", "sender": {"login": "maintainer", "type": "User"},
                "installation": {"id": 9},
                "check_run": {"id": 4, "name": "Parley review", "head_sha": "g1",
                    "external_id": external_id, "pull_requests": [],
                    "check_suite": {"head_branch": "gh-readonly-queue/main/pr-42-b0b0"}},
                "repository": {"id": 1, "name": "r", "full_name": "o/r",
                    "owner": {"login": "o", "id": 2}},
            })
        };
        let job =
            |external_id: &str| match normalise("check_run", "d", &payload(external_id), &ctx()) {
                Normalised::Job(job) => Some(*job),
                _ => None,
            };
        let Some(Job::Bookkeeping(queued)) = job("review#repo:1#42#g1") else {
            panic!("the queue's check");
        };
        assert!(
            matches!(&queued.event, BookkeepingEvent::MergeGroup { number: 42, group_head, .. } if group_head == "g1"),
            "{:?}",
            queued.event
        );
        for other in ["review#repo:1#7#g1", "review#repo:1#42#h9", ""] {
            assert!(
                !matches!(job(other), Some(Job::Bookkeeping(_))),
                "{other:?} is not Parley's check for #42 on g1"
            );
        }
    }

    /// Deleting the comment that began a thread of Parley's (a finding's) is weighed by
    /// the bookkeeping worker; a reply deleted, or anyone else's comment, is not.
    #[test]
    fn a_deleted_comment_matters_only_where_it_began_a_thread_of_parleys() {
        let mut payload: serde_json::Value = serde_json::from_str(include_str!(
            "../../../../../shared/corpora/webhooks/pull_request_review_comment/deleted.payload.json"
        ))
        .unwrap_or_default();
        let said = normalise("pull_request_review_comment", "d", &payload, &ctx());
        assert!(
            matches!(said, Normalised::Ignored(_)),
            "a person's: {said:?}"
        );
        payload["comment"]["user"]["login"] = "parley[bot]".into();
        payload["comment"]["user"]["type"] = "Bot".into();
        payload["comment"]["in_reply_to_id"] = 5.into();
        let said = normalise("pull_request_review_comment", "d", &payload, &ctx());
        assert!(matches!(said, Normalised::Ignored(_)), "a reply: {said:?}");
        payload["comment"]["in_reply_to_id"] = serde_json::Value::Null;
        let deleted = |payload: &serde_json::Value, ctx: &NormaliseContext| match normalise(
            "pull_request_review_comment",
            "d",
            payload,
            ctx,
        ) {
            Normalised::Job(job) => match *job {
                Job::Bookkeeping(job) => Some(job.event),
                _ => None,
            },
            _ => None,
        };
        let Some(BookkeepingEvent::FindingCommentDeleted {
            number,
            comment_id,
            actor,
            ..
        }) = deleted(&payload, &ctx())
        else {
            panic!("Parley's finding comment deleted");
        };
        assert_eq!(
            (number, comment_id, actor.as_str()),
            (2, 284312630, "Codertocat")
        );
        // Where Parley's handle is not known, any bot's comment is weighed (the worker
        // finds no finding for another bot's); another App's is not Parley's where it is.
        payload["comment"]["user"]["login"] = "other[bot]".into();
        assert!(deleted(&payload, &NormaliseContext { handles: None }).is_some());
        assert!(deleted(&payload, &ctx()).is_none());
    }

    /// "Re-run all checks" on a queue commit's suite (GitHub names no PR there) judges it
    /// for the PR its branch names, but only where Parley judged it before (`verify`).
    #[test]
    fn rerunning_the_suite_of_a_queue_commit_asks_for_a_verified_judgement() {
        let mut payload: serde_json::Value = serde_json::from_str(include_str!(
            "../../../../../shared/corpora/webhooks/check_suite/rerequested.payload.json"
        ))
        .unwrap_or_default();
        payload["installation"] = serde_json::json!({"id": 9});
        payload["check_suite"]["head_sha"] = "9a9a".into();
        payload["check_suite"]["pull_requests"] = serde_json::json!([]);
        let said = normalise("check_suite", "d", &payload, &ctx());
        assert!(matches!(said, Normalised::Ignored(_)), "{said:?}");
        payload["check_suite"]["head_branch"] = "gh-readonly-queue/main/pr-42-b0b0".into();
        let Normalised::Job(job) = normalise("check_suite", "d", &payload, &ctx()) else {
            panic!("not a job");
        };
        let Job::Bookkeeping(job) = *job else {
            panic!("not bookkeeping: {job:?}");
        };
        assert!(
            matches!(&job.event, BookkeepingEvent::MergeGroup { number: 42, group_head, verify: true, .. } if group_head == "9a9a"),
            "{:?}",
            job.event
        );
    }

    #[test]
    fn a_rerun_of_the_gate_check_becomes_a_rerequested_review() {
        use serde_json::{Value, json};
        let payload = |name: &str, external_id: Value, prs: Value| {
            json!({
                "action": "rerequested", "sender": {"login": "maintainer", "type": "User"},
                "installation": {"id": 9},
                "check_run": {"id": 4, "name": name, "head_sha": "h1",
                    "external_id": external_id, "pull_requests": prs},
                "repository": {"id": 1, "name": "r", "full_name": "o/r",
                    "owner": {"login": "o", "id": 2}},
            })
        };
        let job_of = |payload: &Value| match normalise("check_run", "d", payload, &ctx()) {
            Normalised::Job(job) => match *job {
                Job::Review(job) => Some(job),
                other => panic!("{other:?}"),
            },
            _ => None,
        };
        let fork = job_of(&payload(
            "Parley review",
            json!("review#repo:1#42#h1"),
            json!([]),
        ))
        .expect("a job");
        assert_eq!(fork.number, 42);
        assert_eq!(fork.trigger, ReviewTrigger::Rerequested);
        assert_eq!(fork.head_sha, "h1");
        assert_eq!(fork.author.login, "maintainer");
        assert_eq!(fork.installation_id, Some(9));
        let same_repository = payload("Parley review", json!(""), json!([{"number": 7}]));
        assert_eq!(job_of(&same_repository).map(|j| j.number), Some(7));
        assert_eq!(fork.rerun_of, None, "the gate's check");
        // A manual review's check names its run.
        let manual = job_of(&payload(
            "Parley review (manual)",
            json!("review#repo:1#42#h1+manual-5"),
            json!([]),
        ))
        .expect("a job");
        assert_eq!(manual.number, 42);
        assert_eq!(manual.rerun_of.as_deref(), Some("h1+manual-5"));
        for ignored in [
            payload(
                "Parley review (manual)",
                json!("review#repo:1#42#h1"),
                json!([]),
            ),
            payload("CI", Value::Null, json!([{"number": 7}])),
            payload("Parley review", Value::Null, json!([])),
        ] {
            assert!(job_of(&ignored).is_none(), "{ignored}");
        }
        // A re-run whose check lacks what Parley reads is malformed (GitHub's 400), not
        // ignored, on both paths.
        malformed_without_head_sha(&same_repository);
        // The fast path reads the same.
        let body = same_repository.to_string();
        assert_eq!(
            normalise_body("check_run", "d", body.as_bytes(), &ctx()),
            normalise("check_run", "d", &same_repository, &ctx())
        );
    }

    /// "Let it through" on Parley's held gate check: a job for the PR, the head and who
    /// pressed it. Another button, or a button on another check, is ignored. GitHub's own
    /// example (another App's check and button) is ignored too.
    #[test]
    fn let_it_through_on_the_gate_check_becomes_a_let_through_job() {
        use serde_json::{Value, json};
        let payload = |name: &str, identifier: &str| {
            json!({
                "action": "requested_action", "sender": {"login": "maintainer", "type": "User"},
                "installation": {"id": 9},
                "check_run": {"id": 4, "name": name, "head_sha": "h1",
                    "external_id": "review#repo:1#42#h1", "pull_requests": []},
                "requested_action": {"identifier": identifier},
                "repository": {"id": 1, "name": "r", "full_name": "o/r",
                    "owner": {"login": "o", "id": 2}},
            })
        };
        let job_of = |payload: &Value| match normalise("check_run", "d", payload, &ctx()) {
            Normalised::Job(job) => match *job {
                Job::Review(job) => Some(job),
                other => panic!("{other:?}"),
            },
            _ => None,
        };
        let job = job_of(&payload("Parley review", "let-through")).expect("a job");
        assert_eq!(job.trigger, ReviewTrigger::LetThrough);
        assert_eq!((job.number, job.head_sha.as_str()), (42, "h1"));
        assert_eq!(job.author.login, "maintainer");
        for ignored in [
            payload("Parley review", "lgtm"),
            payload("Parley review (manual)", "let-through"),
            payload("CI", "let-through"),
        ] {
            assert!(job_of(&ignored).is_none(), "{ignored}");
        }
        let example: Value = serde_json::from_str(include_str!(
            "../../../../../shared/corpora/webhooks/check_run/requested_action.payload.json"
        ))
        .expect("GitHub's example");
        assert!(job_of(&example).is_none());
        let body = payload("Parley review", "let-through").to_string();
        assert_eq!(
            normalise_body("check_run", "d", body.as_bytes(), &ctx()),
            normalise(
                "check_run",
                "d",
                &payload("Parley review", "let-through"),
                &ctx()
            )
        );
        // A button press whose check lacks what Parley reads is malformed, not ignored.
        malformed_without_head_sha(&payload("Parley review", "let-through"));
    }

    /// `check_run` `payload` without its check's `head_sha`: malformed, naming the field,
    /// on the value path and the fast path alike.
    fn malformed_without_head_sha(payload: &serde_json::Value) {
        let mut broken = payload.clone();
        broken["check_run"]
            .as_object_mut()
            .map(|check| check.remove("head_sha"));
        let said = normalise("check_run", "d", &broken, &ctx());
        assert!(
            matches!(&said, Normalised::Malformed(why) if why.contains("head_sha")),
            "{said:?}"
        );
        assert_eq!(
            normalise_body("check_run", "d", broken.to_string().as_bytes(), &ctx()),
            said
        );
    }

    #[test]
    fn the_fast_path_agrees_with_the_value_path() {
        let bodies = [
            comment(r#""@parley is \u00e9 \"ok\"?\n""#),
            comment(r#""no mention""#),
            comment("null"),
            // Only the last of a repeated key counts, as in a `Value`.
            comment(r#""first","body":"@parley second""#),
            comment(r#"7"#),
            r#"{"action":"created","comment":{}}"#.to_string(),
            r#"{"action":5}"#.to_string(),
            "[]".to_string(),
            "null".to_string(),
        ];
        for body in &bodies {
            let fast = normalise_body("issue_comment", "d", body.as_bytes(), &ctx());
            assert_eq!(
                fast,
                through_value("issue_comment", body.as_bytes()),
                "{body}"
            );
        }
        // Good bodies are decoded from the text itself, without the `Value` fallback.
        let direct = normalise_from("issue_comment", "d", &FromText(&bodies[0]), &ctx());
        assert!(matches!(direct, Normalised::Job(_)), "{direct:?}");
        let Normalised::Job(job) =
            normalise_body("issue_comment", "d", bodies[0].as_bytes(), &ctx())
        else {
            panic!("not a job");
        };
        let Job::Conversation(job) = *job else {
            panic!("not a conversation");
        };
        assert_eq!(job.comment.body, "@parley is é \"ok\"?\n");
        assert_eq!(job.comment.author.login, "al/ice");
        assert_eq!(job.topic.map(|t| t.title).as_deref(), Some("Tést \"q\""));
    }

    #[test]
    fn an_unlabeled_delivery_without_its_label_names_none() {
        let payload = serde_json::json!({
            "action": "unlabeled",
            "pull_request": {
                "number": 3, "draft": false, "title": "t", "user": {"login": "a", "type": "User"},
                "head": {"sha": "h", "ref": "f"}, "base": {"sha": "b", "ref": "main"}
            },
            "repository": {"id": 1, "name": "r", "full_name": "o/r", "owner": {"login": "o"}},
            "installation": {"id": 9}
        });
        let Normalised::Job(job) = normalise("pull_request", "d", &payload, &ctx()) else {
            panic!("not a job");
        };
        let Job::Review(job) = *job else {
            panic!("not a review job");
        };
        assert_eq!(job.trigger, ReviewTrigger::Unlabeled);
        assert_eq!(job.label, None);
        // A label that is not an object is a payload that does not match the event.
        let mut bad = payload.clone();
        bad["label"] = serde_json::json!("no-review");
        let said = normalise("pull_request", "d", &bad, &ctx());
        assert!(matches!(said, Normalised::Malformed(_)), "{said:?}");
    }

    /// The merge queue's request for checks becomes a job for the PR its branch names,
    /// with the commit to conclude the gate on; a branch of another shape, or a group
    /// destroyed, is nothing to do.
    #[test]
    fn a_merge_group_asks_for_the_gate_of_the_pr_its_branch_names() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let mut payload: serde_json::Value = serde_json::from_str(include_str!(
            "../../../../../shared/corpora/webhooks/pull_request/opened.payload.json"
        ))
        .unwrap_or_default();
        payload["action"] = "checks_requested".into();
        payload["merge_group"] = serde_json::json!({
            "head_sha": "9a9a",
            "head_ref": format!("refs/heads/gh-readonly-queue/main/pr-42-{sha}"),
        });
        let Normalised::Job(job) = normalise("merge_group", "d", &payload, &ctx()) else {
            panic!("not a job");
        };
        let Job::Bookkeeping(job) = *job else {
            panic!("not bookkeeping");
        };
        let BookkeepingEvent::MergeGroup {
            number,
            group_head,
            verify,
            ..
        } = job.event
        else {
            panic!("not a merge group: {:?}", job.event);
        };
        assert_eq!((number, group_head.as_str()), (42, "9a9a"));
        assert!(!verify, "GitHub itself asked");
        payload["merge_group"]["head_ref"] = "refs/heads/some-branch".into();
        let said = normalise("merge_group", "d", &payload, &ctx());
        assert!(matches!(said, Normalised::Ignored(_)), "{said:?}");
        payload["action"] = "destroyed".into();
        let said = normalise("merge_group", "d", &payload, &ctx());
        assert!(matches!(said, Normalised::Ignored(_)), "{said:?}");
        payload["action"] = "checks_requested".into();
        payload["merge_group"] = "main".into();
        let said = normalise("merge_group", "d", &payload, &ctx());
        assert!(matches!(said, Normalised::Malformed(_)), "{said:?}");
    }

    /// A PR moved to another base is reviewed against it; a title or body edited is not
    /// a change to review.
    #[test]
    fn a_pull_request_edited_is_a_review_only_when_its_base_changed() {
        let mut payload: serde_json::Value = serde_json::from_str(include_str!(
            "../../../../../shared/corpora/webhooks/pull_request/opened.payload.json"
        ))
        .unwrap_or_default();
        payload["action"] = "edited".into();
        payload["changes"] = serde_json::json!({"title": {"from": "Old title"}});
        let said = normalise("pull_request", "d", &payload, &ctx());
        assert!(matches!(said, Normalised::Ignored(_)), "{said:?}");
        payload["changes"] =
            serde_json::json!({"base": {"ref": {"from": "develop"}, "sha": {"from": "0f0f"}}});
        let Normalised::Job(job) = normalise("pull_request", "d", &payload, &ctx()) else {
            panic!("not a job");
        };
        let Job::Review(job) = *job else {
            panic!("not a review job");
        };
        assert_eq!(job.trigger, ReviewTrigger::Retargeted);
        assert_eq!(job.base_ref, payload["pull_request"]["base"]["ref"]);
        assert_eq!(
            job.moved_from.as_deref(),
            Some("0f0f"),
            "the commit it left"
        );
        payload["changes"] = serde_json::json!({"base": {"ref": {"from": "develop"}}});
        let Normalised::Job(job) = normalise("pull_request", "d", &payload, &ctx()) else {
            panic!("a move GitHub does not name the commit of is still a move");
        };
        assert!(matches!(
            *job,
            Job::Review(ReviewJob {
                moved_from: None,
                ..
            })
        ));
        // `changes` that is not an object is a payload that does not match the event.
        payload["changes"] = "base".into();
        let said = normalise("pull_request", "d", &payload, &ctx());
        assert!(matches!(said, Normalised::Malformed(_)), "{said:?}");
    }

    #[test]
    fn an_edit_asks_only_when_it_adds_a_mention() {
        let edited = |before: &str, after: &str| {
            let mut payload: serde_json::Value =
                serde_json::from_str(&comment(&serde_json::to_string(after).unwrap_or_default()))
                    .unwrap_or_default();
            payload["action"] = "edited".into();
            payload["changes"] = serde_json::json!({ "body": { "from": before } });
            payload
        };
        let is_job = |payload: &serde_json::Value, ctx: &NormaliseContext| {
            matches!(
                normalise("issue_comment", "d", payload, ctx),
                Normalised::Job(_)
            )
        };
        assert!(is_job(
            &edited("why does it hang?", "@parley why does it hang?"),
            &ctx()
        ));
        let cases = [
            (
                "@parley why?",
                "@parley why does it hang?",
                "does not add a mention",
            ),
            ("@parley why?", "why?", "does not add a mention"),
            ("no mention", "still none", "does not mention Parley"),
        ];
        for (before, after, reason) in cases {
            let said = normalise("issue_comment", "d", &edited(before, after), &ctx());
            assert!(
                matches!(&said, Normalised::Ignored(why) if why.contains(reason)),
                "{before} -> {after}: {said:?}"
            );
        }
        // A title edit (no `changes.body`) asks nothing.
        let mut title_only = edited("x", "@parley x");
        title_only["changes"] = serde_json::json!({ "title": { "from": "old" } });
        assert!(!is_job(&title_only, &ctx()));
        // Without a known handle every edit goes to the worker, which knows its slug.
        let unknown = NormaliseContext { handles: None };
        assert!(is_job(
            &edited("@parley why?", "@parley why not?"),
            &unknown
        ));
    }

    #[test]
    fn bad_bodies_keep_their_reasons() {
        let mut not_utf8 = comment(r#""x""#).into_bytes();
        let at = not_utf8.len() - 10;
        not_utf8[at] = 0xff;
        let cases: [(&str, &[u8], &str); 6] = [
            (
                "pull_request",
                br#"{"action":"opened","pull_request":{"#,
                "invalid JSON",
            ),
            ("pull_request", br#"{"action":"opened"} x"#, "invalid JSON"),
            ("ping", b"{\"zen\":", "invalid JSON"),
            ("issue_comment", &not_utf8, "invalid JSON"),
            // A type error before a syntax error is still reported as the syntax error.
            ("pull_request", br#"{"action":7,"#, "invalid JSON"),
            (
                "pull_request",
                br#"{"action":"opened","pull_request":{"number":"seven"}}"#,
                "payload does not match the event",
            ),
        ];
        for (event, body, reason) in cases {
            let fast = normalise_body(event, "d", body, &ctx());
            assert_eq!(fast, through_value(event, body), "{event}");
            let Normalised::Malformed(text) = fast else {
                panic!("{event}: {fast:?}");
            };
            assert!(text.starts_with(reason), "{text}");
        }
        assert_eq!(
            normalise_body("ping", "d", b"{\"zen\":\"x\"}", &ctx()),
            Normalised::Ping
        );
    }
}
