//! The short notes Parley posts instead of an answer, each at most once: "conversation
//! limit reached" (once per PR), "budget used up" (once per PR a month), "I could not
//! answer this" (once per comment) and "reviews are for pull requests" (once per review
//! command on a plain issue). Each is guarded by a
//! claim in the store and carries a marker, so GitHub shows what it was.

use super::answer::{self, Destination};
use super::error::ConversationError;
use super::gates::key;
use super::snapshot::PrSnapshot;
use super::trigger::Trigger;
use crate::markers::{self, ReplyMarker, kind};
use crate::ports::github::GitHub;
use crate::ports::handler::Attempt;
use crate::ports::{Claim, Store};
use std::time::Duration;

/// The limit note must stay unique for the PR's life.
const LIMIT_NOTE_TTL: Duration = Duration::from_secs(365 * 24 * 3600);
/// An error note per comment, for as long as retries of that comment can happen.
const ERROR_NOTE_TTL: Duration = Duration::from_secs(14 * 24 * 3600);

/// Post the PR's one "conversation limit reached" note, unless it is already there.
pub async fn limit_reached(
    github: &dyn GitHub,
    store: &dyn Store,
    snap: &PrSnapshot,
    trigger: &Trigger,
    destination: &Destination,
) -> Result<(), ConversationError> {
    let claim_key = key::limit_note(&snap.repo, snap.number);
    if store.claim(&claim_key, LIMIT_NOTE_TTL).await? == Claim::AlreadyClaimed {
        return Ok(());
    }
    let max = snap.config.config.mention.max_turns_per_pr;
    let text = format!(
        "I have reached this pull request's conversation limit ({max} replies) and will not \
         answer further comments here. A maintainer can raise \
         `mention.conversation.maxTurnsPerPr` in `.parley.yml`."
    );
    let body = answer::compose(
        &text,
        &[],
        destination,
        kind::LIMIT,
        &ReplyMarker::new(kind::LIMIT, trigger.id),
        &snap.silenced,
    );
    if let Err(err) = answer::post(github, snap, destination, &body).await {
        release(store, &claim_key).await;
        return Err(err);
    }
    tracing::info!(repo = %snap.repo, pr = snap.number, max, "conversation limit reached; note posted");
    Ok(())
}

/// Longer than a month, so the claim for a month's budget note outlives the month.
const BUDGET_NOTE_TTL: Duration = Duration::from_secs(40 * 24 * 3600);

/// Post the PR's one "budget used up" note of `month` (`YYYY-MM`), unless it is already
/// there. No amounts: what an organisation spends is not for every reader of a public
/// repository.
pub async fn budget_exhausted(
    github: &dyn GitHub,
    store: &dyn Store,
    snap: &PrSnapshot,
    trigger: &Trigger,
    destination: &Destination,
    month: &str,
) -> Result<(), ConversationError> {
    let claim_key = key::budget_note(&snap.repo, snap.number, month);
    if store.claim(&claim_key, BUDGET_NOTE_TTL).await? == Claim::AlreadyClaimed {
        return Ok(());
    }
    let text = format!(
        "Sorry @{}, the monthly LLM budget of this GitHub App installation is used up, so I \
         cannot answer here until next month, or until an operator raises the budget.",
        trigger.author.login
    );
    let body = answer::compose(
        &text,
        &[],
        destination,
        kind::NOTE,
        &ReplyMarker::new(kind::NOTE, trigger.id),
        &snap.silenced,
    );
    if let Err(err) = answer::post(github, snap, destination, &body).await {
        release(store, &claim_key).await;
        return Err(err);
    }
    tracing::info!(repo = %snap.repo, pr = snap.number, %month, "monthly LLM budget exhausted; note posted");
    Ok(())
}

/// Tell the asker, once, that the answer failed, why, and what happens next: only a
/// failure the queue retries may promise a retry; one that no retry can mend (a model
/// that cannot follow the answer format) asks for the question again instead, so nobody
/// waits for an answer that is not coming. A later attempt after which the queue will not
/// try again (its last, or one that failed for good) edits the note an earlier attempt
/// posted, whose promise of a retry no longer holds. Best effort: the caller returns the
/// original failure either way.
pub async fn could_not_answer(
    github: &dyn GitHub,
    store: &dyn Store,
    snap: &PrSnapshot,
    trigger: &Trigger,
    destination: &Destination,
    failure: &ConversationError,
    attempt: Option<Attempt>,
) {
    let exhausted = attempt.filter(|a| failure.is_transient() && a.is_last());
    let last_word = exhausted.is_some() || !failure.is_transient();
    let claim_key = key::error_note(&snap.repo, trigger.id);
    match store.claim(&claim_key, ERROR_NOTE_TTL).await {
        Ok(Claim::Won) => {}
        Ok(Claim::AlreadyClaimed) => {
            if last_word {
                revise(github, snap, trigger, destination, failure, exhausted).await;
            }
            return;
        }
        Err(err) => {
            tracing::warn!(repo = %snap.repo, comment = trigger.id, error = %err, "could not claim the error note; not posting one");
            return;
        }
    }
    let body = error_note(snap, trigger, destination, failure, exhausted);
    if let Err(err) = answer::post(github, snap, destination, &body).await {
        tracing::warn!(repo = %snap.repo, comment = trigger.id, error = %err, "could not post the error note");
        release(store, &claim_key).await;
    }
}

