//! The monthly LLM budget per installation, end to end: reviews and conversation turns on
//! the fake GitHub and fake LLM, the spend on the store's counters (SQLite and DynamoDB on
//! moto). Under the budget the work runs; at or over it a review concludes a neutral
//! "Budget exhausted" check and the PR gets one note, a mention gets one short note, and
//! the LLM is never called. Spend of an earlier month does not count; an installation's
//! override wins over the default.

use parley_core::budget::{self, BudgetPolicy};
use parley_core::conversation::ConversationHandler;
use parley_core::job::ReviewTrigger;
use parley_core::llm::usage::{counters, installation_month_scope};
use parley_core::ports::Store;
use parley_core::review::ReviewHandler;
use parley_tests::conversation_harness::{self as talk, Harness};
use parley_tests::review_harness::{
    self as rh, HEAD, HEAD2, INSTALLATION, REPO, ReviewHarness, job, parley_says,
};
use time::{Duration, OffsetDateTime};

parley_tests::review_on_both_stores!(
    a_review_under_the_budget_runs_and_counts_against_it,
    a_review_at_the_budget_is_not_run_and_says_so_once,
    a_review_over_the_budget_keeps_an_earlier_failure,
    spend_of_last_month_does_not_count,
    the_override_wins_over_the_default,
    an_override_sets_a_budget_where_there_is_no_default,
);

/// One US dollar in the counters' unit.
const DOLLAR: u64 = 1_000_000;

/// The harness's handler rebuilt with `default_usd` as `PARLEY_MONTHLY_BUDGET_USD`.
fn with_budget(mut h: ReviewHarness, default_usd: Option<f64>) -> ReviewHarness {
    h.services.budget = BudgetPolicy {
        default_monthly_usd: default_usd,
    };
    h.handler = ReviewHandler::new(h.services.clone());
    h
}

async fn spend(store: &dyn Store, installation: u64, at: OffsetDateTime, micro_usd: u64) {
    store
        .add_to_counter(
            &installation_month_scope(installation, at),
            counters::COST_MICRO_USD,
            micro_usd,
        )
        .await
        .expect("seed spend");
}

async fn spent_now(store: &dyn Store, installation: u64) -> u64 {
    store
        .counter(
            &installation_month_scope(installation, OffsetDateTime::now_utc()),
            counters::COST_MICRO_USD,
        )
        .await
        .expect("read spend")
}

fn budget_notes(h: &ReviewHarness) -> Vec<String> {
    parley_says(h)
        .into_iter()
        .filter(|body| body.contains("monthly LLM budget"))
        .collect()
}

async fn a_review_under_the_budget_runs_and_counts_against_it(h: ReviewHarness) {
    let h = with_budget(h, Some(1.0));
    spend(
        h.store.as_ref(),
        INSTALLATION,
        OffsetDateTime::now_utc(),
        DOLLAR - 1,
    )
    .await;

    h.run(job(ReviewTrigger::Opened, HEAD, "d-under"))
        .await
        .expect("review");

    assert!(!h.pass_prompts().is_empty(), "the passes ran");
    let check = h.latest_check("Parley review");
    assert_ne!(
        check["output"]["title"],
        parley_core::review::over_budget::CHECK_TITLE
    );
    assert_eq!(h.reviews().len(), 1, "the review was posted");
    assert!(budget_notes(&h).is_empty());
    // The review's own cost lands on the installation's month, which is now over.
    assert!(spent_now(h.store.as_ref(), INSTALLATION).await > DOLLAR - 1);
    let standing = budget::standing(
        h.store.as_ref(),
        &h.services.budget,
        INSTALLATION,
        OffsetDateTime::now_utc(),
    )
    .await
    .expect("standing");
    assert!(standing.exhausted(), "{standing:?}");
}

