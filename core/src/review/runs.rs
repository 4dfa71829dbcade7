//! One automatic review per (repo, PR, head SHA), and one per manual request: claiming
//! it, remembering it, and never posting it twice. The two never share a key, so a manual
//! request can neither skip nor stand in for the automatic review that owns the merge gate
//! (see [`manual_key`]).
//!
//! SQS delivers at least once and a Lambda can die after posting. Three guards stack up:
//! the claim in the store (owned by the delivery, so the queue's retry of the same job
//! resumes instead of locking itself out), the run record (a published run is never
//! redone), and GitHub itself (a review whose hidden marker names this head means the
//! review was posted even if the store never heard of it).

use crate::job::{ReviewJob, ReviewRequest, ReviewTrigger, Surface};
use crate::markers::{self, ReplyMarker};
use crate::mention::Handles;
use crate::ports::github::{GitHub, GitHubError, PageLimit, RepoScope, Review};
use crate::ports::{Claim, ReviewRun, RunState, Store, StoreError};
use crate::review::summary::{ReviewMarker, short};
use std::time::Duration;
use time::OffsetDateTime;

/// Longer than a review can take (Lambda's limit is 15 minutes), so a live run is never
/// taken over, and short enough that a dead one frees its head soon.
pub const CLAIM_TTL: Duration = Duration::from_secs(20 * 60);

/// Marker kind on the "already reviewed" answer to a manual request.
pub const DISMISSED: &str = "dismissed";

/// Joins a head SHA and the request in the key of a `@parley full review`. The spelling
/// predates manual incremental runs and is kept so stored full re-reviews still parse.
const RERUN: &str = "+full-";

/// Joins a head SHA and the request in the key of a `@parley review`.
const MANUAL: &str = "+manual-";

/// `run_key` is the run's key: its head SHA for the automatic run, or [`manual_key`] for a
/// manual one.
pub fn claim_key(repo: &str, number: u64, run_key: &str) -> String {
    format!("review#{repo}#{number}#{run_key}")
}

/// The key of a `@parley full review` of a head: the head plus the request's comment id.
pub fn rerun_key(head_sha: &str, request: u64) -> String {
    format!("{head_sha}{RERUN}{request}")
}

/// The key of the full review a head gets when its PR moves to another base branch (see
/// [`crate::review::retarget`]): one per head and new base commit, so a redelivered edit
/// resumes it and moving the PR back and forth reviews each base once. Spelled as a full
/// re-review's, its request the base commit's first 13 hex digits with bit 60 set: above
/// every GitHub comment id (they stay under 2^53), so it names no comment to answer.
pub fn retarget_key(head_sha: &str, base_sha: &str) -> String {
    let digits = base_sha
        .get(..13)
        .and_then(|digits| u64::from_str_radix(digits, 16).ok())
        .unwrap_or(0);
    rerun_key(head_sha, digits | RETARGET_REQUEST)
}

/// Whether a manual run's request is a retarget's (see [`retarget_key`]), not a comment.
pub fn is_retarget_request(request: u64) -> bool {
    request & RETARGET_REQUEST != 0
}

/// Whether run `key` is a retargeted head's full review (see [`retarget_key`]).
pub fn is_retarget_key(key: &str) -> bool {
    parse_key(key).1.is_some_and(is_retarget_request)
}

/// Whether `job` is the review of a head after its PR moved to another base (see
/// [`crate::review::retarget`]): a full review no comment asked for, under a
/// [`retarget_key`].
pub fn is_retarget_job(job: &ReviewJob) -> bool {
    job.trigger == ReviewTrigger::ManualFull && job.rerun_of.as_deref().is_some_and(is_retarget_key)
}

const RETARGET_REQUEST: u64 = 1 << 60;

/// The key of a manual review (`@parley review` or `@parley full review`) of a head: the
/// head plus the request's comment id (0 for a job that names no comment).
///
/// A manual run never uses the head's own key: that key is the automatic run's, whose
/// claim, record and "Parley review" check are the merge gate. Were a manual request to
/// take it first, the head would read as reviewed, the automatic review would be skipped
/// and the gate would be left `neutral` — a way past a required check for anyone allowed
/// to comment. So the manual run gets its own claim, record and check run
/// ([`crate::review::gate::MANUAL_CHECK_NAME`]), and a redelivered request finds its run
/// by this key and does not run it twice.
pub fn manual_key(head_sha: &str, trigger: ReviewTrigger, request: u64) -> String {
    match trigger {
        ReviewTrigger::ManualFull => rerun_key(head_sha, request),
        _ => format!("{head_sha}{MANUAL}{request}"),
    }
}

