//! Self-hosted model servers that serve one request at a time (llama.cpp, Ollama on a
//! small machine): with `LLM_MAX_CONCURRENCY=1` the five specialist passes queue inside
//! Parley, each call's timeout starting only when it is served, and the review completes;
//! with 4 slots the same server makes the later passes time out waiting in its queue.
//! Scaled down from a small server's 20 s latency and Parley's 60 s timeout (here 1 s and 1.5 s): the
//! same ratios, a test that takes seconds.

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
    h.use_llm(Arc::new(Limited::new(Arc::new(client), slots)));
    h.review_opened().await;
    let summary = h.first_review_body();
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

/// On a slow model the check says how far the review got: one update per finished pass
/// once the interval has passed, none before it, and none after an update failed.
#[tokio::test]
async fn the_check_shows_progress_within_bounds() {
    use parley_core::ports::github::{CheckRunUpdate, CheckStatus, NewCheckRun, RepoScope};
    use parley_core::review::progress::CheckProgress;
    use parley_core::review::specialists::PassProgress;
    use parley_tests::fake_github::Injected;

    let h = ReviewHarness::start(Backend::Sqlite).await;
    let scope = RepoScope::new(INSTALLATION, OWNER, NAME).with_ids(
        parley_tests::tenants::repo_id(REPO),
        parley_tests::tenants::owner_id(OWNER),
    );
    let check = h
        .services
        .github
        .create_check_run(
            &scope,
            &NewCheckRun {
                name: "Parley review".into(),
                head_sha: HEAD.into(),
                external_id: None,
                started_at: None,
                state: CheckRunUpdate {
                    status: Some(CheckStatus::InProgress),
                    ..CheckRunUpdate::default()
                },
            },
        )
        .await
        .expect("check run");
    let updates = || {
        h.github
            .requests_to("PATCH", &format!("/check-runs/{}", check.id))
            .iter()
            .filter_map(|r| r.body["output"]["title"].as_str().map(str::to_string))
            .collect::<Vec<_>>()
    };

    // Within the first interval (a fast review): nothing.
    let quiet = CheckProgress::new(h.services.github.as_ref(), &scope, Some(check.id));
    quiet.pass_done("security", true, 1, 2).await;
    assert!(updates().is_empty());

    // A slow review: each finished pass says so.
    let slow = CheckProgress::with_interval(
        h.services.github.as_ref(),
        &scope,
        Some(check.id),
        Duration::ZERO,
    );
    slow.pass_done("security", true, 1, 3).await;
    slow.pass_done("tests", false, 2, 3).await;
    assert_eq!(
        updates(),
        [
            "Reviewing: 1 of 3 passes done",
            "Reviewing: 2 of 3 passes done"
        ]
    );
    let last = h
        .github
        .requests_to("PATCH", &format!("/check-runs/{}", check.id));
    let summary = last[1].body["output"]["summary"]
        .as_str()
        .unwrap_or_default();
    assert!(summary.contains("- tests: failed"), "{summary}");
    assert!(
        last[1].body.get("status").is_none(),
        "progress never concludes"
    );

    // GitHub in trouble: one failed update, then no more.
    h.github.inject(Injected {
        method: "PATCH",
        path_contains: "/check-runs/".into(),
        status: 502,
        body: serde_json::json!({"message": "bad gateway"}),
        headers: Vec::new(),
        times: 10,
    });
    let troubled = CheckProgress::with_interval(
        h.services.github.as_ref(),
        &scope,
        Some(check.id),
        Duration::ZERO,
    );
    let before = h.github.requests_to("PATCH", "/check-runs/").len();
    troubled.pass_done("security", true, 1, 3).await;
    troubled.pass_done("correctness", true, 2, 3).await;
    troubled.pass_done("style", true, 3, 3).await;
    let attempts = h.github.requests_to("PATCH", "/check-runs/").len() - before;
    assert!(
        (1..=4).contains(&attempts),
        "only the first update is tried (with the client's own retries): {attempts}"
    );
    let after_first = h.github.requests_to("PATCH", "/check-runs/").len();
    troubled.pass_done("guidelines", true, 3, 3).await;
    assert_eq!(
        h.github.requests_to("PATCH", "/check-runs/").len(),
        after_first
    );
}

fn openai_client(h: &ReviewHarness) -> Arc<parley_llm::OpenAiLlm> {
    Arc::new(
        parley_llm::OpenAiLlm::new(
            &format!("{}/v1", h.llm.url),
            None,
            "qwen2.5-coder:7b",
            Duration::from_secs(5),
            parley_llm::RetryPolicy {
                max_retries: 0,
                base_delay: Duration::from_millis(5),
                max_delay: Duration::from_millis(20),
            },
        )
        .expect("openai client"),
    )
}

