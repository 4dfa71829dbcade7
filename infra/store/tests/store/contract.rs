//! The store contract: what every `Store` adapter must do, run against each of them.
//!
//! Each `check_*` function states one part of the contract against `Arc<dyn Store>`;
//! `contract_tests!` runs it once on SQLite (a temp file) and once on DynamoDB (moto,
//! via `AWS_ENDPOINT_URL`; those tests fail, never skip, when it is unset).

use crate::common;

use parley_core::ports::store::keys;
use parley_core::ports::{
    Claim, FindingOutcome, FindingState, ReviewRun, RunState, Store, StoreError, Verdict,
};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use time::macros::datetime;
use tokio::sync::Barrier;

/// Long enough that no claim in a test lapses by accident.
const HOUR: Duration = Duration::from_secs(3600);
/// How many callers race in the concurrency checks.
const RACERS: usize = 16;

crate::common::on_both_adapters!(
    store;
    check_claim_release_is_claimed,
    check_claims_expire,
    check_concurrent_claims_have_one_winner,
    check_counters_stop_at_ceiling,
    check_concurrent_increments_respect_ceiling,
    check_installations,
    check_findings_upsert_and_lookup_by_comment,
    check_findings_for_pr_order_and_isolation,
    check_conditional_finding_writes,
    check_concurrent_conditional_finding_writers_have_one_winner,
    check_memory_records,
    check_concurrent_memory_writers_have_one_winner,
    check_owned_claims,
    check_concurrent_owned_claims_have_one_winner,
    check_added_counters,
    check_counters_added_together,
    check_review_runs,
    check_purge_takes_one_repository_whole,
    check_rekey_moves_one_repository_whole,
);

// --- idempotency ----------------------------------------------------------------------

async fn check_claim_release_is_claimed(store: Arc<dyn Store>) {
    let key = keys::delivery("d-1");
    assert!(!store.is_claimed(&key).await.unwrap(), "fresh key is free");

    assert_eq!(store.claim(&key, HOUR).await.unwrap(), Claim::Won);
    assert!(store.is_claimed(&key).await.unwrap());
    assert_eq!(
        store.claim(&key, HOUR).await.unwrap(),
        Claim::AlreadyClaimed
    );
    assert!(
        store.is_claimed(&key).await.unwrap(),
        "a lost claim keeps it"
    );

    let other = keys::delivery("d-2");
    assert!(
        !store.is_claimed(&other).await.unwrap(),
        "keys are independent"
    );
    assert_eq!(store.claim(&other, HOUR).await.unwrap(), Claim::Won);

    store.release(&key).await.unwrap();
    assert!(!store.is_claimed(&key).await.unwrap(), "released");
    assert!(
        store.is_claimed(&other).await.unwrap(),
        "release is per key"
    );
    assert_eq!(
        store.claim(&key, HOUR).await.unwrap(),
        Claim::Won,
        "a released key can be claimed again"
    );

    store
        .release("never-claimed")
        .await
        .expect("releasing an unclaimed key is not an error");
}

async fn check_claims_expire(store: Arc<dyn Store>) {
    let short = "reply#short";
    let long = "reply#long";
    assert_eq!(
        store.claim(short, Duration::from_secs(1)).await.unwrap(),
        Claim::Won
    );
    assert_eq!(store.claim(long, HOUR).await.unwrap(), Claim::Won);
    assert_eq!(
        store.claim(short, Duration::from_secs(1)).await.unwrap(),
        Claim::AlreadyClaimed,
        "a short claim holds while it lasts"
    );
    assert!(store.is_claimed(short).await.unwrap());

    // Claims lapse on whole seconds, rounded up: a 1 s claim is gone within 2 s.
    tokio::time::sleep(Duration::from_millis(2_300)).await;

    assert!(
        !store.is_claimed(short).await.unwrap(),
        "a lapsed claim reads as absent although its record is still there"
    );
    assert!(
        store.is_claimed(long).await.unwrap(),
        "only the short one lapsed"
    );
    assert_eq!(
        store.claim(long, HOUR).await.unwrap(),
        Claim::AlreadyClaimed
    );

    // Several callers retrying the same lapsed work: still exactly one wins.
    let outcomes = race(&store, |store| async move {
        store.claim("reply#short", HOUR).await.unwrap()
    })
    .await;
    assert_eq!(won(&outcomes), 1, "one winner takes over a lapsed claim");
    assert!(
        store.is_claimed(short).await.unwrap(),
        "the new claim holds"
    );
}

