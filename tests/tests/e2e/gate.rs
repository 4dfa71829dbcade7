//! The merge gate over the PR's life: open blocking findings of earlier reviews keep
//! "Parley review" at `failure` on later heads, and the gate is judged again when people
//! act on a finding (its thread resolved or reopened, a dispute conceded). The review and
//! conversation workers run end to end against the fake GitHub and fake LLM, sharing one
//! store. Every scenario runs on SQLite and on DynamoDB (moto).

use parley_core::job::Job;
use parley_core::job::ReviewTrigger;
use parley_core::ports::github::{CheckConclusion, RepoScope};
use parley_core::ports::{Finding, FindingState, JobHandler, ReviewRun, RunState};
use parley_core::review::regate::{RegateCause, Regated, regate};
use parley_core::review::runs;
use parley_tests::fake_github::Injected;
use parley_tests::review_harness::*;
use parley_tests::tenants::key;
use parley_tests::tripwire::HoldPoint;
use serde_json::json;

parley_tests::review_on_both_stores!(
    open_blocking_finding_keeps_failing_after_an_unrelated_push,
    a_long_list_of_open_findings_in_japanese_still_concludes_the_check,
    a_team_that_turns_quiet_pushes_off_gets_a_review_for_every_push,
    resolving_the_thread_lifts_the_gate_and_unresolving_restores_it,
    conceded_dispute_lifts_the_gate,
    no_published_automatic_review_of_the_head_means_no_regate,
    github_trouble_while_regating_never_fails_the_job_or_the_gate,
    a_rerun_of_a_failed_review_reviews_the_head_and_then_only_judges_it,
    a_rerun_of_an_older_head_or_a_head_never_reviewed,
    a_rerun_of_a_partial_review_completes_it_once,
    a_complete_rerun_of_a_partial_review_finding_nothing_passes_the_gate,
    a_full_review_by_hand_completes_a_partial_head,
    a_blocking_finding_of_a_manual_review_fails_the_gate_at_once,
    a_rerun_of_a_failed_manual_review_answers_its_request,
    a_team_that_holds_incomplete_reviews_waits_for_a_complete_one,
    a_push_whose_review_fails_keeps_an_open_blocking_finding_failing,
    a_held_head_is_let_through_by_a_maintainer_not_its_author,
    a_failed_head_let_through_stays_let_through_when_its_review_is_retried,
    a_review_left_running_by_a_dead_worker_can_be_let_through,
    a_let_through_racing_the_retry_of_its_review_does_not_stand_over_it,
    a_head_the_budget_held_stays_let_through_when_it_is_run_again,
    a_let_through_head_concludes_in_its_newest_check_however_its_run_got_there,
    a_let_through_head_whose_checks_github_will_not_list_concludes_in_a_new_check,
);

fn blocking() -> String {
    reply(&[finding("src/db.rs", 3, "high", 90, SQL_TITLE)])
}

/// Push HEAD2, which only adds a README the passes find nothing in.
fn push_unrelated_commit(h: &ReviewHarness) {
    h.push_added_file("README.md", README_PATCH);
}

async fn stored(h: &ReviewHarness, finding: &Finding) -> Finding {
    h.store
        .finding_by_comment(&key(REPO), finding.comment_id.expect("comment id"))
        .await
        .expect("store")
        .expect("finding")
}

async fn open_blocking_finding_keeps_failing_after_an_unrelated_push(h: ReviewHarness) {
    let old = h.review_opened_with_a_blocking_finding().await;
    push_unrelated_commit(&h);
    h.run(job(ReviewTrigger::Synchronize, HEAD2, "d-2"))
        .await
        .expect("review of HEAD2");

    // The incremental review found nothing new: no review, no notification; its check
    // says what it reviewed...
    assert_eq!(h.reviews().len(), 1, "a push with nothing new stays quiet");
    assert_eq!(h.inline_comments().len(), 1);
    let gate = h.latest_gate(HEAD2);
    let said = gate["output"]["summary"].as_str().unwrap_or_default();
    assert!(
        said.contains("Reviewed `a1a1a1a`…`c2c2c2c` (`README.md`): nothing new to say"),
        "{said}"
    );
    // ...but the old finding is still open, so HEAD2 does not pass the gate.
    assert_eq!(gate["status"], "completed");
    assert_eq!(gate["conclusion"], "failure", "{gate:#?}");
    let text = gate["output"]["text"].as_str().unwrap_or_default();
    assert!(text.contains(SQL_TITLE), "{text}");
    let link = format!(
        "https://github.com/{REPO}/pull/{PR}#discussion_r{}",
        old.comment_id.unwrap_or_default()
    );
    assert!(text.contains(&link), "{text}");
    assert!(text.contains("`src/db.rs:3`"), "{text}");
}

/// GitHub takes at most 65,535 bytes in a check's text. 250 open blocking findings
/// titled in Japanese are fewer characters than that and more bytes: the check concludes
/// all the same, its list cut at a line and saying so (refused, the gate would never
/// conclude and the review would be retried to the same refusal).
async fn a_long_list_of_open_findings_in_japanese_still_concludes_the_check(h: ReviewHarness) {
    let old = h.review_opened_with_a_blocking_finding().await;
    for i in 0..250u32 {
        let mut more = old.clone();
        more.id = format!("{}-{i}", old.id);
        more.fingerprint = format!("{}-{i}", old.fingerprint);
        more.site = format!("{}-{i}", old.site);
        more.comment_id = old.comment_id.map(|id| id + 1_000 + u64::from(i));
        more.line = 100 + i;
        more.title = format!(
            "{i}: {}",
            "検証されていない入力がクエリに渡される".repeat(4)
        );
        h.store.put_finding(&more).await.expect("store");
    }
    push_unrelated_commit(&h);
    h.run(job(ReviewTrigger::Synchronize, HEAD2, "d-2"))
        .await
        .expect("review of HEAD2");
    let gate = h.latest_gate(HEAD2);
    assert_eq!(
        (&gate["status"], &gate["conclusion"]),
        (&json!("completed"), &json!("failure"))
    );
    let title = gate["output"]["title"].as_str().unwrap_or_default();
    assert!(
        title.ends_with("251 blocking from earlier reviews still open"),
        "{title}"
    );
    let text = gate["output"]["text"].as_str().unwrap_or_default();
    assert!(
        text.len() <= 65_535 && text.len() > 60_000,
        "{}",
        text.len()
    );
    assert!(text.ends_with("and this was longer.*"), "{text}");
}

