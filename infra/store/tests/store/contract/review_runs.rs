//! The contract of `ReviewRuns`.

use super::*;

crate::common::on_both_adapters!(
    store;
    check_review_runs,
);

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
        let_through_by: None,
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
    finished.let_through_by = Some("carol".into());
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
