//! `@parley pause` and `@parley resume`: a PR's pushes are not reviewed while paused, its
//! check says so (and waits where `gate.incomplete: hold` asks for complete reviews), and
//! resuming reviews what came meanwhile. Pausing needs `gate.resolveBy`.

use parley_core::Job;
use parley_core::job::ReviewTrigger;
use parley_tests::review_harness::*;

parley_tests::review_on_both_stores!(
    a_paused_pr_is_not_reviewed_until_resumed,
    pausing_needs_gate_resolve_by_and_a_held_gate_waits,
);

/// `who` says `text` on the PR, and Parley's answer contains `answer` (or, with a
/// leading `!`, does not).
async fn answered(h: &ReviewHarness, who: &str, text: &str, answer: &str) {
    h.say(who, text).await;
    let said = h.last_said();
    match answer.strip_prefix('!') {
        Some(absent) => assert!(!said.contains(absent), "{text}: {said}"),
        None => assert!(said.contains(answer), "{text}: {said}"),
    }
}

async fn a_paused_pr_is_not_reviewed_until_resumed(h: ReviewHarness) {
    h.review_opened().await;
    h.github.set_permission(REPO, "bob", "write");
    answered(&h, "bob", "@parley pause", "Paused: ").await;
    answered(&h, "bob", "@parley pause reviews", "paused already").await;
    let paused = "reviews of this pull request are paused; `@parley resume`";
    answered(&h, "bob", "@parley configuration", paused).await;

    let asked = h.llm.prompts().len();
    h.push_sql_fix();
    h.run(job(ReviewTrigger::Synchronize, HEAD2, "d-2"))
        .await
        .expect("the push, not reviewed");
    assert_eq!(h.llm.prompts().len(), asked, "nothing asked of the model");
    let gate = h.latest_gate(HEAD2);
    assert_eq!(gate["conclusion"], "neutral", "{gate:#?}");
    parley_tests::expect::says_all(&gate["output"].to_string(), &["paused", "`@parley resume`"]);

    answered(&h, "bob", "@parley resume", "Resumed: ").await;
    let queued = h.queued_reviews().await;
    assert_eq!(queued.len(), 1, "{queued:#?}");
    let Job::Review(review) = &queued[0] else {
        panic!("not a review: {queued:#?}");
    };
    assert_eq!(
        (
            review.trigger,
            review.head_sha.as_str(),
            review.request.is_none()
        ),
        (ReviewTrigger::Synchronize, HEAD2, true),
        "the head's automatic review"
    );
    h.run(queued[0].clone()).await.expect("the head reviewed");
    assert!(h.llm.prompts().len() > asked, "reviewed now");
    assert_eq!(h.latest_gate(HEAD2)["conclusion"], "success");
    answered(&h, "bob", "@parley resume", "not paused").await;
    assert!(
        h.queued_reviews().await.is_empty(),
        "nothing more to review"
    );
    answered(&h, "bob", "@parley configuration", "!are paused").await;
}

async fn pausing_needs_gate_resolve_by_and_a_held_gate_waits(h: ReviewHarness) {
    h.config("mention:\n  minPermission: read\ngate:\n  incomplete: hold\n");
    h.review_opened().await;
    h.github.set_permission(REPO, "mallory", "read");
    let refused = "Sorry @mallory, pausing reviews here needs write permission";
    answered(&h, "mallory", "@parley pause", refused).await;
    h.github.set_permission(REPO, "bob", "write");
    answered(&h, "bob", "@parley pause", "waits for a review").await;
    h.push_sql_fix();
    h.run(job(ReviewTrigger::Synchronize, HEAD2, "d-2"))
        .await
        .expect("the push, not reviewed");
    assert_eq!(h.latest_gate(HEAD2)["conclusion"], "action_required");

    // A maintainer other than the author may let the held head through, as any other.
    h.github.set_permission(REPO, "carol", "write");
    let Job::Review(mut pressed) = job(ReviewTrigger::LetThrough, HEAD2, "l-1") else {
        unreachable!("job() builds review jobs")
    };
    pressed.author.login = "carol".to_string();
    h.run(Job::Review(pressed)).await.expect("let through");
    let gate = h.latest_gate(HEAD2);
    assert_eq!(gate["conclusion"], "neutral", "{gate:#?}");
    parley_tests::expect::says_all(&gate["output"]["title"].to_string(), &["@carol"]);
}
