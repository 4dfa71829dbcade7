//! Signals count only from people who could have decided, and exactly once (the trust
//! issue): reactions, concessions and "won't fix" move what Parley learns only when they
//! come from someone with `gate.resolveBy`; an outcome is counted once however often
//! its job is retried; a review's write-back does not undo what the conversation worker
//! decided while the review ran; a review counts once in the month's usage. Fake GitHub
//! and fake LLM over HTTP; every scenario on SQLite and on DynamoDB (moto).

use parley_core::job::ReviewTrigger;
use parley_core::learning::{RepoMemory, memory};
use parley_core::ports::{Finding, FindingState, JobHandler, Verdict};
use parley_tests::flaky_store::{FlakyStore, Outage};
use parley_tests::review_harness::*;
use parley_tests::tenants::{key, org};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

parley_tests::review_on_both_stores!(
    strangers_reactions_decide_nothing_and_a_maintainers_do,
    wont_fix_from_the_author_without_resolve_by_records_no_rejection,
    a_concession_to_a_reader_records_no_rejection,
    the_authors_own_resolution_after_arguing_records_no_rejection,
    a_redelivered_close_counts_once,
    an_outcome_set_while_a_review_runs_survives_its_write_back,
    an_outcome_a_review_records_while_a_turn_runs_survives_the_turn,
    one_review_counts_once_in_the_month,
);

async fn by_title(h: &ReviewHarness, title: &str) -> Finding {
    h.findings()
        .await
        .into_iter()
        .find(|f| f.title == title)
        .unwrap_or_else(|| panic!("no finding {title}"))
}

async fn learned(h: &ReviewHarness) -> RepoMemory {
    memory::load(h.store.as_ref(), &key(REPO), &org(OWNER))
        .await
        .expect("memory")
}

/// Accepted, rejected, ignored, over the repository's statistics.
async fn totals(h: &ReviewHarness) -> (u64, u64, u64) {
    let total = learned(h).await.stats.total();
    (total.accepted, total.rejected, total.ignored)
}

/// Rejections counted by the patterns, over all of them.
async fn pattern_rejections(h: &ReviewHarness) -> u32 {
    learned(h)
        .await
        .patterns
        .iter()
        .map(|(_, p)| p.rejections)
        .sum()
}

/// Everything Parley wrote on the PR: top-level comments and thread replies.
fn parley_wrote(h: &ReviewHarness) -> Vec<String> {
    let mut said = parley_says(h);
    said.extend(
        h.github
            .review_comments(REPO, PR)
            .into_iter()
            .filter(|c| c["user"]["login"] == "parley[bot]" && !c["in_reply_to_id"].is_null())
            .map(|c| c["body"].as_str().unwrap_or_default().to_string()),
    );
    said
}

async fn review(h: &ReviewHarness, findings: &[serde_json::Value]) {
    h.llm.answer_in_turn(SECURITY, &[&reply(findings)]);
    h.review_opened().await;
}

fn mark_closed(h: &ReviewHarness) {
    h.github.update_pull(REPO, PR, |pr| {
        pr["state"] = "closed".into();
        pr["merged"] = true.into();
    });
}

/// Permission lookups made for `login` so far.
fn lookups_of(h: &ReviewHarness, login: &str) -> usize {
    h.github
        .requests_to("GET", &format!("/collaborators/{login}/permission"))
        .len()
}

