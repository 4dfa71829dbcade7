//! The contract of `Findings`: upserts, lookups by comment, conditional writes.

use super::*;

crate::common::on_both_adapters!(
    store;
    check_findings_upsert_and_lookup_by_comment,
    check_conditional_finding_writes,
    check_concurrent_conditional_finding_writers_have_one_winner,
    check_findings_for_pr_order_and_isolation,
);

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