/// The head SHA a run key reviews, and the request when it is a manual run.
pub fn parse_key(run_key: &str) -> (&str, Option<u64>) {
    match run_key
        .split_once(RERUN)
        .or_else(|| run_key.split_once(MANUAL))
    {
        Some((head, request)) => (head, Some(request.parse().unwrap_or_default())),
        None => (run_key, None),
    }
}

/// Whether a run key is a manual run's (see [`manual_key`]).
pub fn is_manual_key(run_key: &str) -> bool {
    parse_key(run_key).1.is_some()
}

/// The head SHA a run key reviews.
pub fn head_of(run_key: &str) -> &str {
    parse_key(run_key).0
}

/// Claim the run for this delivery. `false` when another delivery holds it.
pub async fn claim(store: &dyn Store, job: &ReviewJob, head_sha: &str) -> Result<bool, StoreError> {
    let key = claim_key(&job.repo.tenant().repo, job.number, head_sha);
    Ok(store.claim_as(&key, &job.delivery_id, CLAIM_TTL).await? == Claim::Won)
}

pub fn trigger_name(trigger: ReviewTrigger) -> &'static str {
    match trigger {
        ReviewTrigger::Opened => "opened",
        ReviewTrigger::Reopened => "reopened",
        ReviewTrigger::ReadyForReview => "ready_for_review",
        ReviewTrigger::Synchronize => "synchronize",
        ReviewTrigger::Unlabeled => "unlabeled",
        ReviewTrigger::ManualIncremental => "manual",
        ReviewTrigger::ManualFull => "manual_full",
        ReviewTrigger::Rerequested => "rerequested",
        ReviewTrigger::LetThrough => "let_through",
        ReviewTrigger::Retargeted => "retargeted",
    }
}

/// The trigger a stored run names (see [`trigger_name`]).
pub fn trigger_from_name(name: &str) -> Option<ReviewTrigger> {
    [
        ReviewTrigger::Opened,
        ReviewTrigger::Reopened,
        ReviewTrigger::ReadyForReview,
        ReviewTrigger::Synchronize,
        ReviewTrigger::Unlabeled,
        ReviewTrigger::ManualIncremental,
        ReviewTrigger::ManualFull,
        ReviewTrigger::Rerequested,
        ReviewTrigger::LetThrough,
        ReviewTrigger::Retargeted,
    ]
    .into_iter()
    .find(|trigger| trigger_name(*trigger) == name)
}

/// The trigger a head's automatic review is queued as when its own job never ran: the
/// PR's first head was lost with its `opened`, a later one with its push.
pub fn lost_trigger(runs: &[ReviewRun]) -> ReviewTrigger {
    if runs.iter().any(|run| !is_manual_key(&run.head_sha)) {
        ReviewTrigger::Synchronize
    } else {
        ReviewTrigger::Opened
    }
}

/// The PR a run's check was made for, from the check's external id ([`claim_key`]:
/// `review#<repo>#<number>#<run key>`). GitHub names a check's PRs only when the head
/// branch is in the same repository, so a fork's PR is known only from here.
pub fn pr_of_check(external_id: &str) -> Option<u64> {
    let rest = external_id.strip_prefix("review#")?;
    let mut parts = rest.rsplitn(3, '#');
    let _run_key = parts.next()?;
    let number = parts.next()?.parse().ok()?;
    parts.next().filter(|repo| !repo.is_empty())?;
    Some(number)
}

/// The run key a check's external id ([`claim_key`]) names.
pub fn run_key_of_check(external_id: &str) -> Option<&str> {
    pr_of_check(external_id)?;
    external_id.rsplit('#').next().filter(|key| !key.is_empty())
}

/// The trigger of a manual run, from its key: a full review or an incremental one.
pub fn manual_trigger_of_key(run_key: &str) -> Option<ReviewTrigger> {
    if run_key.contains(RERUN) {
        Some(ReviewTrigger::ManualFull)
    } else if run_key.contains(MANUAL) {
        Some(ReviewTrigger::ManualIncremental)
    } else {
        None
    }
}

/// Whether `run` is a head's automatic run, published: the one whose review the gate is
/// judged from. Its key is the head's (manual runs have keys of their own); runs stored
/// before manual keys existed may still be manual under the head's key: the trigger
/// tells.
pub fn is_published_automatic(run: &ReviewRun) -> bool {
    run.state == RunState::Published
        && !is_manual_key(&run.head_sha)
        && !is_manual_trigger_name(&run.trigger)
}