async fn strangers_reactions_decide_nothing_and_a_maintainers_do(h: ReviewHarness) {
    review(
        &h,
        &[
            finding("src/db.rs", 2, "medium", 90, "Unchecked id"),
            finding("src/db.rs", 3, "medium", 90, "Unused helper"),
            finding("src/db.rs", 4, "low", 90, "Missing doc"),
        ],
    )
    .await;
    let comment = |f: Finding| f.comment_id.expect("inline");
    let unchecked = comment(by_title(&h, "Unchecked id").await);
    let unused = comment(by_title(&h, "Unused helper").await);
    let doc = comment(by_title(&h, "Missing doc").await);
    h.github.set_permission(REPO, "maya", "write");
    // Strangers (read, the fake's default for anyone) and a bot pile 👎 on every finding.
    for root in [unchecked, unused, doc] {
        for who in ["x1", "x2", "x3", "dependabot[bot]"] {
            h.github.react_to_review_comment(root, "-1", who);
        }
    }
    // The maintainer's one 👎 on "Unused helper" outweighs two strangers' 👍 there, and
    // their 👍 on "Missing doc" outweighs the strangers' 👎.
    for who in ["x4", "x5"] {
        h.github.react_to_review_comment(unused, "+1", who);
    }
    h.github.react_to_review_comment(unused, "-1", "maya");
    h.github.react_to_review_comment(doc, "+1", "maya");
    mark_closed(&h);
    h.conversation()
        .handle(closed_job(false, "close-1"))
        .await
        .expect("bookkeeping");

    let outcome = |f: Finding| f.outcome.map(|o| (o.verdict, o.signal, o.by));
    assert_eq!(
        outcome(by_title(&h, "Unchecked id").await),
        Some((Verdict::Ignored, "closed_unanswered".into(), None)),
        "strangers' 👎 reject nothing"
    );
    assert_eq!(
        outcome(by_title(&h, "Unused helper").await),
        Some((Verdict::Rejected, "thumbs_down".into(), Some("maya".into())))
    );
    assert_eq!(
        outcome(by_title(&h, "Missing doc").await),
        Some((Verdict::Accepted, "thumbs_up".into(), Some("maya".into())))
    );
    assert_eq!(totals(&h).await, (1, 1, 1));
    let memory = learned(&h).await;
    assert_eq!(memory.patterns.len(), 1, "{:?}", memory.patterns);
    let pattern = &memory.patterns[0].1;
    assert_eq!(pattern.title, "unused helper");
    assert_eq!(
        pattern.people.iter().collect::<Vec<_>>(),
        vec!["maya"],
        "only the maintainer fed the pattern"
    );
    // Each person's permission was looked up once for the whole PR, bots never.
    for who in ["x1", "x2", "x3", "x4", "x5", "maya"] {
        assert_eq!(lookups_of(&h, who), 1, "{who}");
    }
    assert_eq!(lookups_of(&h, "dependabot[bot]"), 0);
}

async fn wont_fix_from_the_author_without_resolve_by_records_no_rejection(h: ReviewHarness) {
    review(
        &h,
        &[
            finding("src/db.rs", 3, "high", 90, "SQL injection"),
            finding("src/db.rs", 2, "medium", 90, "Unchecked id"),
            finding("src/db.rs", 5, "medium", 90, "Unused helper"),
        ],
    )
    .await;
    let root = |f: Finding| f.comment_id.expect("inline");
    // alice wrote the PR and has read access (the fake's default).
    let blocking = root(by_title(&h, "SQL injection").await);
    h.conversation()
        .handle(reply_in_thread(
            &h,
            blocking,
            "alice",
            "won't fix: the id is validated upstream",
        ))
        .await
        .expect("turn");
    let said = parley_wrote(&h).join("\n---\n");
    assert!(
        said.contains("has not changed since it was posted"),
        "a clear reply: {said}"
    );
    let sql = by_title(&h, "SQL injection").await;
    assert_eq!(sql.outcome, None, "no rejection recorded");
    assert_eq!(sql.state, FindingState::Open);

    // On a finding that does not block, the author may close it, but it is not counted.
    let minor = root(by_title(&h, "Unchecked id").await);
    h.conversation()
        .handle(reply_in_thread(
            &h,
            minor,
            "alice",
            "won't fix: ids are trusted here",
        ))
        .await
        .expect("turn");
    let unchecked = by_title(&h, "Unchecked id").await;
    assert_eq!(unchecked.state, FindingState::WontFix);
    assert_eq!(unchecked.outcome, None, "no rejection recorded");
    let said = parley_wrote(&h).join("\n---\n");
    assert!(
        said.contains("is marked won't fix") && said.contains("not counted as a false positive"),
        "{said}"
    );
    assert_eq!(totals(&h).await, (0, 0, 0));
    assert_eq!(pattern_rejections(&h).await, 0);

    // A maintainer's won't fix is a rejection.
    h.github.set_permission(REPO, "maya", "write");
    let helper = root(by_title(&h, "Unused helper").await);
    h.conversation()
        .handle(reply_in_thread(
            &h,
            helper,
            "maya",
            "won't fix: it is used by the plugin loader",
        ))
        .await
        .expect("turn");
    let unused = by_title(&h, "Unused helper").await;
    assert_eq!(
        unused.outcome.map(|o| (o.verdict, o.signal)),
        Some((Verdict::Rejected, "wont_fix".into()))
    );
    assert_eq!(totals(&h).await, (0, 1, 0));
    assert_eq!(pattern_rejections(&h).await, 1);
}