async fn check_concurrent_claims_have_one_winner(store: Arc<dyn Store>) {
    for round in 0..3 {
        let key = format!("delivery#race-{round}");
        let outcomes = race(&store, move |store| {
            let key = key.clone();
            async move { store.claim(&key, HOUR).await.unwrap() }
        })
        .await;
        assert_eq!(won(&outcomes), 1, "round {round}: {outcomes:?}");
    }
}

// --- counters -------------------------------------------------------------------------

async fn check_counters_stop_at_ceiling(store: Arc<dyn Store>) {
    let scope = keys::pr_scope("octo/app", 12);
    assert_eq!(
        store.counter(&scope, "turns").await.unwrap(),
        0,
        "never incremented"
    );

    for expected in 1..=3 {
        assert_eq!(
            store.increment_within(&scope, "turns", 3).await.unwrap(),
            Some(expected)
        );
    }
    assert_eq!(
        store.increment_within(&scope, "turns", 3).await.unwrap(),
        None
    );
    assert_eq!(
        store.increment_within(&scope, "turns", 3).await.unwrap(),
        None
    );
    assert_eq!(
        store.counter(&scope, "turns").await.unwrap(),
        3,
        "refusals add nothing"
    );

    assert_eq!(
        store.increment_within(&scope, "turns", 5).await.unwrap(),
        Some(4),
        "a higher ceiling lets it go on"
    );

    assert_eq!(
        store.increment_within(&scope, "reviews", 10).await.unwrap(),
        Some(1),
        "counters in one scope are independent"
    );
    let other_pr = keys::pr_scope("octo/app", 13);
    assert_eq!(store.counter(&other_pr, "turns").await.unwrap(), 0);
    assert_eq!(
        store
            .increment_within(&other_pr, "turns", 10)
            .await
            .unwrap(),
        Some(1),
        "scopes are independent"
    );

    assert_eq!(
        store.increment_within(&scope, "zero", 0).await.unwrap(),
        None,
        "a zero ceiling admits nothing, not even the first"
    );
    assert_eq!(store.counter(&scope, "zero").await.unwrap(), 0);
    assert_eq!(store.counter(&scope, "turns").await.unwrap(), 4);
}

async fn check_concurrent_increments_respect_ceiling(store: Arc<dyn Store>) {
    let scope = keys::pr_scope("octo/app", 7);
    let outcomes = race(&store, |store| async move {
        store
            .increment_within(&keys::pr_scope("octo/app", 7), "turns", 5)
            .await
            .unwrap()
    })
    .await;
    let granted: BTreeSet<u64> = outcomes.iter().flatten().copied().collect();
    assert_eq!(
        outcomes.iter().filter(|o| o.is_some()).count(),
        5,
        "{outcomes:?}"
    );
    assert_eq!(
        granted,
        (1..=5).collect(),
        "each unit handed out once: {outcomes:?}"
    );
    assert_eq!(store.counter(&scope, "turns").await.unwrap(), 5);
}

// --- installations --------------------------------------------------------------------

async fn check_installations(store: Arc<dyn Store>) {
    assert_eq!(store.installation(1).await.unwrap(), None);

    let mut first = common::installation(1);
    // Beyond i64: the SQLite adapter must not lose or confuse it.
    let big = common::installation(u64::MAX - 7);
    store.put_installation(&first).await.unwrap();
    store.put_installation(&big).await.unwrap();
    assert_eq!(store.installation(1).await.unwrap(), Some(first.clone()));
    assert_eq!(
        store.installation(u64::MAX - 7).await.unwrap(),
        Some(big.clone())
    );

    first.suspended = true;
    first.repositories = vec![];
    first.updated_at = datetime!(2024-06-01 08:00:00.5 UTC);
    store.put_installation(&first).await.unwrap();
    assert_eq!(
        store.installation(1).await.unwrap(),
        Some(first),
        "put replaces"
    );

    store.delete_installation(1).await.unwrap();
    assert_eq!(store.installation(1).await.unwrap(), None);
    assert_eq!(
        store.installation(u64::MAX - 7).await.unwrap(),
        Some(big),
        "delete is per id"
    );
    store
        .delete_installation(1)
        .await
        .expect("deleting an absent installation is not an error");
}

// --- findings -------------------------------------------------------------------------

