//! Rebuilding the conversation a comment belongs to, from GitHub (the source of truth).
//!
//! Inline: the review-comment thread, found by walking `in_reply_to_id` up to the root
//! (inside the listing the job already holds; GitHub is asked only for a parent the
//! listing lacks). Top level: the PR's issue comments that form a conversation with
//! Parley. Either way the triggering comment is excluded (it is the question), and so is
//! anything written after it.

use super::error::ConversationError;
use super::snapshot::PrSnapshot;
use super::trigger::Trigger;
use crate::markers::{self, FindingMarker, ReplyMarker};
use crate::mention::Handles;
use crate::ports::github::{GitHub, IssueComment, ReviewComment};
use std::collections::HashMap;

/// A thread deeper than this is malformed (or a cycle); stop walking.
const MAX_DEPTH: usize = 32;

/// One earlier turn of the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub id: u64,
    pub author: String,
    /// Written by Parley (markers already stripped from `body`).
    pub parley: bool,
    pub body: String,
}

#[derive(Debug, Clone, Default)]
pub struct Conversation {
    /// Root of the inline thread; `None` at top level or when the parent is gone.
    pub root: Option<ReviewComment>,
    /// The root is one of Parley's findings, as its marker says.
    pub finding: Option<FindingMarker>,
    /// Earlier turns, oldest first, without the root and the trigger.
    pub history: Vec<Said>,
    /// Parley already answered the trigger (a reply marker points at it).
    pub already_answered: bool,
    /// The triggering comment no longer exists: nothing to answer.
    pub trigger_deleted: bool,
    /// The parent of an inline reply is gone (404); answered as a plain mention.
    pub parent_missing: bool,
}

/// The conversation `trigger` belongs to.
pub async fn reconstruct(
    github: &dyn GitHub,
    snap: &PrSnapshot,
    trigger: &Trigger,
) -> Result<Conversation, ConversationError> {
    if trigger.is_inline() {
        inline(github, snap, trigger).await
    } else {
        top_level(github, snap, trigger).await
    }
}

async fn inline(
    github: &dyn GitHub,
    snap: &PrSnapshot,
    trigger: &Trigger,
) -> Result<Conversation, ConversationError> {
    let listing = snap.review_comments(github).await?;
    let by_id: HashMap<u64, &ReviewComment> = listing.items.iter().map(|c| (c.id, c)).collect();
    let in_thread = listing
        .items
        .iter()
        .any(|c| is_parley(c.user.as_ref(), &snap.handles) && answers(&c.body, trigger.id));
    // An inline question may have been answered in the PR conversation instead (the
    // thread refused the reply): that listing is part of the job's snapshot already.
    let already_answered = in_thread || {
        let top = snap.issue_comments(github).await?;
        top.items
            .iter()
            .any(|c| is_parley(c.user.as_ref(), &snap.handles) && answers(&c.body, trigger.id))
    };
    let mut conversation = Conversation {
        already_answered,
        ..Conversation::default()
    };
    if !by_id.contains_key(&trigger.id) {
        conversation.trigger_deleted =
            absent(github.get_review_comment(&snap.scope, trigger.id).await)?;
        if conversation.trigger_deleted {
            return Ok(conversation);
        }
    }
    let Some(parent) = trigger.in_reply_to_id else {
        // A new inline comment that mentions Parley: a thread of one.
        return Ok(conversation);
    };
    let root = match walk_up(github, snap, &by_id, parent).await? {
        Some(root) => root,
        None => {
            tracing::info!(repo = %snap.repo, pr = snap.number, comment = trigger.id, parent,
                "parent comment is gone; answering as a plain mention without thread context");
            conversation.parent_missing = true;
            return Ok(conversation);
        }
    };
    conversation.finding = finding_marker(&root, &snap.handles);
    conversation.history = listing
        .items
        .iter()
        .filter(|c| c.id != root.id && c.id != trigger.id && c.id < trigger.id)
        .filter(|c| root_of(c, &by_id) == Some(root.id))
        .map(|c| said(c.id, c.user.as_ref(), &c.body, &snap.handles))
        .collect();
    conversation.root = Some(root);
    Ok(conversation)
}

/// Follow `in_reply_to_id` from `parent` to the thread's root. `None` when a comment on
/// the way is gone.
async fn walk_up(
    github: &dyn GitHub,
    snap: &PrSnapshot,
    by_id: &HashMap<u64, &ReviewComment>,
    parent: u64,
) -> Result<Option<ReviewComment>, ConversationError> {
    let mut current = parent;
    for _ in 0..MAX_DEPTH {
        let comment = match by_id.get(&current) {
            Some(comment) => (*comment).clone(),
            None => match github.get_review_comment(&snap.scope, current).await {
                Ok(comment) => comment,
                Err(err) if err.is_absent() => return Ok(None),
                Err(err) => return Err(err.into()),
            },
        };
        match comment.in_reply_to_id {
            Some(up) if up != current => current = up,
            _ => return Ok(Some(comment)),
        }
    }
    Ok(None)
}