async fn a_concession_to_a_reader_records_no_rejection(h: ReviewHarness) {
    // Readers may talk to Parley here (config is cached, so it is in place first).
    h.config("mention:\n  minPermission: read\n");
    review(
        &h,
        &[
            finding("src/db.rs", 2, "medium", 90, "Unchecked id"),
            finding("src/db.rs", 3, "medium", 90, "Unused helper"),
        ],
    )
    .await;
    h.llm.answer(
        CONVERSATION,
        &json!({ "reply": "Fair point, I was wrong here.", "resolution": "concede" }).to_string(),
    );
    h.github.set_permission(REPO, "rita", "read");
    let unchecked = by_title(&h, "Unchecked id").await;
    h.conversation()
        .handle(reply_in_thread(
            &h,
            unchecked.comment_id.expect("inline"),
            "rita",
            "The id comes from our own router, so it is always numeric.",
        ))
        .await
        .expect("turn");
    assert!(
        parley_wrote(&h)
            .iter()
            .any(|s| s.contains("Fair point, I was wrong here.")),
        "the concession is still a reply in the thread"
    );
    assert_eq!(by_title(&h, "Unchecked id").await.outcome, None);
    assert_eq!(totals(&h).await, (0, 0, 0));
    assert_eq!(pattern_rejections(&h).await, 0);

    // The same concession to a maintainer is a rejection.
    h.github.set_permission(REPO, "maya", "write");
    let unused = by_title(&h, "Unused helper").await;
    h.conversation()
        .handle(reply_in_thread(
            &h,
            unused.comment_id.expect("inline"),
            "maya",
            "The plugin loader calls it by name.",
        ))
        .await
        .expect("turn");
    assert_eq!(
        by_title(&h, "Unused helper")
            .await
            .outcome
            .map(|o| (o.verdict, o.signal)),
        Some((Verdict::Rejected, "conceded".into()))
    );
    assert_eq!(totals(&h).await, (0, 1, 0));
    assert_eq!(pattern_rejections(&h).await, 1);
}

