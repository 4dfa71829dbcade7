//! The fault matrix: for a conversation turn and for a review, every
//! fault at every GitHub call site the job makes, LLM faults and the store going away, each
//! checked against one outcome rule.
//!
//! **A turn ends in exactly one reply (and at most one error note on the way); a review
//! ends in exactly one posted review and a completed "Parley review" check. Never two,
//! never silence.** A job that fails is run again, as the queue would, once the fault is
//! over, and must then end by the rule. While the fault lasts: never two replies, notes or
//! reviews; a successful attempt has answered (or posted its review and concluded its
//! check); a failed review never concludes anything but `neutral`; nothing public carries a
//! raw error; a turn that dead-letters gives its turn back; a hanging GitHub endpoint costs
//! an attempt a few request timeouts, not one per file it reads.
//!
//! Every scenario runs the real worker against the fake GitHub and fake LLM over HTTP, on
//! its own store; scenarios of one test run concurrently. The whole matrix runs on SQLite,
//! a representative subset on DynamoDB (moto). Each test prints what happened per scenario
//! (`cargo nextest run -p parley-tests -E 'binary(faults)' --no-capture`); docs/faults.md
//! is that table, read.
//!
//! Modes: a **blip** is one failed call (the client's own retry, or the job's); an
//! **outage** lasts until the job's first attempt has failed; a **persistent** fault lasts
//! for all of the queue's receives (the message is then dead-lettered), and the run after
//! it is a redrive.

use parley_core::Job;
use parley_core::conversation::ConversationHandler;
use parley_core::job::ReviewTrigger;
use parley_core::markers::{self, FindingMarker};
use parley_core::ports::github::GitHub;
use parley_core::ports::{JobError, ReviewRun, RunState};
use parley_core::repo::{BotIdentity, ConfigLoader};
use parley_core::review::ReviewHandler;
use parley_core::review::summary::ReviewMarker;
use parley_core::services::Services;
use parley_store::sqlite::SqliteStore;
use parley_tests::clients;
use parley_tests::conversation_harness::{self as conv, Harness};
use parley_tests::fake_github::{FakeGitHub, Fault, FaultAction};
use parley_tests::fake_llm::FakeLlm;
use parley_tests::flaky_store::{FlakyStore, Outage};
use parley_tests::review_harness::{self as rev, ReviewHarness};
use parley_tests::tenants::key;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Each GitHub attempt gives up after this in the timeout scenarios (production: 30 s);
/// the others keep the shared client's 10 s, so a busy machine cannot time them out.
/// Generous, for the same reason: scenarios run concurrently on two cores.
const GITHUB_TIMEOUT: Duration = Duration::from_millis(1500);
/// A slow GitHub answer: well past [`GITHUB_TIMEOUT`].
const GITHUB_SLOW: Duration = Duration::from_millis(3000);
/// Each LLM attempt gives up after this in the timeout scenarios (production:
/// `LLM_TIMEOUT_SECS`, 60 s).
const LLM_TIMEOUT: Duration = Duration::from_millis(1500);
const LLM_SLOW: Duration = Duration::from_millis(3000);
/// What one hanging GitHub call costs with the test client: both of its attempts time out
/// (production: one attempt of 30 s; the retry budget is spent by then).
const HUNG_CALL: Duration = GITHUB_TIMEOUT.saturating_mul(2);
/// At most this many hung calls per job attempt (production: 90 s).
const MAX_HUNG_CALLS: u32 = 3;
/// The clients' timeouts outside the timeout scenarios (GitHub, LLM).
const DEFAULT_TIMEOUTS: (Duration, Duration) = (Duration::from_secs(10), Duration::from_secs(5));
/// Receives before the queue dead-letters a message (`PARLEY_MAX_RECEIVE`, SQS redrive).
const QUEUE_RECEIVES: usize = 5;
/// Scenarios of one test in flight at once.
const CONCURRENCY: usize = 12;

/// Text that must never reach a public comment, review or check: the raw errors of the
/// fakes and the flaky store, and what the clients' error messages are made of.
const RAW_ERRORS: &[&str] = &[
    "fault-injected",
    "fake failure",
    "injected outage",
    "GARBAGE-OUTPUT",
    "127.0.0.1",
    "(HTTP ",
    "error sending request",
    "operation timed out",
    "GET /repos",
    "POST /repos",
    "PATCH /repos",
    "retry after",
    "api_error",
];

// --- what goes wrong -----------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GhFault {
    S500,
    S502,
    /// 429 with `Retry-After: 1`.
    TooMany,
    /// 403 "You have exceeded a secondary rate limit", `Retry-After: 1`.
    Secondary,
    /// The answer comes after the client's timeout (a write still lands).
    Timeout,
}

/// How each GitHub fault is tried at every call site. The client treats 500 and 502
/// alike (server errors: reads retried, writes that may have landed not), and 429 and the
/// secondary limit alike (rate limits: waited out within a budget, writes included), so
/// each pair is tried once as a blip and once as an outage between them; a 500 also
/// outlasts the queue's receives.
const GH_PLAN: &[(GhFault, Mode)] = &[
    (GhFault::S502, Mode::Blip),
    (GhFault::S500, Mode::Outage),
    (GhFault::S500, Mode::Persistent),
    (GhFault::TooMany, Mode::Blip),
    (GhFault::Secondary, Mode::Outage),
    (GhFault::Timeout, Mode::Outage),
];

