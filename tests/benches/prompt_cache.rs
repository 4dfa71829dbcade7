//! What the shared prefix saves: billed input, priced at Anthropic's rules, for a
//! five-pass review plus the judge of a PR with a 20,000-token diff, cached (the layout
//! Parley sends: one marked prefix, one pass first) against the same tokens billed
//! uncached (the old layout: each pass's own instruction first, so no two requests shared
//! a prefix a provider could reuse). The fake LLM bills a repeated marked prefix as
//! Anthropic does (written once at 1.25x, read at 0.1x). Also the wall time of that
//! review with the fake LLM at 2 s a call, its answers beginning 100 ms in (`message_start`,
//! when the prefix is in the cache), against a review whose prefix is too short to cache
//! (no warm-up: all passes at once). The warm-up waits for the first pass's answer to
//! begin, not to end, so cloud reviews keep their parallelism: within 10 %.
//!
//! `cargo bench -p parley-tests --bench prompt_cache`

use parley_core::job::ReviewTrigger;
use parley_core::llm::PriceTable;
use parley_core::ports::llm::Usage;
use parley_tests::review_harness::*;
use std::time::{Duration, Instant};

const LATENCY: Duration = Duration::from_secs(2);
/// When an answer begins: Anthropic's time to first token on a long prompt is a small
/// part of a review pass, which writes a list of findings.
const TIME_TO_FIRST_TOKEN: Duration = Duration::from_millis(100);

/// Billed input of the cached layout as a share of the old one, at most.
const GOAL: f64 = 0.35;
/// Wall time of the cached review as a share of one that sends every pass at once, at most.
const WALL_GOAL: f64 = 1.10;

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    runtime.block_on(async {
        let (usage, wall_cached) = review(20_000, false).await;
        let (_, wall_short) = review(0, false).await;
        let (reading, _) = review(20_000, true).await;
        let prices = PriceTable::builtin();
        let price = prices.price(MODEL).expect("a price for the model");
        // Input only, as the goal counts it: the output is the same either way.
        let input_only = Usage {
            output_tokens: 0,
            ..usage
        };
        let cached = price.cost_usd(input_only);
        let uncached = price.cost_usd(Usage::new(input_only.all_input(), 0));
        println!("prompt_cache: five passes + judge, 20,000-token diff, {MODEL} prices");
        println!(
            "  input tokens: {} uncached, {} written to the cache, {} read from it",
            usage.input_tokens, usage.cache_write_tokens, usage.cache_read_tokens
        );
        println!("  billed input, old layout (no shared prefix): ${uncached:.4}");
        println!("  billed input, one cached prefix:             ${cached:.4}");
        println!("  ratio cached / old:                          {:.3}", cached / uncached);
        let reading_input = Usage {
            output_tokens: 0,
            ..reading
        };
        println!(
            "  with the repository open (code context, tools offered, judge included; the model reads nothing): six calls, {} written to the cache, {} read; ratio {:.3} of its own old layout",
            reading.cache_write_tokens,
            reading.cache_read_tokens,
            price.cost_usd(reading_input) / price.cost_usd(Usage::new(reading_input.all_input(), 0))
        );
        println!(
            "  wall time at {LATENCY:?} a call ({TIME_TO_FIRST_TOKEN:?} to the first token): {:.2} s with the warm-up pass, {:.2} s for a short diff (no warm-up): {:.3}",
            wall_cached.as_secs_f64(),
            wall_short.as_secs_f64(),
            wall_cached.as_secs_f64() / wall_short.as_secs_f64()
        );
        // The goal the layout was built for; a bench that only prints would let a change
        // that moves the shared material back behind each pass's instruction pass
        // unnoticed.
        if cached / uncached > GOAL {
            eprintln!("prompt_cache: ratio above the goal of {GOAL}");
            std::process::exit(1);
        }
        if wall_cached.as_secs_f64() > wall_short.as_secs_f64() * WALL_GOAL {
            eprintln!("prompt_cache: the warm-up costs more than {WALL_GOAL} of the wall time");
            std::process::exit(1);
        }
    });
}

/// One review of a PR whose diff adds about `tokens` tokens (0: the standard small PR),
/// with the repository at the head open to the passes (`code`: its context in the shared
/// prefix, the tools offered to every pass and the judge) or not; its usage and wall time.
async fn review(tokens: usize, code: bool) -> (Usage, Duration) {
    let h = ReviewHarness::start(Backend::Sqlite).await;
    h.github
        .set_file(REPO, "main", "CLAUDE.md", "Use parameterised SQL queries.");
    if tokens > 0 {
        // Each added line is about 16 tokens as Parley (and the fake) count them.
        let lines = tokens / 16;
        let mut patch = format!("@@ -0,0 +1,{lines} @@\n");
        for i in 0..lines {
            patch.push_str(&format!(
                "+    let value_{i:05} = lookup(&table, \"k{i:05}\").unwrap_or(0);\n"
            ));
        }
        h.github.set_files(
            REPO,
            PR,
            &[
                ("src/db.rs", "modified", DB_PATCH),
                ("src/table.rs", "added", &patch),
            ],
        );
    }
    if code {
        h.github.set_tarball(
            REPO,
            HEAD,
            parley_tests::fake_github::tarball(&[
                ("src/db.rs", "pub fn find(id: &str) -> String {\n    format!(\"SELECT * FROM users WHERE id = '{}'\", id)\n}\n"),
                ("src/table.rs", "pub fn lookup(table: &[(&str, u32)], key: &str) -> Option<u32> {\n    table.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)\n}\n"),
            ]),
        );
    }
    // One finding, so that the judge runs too.
    h.llm.answer(
        SECURITY,
        &reply(&[finding("src/db.rs", 3, "high", 90, "SQL injection")]),
    );
    h.llm.set_latency(LATENCY);
    h.llm.set_time_to_first_token(TIME_TO_FIRST_TOKEN);
    let started = Instant::now();
    h.run(job(ReviewTrigger::Opened, HEAD, "bench"))
        .await
        .expect("review runs");
    let wall = started.elapsed();
    let prompts = h.llm.prompts();
    assert_eq!(
        prompts.len(),
        6,
        "five passes and the judge, one call each (reading nothing costs no call)"
    );
    assert_eq!(
        prompts.iter().filter(|p| p.offers_tools()).count(),
        if code { 6 } else { 0 },
        "the tools offered where the repository is open"
    );
    let mut usage = Usage::default();
    for summary in h.reviews() {
        let body = summary["body"].as_str().unwrap_or_default();
        usage += usage_from(body);
    }
    (usage, wall)
}

/// The review's own usage, from its summary's cost line.
fn usage_from(summary: &str) -> Usage {
    let line = summary
        .lines()
        .find(|l| l.contains("- Cost:"))
        .unwrap_or_default();
    let numbers = |text: &str| -> Vec<u64> {
        text.split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse().ok())
            .collect()
    };
    let head = numbers(line.split(", ≈").next().unwrap_or_default());
    let (input, output) = (
        head.get(1).copied().unwrap_or(0),
        head.get(2).copied().unwrap_or(0),
    );
    let cache = line
        .split("prompt cache: ")
        .nth(1)
        .map(numbers)
        .unwrap_or_default();
    Usage::new(input, output).with_cache(
        cache.first().copied().unwrap_or(0),
        cache.get(1).copied().unwrap_or(0),
    )
}
