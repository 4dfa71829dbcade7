//! Load: 1 000 signed deliveries across 50 PRs into the release `parley serve`, with a
//! fake GitHub and a fake LLM that take their time, and a check that the work came out
//! right.
//!
//! ```sh
//! cargo build --release -p parley-cli
//! cargo bench -p parley-tests --bench load
//! ```
//!
//! Each PR gets 20 deliveries, sent one after another (the next once the previous was
//! acknowledged, so "delivery order" is well defined), while the 50 PRs go in parallel
//! over at most [`CONNECTIONS`] connections: `pull_request.opened`, two
//! `pull_request.synchronize` (each after a push moved the head), nine mentions in
//! top-level comments and eight replies in the thread of a Parley finding. The fake GitHub
//! adds [`GITHUB_LATENCY`] to every call and the model [`LLM_LATENCY`] to every answer.
//!
//! Before the clock starts, [`WARM_UP`] questions on a PR of their own are acknowledged
//! and answered ([`warm_up`]): start-up is `cold_start`'s to measure, not this bench's.
//!
//! Measured: acknowledgement latency (p50/p99 of the 202s), deliveries acknowledged per
//! second, jobs finished per second end to end (first delivery to empty queues), and the
//! server's resident memory before, at peak and after. Checked: every question answered
//! exactly once, each PR's replies posted in the order its questions were delivered, no
//! head reviewed twice, every PR's last head reviewed (a review, or the completed check of
//! a push with nothing new), nothing dead-lettered. A failed check makes the bench exit
//! non-zero after printing its figures.

use parley_core::markers::{self, ReplyMarker};
use parley_core::review::summary::ReviewMarker;
use parley_tests::deliveries::{self, Source};
use parley_tests::fake_github::FakeGitHub;
use parley_tests::rig::{AUTHOR, BASE, BOT, DB_PATCH as PATCH, Fakes, OWNER};
use parley_tests::serve_process::{self, ServeProcess, queue_file};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SECRET: &str = "load-secret";
const NAME: &str = "load";
const REPO: &str = "octo-org/load";
const INSTALLATION: u64 = 99;
const PRS: u64 = 50;
const PER_PR: usize = 20;
/// Positions (in a PR's 20 deliveries) of the pushes; position 0 opens the PR, and the
/// rest alternate between top-level mentions and replies to the finding.
const PUSHES: [usize; 2] = [7, 14];
const CONNECTIONS: usize = 16;
/// Questions answered before the measured deliveries (see [`warm_up`]).
const WARM_UP: usize = 16;
const GITHUB_LATENCY: Duration = Duration::from_millis(20);
const LLM_LATENCY: Duration = Duration::from_millis(50);
/// All jobs must be done within this after the last acknowledgement.
const DRAIN_LIMIT: Duration = Duration::from_secs(15 * 60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Opened,
    Push,
    Mention,
    ThreadReply,
}

fn plan() -> Vec<Kind> {
    let mut question = 0;
    (0..PER_PR)
        .map(|i| {
            if i == 0 {
                Kind::Opened
            } else if PUSHES.contains(&i) {
                Kind::Push
            } else {
                question += 1;
                if question % 2 == 1 {
                    Kind::Mention
                } else {
                    Kind::ThreadReply
                }
            }
        })
        .collect()
}

fn head(pr: u64, push: usize) -> String {
    format!("{pr:04x}{push:04x}").repeat(5)
}

/// What one PR's sender saw: acknowledgement latencies and the questions in the order
/// they were delivered.
#[derive(Default)]
struct Sent {
    acks: Vec<Duration>,
    questions: Vec<u64>,
    accepted: usize,
    last_head: String,
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(run());
}

