//! What learning costs a review: a repository with 500 learnings (every kind and scope,
//! half with path globs), 10,000 recorded outcomes and 300 false-positive patterns,
//! applied to a 30-finding review. Reports the store reads (read through a counting
//! wrapper around the SQLite store) and the CPU time of applying it all: the threshold,
//! the learnings that concern the PR, dismissals, patterns and per-category thresholds.
//!
//! `cargo bench -p parley-tests --bench learning_apply`

use parley_core::config::GateConfig;
use parley_core::learning::memory;
use parley_core::learning::patterns::Pattern;
use parley_core::learning::record::{Direction, Hints, Learning, LearningKind, Scope};
use parley_core::learning::{apply, stats};
use parley_core::markers::FindingMarker;
use parley_core::ports::{Finding, Severity, Store, Verdict};
use parley_core::review::filter;
use parley_core::review::merge::Candidate;
use parley_tests::flaky_store::FlakyStore;
use parley_tests::tenants::{key, org};
use std::sync::Arc;
use std::time::{Duration, Instant};
use time::OffsetDateTime;

const REPO: &str = "octo-org/big";
const OWNER: &str = "octo-org";
const LEARNINGS: usize = 500;
const OUTCOMES: usize = 10_000;
const PATTERNS: usize = 300;
const FINDINGS: usize = 30;
const ROUNDS: usize = 200;

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let inner: Arc<dyn Store> = Arc::new(
            parley_store::sqlite::SqliteStore::open(dir.path().join("bench.db")).expect("store"),
        );
        seed(inner.as_ref()).await;
        let store = FlakyStore::new(inner);

        let started = Instant::now();
        let loaded = memory::load(&store, &key(REPO), &org(OWNER)).await.expect("load");
        let load_time = started.elapsed();
        let reads = store.count_of("memory");
        assert_eq!(loaded.learnings.len(), LEARNINGS);
        assert_eq!(loaded.stats.total().decided() + loaded.stats.total().ignored, OUTCOMES as u64);

        let candidates = candidates();
        let paths: Vec<&str> = candidates.iter().map(|c| c.path.as_str()).collect();
        let gate = GateConfig::default();
        let mut times: Vec<Duration> = Vec::with_capacity(ROUNDS);
        let mut reported = 0;
        for _ in 0..ROUNDS {
            let started = Instant::now();
            let (base, source) = stats::threshold_in_force(75, false, true, &loaded.stats);
            let applied = apply::for_review(
                &loaded,
                7,
                &paths,
                apply::Base {
                    threshold: base,
                    source,
                    configured: 75,
                    blocking: gate.block_on.clone(),
                },
            );
            let lines = apply::prompt_lines(&applied.relevant, false);
            let (kept, suppressed) =
                apply::suppress(candidates.clone(), &applied, &loaded, &gate);
            let filtered = filter::apply_with(
                kept,
                base,
                |c| applied.thresholds.for_candidate(c),
                filter::Inline::up_to(15),
            );
            reported = filtered.reported().count() + suppressed.len() + lines.len();
            times.push(started.elapsed());
        }
        times.sort();
        let median = times[ROUNDS / 2];
        let p99 = times[ROUNDS * 99 / 100];
        println!(
            "learning_apply: {LEARNINGS} learnings, {OUTCOMES} outcomes, {PATTERNS} patterns, {FINDINGS} findings ({ROUNDS} rounds)"
        );
        println!("  store reads to load it all:   {reads}");
        println!("  load (reads + decoding):       {:>8.2} ms", ms(load_time));
        println!("  apply, CPU, median:            {:>8.3} ms", ms(median));
        println!("  apply, CPU, p99:               {:>8.3} ms", ms(p99));
        println!("  (checksum {reported})");
    });
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn seed(store: &dyn Store) {
    let now = OffsetDateTime::now_utc();
    for i in 0..LEARNINGS {
        let kind = [
            LearningKind::Remember,
            LearningKind::Dismiss,
            LearningKind::Adjust,
        ][i % 3];
        let scope = match i % 5 {
            0 => Scope::Org,
            1 => Scope::Pr {
                pr: (i % 20) as u64,
            },
            _ => Scope::Repo,
        };
        let learning = Learning {
            id: String::new(),
            repo: key(REPO),
            scope,
            kind,
            text: format!(
                "rule number {i}: prefer explicit errors in module {}",
                i % 17
            ),
            hints: Hints {
                category: Some(["security", "style", "tests", "correctness"][i % 4].into()),
                max_severity: None,
                paths: if i % 2 == 0 {
                    vec![format!("src/m{}/**", i % 13)]
                } else {
                    vec![]
                },
                keywords: if kind == LearningKind::Dismiss {
                    vec![format!("word{}", i % 11)]
                } else {
                    vec![]
                },
                direction: (kind == LearningKind::Adjust).then_some(if i % 2 == 0 {
                    Direction::Stricter
                } else {
                    Direction::Lenient
                }),
                source: "rules".into(),
            },
            author: "bob".into(),
            source_url: String::new(),
            source_comment_id: i as u64 + 1,
            created_at: now,
            forgotten: None,
            times_applied: 0,
            authority: None,
            findings_suppressed: 0,
        };
        memory::add_learning(store, &org(OWNER), learning)
            .await
            .expect("learning");
    }
    memory::update_stats(store, &parley_tests::tenants::key(REPO), |stats| {
        for i in 0..OUTCOMES {
            let verdict = [
                Verdict::Accepted,
                Verdict::Accepted,
                Verdict::Rejected,
                Verdict::Ignored,
            ][i % 4];
            stats.count(
                ["security", "style", "tests"][i % 3],
                "medium",
                (50 + i % 50) as u8,
                verdict,
                1,
            );
        }
    })
    .await
    .expect("stats");
    for i in 0..PATTERNS {
        let finding = finding(i);
        let key = Pattern::key_for(&finding.category, &finding.path, &finding.title);
        memory::update_pattern(store, &parley_tests::tenants::key(REPO), &key, |current| {
            let mut pattern = current.unwrap_or_else(|| Pattern::new(&finding, now));
            pattern.reject(&finding, Some("amy"), now);
            pattern
        })
        .await
        .expect("pattern");
    }
}

/// A low style finding of one of 40 PRs, as the review worker records what it posted.
fn finding(i: usize) -> Finding {
    let marker = FindingMarker {
        severity: Severity::Low,
        category: "style".into(),
        confidence: 70,
        ..parley_tests::deliveries::finding_marker(
            &format!("f{i}"),
            &format!("src/m{}/file{}.rs", i % 13, i % 7),
            3,
            &format!("Prefer iterator number {i} over index loop"),
        )
    };
    marker.finding(
        &key(REPO),
        (i % 40) as u64,
        "",
        "h".into(),
        OffsetDateTime::UNIX_EPOCH,
    )
}

fn candidates() -> Vec<Candidate> {
    (0..FINDINGS)
        .map(|i| Candidate {
            path: format!("src/m{}/file{}.rs", i % 13, i % 7),
            line: 10 + i as u32,
            start_line: None,
            severity: [Severity::Low, Severity::Medium, Severity::High][i % 3],
            category: ["security", "style", "tests", "correctness"][i % 4].into(),
            confidence: (60 + i) as u8,
            title: format!("Finding {i} about word{} handling", i % 11),
            body: "Details.".into(),
            suggestion: None,
            passes: vec!["security".into()],
            fingerprint: format!("cand{i}"),
            site: String::new(),
            code: String::new(),
            on_diff: true,
            doubt: None,
        })
        .collect()
}
