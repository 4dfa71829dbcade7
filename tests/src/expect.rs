//! What a scenario expects GitHub and the store to hold once the work is done, for the
//! checks that several ways of running Parley (in this process, `parley serve`, the
//! Lambda functions) must pass alike.

use crate::fake_github::FakeGitHub;
use crate::tenants::key;
use parley_core::ports::Store;
use serde_json::Value;

/// The review of `head` happened exactly once however often it was attempted: one review
/// with one inline finding, that finding recorded with the ids GitHub gave it, and one
/// "Parley review" check on the head, completed and failing (the finding is blocking).
pub async fn reviewed_once_with_one_blocking_finding(
    github: &FakeGitHub,
    store: &dyn Store,
    repo: &str,
    pr: u64,
    head: &str,
) {
    let reviews = github.reviews_of(repo, pr, head);
    assert_eq!(reviews.len(), 1, "one review of the head: {reviews:#?}");
    assert_eq!(github.reviews(repo, pr).len(), 1, "no other review");
    let inline: Vec<Value> = github
        .review_comments(repo, pr)
        .into_iter()
        .filter(|c| c["pull_request_review_id"] == reviews[0]["id"])
        .collect();
    assert_eq!(inline.len(), 1, "one inline finding: {inline:#?}");

    let findings = store
        .findings_for_pr(&key(repo), pr)
        .await
        .expect("read the findings");
    assert_eq!(findings.len(), 1, "the finding is recorded: {findings:#?}");
    assert_eq!(findings[0].comment_id, inline[0]["id"].as_u64());
    assert_eq!(findings[0].review_id, reviews[0]["id"].as_u64());

    let checks = github.gate_checks(repo, head);
    assert_eq!(
        checks.len(),
        1,
        "one \"Parley review\" check on the head (none left in progress for good): {checks:#?}"
    );
    assert_eq!(checks[0]["status"], "completed", "{:#?}", checks[0]);
    assert_eq!(
        checks[0]["conclusion"], "failure",
        "a high-severity finding blocks the merge: {:#?}",
        checks[0]
    );
}

/// `text` (a summary, a note, a check run) says every one of `phrases`; the first missing
/// one is named with the whole text.
#[track_caller]
pub fn says_all(text: &str, phrases: &[&str]) {
    for said in phrases {
        assert!(text.contains(said), "missing {said:?} in: {text}");
    }
}
