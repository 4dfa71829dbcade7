//! One cacheable prefix per review, and a local model server with the defaults.
//!
//! The review worker runs end to end against the fake GitHub and the fake LLM, which
//! bills a repeated marked prefix the way Anthropic does (written once, then read) and
//! serves as many requests at once as a llama.cpp server started with `--parallel N`,
//! saying so on `/props`. Latencies are scaled down from a local model's 30 s a call (here
//! 1 s, with a 1.5 s call timeout: the same ratios, a test that takes seconds).

use parley_core::ports::llm::Llm;
use parley_llm::{LlmConfig, Provider, RetryPolicy};
use parley_tests::review_harness::*;
use std::sync::Arc;
use std::time::Duration;

const LATENCY: Duration = Duration::from_secs(1);
const TIMEOUT: Duration = Duration::from_millis(1500);

/// The LLM as `parley serve` builds it from the environment with only the provider, the
/// server and the model set: no `LLM_MAX_CONCURRENCY`.
async fn local_server_with_defaults(h: &ReviewHarness) -> Arc<dyn Llm> {
    let config = LlmConfig {
        provider: Provider::OpenAi,
        model: Some("qwen2.5-coder:7b".into()),
        base_url: Some(format!("{}/v1", h.llm.url)),
        api_key: None,
        timeout: TIMEOUT,
        retry: RetryPolicy {
            max_retries: 0,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(20),
        },
    };
    parley_llm::build_limited(config, None, None)
        .await
        .expect("the LLM builds")
}

/// Review HEAD on the harness's server with `llm`; the summary and its failed passes.
async fn review_with(h: &mut ReviewHarness, llm: Arc<dyn Llm>) -> (String, usize) {
    // A guideline file turns the fifth (guidelines) pass on.
    h.github
        .set_file(REPO, "main", "CLAUDE.md", "Use parameterised SQL queries.");
    h.use_llm(llm);
    h.review_opened().await;
    let summary = h.first_review_body();
    let failed = summary.matches("pass failed").count();
    (summary, failed)
}

/// A llama.cpp server with one slot, nothing configured: Parley asks it (`/props`) and
/// sends one call at a time, so every pass is answered, never one timed out in the
/// server's queue.
#[tokio::test]
async fn a_one_slot_llama_cpp_server_gets_a_complete_review_with_the_defaults() {
    let mut h = ReviewHarness::start(Backend::Sqlite).await;
    h.llm.serve_at_once(1);
    h.llm.announce_slots(1);
    h.llm.set_latency(LATENCY);
    let llm = local_server_with_defaults(&h).await;
    let (summary, failed) = review_with(&mut h, llm).await;
    assert_eq!(failed, 0, "every pass answered in its turn: {summary}");
    assert!(
        summary.contains("security, correctness, tests, style, guidelines"),
        "{summary}"
    );
    assert_eq!(h.llm.most_in_flight(), 1);
    // Asked to keep the prompt in its slot.
    assert!(
        h.llm
            .prompts()
            .iter()
            .all(|p| p.raw["cache_prompt"] == true)
    );
}

/// A server that does not say how many it serves (Ollama, vLLM) and serves one at a
/// time: the calls left waiting time out, the limit comes down, and each of those calls
/// goes again, so the review still completes.
#[tokio::test]
async fn a_one_request_server_that_says_nothing_is_found_out_and_the_review_completes() {
    let mut h = ReviewHarness::start(Backend::Sqlite).await;
    h.llm.serve_at_once(1);
    h.llm.set_latency(Duration::from_millis(400));
    let llm = local_server_with_defaults(&h).await;
    let (summary, failed) = review_with(&mut h, llm).await;
    assert_eq!(failed, 0, "{summary}");
    assert!(
        h.llm
            .prompts()
            .iter()
            .all(|p| p.raw.get("cache_prompt").is_none()),
        "not a llama.cpp server: no cache_prompt"
    );
}

/// llama-cpp-python's server, with nothing configured: it says nothing on `/props`,
/// serves one request at a time and breaks off a running stream when the next request
/// arrives. Parley sees the broken-off replies, drops to one call at a time for good and
/// sends those calls again: every pass is answered.
#[tokio::test]
async fn a_server_that_breaks_off_streams_for_the_next_request_gets_a_complete_review() {
    let mut h = ReviewHarness::start(Backend::Sqlite).await;
    h.llm.interrupt_streams_like_llama_cpp_python();
    h.llm.set_latency(Duration::from_millis(300));
    let llm = local_server_with_defaults(&h).await;
    let (summary, failed) = review_with(&mut h, llm).await;
    assert_eq!(failed, 0, "{summary}");
    assert!(
        summary.contains("security, correctness, tests, style, guidelines"),
        "{summary}"
    );
    assert!(
        h.llm.prompts().iter().all(|p| p.raw["stream"] == true),
        "a self-hosted server's replies are streamed"
    );
}