async fn check_findings_upsert_and_lookup_by_comment(store: Arc<dyn Store>) {
    let posted = common::posted_finding("octo/app", 12, "f-posted", 111);
    let pending = common::finding("octo/app", 12, "f-pending", datetime!(2024-05-01 09:00 UTC));
    // Same comment id in another repository: comment ids are only unique per repo here.
    let elsewhere = common::posted_finding("octo/other", 12, "f-elsewhere", 111);
    store.put_finding(&posted).await.unwrap();
    store.put_finding(&pending).await.unwrap();
    store.put_finding(&elsewhere).await.unwrap();

    assert_eq!(
        store.finding_by_comment("octo/app", 111).await.unwrap(),
        Some(posted.clone()),
        "every field survives the round trip"
    );
    assert_eq!(
        store.finding_by_comment("octo/other", 111).await.unwrap(),
        Some(elsewhere)
    );
    assert_eq!(
        store.finding_by_comment("octo/app", 999).await.unwrap(),
        None
    );
    assert_eq!(
        store.finding_by_comment("octo/none", 111).await.unwrap(),
        None
    );

    // Posting the pending finding later gives it a comment id: an upsert, not a copy.
    let mut now_posted = pending.clone();
    now_posted.comment_id = Some(222);
    now_posted.review_id = Some(5);
    store.put_finding(&now_posted).await.unwrap();
    assert_eq!(
        store.finding_by_comment("octo/app", 222).await.unwrap(),
        Some(now_posted.clone())
    );

    // A resolved finding moved to a new comment: the old comment no longer finds it.
    let mut moved = posted.clone();
    moved.comment_id = Some(333);
    moved.state = FindingState::Resolved;
    store.put_finding(&moved).await.unwrap();
    assert_eq!(
        store.finding_by_comment("octo/app", 111).await.unwrap(),
        None
    );
    assert_eq!(
        store.finding_by_comment("octo/app", 333).await.unwrap(),
        Some(moved.clone())
    );

    let on_pr = store.findings_for_pr("octo/app", 12).await.unwrap();
    assert_eq!(on_pr.len(), 2, "upserts did not add records: {on_pr:?}");
    assert!(on_pr.contains(&moved) && on_pr.contains(&now_posted));
}

/// `put_finding_if`: insert only when absent; replace only while what people decided (state,
/// who, outcome) is as the writer read it, whatever else changed; and the finding as read
/// back from the store is a valid guard (the comparison survives the round trip).
async fn check_conditional_finding_writes(store: Arc<dyn Store>) {
    let first = common::finding("octo/app", 7, "f-cond", datetime!(2024-05-01 09:00 UTC));
    assert!(store.put_finding_if(&first, None).await.unwrap(), "insert");
    assert!(
        !store.put_finding_if(&first, None).await.unwrap(),
        "an insert finds the finding there"
    );

    // The review read it; the conversation worker then records an outcome.
    let read_by_review = store
        .findings_for_pr("octo/app", 7)
        .await
        .unwrap()
        .remove(0);
    let mut decided = read_by_review.clone();
    decided.state = FindingState::WontFix;
    decided.state_changed_by = Some("maya".into());
    decided.state_changed_at = Some(datetime!(2024-05-02 10:00:00.123456789 UTC));
    decided.outcome = Some(FindingOutcome {
        verdict: Verdict::Rejected,
        signal: "wont_fix".into(),
        by: Some("maya".into()),
        also_by: vec!["sam".into()],
        at: datetime!(2024-05-02 10:00:00.5 UTC),
        replaces: None,
        counted: false,
    });
    assert!(
        store
            .put_finding_if(&decided, Some(&read_by_review))
            .await
            .unwrap()
    );

    // The review writes back from its stale read: refused, nothing changes.
    let mut stale = read_by_review.clone();
    stale.state = FindingState::Resolved;
    stale.state_changed_by = Some("parley".into());
    assert!(
        !store
            .put_finding_if(&stale, Some(&read_by_review))
            .await
            .unwrap()
    );
    let stored = store
        .findings_for_pr("octo/app", 7)
        .await
        .unwrap()
        .remove(0);
    assert_eq!(
        stored, decided,
        "the decision survived, every field round-tripped"
    );

    // Guarded by the finding as read back, the write goes through; fields that are not
    // a decision (a comment id) do not break the guard.
    let mut posted = stored.clone();
    posted.comment_id = Some(4242);
    assert!(store.put_finding(&posted).await.is_ok());
    let mut counted = stored.clone();
    counted.comment_id = Some(4242);
    if let Some(outcome) = counted.outcome.as_mut() {
        outcome.counted = true;
    }
    assert!(store.put_finding_if(&counted, Some(&stored)).await.unwrap());
    assert_eq!(
        store.finding_by_comment("octo/app", 4242).await.unwrap(),
        Some(counted.clone()),
        "a conditional write keeps the comment index"
    );
    // Changing only `counted` is a change: the writer that read it uncounted loses.
    assert!(!store.put_finding_if(&stored, Some(&stored)).await.unwrap());

    // A guard on a finding that is not there fails.
    let ghost = common::finding("octo/app", 7, "f-ghost", datetime!(2024-05-01 09:00 UTC));
    assert!(!store.put_finding_if(&ghost, Some(&ghost)).await.unwrap());
    assert_eq!(store.findings_for_pr("octo/app", 7).await.unwrap().len(), 1);
}