/// GitHub lets a PR's author resolve threads on their own PR: arguing with a finding and
/// resolving it unchanged is a rejection only when the one resolving has resolveBy.
async fn the_authors_own_resolution_after_arguing_records_no_rejection(h: ReviewHarness) {
    review(
        &h,
        &[
            finding("src/db.rs", 2, "medium", 90, "Unchecked id"),
            finding("src/db.rs", 3, "medium", 90, "Unused helper"),
        ],
    )
    .await;
    h.github.set_permission(REPO, "maya", "write");
    for (title, resolver) in [("Unused helper", "alice"), ("Unchecked id", "maya")] {
        let root = by_title(&h, title).await.comment_id.expect("inline");
        // alice (the PR's author, read access) argues in the thread; the reply is on
        // GitHub, which is where the resolution's weighing reads it.
        let _ = reply_in_thread(&h, root, "alice", "This is how the loader finds it.");
        h.conversation()
            .handle(thread_job_by(root, true, &format!("t-{root}"), resolver))
            .await
            .expect("bookkeeping");
        assert_eq!(by_title(&h, title).await.state, FindingState::Resolved);
    }
    assert_eq!(by_title(&h, "Unused helper").await.outcome, None);
    assert_eq!(
        by_title(&h, "Unchecked id")
            .await
            .outcome
            .map(|o| (o.verdict, o.signal, o.by)),
        Some((
            Verdict::Rejected,
            "resolved_after_dispute".into(),
            Some("alice".into())
        ))
    );
    assert_eq!(totals(&h).await, (0, 1, 0));
    assert_eq!(pattern_rejections(&h).await, 1);
}

/// The close job dies at each write of the counting in turn (the statistics, the
/// pattern, marking the finding counted) and is retried, then redelivered once more:
/// every count lands exactly once.
async fn a_redelivered_close_counts_once(h: ReviewHarness) {
    let flaky = FlakyStore::new(h.store.clone());
    let h = ReviewHarness::start_with(Arc::new(flaky.clone()), None).await;
    review(
        &h,
        &[finding("src/db.rs", 3, "medium", 90, "Unused helper")],
    )
    .await;
    h.github.set_permission(REPO, "maya", "write");
    h.github.set_permission(REPO, "sam", "write");
    let unused = by_title(&h, "Unused helper")
        .await
        .comment_id
        .expect("inline");
    for who in ["maya", "sam"] {
        h.github.react_to_review_comment(unused, "-1", who);
    }
    mark_closed(&h);
    // Each attempt gets one step further: the statistics' write fails; then the
    // pattern's; then marking the finding counted.
    for crash in [
        Outage::Nth("put_memory", 0),
        Outage::Nth("put_memory", 1),
        Outage::Nth("put_finding_if", 0),
    ] {
        flaky.reset_calls();
        flaky.set_outage(crash);
        let failed = h.conversation().handle(closed_job(false, "close-1")).await;
        flaky.heal();
        assert!(failed.is_err(), "{crash:?}: the job fails and is retried");
    }
    h.conversation()
        .handle(closed_job(false, "close-1"))
        .await
        .expect("retried");
    let counted = (totals(&h).await, pattern_rejections(&h).await);
    assert_eq!(
        counted,
        ((0, 1, 0), 2),
        "one rejection (from two people), counted once"
    );
    // A redelivery of the close changes nothing.
    h.conversation()
        .handle(closed_job(false, "close-1"))
        .await
        .expect("redelivered");
    assert_eq!((totals(&h).await, pattern_rejections(&h).await), counted);
    let all = h.findings().await;
    assert!(
        all.iter()
            .all(|f| f.outcome.as_ref().is_some_and(|o| o.counted)),
        "{all:#?}"
    );
}