async fn a_team_that_turns_quiet_pushes_off_gets_a_review_for_every_push(h: ReviewHarness) {
    h.config("review:\n  quietPushes: false\n");
    h.review_opened_with_a_blocking_finding().await;
    push_unrelated_commit(&h);
    h.run(job(ReviewTrigger::Synchronize, HEAD2, "d-2"))
        .await
        .expect("review of HEAD2");
    let reviews = h.reviews();
    assert_eq!(reviews.len(), 2, "the push is said in a review");
    let second = reviews[1]["body"].as_str().unwrap_or_default();
    assert!(second.contains("Files reviewed: `README.md`\n"), "{second}");
    assert_eq!(h.latest_gate(HEAD2)["conclusion"], "failure");
}

async fn resolving_the_thread_lifts_the_gate_and_unresolving_restores_it(h: ReviewHarness) {
    let old = h.review_opened_with_a_blocking_finding().await;
    push_unrelated_commit(&h);
    h.run(job(ReviewTrigger::Synchronize, HEAD2, "d-2"))
        .await
        .expect("review of HEAD2");
    assert_eq!(h.latest_gate(HEAD2)["conclusion"], "failure");
    let before = h.gate_checks(HEAD2).len();
    let root = old.comment_id.expect("comment id");
    let talk = h.conversation();
    // A maintainer resolves it (the harness gives the thread events' sender write
    // access; the PR's author could not, without changing the code).

    // Resolved: the finding follows its thread, and HEAD2 is judged again.
    talk.handle(thread_job(root, true, "t-1"))
        .await
        .expect("bookkeeping job");
    let finding = stored(&h, &old).await;
    assert_eq!(finding.state, FindingState::Resolved);
    assert_eq!(
        finding.state_changed_by.as_deref(),
        Some(thread_actor().as_str())
    );
    assert!(finding.state_changed_at.is_some());
    let checks = h.gate_checks(HEAD2);
    assert_eq!(checks.len(), before + 1, "{checks:#?}");
    let gate = checks.last().cloned().unwrap_or_default();
    assert_eq!(gate["status"], "completed");
    assert_eq!(gate["conclusion"], "success", "{gate:#?}");
    // The older head is not judged again: only the current head matters.
    assert_eq!(h.gate_checks(HEAD).len(), 1);

    // Unresolved: open again, and failing again.
    talk.handle(thread_job(root, false, "t-2"))
        .await
        .expect("bookkeeping job");
    assert_eq!(stored(&h, &old).await.state, FindingState::Open);
    let gate = h.latest_gate(HEAD2);
    assert_eq!(h.gate_checks(HEAD2).len(), before + 2);
    assert_eq!(gate["conclusion"], "failure", "{gate:#?}");
    let text = gate["output"]["text"].as_str().unwrap_or_default();
    assert!(text.contains(SQL_TITLE), "{text}");

    // A redelivered event that changes nothing judges nothing again.
    talk.handle(thread_job(root, false, "t-2"))
        .await
        .expect("bookkeeping job");
    assert_eq!(h.gate_checks(HEAD2).len(), before + 2);
}

async fn conceded_dispute_lifts_the_gate(h: ReviewHarness) {
    let old = h.review_opened_with_a_blocking_finding().await;
    let before = h.gate_checks(HEAD).len();
    h.github.set_permission(REPO, "bob", "write");
    h.llm.answer(
        CONVERSATION,
        &json!({
            "reply": "You are right: the id is an integer key, so this cannot inject.",
            "resolution": "concede",
        })
        .to_string(),
    );
    let root = old.comment_id.expect("comment id");
    let job = reply_in_thread(
        &h,
        root,
        "bob",
        "This is wrong: id is an integer key, never user input.",
    );
    h.conversation()
        .handle(job)
        .await
        .expect("conversation turn");

    let finding = stored(&h, &old).await;
    assert_eq!(finding.state, FindingState::WontFix);
    assert_eq!(finding.state_changed_by.as_deref(), Some("bob"));
    let checks = h.gate_checks(HEAD);
    assert_eq!(checks.len(), before + 1, "{checks:#?}");
    let gate = checks.last().cloned().unwrap_or_default();
    assert_eq!(gate["status"], "completed");
    assert_eq!(gate["conclusion"], "success", "{gate:#?}");
}

