//! `@parley pause` and `@parley resume`: a PR's pushes are not reviewed while paused, its
//! check says so (and waits where `gate.incomplete: hold` asks for complete reviews), and
//! resuming reviews what came meanwhile. Pausing needs `gate.resolveBy`.

use parley_core::Job;
use parley_core::job::ReviewTrigger;
use parley_core::ports::{PollingQueue, QueueName};
use parley_tests::review_harness::*;
use std::time::Duration;

parley_tests::review_on_both_stores!(
    a_paused_pr_is_not_reviewed_until_resumed,
    pausing_needs_gate_resolve_by_and_a_held_gate_waits,
);

/// The review jobs the conversation worker queued.
async fn queued_reviews(h: &ReviewHarness) -> Vec<Job> {
    let messages = h
        .queue
        .receive(QueueName::Review, 10, Duration::from_secs(30))
        .await
        .expect("the review queue");
    messages
        .iter()
        .map(|m| serde_json::from_str::<Job>(&m.body).expect("a job"))
        .collect()
}

async fn a_paused_pr_is_not_reviewed_until_resumed(h: ReviewHarness) {
    h.review_opened().await;
    h.github.set_permission(REPO, "bob", "write");
    h.say("bob", "@parley pause").await;
    assert!(h.last_said().contains("Paused: "), "{}", h.last_said());
    h.say("bob", "@parley pause reviews").await;
    assert!(
        h.last_said().contains("paused already"),
        "{}",
        h.last_said()
    );

    let asked = h.llm.prompts().len();
    h.push_sql_fix();
    h.run(job(ReviewTrigger::Synchronize, HEAD2, "d-2"))
        .await
        .expect("the push, not reviewed");
    assert_eq!(h.llm.prompts().len(), asked, "nothing asked of the model");
    let gate = h.latest_gate(HEAD2);
    assert_eq!(gate["conclusion"], "neutral", "{gate:#?}");
    parley_tests::expect::says_all(&gate["output"].to_string(), &["paused", "`@parley resume`"]);

    h.say("bob", "@parley resume").await;
    assert!(h.last_said().contains("Resumed: "), "{}", h.last_said());
    let queued = queued_reviews(&h).await;
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
    h.say("bob", "@parley resume").await;
    assert!(h.last_said().contains("not paused"), "{}", h.last_said());
    assert!(
        queued_reviews(&h).await.is_empty(),
        "nothing more to review"
    );
}

async fn pausing_needs_gate_resolve_by_and_a_held_gate_waits(h: ReviewHarness) {
    h.config("mention:\n  minPermission: read\ngate:\n  incomplete: hold\n");
    h.review_opened().await;
    h.github.set_permission(REPO, "mallory", "read");
    h.say("mallory", "@parley pause").await;
    assert!(
        h.last_said()
            .contains("Sorry @mallory, pausing reviews here needs write permission"),
        "{}",
        h.last_said()
    );
    h.github.set_permission(REPO, "bob", "write");
    h.say("bob", "@parley pause").await;
    assert!(
        h.last_said().contains("waits for a review"),
        "{}",
        h.last_said()
    );
    h.push_sql_fix();
    h.run(job(ReviewTrigger::Synchronize, HEAD2, "d-2"))
        .await
        .expect("the push, not reviewed");
    assert_eq!(h.latest_gate(HEAD2)["conclusion"], "action_required");
}