/// A small model that loops inside its JSON (SmolLM2-135M on a review prompt writes the
/// same object again and again): its pass is cut off as soon as the loop shows and fails
/// as unusable, never as a timeout, and the server is told to stop (the connection
/// closes). The other passes are not held up.
#[tokio::test]
async fn a_model_looping_inside_its_json_fails_its_pass_as_unusable_not_as_a_timeout() {
    let mut h = ReviewHarness::start(Backend::Sqlite).await;
    h.llm.announce_slots(1);
    h.llm.write_forever(
        SECURITY,
        "\n  \"type\": \"report\",\n  \"description_url\" : {\n    \"url\": \"https://github.com/SrEK1234567890-sir-john-doe\"\n  },",
    );
    let llm = local_server_with_defaults(&h).await;
    let (summary, failed) = review_with(&mut h, llm).await;
    assert_eq!(failed, 1, "the security pass alone: {summary}");
    assert!(
        summary.contains("could not be used") && !summary.contains("in time"),
        "unusable, not timed out: {summary}"
    );
    assert!(h.llm.hang_ups() >= 2, "both attempts cut off");
}

/// A server of four slots is sent four at once.
#[tokio::test]
async fn a_four_slot_server_is_sent_four_at_once() {
    let mut h = ReviewHarness::start(Backend::Sqlite).await;
    h.llm.serve_at_once(4);
    h.llm.announce_slots(4);
    h.llm.set_latency(Duration::from_millis(300));
    let llm = local_server_with_defaults(&h).await;
    let (summary, failed) = review_with(&mut h, llm).await;
    assert_eq!(failed, 0, "{summary}");
    assert_eq!(h.llm.most_in_flight(), 4);
}

/// A patch of about `lines` added lines.
fn large_patch(lines: usize) -> String {
    let mut patch = format!("@@ -0,0 +1,{lines} @@\n");
    for i in 0..lines {
        patch.push_str(&format!(
            "+    let value_{i} = lookup(&table, \"key-{i}\").unwrap_or_default();\n"
        ));
    }
    patch
}

/// A PR whose diff makes the shared prefix long enough to cache, and one finding, so that
/// the judge runs too.
fn long_pr_with_a_finding(h: &ReviewHarness) {
    h.github.set_files(
        REPO,
        PR,
        &[
            ("src/db.rs", "modified", DB_PATCH),
            ("src/table.rs", "added", &large_patch(150)),
        ],
    );
    h.llm.answer(
        SECURITY,
        &reply(&[finding("src/db.rs", 3, "high", 90, "SQL injection")]),
    );
}

/// [`long_pr_with_a_finding`], with the head's code served.
fn long_pr_with_the_repository_open(h: &ReviewHarness) {
    long_pr_with_a_finding(h);
    h.github.set_tarball(
        REPO,
        HEAD,
        parley_tests::fake_github::tarball(&[("src/db.rs", "pub fn find() {}\n")]),
    );
}

/// A review whose shared prefix is long enough to cache: the first pass writes it, the
/// other passes and the judge read it (the fake bills as Anthropic does), every request
/// carries the marker where the shared part ends, and the summary says what was saved.
#[tokio::test]
async fn the_shared_prefix_is_written_once_and_read_by_the_other_passes_and_the_judge() {
    let h = ReviewHarness::start(Backend::Sqlite).await;
    long_pr_with_a_finding(&h);
    h.review_opened().await;

    let prompts = h.llm.prompts();
    assert_eq!(prompts.len(), 5, "four passes and the judge");
    let marked: Vec<&str> = prompts
        .iter()
        .map(|p| {
            let blocks = p.raw["messages"][0]["content"]
                .as_array()
                .expect("the shared prefix is its own block");
            assert_eq!(blocks[0]["cache_control"]["type"], "ephemeral");
            blocks[0]["text"].as_str().unwrap_or_default()
        })
        .collect();
    assert!(
        marked.iter().all(|m| *m == marked[0]),
        "every pass and the judge mark the same prefix"
    );
    assert!(prompts.iter().all(|p| p.system == prompts[0].system));
    assert!(marked[0].contains("value_149"), "the diff is in the prefix");

    let summary = h.first_review_body();
    let cache = cache_line(&summary);
    // One write (the pass sent first), four reads (three passes and the judge).
    let numbers: Vec<u64> = cache
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    let (read, written) = cache_counts(cache);
    assert!(written > 1024, "{cache} {numbers:?}");
    assert_eq!(read, written * 4, "{cache}");
    assert!(cache.contains("saved ≈ $"), "{cache}");
}

