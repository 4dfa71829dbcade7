//! The gates a comment passes before Parley spends anything on it, in this order (a
//! claim is taken only for a comment Parley may answer, and a turn counted only once it
//! is claimed):
//! 1. addressed to Parley (a mention, or a reply in a thread rooted at a finding);
//! 2. not written by a bot (Parley included);
//! 3. written by someone allowed to talk to Parley;
//! 4. not answered before (a claim in the store, then GitHub's own record);
//! 5. within the PR's turn limit;
//!
//! and then (6) an `eyes` reaction acknowledges it. Each gate says why it stopped a comment,
//! for the log.

use super::caches::TtlCache;
use super::error::ConversationError;
use super::snapshot::PrSnapshot;
use super::thread::Conversation;
use super::trigger::Trigger;
use crate::ports::github::{GitHub, Permission, ReactionContent};
use crate::ports::store::keys;
use crate::ports::{Claim, Store};
use crate::review::resolution::permission;
use std::time::Duration;

/// How long a claim on a comment being answered lasts: longer than a turn can take (the
/// worker's timeout is 180 s; jobs of one PR run one at a time), and short enough that a
/// claim orphaned by a job that died (the sweep's, say, under another job's delivery id)
/// frees the comment for its own job's retry within the hour, not in two weeks. Once the
/// answer is posted, a record kept for [`RECORD_TTL`] says so instead.
pub const REPLY_CLAIM_TTL: Duration = Duration::from_secs(30 * 60);

/// How long records of what happened (a comment answered, a turn counted) are kept: far
/// beyond any queue retry, so a redelivery days later still finds them (GitHub's markers
/// cover anything older).
pub const RECORD_TTL: Duration = Duration::from_secs(30 * 24 * 3600);
/// Permissions change rarely; a minute keeps a burst of comments to one lookup.
pub const PERMISSION_TTL: Duration = Duration::from_secs(60);

/// Store keys owned by the conversation worker.
pub mod key {
    /// The reply to one comment: claimed before any side effect.
    pub fn reply(repo: &str, comment_id: u64) -> String {
        format!("reply#{repo}#{comment_id}")
    }
    /// A comment answered: the id of Parley's reply, recorded right after it is posted,
    /// so a retry knows without finding the reply among the PR's comments.
    pub fn answered(repo: &str, comment_id: u64) -> String {
        format!("answered#{repo}#{comment_id}")
    }
    /// The turn a comment's answer took, so a retry does not count it twice.
    pub fn turn(repo: &str, comment_id: u64) -> String {
        format!("turn#{repo}#{comment_id}")
    }
    /// The one "conversation limit reached" note of a PR.
    pub fn limit_note(repo: &str, pr: u64) -> String {
        format!("limit-note#{repo}#{pr}")
    }
    /// The one "budget used up" note of a PR in a month (`YYYY-MM`).
    pub fn budget_note(repo: &str, pr: u64, month: &str) -> String {
        format!("budget-note#mention#{repo}#{pr}#{month}")
    }
    /// The one error note for a comment Parley could not answer.
    pub fn error_note(repo: &str, comment_id: u64) -> String {
        format!("error-note#{repo}#{comment_id}")
    }
    /// A turn given back after an attempt whose post failed ambiguously (a 5xx: the
    /// reply may have landed). Lets a later attempt that finds the reply on GitHub charge
    /// the turn again instead of leaving it free.
    pub fn turn_refund(repo: &str, comment_id: u64) -> String {
        format!("turn-refund#{repo}#{comment_id}")
    }
    /// The per-PR counter of turns taken. Only ever grows (the atomic ceiling needs that).
    pub const TURNS: &str = "turns";
    /// The per-PR counter of turns given back by attempts that failed before their reply
    /// was on GitHub. Turns used = [`TURNS`] - [`TURNS_REFUNDED`].
    pub const TURNS_REFUNDED: &str = "turns_refunded";
}

/// Why a comment is addressed to Parley (gate 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addressed {
    Mention,
    ReplyToFinding,
}

/// Gate 1: a mention of one of Parley's handles (word boundary, case-insensitive), or a
/// reply in a thread whose root is a Parley finding when `replyWithoutMention` is on.
pub fn addressed(
    trigger: &Trigger,
    conversation: &Conversation,
    snap: &PrSnapshot,
) -> Option<Addressed> {
    if snap.handles.mentioned_in(&trigger.body) {
        return Some(Addressed::Mention);
    }
    let reply_without_mention = snap.config.config.mention.reply_without_mention;
    (reply_without_mention && trigger.in_reply_to_id.is_some() && conversation.finding.is_some())
        .then_some(Addressed::ReplyToFinding)
}