/// Writers racing from the same read: exactly one wins.
async fn check_concurrent_conditional_finding_writers_have_one_winner(store: Arc<dyn Store>) {
    let base = common::finding("octo/race", 9, "f-race", datetime!(2024-05-01 09:00 UTC));
    store.put_finding(&base).await.unwrap();
    let read = store
        .findings_for_pr("octo/race", 9)
        .await
        .unwrap()
        .remove(0);
    let counter = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let outcomes = race(&store, move |store| {
        let read = read.clone();
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            let mut mine = read.clone();
            mine.state = FindingState::Resolved;
            mine.state_changed_by = Some(format!("racer-{n}"));
            store.put_finding_if(&mine, Some(&read)).await.unwrap()
        }
    })
    .await;
    assert_eq!(
        outcomes.iter().filter(|won| **won).count(),
        1,
        "{outcomes:?}"
    );
}

async fn check_findings_for_pr_order_and_isolation(store: Arc<dyn Store>) {
    assert!(
        store
            .findings_for_pr("octo/app", 12)
            .await
            .unwrap()
            .is_empty()
    );

    // Ids sort the other way from creation time, so id order would fail.
    let oldest = common::finding("octo/app", 12, "c", datetime!(2024-05-01 09:00:00 UTC));
    let middle = common::finding("octo/app", 12, "b", datetime!(2024-05-01 09:00:00.5 UTC));
    let newest = common::finding("octo/app", 12, "a", datetime!(2024-05-02 00:00:00 UTC));
    let same_instant = common::finding("octo/app", 12, "d", datetime!(2024-05-02 00:00:00 UTC));
    for f in [&newest, &same_instant, &oldest, &middle] {
        store.put_finding(f).await.unwrap();
    }
    // Neighbours that must not leak in: another PR (whose scope shares a prefix), the
    // same PR number in another repository.
    for f in [
        common::finding("octo/app", 1, "x", datetime!(2024-01-01 00:00 UTC)),
        common::finding("octo/app", 123, "y", datetime!(2024-01-01 00:00 UTC)),
        common::finding("octo/app-2", 12, "z", datetime!(2024-01-01 00:00 UTC)),
    ] {
        store.put_finding(&f).await.unwrap();
    }

    let ids: Vec<String> = store
        .findings_for_pr("octo/app", 12)
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.id)
        .collect();
    assert_eq!(ids, ["c", "b", "a", "d"], "oldest first, id breaks ties");

    let only = |repo: &'static str, pr: u64| {
        let store = Arc::clone(&store);
        async move {
            store
                .findings_for_pr(repo, pr)
                .await
                .unwrap()
                .into_iter()
                .map(|f| f.id)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(only("octo/app", 1).await, ["x"]);
    assert_eq!(only("octo/app", 123).await, ["y"]);
    assert_eq!(only("octo/app-2", 12).await, ["z"]);
    assert!(only("octo/app-2", 1).await.is_empty());
}

// --- memory ---------------------------------------------------------------------------

async fn check_memory_records(store: Arc<dyn Store>) {
    let repo = "octo/app";
    let org = "org:octo";
    assert!(store.memory(repo).await.unwrap().is_empty());

    let learning = json!({ "id": "L-3f9a", "text": "unwrap is fine in tests ✓ 日本" });
    assert!(
        store
            .put_memory(repo, "learning#L-3f9a", &learning, 0)
            .await
            .unwrap()
    );
    assert!(
        !store
            .put_memory(repo, "learning#L-3f9a", &json!({ "id": "other" }), 0)
            .await
            .unwrap(),
        "an insert never replaces"
    );
    for (partition, key) in [
        (repo, "stats"),
        (repo, "pattern#p1"),
        (org, "learning#L-3f9a"),
        ("octo/app-2", "stats"),
    ] {
        assert!(
            store
                .put_memory(partition, key, &json!({ "k": key }), 0)
                .await
                .unwrap()
        );
    }
    let items = store.memory(repo).await.unwrap();
    let keys: Vec<&str> = items.iter().map(|i| i.sort_key.as_str()).collect();
    assert_eq!(
        keys,
        ["learning#L-3f9a", "pattern#p1", "stats"],
        "sort-key order, one partition"
    );
    assert_eq!(items[0].record, learning);
    assert_eq!(items[0].version, 1);
    assert_eq!(
        store.memory(org).await.unwrap().len(),
        1,
        "same key in another partition"
    );

    // Replacing needs the version read: a stale writer loses.
    let edited = json!({ "id": "L-3f9a", "text": "unwrap is fine in tests and benches" });
    assert!(
        store
            .put_memory(repo, "learning#L-3f9a", &edited, 1)
            .await
            .unwrap()
    );
    assert!(
        !store
            .put_memory(repo, "learning#L-3f9a", &json!({ "stale": true }), 1)
            .await
            .unwrap()
    );
    assert!(
        !store
            .put_memory(repo, "absent", &json!({}), 3)
            .await
            .unwrap()
    );
    let items = store.memory(repo).await.unwrap();
    assert_eq!(items[0].record, edited);
    assert_eq!(items[0].version, 2);
    assert_eq!(items.len(), 3);
}