/// The error note: what failed in public words and what happens next.
fn error_note(
    snap: &PrSnapshot,
    trigger: &Trigger,
    destination: &Destination,
    failure: &ConversationError,
    exhausted: Option<Attempt>,
) -> String {
    let reason = match failure {
        ConversationError::Llm(err) => err.public_reason(),
        ConversationError::GitHub(_) => "GitHub did not let me read the conversation",
        _ => "something went wrong on my side",
    };
    let (next, gave_up) = match exhausted {
        Some(attempt) => (
            format!(
                "I tried {} times. I will try again the next time someone here asks me \
                 anything, or ask me again.",
                attempt.number
            ),
            false,
        ),
        None if failure.is_transient() => ("I will try again automatically.".to_string(), false),
        None if failure.is_config() => (
            "Parley's operator has to fix its settings first; I will answer once they have."
                .to_string(),
            false,
        ),
        None => ("Ask me again and I will try once more.".to_string(), true),
    };
    let text = format!(
        "Sorry @{}, I could not answer this just now ({reason}). {next}",
        trigger.author.login
    );
    answer::compose(
        &text,
        &[],
        destination,
        kind::ERROR,
        &ReplyMarker {
            gave_up,
            ..ReplyMarker::new(kind::ERROR, trigger.id)
        },
        &snap.silenced,
    )
}

/// Edit the note an earlier attempt posted for `trigger` (Parley's own, in the thread or
/// in the PR conversation where it fell back) to say what this failure means now. A note
/// not found (deleted, or its post failed) is left alone.
async fn revise(
    github: &dyn GitHub,
    snap: &PrSnapshot,
    trigger: &Trigger,
    destination: &Destination,
    failure: &ConversationError,
    exhausted: Option<Attempt>,
) {
    let ours = |user: Option<&crate::ports::github::User>, body: &str| {
        markers::trusted::<ReplyMarker>(user, &snap.handles, body, kind::ERROR)
            .is_some_and(|m| m.reply_to == trigger.id)
    };
    let in_thread = match snap.review_comments(github).await {
        Ok(listing) => listing
            .items
            .iter()
            .rev()
            .find(|c| ours(c.user.as_ref(), &c.body))
            .map(|c| c.id),
        Err(_) => None,
    };
    let edited = match in_thread {
        Some(id) => {
            let body = error_note(snap, trigger, destination, failure, exhausted);
            github
                .update_review_comment(&snap.scope, id, &body)
                .await
                .map(drop)
        }
        None => {
            let Some(id) = snap.issue_comments(github).await.ok().and_then(|listing| {
                listing
                    .items
                    .iter()
                    .rev()
                    .find(|c| ours(c.user.as_ref(), &c.body))
                    .map(|c| c.id)
            }) else {
                return;
            };
            let here = Destination::conversation(trigger);
            let body = error_note(snap, trigger, &here, failure, exhausted);
            github
                .update_issue_comment(&snap.scope, id, &body)
                .await
                .map(drop)
        }
    };
    if let Err(err) = edited {
        tracing::warn!(repo = %snap.repo, comment = trigger.id, error = %err, "could not revise the error note");
    }
}

/// Answer a command with `text`: a reply carrying a reply marker pointing at the command,
/// so the answered-before check and the sweep see it as answered (the caller holds the
/// comment's reply claim). No turn is used. Returns the reply's id.
pub async fn answer_command(
    github: &dyn GitHub,
    snap: &PrSnapshot,
    trigger: &Trigger,
    destination: &Destination,
    text: &str,
) -> Result<u64, ConversationError> {
    let body = answer::compose(
        text,
        &[],
        destination,
        kind::REPLY,
        &ReplyMarker::new(kind::REPLY, trigger.id),
        &snap.silenced,
    );
    answer::post(github, snap, destination, &body).await
}

/// Answer `@parley review` on a plain issue: there is no diff to review.
pub async fn reviews_need_a_pull_request(
    github: &dyn GitHub,
    snap: &PrSnapshot,
    trigger: &Trigger,
    destination: &Destination,
) -> Result<u64, ConversationError> {
    let text = "Reviews are for pull requests: this is an issue, so there is no diff for me \
                to review. Ask for a review on a pull request, or ask me a question here.";
    let id = answer_command(github, snap, trigger, destination, text).await?;
    tracing::info!(repo = %snap.repo, issue = snap.number, comment = trigger.id, "review requested on a plain issue; note posted");
    Ok(id)
}

async fn release(store: &dyn Store, claim_key: &str) {
    if let Err(err) = store.release(claim_key).await {
        tracing::warn!(key = claim_key, error = %err, "could not release a claim; it expires on its own");
    }
}
