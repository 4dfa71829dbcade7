//! The contract of `ReviewRuns`.

use super::*;

crate::common::on_both_adapters!(
    store;
    check_review_runs,
    check_let_through_is_kept,
    check_let_through_races_a_worker,
);

fn run(sha: &str, minute: u8, state: RunState) -> ReviewRun {
    ReviewRun {
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
        let_through_by: None,
        moved_from: None,
    }
}

async fn check_review_runs(store: Arc<dyn Store>) {
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
    finished.let_through_by = Some("carol".into());
    finished.moved_from = Some("f0f0".into());
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

/// A let-through changes nothing else of the run, and a worker writing back the copy it
/// read before it (a queue retry starting, then ending) does not drop it.
async fn check_let_through_is_kept(store: Arc<dyn Store>) {
    assert!(
        !store
            .let_run_through(&run("aaa", 1, RunState::Failed), "carol")
            .await
            .unwrap(),
        "no run, nothing let through"
    );
    assert_eq!(store.review_run("octo/app", 3, "aaa").await.unwrap(), None);

    let failed = run("aaa", 1, RunState::Failed);
    store.put_review_run(&failed).await.unwrap();
    // The queue's retry read the run before anyone pressed the button.
    let mut retry = failed.clone();
    assert!(store.let_run_through(&failed, "carol").await.unwrap());
    let let_through = ReviewRun {
        let_through_by: Some("carol".into()),
        ..failed.clone()
    };
    assert_eq!(
        store.review_run("octo/app", 3, "aaa").await.unwrap(),
        Some(let_through)
    );

    retry.state = RunState::Running;
    retry.check_run_id = Some(78);
    store.put_review_run(&retry).await.unwrap();
    let stored = store.review_run("octo/app", 3, "aaa").await.unwrap();
    assert_eq!(
        stored,
        Some(ReviewRun {
            let_through_by: Some("carol".into()),
            ..retry.clone()
        }),
        "the retry's write keeps the let-through"
    );
    retry.state = RunState::Failed;
    retry.finished_at = Some(datetime!(2026-01-01 10:09 UTC));
    store.put_review_run(&retry).await.unwrap();
    let stored = store
        .review_run("octo/app", 3, "aaa")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (stored.state, stored.let_through_by.as_deref()),
        (RunState::Failed, Some("carol"))
    );

    // The first let-through stands; others on the same run change nothing.
    assert!(store.let_run_through(&failed, "dave").await.unwrap());
    let stored = store
        .review_run("octo/app", 3, "aaa")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.let_through_by.as_deref(), Some("carol"));
    // Another head of the PR, and another PR, are not let through.
    store
        .put_review_run(&run("bbb", 2, RunState::Failed))
        .await
        .unwrap();
    let other = store
        .review_run("octo/app", 3, "bbb")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(other.let_through_by, None);
    let other_pr = ReviewRun {
        pr: 4,
        ..failed.clone()
    };
    assert!(!store.let_run_through(&other_pr, "carol").await.unwrap());
}

/// Workers writing their stale copies and people letting the head through, all at once:
/// the run ends let through, by one of them.
async fn check_let_through_races_a_worker(store: Arc<dyn Store>) {
    let failed = run("ccc", 1, RunState::Failed);
    store.put_review_run(&failed).await.unwrap();
    let counter = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let outcomes = race(&store, move |store| {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let read = failed.clone();
        let mut stale = failed.clone();
        stale.state = RunState::Running;
        async move {
            if n.is_multiple_of(2) {
                store.put_review_run(&stale).await.unwrap();
                None
            } else {
                let who = format!("maintainer-{n}");
                assert!(store.let_run_through(&read, &who).await.unwrap());
                Some(who)
            }
        }
    })
    .await;
    let stored = store
        .review_run("octo/app", 3, "ccc")
        .await
        .unwrap()
        .unwrap();
    let who = stored.let_through_by.expect("let through");
    assert!(outcomes.contains(&Some(who.clone())), "{who} {outcomes:?}");
    assert_eq!(stored.state, RunState::Running);
}