async fn no_published_automatic_review_of_the_head_means_no_regate(h: ReviewHarness) {
    let old = h.review_opened_with_a_blocking_finding().await;
    // A push whose automatic review has not run yet.
    push_unrelated_commit(&h);
    let checks_before = h.check_runs().len();
    let root = old.comment_id.expect("comment id");
    h.conversation()
        .handle(thread_job(root, true, "t-1"))
        .await
        .expect("bookkeeping job");
    assert_eq!(stored(&h, &old).await.state, FindingState::Resolved);
    assert_eq!(
        h.check_runs().len(),
        checks_before,
        "nothing judged: {:#?}",
        h.check_runs()
    );
    let scope = RepoScope::new(INSTALLATION, OWNER, NAME).with_ids(
        parley_tests::tenants::repo_id(REPO),
        parley_tests::tenants::owner_id(OWNER),
    );
    assert!(
        matches!(
            regate(&h.services, &scope, PR, RegateCause::FindingChanged).await,
            Regated::Skipped(_)
        ),
        "nothing to judge on HEAD2 yet"
    );

    // A manual review of HEAD2 is advice, not the gate: still nothing to judge.
    h.run(h.requested("bob", ReviewTrigger::ManualIncremental, HEAD2, "m-1"))
        .await
        .expect("manual review");
    assert_eq!(h.reviews().len(), 2, "the manual review was posted");
    h.conversation()
        .handle(thread_job(root, false, "t-2"))
        .await
        .expect("bookkeeping job");
    assert_eq!(stored(&h, &old).await.state, FindingState::Open);
    assert!(h.gate_checks(HEAD2).is_empty(), "{:#?}", h.check_runs());
    assert_eq!(h.gate_checks(HEAD).len(), 1);
    assert!(matches!(
        regate(&h.services, &scope, PR, RegateCause::FindingChanged).await,
        Regated::Skipped(_)
    ));
}

fn outage(h: &ReviewHarness, method: &'static str, path: String) {
    h.github.clear_injected();
    h.github.inject(Injected::answering(method, path, 500, 10));
}

async fn github_trouble_while_regating_never_fails_the_job_or_the_gate(h: ReviewHarness) {
    let old = h.review_opened_with_a_blocking_finding().await;
    let root = old.comment_id.expect("comment id");
    let talk = h.conversation();
    let conclusions = |h: &ReviewHarness| -> Vec<String> {
        h.gate_checks(HEAD)
            .iter()
            .map(|c| c["conclusion"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(conclusions(&h), ["failure"]);

    // The PR cannot be read: whether the resolution counts cannot be told, so the job
    // fails (the queue retries it) and the finding stays as it was.
    outage(&h, "GET", format!("/repos/{REPO}/pulls/{PR}"));
    let err = talk
        .handle(thread_job(root, true, "t-1"))
        .await
        .expect_err("retried once GitHub answers");
    assert!(
        matches!(err, parley_core::ports::JobError::Transient(_)),
        "{err:?}"
    );
    assert_eq!(stored(&h, &old).await.state, FindingState::Open);
    assert_eq!(conclusions(&h), ["failure"]);
    assert!(
        !h.github
            .requests_to("GET", &format!("/repos/{REPO}/pulls/{PR}"))
            .is_empty()
    );
    // The retry once GitHub answers: resolved, and judged again.
    h.github.clear_injected();
    talk.handle(thread_job(root, true, "t-1"))
        .await
        .expect("bookkeeping job");
    assert_eq!(stored(&h, &old).await.state, FindingState::Resolved);
    assert_eq!(conclusions(&h), ["failure", "success"]);

    // Reopened while check runs cannot be created: same, the previous check stands.
    outage(&h, "POST", "/check-runs".to_string());
    talk.handle(thread_job(root, false, "t-2"))
        .await
        .expect("bookkeeping job succeeds despite GitHub");
    assert_eq!(stored(&h, &old).await.state, FindingState::Open);
    assert_eq!(conclusions(&h), ["failure", "success"]);

    // Resolved while the review (whose marker says whether it was partial) cannot be
    // read: not known is never judged, and never `failure`.
    outage(&h, "GET", format!("/pulls/{PR}/reviews"));
    talk.handle(thread_job(root, true, "t-3"))
        .await
        .expect("bookkeeping job succeeds despite GitHub");
    assert_eq!(stored(&h, &old).await.state, FindingState::Resolved);
    assert_eq!(
        conclusions(&h),
        ["failure", "success"],
        "{:#?}",
        h.check_runs()
    );
    let scope = RepoScope::new(INSTALLATION, OWNER, NAME).with_ids(
        parley_tests::tenants::repo_id(REPO),
        parley_tests::tenants::owner_id(OWNER),
    );
    assert!(matches!(
        regate(&h.services, &scope, PR, RegateCause::FindingChanged).await,
        Regated::Failed(_)
    ));
    assert_eq!(conclusions(&h), ["failure", "success"]);

    // The outage ends: the next judgment goes through.
    h.github.clear_injected();
    assert_eq!(
        regate(&h.services, &scope, PR, RegateCause::FindingChanged).await,
        Regated::Concluded(CheckConclusion::Success)
    );
    assert_eq!(conclusions(&h), ["failure", "success", "success"]);
}

/// "Re-run" on the check of a review that failed (the model down through the queue's
/// retries): once the model is back, the head is reviewed and a new check gives the
/// verdict the failed run's `neutral` never gave. Pressed again, the published review's
/// gate is judged again: a new check, no model call, nothing posted twice.
async fn a_rerun_of_a_failed_review_reviews_the_head_and_then_only_judges_it(h: ReviewHarness) {
    h.llm.fail("", 500);
    let failed = h.run(job(ReviewTrigger::Opened, HEAD, "d-1")).await;
    assert!(failed.is_err(), "the review fails: {failed:?}");
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "neutral");
    assert!(h.reviews().is_empty());

    h.llm.remove_rules("");
    h.llm
        .answer_in_turn(SECURITY, &[&blocking(), &reply(&[]), &reply(&[])]);
    h.run(job(ReviewTrigger::Rerequested, HEAD, "r-1"))
        .await
        .expect("the re-run");
    assert_eq!(h.reviews().len(), 1, "the head is reviewed");
    assert_eq!(h.findings().await.len(), 1);
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "failure");

    let calls = h.llm.prompts().len();
    let checks = h.gate_checks(HEAD).len();
    h.run(job(ReviewTrigger::Rerequested, HEAD, "r-2"))
        .await
        .expect("the second re-run");
    assert_eq!(h.llm.prompts().len(), calls, "no model call");
    assert_eq!(h.reviews().len(), 1, "nothing posted again");
    assert_eq!(h.gate_checks(HEAD).len(), checks + 1, "a new check");
    let gate = h.latest_gate(HEAD);
    assert_eq!(gate["status"], "completed");
    assert_eq!(gate["conclusion"], "failure", "{gate:#?}");
}

/// A re-run of a head the PR has moved on from changes nothing (the newer head has its
/// own check); a head whose automatic review never ran (its job lost) is reviewed.
async fn a_rerun_of_an_older_head_or_a_head_never_reviewed(h: ReviewHarness) {
    h.llm
        .answer_in_turn(SECURITY, &[&blocking(), &reply(&[]), &reply(&[])]);
    h.run(job(ReviewTrigger::Rerequested, HEAD, "r-1"))
        .await
        .expect("the re-run of a head never reviewed");
    assert_eq!(h.reviews().len(), 1, "reviewed as its own job would have");
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "failure");

    push_unrelated_commit(&h);
    let checks = h.gate_checks(HEAD).len();
    let calls = h.llm.prompts().len();
    h.run(job(ReviewTrigger::Rerequested, HEAD, "r-2"))
        .await
        .expect("the re-run of the older head");
    assert_eq!(
        h.gate_checks(HEAD).len(),
        checks,
        "the older head is not judged"
    );
    assert!(
        h.gate_checks(HEAD2).is_empty(),
        "nor the newer one, whose review is to come"
    );
    assert_eq!(h.llm.prompts().len(), calls);
}

