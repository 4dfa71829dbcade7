//! What one review and one conversation turn ask of the LLM, GitHub and the store: the
//! inputs of the monthly cost in docs/DEPLOY.md. The prompts are Parley's real ones (the
//! context builder, the specialist and judge prompts), read back from the fake LLM; the
//! fake's answers are short, so output sizes are not measured here.
//!
//! A review is run twice, on the standard 6-line patch and on a 400-line one, so prompt
//! size is known as `fixed + per diff character`. With no guideline file on the base
//! branch the guidelines specialist does not run: four passes and the judge.
//!
//! Counts, not timings, so any profile gives the same figures; the dev profile avoids a
//! release build: `cargo bench -p parley-tests --bench usage --profile dev`

use parley_core::job::ReviewTrigger;
use parley_core::ports::JobHandler;
use parley_core::review::ReviewHandler;
use parley_tests::conversation_harness::{self, Harness};
use parley_tests::flaky_store::FlakyStore;
use parley_tests::review_harness::{self, CORRECTNESS, HEAD, PR, REPO, ReviewHarness};
use std::sync::Arc;

#[tokio::main]
async fn main() {
    println!(
        "{:<34} {:>9} {:>13} {:>12} {:>11}",
        "job", "LLM calls", "prompt chars", "GitHub calls", "store calls"
    );
    let small = review(review_harness::DB_PATCH).await;
    small.print("review, 6-line patch");
    let patch = large_patch(400);
    let large = review(&patch).await;
    large.print("review, 400-line patch");
    let per_char = (large.prompt_chars - small.prompt_chars) as f64
        / (patch.len() - review_harness::DB_PATCH.len()) as f64;
    println!(
        "  prompt chars per patch char: {per_char:.2} (the patch goes to each specialist pass); patch of {} chars",
        patch.len()
    );
    turn().await.print("turn (reply in a finding's thread)");
}

struct Usage {
    llm_calls: usize,
    prompt_chars: usize,
    github_calls: usize,
    store_calls: usize,
}

impl Usage {
    fn print(&self, name: &str) {
        println!(
            "{name:<34} {:>9} {:>13} {:>12} {:>11}",
            self.llm_calls, self.prompt_chars, self.github_calls, self.store_calls
        );
    }
}

/// An automatic review of a PR changing `src/db.rs` by `patch`, one finding reported (so
/// the judge pass runs and a finding is recorded).
async fn review(patch: &str) -> Usage {
    let (store, dir) = parley_tests::stores::sqlite();
    let counting = Arc::new(FlakyStore::new(store));
    let h = ReviewHarness::start_with(counting.clone(), Some(dir)).await;
    h.github
        .set_files(REPO, PR, &[("src/db.rs", "modified", patch)]);
    h.llm.answer(
        CORRECTNESS,
        &review_harness::reply(&[review_harness::finding(
            "src/db.rs",
            3,
            "high",
            95,
            "SQL built by string formatting",
        )]),
    );
    let handler = ReviewHandler::new(h.services.clone());
    let before = counting.call_count();
    handler
        .handle(review_harness::job(
            ReviewTrigger::Opened,
            HEAD,
            "usage-review",
        ))
        .await
        .expect("the review runs");
    let prompts = h.llm.prompts();
    Usage {
        llm_calls: prompts.len(),
        prompt_chars: prompts.iter().map(|p| p.text().len()).sum(),
        github_calls: h.github.requests().len(),
        store_calls: counting.call_count() - before,
    }
}

/// A reply in the thread of a finding, by the PR's author, in a process that has served
/// turns before (config and slug cached).
async fn turn() -> Usage {
    let h = Harness::start(conversation_harness::Backend::Sqlite).await;
    let (root, _) = h.seed_finding(true).await;
    let counting = Arc::new(FlakyStore::new(h.store.clone()));
    let mut services = h.services.clone();
    services.store = counting.clone();
    let handler = parley_core::conversation::ConversationHandler::new(services);
    // Warm the process up with a first turn, then measure the second.
    let first = h.inline_comment(
        conversation_harness::AUTHOR,
        "Is this really a bug?",
        Some(root),
    );
    handler.handle(first).await.expect("first turn");
    let (llm_before, github_before, store_before) = (
        h.llm.prompts().len(),
        h.github.requests().len(),
        counting.call_count(),
    );
    let second = h.inline_comment(
        conversation_harness::AUTHOR,
        "The caller checks the id first, so is it still injectable?",
        Some(root),
    );
    handler.handle(second).await.expect("second turn");
    let prompts = h.llm.prompts();
    Usage {
        llm_calls: prompts.len() - llm_before,
        prompt_chars: prompts[llm_before..].iter().map(|p| p.text().len()).sum(),
        github_calls: h.github.requests().len() - github_before,
        store_calls: counting.call_count() - store_before,
    }
}

/// A unified-diff hunk adding `lines` lines of ordinary Rust.
fn large_patch(lines: usize) -> String {
    let mut patch = format!("@@ -1,3 +1,{} @@\n use std::io;\n", lines + 3);
    for i in 0..lines {
        patch.push_str(&format!(
            "+    let value_{i} = lookup(&index, \"key-{i}\").unwrap_or_default(); // step {i}\n"
        ));
    }
    patch.push_str(" fn a() {}\n fn b() {}");
    patch
}