/// On an OpenAI-compatible server Parley asks for the findings' JSON Schema itself;
/// a server that refuses `json_schema` gets `json_object`, one that refuses that too gets
/// plain text, and the answer is remembered for the process: later calls go straight to
/// what works.
#[tokio::test]
async fn structured_output_asks_for_the_schema_and_falls_back_once() {
    let mut h = ReviewHarness::start(Backend::Sqlite).await;
    h.llm.answer(
        SECURITY,
        &reply(&[finding("src/db.rs", 3, "critical", 92, "SQL injection")]),
    );
    let client = openai_client(&h);
    h.use_llm(client.clone());

    // A server that takes json_schema: every pass asks for it, with the findings schema.
    h.review_opened().await;
    let formats: Vec<Option<String>> = h
        .pass_prompts()
        .iter()
        .map(|p| p.response_format.clone())
        .collect();
    assert!(!formats.is_empty());
    assert!(
        formats.iter().all(|f| f.as_deref() == Some("json_schema")),
        "{formats:?}"
    );
    assert_eq!(h.reviews().len(), 1);

    // A server that refuses json_schema: one refusal, then json_object for everyone, with
    // the schema in it (llama-cpp-python's form, which it enforces with a grammar).
    let mut h2 = ReviewHarness::start(Backend::Sqlite).await;
    h2.llm.refuse_response_formats(&["json_schema"]);
    h2.llm.answer(
        SECURITY,
        &reply(&[finding("src/db.rs", 3, "critical", 92, "SQL injection")]),
    );
    let formats = review_on_one_openai_slot(&mut h2).await;
    assert_eq!(
        formats.iter().filter(|f| *f == "json_schema").count(),
        1,
        "refused once, then remembered: {formats:?}"
    );
    assert!(
        formats[1..].iter().all(|f| f.starts_with("json_object")),
        "{formats:?}"
    );
    let schema = &h2.pass_prompts()[1].raw["response_format"]["schema"];
    assert!(
        schema["properties"]["findings"].is_object(),
        "the findings schema: {schema}"
    );
    let comments = h2.github.review_comments(REPO, PR);
    assert_eq!(comments.len(), 1, "the finding still arrives");

    // A server that refuses both: json_object with the schema and without it, then plain
    // text, the prompt's own shape description.
    let mut h3 = ReviewHarness::start(Backend::Sqlite).await;
    h3.llm
        .refuse_response_formats(&["json_schema", "json_object"]);
    let formats = review_on_one_openai_slot(&mut h3).await;
    assert_eq!(
        &formats[..4],
        ["json_schema", "json_object+schema", "json_object", "plain"],
        "{formats:?}"
    );
    assert!(formats[4..].iter().all(|f| f == "plain"), "{formats:?}");
    assert_eq!(h3.reviews().len(), 1);

    // llama-cpp-python's server refuses json_schema with a 500 (its request validation):
    // a refusal all the same, taken at once (not retried as a server error), remembered.
    let mut h4 = ReviewHarness::start(Backend::Sqlite).await;
    h4.llm.refuse_response_formats_with_500(&["json_schema"]);
    let formats = review_on_one_openai_slot(&mut h4).await;
    assert_eq!(
        formats.iter().filter(|f| *f == "json_schema").count(),
        1,
        "one refusal, no retries of it: {formats:?}"
    );
    assert!(
        formats[1..].iter().all(|f| f.starts_with("json_object")),
        "{formats:?}"
    );
    assert!(
        h4.pass_prompts()[1].raw["response_format"]["schema"]["properties"]["findings"].is_object(),
        "llama-cpp-python gets the schema it can enforce"
    );
    assert_eq!(h4.reviews().len(), 1);
}

/// Review the standard PR through the OpenAI-compatible client on one slot; the
/// `response_format` of every request the server saw, in order ("plain": none;
/// "json_object+schema": a json_object carrying a schema).
async fn review_on_one_openai_slot(h: &mut ReviewHarness) -> Vec<String> {
    let client = openai_client(h);
    h.use_llm(Arc::new(Limited::new(client, 1)));
    h.review_opened().await;
    h.llm
        .prompts()
        .iter()
        .map(|p| match &p.response_format {
            Some(kind) if p.raw["response_format"]["schema"].is_object() => {
                format!("{kind}+schema")
            }
            Some(kind) => kind.clone(),
            None => "plain".into(),
        })
        .collect()
}