/// The root id of `comment`'s thread within the listing.
fn root_of(comment: &ReviewComment, by_id: &HashMap<u64, &ReviewComment>) -> Option<u64> {
    let mut current = comment;
    for _ in 0..MAX_DEPTH {
        match current.in_reply_to_id {
            None => return Some(current.id),
            Some(up) => match by_id.get(&up) {
                Some(parent) => current = parent,
                // GitHub points replies at the root; a missing parent is the root itself.
                None => return Some(up),
            },
        }
    }
    None
}

/// The root's finding marker, only when Parley wrote the root: anyone can paste a marker.
pub fn finding_marker(root: &ReviewComment, handles: &Handles) -> Option<FindingMarker> {
    if !is_parley(root.user.as_ref(), handles) {
        return None;
    }
    markers::find(&root.body, markers::kind::FINDING)
}

async fn top_level(
    github: &dyn GitHub,
    snap: &PrSnapshot,
    trigger: &Trigger,
) -> Result<Conversation, ConversationError> {
    let listing = snap.issue_comments(github).await?;
    let mut conversation = Conversation {
        already_answered: listing
            .items
            .iter()
            .any(|c| is_parley(c.user.as_ref(), &snap.handles) && answers(&c.body, trigger.id)),
        ..Conversation::default()
    };
    let is_comment = trigger.surface == crate::job::Surface::IssueComment;
    if is_comment && !listing.items.iter().any(|c| c.id == trigger.id) {
        conversation.trigger_deleted =
            absent(github.get_issue_comment(&snap.scope, trigger.id).await)?;
        if conversation.trigger_deleted {
            return Ok(conversation);
        }
    }
    conversation.history = top_level_history(&listing.items, trigger, &snap.handles);
    Ok(conversation)
}

/// The issue-comment conversation before the trigger: mentions of Parley and Parley's
/// replies, plus the follow-ups after the first of them that did not tag it. Comments
/// created or edited after the trigger are dropped (an edit could plant instructions
/// after the question was asked).
pub fn top_level_history(
    comments: &[IssueComment],
    trigger: &Trigger,
    handles: &Handles,
) -> Vec<Said> {
    let before = |c: &IssueComment| match trigger.created_at {
        Some(at) => c.created_at <= at && c.updated_at <= at,
        None => c.id < trigger.id,
    };
    let mut started = false;
    let mut history = Vec::new();
    for comment in comments.iter().filter(|c| c.id != trigger.id && before(c)) {
        let parley = is_parley(comment.user.as_ref(), handles);
        if parley && is_note(&comment.body) {
            continue;
        }
        started = started || parley || handles.mentioned_in(&comment.body);
        if started {
            history.push(said(
                comment.id,
                comment.user.as_ref(),
                &comment.body,
                handles,
            ));
        }
    }
    history
}

/// Whether `body` carries a Parley reply marker answering comment `id`.
pub fn answers(body: &str, id: u64) -> bool {
    markers::parse_all(body)
        .iter()
        .filter(|m| m.kind == markers::kind::REPLY)
        .filter_map(|m| m.decode::<ReplyMarker>())
        .any(|m| m.reply_to == id)
}

/// Limit, error and bookkeeping notes are not conversation: they answer nothing, so they
/// are neither history nor proof that Parley had its say ("I will try again" must not
/// hide the question it apologises for).
pub fn is_note(body: &str) -> bool {
    markers::parse_all(body).iter().any(|m| {
        m.kind == markers::kind::LIMIT
            || m.kind == markers::kind::ERROR
            || m.kind == markers::kind::NOTE
    })
}

pub fn is_parley(user: Option<&crate::ports::github::User>, handles: &Handles) -> bool {
    user.is_some_and(|u| handles.is_self(&u.login))
}

fn said(id: u64, user: Option<&crate::ports::github::User>, body: &str, handles: &Handles) -> Said {
    Said {
        id,
        author: user.map_or_else(|| "ghost".to_string(), |u| u.login.clone()),
        parley: is_parley(user, handles),
        body: markers::strip(body).trim().to_string(),
    }
}

/// `Ok(true)` when GitHub says the comment is gone.
fn absent<T>(
    result: Result<T, crate::ports::github::GitHubError>,
) -> Result<bool, ConversationError> {
    match result {
        Ok(_) => Ok(false),
        Err(err) if err.is_absent() => Ok(true),
        Err(err) => Err(err.into()),
    }
}
