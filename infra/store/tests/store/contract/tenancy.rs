//! The contract of `Tenancy`: a repository purged or moved whole, and nothing else.

use super::*;

crate::common::on_both_adapters!(
    store;
    check_purge_takes_one_repository_whole,
    check_rekey_moves_one_repository_whole,
);

/// An uninstalled repository's findings, runs, counters and memory all go; a repository
/// whose name merely starts the same (`octo/app-2`), and the organisation's memory, stay
/// until purged themselves. Purging again is harmless.
async fn check_purge_takes_one_repository_whole(store: Arc<dyn Store>) {
    for repo in ["octo/app", "octo/app-2"] {
        seed(store.as_ref(), repo).await;
    }
    let record = serde_json::json!({ "text": "we squash merge" });
    assert!(
        store
            .put_memory("org:octo", "learning#L-2", &record, 0)
            .await
            .unwrap()
    );

    let deleted = store.purge_repository("octo/app").await.unwrap();
    assert_eq!(deleted, 5, "finding, run, two counters, one memory record");
    assert_eq!(kept(store.as_ref(), "octo/app").await, NOTHING);
    assert_eq!(
        store.finding_by_comment("octo/app", 11).await.unwrap(),
        None
    );
    assert_eq!(kept(store.as_ref(), "octo/app-2").await, SEEDED);
    assert_eq!(store.memory("org:octo").await.unwrap().len(), 1);

    assert_eq!(store.purge_repository("octo/app").await.unwrap(), 0);
    assert_eq!(store.purge_memory("org:octo").await.unwrap(), 1);
    assert!(store.memory("org:octo").await.unwrap().is_empty());
}

/// Moving a repository from its name to its id takes every kind of record, rewrites the
/// records' own `repo`, keeps what the new key already holds (newer), leaves a repository
/// whose name merely starts the same alone, and is harmless to run again.
async fn check_rekey_moves_one_repository_whole(store: Arc<dyn Store>) {
    for repo in ["octo/app", "octo/app-2"] {
        seed(store.as_ref(), repo).await;
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
    assert_eq!(kept(store.as_ref(), "octo/app").await, NOTHING);
    assert_eq!(kept(store.as_ref(), "repo:9").await, SEEDED);
    let found = store.findings_for_pr("repo:9", 3).await.unwrap();
    assert_eq!(found[0].repo, "repo:9", "the record names its new key");
    let by_comment = store.finding_by_comment("repo:9", 11).await.unwrap();
    assert_eq!(by_comment.map(|f| f.id), Some("f-1".to_string()));
    assert_eq!(
        store.finding_by_comment("octo/app", 11).await.unwrap(),
        None
    );
    let runs = store.review_runs("repo:9", 3).await.unwrap();
    assert_eq!(runs[0].repo, "repo:9");
    let memory = store.memory("repo:9").await.unwrap();
    assert_eq!(
        memory[0].record["text"], "newer",
        "the id's own record wins"
    );
    assert_eq!(
        kept(store.as_ref(), "octo/app-2").await,
        SEEDED,
        "the neighbour is untouched"
    );

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

/// What [`seed`] writes about a repository, as [`kept`] counts it.
const SEEDED: [u64; 5] = [1, 1, 2, 1, 1];
const NOTHING: [u64; 5] = [0; 5];

/// One record of each kind kept about `repo`: a finding (posted as comment 11) on PR 3, a
/// review run, the PR's turns (2), a month's usage and a learning naming the repository.
async fn seed(store: &dyn Store, repo: &str) {
    let run = ReviewRun {
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
        let_through_by: None,
        moved_from: None,
    };
    store
        .put_finding(&common::posted_finding(repo, 3, "f-1", 11))
        .await
        .unwrap();
    store.put_review_run(&run).await.unwrap();
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

/// What the store holds about `repo`: PR 3's findings and runs, its turns, the month's
/// reviews and the memory records.
async fn kept(store: &dyn Store, repo: &str) -> [u64; 5] {
    let len = |n: usize| u64::try_from(n).unwrap();
    [
        len(store.findings_for_pr(repo, 3).await.unwrap().len()),
        len(store.review_runs(repo, 3).await.unwrap().len()),
        store
            .counter(&keys::pr_scope(repo, 3), "turns")
            .await
            .unwrap(),
        store
            .counter(&format!("usage#{repo}#2026-11"), "reviews")
            .await
            .unwrap(),
        len(store.memory(repo).await.unwrap().len()),
    ]
}
