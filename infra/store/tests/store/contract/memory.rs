//! The contract of `Memory`: versioned records, one winner per version.

use super::*;

crate::common::on_both_adapters!(
    store;
    check_memory_records,
    check_concurrent_memory_writers_have_one_winner,
);

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
