//! The contract of `Counters`: ceilings that hold under races, and sums.

use super::*;

crate::common::on_both_adapters!(
    store;
    check_counters_stop_at_ceiling,
    check_concurrent_increments_respect_ceiling,
    check_added_counters,
    check_counters_added_together,
);

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
    // Adding nothing to a counter that has a value answers that value.
    assert_eq!(
        store.add_to_counter(&scope, "tokens_in", 0).await.unwrap(),
        1234
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