async fn check_concurrent_memory_writers_have_one_winner(store: Arc<dyn Store>) {
    let repo = "octo/race";
    assert!(
        store
            .put_memory(repo, "stats", &json!({ "n": 0 }), 0)
            .await
            .unwrap()
    );
    for round in 0..3u64 {
        let outcomes = race(&store, move |store| async move {
            store
                .put_memory(repo, "stats", &json!({ "n": round + 1 }), round + 1)
                .await
                .unwrap()
        })
        .await;
        assert_eq!(
            outcomes.iter().filter(|won| **won).count(),
            1,
            "round {round}: {outcomes:?}"
        );
    }
    assert_eq!(store.memory(repo).await.unwrap()[0].version, 4);
}

// --- corrupt records (needs a backend-specific way to write garbage) ------------------

async fn check_corrupt_record_is_reported(fixture: common::Fixture) {
    fixture
        .store
        .put_installation(&common::installation(77))
        .await
        .unwrap();
    fixture.vandal.corrupt_installation(77).await;
    match fixture.store.installation(77).await {
        Err(StoreError::Corrupt { key, reason }) => {
            assert!(key.contains("77"), "the error names the record: {key}");
            assert!(!reason.is_empty());
        }
        other => panic!("expected a Corrupt error, got {other:?}"),
    }
    assert_eq!(
        fixture.store.installation(78).await.unwrap(),
        None,
        "one bad record does not poison the others"
    );
}

#[tokio::test]
async fn sqlite_corrupt_record_is_reported() {
    check_corrupt_record_is_reported(common::sqlite()).await;
}

#[tokio::test]
async fn dynamodb_corrupt_record_is_reported() {
    check_corrupt_record_is_reported(common::dynamo().await).await;
}

// --- owned claims, added counters, review runs ------------------------------------------

async fn check_owned_claims(store: Arc<dyn Store>) {
    let key = "run#octo/app#5#abc";
    assert_eq!(
        store.claim_as(key, "delivery-1", HOUR).await.unwrap(),
        Claim::Won
    );
    assert_eq!(
        store.claim_as(key, "delivery-1", HOUR).await.unwrap(),
        Claim::Won,
        "the owner's retry resumes its own claim"
    );
    assert_eq!(
        store.claim_as(key, "delivery-2", HOUR).await.unwrap(),
        Claim::AlreadyClaimed,
        "another owner is locked out"
    );
    assert_eq!(
        store.claim(key, HOUR).await.unwrap(),
        Claim::AlreadyClaimed,
        "an owned claim also blocks a plain claim"
    );
    assert!(store.is_claimed(key).await.unwrap());

    // A lapsed owned claim goes to whoever asks next.
    let short = "run#octo/app#5#def";
    assert_eq!(
        store
            .claim_as(short, "delivery-1", Duration::from_secs(1))
            .await
            .unwrap(),
        Claim::Won
    );
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(
        store.claim_as(short, "delivery-2", HOUR).await.unwrap(),
        Claim::Won
    );
    assert_eq!(
        store.claim_as(short, "delivery-1", HOUR).await.unwrap(),
        Claim::AlreadyClaimed,
        "the old owner lost it once it lapsed and was taken"
    );
}

async fn check_concurrent_owned_claims_have_one_winner(store: Arc<dyn Store>) {
    let outcomes = race(&store, |store| async move {
        let owner = uuid::Uuid::new_v4().to_string();
        store.claim_as("run#race", &owner, HOUR).await.unwrap()
    })
    .await;
    assert_eq!(won(&outcomes), 1, "{outcomes:?}");
}

