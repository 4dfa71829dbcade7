//! Self-hosted model servers that serve one request at a time (llama.cpp, Ollama on a
//! small machine): with `LLM_MAX_CONCURRENCY=1` the five specialist passes queue inside
//! Parley, each call's timeout starting only when it is served, and the review completes;
//! with 4 slots the same server makes the later passes time out waiting in its queue.
//! Scaled down from the 20 s latency and 60 s timeout (here 1 s and 1.5 s): the
//! same ratios, a test that takes seconds.

use parley_core::job::ReviewTrigger;
use parley_llm::limit::Limited;
use parley_tests::review_harness::*;
use std::sync::Arc;
use std::time::Duration;

const LATENCY: Duration = Duration::from_secs(1);
const TIMEOUT: Duration = Duration::from_millis(1500);

async fn review_on_a_one_request_server(slots: usize) -> (String, usize) {
    let mut h = ReviewHarness::start(Backend::Sqlite).await;
    // A guideline file turns the fifth (guidelines) pass on.
    h.github
        .set_file(REPO, "main", "CLAUDE.md", "Use parameterised SQL queries.");
    h.llm.serve_one_at_a_time();
    h.llm.set_latency(LATENCY);
    let client = parley_llm::AnthropicLlm::new(
        &h.llm.url,
        "test-key",
        MODEL,
        TIMEOUT,
        parley_llm::RetryPolicy {
            max_retries: 0,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(20),
        },
    )
    .expect("anthropic client");
    h.services.llm = Arc::new(Limited::new(Arc::new(client), slots));
    h.handler = parley_core::review::ReviewHandler::new(h.services.clone());
    h.run(job(ReviewTrigger::Opened, HEAD, "d-1"))
        .await
        .expect("the review job ends");
    let summary = h.reviews()[0]["body"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let failed = summary.matches("pass failed").count();
    (summary, failed)
}

#[tokio::test]
async fn one_slot_completes_a_five_pass_review_four_slots_do_not() {
    let (summary, failed) = review_on_a_one_request_server(1).await;
    assert_eq!(failed, 0, "every pass answered in its turn: {summary}");
    assert!(
        summary.contains("security, correctness, tests, style, guidelines"),
        "{summary}"
    );

    let (summary, failed) = review_on_a_one_request_server(4).await;
    assert!(
        failed >= 2,
        "passes sent at once time out in the server's queue: {summary}"
    );
    assert!(summary.contains("did not answer in time"), "{summary}");
}