async fn a_review_at_the_budget_is_not_run_and_says_so_once(h: ReviewHarness) {
    let h = with_budget(h, Some(1.0));
    spend(
        h.store.as_ref(),
        INSTALLATION,
        OffsetDateTime::now_utc(),
        DOLLAR,
    )
    .await;

    h.run(job(ReviewTrigger::Opened, HEAD, "d-at-1"))
        .await
        .expect("a budget stop is not a failure");

    assert!(h.llm.prompts().is_empty(), "no LLM call at the budget");
    assert!(h.reviews().is_empty(), "no review posted");
    assert_eq!(h.conclusion(), "neutral");
    let check = h.latest_check("Parley review");
    assert_eq!(check["output"]["title"], "Budget exhausted");
    assert_eq!(check["head_sha"], HEAD);
    assert_eq!(budget_notes(&h).len(), 1, "{:#?}", parley_says(&h));

    // The next push: its check says so too, the PR is not told again.
    h.github
        .update_pull(REPO, rh::PR, |pr| pr["head"]["sha"] = HEAD2.into());
    h.run(job(ReviewTrigger::Synchronize, HEAD2, "d-at-2"))
        .await
        .expect("second review");
    let check = h.latest_check("Parley review");
    assert_eq!(check["head_sha"], HEAD2);
    assert_eq!(check["conclusion"], "neutral");
    assert_eq!(check["output"]["title"], "Budget exhausted");
    assert_eq!(budget_notes(&h).len(), 1, "one note per PR a month");
    assert!(h.llm.prompts().is_empty());
}

async fn a_review_over_the_budget_keeps_an_earlier_failure(h: ReviewHarness) {
    // A first review, before any budget, finds a blocking issue.
    h.llm.answer(
        rh::SECURITY,
        &rh::reply(&[rh::finding("src/db.rs", 3, "high", 95, "SQL injection")]),
    );
    h.run(job(ReviewTrigger::Opened, HEAD, "d-before"))
        .await
        .expect("first review");
    assert_eq!(h.latest_check("Parley review")["conclusion"], "failure");
    let calls = h.llm.prompts().len();

    let h = with_budget(h, Some(0.5));
    spend(
        h.store.as_ref(),
        INSTALLATION,
        OffsetDateTime::now_utc(),
        3 * DOLLAR,
    )
    .await;
    h.github
        .update_pull(REPO, rh::PR, |pr| pr["head"]["sha"] = HEAD2.into());
    h.run(job(ReviewTrigger::Synchronize, HEAD2, "d-over"))
        .await
        .expect("over budget");

    assert_eq!(h.llm.prompts().len(), calls, "no LLM call over the budget");
    let check = h.latest_check("Parley review");
    assert_eq!(check["head_sha"], HEAD2);
    // Not reviewing must not lift the open blocking finding.
    assert_eq!(check["conclusion"], "failure");
    assert_eq!(budget_notes(&h).len(), 1);
}

async fn spend_of_last_month_does_not_count(h: ReviewHarness) {
    let h = with_budget(h, Some(1.0));
    let last_month = OffsetDateTime::now_utc() - Duration::days(32);
    spend(h.store.as_ref(), INSTALLATION, last_month, 50 * DOLLAR).await;

    h.run(job(ReviewTrigger::Opened, HEAD, "d-new-month"))
        .await
        .expect("review");

    assert!(!h.pass_prompts().is_empty(), "a new month starts at zero");
    assert_eq!(h.reviews().len(), 1);
    assert!(budget_notes(&h).is_empty());
}

async fn the_override_wins_over_the_default(h: ReviewHarness) {
    // The default (1 USD) is spent twice over, but this installation may spend 5.
    let h = with_budget(h, Some(1.0));
    spend(
        h.store.as_ref(),
        INSTALLATION,
        OffsetDateTime::now_utc(),
        2 * DOLLAR,
    )
    .await;
    budget::set_override(h.store.as_ref(), INSTALLATION, Some(5.0), Some("ops"))
        .await
        .expect("override");
    // Another installation without an override is held to the default.
    spend(h.store.as_ref(), 999, OffsetDateTime::now_utc(), 2 * DOLLAR).await;
    let other = budget::standing(
        h.store.as_ref(),
        &h.services.budget,
        999,
        OffsetDateTime::now_utc(),
    )
    .await
    .expect("standing");
    assert!(other.exhausted());

    h.run(job(ReviewTrigger::Opened, HEAD, "d-override"))
        .await
        .expect("review");
    assert!(
        !h.pass_prompts().is_empty(),
        "the override's budget is left"
    );
    assert_eq!(h.reviews().len(), 1);

    // Cleared, the default applies again.
    budget::set_override(h.store.as_ref(), INSTALLATION, None, Some("ops"))
        .await
        .expect("clear");
    let standing = budget::standing(
        h.store.as_ref(),
        &h.services.budget,
        INSTALLATION,
        OffsetDateTime::now_utc(),
    )
    .await
    .expect("standing");
    assert_eq!(standing.limit, Some((1.0, budget::LimitSource::Default)));
    assert!(standing.exhausted());
}