/// "Re-run" on a review left partial (the correctness pass failed): a full review of the
/// head runs, under the manual check, and the finding the failed pass missed blocks when
/// the gate is judged again. Pressed again, nothing is reviewed: the head was completed.
async fn a_rerun_of_a_partial_review_completes_it_once(h: ReviewHarness) {
    h.llm.fail(CORRECTNESS, 500);
    h.review_opened().await;
    let gate = h.latest_gate(HEAD);
    assert_eq!(gate["conclusion"], "neutral", "partial: {gate:#?}");
    assert!(h.findings().await.is_empty());

    h.llm.remove_rules(CORRECTNESS);
    h.llm.answer(CORRECTNESS, &blocking());
    h.run(job(ReviewTrigger::Rerequested, HEAD, "r-1"))
        .await
        .expect("the re-run");
    assert_eq!(h.findings().await.len(), 1, "the missed finding is posted");
    assert_eq!(
        h.latest_check("Parley review (manual)")["conclusion"],
        "neutral"
    );
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "failure");

    let calls = h.llm.prompts().len();
    let reviews = h.reviews().len();
    h.run(job(ReviewTrigger::Rerequested, HEAD, "r-2"))
        .await
        .expect("the second re-run");
    assert_eq!(
        h.llm.prompts().len(),
        calls,
        "completed once: no model call"
    );
    assert_eq!(h.reviews().len(), reviews);
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "failure");
}

fn summary_of(check: &serde_json::Value) -> String {
    check["output"]["summary"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A partial review that the re-run's full review completes, finding nothing: the head
/// was reviewed in full, so the gate passes (before, it stayed `neutral`, "partial").
/// Pressed again: no model call, and the gate still passes.
async fn a_complete_rerun_of_a_partial_review_finding_nothing_passes_the_gate(h: ReviewHarness) {
    h.llm.fail(CORRECTNESS, 500);
    h.review_opened().await;
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "neutral");

    h.llm.remove_rules(CORRECTNESS);
    h.run(job(ReviewTrigger::Rerequested, HEAD, "r-1"))
        .await
        .expect("the re-run");
    let gate = h.latest_gate(HEAD);
    assert_eq!(gate["conclusion"], "success", "{gate:#?}");
    let said = summary_of(&gate);
    assert!(said.contains("Re-run was asked for"), "{said}");
    assert!(!said.contains("partial"), "{said}");

    let calls = h.llm.prompts().len();
    let checks = h.gate_checks(HEAD).len();
    h.run(job(ReviewTrigger::Rerequested, HEAD, "r-2"))
        .await
        .expect("the second re-run");
    assert_eq!(h.llm.prompts().len(), calls, "completed: no model call");
    assert_eq!(h.gate_checks(HEAD).len(), checks + 1);
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "success");
}

/// `@parley full review` of a head whose automatic review was partial completes it as a
/// re-run would: complete and finding nothing, the gate is judged again and passes, and a
/// Re-run afterwards reviews nothing. A full review that is partial itself completes
/// nothing: the gate stays `neutral`.
async fn a_full_review_by_hand_completes_a_partial_head(h: ReviewHarness) {
    h.llm.fail(CORRECTNESS, 500);
    h.review_opened().await;
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "neutral");

    let checks = h.gate_checks(HEAD).len();
    h.run(manual_job(ReviewTrigger::ManualFull, HEAD, "m-1", 4242))
        .await
        .expect("a full review, partial too");
    assert_eq!(h.gate_checks(HEAD).len(), checks, "nothing to judge again");
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "neutral");

    h.llm.remove_rules(CORRECTNESS);
    h.run(manual_job(ReviewTrigger::ManualFull, HEAD, "m-2", 4343))
        .await
        .expect("a full review, complete");
    let gate = h.latest_gate(HEAD);
    assert_eq!(gate["conclusion"], "success", "{gate:#?}");
    let said = summary_of(&gate);
    assert!(said.contains("requested by hand"), "{said}");

    let calls = h.llm.prompts().len();
    h.run(job(ReviewTrigger::Rerequested, HEAD, "r-1"))
        .await
        .expect("the re-run");
    assert_eq!(
        h.llm.prompts().len(),
        calls,
        "already complete: no model call"
    );
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "success");
}

