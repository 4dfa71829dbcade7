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
    a_finding_reopened_while_queued_fails_the_queue_commit,
    rerun_on_the_queue_commit_judges_it_again,
    a_branch_named_like_the_queues_moves_no_conclusion,
    rerun_all_on_a_queue_commit_judges_it_only_where_the_queue_asked,
    a_pr_the_queue_never_asked_about_is_not_looked_for_in_it,
);

/// The merge queue's commit for PR #42 at HEAD.
const GROUP: &str = "9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a";

/// The queue's branch for PR #42: it names the commit the group is built on.
fn queue_branch(number: u64) -> String {
    format!("gh-readonly-queue/main/pr-{number}-{BASE}")
}

fn queued() -> Job {
    let payload = deliveries::merge_group(&source(), PR, GROUP);
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

/// The queue merges on its own commit's check, which said `success` when it asked: a
/// thread reopened while the PR waits there fails that commit too (and only the commits
/// the queue tests this PR on), so the queue drops the PR rather than merge it.
async fn a_finding_reopened_while_queued_fails_the_queue_commit(h: ReviewHarness) {
    let finding = h.review_opened_with_a_blocking_finding().await;
    let root = finding.comment_id.expect("posted inline");
    let talk = h.conversation();
    talk.handle(thread_job(root, true, "t-1"))
        .await
        .expect("the thread resolved");
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "success");
    h.github.set_branch(REPO, &queue_branch(PR), GROUP);
    assert_eq!(queue_judged(&h).await["conclusion"], "success");
    let other = "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b";
    h.github.set_branch(REPO, &queue_branch(420), other);

    talk.handle(thread_job(root, false, "t-2"))
        .await
        .expect("the thread reopened");
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "failure");
    let checks = h.gate_checks(GROUP);
    assert_eq!(checks.len(), 2, "{checks:#?}");
    assert_eq!(checks[1]["conclusion"], "failure", "{checks:#?}");
    parley_tests::expect::says_all(&checks[1]["output"].to_string(), &[SQL_TITLE]);
    assert!(h.gate_checks(other).is_empty(), "another PR's queue commit");

    // Out of the queue (its branch gone), nothing is carried.
    h.github.delete_branch(REPO, &queue_branch(PR));
    talk.handle(thread_job(root, true, "t-3"))
        .await
        .expect("the thread resolved again");
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "success");
    assert_eq!(h.gate_checks(GROUP).len(), 2);
}

/// "Re-run" on Parley's check on the queue's commit judges that commit again as the PR's
/// gate stands (GitHub names the queue's branch, not the PR, on that check).
async fn rerun_on_the_queue_commit_judges_it_again(h: ReviewHarness) {
    let finding = h.review_opened_with_a_blocking_finding().await;
    let gate = queue_judged(&h).await;
    assert_eq!(gate["conclusion"], "failure");
    let talk = h.conversation();
    talk.handle(thread_job(finding.comment_id.expect("inline"), true, "t-1"))
        .await
        .expect("the thread resolved");
    let mut payload = parley_tests::webhook_example("check_run", "rerequested.payload.json");
    source().stamp(&mut payload);
    payload["check_run"]["name"] = "Parley review".into();
    payload["check_run"]["head_sha"] = GROUP.into();
    payload["check_run"]["external_id"] = gate["external_id"].clone();
    payload["check_run"]["pull_requests"] = serde_json::json!([]);
    payload["check_run"]["check_suite"]["head_branch"] = queue_branch(PR).into();
    payload["check_run"]["check_suite"]["head_sha"] = GROUP.into();
    let job = deliveries::job("check_run", "rr-1", &payload);
    assert!(
        matches!(&job, Job::Bookkeeping(_)),
        "a re-run on the queue's commit is the queue's: {job:?}"
    );
    talk.handle(job).await.expect("judged again");
    let checks = h.gate_checks(GROUP);
    assert_eq!(checks.len(), 2, "{checks:#?}");
    assert_eq!(checks[1]["conclusion"], "success", "{checks:#?}");
}

/// Anyone who may push can make a branch named like the queue's: one for PR #42 pointing
/// at another PR's failing head gets nothing carried when #42's gate passes, even beside a
/// check another App named "Parley review" and gave #42's external id there.
async fn a_branch_named_like_the_queues_moves_no_conclusion(h: ReviewHarness) {
    let finding = h.review_opened_with_a_blocking_finding().await;
    // The queue asked about #42 (on its own commit, which no branch names now).
    assert_eq!(queue_judged(&h).await["conclusion"], "failure");
    let elsewhere = "6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e";
    h.github.set_branch(REPO, &queue_branch(PR), elsewhere);
    let own = h.latest_gate(HEAD)["external_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let forged = own.replace(HEAD, elsewhere);
    assert_ne!(forged, own);
    h.github
        .add_foreign_check(REPO, elsewhere, "Parley review", &forged);
    h.conversation()
        .handle(thread_job(finding.comment_id.expect("inline"), true, "t-1"))
        .await
        .expect("the thread resolved");
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "success");
    assert_eq!(h.github.requests_to("GET", "/git/matching-refs/").len(), 1);
    let there = h.gate_checks(elsewhere);
    assert_eq!(there.len(), 1, "only the foreign check: {there:#?}");
    assert_eq!(there[0]["app"]["slug"], "someone-else");
}

/// "Re-run all checks" on a queue commit's suite names only its branch: the commit is
/// judged again where Parley judged it for the PR when the queue asked, and a commit on a
/// branch merely named like the queue's is left alone.
async fn rerun_all_on_a_queue_commit_judges_it_only_where_the_queue_asked(h: ReviewHarness) {
    h.review_opened().await;
    assert_eq!(queue_judged(&h).await["conclusion"], "success");
    let rerun_all = |sha: &str| {
        let mut payload = parley_tests::webhook_example("check_suite", "rerequested.payload.json");
        source().stamp(&mut payload);
        payload["check_suite"]["head_sha"] = sha.into();
        payload["check_suite"]["head_branch"] = queue_branch(PR).into();
        payload["check_suite"]["pull_requests"] = serde_json::json!([]);
        deliveries::job("check_suite", &format!("rr-{sha}"), &payload)
    };
    let talk = h.conversation();
    talk.handle(rerun_all(GROUP)).await.expect("judged again");
    assert_eq!(h.gate_checks(GROUP).len(), 2);
    let elsewhere = "6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e";
    talk.handle(rerun_all(elsewhere))
        .await
        .expect("nothing to do");
    assert!(h.gate_checks(elsewhere).is_empty());
}

/// A PR the merge queue never asked about has no queue commit to carry its gate to: a
/// judgement of its gate does not look for one (no `git/matching-refs` call), even where
/// a branch is named like the queue's for it.
async fn a_pr_the_queue_never_asked_about_is_not_looked_for_in_it(h: ReviewHarness) {
    let finding = h.review_opened_with_a_blocking_finding().await;
    h.github.set_branch(REPO, &queue_branch(PR), GROUP);
    h.conversation()
        .handle(thread_job(finding.comment_id.expect("inline"), true, "t-1"))
        .await
        .expect("the thread resolved");
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "success");
    assert!(
        h.github
            .requests_to("GET", "/git/matching-refs/")
            .is_empty()
    );
    assert!(h.gate_checks(GROUP).is_empty());
}