impl GhFault {
    fn name(self) -> &'static str {
        match self {
            GhFault::S500 => "500",
            GhFault::S502 => "502",
            GhFault::TooMany => "429",
            GhFault::Secondary => "403 secondary limit",
            GhFault::Timeout => "timeout",
        }
    }

    fn action(self) -> FaultAction {
        let respond = |status: u16, message: &str, headers: Vec<(&'static str, String)>| {
            FaultAction::Respond {
                status,
                body: json!({ "message": format!("fault-injected: {message}"), "documentation_url": "https://docs.github.com/rest" }),
                headers,
            }
        };
        match self {
            GhFault::S500 => respond(500, "Server Error", Vec::new()),
            GhFault::S502 => respond(502, "Bad Gateway", Vec::new()),
            GhFault::TooMany => respond(
                429,
                "Too Many Requests",
                vec![("retry-after", "1".to_string())],
            ),
            GhFault::Secondary => respond(
                403,
                "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
                vec![("retry-after", "1".to_string())],
            ),
            GhFault::Timeout => FaultAction::Slow(GITHUB_SLOW),
        }
    }
}

/// One GitHub call a job makes: method and path (exact, or a fragment of it).
#[derive(Debug, Clone, Copy)]
struct Site {
    name: &'static str,
    method: &'static str,
    paths: &'static [&'static str],
    exact: bool,
    /// Calls to let through first (the second call to the same path).
    skip: usize,
}

const fn site(name: &'static str, method: &'static str, paths: &'static [&'static str]) -> Site {
    Site {
        name,
        method,
        paths,
        exact: false,
        skip: 0,
    }
}

const fn exact(name: &'static str, method: &'static str, path: &'static [&'static str]) -> Site {
    Site {
        name,
        method,
        paths: path,
        exact: true,
        skip: 0,
    }
}

impl Site {
    fn faults(&self, fault: GhFault, times: usize) -> Vec<Fault> {
        self.paths
            .iter()
            .map(|path| Fault {
                method: self.method,
                path: (*path).to_string(),
                exact: self.exact,
                skip: self.skip,
                times,
                action: fault.action(),
            })
            .collect()
    }

    fn hits(&self, github: &FakeGitHub) -> usize {
        github
            .requests()
            .iter()
            .filter(|r| {
                r.method == self.method
                    && self.paths.iter().any(|p| {
                        if self.exact {
                            r.path == *p
                        } else {
                            r.path.contains(p)
                        }
                    })
            })
            .count()
    }
}

const GET_APP: &str = "GET /app (slug, when not configured)";

/// The GitHub calls of a turn: a reply to a finding in its thread (inline) by `bob`, who
/// needs a permission lookup, on a worker that has not run a job yet.
const TURN_SITES: &[Site] = &[
    exact(GET_APP, "GET", &["/app"]),
    site("installation token", "POST", &["/access_tokens"]),
    exact("GET the PR", "GET", &["/repos/octo-org/talk/pulls/7"]),
    exact(
        "list review comments",
        "GET",
        &["/repos/octo-org/talk/pulls/7/comments"],
    ),
    exact(
        "list issue comments",
        "GET",
        &["/repos/octo-org/talk/issues/7/comments"],
    ),
    exact(
        "list reviews",
        "GET",
        &["/repos/octo-org/talk/pulls/7/reviews"],
    ),
    site(".parley.yml", "GET", &["/contents/.parley.yml"]),
    site(
        "guideline files",
        "GET",
        &[
            "/contents/CLAUDE.md",
            "/contents/.claude/",
            "/contents/AGENTS.md",
            "/contents/src/",
        ],
    ),
    site("permission lookup", "GET", &["/collaborators/"]),
    site("eyes reaction", "POST", &["/reactions"]),
    site("POST reply (thread)", "POST", &["/replies"]),
];

/// The calls that differ for a top-level question (`@parley …` in the PR conversation):
/// the listings swap roles, and the answer is a comment of its own.
const TOP_LEVEL_SITES: &[Site] = &[
    exact(
        "list issue comments",
        "GET",
        &["/repos/octo-org/talk/issues/7/comments"],
    ),
    exact(
        "list review comments",
        "GET",
        &["/repos/octo-org/talk/pulls/7/comments"],
    ),
    exact(
        "list files (the question's context)",
        "GET",
        &["/repos/octo-org/talk/pulls/7/files"],
    ),
    exact(
        "POST reply (conversation)",
        "POST",
        &["/repos/octo-org/talk/issues/7/comments"],
    ),
];

/// The GitHub calls of an incremental review (`synchronize` after a reviewed head), with
/// one blocking finding posted inline, on a worker that has not run a job yet.
const REVIEW_SITES: &[Site] = &[
    exact(GET_APP, "GET", &["/app"]),
    site("installation token", "POST", &["/access_tokens"]),
    exact(
        "GET the PR (first)",
        "GET",
        &["/repos/octo-org/hello-world/pulls/42"],
    ),
    Site {
        skip: 1,
        ..exact(
            "GET the PR (last look)",
            "GET",
            &["/repos/octo-org/hello-world/pulls/42"],
        )
    },
    exact(
        "list files",
        "GET",
        &["/repos/octo-org/hello-world/pulls/42/files"],
    ),
    site("compare", "GET", &["/compare/"]),
    site(".parley.yml", "GET", &["/contents/.parley.yml"]),
    site(
        "guideline files",
        "GET",
        &[
            "/contents/CLAUDE.md",
            "/contents/.claude/",
            "/contents/AGENTS.md",
            "/contents/src/",
        ],
    ),
    exact(
        "list reviews (recovery)",
        "GET",
        &["/repos/octo-org/hello-world/pulls/42/reviews"],
    ),
    exact(
        "create check run",
        "POST",
        &["/repos/octo-org/hello-world/check-runs"],
    ),
    exact(
        "POST review",
        "POST",
        &["/repos/octo-org/hello-world/pulls/42/reviews"],
    ),
    site(
        "list the review's comments",
        "GET",
        &["/repos/octo-org/hello-world/pulls/42/reviews/"],
    ),
    site(
        "PATCH check run",
        "PATCH",
        &["/repos/octo-org/hello-world/check-runs/"],
    ),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LlmFault {
    Timeout,
    TooMany,
    S500,
    /// Text that is not the JSON asked for.
    Garbage,
}

const LLM_FAULTS: [LlmFault; 4] = [
    LlmFault::Timeout,
    LlmFault::TooMany,
    LlmFault::S500,
    LlmFault::Garbage,
];

impl LlmFault {
    fn name(self) -> &'static str {
        match self {
            LlmFault::Timeout => "LLM timeout",
            LlmFault::TooMany => "LLM 429",
            LlmFault::S500 => "LLM 500",
            LlmFault::Garbage => "LLM garbage",
        }
    }
}

