//! Retrieval benchmark: latency, recall@5 and memory on synthetic corpora.
//!
//! `cargo bench -p parley-core --bench retrieval` (sizes: `RETRIEVAL_BENCH_SIZES=10000,100000`,
//! queries: `RETRIEVAL_BENCH_QUERIES=200`).
//!
//! Each corpus is N code-hunk documents of generated Rust-like code (identifiers drawn
//! from a 3,000-word vocabulary, 3-24 added lines of ~40 characters) with random L2-normalised 256-dimension
//! vectors, int8-quantised. 200 of them are planted; each query is a perturbed copy of
//! one planted document (a third of its lines dropped, a fifth of the remaining
//! identifiers replaced, lines shuffled) with a vector at cosine ~0.7 to the planted one.
//! Ground truth: the planted document is among the first five of the fused ranking.
//!
//! Timed: `parley_core::retrieval::rank` — BM25 over every candidate (from the term
//! counts the corpus store keeps with each document), cosine over every vector, RRF
//! fusion, near-duplicate removal, budgeting and rendering (6,000 characters). Not timed:
//! the store read that produces the candidates and the query's embedding call (a network
//! round trip each, measured by their adapters). BM25 over texts without counts (documents
//! stored before counts were kept) is reported on its own.

use parley_core::ports::{Occurrence, QuantizedVector};
use parley_core::retrieval::{
    Candidate, Provenance, Query, QueryVector, Settings, Source, TermCounts, Trigger, lexical,
    rank, vector,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use time::OffsetDateTime;

const DIMENSIONS: usize = 256;
const MODEL: &str = "bench-model";

fn main() {
    let sizes = env_list("RETRIEVAL_BENCH_SIZES", &[10_000, 100_000]);
    let queries = env_list("RETRIEVAL_BENCH_QUERIES", &[200])[0];
    println!(
        "retrieval benchmark: {DIMENSIONS}-dimension int8 vectors, {queries} queries per size"
    );
    memory_per_10k();
    for size in sizes {
        run(size, queries);
    }
}

fn run(size: usize, queries: usize) {
    let mut rng = Rng(0x5eed ^ size as u64);
    let vocabulary = vocabulary(&mut rng);
    let now = OffsetDateTime::now_utc();
    let started = Instant::now();
    let candidates: Vec<Candidate> = (0..size)
        .map(|i| document(i, &vocabulary, &mut rng, now))
        .collect();
    let planted: Vec<usize> = (0..queries)
        .map(|q| (q * size / queries + rng.below(size / queries)) % size)
        .collect();
    let cases: Vec<(Query, Vec<f32>, String)> = planted
        .iter()
        .map(|&i| perturbed(&candidates[i], &vocabulary, &mut rng))
        .collect();
    let counts_bytes: usize = candidates
        .iter()
        .filter_map(|c| c.terms.as_ref())
        .map(TermCounts::stored_len)
        .sum();
    println!(
        "\n== {size} chunks (built in {:.1} s; {:.1} MB of text, {:.1} MB of stored term counts: {} bytes a document)",
        started.elapsed().as_secs_f64(),
        candidates.iter().map(|c| c.text.len()).sum::<usize>() as f64 / 1e6,
        counts_bytes as f64 / 1e6,
        counts_bytes / size.max(1),
    );

    let settings = Settings::default();
    let mut latencies = Vec::with_capacity(cases.len());
    let mut cpu = Vec::with_capacity(cases.len());
    let mut found = 0usize;
    let mut peak_extra = 0usize;
    for (query, query_vector, key) in &cases {
        let vector = Some(QueryVector {
            model: MODEL,
            values: query_vector,
        });
        let before = ALLOCATOR.reset_peak();
        let cpu_start = cpu_time();
        let start = Instant::now();
        let retrieved = rank(
            &candidates,
            query,
            vector,
            &settings,
            now,
            Provenance::default(),
        );
        latencies.push(start.elapsed());
        cpu.push(cpu_time().saturating_sub(cpu_start));
        peak_extra = peak_extra.max(ALLOCATOR.peak().saturating_sub(before));
        // The ranking before the budget: the same call with room for everything.
        let unbounded = Settings {
            budget_chars: usize::MAX,
            ..Settings::default()
        };
        let all = rank(
            &candidates,
            query,
            vector,
            &unbounded,
            now,
            Provenance::default(),
        );
        if all
            .provenance
            .included
            .iter()
            .take(5)
            .any(|c| &c.key == key)
        {
            found += 1;
        }
        std::hint::black_box(retrieved);
    }
    latencies.sort();
    cpu.sort();
    println!(
        "retrieval (lexical + vector + fusion + budget), wall: p50 {}, p99 {}, max {}",
        ms(percentile(&latencies, 0.50)),
        ms(percentile(&latencies, 0.99)),
        ms(*latencies.last().unwrap_or(&Duration::ZERO)),
    );
    println!(
        "  on-CPU time of the same calls (without time the OS gave other processes): p50 {}, p99 {}",
        ms(percentile(&cpu, 0.50)),
        ms(percentile(&cpu, 0.99)),
    );
    println!(
        "recall@5: {found}/{} = {:.3}",
        cases.len(),
        found as f64 / cases.len() as f64
    );
    println!(
        "peak extra heap during one retrieval: {:.1} MB",
        peak_extra as f64 / 1e6
    );
    parts(&candidates, &cases);
}

/// The two searches alone, for the scale discussion in docs/retrieval.md.
fn parts(candidates: &[Candidate], cases: &[(Query, Vec<f32>, String)]) {
    let sample = &cases[..cases.len().min(50)];
    // BM25 from the stored term counts, and (`tokenise`) as for documents stored without
    // them (written before they were kept): every text tokenised on the query.
    let bm25_times = |tokenise: bool| -> Vec<Duration> {
        sample
            .iter()
            .map(|(query, _, _)| {
                let text = query.search_text();
                let documents = candidates.iter().map(|c| {
                    if tokenise {
                        lexical::Terms::Text(&c.text)
                    } else {
                        c.lexical_terms()
                    }
                });
                let start = cpu_time();
                std::hint::black_box(lexical::rank(&text, documents, 50));
                cpu_time().saturating_sub(start)
            })
            .collect()
    };
    let mut lexical_times = bm25_times(false);
    let mut tokenising_times = bm25_times(true);
    let mut vector_times: Vec<Duration> = sample
        .iter()
        .map(|(_, v, _)| {
            let start = cpu_time();
            std::hint::black_box(vector::rank(
                v,
                MODEL,
                candidates.iter().map(|c| c.vector.as_ref()),
                50,
            ));
            cpu_time().saturating_sub(start)
        })
        .collect();
    lexical_times.sort();
    tokenising_times.sort();
    vector_times.sort();
    println!(
        "  of which (on-CPU, alone) BM25 p50 {}, cosine scan p50 {}",
        ms(percentile(&lexical_times, 0.5)),
        ms(percentile(&vector_times, 0.5))
    );
    println!(
        "  BM25 over documents stored without term counts (texts tokenised per query): p50 {}",
        ms(percentile(&tokenising_times, 0.5)),
    );
}

/// Heap bytes of 10,000 quantised vectors as retrieval holds them.
fn memory_per_10k() {
    let mut rng = Rng(7);
    let before = ALLOCATOR.current();
    let vectors: Vec<QuantizedVector> = (0..10_000)
        .map(|_| QuantizedVector::quantize(MODEL, &random_unit(&mut rng)))
        .collect();
    let bytes = ALLOCATOR.current() - before;
    println!(
        "memory per 10,000 vectors ({DIMENSIONS} dims, int8 + f32 scale + model id): {:.2} MB on the heap ({} bytes each; f32 would be {} bytes)",
        bytes as f64 / 1e6,
        bytes / 10_000,
        DIMENSIONS * 4
    );
    std::hint::black_box(vectors);
}

// --- synthetic corpus ------------------------------------------------------------------

fn vocabulary(rng: &mut Rng) -> Vec<String> {
    const ROOTS: &[&str] = &[
        "user",
        "order",
        "config",
        "request",
        "response",
        "client",
        "server",
        "token",
        "cache",
        "retry",
        "timeout",
        "buffer",
        "stream",
        "parser",
        "header",
        "body",
        "payload",
        "queue",
        "message",
        "event",
        "handler",
        "store",
        "record",
        "index",
        "query",
        "result",
        "error",
        "state",
        "session",
        "account",
        "price",
        "amount",
        "total",
        "item",
        "count",
        "limit",
        "offset",
        "page",
        "cursor",
        "batch",
        "job",
        "worker",
        "task",
        "review",
        "finding",
        "thread",
        "comment",
        "path",
        "line",
        "hunk",
        "diff",
        "file",
        "repo",
        "branch",
        "commit",
        "signature",
        "secret",
        "key",
        "hash",
        "digest",
        "vector",
        "score",
        "rank",
        "weight",
    ];
    const VERBS: &[&str] = &[
        "get", "set", "load", "save", "parse", "render", "build", "read", "write", "send", "fetch",
        "validate", "check", "compute", "merge", "split", "encode", "decode", "apply", "update",
        "delete", "insert", "find", "filter", "sort", "map", "flush", "open", "close",
    ];
    let mut words = std::collections::BTreeSet::new();
    while words.len() < 3000 {
        let verb = VERBS[rng.below(VERBS.len())];
        let a = ROOTS[rng.below(ROOTS.len())];
        let b = ROOTS[rng.below(ROOTS.len())];
        words.insert(match rng.below(4) {
            0 => format!("{verb}_{a}"),
            1 => format!("{verb}_{a}_{b}"),
            2 => format!("{a}_{b}"),
            _ => format!("{verb}{}{}", capital(a), capital(b)),
        });
    }
    words.into_iter().collect()
}

fn capital(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// One added line: statement shapes of everyday Rust, 0-3 identifiers each (about 40
/// characters on average, like real code).
fn code_line(vocabulary: &[String], rng: &mut Rng) -> String {
    let shape = rng.below(9);
    let mut w = || vocabulary[rng.zipf(vocabulary.len())].clone();
    match shape {
        0 => format!("    let {} = {}({})?;", w(), w(), w()),
        1 => format!("    if {}.is_empty() {{", w()),
        2 => format!("    {}.push({});", w(), w()),
        3 => "    }".to_string(),
        4 => format!("    self.{} = {};", w(), w()),
        5 => format!("        return Err(Error::{});", capital(&w())),
        6 => format!("    for {} in {} {{", w(), w()),
        7 => format!("    // {} before {}", w(), w()),
        _ => format!("    tracing::debug!({}, \"done\");", w()),
    }
}

fn document(i: usize, vocabulary: &[String], rng: &mut Rng, now: OffsetDateTime) -> Candidate {
    let path = format!(
        "src/{}/{}.rs",
        vocabulary[rng.below(40)],
        vocabulary[rng.below(vocabulary.len())]
    );
    let function = format!("fn {}(", vocabulary[rng.below(vocabulary.len())]);
    let title = format!(
        "Handle {} in {}",
        vocabulary[rng.below(vocabulary.len())],
        vocabulary[rng.below(vocabulary.len())]
    );
    let lines: Vec<String> = (0..3 + rng.below(22))
        .map(|_| code_line(vocabulary, rng))
        .collect();
    let pr = 1 + (i as u64 % 5000);
    let created = now - time::Duration::hours(rng.below(24 * 365) as i64);
    let text = format!("{title}\n{path}\n{function}\n{}", lines.join("\n"));
    Candidate {
        source: Source::Code,
        key: format!("{i:064x}"),
        // Counted when stored, as the corpus store does on every upsert.
        terms: Some(TermCounts::of(&text)),
        text,
        path: Some(path.clone()),
        language: Some("rust".into()),
        function_context: Some(function),
        attributes: BTreeMap::new(),
        occurrences: vec![Occurrence {
            pr,
            pr_title: title,
            path,
            start_line: 1 + rng.below(500) as u32,
            line_count: lines.len() as u32,
            created_at: created,
        }],
        vector: Some(QuantizedVector::quantize(MODEL, &random_unit(rng))),
        updated_at: Some(created),
    }
}

/// A review query that is a near-duplicate of `planted`: a third of its lines dropped, a
/// fifth of the remaining identifiers replaced, lines shuffled; a vector at cosine ~0.7.
fn perturbed(
    planted: &Candidate,
    vocabulary: &[String],
    rng: &mut Rng,
) -> (Query, Vec<f32>, String) {
    let body: Vec<&str> = planted.text.lines().skip(3).collect();
    let mut lines: Vec<String> = Vec::new();
    for line in &body {
        if rng.below(3) == 0 {
            continue;
        }
        let words: Vec<String> = line
            .split(' ')
            .map(|word| {
                if word.contains('_') && rng.below(5) == 0 {
                    vocabulary[rng.below(vocabulary.len())].clone()
                } else {
                    word.to_string()
                }
            })
            .collect();
        lines.push(words.join(" "));
    }
    if lines.is_empty() {
        lines.push(body.first().map(|l| l.to_string()).unwrap_or_default());
    }
    for i in (1..lines.len()).rev() {
        lines.swap(i, rng.below(i + 1));
    }
    let planted_vector = planted
        .vector
        .as_ref()
        .expect("planted vectors exist")
        .to_f32();
    let noise = random_unit(rng);
    let query_vector = unit(
        &planted_vector
            .iter()
            .zip(&noise)
            .map(|(p, n)| p + n)
            .collect::<Vec<f32>>(),
    );
    let query = Query {
        trigger: Trigger::Review,
        text: lines.join("\n"),
        language: Some("rust".into()),
        paths: planted.path.iter().cloned().collect(),
        functions: planted.function_context.iter().cloned().collect(),
        pr: Some(999_999),
    };
    (query, query_vector, planted.key.clone())
}

fn random_unit(rng: &mut Rng) -> Vec<f32> {
    unit(&(0..DIMENSIONS).map(|_| rng.normal()).collect::<Vec<f32>>())
}

fn unit(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}

// --- helpers ---------------------------------------------------------------------------

/// SplitMix64: deterministic, dependency-free, good enough for synthetic data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next() % n as u64) as usize
    }

    fn unit_f64(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Roughly Zipf-distributed index: a few identifiers are everywhere, most are rare,
    /// as in real code.
    fn zipf(&mut self, n: usize) -> usize {
        let x = self.unit_f64();
        ((n as f64).powf(x) as usize).saturating_sub(1).min(n - 1)
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f32 {
        let u1 = self.unit_f64().max(f64::MIN_POSITIVE);
        let u2 = self.unit_f64();
        ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
    }
}

/// CPU time this thread has run, to separate the code's cost from a busy machine's
/// scheduling (the development machine is shared by several builds).
fn cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec for the duration of the call.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if status != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn env_list(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.split(',')
                .filter_map(|s| s.trim().replace('_', "").parse().ok())
                .collect::<Vec<usize>>()
        })
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_vec())
}

/// Counts live heap bytes and their peak, for the memory figures.
struct Counting {
    current: AtomicUsize,
    peak: AtomicUsize,
}

impl Counting {
    fn current(&self) -> usize {
        self.current.load(Ordering::Relaxed)
    }

    fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Start a new peak from the current level; returns that level.
    fn reset_peak(&self) -> usize {
        let now = self.current();
        self.peak.store(now, Ordering::Relaxed);
        now
    }
}

// SAFETY: every call is forwarded to the system allocator unchanged; the counters are
// only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let now = self.current.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            self.peak.fetch_max(now, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) };
        self.current.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting {
    current: AtomicUsize::new(0),
    peak: AtomicUsize::new(0),
};