/// Gate 2: Parley itself, or any `[bot]` / `Bot` account. No bot-to-bot loops.
pub fn is_bot(trigger: &Trigger, snap: &PrSnapshot) -> bool {
    trigger.author.is_bot() || snap.handles.is_self(&trigger.author.login)
}

/// Gate 3, with its short-lived cache of repository permissions.
pub struct Permissions {
    cache: TtlCache<(u64, String, String), Permission>,
}

impl Default for Permissions {
    fn default() -> Self {
        Permissions {
            cache: TtlCache::new(PERMISSION_TTL),
        }
    }
}

impl Permissions {
    /// `mention.allowedUsers` when set; otherwise the PR's author and anyone with at least
    /// `mention.minPermission`. A stranger on a public repository must not be able to
    /// spend its LLM budget. `Err(reason)` says why someone was turned away.
    pub async fn allows(
        &self,
        github: &dyn GitHub,
        snap: &PrSnapshot,
        login: &str,
    ) -> Result<Result<(), String>, ConversationError> {
        let mention = &snap.config.config.mention;
        if !mention.allowed_users.is_empty() {
            return Ok(
                if mention
                    .allowed_users
                    .iter()
                    .any(|u| crate::config::names_login(u, login))
                {
                    Ok(())
                } else {
                    Err(format!("{login} is not in mention.allowedUsers"))
                },
            );
        }
        if snap.author().is_some_and(|a| a.eq_ignore_ascii_case(login)) {
            return Ok(Ok(()));
        }
        let needed = permission(mention.min_permission);
        let level = self.level(github, snap, login).await?;
        Ok(if level >= needed {
            Ok(())
        } else {
            Err(format!(
                "{login} has {level:?} permission; mention.minPermission needs {needed:?}"
            ))
        })
    }

    /// Whether `login` has at least `needed` on the repository (no exception for the PR's
    /// author). `Err(reason)` says what they have.
    pub async fn at_least(
        &self,
        github: &dyn GitHub,
        snap: &PrSnapshot,
        login: &str,
        needed: Permission,
    ) -> Result<Result<(), String>, ConversationError> {
        let level = self.level(github, snap, login).await?;
        Ok(if level >= needed {
            Ok(())
        } else {
            Err(format!("{login} has {level:?} permission"))
        })
    }

    async fn level(
        &self,
        github: &dyn GitHub,
        snap: &PrSnapshot,
        login: &str,
    ) -> Result<Permission, ConversationError> {
        let cache_key = (
            snap.scope.installation_id,
            snap.repo.clone(),
            login.to_ascii_lowercase(),
        );
        if let Some(level) = self.cache.get(&cache_key) {
            return Ok(level);
        }
        let level = match github.get_collaborator_permission(&snap.scope, login).await {
            Ok(found) => found.level(),
            // Not a collaborator (or no such user): no access.
            Err(err) if err.is_absent() => Permission::None,
            Err(err) if err.is_transient() => return Err(err.into()),
            Err(err) => {
                // Fail closed: an unreadable permission is no permission.
                tracing::warn!(repo = %snap.repo, login, error = %err, "permission lookup failed; treating as none");
                return Ok(Permission::None);
            }
        };
        self.cache.put(cache_key, level);
        Ok(level)
    }
}

/// Gate 4 (store half): claim the comment for `owner` (the job's delivery id). A second
/// job for the same comment loses; a queue retry of the same job resumes.
pub async fn claim_reply(
    store: &dyn Store,
    snap: &PrSnapshot,
    comment_id: u64,
    owner: &str,
) -> Result<bool, ConversationError> {
    let claim = store
        .claim_as(&key::reply(&snap.repo, comment_id), owner, REPLY_CLAIM_TTL)
        .await?;
    Ok(claim == Claim::Won)
}

/// Record that Parley answered `comment_id` with `reply_id` (a reply, a note, a queued
/// review), before the job completes. Best effort: GitHub's reply marker is the record of
/// last resort.
pub async fn record_answered(store: &dyn Store, snap: &PrSnapshot, comment_id: u64, reply_id: u64) {
    let key = key::answered(&snap.repo, comment_id);
    if let Err(err) = store
        .claim_as(&key, &format!("reply:{reply_id}"), RECORD_TTL)
        .await
    {
        tracing::warn!(repo = %snap.repo, comment = comment_id, reply_id, error = %err, "could not record the answer in the store; GitHub's marker still says it");
    }
}