async fn run() {
    let binary = serve_process::parley_binary();
    let fakes = Fakes::start().await;
    let Fakes { github, llm } = &fakes;
    let source = Source::new(OWNER, NAME, INSTALLATION);
    let mut roots = HashMap::new();
    github.set_file(
        REPO,
        "main",
        ".parley.yml",
        "mention:\n  conversation:\n    maxTurnsPerPr: 50\n",
    );
    for pr in 1..=PRS {
        let files = [("src/db.rs", "modified", PATCH)];
        github.open_pull(REPO, pr, (AUTHOR, &head(pr, 0), BASE), &files);
        let body = deliveries::finding_body(&format!("f-{pr}"), "src/db.rs", 3, "SQL by format!");
        roots.insert(
            pr,
            github.add_review_comment(REPO, pr, BOT, &body, None, "src/db.rs", 3),
        );
    }
    fakes.answer_everything_with("The caller validates the id first.");
    github.set_latency(GITHUB_LATENCY);
    llm.set_latency(LLM_LATENCY);

    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("parley.db");
    let env = fakes.env(&db, SECRET);
    let server = ServeProcess::start(&binary, &env, dir.path(), "serve.log");
    let pid = server.pid();
    let before = serve_process::resident_kib(pid).expect("VmRSS");

    let client = parley_llm::client_builder()
        .pool_max_idle_per_host(CONNECTIONS)
        .build()
        .expect("client");
    warm_up(github, &client, &source, &server.webhook_url, &db).await;
    let connections = Arc::new(tokio::sync::Semaphore::new(CONNECTIONS));
    let started = Instant::now();
    let mut senders = tokio::task::JoinSet::new();
    for pr in 1..=PRS {
        let (github, client, connections, source) = (
            github.clone(),
            client.clone(),
            connections.clone(),
            source.clone(),
        );
        let url = server.webhook_url.clone();
        let root = roots[&pr];
        senders.spawn(async move {
            let sent = send_pr(&github, &client, &connections, &source, &url, pr, root).await;
            (pr, sent)
        });
    }
    let mut sent: HashMap<u64, Sent> = HashMap::new();
    let mut peak_rss = before.0;
    // Sample memory while the deliveries go out, then until the queues are empty.
    let mut sample = tokio::time::interval(Duration::from_millis(100));
    while !senders.is_empty() {
        tokio::select! {
            joined = senders.join_next() => {
                let (pr, result) = joined.expect("a sender").expect("sender panicked");
                sent.insert(pr, result);
            }
            _ = sample.tick() => {
                if let Some((rss, _)) = serve_process::resident_kib(pid) {
                    peak_rss = peak_rss.max(rss);
                }
            }
        }
    }
    let acked_in = started.elapsed();
    let drained_in = loop {
        let conversation = queue_file::depth(&db, "conversation");
        let review = queue_file::depth(&db, "review");
        if conversation.is_drained() && review.is_drained() {
            break started.elapsed();
        }
        assert!(
            started.elapsed() < acked_in + DRAIN_LIMIT,
            "jobs not done {DRAIN_LIMIT:?} after the last acknowledgement: {conversation:?} {review:?}"
        );
        if let Some((rss, _)) = serve_process::resident_kib(pid) {
            peak_rss = peak_rss.max(rss);
        }
        sample.tick().await;
    };
    let (after, hwm) = serve_process::resident_kib(pid).expect("VmRSS");
    peak_rss = peak_rss.max(after);

    // --- figures -----------------------------------------------------------------------
    let mut acks: Vec<Duration> = sent.values().flat_map(|s| s.acks.clone()).collect();
    acks.sort();
    let deliveries = acks.len();
    let accepted: usize = sent.values().map(|s| s.accepted).sum();
    let pct = |p: usize| acks[(deliveries * p / 100).min(deliveries - 1)];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mib = |kib: u64| kib as f64 / 1024.0;

    // --- correctness -------------------------------------------------------------------
    let checks = check(github, &sent, &db);

    println!();
    println!(
        "parley serve (release) under load: {deliveries} deliveries, {PRS} PRs, GitHub +{GITHUB_LATENCY:?}/call, LLM +{LLM_LATENCY:?}/call, {CONNECTIONS} connections"
    );
    println!("| measure | value |");
    println!("|---|---|");
    println!(
        "| ack latency p50 / p99 / max | {:.1} ms / {:.1} ms / {:.1} ms |",
        ms(pct(50)),
        ms(pct(99)),
        ms(acks[deliveries - 1])
    );
    println!(
        "| deliveries acknowledged | {accepted} accepted of {deliveries} in {:.2} s: {:.0} /s |",
        acked_in.as_secs_f64(),
        deliveries as f64 / acked_in.as_secs_f64()
    );
    println!(
        "| jobs finished end to end | {accepted} in {:.1} s: {:.1} jobs/s |",
        drained_in.as_secs_f64(),
        accepted as f64 / drained_in.as_secs_f64()
    );
    println!(
        "| resident memory (VmRSS) before / peak / after | {:.1} / {:.1} / {:.1} MiB (VmHWM {:.1} MiB) |",
        mib(before.0),
        mib(peak_rss),
        mib(after),
        mib(hwm)
    );
    for (what, outcome) in &checks {
        println!(
            "| {what} | {} |",
            match outcome {
                Ok(detail) => format!("ok: {detail}"),
                Err(detail) => format!("FAILED: {detail}"),
            }
        );
    }
    let failed = checks.iter().filter(|(_, o)| o.is_err()).count();
    if failed > 0 {
        // Keep the server's log and database for a look.
        let log = dir.keep().join("serve.log");
        eprintln!(
            "{failed} correctness check(s) failed; the server's log: {}",
            log.display()
        );
        drop(server);
        std::process::exit(1);
    }
    drop(server);
}