const GARBAGE: &str = "GARBAGE-OUTPUT: I think the code is fine, probably.";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// One failed call.
    Blip,
    /// Until the job's first attempt has failed.
    Outage,
    /// For every receive the queue allows.
    Persistent,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Blip => "blip",
            Mode::Outage => "outage",
            Mode::Persistent => "persistent",
        }
    }

    fn attempts_under_fault(self) -> usize {
        match self {
            Mode::Persistent => QUEUE_RECEIVES,
            _ => 1,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Injection {
    GitHub(Site, GhFault),
    Llm(LlmFault),
    /// The store fails from call `n` of the job on (blip: call `n` alone).
    Store(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Sqlite,
    Dynamo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Surface {
    Inline,
    TopLevel,
}

#[derive(Debug, Clone, Copy)]
struct Scenario {
    backend: Backend,
    injection: Injection,
    mode: Mode,
}

impl Scenario {
    /// No fault: how a job goes when nothing goes wrong (the store's calls are counted).
    fn baseline(backend: Backend) -> Self {
        Scenario {
            backend,
            injection: Injection::Store(usize::MAX),
            mode: Mode::Outage,
        }
    }

    /// The GitHub and LLM clients' per-attempt timeouts: short only where the scenario is
    /// about a timeout.
    fn timeouts(&self) -> (Duration, Duration) {
        let (mut github, mut llm) = DEFAULT_TIMEOUTS;
        match self.injection {
            Injection::GitHub(_, GhFault::Timeout) => github = GITHUB_TIMEOUT,
            Injection::Llm(LlmFault::Timeout) => llm = LLM_TIMEOUT,
            _ => {}
        }
        (github, llm)
    }

    /// Whether the worker must learn its slug from `GET /app` (cold, `GITHUB_APP_SLUG`
    /// unset): only where that call is the one faulted, and for the store's call list.
    fn learns_slug(&self) -> bool {
        matches!(self.injection, Injection::GitHub(site, _) if site.name == GET_APP)
    }

    /// For a hanging GitHub call: the attempt's time, in the story.
    fn took(&self, elapsed: Duration) -> String {
        match self.injection {
            Injection::GitHub(_, GhFault::Timeout) => format!(" in {:.1} s", elapsed.as_secs_f64()),
            _ => String::new(),
        }
    }

    /// A hanging GitHub endpoint may cost a job attempt a few calls' timeouts, never one per
    /// file or comment it reads: the worker's own timeout (180 s for a turn, 300 s for a
    /// review) must outlast the attempt, or the job dies without its note or check.
    fn too_slow(&self, elapsed: Duration) -> Option<String> {
        let Injection::GitHub(_, GhFault::Timeout) = self.injection else {
            return None;
        };
        (elapsed > MAX_HUNG_CALLS * HUNG_CALL + Duration::from_secs(2)).then(|| {
            format!(
                "an attempt took {:.1} s: more than {MAX_HUNG_CALLS} hung calls of {:.1} s",
                elapsed.as_secs_f64(),
                HUNG_CALL.as_secs_f64()
            )
        })
    }

    fn name(&self, job: &str, store_calls: &[&'static str]) -> String {
        let what = match self.injection {
            Injection::GitHub(site, fault) => format!("{} · {}", site.name, fault.name()),
            Injection::Llm(fault) => fault.name().to_string(),
            Injection::Store(n) => format!(
                "store from call {n} ({})",
                store_calls.get(n).copied().unwrap_or("?")
            ),
        };
        format!(
            "[{job} · {what} · {} · {:?}]",
            self.mode.name(),
            self.backend
        )
    }
}

// --- wiring ----------------------------------------------------------------------------

/// The SQLite store in memory: the same adapter as on a file, without a file per scenario.
fn sqlite_in_memory() -> Arc<dyn parley_core::ports::Store> {
    Arc::new(SqliteStore::open_in_memory().expect("sqlite store"))
}

/// Where the store fails in the store scenarios: at each call of a fault-free job, except
/// that a run of calls of one kind (the usage counters) counts once, at its first.
fn store_call_positions(calls: &[&'static str]) -> Vec<usize> {
    (0..calls.len())
        .filter(|&n| n == 0 || calls[n] != calls[n - 1])
        .collect()
}

/// The harness's services with short client timeouts and the store behind a switch.
///
/// The harness's clients already have the default timeouts, and building a GitHub client
/// costs a debug build tens of milliseconds (it parses the App key and signs a JWT), so a
/// new one is built only for a timeout scenario. Parley knows its slug (as with
/// `GITHUB_APP_SLUG`) unless the scenario is about learning it from `GET /app`.
fn rewire(
    services: &mut Services,
    github: &FakeGitHub,
    llm: &FakeLlm,
    store: FlakyStore,
    s: &Scenario,
) {
    let (github_timeout, llm_timeout) = s.timeouts();
    if github_timeout != DEFAULT_TIMEOUTS.0 {
        let client: Arc<dyn GitHub> =
            Arc::new(clients::github_client_with_timeout(github, github_timeout));
        services.github = client.clone();
        services.config = Arc::new(ConfigLoader::new(client, ConfigLoader::DEFAULT_TTL));
    }
    if llm_timeout != DEFAULT_TIMEOUTS.1 {
        services.llm = clients::anthropic_llm_with_timeout(llm, llm_timeout);
    }
    if !s.learns_slug() {
        services.identity = Arc::new(BotIdentity::new(Some("parley".to_string()), Vec::new()));
    }
    services.store = Arc::new(store);
}

/// Put the fault in place. `times` for the GitHub faults: one call, or until cleared.
fn inject(github: &FakeGitHub, llm: &FakeLlm, flaky: &FlakyStore, s: &Scenario, reply: &str) {
    let blip = s.mode == Mode::Blip;
    match s.injection {
        Injection::GitHub(site, fault) => {
            for f in site.faults(fault, if blip { 1 } else { usize::MAX }) {
                github.fault(f);
            }
        }
        Injection::Llm(fault) => match (fault, blip) {
            (LlmFault::Timeout, true) => llm.slow_times("", reply, LLM_SLOW, 1),
            (LlmFault::Timeout, false) => llm.set_latency(LLM_SLOW),
            (LlmFault::TooMany, true) => llm.fail_times("", 429, 1),
            (LlmFault::TooMany, false) => llm.fail("", 429),
            (LlmFault::S500, true) => llm.fail_times("", 500, 1),
            (LlmFault::S500, false) => llm.fail("", 500),
            (LlmFault::Garbage, true) => llm.answer_in_turn("", &[GARBAGE]),
            (LlmFault::Garbage, false) => llm.answer("", GARBAGE),
        },
        Injection::Store(n) => {
            flaky.reset_calls();
            flaky.set_outage(if blip {
                Outage::Only(n)
            } else {
                Outage::From(n)
            });
        }
    }
}

/// The fault is over.
fn clear(github: &FakeGitHub, llm: &FakeLlm, flaky: &FlakyStore) {
    github.clear_injected();
    llm.remove_rules("");
    llm.set_latency(Duration::ZERO);
    flaky.heal();
}

fn outcome(result: &Result<(), JobError>) -> &'static str {
    match result {
        Ok(()) => "ok",
        Err(JobError::Transient(_)) => "fails (transient)",
        Err(JobError::Permanent(_)) => "fails (permanent)",
        Err(JobError::Misconfigured(_)) => "fails (misconfigured)",
    }
}

/// The job's error, for a failure message (never for the printed matrix: it is long).
fn error_of(result: &Result<(), JobError>) -> Option<String> {
    result.as_ref().err().map(ToString::to_string)
}

fn raw_errors_in(texts: &[String]) -> Vec<String> {
    texts
        .iter()
        .filter(|t| RAW_ERRORS.iter().any(|raw| t.contains(raw)))
        .cloned()
        .collect()
}

/// What one scenario did, for the printed matrix.
struct Row {
    name: String,
    story: String,
}

type BoxedScenario = Pin<Box<dyn Future<Output = Result<Row, String>> + Send>>;

/// Run every scenario (at most [`CONCURRENCY`] at once), print the matrix, and fail with
/// every broken rule, each naming its scenario.
/// Delivery `receive` (1 to [`QUEUE_RECEIVES`]) as SQS and the SQLite queue count it, and
/// of how many: the last behaves as the last.
fn counted(receive: usize) -> (u32, u32) {
    let of = QUEUE_RECEIVES as u32;
    (u32::try_from(receive).unwrap_or(of).min(of), of)
}

async fn run_matrix(title: &str, scenarios: Vec<BoxedScenario>) {
    let started = Instant::now();
    let count = scenarios.len();
    let limit = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
    let mut set = tokio::task::JoinSet::new();
    for (index, scenario) in scenarios.into_iter().enumerate() {
        let limit = limit.clone();
        set.spawn(async move {
            let _permit = limit.acquire_owned().await.expect("semaphore");
            (index, scenario.await)
        });
    }
    let mut results = Vec::new();
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok(result) => results.push(result),
            Err(err) => results.push((usize::MAX, Err(format!("scenario panicked: {err}")))),
        }
    }
    results.sort_by_key(|(index, _)| *index);
    let mut table = format!(
        "\n## {title} ({count} scenarios, {:.1?})\n\n",
        started.elapsed()
    );
    let mut failures = Vec::new();
    for (_, result) in results {
        match result {
            Ok(row) => {
                let _ = writeln!(table, "{} {}", row.name, row.story);
            }
            Err(failure) => failures.push(failure),
        }
    }
    println!("{table}");
    assert!(
        failures.is_empty(),
        "{} of {count} scenarios broke the outcome rule:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

// --- the conversation turn -------------------------------------------------------------

struct TurnRig {
    h: Harness,
    flaky: FlakyStore,
    job: Job,
    comment: u64,
}

/// A turn's state on GitHub and in the store.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct TurnView {
    replies: usize,
    notes: usize,
    turns_used: u64,
    /// Everything Parley posted.
    public: Vec<String>,
}

impl TurnRig {
    async fn start(s: &Scenario, surface: Surface) -> Self {
        let backend = s.backend;
        let mut h = match backend {
            Backend::Sqlite => Harness::start_with(sqlite_in_memory(), None).await,
            Backend::Dynamo => Harness::start(conv::Backend::Dynamo).await,
        };
        h.config("mention:\n  minPermission: write\n");
        h.github.set_file(
            conv::REPO,
            conv::BASE,
            "CLAUDE.md",
            "Prefer small functions.\n",
        );
        let job = match surface {
            Surface::Inline => {
                let (root, _) = h.seed_finding(true).await;
                h.inline_comment(
                    "bob",
                    "Is this really a problem? The caller escapes the id first.",
                    Some(root),
                )
            }
            Surface::TopLevel => h.top_level_comment("bob", "@parley what does this PR change?"),
        };
        let comment = match &job {
            Job::Conversation(j) => j.comment.id,
            other => panic!("not a conversation job: {other:?}"),
        };
        let flaky = FlakyStore::new(h.store.clone());
        rewire(&mut h.services, &h.rig.github, &h.rig.llm, flaky.clone(), s);
        h.handler = ConversationHandler::new(h.services.clone());
        TurnRig {
            h,
            flaky,
            job,
            comment,
        }
    }

    /// The queue's `receive`th delivery of the job ([`counted`]).
    async fn attempt(&self, receive: usize) -> Result<(), JobError> {
        let (number, of) = counted(receive);
        self.h.run_attempt(self.job.clone(), number, of).await
    }

    async fn view(&self) -> TurnView {
        let notes = self
            .h
            .notes_of_kind(markers::kind::ERROR)
            .iter()
            .filter(|c| conv::reply_marker(c).is_some_and(|m| m.reply_to == self.comment))
            .count();
        TurnView {
            replies: self.h.replies_to(self.comment).len(),
            notes,
            // The real store behind the switch: looking must not count as a call.
            turns_used: parley_core::conversation::turns_used(
                self.h.store.as_ref(),
                &key(conv::REPO),
                conv::PR,
            )
            .await
            .unwrap_or(u64::MAX),
            public: self
                .h
                .parley_comments()
                .iter()
                .map(|c| c["body"].as_str().unwrap_or_default().to_string())
                .collect(),
        }
    }
}

/// Store calls a fault-free turn makes, by name, in order.
async fn turn_store_calls(backend: Backend, surface: Surface) -> Vec<&'static str> {
    let rig = TurnRig::start(&Scenario::baseline(backend), surface).await;
    rig.flaky.reset_calls();
    rig.attempt(1).await.expect("a fault-free turn succeeds");
    assert_eq!(rig.view().await.replies, 1, "a fault-free turn answers");
    rig.flaky.calls()
}

fn turn_scenario(s: Scenario, surface: Surface, store_calls: Vec<&'static str>) -> BoxedScenario {
    Box::pin(async move {
        let job_name = match surface {
            Surface::Inline => "turn (thread)",
            Surface::TopLevel => "turn (top-level)",
        };
        let name = s.name(job_name, &store_calls);
        let rig = TurnRig::start(&s, surface).await;
        let mut story = Vec::new();
        let mut broken = Vec::new();
        let mut errors: Vec<String> = Vec::new();
        let reply = conv::answer("Here is my answer.", None);
        inject(&rig.h.github, &rig.h.llm, &rig.flaky, &s, &reply);

        // Under the fault: the first attempt, and the queue's further receives if it lasts.
        let mut last = Ok(());
        let mut failed_before = false;
        for attempt in 1..=s.mode.attempts_under_fault() {
            let started = Instant::now();
            last = rig.attempt(attempt).await;
            errors.extend(error_of(&last));
            broken.extend(s.too_slow(started.elapsed()));
            let view = rig.view().await;
            story.push(format!(
                "{}{}{}{}",
                outcome(&last),
                s.took(started.elapsed()),
                if view.replies > 0 { ", reply" } else { "" },
                if view.notes > 0 { ", error note" } else { "" }
            ));
            if last.is_ok() && view.replies != 1 {
                broken.push(format!(
                    "attempt {attempt} succeeded with {} replies (silence or a double)",
                    view.replies
                ));
            }
            if view.replies > 1 || view.notes > 1 {
                broken.push(format!(
                    "attempt {attempt}: {} replies and {} error notes",
                    view.replies, view.notes
                ));
            }
            if last.is_ok() && view.notes > 0 && !failed_before {
                broken.push(format!(
                    "attempt {attempt} succeeded at once but posted an error note"
                ));
            }
            failed_before |= last.is_err();
            if last.is_ok() {
                break;
            }
        }
        if let Injection::GitHub(site, _) = s.injection
            && site.hits(&rig.h.github) <= site.skip
        {
            broken.push(format!(
                "the job never called {} {:?}: the site is not in its path",
                site.method, site.paths
            ));
        }
        let under_fault = rig.view().await;
        if s.mode == Mode::Persistent && last.is_err() {
            story.push(format!(
                "dead-lettered with {} error note(s), {} turn(s) used",
                under_fault.notes, under_fault.turns_used
            ));
            if under_fault.replies == 0 && under_fault.turns_used != 0 {
                broken.push(format!(
                    "a dead-lettered turn kept {} turn(s) of the PR's limit",
                    under_fault.turns_used
                ));
            }
        }

        // The fault is over: the queue's retry (or a redrive) runs the job again.
        clear(&rig.h.github, &rig.h.llm, &rig.flaky);
        let mut retries = 0;
        // A dead-lettered job is redriven with fresh receives; any other goes on counting.
        let received = match s.mode {
            Mode::Persistent => 0,
            mode => mode.attempts_under_fault(),
        };
        while last.is_err() && retries < QUEUE_RECEIVES {
            retries += 1;
            last = rig.attempt(received + retries).await;
            errors.extend(error_of(&last));
            story.push(format!("retry {}", outcome(&last)));
        }
        let end = rig.view().await;
        if last.is_err() {
            broken.push(format!("still failing after the fault: {last:?}"));
        }
        if end.replies != 1 {
            broken.push(format!("ends with {} replies, not one", end.replies));
        }
        if end.notes > 1 {
            broken.push(format!("ends with {} error notes", end.notes));
        }
        // Known limit: a store that goes away between claiming the comment's turn and
        // counting it (and stays away, so the claim cannot be released) leaves a claim
        // that the retry reads as "counted": that one answer is not counted.
        let uncounted = matches!(s.injection, Injection::Store(n)
            if s.mode != Mode::Blip && store_calls.get(n) == Some(&"increment_within"));
        if end.turns_used != 1 && !(uncounted && end.turns_used == 0) {
            broken.push(format!("ends with {} turns used, not one", end.turns_used));
        }
        if uncounted && end.turns_used == 0 {
            story.push("(known limit: the turn went uncounted)".to_string());
        }
        let raw = raw_errors_in(&end.public);
        if !raw.is_empty() {
            broken.push(format!("raw error text in public comments: {raw:#?}"));
        }
        story.push(format!("→ {} reply, {} note(s)", end.replies, end.notes));
        if broken.is_empty() {
            Ok(Row {
                name,
                story: story.join("; "),
            })
        } else {
            Err(format!(
                "{name}\n  - {}\n  story: {}\n  job errors: {errors:#?}",
                broken.join("\n  - "),
                story.join("; ")
            ))
        }
    })
}

fn turn_github_matrix(backend: Backend, timeouts: bool) -> Vec<BoxedScenario> {
    let mut scenarios = Vec::new();
    for (surface, sites) in [
        (Surface::Inline, TURN_SITES),
        (Surface::TopLevel, TOP_LEVEL_SITES),
    ] {
        for site in sites {
            for &(fault, mode) in GH_PLAN {
                if (fault == GhFault::Timeout) != timeouts {
                    continue;
                }
                scenarios.push(turn_scenario(
                    Scenario {
                        backend,
                        injection: Injection::GitHub(*site, fault),
                        mode,
                    },
                    surface,
                    Vec::new(),
                ));
            }
        }
    }
    scenarios
}

// --- the review --------------------------------------------------------------------------

/// `src/cache.rs`, added by the push under review: right-side lines 1-3.
const CACHE_PATCH: &str =
    "@@ -0,0 +1,3 @@\n+pub fn remember(v: &mut Vec<String>, s: String) {\n+    v.push(s);\n+}";
const CACHE_FINDING: &str = "Cache grows without bound";

struct ReviewRig {
    h: ReviewHarness,
    flaky: FlakyStore,
    job: Job,
}

#[derive(Debug, Default, Clone)]
struct ReviewView {
    /// Reviews Parley posted for the pushed head.
    reviews: usize,
    /// The review says it is partial (a pass failed): `neutral` is then its verdict.
    partial: bool,
    /// The blocking finding was posted inline.
    finding_posted: bool,
    /// `(status, conclusion)` of the "Parley review" checks on the pushed head, oldest
    /// first.
    checks: Vec<(String, String)>,
    /// Every finding posted inline is stored with the id of its comment.
    linked: bool,
    public: Vec<String>,
}

impl ReviewView {
    fn latest(&self) -> Option<&(String, String)> {
        self.checks.last()
    }

    fn in_progress(&self) -> usize {
        self.checks.iter().filter(|(s, _)| s != "completed").count()
    }

    fn describe_checks(&self) -> String {
        if self.checks.is_empty() {
            return "no check".to_string();
        }
        self.checks
            .iter()
            .map(|(status, conclusion)| {
                if status == "completed" {
                    conclusion.clone()
                } else {
                    status.clone()
                }
            })
            .collect::<Vec<_>>()
            .join("+")
    }
}

impl ReviewRig {
    async fn start(s: &Scenario) -> Self {
        let backend = s.backend;
        let mut h = match backend {
            Backend::Sqlite => ReviewHarness::start_with(sqlite_in_memory(), None).await,
            Backend::Dynamo => ReviewHarness::start(rev::Backend::Dynamo).await,
        };
        // HEAD was reviewed; a push to HEAD2 adds src/cache.rs, reviewed incrementally.
        let now = time::OffsetDateTime::now_utc();
        h.store
            .put_review_run(&ReviewRun {
                repo: key(rev::REPO),
                pr: rev::PR,
                head_sha: rev::HEAD.into(),
                base_sha: rev::BASE.into(),
                trigger: "opened".into(),
                state: RunState::Published,
                check_run_id: None,
                review_id: Some(1),
                review_url: None,
                started_at: now,
                finished_at: Some(now),
                let_through_by: None,
                moved_from: None,
            })
            .await
            .expect("seed the reviewed head");
        h.push_added_file("src/cache.rs", CACHE_PATCH);
        h.github.set_file(
            rev::REPO,
            "main",
            ".parley.yml",
            "review:\n  minConfidence: 70\n",
        );
        h.github
            .set_file(rev::REPO, "main", "CLAUDE.md", "Prefer small functions.\n");
        h.llm.answer(
            rev::SECURITY,
            &rev::reply(&[rev::finding("src/cache.rs", 2, "high", 90, CACHE_FINDING)]),
        );
        let flaky = FlakyStore::new(h.store.clone());
        rewire(&mut h.services, &h.rig.github, &h.rig.llm, flaky.clone(), s);
        h.handler = ReviewHandler::new(h.services.clone());
        let job = rev::job(ReviewTrigger::Synchronize, rev::HEAD2, "delivery-push");
        ReviewRig { h, flaky, job }
    }

    /// The queue's `receive`th delivery of the job ([`counted`]).
    async fn attempt(&self, receive: usize) -> Result<(), JobError> {
        let (number, of) = counted(receive);
        self.h.run_attempt(self.job.clone(), number, of).await
    }

    async fn view(&self) -> ReviewView {
        let mine = |v: &Value| v["user"]["login"] == conv::BOT;
        let reviews: Vec<Value> = self
            .h
            .reviews()
            .into_iter()
            .filter(|r| mine(r) && r["commit_id"] == rev::HEAD2)
            .collect();
        let runs: Vec<Value> = self
            .h
            .checks_named("Parley review")
            .into_iter()
            .filter(|c| c["head_sha"] == rev::HEAD2)
            .collect();
        let mut public: Vec<String> = reviews
            .iter()
            .map(|r| r["body"].as_str().unwrap_or_default().to_string())
            .collect();
        public.extend(
            self.h
                .inline_comments()
                .iter()
                .map(|c| c["body"].as_str().unwrap_or_default().to_string()),
        );
        for run in self.h.check_runs() {
            for field in ["title", "summary", "text"] {
                if let Some(text) = run["output"][field].as_str() {
                    public.push(text.to_string());
                }
            }
        }
        let posted: Vec<(u64, FindingMarker)> = self
            .h
            .inline_comments()
            .iter()
            .filter(|c| mine(c))
            .filter_map(|c| {
                let marker = markers::find(c["body"].as_str()?, markers::kind::FINDING)?;
                Some((c["id"].as_u64()?, marker))
            })
            .collect();
        let stored = self
            .h
            .store
            .findings_for_pr(&key(rev::REPO), rev::PR)
            .await
            .unwrap_or_default();
        let linked = posted.iter().all(|(comment, marker)| {
            stored
                .iter()
                .any(|f| f.id == marker.id && f.comment_id == Some(*comment))
        });
        let partial = reviews.iter().any(|r| {
            markers::find::<ReviewMarker>(
                r["body"].as_str().unwrap_or_default(),
                markers::kind::REVIEW,
            )
            .is_some_and(|m| m.partial)
        });
        ReviewView {
            reviews: reviews.len(),
            partial,
            finding_posted: posted.iter().any(|(_, m)| m.title == CACHE_FINDING),
            checks: runs
                .iter()
                .map(|c| {
                    (
                        c["status"].as_str().unwrap_or_default().to_string(),
                        c["conclusion"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect(),
            linked,
            public,
        }
    }
}

async fn review_store_calls(backend: Backend) -> Vec<&'static str> {
    let rig = ReviewRig::start(&Scenario::baseline(backend)).await;
    rig.flaky.reset_calls();
    rig.attempt(1).await.expect("a fault-free review succeeds");
    let view = rig.view().await;
    assert_eq!(view.reviews, 1, "a fault-free review posts: {view:?}");
    assert_eq!(
        view.latest().map(|(_, c)| c.as_str()),
        Some("failure"),
        "the blocking finding fails the gate: {view:?}"
    );
    rig.flaky.calls()
}

fn review_scenario(s: Scenario, store_calls: Vec<&'static str>) -> BoxedScenario {
    Box::pin(async move {
        let name = s.name("review", &store_calls);
        let rig = ReviewRig::start(&s).await;
        let mut story = Vec::new();
        let mut broken = Vec::new();
        let mut errors: Vec<String> = Vec::new();
        inject(&rig.h.github, &rig.h.llm, &rig.flaky, &s, &rev::reply(&[]));

        let mut last = Ok(());
        for attempt in 1..=s.mode.attempts_under_fault() {
            let started = Instant::now();
            last = rig.attempt(attempt).await;
            errors.extend(error_of(&last));
            broken.extend(s.too_slow(started.elapsed()));
            let view = rig.view().await;
            story.push(format!(
                "{}{}{}, check {}",
                outcome(&last),
                s.took(started.elapsed()),
                if view.reviews > 0 { ", review" } else { "" },
                view.describe_checks()
            ));
            if view.reviews > 1 {
                broken.push(format!("attempt {attempt}: {} reviews", view.reviews));
            }
            match &last {
                Ok(()) => {
                    if view.reviews != 1 {
                        broken.push(format!(
                            "attempt {attempt} succeeded with {} reviews",
                            view.reviews
                        ));
                    }
                    if view.in_progress() > 0 || view.latest().is_none() {
                        broken.push(format!(
                            "attempt {attempt} succeeded with the checks {}",
                            view.describe_checks()
                        ));
                    }
                }
                Err(_) => {
                    // Trouble is never a verdict: without a review, no check may pass or
                    // fail the PR.
                    if view.reviews == 0
                        && view
                            .checks
                            .iter()
                            .any(|(status, c)| status == "completed" && c != "neutral")
                    {
                        broken.push(format!(
                            "attempt {attempt} failed without a review but concluded {}",
                            view.describe_checks()
                        ));
                    }
                }
            }
            if last.is_ok() {
                break;
            }
        }
        if let Injection::GitHub(site, _) = s.injection
            && site.hits(&rig.h.github) <= site.skip
        {
            broken.push(format!(
                "the job never called {} {:?}: the site is not in its path",
                site.method, site.paths
            ));
        }
        if s.mode == Mode::Persistent && last.is_err() {
            let view = rig.view().await;
            story.push(format!(
                "dead-lettered with the checks {}",
                view.describe_checks()
            ));
        }

        clear(&rig.h.github, &rig.h.llm, &rig.flaky);
        let mut retries = 0;
        // A dead-lettered job is redriven with fresh receives; any other goes on counting.
        let received = match s.mode {
            Mode::Persistent => 0,
            mode => mode.attempts_under_fault(),
        };
        while last.is_err() && retries < QUEUE_RECEIVES {
            retries += 1;
            last = rig.attempt(received + retries).await;
            errors.extend(error_of(&last));
            story.push(format!("retry {}", outcome(&last)));
        }
        let end = rig.view().await;
        if last.is_err() {
            broken.push(format!("still failing after the fault: {last:?}"));
        }
        if end.reviews != 1 {
            broken.push(format!("ends with {} reviews, not one", end.reviews));
        }
        if end.in_progress() > 0 {
            broken.push(format!(
                "ends with a check left in progress: {}",
                end.describe_checks()
            ));
        }
        // The verdict of the review that was posted: `failure` on its blocking finding;
        // without it (the pass that finds it failed), `neutral` for a partial review.
        let verdict = end.latest().map(|(_, c)| c.as_str());
        if end.finding_posted && verdict != Some("failure") {
            broken.push(format!(
                "the newest check should fail the PR on its blocking finding, but the checks are {}",
                end.describe_checks()
            ));
        }
        let neutral_partial = end.partial && verdict == Some("neutral");
        if !end.finding_posted && !neutral_partial {
            broken.push(format!(
                "the blocking finding was not posted (partial review: {}), and the checks are {}",
                end.partial,
                end.describe_checks()
            ));
        }
        if !end.linked {
            broken.push("a posted finding is not stored with its comment id".to_string());
        }
        let raw = raw_errors_in(&end.public);
        if !raw.is_empty() {
            broken.push(format!("raw error text in public text: {raw:#?}"));
        }
        story.push(format!(
            "→ {} review{}, checks {}",
            end.reviews,
            if end.partial { " (partial)" } else { "" },
            end.describe_checks()
        ));
        if broken.is_empty() {
            Ok(Row {
                name,
                story: story.join("; "),
            })
        } else {
            Err(format!(
                "{name}\n  - {}\n  story: {}\n  job errors: {errors:#?}",
                broken.join("\n  - "),
                story.join("; ")
            ))
        }
    })
}

fn review_github_matrix(backend: Backend, timeouts: bool) -> Vec<BoxedScenario> {
    let mut scenarios = Vec::new();
    for site in REVIEW_SITES {
        for &(fault, mode) in GH_PLAN {
            if (fault == GhFault::Timeout) != timeouts {
                continue;
            }
            scenarios.push(review_scenario(
                Scenario {
                    backend,
                    injection: Injection::GitHub(*site, fault),
                    mode,
                },
                Vec::new(),
            ));
        }
    }
    scenarios
}

// --- the matrix on SQLite ------------------------------------------------------------------

fn llm_matrix() -> Vec<BoxedScenario> {
    let mut scenarios = Vec::new();
    for fault in LLM_FAULTS {
        for mode in [Mode::Blip, Mode::Outage, Mode::Persistent] {
            let s = Scenario {
                backend: Backend::Sqlite,
                injection: Injection::Llm(fault),
                mode,
            };
            scenarios.push(turn_scenario(s, Surface::Inline, Vec::new()));
            scenarios.push(review_scenario(s, Vec::new()));
        }
    }
    scenarios
}

/// The store failing at each call of a job (blip), from each call on (outage), and for
/// every receive.
fn store_matrix(
    calls: &[&'static str],
    job: impl Fn(Scenario) -> BoxedScenario,
) -> Vec<BoxedScenario> {
    let mut scenarios = Vec::new();
    for n in store_call_positions(calls) {
        for mode in [Mode::Blip, Mode::Outage] {
            scenarios.push(job(Scenario {
                backend: Backend::Sqlite,
                injection: Injection::Store(n),
                mode,
            }));
        }
    }
    scenarios.push(job(Scenario {
        backend: Backend::Sqlite,
        injection: Injection::Store(0),
        mode: Mode::Persistent,
    }));
    scenarios
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turn_github_errors_sqlite() {
    run_matrix(
        "Turn: GitHub errors",
        turn_github_matrix(Backend::Sqlite, false),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_github_errors_sqlite() {
    run_matrix(
        "Review: GitHub errors",
        review_github_matrix(Backend::Sqlite, false),
    )
    .await;
}

/// Turn and review together: these scenarios mostly wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_timeouts_sqlite() {
    let mut scenarios = turn_github_matrix(Backend::Sqlite, true);
    scenarios.extend(review_github_matrix(Backend::Sqlite, true));
    run_matrix("GitHub timeouts", scenarios).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_faults_sqlite() {
    run_matrix("LLM faults", llm_matrix()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_outages_sqlite() {
    let turn_calls = turn_store_calls(Backend::Sqlite, Surface::Inline).await;
    let review_calls = review_store_calls(Backend::Sqlite).await;
    let mut scenarios = store_matrix(&turn_calls, |s| {
        turn_scenario(s, Surface::Inline, turn_calls.clone())
    });
    scenarios.extend(store_matrix(&review_calls, |s| {
        review_scenario(s, review_calls.clone())
    }));
    run_matrix(
        &format!(
            "Store unavailable\n\nturn calls: {}\n\nreview calls: {}",
            turn_calls.join(", "),
            review_calls.join(", ")
        ),
        scenarios,
    )
    .await;
}

// --- a representative subset on DynamoDB (moto) ------------------------------------------

fn named(sites: &[Site], name: &str) -> Site {
    *sites
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no site named {name}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turn_faults_dynamodb() {
    let backend = Backend::Dynamo;
    let calls = turn_store_calls(backend, Surface::Inline).await;
    // Mid-job: the store goes away when the answer is about to be recorded.
    let record = calls
        .iter()
        .rposition(|c| *c == "claim_as")
        .expect("the answer is recorded with claim_as");
    let scenarios = vec![
        (
            Injection::GitHub(named(TURN_SITES, "GET the PR"), GhFault::S502),
            Mode::Outage,
        ),
        (
            Injection::GitHub(named(TURN_SITES, "POST reply (thread)"), GhFault::Timeout),
            Mode::Outage,
        ),
        (
            Injection::GitHub(named(TURN_SITES, "POST reply (thread)"), GhFault::S500),
            Mode::Outage,
        ),
        (Injection::Llm(LlmFault::S500), Mode::Persistent),
        (Injection::Llm(LlmFault::Garbage), Mode::Outage),
        (Injection::Store(0), Mode::Outage),
        (Injection::Store(record), Mode::Outage),
    ]
    .into_iter()
    .map(|(injection, mode)| {
        turn_scenario(
            Scenario {
                backend,
                injection,
                mode,
            },
            Surface::Inline,
            calls.clone(),
        )
    })
    .collect();
    run_matrix("Turn on DynamoDB: a subset", scenarios).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_faults_dynamodb() {
    let backend = Backend::Dynamo;
    let calls = review_store_calls(backend).await;
    // Mid-job: the store goes away when the posted findings are stored.
    let record = calls
        .iter()
        .position(|c| *c == "put_finding_if")
        .expect("findings are stored");
    let scenarios = vec![
        (
            Injection::GitHub(named(REVIEW_SITES, "POST review"), GhFault::S502),
            Mode::Outage,
        ),
        (
            Injection::GitHub(named(REVIEW_SITES, "POST review"), GhFault::Timeout),
            Mode::Outage,
        ),
        (
            Injection::GitHub(named(REVIEW_SITES, "PATCH check run"), GhFault::S500),
            Mode::Outage,
        ),
        (Injection::Llm(LlmFault::Garbage), Mode::Persistent),
        (Injection::Store(0), Mode::Outage),
        (Injection::Store(record), Mode::Outage),
    ]
    .into_iter()
    .map(|(injection, mode)| {
        review_scenario(
            Scenario {
                backend,
                injection,
                mode,
            },
            calls.clone(),
        )
    })
    .collect();
    run_matrix("Review on DynamoDB: a subset", scenarios).await;
}
