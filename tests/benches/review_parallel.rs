//! Review wall time with five specialist passes against a fake LLM that takes 2 s per
//! call. The passes must run in parallel: the review should take about one call's time,
//! not five. Prints the wall time, the sum of the five pass times measured by replaying
//! the same five requests one after another, and their ratio.
//!
//! `cargo bench -p parley-tests --bench review_parallel`

use parley_core::job::ReviewTrigger;
use parley_core::ports::llm::{LlmRequest, Message};
use parley_tests::review_harness::{Backend, HEAD, REPO, ReviewHarness, job};
use std::time::{Duration, Instant};

const LATENCY: Duration = Duration::from_secs(2);

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    runtime.block_on(async {
        let harness = ReviewHarness::start(Backend::Sqlite).await;
        // A guideline file on the base branch turns on the fifth (guidelines) pass.
        harness
            .github
            .set_file(REPO, "main", "CLAUDE.md", "Use parameterised SQL queries.");
        harness.llm.set_latency(LATENCY);

        let started = Instant::now();
        harness
            .run(job(ReviewTrigger::Opened, HEAD, "bench-delivery"))
            .await
            .expect("review runs");
        let wall = started.elapsed();

        let prompts = harness.llm.prompts();
        assert_eq!(prompts.len(), 5, "one call per specialist");
        assert_eq!(harness.reviews().len(), 1, "the review was published");

        // The same five requests, one after another: the sum of the pass times.
        let sequential = Instant::now();
        for prompt in &prompts {
            let question = prompt.messages[0].1.clone();
            let request = LlmRequest::new(prompt.system.clone(), vec![Message::user(question)]);
            harness
                .services
                .llm
                .complete(&request)
                .await
                .expect("replayed pass");
        }
        let sum = sequential.elapsed();

        println!("review_parallel: 5 passes, fake LLM latency {LATENCY:?} per call");
        println!("  review wall time:        {:>6.2} s", wall.as_secs_f64());
        println!("  sum of the 5 pass times: {:>6.2} s", sum.as_secs_f64());
        println!(
            "  ratio wall / sum:        {:>6.2}",
            wall.as_secs_f64() / sum.as_secs_f64()
        );
    });
}