/// A blocking finding a manual review posts is on the PR like any other: the head's
/// gate fails at once, not from the next push on, even when that review was partial.
async fn a_blocking_finding_of_a_manual_review_fails_the_gate_at_once(h: ReviewHarness) {
    h.review_opened().await;
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "success");

    h.llm.fail(CORRECTNESS, 500);
    h.llm
        .answer_in_turn(SECURITY, &[&blocking(), &reply(&[]), &reply(&[])]);
    h.run(manual_job(ReviewTrigger::ManualFull, HEAD, "m-1", 4242))
        .await
        .expect("the manual review");
    assert_eq!(h.findings().await.len(), 1);
    assert_eq!(
        h.latest_check("Parley review (manual)")["conclusion"],
        "neutral",
        "the manual check itself advises"
    );
    let gate = h.latest_gate(HEAD);
    assert_eq!(gate["conclusion"], "failure", "{gate:#?}");
    let text = gate["output"]["text"].as_str().unwrap_or_default();
    assert!(text.contains(SQL_TITLE), "{text}");
}

/// "Re-run" on a manual review's check: while its review has failed (the model down),
/// the request runs again and is answered; once published, nothing. A failed request
/// whose comment has been deleted since runs nothing.
async fn a_rerun_of_a_failed_manual_review_answers_its_request(h: ReviewHarness) {
    h.review_opened().await;
    let rerun_of = |key: String, delivery: &str| {
        let Job::Review(mut review) = job(ReviewTrigger::Rerequested, HEAD, delivery) else {
            unreachable!("job() builds review jobs")
        };
        review.rerun_of = Some(key);
        Job::Review(review)
    };
    let asked = |body: &str| h.github.add_issue_comment(REPO, PR, "bob", body);
    let (kept, deleted) = (asked("@parley full review"), asked("@parley full review"));
    // A request in a review's body is read back too.
    let in_review = h
        .github
        .add_review(REPO, PR, "carol", "@parley full review");
    h.llm.fail("", 500);
    for (request, delivery) in [(kept, "m-1"), (deleted, "m-2"), (in_review, "m-3")] {
        let Job::Review(mut manual) =
            manual_job(ReviewTrigger::ManualFull, HEAD, delivery, request)
        else {
            unreachable!("manual_job() builds review jobs")
        };
        if request == in_review
            && let Some(asking) = manual.request.as_mut()
        {
            asking.surface = parley_core::job::Surface::ReviewBody;
        }
        let failed = h.run(Job::Review(manual)).await;
        assert!(failed.is_err(), "the manual review fails: {failed:?}");
    }
    h.llm.remove_rules("");
    assert_eq!(
        h.reviews().len(),
        2,
        "the automatic review, and the one that asks"
    );

    h.github.delete_issue_comment(deleted);
    let calls = h.llm.prompts().len();
    h.run(rerun_of(
        runs::manual_key(HEAD, ReviewTrigger::ManualFull, deleted),
        "r-0",
    ))
    .await
    .expect("the re-run of a deleted request");
    assert_eq!(h.llm.prompts().len(), calls, "nothing to answer");

    h.run(rerun_of(
        runs::manual_key(HEAD, ReviewTrigger::ManualFull, kept),
        "r-1",
    ))
    .await
    .expect("the re-run");
    assert_eq!(h.reviews().len(), 3, "the full review is posted");
    let manual = h.latest_check("Parley review (manual)");
    assert_eq!(manual["status"], "completed");
    assert_eq!(manual["conclusion"], "neutral");

    let calls = h.llm.prompts().len();
    h.run(rerun_of(
        runs::manual_key(HEAD, ReviewTrigger::ManualFull, kept),
        "r-2",
    ))
    .await
    .expect("the second re-run");
    assert_eq!(h.llm.prompts().len(), calls, "published: not redone");
    assert_eq!(h.reviews().len(), 3);

    h.run(rerun_of(
        runs::manual_key(HEAD, ReviewTrigger::ManualFull, in_review),
        "r-3",
    ))
    .await
    .expect("the re-run of a review's request");
    assert!(h.llm.prompts().len() > calls, "reviewed again");
}

/// With `gate.incomplete: hold` the head's check holds the merge (`action_required`, not
/// `neutral`) while it is not reviewed in full: the model down, then a pass failing. A
/// manual review's check still only advises. Re-run once the model is back completes the
/// head, and the gate passes.
async fn a_team_that_holds_incomplete_reviews_waits_for_a_complete_one(h: ReviewHarness) {
    h.config("gate:\n  incomplete: hold\n");
    h.llm.fail("", 500);
    let failed = h.run(job(ReviewTrigger::Opened, HEAD, "d-1")).await;
    assert!(failed.is_err(), "the review fails: {failed:?}");
    let gate = h.latest_gate(HEAD);
    assert_eq!(gate["conclusion"], "action_required", "{gate:#?}");
    let said = summary_of(&gate);
    assert!(said.contains("`gate.incomplete: hold`"), "{said}");
    assert!(said.contains("press Re-run"), "{said}");

    h.llm.remove_rules("");
    h.llm.fail(CORRECTNESS, 500);
    h.run(job(ReviewTrigger::Rerequested, HEAD, "r-1"))
        .await
        .expect("the re-run, partial");
    assert_eq!(h.reviews().len(), 1, "the head is reviewed");
    let gate = h.latest_gate(HEAD);
    assert_eq!(gate["conclusion"], "action_required", "partial: {gate:#?}");

    h.llm.remove_rules(CORRECTNESS);
    h.run(job(ReviewTrigger::Rerequested, HEAD, "r-2"))
        .await
        .expect("the re-run that completes the head");
    assert_eq!(
        h.latest_check("Parley review (manual)")["conclusion"],
        "neutral",
        "the completing review's own check advises"
    );
    let gate = h.latest_gate(HEAD);
    assert_eq!(gate["conclusion"], "success", "{gate:#?}");
    assert!(!summary_of(&gate).contains("gate.incomplete"));
}