async fn check_added_counters(store: Arc<dyn Store>) {
    let scope = keys::pr_scope("octo/app", 9);
    assert_eq!(
        store
            .add_to_counter(&scope, "tokens_in", 1200)
            .await
            .unwrap(),
        1200
    );
    assert_eq!(
        store.add_to_counter(&scope, "tokens_in", 34).await.unwrap(),
        1234
    );
    assert_eq!(
        store.add_to_counter(&scope, "tokens_out", 0).await.unwrap(),
        0
    );
    assert_eq!(store.counter(&scope, "tokens_in").await.unwrap(), 1234);
    assert_eq!(
        store
            .counter(&keys::pr_scope("octo/app", 10), "tokens_in")
            .await
            .unwrap(),
        0
    );
    let totals = race(&store, |store| async move {
        store
            .add_to_counter(&keys::pr_scope("octo/app", 11), "cost", 5)
            .await
            .unwrap()
    })
    .await;
    let distinct: BTreeSet<u64> = totals.into_iter().collect();
    assert_eq!(distinct.len(), RACERS, "every add saw its own total");
    assert_eq!(
        store
            .counter(&keys::pr_scope("octo/app", 11), "cost")
            .await
            .unwrap(),
        5 * RACERS as u64
    );
}

/// Usage goes to several counters at once (one write a scope on DynamoDB): they read
/// back one by one and together, add to what a counter held from single adds (counters
/// written before the combined layout), skip zero deltas, add up under a race, and go
/// with their repository on a purge and a move.
async fn check_counters_added_together(store: Arc<dyn Store>) {
    let scope = "usage#octo/sum#2026-11";
    let names = ["calls", "tokens", "cost", "never"];
    assert_eq!(store.counters(scope, &names).await.unwrap(), [0, 0, 0, 0]);
    store.add_to_counter(scope, "calls", 2).await.unwrap();
    let usage = [("calls", 3), ("tokens", 100), ("cost", 0)];
    store.add_to_counters(scope, &usage).await.unwrap();
    store.add_to_counters(scope, &[]).await.unwrap();
    assert_eq!(store.counters(scope, &names).await.unwrap(), [5, 100, 0, 0]);
    assert_eq!(store.counter(scope, "calls").await.unwrap(), 5);
    assert_eq!(store.counters(scope, &["tokens"]).await.unwrap(), [100]);

    let raced = keys::pr_scope("octo/sum", 4);
    race(&store, |store| {
        let raced = raced.clone();
        async move {
            let usage = [("calls", 1), ("tokens", 10)];
            store.add_to_counters(&raced, &usage).await.unwrap();
        }
    })
    .await;
    let racers = RACERS as u64;
    assert_eq!(
        store.counters(&raced, &["calls", "tokens"]).await.unwrap(),
        [racers, 10 * racers]
    );
    assert_eq!(
        store
            .counters("usage#octo/other#2026-11", &names[..2])
            .await
            .unwrap(),
        [0, 0],
        "scopes are independent"
    );

    store.rekey_repository("octo/sum", "repo:77").await.unwrap();
    assert_eq!(
        store
            .counters("usage#repo:77#2026-11", &names)
            .await
            .unwrap(),
        [5, 100, 0, 0]
    );
    assert_eq!(store.counters(scope, &names[..1]).await.unwrap(), [0]);
    store.purge_repository("repo:77").await.unwrap();
    assert_eq!(
        store
            .counters(&keys::pr_scope("repo:77", 4), &["calls"])
            .await
            .unwrap(),
        [0]
    );
}

async fn check_review_runs(store: Arc<dyn Store>) {
    let run = |sha: &str, minute: u8, state: RunState| ReviewRun {
        repo: "octo/app".into(),
        pr: 3,
        head_sha: sha.into(),
        base_sha: "base".into(),
        trigger: "synchronize".into(),
        state,
        check_run_id: Some(77),
        review_id: None,
        review_url: None,
        started_at: datetime!(2026-01-01 10:00 UTC) + time::Duration::minutes(minute.into()),
        finished_at: None,
    };
    assert_eq!(store.review_run("octo/app", 3, "aaa").await.unwrap(), None);
    // Inserted out of order; read back oldest first.
    store
        .put_review_run(&run("bbb", 5, RunState::Running))
        .await
        .unwrap();
    store
        .put_review_run(&run("aaa", 1, RunState::Published))
        .await
        .unwrap();
    let mut other_pr = run("ccc", 0, RunState::Running);
    other_pr.pr = 30;
    store.put_review_run(&other_pr).await.unwrap();

    let mut finished = run("bbb", 5, RunState::Published);
    finished.review_id = Some(9001);
    finished.finished_at = Some(datetime!(2026-01-01 10:07 UTC));
    store.put_review_run(&finished).await.unwrap();

    assert_eq!(
        store.review_run("octo/app", 3, "bbb").await.unwrap(),
        Some(finished.clone())
    );
    let runs = store.review_runs("octo/app", 3).await.unwrap();
    let shas: Vec<_> = runs.iter().map(|r| r.head_sha.as_str()).collect();
    assert_eq!(shas, vec!["aaa", "bbb"], "oldest first, other PRs excluded");
    assert_eq!(runs[1], finished, "upsert replaced the running record");
}