/// Whether a stored run's trigger (see [`trigger_name`]) was a manual request.
pub fn is_manual_trigger_name(name: &str) -> bool {
    name == trigger_name(ReviewTrigger::ManualIncremental)
        || name == trigger_name(ReviewTrigger::ManualFull)
}

pub fn is_manual(trigger: ReviewTrigger) -> bool {
    matches!(
        trigger,
        ReviewTrigger::ManualIncremental | ReviewTrigger::ManualFull
    )
}

/// The newest published run of this PR for another head: where an incremental review
/// starts. Manual runs count: what a published manual review covered was reviewed and its
/// findings are on the PR, so the next review diffs from its head. (The merge gate does
/// not rely on this: each head's automatic run concludes its own check.)
pub async fn last_reviewed(
    store: &dyn Store,
    repo: &str,
    number: u64,
    head_sha: &str,
) -> Result<Option<ReviewRun>, StoreError> {
    let runs = store.review_runs(repo, number).await?;
    Ok(runs
        .into_iter()
        .rev()
        .find(|run| run.state == RunState::Published && head_of(&run.head_sha) != head_sha)
        .map(|mut run| {
            run.head_sha = head_of(&run.head_sha).to_string();
            run
        }))
}

/// A review Parley already posted on GitHub for the run `run_key`, found by its summary
/// marker (head SHA, and the request for a full re-review) on a review Parley itself
/// submitted. A review by anyone else carrying the same marker is a forgery: trusting it
/// would skip the real review, record its made-up findings and let the gate pass.
pub async fn review_on_github(
    github: &dyn GitHub,
    scope: &RepoScope,
    number: u64,
    run_key: &str,
    parley: &Handles,
) -> Result<Option<Review>, GitHubError> {
    let (head_sha, request) = parse_key(run_key);
    let reviews = github
        .list_reviews(scope, number, PageLimit::pages(5))
        .await?;
    Ok(reviews.items.into_iter().find(|review| {
        review_marker(review, parley)
            .is_some_and(|marker| marker.head_sha == head_sha && marker.request == request)
    }))
}

/// The summary marker of `review`, when Parley wrote the review.
pub fn review_marker(review: &Review, parley: &Handles) -> Option<ReviewMarker> {
    markers::trusted(
        review.user.as_ref(),
        parley,
        &review.body,
        markers::kind::REVIEW,
    )
}

/// Whether the head of the published automatic `run` stands reviewed only in part, as the
/// gate reads it; `None` when that is not known. The automatic review's own marker says
/// ([`published_partial`]), unless a full review of the same head (`@parley full
/// review`, or the one a Re-run completes a partial review with, see
/// [`crate::review::rerun`]) published complete since: that review read the whole PR at
/// this head, and its findings are the PR's like any other's, so the head has been
/// reviewed in full. A manual incremental review reads only what changed since the last
/// review and completes nothing; nor does the review after a move to another base
/// ([`retarget_key`]), which reads only what the move brought into the diff.
pub async fn head_partial(
    github: &dyn GitHub,
    scope: &RepoScope,
    number: u64,
    run: &ReviewRun,
    runs: &[ReviewRun],
    parley: &Handles,
) -> Result<Option<bool>, GitHubError> {
    let automatic = published_partial(github, scope, number, run, parley).await?;
    if automatic == Some(false) {
        return Ok(automatic);
    }
    let head = head_of(&run.head_sha);
    let full_reviews = runs.iter().filter(|other| {
        other.state == RunState::Published
            && other.review_id.is_some()
            && !is_retarget_key(&other.head_sha)
            && other
                .head_sha
                .split_once(RERUN)
                .is_some_and(|(of, _)| of == head)
    });
    for full in full_reviews {
        if published_partial(github, scope, number, full, parley).await? == Some(false) {
            return Ok(Some(false));
        }
    }
    Ok(automatic)
}

/// Whether the published `run` was partial, as its own review's marker says; `None` when
/// that review is not found (not known). A push with nothing new posted no review, and
/// only a complete review may be quiet (see `review::quiet`). Only a review Parley itself
/// submitted is read: a forged marker claiming `partial: false` would otherwise turn the
/// gate green.
pub async fn published_partial(
    github: &dyn GitHub,
    scope: &RepoScope,
    number: u64,
    run: &ReviewRun,
    parley: &Handles,
) -> Result<Option<bool>, GitHubError> {
    if run.review_id.is_none() {
        return Ok(Some(false));
    }
    Ok(
        review_on_github(github, scope, number, &run.head_sha, parley)
            .await?
            .and_then(|review| review_marker(&review, parley).map(|m| m.partial)),
    )
}