/// With the repository open, every pass and the judge are offered the same tools, and a
/// model that reads nothing answers in that one call: still one request per pass, one
/// write of the prefix (tools included, as Anthropic caches them) and four reads, the
/// judge's among them.
#[tokio::test]
async fn with_the_repository_open_each_pass_and_the_judge_still_make_one_call() {
    let h = ReviewHarness::start(Backend::Sqlite).await;
    long_pr_with_the_repository_open(&h);
    h.review_opened().await;

    let prompts = h.llm.prompts();
    assert_eq!(prompts.len(), 5, "four passes and the judge, one call each");
    assert!(
        prompts
            .iter()
            .all(|p| p.offers_tools() && p.raw["tools"] == prompts[0].raw["tools"]),
        "the same tools in every request"
    );
    let summary = h.first_review_body();
    let cache = cache_line(&summary);
    let (read, written) = cache_counts(cache);
    assert!(written > 1024, "{cache}");
    assert_eq!(read, written * 4, "written once, read by the rest: {cache}");
}

/// The leading pass's request is streamed (the others wait for its `message_start`); a
/// model that reads in that turn streams its tool calls as Anthropic does, their input in
/// pieces, and the pass reads the file and answers: every pass reads once, only the
/// leader's calls came as a stream, and the prefix is still written once.
#[tokio::test]
async fn the_leading_pass_reads_through_a_streamed_reply() {
    let h = ReviewHarness::start(Backend::Sqlite).await;
    long_pr_with_the_repository_open(&h);
    for pass in [SECURITY, CORRECTNESS, TESTS, STYLE] {
        h.llm.call_tools(
            pass,
            &[("read_file", serde_json::json!({"path": "src/db.rs"}))],
        );
    }
    h.review_opened().await;

    assert_eq!(h.llm.streamed_tool_calls(), 1, "the leader's, streamed");
    let answered = h
        .llm
        .prompts()
        .iter()
        .filter(|p| p.carries_tool_results() && !p.text().contains(JUDGE))
        .count();
    assert_eq!(answered, 4, "every pass read src/db.rs and answered");
    assert_eq!(h.inline_comments().len(), 1, "the security pass's finding");
    let summary = h.first_review_body();
    assert!(
        summary.contains("Code read with tools: 4 call(s)"),
        "{summary}"
    );
    let (_, written) = cache_counts(cache_line(&summary));
    assert!(written > 1024, "{summary}");
}

/// The summary's line of prompt cache figures.
fn cache_line(summary: &str) -> &str {
    summary
        .lines()
        .find(|l| l.contains("prompt cache:"))
        .unwrap_or_else(|| panic!("no cache figures: {summary}"))
}

/// `(read, written)` from the summary's "prompt cache: R tokens read, W written".
fn cache_counts(line: &str) -> (u64, u64) {
    let after = line.split("prompt cache: ").nth(1).unwrap_or_default();
    let mut numbers = after
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse::<u64>().ok());
    (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0))
}

/// A short review carries no marker at all: below the model's minimum, a breakpoint
/// would cache nothing, and the passes go all at once.
#[tokio::test]
async fn a_short_prefix_carries_no_marker() {
    let h = ReviewHarness::start(Backend::Sqlite).await;
    h.review_opened().await;
    for prompt in h.llm.prompts() {
        assert!(
            !prompt.raw.to_string().contains("cache_control"),
            "{}",
            prompt.raw
        );
    }
    let summary = h.first_review_body();
    assert!(!summary.contains("prompt cache:"), "{summary}");
}

/// The warm-up costs the first pass's time to its first token, not its whole reply: the
/// other passes go once Anthropic has begun answering it (its `message_start`), when the
/// prefix is in the cache, so they read it and all four passes are in flight together.
#[tokio::test]
async fn the_other_passes_go_once_the_first_has_begun_answering() {
    let h = ReviewHarness::start(Backend::Sqlite).await;
    long_pr_with_a_finding(&h);
    h.llm.set_latency(LATENCY);
    h.llm.set_time_to_first_token(LATENCY / 20);
    let started = std::time::Instant::now();
    h.review_opened().await;
    let wall = started.elapsed();

    let prompts = h.llm.prompts();
    assert_eq!(prompts.len(), 5, "four passes and the judge");
    assert_eq!(
        prompts.iter().filter(|p| p.raw["stream"] == true).count(),
        1,
        "only the pass sent first is streamed"
    );
    assert_eq!(h.llm.most_in_flight(), 4, "the passes overlap");
    // Passes, then the judge: two latencies and the first token, not three latencies.
    assert!(wall < LATENCY * 5 / 2, "{wall:?}");
    let summary = h.first_review_body();
    let line = cache_line(&summary);
    let (read, written) = cache_counts(line);
    assert!(written > 1024, "{line}");
    assert_eq!(
        read,
        written * 4,
        "written once, read by three passes and the judge: {line}"
    );
}
