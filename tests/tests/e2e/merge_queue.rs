//! GitHub's merge queue asks for the required checks on a commit of its own for each
//! queued PR: the webhook's `merge_group` delivery becomes a job, and the worker concludes
//! "Parley review" on that commit as the PR's gate stands, without reviewing anything.

use parley_core::Job;
use parley_core::job::ReviewTrigger;
use parley_core::ports::{JobError, JobHandler};
use parley_tests::deliveries;
use parley_tests::fake_github::Injected;
use parley_tests::review_harness::*;
use serde_json::Value;

parley_tests::review_on_both_stores!(
    a_pr_whose_gate_passes_passes_on_the_queue_commit,
    an_open_blocking_finding_fails_the_queue_commit,
    a_head_never_reviewed_is_not_reviewed_on_the_queue_commit,
    github_trouble_fails_the_job_for_the_queue_to_try_again,
);

/// The merge queue's commit for PR #42 at HEAD.
const GROUP: &str = "9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a";

fn queued() -> Job {
    let payload = deliveries::merge_group(&source(), PR, HEAD, GROUP);
    deliveries::job("merge_group", "mq-1", &payload)
}

/// Deliver the queue's request for checks; the one "Parley review" on its commit after.
async fn queue_judged(h: &ReviewHarness) -> Value {
    h.conversation()
        .handle(queued())
        .await
        .expect("the queue's commit judged");
    group_gate(h)
}

/// The one "Parley review" on the queue's commit.
fn group_gate(h: &ReviewHarness) -> Value {
    let checks = h.gate_checks(GROUP);
    assert_eq!(checks.len(), 1, "{checks:#?}");
    checks[0].clone()
}

async fn a_pr_whose_gate_passes_passes_on_the_queue_commit(h: ReviewHarness) {
    h.review_opened().await;
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "success");
    let calls = h.llm.prompts().len();
    let gate = queue_judged(&h).await;
    assert_eq!(gate["conclusion"], "success", "{gate:#?}");
    assert_eq!(gate["status"], "completed");
    parley_tests::expect::says_all(
        &gate["output"]["summary"].to_string(),
        &["the merge queue asked for it on its commit for this PR"],
    );
    assert_eq!(h.llm.prompts().len(), calls, "nothing is reviewed again");
    assert_eq!(
        h.gate_checks(HEAD).len(),
        1,
        "the PR's own check is left alone"
    );
}

/// A blocking finding the PR still has open fails the queue's commit, whatever the PR's
/// check said when it was queued (here its thread was resolved and then reopened).
async fn an_open_blocking_finding_fails_the_queue_commit(h: ReviewHarness) {
    h.review_opened_with_a_blocking_finding().await;
    let gate = queue_judged(&h).await;
    assert_eq!(gate["conclusion"], "failure", "{gate:#?}");
    parley_tests::expect::says_all(&gate["output"].to_string(), &[SQL_TITLE]);
}

/// No review of the head published (the model was down): the queue's commit is "not
/// reviewed", `neutral` as the head's own check, never a pass Parley did not give.
async fn a_head_never_reviewed_is_not_reviewed_on_the_queue_commit(h: ReviewHarness) {
    h.llm.fail("", 500);
    h.run(job(ReviewTrigger::Opened, HEAD, "d-1"))
        .await
        .expect_err("the model is down");
    let gate = queue_judged(&h).await;
    assert_eq!(gate["conclusion"], "neutral", "{gate:#?}");
    parley_tests::expect::says_all(
        &gate["output"].to_string(),
        &["no review of this PR's head `a1a1a1a` by Parley has published"],
    );
}

/// GitHub will not take the check: the job fails as transient, for the queue to deliver
/// it again, and the retry concludes it.
async fn github_trouble_fails_the_job_for_the_queue_to_try_again(h: ReviewHarness) {
    h.review_opened().await;
    h.github.inject(Injected::answering(
        "POST",
        format!("/repos/{REPO}/check-runs"),
        502,
        10,
    ));
    let err = h
        .conversation()
        .handle(queued())
        .await
        .expect_err("GitHub is down");
    assert!(matches!(err, JobError::Transient(_)), "{err:?}");
    assert!(h.gate_checks(GROUP).is_empty());
    h.github.clear_injected();
    assert_eq!(queue_judged(&h).await["conclusion"], "success", "the retry");
}