/// Mark a run finished in `state`.
pub async fn finish(
    store: &dyn Store,
    run: &mut ReviewRun,
    state: RunState,
) -> Result<(), StoreError> {
    run.state = state;
    run.finished_at = Some(OffsetDateTime::now_utc());
    store.put_review_run(run).await
}

/// Answer a manual request for a head that was already reviewed: "already reviewed at
/// `<sha>`" with a link, and a hidden marker naming the request, so a redelivered request
/// finds the answer and does not post it again.
pub async fn answer_already_reviewed(
    github: &dyn GitHub,
    scope: &RepoScope,
    job: &ReviewJob,
    run: &ReviewRun,
    parley: &Handles,
) -> Result<(), GitHubError> {
    let Some(request) = &job.request else {
        return Ok(());
    };
    // Parley's answer names the request; the request itself (once marked) names the
    // review, so it is never mistaken for the answer. Only Parley's own comments count: a
    // comment anyone could write must not suppress the answer.
    let answered = |id: u64, user: Option<&crate::ports::github::User>, body: &str| {
        id != request.comment_id
            && markers::trusted::<ReplyMarker>(user, parley, body, DISMISSED)
                .is_some_and(|m| m.reply_to == request.comment_id)
    };
    let link = run
        .review_url
        .as_deref()
        .map(|url| format!(" — [see the review]({url})"))
        .unwrap_or_default();
    let text = format!(
        "Already reviewed at `{}`{link}. Nothing has changed since; push new commits for a new review, or ask {} to review the whole PR again.",
        short(&run.head_sha),
        parley.command("full review")
    );
    let marker = ReplyMarker::new(DISMISSED, request.comment_id);
    let body = markers::append(&text, DISMISSED, &marker);
    let limit = PageLimit::pages(10);
    let answered_before = match request.surface {
        Surface::ReviewComment => github
            .list_review_comments(scope, job.number, None, limit)
            .await?
            .items
            .iter()
            .any(|c| answered(c.id, c.user.as_ref(), &c.body)),
        Surface::IssueComment | Surface::ReviewBody => github
            .list_issue_comments(scope, job.number, None, limit)
            .await?
            .items
            .iter()
            .any(|c| answered(c.id, c.user.as_ref(), &c.body)),
    };
    if !answered_before {
        match request.surface {
            Surface::ReviewComment => github
                .reply_to_review_comment(scope, job.number, request.comment_id, &body)
                .await
                .map(drop),
            Surface::IssueComment | Surface::ReviewBody => github
                .create_issue_comment(scope, job.number, &body)
                .await
                .map(drop),
        }?;
    }
    mark_request_dismissed(github, scope, request, run).await;
    Ok(())
}

/// Append a hidden `dismissed` marker to the request's own comment, naming the review
/// that already covers its head, so the request reads as handled on GitHub itself (and to
/// whatever reads markers later). The visible text is left as written, a comment already
/// marked is left alone, and a failure is only logged: the answer is what matters.
async fn mark_request_dismissed(
    github: &dyn GitHub,
    scope: &RepoScope,
    request: &ReviewRequest,
    run: &ReviewRun,
) {
    // Answers the review that covers the head (always set on a published run).
    let marker = ReplyMarker::new(DISMISSED, run.review_id.unwrap_or_default());
    let id = request.comment_id;
    let outcome = match request.surface {
        Surface::IssueComment | Surface::ReviewComment => {
            append_once(github, scope, request.surface, id, &marker).await
        }
        // A review's body cannot be edited through the port; the answer stands alone.
        Surface::ReviewBody => {
            tracing::debug!(repo = %scope.full_name(), review_id = id, "request is a review body; not marking it");
            Ok(false)
        }
    };
    match outcome {
        Ok(true) => {
            tracing::info!(repo = %scope.full_name(), comment_id = id, "marked the request dismissed by the earlier review")
        }
        Ok(false) => {}
        Err(err) => {
            tracing::warn!(repo = %scope.full_name(), comment_id = id, error = %err, "could not mark the request as dismissed; the answer stands")
        }
    }
}