// --- helpers --------------------------------------------------------------------------

/// Run `RACERS` copies of `attempt` at the same instant and collect what each got.
async fn race<T, F, Fut>(store: &Arc<dyn Store>, attempt: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(Arc<dyn Store>) -> Fut,
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    let start = Arc::new(Barrier::new(RACERS));
    let tasks: Vec<_> = (0..RACERS)
        .map(|_| {
            let start = Arc::clone(&start);
            let attempt = attempt(Arc::clone(store));
            tokio::spawn(async move {
                start.wait().await;
                attempt.await
            })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(RACERS);
    for task in tasks {
        outcomes.push(task.await.expect("racer panicked"));
    }
    outcomes
}

fn won(outcomes: &[Claim]) -> usize {
    outcomes.iter().filter(|c| **c == Claim::Won).count()
}

// --- tenancy ----------------------------------------------------------------------------

/// An uninstalled repository's findings, runs, counters and memory all go; a repository
/// whose name merely starts the same (`octo/app-2`), and the organisation's memory, stay
/// until purged themselves. Purging again is harmless.
async fn check_purge_takes_one_repository_whole(store: Arc<dyn Store>) {
    let run = |repo: &str| ReviewRun {
        repo: repo.into(),
        pr: 3,
        head_sha: "aaa".into(),
        base_sha: "base".into(),
        trigger: "opened".into(),
        state: RunState::Published,
        check_run_id: None,
        review_id: None,
        review_url: None,
        started_at: datetime!(2026-01-01 10:00 UTC),
        finished_at: None,
    };
    let record = serde_json::json!({ "text": "we squash merge" });
    for repo in ["octo/app", "octo/app-2"] {
        store
            .put_finding(&common::posted_finding(repo, 3, "f-1", 11))
            .await
            .unwrap();
        store.put_review_run(&run(repo)).await.unwrap();
        store
            .add_to_counter(&keys::pr_scope(repo, 3), "turns", 2)
            .await
            .unwrap();
        store
            .add_to_counter(&format!("usage#{repo}#2026-11"), "reviews", 1)
            .await
            .unwrap();
        assert!(
            store
                .put_memory(repo, "learning#L-1", &record, 0)
                .await
                .unwrap()
        );
    }
    assert!(
        store
            .put_memory("org:octo", "learning#L-2", &record, 0)
            .await
            .unwrap()
    );

    let deleted = store.purge_repository("octo/app").await.unwrap();
    assert_eq!(deleted, 5, "finding, run, two counters, one memory record");
    assert!(
        store
            .findings_for_pr("octo/app", 3)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.finding_by_comment("octo/app", 11).await.unwrap(),
        None
    );
    assert!(store.review_runs("octo/app", 3).await.unwrap().is_empty());
    assert_eq!(
        store
            .counter(&keys::pr_scope("octo/app", 3), "turns")
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .counter("usage#octo/app#2026-11", "reviews")
            .await
            .unwrap(),
        0
    );
    assert!(store.memory("octo/app").await.unwrap().is_empty());

    assert_eq!(
        store.findings_for_pr("octo/app-2", 3).await.unwrap().len(),
        1
    );
    assert_eq!(store.review_runs("octo/app-2", 3).await.unwrap().len(), 1);
    assert_eq!(
        store
            .counter(&keys::pr_scope("octo/app-2", 3), "turns")
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store
            .counter("usage#octo/app-2#2026-11", "reviews")
            .await
            .unwrap(),
        1
    );
    assert_eq!(store.memory("octo/app-2").await.unwrap().len(), 1);
    assert_eq!(store.memory("org:octo").await.unwrap().len(), 1);

    assert_eq!(store.purge_repository("octo/app").await.unwrap(), 0);
    assert_eq!(store.purge_memory("org:octo").await.unwrap(), 1);
    assert!(store.memory("org:octo").await.unwrap().is_empty());
}

/// Moving a repository from its name to its id takes every kind of record, rewrites the
/// records' own `repo`, keeps what the new key already holds (newer), leaves a repository
/// whose name merely starts the same alone, and is harmless to run again.
async fn check_rekey_moves_one_repository_whole(store: Arc<dyn Store>) {
    let run = |repo: &str| ReviewRun {
        repo: repo.into(),
        pr: 3,
        head_sha: "aaa".into(),
        base_sha: "base".into(),
        trigger: "opened".into(),
        state: RunState::Published,
        check_run_id: None,
        review_id: None,
        review_url: None,
        started_at: datetime!(2026-01-01 10:00 UTC),
        finished_at: None,
    };
    for repo in ["octo/app", "octo/app-2"] {
        store
            .put_finding(&common::posted_finding(repo, 3, "f-1", 11))
            .await
            .unwrap();
        store.put_review_run(&run(repo)).await.unwrap();
        store
            .add_to_counter(&keys::pr_scope(repo, 3), "turns", 2)
            .await
            .unwrap();
        store
            .add_to_counter(&format!("usage#{repo}#2026-11"), "reviews", 1)
            .await
            .unwrap();
        let learning = serde_json::json!({ "text": "we squash merge", "repo": repo });
        assert!(
            store
                .put_memory(repo, "learning#L-1", &learning, 0)
                .await
                .unwrap()
        );
    }
    // Written under the id already (a job that ran before the move): kept.
    let newer = serde_json::json!({ "text": "newer", "repo": "repo:9" });
    assert!(
        store
            .put_memory("repo:9", "learning#L-1", &newer, 0)
            .await
            .unwrap()
    );

    let moved = store.rekey_repository("octo/app", "repo:9").await.unwrap();
    assert_eq!(
        moved, 4,
        "finding, run, two counters; the learning was there"
    );

    assert!(
        store
            .findings_for_pr("octo/app", 3)
            .await
            .unwrap()
            .is_empty()
    );
    let found = store.findings_for_pr("repo:9", 3).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].repo, "repo:9", "the record names its new key");
    let by_comment = store.finding_by_comment("repo:9", 11).await.unwrap();
    assert_eq!(by_comment.map(|f| f.id), Some("f-1".to_string()));
    assert_eq!(
        store.finding_by_comment("octo/app", 11).await.unwrap(),
        None
    );
    let runs = store.review_runs("repo:9", 3).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].repo, "repo:9");
    assert!(store.review_runs("octo/app", 3).await.unwrap().is_empty());
    assert_eq!(
        store
            .counter(&keys::pr_scope("repo:9", 3), "turns")
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store
            .counter(&keys::pr_scope("octo/app", 3), "turns")
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .counter("usage#repo:9#2026-11", "reviews")
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .counter("usage#octo/app#2026-11", "reviews")
            .await
            .unwrap(),
        0
    );
    let memory = store.memory("repo:9").await.unwrap();
    assert_eq!(memory.len(), 1);
    assert_eq!(
        memory[0].record["text"], "newer",
        "the id's own record wins"
    );
    assert!(store.memory("octo/app").await.unwrap().is_empty());

    // The neighbour is untouched.
    assert_eq!(
        store.findings_for_pr("octo/app-2", 3).await.unwrap().len(),
        1
    );
    assert_eq!(store.review_runs("octo/app-2", 3).await.unwrap().len(), 1);
    assert_eq!(
        store
            .counter(&keys::pr_scope("octo/app-2", 3), "turns")
            .await
            .unwrap(),
        2
    );
    assert_eq!(store.memory("octo/app-2").await.unwrap().len(), 1);

    assert_eq!(
        store.rekey_repository("octo/app", "repo:9").await.unwrap(),
        0
    );

    // An organisation's partition: learnings taught in this repository name its new key,
    // the others keep theirs.
    let here = serde_json::json!({ "text": "a", "repo": "octo/app-2" });
    let there = serde_json::json!({ "text": "b", "repo": "octo/other" });
    assert!(
        store
            .put_memory("org:octo", "learning#L-2", &here, 0)
            .await
            .unwrap()
    );
    assert!(
        store
            .put_memory("org:octo", "learning#L-3", &there, 0)
            .await
            .unwrap()
    );
    assert_eq!(store.rekey_memory("org:octo", "owner:5").await.unwrap(), 2);
    assert!(store.memory("org:octo").await.unwrap().is_empty());
    let org = store.memory("owner:5").await.unwrap();
    assert_eq!(org.len(), 2);
    assert_eq!(org[0].version, 1, "versions travel with the records");
    assert_eq!(store.rekey_memory("org:octo", "owner:5").await.unwrap(), 0);
}