/// Before the clock starts: [`WARM_UP`] questions on a PR of their own, acknowledged and
/// answered. A server's first requests pay for what one that has been up a while did
/// long ago (the SQLite file's first pages, the connection pools, each code path's first
/// run): start-up, which `cold_start` measures, not load. The PR is none of the measured
/// ones, and its questions are all answered before the first measured delivery.
async fn warm_up(
    github: &FakeGitHub,
    client: &reqwest::Client,
    source: &Source,
    url: &str,
    db: &Path,
) {
    let pr = PRS + 1;
    let files = [("src/db.rs", "modified", PATCH)];
    github.open_pull(REPO, pr, (AUTHOR, &head(pr, 0), BASE), &files);
    let mut acks = tokio::task::JoinSet::new();
    for i in 0..WARM_UP {
        let text = format!("@parley warm-up question {i}: why this query?");
        let id = github.add_issue_comment(REPO, pr, AUTHOR, &text);
        let payload =
            deliveries::pr_issue_comment(source, pr, &by_id(&github.issue_comments(REPO, pr), id));
        let (client, url) = (client.clone(), url.to_string());
        acks.spawn(async move {
            let delivery = format!("warm-up-{i}");
            serve_process::deliver(&client, &url, SECRET, "issue_comment", &delivery, &payload)
                .await
        });
    }
    while let Some(ack) = acks.join_next().await {
        let (status, body) = ack.expect("warm-up delivery");
        assert_eq!(status, 202, "warm-up: {body}");
    }
    let deadline = Instant::now() + DRAIN_LIMIT;
    while !queue_file::depth(db, "conversation").is_drained() {
        assert!(
            Instant::now() < deadline,
            "the warm-up's questions were not answered"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One PR's 20 deliveries, in order, each after the previous one's 202.
async fn send_pr(
    github: &FakeGitHub,
    client: &reqwest::Client,
    connections: &tokio::sync::Semaphore,
    source: &Source,
    url: &str,
    pr: u64,
    root: u64,
) -> Sent {
    let mut sent = Sent {
        last_head: head(pr, 0),
        ..Sent::default()
    };
    let mut pushes = 0;
    for (i, kind) in plan().into_iter().enumerate() {
        let delivery = format!("load-{pr}-{i}");
        let (event, payload) = match kind {
            Kind::Opened => (
                "pull_request",
                deliveries::pull_request(source, "opened", pr, AUTHOR, &head(pr, 0), BASE, None),
            ),
            Kind::Push => {
                let before = head(pr, pushes);
                pushes += 1;
                let after = head(pr, pushes);
                github.update_pull(REPO, pr, |p| p["head"]["sha"] = after.clone().into());
                sent.last_head = after.clone();
                (
                    "pull_request",
                    deliveries::pull_request(
                        source,
                        "synchronize",
                        pr,
                        AUTHOR,
                        &after,
                        BASE,
                        Some(&before),
                    ),
                )
            }
            Kind::Mention => {
                let text = format!("@parley question {i} on PR {pr}: why this query?");
                let id = github.add_issue_comment(REPO, pr, AUTHOR, &text);
                sent.questions.push(id);
                let comment = by_id(&github.issue_comments(REPO, pr), id);
                (
                    "issue_comment",
                    deliveries::pr_issue_comment(source, pr, &comment),
                )
            }
            Kind::ThreadReply => {
                let text = format!("Question {i} on PR {pr}: is this finding real?");
                let id =
                    github.add_review_comment(REPO, pr, AUTHOR, &text, Some(root), "src/db.rs", 3);
                sent.questions.push(id);
                let comment = by_id(&github.review_comments(REPO, pr), id);
                (
                    "pull_request_review_comment",
                    deliveries::review_comment(source, pr, AUTHOR, &comment, PATCH),
                )
            }
        };
        let permit = connections.acquire().await.expect("semaphore");
        let start = Instant::now();
        let (status, body) =
            serve_process::deliver(client, url, SECRET, event, &delivery, &payload).await;
        sent.acks.push(start.elapsed());
        drop(permit);
        assert_eq!(status, 202, "{delivery}: {body}");
        if body.contains("\"accepted\"") {
            sent.accepted += 1;
        }
    }
    sent
}

fn by_id(comments: &[Value], id: u64) -> Value {
    comments
        .iter()
        .find(|c| c["id"] == id)
        .cloned()
        .expect("comment on the fake")
}

type Check = (&'static str, Result<String, String>);

fn check(github: &FakeGitHub, sent: &HashMap<u64, Sent>, db: &Path) -> Vec<Check> {
    let mut answered_once = 0;
    let mut missing = Vec::new();
    let mut twice = Vec::new();
    let mut out_of_order = Vec::new();
    let mut other_notes = 0;
    let mut duplicate_reviews = Vec::new();
    let mut reviews_total = 0;
    let mut last_head_unreviewed = Vec::new();
    for pr in 1..=PRS {
        let s = &sent[&pr];
        let mut parley: Vec<Value> = github.review_comments(REPO, pr);
        parley.extend(github.issue_comments(REPO, pr));
        parley.retain(|c| c["user"]["login"] == BOT);
        // The fake numbers comments as they are created: id order is posting order.
        parley.sort_by_key(|c| c["id"].as_u64());
        let mut replied: Vec<u64> = Vec::new();
        for c in &parley {
            let body = c["body"].as_str().unwrap_or("");
            let all = markers::parse_all(body);
            if all.iter().any(|m| m.kind == markers::kind::FINDING) {
                continue;
            }
            match markers::find::<ReplyMarker>(body, markers::kind::REPLY) {
                Some(m) => replied.push(m.reply_to),
                None => other_notes += 1,
            }
        }
        for q in &s.questions {
            match replied.iter().filter(|r| *r == q).count() {
                1 => answered_once += 1,
                0 => missing.push((pr, *q)),
                n => twice.push((pr, *q, n)),
            }
        }
        let mut first_replies = Vec::new();
        for r in &replied {
            if !first_replies.contains(r) {
                first_replies.push(*r);
            }
        }
        let delivered: Vec<u64> = s
            .questions
            .iter()
            .copied()
            .filter(|q| first_replies.contains(q))
            .collect();
        if first_replies != delivered {
            out_of_order.push((pr, delivered, first_replies));
        }
        let mut per_head: HashMap<String, usize> = HashMap::new();
        for review in github.reviews(REPO, pr) {
            if let Some(m) = markers::find::<ReviewMarker>(
                review["body"].as_str().unwrap_or(""),
                markers::kind::REVIEW,
            ) {
                *per_head.entry(m.head_sha).or_default() += 1;
                reviews_total += 1;
            }
        }
        for (head, n) in &per_head {
            if *n > 1 {
                duplicate_reviews.push((pr, head.clone(), *n));
            }
        }
        // Reviewed once: one review, or, for a push with nothing new to say (which posts
        // none), its completed check.
        let checked = github
            .gate_checks(REPO, &s.last_head)
            .iter()
            .any(|c| c["status"] == "completed");
        match per_head.get(&s.last_head).copied().unwrap_or(0) {
            1 => {}
            0 if checked => {}
            _ => last_head_unreviewed.push(pr),
        }
    }
    let questions: usize = sent.values().map(|s| s.questions.len()).sum();
    let dead = queue_file::depth(db, "conversation").dead + queue_file::depth(db, "review").dead;
    let verdict = |ok: bool, good: String, bad: String| if ok { Ok(good) } else { Err(bad) };
    vec![
        (
            "every question answered exactly once",
            verdict(
                missing.is_empty() && twice.is_empty(),
                format!("{answered_once} of {questions}"),
                format!(
                    "{answered_once} of {questions} once; unanswered {missing:?}; more than once {twice:?}"
                ),
            ),
        ),
        (
            "per-PR order of replies",
            verdict(
                out_of_order.is_empty(),
                format!("kept on all {PRS} PRs"),
                format!(
                    "broken on PRs {:?}; first, (delivered, replied): {:?}",
                    out_of_order.iter().map(|o| o.0).collect::<Vec<_>>(),
                    out_of_order.first().map(|o| (&o.1, &o.2))
                ),
            ),
        ),
        (
            "no head reviewed twice",
            verdict(
                duplicate_reviews.is_empty(),
                format!("{reviews_total} reviews, one per head at most"),
                format!("duplicates (pr, head, reviews): {duplicate_reviews:?}"),
            ),
        ),
        (
            "every PR's last head reviewed",
            verdict(
                last_head_unreviewed.is_empty(),
                format!("{PRS} of {PRS}"),
                format!("not reviewed once: PRs {last_head_unreviewed:?}"),
            ),
        ),
        (
            "no error or limit notes, nothing dead-lettered",
            verdict(
                other_notes == 0 && dead == 0,
                "none".to_string(),
                format!("{other_notes} other notes, {dead} dead letters"),
            ),
        ),
    ]
}