/// Gate 4 (first half): whether the store records an answer to `comment_id`.
pub async fn answered_in_store(
    store: &dyn Store,
    snap: &PrSnapshot,
    comment_id: u64,
) -> Result<bool, ConversationError> {
    Ok(store
        .is_claimed(&key::answered(&snap.repo, comment_id))
        .await?)
}

/// Whether a review on request fits the PR's hourly allowance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManualReviews {
    Allowed,
    /// Over `review.manualReviewsPerHour`; `first_of_window` for the first refusal of the
    /// hour, which alone gets a note.
    Capped {
        first_of_window: bool,
    },
}

/// Count a review on request against `review.manualReviewsPerHour` for this PR and clock
/// hour (an atomic increment with a ceiling, so racing requests cannot both get the last
/// one).
pub async fn take_manual_review(
    store: &dyn Store,
    snap: &PrSnapshot,
) -> Result<ManualReviews, ConversationError> {
    let per_hour = u64::from(snap.config.config.review.manual_reviews_per_hour);
    let now = time::OffsetDateTime::now_utc();
    let window = format!(
        "{:04}{:02}{:02}{:02}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour()
    );
    let scope = keys::pr_scope(&snap.repo, snap.number);
    let counter = format!("manual_reviews#{window}");
    if per_hour > 0
        && store
            .increment_within(&scope, &counter, per_hour)
            .await?
            .is_some()
    {
        return Ok(ManualReviews::Allowed);
    }
    let note = format!(
        "manual-review-cap-note#{}#{}#{window}",
        snap.repo, snap.number
    );
    let first_of_window = store.claim(&note, Duration::from_secs(2 * 3600)).await? == Claim::Won;
    Ok(ManualReviews::Capped { first_of_window })
}

/// Outcome of gate 5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnGate {
    /// This answer is turn number `n` of the PR.
    Taken(u64),
    /// A previous attempt at this very comment already took its turn (a retry).
    AlreadyTaken,
    /// The PR has used `mention.conversation.maxTurnsPerPr`.
    LimitReached,
}

/// Gate 5: one atomic increment with a ceiling, so two workers racing for the last turn
/// cannot both get it; plus a per-comment record so a retried job is not charged twice.
///
/// Turns given back ([`give_back_turn`]) raise the ceiling by their number. The refund
/// counter only grows, so a stale read of it gives a lower ceiling, never a higher one:
/// turns taken minus turns given back stays within the limit, with the same atomic
/// guarantee. It is read only when the plain ceiling is reached, so the usual turn still
/// costs two store calls.
pub async fn take_turn(
    store: &dyn Store,
    snap: &PrSnapshot,
    comment_id: u64,
) -> Result<TurnGate, ConversationError> {
    let turn_key = key::turn(&snap.repo, comment_id);
    // Claim the comment's turn first: one call answers "was it counted already?".
    if store.claim(&turn_key, RECORD_TTL).await? == Claim::AlreadyClaimed {
        return Ok(TurnGate::AlreadyTaken);
    }
    let max = u64::from(snap.config.config.mention.max_turns_per_pr);
    let scope = keys::pr_scope(&snap.repo, snap.number);
    let counted = async {
        let mut taken = store.increment_within(&scope, key::TURNS, max).await?;
        if taken.is_none() {
            let refunded = store.counter(&scope, key::TURNS_REFUNDED).await?;
            if refunded > 0 {
                taken = store
                    .increment_within(&scope, key::TURNS, max.saturating_add(refunded))
                    .await?;
            }
        }
        Ok::<_, crate::ports::StoreError>(taken)
    }
    .await;
    let taken = match counted {
        Ok(taken) => taken,
        Err(err) => {
            // Claimed but not counted: without the claim the retry counts the turn; with
            // it, the retry would read it as counted and it never would be. (If the store
            // stays down the release fails too, and that one answer goes uncounted.)
            if let Err(release) = store.release(&turn_key).await {
                tracing::warn!(repo = %snap.repo, comment = comment_id, error = %release, "could not release the turn claim of an uncounted turn");
            }
            return Err(err.into());
        }
    };
    match taken {
        Some(n) => Ok(TurnGate::Taken(n)),
        None => {
            // No turn was taken; a later retry (after the limit is raised) may take one.
            store.release(&turn_key).await?;
            Ok(TurnGate::LimitReached)
        }
    }
}