/// A push whose review fails (the model down through every attempt) lifts no `failure`:
/// the old blocking finding is still open, so the new head's check fails and lists it,
/// where before it was `neutral` (Parley's trouble), which branch protection lets through.
async fn a_push_whose_review_fails_keeps_an_open_blocking_finding_failing(h: ReviewHarness) {
    h.review_opened_with_a_blocking_finding().await;
    push_unrelated_commit(&h);
    h.llm.fail("", 500);
    let failed = h.run(job(ReviewTrigger::Synchronize, HEAD2, "d-2")).await;
    assert!(failed.is_err(), "the review fails: {failed:?}");
    let gate = h.latest_gate(HEAD2);
    assert_eq!(gate["status"], "completed");
    assert_eq!(gate["conclusion"], "failure", "{gate:#?}");
    let text = gate["output"]["text"].as_str().unwrap_or_default();
    assert!(text.contains(SQL_TITLE), "{text}");
    assert!(summary_of(&gate).contains("Parley could not finish the review"));
}

/// "Let it through" on a held check, pressed by `login`.
fn let_through(login: &str, delivery: &str) -> Job {
    let Job::Review(mut review) = job(ReviewTrigger::LetThrough, HEAD, delivery) else {
        unreachable!("job() builds review jobs")
    };
    review.author.login = login.to_string();
    Job::Review(review)
}

/// carol (a maintainer, not the author) presses "Let it through": the head's check turns
/// `neutral`, naming her. Returns that check.
async fn carol_lets_it_through(h: &ReviewHarness) -> serde_json::Value {
    h.run(let_through("carol", "l-carol"))
        .await
        .expect("let through");
    let gate = h.latest_gate(HEAD);
    assert_eq!(gate["conclusion"], "neutral", "{gate:#?}");
    let title = gate["output"]["title"].as_str().unwrap_or_default();
    assert!(title.contains("@carol"), "{title}");
    gate
}

/// With `gate.incomplete: hold`, a partial review's check carries "Let it through". The
/// PR's author pressing it (even an admin) and someone below `gate.resolveBy` change
/// nothing but a check saying why; a maintainer lets the head through (`neutral`, naming
/// them), which a later re-judging of the gate remembers; a blocking finding still blocks.
async fn a_held_head_is_let_through_by_a_maintainer_not_its_author(h: ReviewHarness) {
    h.config("gate:\n  incomplete: hold\n");
    h.github.set_permission(REPO, "alice", "admin");
    h.github.set_permission(REPO, "carol", "maintain");
    h.llm.fail(CORRECTNESS, 500);
    h.review_opened().await;
    let gate = h.latest_gate(HEAD);
    assert_eq!(gate["conclusion"], "action_required", "{gate:#?}");
    assert_eq!(gate["actions"][0]["identifier"], "let-through", "{gate:#?}");
    assert!(summary_of(&gate).contains("Let it through"));

    for login in ["alice", "dave"] {
        h.run(let_through(login, &format!("l-{login}")))
            .await
            .expect("refused, not failed");
        let gate = h.latest_gate(HEAD);
        assert_eq!(gate["conclusion"], "action_required", "{login}: {gate:#?}");
        let said = summary_of(&gate);
        assert!(
            said.contains("asked to let this head through who may not"),
            "{said}"
        );
    }
    let calls = h.llm.prompts().len();
    let gate = carol_lets_it_through(&h).await;
    assert!(gate["actions"].is_null(), "{gate:#?}");
    assert_eq!(h.llm.prompts().len(), calls, "nothing reviewed");

    // Judged again later (a finding changed state): still let through.
    let scope = RepoScope::new(INSTALLATION, OWNER, NAME).with_ids(
        parley_tests::tenants::repo_id(REPO),
        parley_tests::tenants::owner_id(OWNER),
    );
    assert_eq!(
        regate(&h.services, &scope, PR, RegateCause::FindingChanged).await,
        Regated::Concluded(CheckConclusion::Neutral)
    );

    // A finding that blocks is not let through: Re-run's completing review finds one.
    h.llm.remove_rules(CORRECTNESS);
    h.llm.answer(CORRECTNESS, &blocking());
    h.run(job(ReviewTrigger::Rerequested, HEAD, "r-1"))
        .await
        .expect("the re-run that completes the head");
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "failure");
}