/// Append `marker` to comment `id` on `surface` unless it already carries one of its kind;
/// whether it was appended.
async fn append_once(
    github: &dyn GitHub,
    scope: &RepoScope,
    surface: Surface,
    id: u64,
    marker: &ReplyMarker,
) -> Result<bool, GitHubError> {
    let body = match surface {
        Surface::IssueComment => github.get_issue_comment(scope, id).await?.body,
        _ => github.get_review_comment(scope, id).await?.body,
    };
    if markers::find::<ReplyMarker>(&body, &marker.kind).is_some() {
        return Ok(false);
    }
    let body = markers::append(&body, &marker.kind, marker);
    match surface {
        Surface::IssueComment => github
            .update_issue_comment(scope, id, &body)
            .await
            .map(drop),
        _ => github
            .update_review_comment(scope, id, &body)
            .await
            .map(drop),
    }?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rerun_keys_name_their_head_and_request() {
        let key = rerun_key("a1b2", 42);
        assert_eq!(parse_key(&key), ("a1b2", Some(42)));
        assert_eq!(parse_key("a1b2"), ("a1b2", None));
        assert_eq!(head_of(&key), "a1b2");
        assert_ne!(claim_key("o/r", 1, &key), claim_key("o/r", 1, "a1b2"));
    }

    /// A retargeted head's full review has a run per base commit, a full review's kind of
    /// key whose request no comment id can be.
    #[test]
    fn retarget_keys_are_one_per_base_and_name_no_comment() {
        let base = "0123456789abcdef0123456789abcdef01234567";
        let key = retarget_key("a1b2", base);
        assert_eq!(retarget_key("a1b2", base), key, "a redelivery resumes it");
        assert_ne!(retarget_key("a1b2", "f0f0f0f0f0f0f0f0"), key);
        let (head, request) = parse_key(&key);
        assert_eq!(head, "a1b2");
        assert!(request.is_some_and(is_retarget_request));
        assert!(
            is_retarget_key(&key)
                && !is_retarget_key("a1b2")
                && !is_retarget_key(&rerun_key("a1b2", 42))
        );
        assert!(request.is_some_and(|r| r > 1 << 53), "above any comment id");
        assert_eq!(manual_trigger_of_key(&key), Some(ReviewTrigger::ManualFull));
        assert!(!is_retarget_request(42) && !is_retarget_request((1 << 53) - 1));
        // A base that is not hex (never from GitHub) still gets a key.
        assert!(
            parse_key(&retarget_key("a1b2", "main"))
                .1
                .is_some_and(is_retarget_request)
        );
    }

    /// A check's external id is its run's claim key: it names the PR, whatever the repo
    /// key and run key look like; anything else names none.
    #[test]
    fn a_checks_external_id_names_its_pr() {
        for run_key in ["a1b2", &manual_key("a1b2", ReviewTrigger::ManualFull, 7)] {
            for repo in ["repo:1", "o/r"] {
                assert_eq!(pr_of_check(&claim_key(repo, 42, run_key)), Some(42));
            }
        }
        let manual = manual_key("a1b2", ReviewTrigger::ManualIncremental, 7);
        let external_id = claim_key("o/r", 42, &manual);
        assert_eq!(run_key_of_check(&external_id), Some(manual.as_str()));
        assert_eq!(
            manual_trigger_of_key(&manual),
            Some(ReviewTrigger::ManualIncremental)
        );
        assert_eq!(
            manual_trigger_of_key(&rerun_key("a1b2", 7)),
            Some(ReviewTrigger::ManualFull)
        );
        assert_eq!(manual_trigger_of_key("a1b2"), None);
        assert_eq!(run_key_of_check("review#o/r#x#a1b2"), None);
        for other in [
            "",
            "review#",
            "review#42#a1b2",
            "review#o/r#x#a1b2",
            "job#o/r#42#a",
        ] {
            assert_eq!(pr_of_check(other), None, "{other}");
        }
    }

    #[test]
    fn stored_trigger_names_read_back() {
        for trigger in [
            ReviewTrigger::Opened,
            ReviewTrigger::Synchronize,
            ReviewTrigger::ManualFull,
            ReviewTrigger::Rerequested,
        ] {
            assert_eq!(trigger_from_name(trigger_name(trigger)), Some(trigger));
        }
        assert_eq!(trigger_from_name("bogus"), None);
    }

    #[test]
    fn manual_keys_never_collide_with_the_automatic_run() {
        let incremental = manual_key("a1b2", ReviewTrigger::ManualIncremental, 42);
        let full = manual_key("a1b2", ReviewTrigger::ManualFull, 42);
        assert_eq!(
            full,
            rerun_key("a1b2", 42),
            "stored full re-reviews still match"
        );
        for key in [&incremental, &full] {
            assert_eq!(parse_key(key), ("a1b2", Some(42)));
            assert!(is_manual_key(key));
            assert_ne!(claim_key("o/r", 1, key), claim_key("o/r", 1, "a1b2"));
        }
        assert_ne!(incremental, full);
        assert!(!is_manual_key("a1b2"));
        assert_eq!(
            parse_key(&manual_key("a1b2", ReviewTrigger::ManualIncremental, 0)),
            ("a1b2", Some(0))
        );
    }
}