/// A full review reads the PR's findings, and while its passes run a maintainer
/// dismisses a summary-only finding the review will close as "not found again": the
/// dismissal and its outcome survive the review's write-back.
async fn an_outcome_set_while_a_review_runs_survives_its_write_back(h: ReviewHarness) {
    // Line 40 is off the diff: listed only in the summary, closed by a full review that
    // no longer finds it.
    review(
        &h,
        &[finding("src/db.rs", 40, "medium", 90, "Leaky abstraction")],
    )
    .await;
    let id = by_title(&h, "Leaky abstraction").await.id;
    h.github.set_permission(REPO, "maya", "write");
    let held = h.llm.tripwire(SECURITY, 1);
    let full_review = h.run(h.requested("maya", ReviewTrigger::ManualFull, HEAD, "m-1"));
    let dismiss = async {
        held.wait_caught(
            1,
            Duration::from_secs(60),
            "the full review's security pass",
        )
        .await;
        h.conversation()
            .handle(top_level(&h, "maya", &format!("@parley dismiss {id}")))
            .await
            .expect("dismissed");
        assert_eq!(
            by_title(&h, "Leaky abstraction").await.state,
            FindingState::WontFix
        );
        held.release();
    };
    let (reviewed, ()) = tokio::join!(full_review, dismiss);
    reviewed.expect("full review");
    let summary = h.latest_summary();
    assert!(
        summary.contains("1 earlier finding(s) listed only in a summary"),
        "the review did mean to close it: {summary}"
    );
    let after = by_title(&h, "Leaky abstraction").await;
    assert_eq!(after.state, FindingState::WontFix, "{after:#?}");
    assert_eq!(after.state_changed_by.as_deref(), Some("maya"));
    assert_eq!(
        after.outcome.map(|o| (o.verdict, o.signal, o.counted)),
        Some((Verdict::Rejected, "wont_fix".into(), true))
    );
    // And the PR closing later counts nothing again.
    mark_closed(&h);
    h.conversation()
        .handle(closed_job(false, "close-1"))
        .await
        .expect("bookkeeping");
    assert_eq!(totals(&h).await, (0, 1, 0));
}

/// The other way round: a dispute's turn reads the finding, and while the model thinks, a
/// push's review records that the finding's code changed (accepted). The concession to a
/// reader then changes the finding's state, and keeps that outcome.
async fn an_outcome_a_review_records_while_a_turn_runs_survives_the_turn(h: ReviewHarness) {
    h.config("mention:\n  minPermission: read\n");
    review(
        &h,
        &[finding("src/db.rs", 3, "medium", 90, "SQL injection")],
    )
    .await;
    let root = by_title(&h, "SQL injection")
        .await
        .comment_id
        .expect("inline");
    h.llm.answer(
        CONVERSATION,
        &json!({ "reply": "Fair point.", "resolution": "concede" }).to_string(),
    );
    let held = h.llm.tripwire(CONVERSATION, 1);
    h.github.set_permission(REPO, "rita", "read");
    let turn_job = reply_in_thread(&h, root, "rita", "The id is numeric, so it is safe.");
    let handler = h.conversation();
    let turn = handler.handle(turn_job);
    let push = async {
        held.wait_caught(1, Duration::from_secs(60), "the dispute's model call")
            .await;
        h.push_sql_fix();
        h.run(job(ReviewTrigger::Synchronize, HEAD2, "d-2"))
            .await
            .expect("incremental review");
        assert_eq!(
            by_title(&h, "SQL injection")
                .await
                .outcome
                .map(|o| (o.verdict, o.signal)),
            Some((Verdict::Accepted, "code_changed".into()))
        );
        held.release();
    };
    let (answered, ()) = tokio::join!(turn, push);
    answered.expect("turn");
    let after = by_title(&h, "SQL injection").await;
    assert_eq!(after.state, FindingState::WontFix, "{after:#?}");
    assert_eq!(
        after.outcome.map(|o| (o.verdict, o.signal)),
        Some((Verdict::Accepted, "code_changed".into())),
        "the turn's write kept the review's outcome"
    );
    assert_eq!(totals(&h).await, (1, 0, 0));
}

async fn one_review_counts_once_in_the_month(h: ReviewHarness) {
    let month = parley_core::llm::usage::month_scope(&key(REPO), time::OffsetDateTime::now_utc());
    review(
        &h,
        &[finding("src/db.rs", 3, "medium", 90, "Unused helper")],
    )
    .await;
    let reviews = h
        .store
        .counter(&month, parley_core::llm::usage::counters::REVIEWS)
        .await
        .expect("counter");
    assert_eq!(reviews, 1);
    assert_eq!(learned(&h).await.stats.reviews, 1);
}