/// A head whose review failed (the model down), held, and let through by a maintainer: the
/// queue's next attempt, failing again, passes it too (the mark is kept with the failed
/// run), where it would have held it again. Nothing is reviewed by the button itself.
async fn a_failed_head_let_through_stays_let_through_when_its_review_is_retried(h: ReviewHarness) {
    fail_the_heads_review(&h).await;

    // While a retry of the head's review runs, that review decides: pressed then, the
    // button adds no check that would stand over the one the review concludes.
    let failed = h.run_of(HEAD).await;
    let running = ReviewRun {
        state: RunState::Running,
        ..failed.clone()
    };
    h.store.put_review_run(&running).await.expect("store");
    let checks = h.gate_checks(HEAD).len();
    h.run(let_through("carol", "l-0"))
        .await
        .expect("nothing to do");
    assert_eq!(h.gate_checks(HEAD).len(), checks, "no check while it runs");
    assert_eq!(h.run_of(HEAD).await.let_through_by, None);
    h.store.put_review_run(&failed).await.expect("store");

    // The PR's author may not; the held check says so.
    h.run(let_through("alice", "l-alice"))
        .await
        .expect("refused, not failed");
    let gate = h.latest_gate(HEAD);
    assert_eq!(gate["conclusion"], "action_required", "{gate:#?}");
    let said = summary_of(&gate);
    assert!(
        said.contains("@alice asked") && said.contains("the PR's author"),
        "{said}"
    );

    carol_lets_it_through(&h).await;
    // Refused after that, nothing is held again.
    let checks = h.gate_checks(HEAD).len();
    h.run(let_through("alice", "l-alice-2"))
        .await
        .expect("refused, not failed");
    assert_eq!(
        h.gate_checks(HEAD).len(),
        checks,
        "{:#?}",
        h.latest_gate(HEAD)
    );

    let retry = h.run(job(ReviewTrigger::Opened, HEAD, "d-1")).await;
    assert!(retry.is_err(), "the retry fails too: {retry:?}");
    let gate = h.latest_gate(HEAD);
    assert_eq!(gate["conclusion"], "neutral", "{gate:#?}");
    assert!(
        summary_of(&gate).contains("@carol let this head through"),
        "{gate:#?}"
    );
}

/// A review left running by a worker that died (its claim expired: nothing will conclude
/// it) does not keep the button from working: the head is let through as a failed one
/// would be, and the run remembers who let it through; the PR's author still may not.
async fn a_review_left_running_by_a_dead_worker_can_be_let_through(h: ReviewHarness) {
    fail_the_heads_review(&h).await;
    let running = ReviewRun {
        state: RunState::Running,
        ..h.run_of(HEAD).await
    };
    h.store.put_review_run(&running).await.expect("store");
    // The worker that held the run is gone, and so, after its time, is its claim.
    let claim = runs::claim_key(&key(REPO), PR, HEAD);
    h.store.release(&claim).await.expect("store");
    // The PR's author still may not: held, and nothing remembered.
    h.run(let_through("alice", "l-alice"))
        .await
        .expect("refused, not failed");
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "action_required");
    assert_eq!(h.run_of(HEAD).await.let_through_by, None);
    carol_lets_it_through(&h).await;
    assert_eq!(
        h.run_of(HEAD).await.let_through_by.as_deref(),
        Some("carol")
    );
}

/// The button read the head's run as failed and, while it asked GitHub who pressed it,
/// the queue's retry of that review started (its own new check in progress). The
/// let-through lands while the retry runs; the retry then finds a blocking finding. Its
/// conclusion, not the let-through's `neutral` (newer than the check the retry started),
/// is the check branch protection reads, and the run stays let through.
async fn a_let_through_racing_the_retry_of_its_review_does_not_stand_over_it(h: ReviewHarness) {
    fail_the_heads_review(&h).await;
    h.llm.remove_rules("");
    h.llm
        .answer_in_turn(SECURITY, &[&blocking(), &reply(&[]), &reply(&[])]);
    let asking = h.github.tripwire(
        "GET",
        "/collaborators/carol/permission",
        HoldPoint::BeforeApplying,
        1,
    );
    let thinking = h.llm.tripwire(SECURITY, 1);
    let limit = std::time::Duration::from_secs(30);

    let button = async {
        let pressed = h.run(let_through("carol", "l-carol")).await;
        // Only now does the retry's model answer.
        thinking.release();
        pressed
    };
    let retry = async {
        asking
            .wait_caught(1, limit, "the button asking who carol is")
            .await;
        let retry = h.run(job(ReviewTrigger::Opened, HEAD, "d-1"));
        let then_let_the_button_go_on = async {
            thinking
                .wait_caught(1, limit, "the retry's security pass")
                .await;
            asking.release();
        };
        tokio::join!(retry, then_let_the_button_go_on).0
    };
    let (pressed, retried) = tokio::join!(button, retry);
    pressed.expect("let through");
    retried.expect("the retry reviews the head");

    let checks = h.gate_checks(HEAD);
    let titles: Vec<_> = checks
        .iter()
        .map(|check| check["output"]["title"].clone())
        .collect();
    assert!(
        titles
            .iter()
            .any(|title| title.as_str().is_some_and(|t| t.contains("@carol"))),
        "the let-through's check was published meanwhile: {titles:#?}"
    );
    let gate = h.latest_gate(HEAD);
    assert_eq!(gate["conclusion"], "failure", "{titles:#?}");
    assert!(
        summary_of(&gate).contains(SQL_TITLE)
            || gate["output"]["text"]
                .as_str()
                .is_some_and(|t| t.contains(SQL_TITLE)),
        "{gate:#?}"
    );
    assert!(
        checks.iter().all(|check| check["status"] == "completed"),
        "no check left in progress: {checks:#?}"
    );
    let run = h.run_of(HEAD).await;
    assert_eq!(
        (run.state, run.let_through_by.as_deref()),
        (RunState::Published, Some("carol"))
    );
}