async fn an_override_sets_a_budget_where_there_is_no_default(h: ReviewHarness) {
    let h = with_budget(h, None);
    spend(
        h.store.as_ref(),
        INSTALLATION,
        OffsetDateTime::now_utc(),
        2 * DOLLAR,
    )
    .await;
    budget::set_override(h.store.as_ref(), INSTALLATION, Some(2.0), None)
        .await
        .expect("override");

    h.run(job(ReviewTrigger::Opened, HEAD, "d-override-only"))
        .await
        .expect("review");
    assert!(h.llm.prompts().is_empty());
    assert_eq!(
        h.latest_check("Parley review")["output"]["title"],
        "Budget exhausted"
    );
}

// --- conversation turns ------------------------------------------------------------------

parley_tests::on_both_stores!(
    a_mention_under_the_budget_is_answered,
    mentions_over_the_budget_get_one_short_note,
    stats_reports_the_spend_the_budget_is_held_to,
);

async fn talk_with_budget(backend: talk::Backend, default_usd: Option<f64>) -> Harness {
    let mut h = Harness::start(backend).await;
    h.services.budget = BudgetPolicy {
        default_monthly_usd: default_usd,
    };
    h.handler = ConversationHandler::new(h.services.clone());
    h
}

async fn a_mention_under_the_budget_is_answered(backend: talk::Backend) {
    let h = talk_with_budget(backend, Some(1.0)).await;
    spend(
        h.store.as_ref(),
        talk::INSTALLATION,
        OffsetDateTime::now_utc(),
        DOLLAR / 2,
    )
    .await;
    let job = h.top_level_comment("bob", "@parley what does this PR change?");

    h.run(job).await.expect("turn");

    assert_eq!(h.prompts().len(), 1);
    assert!(h.notes_of_kind("note").is_empty());
    assert!(spent_now(h.store.as_ref(), talk::INSTALLATION).await > DOLLAR / 2);
}

async fn mentions_over_the_budget_get_one_short_note(backend: talk::Backend) {
    let h = talk_with_budget(backend, Some(1.0)).await;
    spend(
        h.store.as_ref(),
        talk::INSTALLATION,
        OffsetDateTime::now_utc(),
        2 * DOLLAR,
    )
    .await;

    let first = h.top_level_comment("bob", "@parley is this safe?");
    h.run(first).await.expect("first mention");
    let second = h.top_level_comment("alice", "@parley and this?");
    h.run(second).await.expect("second mention");

    assert!(h.prompts().is_empty(), "no LLM call over the budget");
    let notes = h.notes_of_kind("note");
    assert_eq!(notes.len(), 1, "{notes:#?}");
    let text = notes[0]["body"].as_str().unwrap_or_default();
    assert!(text.contains("@bob"), "{text}");
    assert!(text.contains("monthly LLM budget"), "{text}");
    assert!(!text.contains('$'), "no amounts in public: {text}");
    assert_eq!(h.turns_used().await, 0, "no turn used");
}

async fn stats_reports_the_spend_the_budget_is_held_to(backend: talk::Backend) {
    let h = talk_with_budget(backend, Some(10.0)).await;
    spend(
        h.store.as_ref(),
        talk::INSTALLATION,
        OffsetDateTime::now_utc(),
        2_500_000,
    )
    .await;
    h.run(h.top_level_comment("bob", "@parley stats"))
        .await
        .expect("stats");
    let said = h.parley_comments();
    let body = said
        .last()
        .and_then(|c| c["body"].as_str())
        .unwrap_or_default();
    assert!(
        body.contains("Monthly LLM budget of this installation: $2.5000 of $10.00 spent"),
        "{body}"
    );
}
