//! Nothing lost: on any job for a PR, look for questions that were never answered (a
//! dropped message, a worker that died before its claim) and answer them too.
//!
//! A comment is pending when it mentions Parley or replies in a thread rooted at a Parley
//! finding, was written before the comment the job answers (later ones' jobs are still
//! queued behind it: answering them here would break the PR's order), and no reply marker
//! of Parley's points at it. Candidates go through the very same gates as a webhook's
//! comment (the store's record of answers and the claim keep the sweep and a late job
//! from both answering), oldest first, at most [`MAX_PER_RUN`] answered per job so one
//! job's time stays bounded.
//!
//! Review bodies are swept too, from the reviews listed with the PR (concurrently with the
//! comment listings, so the job waits no longer). A review body is pending when it
//! mentions Parley, is not by a bot and no Parley top-level comment carries a reply marker
//! for its review id: Parley answers review bodies in the PR conversation, so that is
//! where its answer would be (docs/conversation.md, "Nothing lost").

use super::snapshot::PrSnapshot;
use super::thread::{answers, finding_marker, is_parley};
use super::trigger::Trigger;
use crate::markers::{self, ReplyMarker};
use crate::ports::github::{IssueComment, Review, ReviewComment, User};
use std::collections::{HashMap, HashSet};
use time::OffsetDateTime;

/// Pending comments answered per job at most, so one job's time stays bounded.
pub const MAX_PER_RUN: usize = 3;

/// Pending comments put through the gates per job at most. Comments the gates turn away
/// (someone without permission, say) do not count against [`MAX_PER_RUN`]: were they
/// counted, three such comments would starve every newer question for good.
pub const MAX_CONSIDERED: usize = 30;

/// The pending comments among both listings and the review bodies, oldest first, at most
/// [`MAX_CONSIDERED`].
pub fn pending(
    snap: &PrSnapshot,
    review_comments: &[ReviewComment],
    issue_comments: &[IssueComment],
    reviews: &[Review],
    handled: u64,
    before: Option<OffsetDateTime>,
) -> Vec<Trigger> {
    // Reply markers from both listings: an inline question may have been answered in the
    // PR conversation when its thread refused the reply.
    let answered: HashSet<u64> = review_comments
        .iter()
        .filter(|c| is_parley(c.user.as_ref(), &snap.handles))
        .map(|c| c.body.as_str())
        .chain(
            issue_comments
                .iter()
                .filter(|c| is_parley(c.user.as_ref(), &snap.handles))
                .map(|c| c.body.as_str()),
        )
        .flat_map(answered_ids)
        .collect();
    let mut found: Vec<Trigger> = Vec::new();
    found.extend(pending_inline(snap, review_comments, handled));
    found.extend(pending_top_level(snap, issue_comments, handled));
    found.retain(|t| !answered.contains(&t.id));
    // After the retain: review ids are their own sequence, so only the top-level
    // markers (where review bodies are answered) speak for them.
    found.extend(pending_review_bodies(
        snap,
        reviews,
        issue_comments,
        handled,
    ));
    // Only comments written before the one this job answers: jobs of one PR run in
    // delivery order, so every earlier comment's own job has run (a pending one was
    // missed), while a later one's job is still queued behind this one and will answer
    // it in its turn. Answering it here would overtake the queue and break the PR's order.
    if let Some(before) = before {
        found.retain(|t| t.created_at.is_some_and(|at| at < before));
    }
    found.sort_by_key(|t| (t.created_at, t.id));
    found.truncate(MAX_CONSIDERED);
    found
}

/// The comment ids Parley's markers in `body` settle: answered, or told that Parley gave
/// up on them and asked for the question again (see [`ReplyMarker::gave_up`]).
fn answered_ids(body: &str) -> Vec<u64> {
    markers::parse_all(body)
        .iter()
        .filter(|m| m.kind == markers::kind::REPLY || m.kind == markers::kind::ERROR)
        .filter_map(|m| m.decode::<ReplyMarker>())
        .filter(|m| m.kind == markers::kind::REPLY || m.gave_up)
        .map(|m| m.reply_to)
        .collect()
}

fn is_bot_or_parley(user: Option<&User>, snap: &PrSnapshot) -> bool {
    user.is_none_or(|u| u.to_actor().is_bot() || snap.handles.is_self(&u.login))
}

fn pending_inline(snap: &PrSnapshot, comments: &[ReviewComment], handled: u64) -> Vec<Trigger> {
    let by_id: HashMap<u64, &ReviewComment> = comments.iter().map(|c| (c.id, c)).collect();
    let root_of = |c: &ReviewComment| {
        let mut current = c;
        for _ in 0..32 {
            match current.in_reply_to_id.and_then(|up| by_id.get(&up)) {
                Some(parent) => current = parent,
                None => break,
            }
        }
        current.in_reply_to_id.unwrap_or(current.id)
    };
    let reply_without_mention = snap.config.config.mention.reply_without_mention;
    comments
        .iter()
        .filter(|c| c.id != handled && !snap.was_answered(c.id))
        .filter(|c| !is_bot_or_parley(c.user.as_ref(), snap))
        .filter(|c| {
            !comments
                .iter()
                .any(|p| is_parley(p.user.as_ref(), &snap.handles) && answers(&p.body, c.id))
        })
        .filter(|c| {
            snap.handles.mentioned_in(&c.body)
                || (reply_without_mention
                    && c.in_reply_to_id.is_some()
                    && by_id
                        .get(&root_of(c))
                        .is_some_and(|root| finding_marker(root, &snap.handles).is_some()))
        })
        .filter_map(Trigger::from_review_comment)
        .collect()
}

fn pending_top_level(snap: &PrSnapshot, comments: &[IssueComment], handled: u64) -> Vec<Trigger> {
    comments
        .iter()
        .filter(|c| c.id != handled && !snap.was_answered(c.id))
        .filter(|c| !is_bot_or_parley(c.user.as_ref(), snap))
        .filter(|c| snap.handles.mentioned_in(&c.body))
        .filter(|c| {
            !comments
                .iter()
                .any(|p| is_parley(p.user.as_ref(), &snap.handles) && answers(&p.body, c.id))
        })
        .filter_map(Trigger::from_issue_comment)
        .collect()
}

fn pending_review_bodies(
    snap: &PrSnapshot,
    reviews: &[Review],
    issue_comments: &[IssueComment],
    handled: u64,
) -> Vec<Trigger> {
    let answered: HashSet<u64> = issue_comments
        .iter()
        .filter(|c| is_parley(c.user.as_ref(), &snap.handles))
        .flat_map(|c| answered_ids(&c.body))
        .collect();
    reviews
        .iter()
        .filter(|r| r.id != handled && !snap.was_answered(r.id) && !answered.contains(&r.id))
        .filter(|r| !r.state.eq_ignore_ascii_case("PENDING"))
        .filter(|r| !is_bot_or_parley(r.user.as_ref(), snap))
        .filter(|r| snap.handles.mentioned_in(&r.body))
        .filter_map(Trigger::from_review)
        .collect()
}