/// A run of a head carol let through that still holds a check older than hers (a retry
/// after its conclusion's second write failed, say): its conclusion must not land in that
/// older check, under carol's `neutral`.
async fn a_let_through_head_concludes_in_its_newest_check_however_its_run_got_there(
    h: ReviewHarness,
) {
    let held = let_through_with_a_run_on_an_older_check(&h).await;
    h.run(job(ReviewTrigger::Opened, HEAD, "d-1"))
        .await
        .expect("the retry reviews the head");
    let gate = h.latest_gate(HEAD);
    assert_eq!(gate["conclusion"], "failure", "{:#?}", h.gate_checks(HEAD));
    assert_ne!(gate["id"].as_u64(), Some(held), "a new check, the newest");
}

/// carol lets the failed head through, its run is left holding the held check (older
/// than hers), and the model now finds a blocking finding. The held check's id.
async fn let_through_with_a_run_on_an_older_check(h: &ReviewHarness) -> u64 {
    fail_the_heads_review(h).await;
    let held = h.latest_gate(HEAD)["id"].as_u64().expect("check id");
    carol_lets_it_through(h).await;
    let run = ReviewRun {
        check_run_id: Some(held),
        ..h.run_of(HEAD).await
    };
    h.store.put_review_run(&run).await.expect("store");
    h.llm.remove_rules("");
    h.llm
        .answer_in_turn(SECURITY, &[&blocking(), &reply(&[]), &reply(&[])]);
    held
}

/// As above, with GitHub failing to list the head's checks: the run cannot tell whether
/// a newer one stands, so it concludes in a new check all the same.
async fn a_let_through_head_whose_checks_github_will_not_list_concludes_in_a_new_check(
    h: ReviewHarness,
) {
    let held = let_through_with_a_run_on_an_older_check(&h).await;
    h.github.inject(Injected::answering(
        "GET",
        format!("/commits/{HEAD}/check-runs"),
        502,
        40,
    ));
    h.run(job(ReviewTrigger::Opened, HEAD, "d-1"))
        .await
        .expect("the retry reviews the head");
    let gate = h.latest_gate(HEAD);
    assert_eq!(gate["conclusion"], "failure", "{:#?}", h.gate_checks(HEAD));
    assert_ne!(gate["id"].as_u64(), Some(held));
}

/// The installation's budget is spent: the head's review does not run and its check is
/// held. Once carol lets it through, a Re-run while the budget is still spent passes it
/// again instead of holding it; when the budget is raised, the head's review runs and a
/// blocking finding still fails it.
async fn a_head_the_budget_held_stays_let_through_when_it_is_run_again(mut h: ReviewHarness) {
    h.services.budget = parley_core::budget::BudgetPolicy {
        default_monthly_usd: Some(1.0),
    };
    h.handler = parley_core::review::ReviewHandler::new(h.services.clone());
    let month = parley_core::llm::usage::installation_month_scope(
        INSTALLATION,
        time::OffsetDateTime::now_utc(),
    );
    let cost = parley_core::llm::usage::counters::COST_MICRO_USD;
    h.store
        .add_to_counter(&month, cost, 1_000_000)
        .await
        .expect("spend");
    h.config("gate:\n  incomplete: hold\n");
    h.github.set_permission(REPO, "carol", "write");
    h.run(job(ReviewTrigger::Opened, HEAD, "d-1"))
        .await
        .expect("not run, not failed");
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "action_required");
    assert!(h.llm.prompts().is_empty());

    // The PR's author may not: a held check says why, and nothing is remembered.
    h.run(let_through("alice", "l-alice"))
        .await
        .expect("refused, not failed");
    let gate = h.latest_gate(HEAD);
    assert_eq!(gate["conclusion"], "action_required");
    assert!(summary_of(&gate).contains("@alice asked"), "{gate:#?}");
    assert!(
        h.store
            .review_run(&key(REPO), PR, HEAD)
            .await
            .expect("store")
            .is_none()
    );

    carol_lets_it_through(&h).await;
    let run = h.run_of(HEAD).await;
    assert_eq!(
        (run.state, run.let_through_by.as_deref()),
        (RunState::Failed, Some("carol"))
    );
    h.run(job(ReviewTrigger::Rerequested, HEAD, "r-1"))
        .await
        .expect("re-run, still over the budget");
    let gate = h.latest_gate(HEAD);
    assert_eq!(gate["conclusion"], "neutral", "{gate:#?}");
    assert!(
        summary_of(&gate).contains("@carol let this head through"),
        "{gate:#?}"
    );
    assert!(h.llm.prompts().is_empty(), "still nothing reviewed");

    // The budget raised: Re-run reviews the head, and what it finds still blocks.
    h.services.budget = parley_core::budget::BudgetPolicy {
        default_monthly_usd: Some(100.0),
    };
    h.handler = parley_core::review::ReviewHandler::new(h.services.clone());
    h.llm
        .answer_in_turn(SECURITY, &[&blocking(), &reply(&[]), &reply(&[])]);
    h.run(job(ReviewTrigger::Rerequested, HEAD, "r-2"))
        .await
        .expect("reviewed");
    assert!(!h.pass_prompts().is_empty(), "the head was reviewed");
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "failure");
    let run = h.run_of(HEAD).await;
    assert_eq!(
        (run.state, run.let_through_by.as_deref()),
        (RunState::Published, Some("carol"))
    );
}

/// With `gate.incomplete: hold` and the model down, the head's review fails (its first
/// attempt, delivery `d-1`) and its check is held; carol may write.
async fn fail_the_heads_review(h: &ReviewHarness) {
    h.config("gate:\n  incomplete: hold\n");
    h.github.set_permission(REPO, "carol", "write");
    h.llm.fail("", 500);
    let first = h.run(job(ReviewTrigger::Opened, HEAD, "d-1")).await;
    assert!(first.is_err(), "the review fails: {first:?}");
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "action_required");
}