/// The turns a PR has used: taken minus given back.
pub async fn turns_used(store: &dyn Store, repo: &str, pr: u64) -> Result<u64, ConversationError> {
    let scope = keys::pr_scope(repo, pr);
    let taken = store.counter(&scope, key::TURNS).await?;
    let refunded = store.counter(&scope, key::TURNS_REFUNDED).await?;
    Ok(taken.saturating_sub(refunded))
}

/// Give back the turn an attempt took when its reply did not get posted, so a job that
/// ends in the dead-letter queue does not use up the PR's limit, and its retry takes the
/// turn afresh (counted once). `ambiguous`: the post failed in a way that may have landed
/// (5xx); a refund marker then lets the next attempt charge the turn again if it finds the
/// reply on GitHub ([`recharge_if_landed`]).
///
/// Best effort, logged. The turn claim is released before the refund is added: if the
/// refund then fails, the turn stays lost (as before refunds), but a turn is never given
/// back twice.
pub async fn give_back_turn(
    store: &dyn Store,
    snap: &PrSnapshot,
    comment_id: u64,
    ambiguous: bool,
) {
    let turn_key = key::turn(&snap.repo, comment_id);
    if let Err(err) = store.release(&turn_key).await {
        tracing::warn!(repo = %snap.repo, comment = comment_id, error = %err, "could not release the turn claim; the turn stays used");
        return;
    }
    if ambiguous {
        let refund_key = key::turn_refund(&snap.repo, comment_id);
        if let Err(err) = store.claim(&refund_key, RECORD_TTL).await {
            // Without the marker a landed reply would go uncharged: keep the turn used.
            tracing::warn!(repo = %snap.repo, comment = comment_id, error = %err, "could not mark the refund; the turn stays used");
            return;
        }
    }
    let scope = keys::pr_scope(&snap.repo, snap.number);
    match store.add_to_counter(&scope, key::TURNS_REFUNDED, 1).await {
        Ok(_) => {
            tracing::info!(repo = %snap.repo, pr = snap.number, comment = comment_id, "reply not posted; turn given back");
        }
        Err(err) => {
            tracing::warn!(repo = %snap.repo, comment = comment_id, error = %err, "could not give the turn back; it stays used");
        }
    }
}

/// A previous attempt gave its turn back after a 5xx, yet its reply is on GitHub (the
/// post landed): charge the turn again, once. Best effort, logged. Only reached when a
/// reply marker already answers the comment, so the usual turn pays nothing for it.
pub async fn recharge_if_landed(store: &dyn Store, snap: &PrSnapshot, comment_id: u64) {
    let refund_key = key::turn_refund(&snap.repo, comment_id);
    let result = async {
        if !store.is_claimed(&refund_key).await? {
            return Ok(false);
        }
        // The turn claim makes the charge happen once, whoever gets here first.
        if store
            .claim(&key::turn(&snap.repo, comment_id), RECORD_TTL)
            .await?
            == Claim::AlreadyClaimed
        {
            return Ok(false);
        }
        let scope = keys::pr_scope(&snap.repo, snap.number);
        store.add_to_counter(&scope, key::TURNS, 1).await?;
        store.release(&refund_key).await?;
        Ok::<_, crate::ports::StoreError>(true)
    }
    .await;
    match result {
        Ok(true) => {
            tracing::info!(repo = %snap.repo, pr = snap.number, comment = comment_id, "reply landed despite the failed post; turn charged again");
        }
        Ok(false) => {}
        Err(err) => {
            tracing::warn!(repo = %snap.repo, comment = comment_id, error = %err, "could not charge the landed reply's turn");
        }
    }
}

/// Gate 6: acknowledge with `eyes`. An extra: a failure is logged and the turn goes on.
pub async fn acknowledge(github: &dyn GitHub, snap: &PrSnapshot, trigger: &Trigger) {
    let result = match trigger.surface {
        crate::job::Surface::ReviewComment => {
            github
                .add_review_comment_reaction(&snap.scope, trigger.id, ReactionContent::Eyes)
                .await
        }
        crate::job::Surface::IssueComment => {
            github
                .add_issue_comment_reaction(&snap.scope, trigger.id, ReactionContent::Eyes)
                .await
        }
        // GitHub has no reactions on review bodies.
        crate::job::Surface::ReviewBody => return,
    };
    if let Err(err) = result {
        tracing::warn!(repo = %snap.repo, comment = trigger.id, error = %err, "could not add the eyes reaction; going on");
    }
}
