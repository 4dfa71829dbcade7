//! Running the specialist passes, all at once.
//!
//! The passes are independent LLM calls of several seconds each, so they run
//! concurrently: a five-pass review costs about one pass of wall time. A pass that fails
//! (provider down, unusable JSON after the helper's retry) is reported as failed and the
//! others' findings are still published. So is a pass still running at the overall
//! deadline (`review.passTimeoutSecs`): one slow call must not take the whole review past
//! the worker's own timeout, losing every pass.

use crate::config::ReviewConfig;
use crate::context::explore::ask_after_reading;
use crate::context::tools::Toolbox;
use crate::ports::llm::{AnswerStarted, Llm, LlmError, LlmRequest, Message};
use crate::review::file_kind::{FileKind, kind_of};
use crate::review::findings::{PassResult, pass_output};
use crate::review::inputs::estimate_tokens;
use crate::review::prompts::{self, SpecialistPrompt};
use async_trait::async_trait;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

/// The passes a review runs, and those it leaves out for want of anything to look at.
#[derive(Default)]
pub struct Chosen {
    pub run: Vec<&'static SpecialistPrompt>,
    /// Passes `review.specialists` asks for that this change gives nothing to do (only
    /// documentation or data changed), with why: the summary says so, since a pass not
    /// listed at all would read as one forgotten.
    pub not_needed: Vec<NotNeeded>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotNeeded {
    pub specialist: &'static str,
    pub why: &'static str,
}

/// `correctness, tests (only documentation changed)`: the passes left out and why, for
/// the summary and the terminal; `None` when every pass chosen ran.
pub fn not_needed_line(not_needed: &[NotNeeded]) -> Option<String> {
    let first = not_needed.first()?;
    let names: Vec<&str> = not_needed.iter().map(|n| n.specialist).collect();
    Some(format!("{} ({})", names.join(", "), first.why))
}

/// Why nothing was reviewed when every pass asked for was left out, for the summary's and
/// the terminal's "Nothing to review: …" headline; `None` when none was.
pub fn nothing_to_look_at(not_needed: &[NotNeeded]) -> Option<String> {
    not_needed_line(not_needed).map(|line| {
        format!(
            "no pass `review.specialists` asks for has anything to look at in this change: {line}"
        )
    })
}

/// The specialists `review.specialists` asks for that `reviewed` (the paths the passes
/// read) gives something to do; guideline compliance only when the repository has
/// guideline files to comply with. With no file to read (a change that only deletes,
/// reviewed for the code still using it) every pass runs: that code is code.
pub fn select(config: &ReviewConfig, has_guidelines: bool, reviewed: &[&str]) -> Chosen {
    let most = reviewed
        .iter()
        .map(|path| kind_of(path))
        .max()
        .unwrap_or(FileKind::Code);
    let (run, left_out): (Vec<_>, Vec<_>) = prompts::ALL
        .into_iter()
        .filter(|s| config.specialists.iter().any(|name| name == s.name))
        .filter(|s| s.name != prompts::GUIDELINES.name || has_guidelines)
        .partition(|s| most >= s.needs);
    let why = match most {
        FileKind::Prose => "only documentation changed",
        FileKind::Data | FileKind::Code => "no code changed, only data and settings",
    };
    Chosen {
        run,
        not_needed: left_out
            .into_iter()
            .map(|s| NotNeeded {
                specialist: s.name,
                why,
            })
            .collect(),
    }
}

/// Told as each pass finishes: the terminal's progress bar, the check run's "3 of 5
/// passes done". Awaited inside the pass, so an implementation keeps it short and never
/// fails the pass (a progress update is decoration).
#[async_trait]
pub trait PassProgress: Send + Sync {
    /// Before the first pass: the passes about to run, each once in each of `parts`.
    fn started(&self, _passes: &[&'static SpecialistPrompt], _parts: usize) {}

    async fn pass_done(&self, specialist: &'static str, ok: bool, done: usize, total: usize);
}

/// For callers with nobody to tell.
pub struct NoProgress;

#[async_trait]
impl PassProgress for NoProgress {
    async fn pass_done(&self, _: &'static str, _: bool, _: usize, _: usize) {}
}

/// Output budget per pass: a list of findings with bodies and suggestions.
const MAX_OUTPUT_TOKENS: u32 = 4096;

/// What one part of a review's passes read: the user message they share (the diff of
/// the part's files and everything around it) and the tools over the snapshot.
pub struct PartInput<'a> {
    pub message: &'a str,
    pub tools: Option<&'a Toolbox<'a>>,
}

/// Run every specialist on each part's user message, all concurrently (a diff too large
/// for one budget is read in parts: each pass once a part). `passes_only` follows the
/// message in every pass, after the cached prefix (what the judge, which shares the
/// prefix, must not read). With tools (and a provider that takes tool calls), each pass
/// may first read code through them. The pass named `overview` (in each part) also says
/// what the change does ([`crate::review::overview`]). A pass still running `deadline` from now
/// (corrective retry included) is abandoned and reported failed. Results are in part
/// order, the specialists' order within each.
pub async fn run_all(
    llm: &dyn Llm,
    specialists: &[&'static SpecialistPrompt],
    parts: &[PartInput<'_>],
    passes_only: &str,
    overview: Option<&'static str>,
    deadline: Duration,
    progress: &dyn PassProgress,
) -> Vec<PassResult> {
    progress.started(specialists, parts.len());
    let started = Instant::now();
    let done = AtomicUsize::new(0);
    let tally = Tally {
        progress,
        done: &done,
        total: specialists.len() * parts.len(),
    };
    let mut passes = Vec::new();
    let mut names = Vec::new();
    for (part, input) in parts.iter().enumerate() {
        passes.extend(part_passes(
            llm,
            specialists,
            input,
            part,
            passes_only,
            overview,
            &tally,
        ));
        names.extend(specialists.iter().map(|s| (s.name, part)));
    }
    let results = join_all(passes, Deadline::after(deadline)).await;
    results
        .into_iter()
        .zip(names)
        .map(|(result, (specialist, part))| {
            result.unwrap_or_else(|| {
                tracing::warn!(
                    pass = specialist,
                    part,
                    ?deadline,
                    "review pass over the deadline (review.passTimeoutSecs); the others go on"
                );
                PassResult {
                    specialist,
                    part,
                    outcome: Err(LlmError::Timeout(deadline)),
                    elapsed: started.elapsed(),
                    tools_read: Vec::new(),
                    overview: None,
                }
            })
        })
        .collect()
}

/// One part's passes. With a cache that takes the part's prefix, one pass goes first and
/// the others follow once the provider has begun answering it: by then the prefix is in
/// the cache, and they read it instead of each writing it anew (see [`AnswerStarted`]).
/// The wait is the first pass's time to its first token where the adapter streams, its
/// whole reply where it does not (the README's benchmarks measure both).
fn part_passes<'a>(
    llm: &'a dyn Llm,
    specialists: &'a [&'static SpecialistPrompt],
    input: &'a PartInput<'a>,
    part: usize,
    passes_only: &'a str,
    overview: Option<&'static str>,
    tally: &'a Tally<'a>,
) -> Vec<BoxedPass<'a>> {
    let shared_tokens = estimate_tokens(&prompts::system()) + estimate_tokens(input.message);
    let warm_up = (specialists.len() > 1 && llm.prompt_cache().caches(shared_tokens))
        .then(AnswerStarted::default);
    if warm_up.is_some() {
        tracing::debug!(
            shared_tokens,
            part,
            "warming the prompt cache with one pass"
        );
    }
    specialists
        .iter()
        .enumerate()
        .map(|(i, specialist)| {
            let leads = warm_up.clone().filter(|_| i == 0);
            let pass = run_one(
                llm,
                specialist,
                Reading {
                    message: input.message,
                    passes_only,
                    tools: input.tools,
                    part,
                    overview: overview == Some(specialist.name),
                },
                tally,
                leads,
            );
            match warm_up.clone() {
                None => Box::pin(pass) as BoxedPass<'_>,
                Some(started) if i == 0 => Box::pin(async move {
                    let result = pass.await;
                    // However it ended (an adapter that does not stream, a failure), the
                    // passes waiting on it go now.
                    started.set();
                    result
                }),
                Some(started) => Box::pin(async move {
                    started.wait().await;
                    pass.await
                }),
            }
        })
        .collect()
}

/// What a pass reads, and which part of the review it is.
struct Reading<'a> {
    message: &'a str,
    passes_only: &'a str,
    tools: Option<&'a Toolbox<'a>>,
    part: usize,
    /// Whether this pass writes the overview.
    overview: bool,
}

/// The passes finished so far, and whom to tell.
struct Tally<'a> {
    progress: &'a dyn PassProgress,
    done: &'a AtomicUsize,
    total: usize,
}

async fn run_one(
    llm: &dyn Llm,
    specialist: &'static SpecialistPrompt,
    reading: Reading<'_>,
    tally: &Tally<'_>,
    leads: Option<AnswerStarted>,
) -> PassResult {
    let started = Instant::now();
    let part = reading.part;
    let ask = if reading.overview {
        crate::review::overview::ASK
    } else {
        ""
    };
    let own = format!("{}{}{ask}", reading.passes_only, prompts::focus(specialist));
    let writes_overview = reading.overview;
    let mut request = LlmRequest::new(
        prompts::system(),
        vec![Message::user_with_shared(reading.message, &own)],
    );
    request.options.max_tokens = MAX_OUTPUT_TOKENS;
    request.options.temperature = Some(0.0);
    request.options.started = leads;
    let reading = ask_after_reading(llm, request, &pass_output(), reading.tools).await;
    let (outcome, overview) = match reading.reply {
        Ok(reply) => (
            Ok(reply.value.findings),
            reply.value.overview.filter(|_| writes_overview),
        ),
        Err(err) => (Err(err), None),
    };
    let tools_read = reading.read;
    match &outcome {
        Ok(findings) => tracing::info!(
            pass = specialist.name,
            part,
            findings = findings.len(),
            "review pass done"
        ),
        Err(err) => {
            tracing::warn!(pass = specialist.name, part, error = %err, "review pass failed; the others go on")
        }
    }
    let done = tally.done.fetch_add(1, Ordering::SeqCst) + 1;
    tally
        .progress
        .pass_done(specialist.name, outcome.is_ok(), done, tally.total)
        .await;
    PassResult {
        specialist: specialist.name,
        part,
        outcome,
        elapsed: started.elapsed(),
        tools_read,
        overview,
    }
}

type BoxedPass<'a> = crate::concurrently::Boxed<'a, PassResult>;

/// Every pass until all are done or the deadline passes, results in input order (`None`
/// for a pass abandoned at the deadline).
async fn join_all(passes: Vec<BoxedPass<'_>>, mut deadline: Deadline) -> Vec<Option<PassResult>> {
    crate::concurrently::join_all_until(passes, |cx| deadline.poll_expired(cx)).await
}

/// A runtime-agnostic timer: the domain crate has no async runtime of its own (it runs
/// under tokio in the Lambda and `parley serve`, but does not depend on it). A helper
/// thread waits on a condition variable until the deadline, then wakes the task; dropping
/// the deadline (every pass done first) lets the thread end at once.
struct Deadline {
    shared: Arc<(Mutex<DeadlineState>, Condvar)>,
}

#[derive(Default)]
struct DeadlineState {
    expired: bool,
    dropped: bool,
    waker: Option<Waker>,
}

impl Deadline {
    fn after(duration: Duration) -> Self {
        let shared = Arc::new((Mutex::new(DeadlineState::default()), Condvar::new()));
        let timer = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("review-deadline".to_string())
            .spawn(move || {
                let (lock, condvar) = &*timer;
                let until = Instant::now() + duration;
                let mut state = lock.lock().unwrap_or_else(|e| e.into_inner());
                while !state.dropped {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        state.expired = true;
                        if let Some(waker) = state.waker.take() {
                            waker.wake();
                        }
                        break;
                    }
                    state = condvar
                        .wait_timeout(state, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            });
        if let Err(err) = spawned {
            // Without a timer the passes still end: the LLM client has its own timeouts.
            tracing::warn!(error = %err, "could not start the review pass deadline timer");
        }
        Deadline { shared }
    }

    /// Whether the deadline has passed; if not, wake `cx` when it does.
    fn poll_expired(&mut self, cx: &mut Context<'_>) -> bool {
        let mut state = self.shared.0.lock().unwrap_or_else(|e| e.into_inner());
        if !state.expired {
            state.waker = Some(cx.waker().clone());
        }
        state.expired
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        let (lock, condvar) = &*self.shared;
        lock.lock().unwrap_or_else(|e| e.into_inner()).dropped = true;
        condvar.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::llm::{LlmResponse, Usage};
    use async_trait::async_trait;

    /// Answers after a delay that depends on the pass, so completion order differs from
    /// input order.
    struct SlowLlm;

    #[async_trait]
    impl Llm for SlowLlm {
        async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
            let task = &request.messages[0].text;
            let delay = if task.contains("the security specialist") {
                200
            } else {
                50
            };
            tokio::time::sleep(Duration::from_millis(delay)).await;
            if task.contains("testing specialist") {
                return Err(LlmError::Server {
                    status: 500,
                    message: "down".into(),
                });
            }
            Ok(LlmResponse::answer(
                r#"{"findings": []}"#,
                Usage::new(1, 1),
                "m",
            ))
        }

        fn model(&self) -> &str {
            "m"
        }
    }

    fn names(passes: &[&SpecialistPrompt]) -> Vec<&'static str> {
        passes.iter().map(|p| p.name).collect()
    }

    #[test]
    fn passes_a_change_gives_nothing_to_do_are_left_out_and_said() {
        let config = ReviewConfig::default();
        let all = ["security", "correctness", "tests", "style", "guidelines"];

        let code = select(&config, true, &["README.md", "src/lib.rs"]);
        assert_eq!(names(&code.run), all);
        assert!(code.not_needed.is_empty());

        let docs = select(&config, true, &["README.md", "docs/guide.rst"]);
        assert_eq!(names(&docs.run), ["security", "style", "guidelines"]);
        assert_eq!(
            docs.not_needed,
            [
                NotNeeded {
                    specialist: "correctness",
                    why: "only documentation changed"
                },
                NotNeeded {
                    specialist: "tests",
                    why: "only documentation changed"
                }
            ]
        );

        let settings = select(&config, false, &["README.md", ".github/workflows/ci.yml"]);
        assert_eq!(names(&settings.run), ["security", "correctness", "style"]);
        assert_eq!(names_of(&settings.not_needed), ["tests"]);

        // A change that only deletes is reviewed for the code still using what it deleted.
        let deletion = select(&config, false, &[]);
        assert_eq!(names(&deletion.run), all[..4]);

        // What the repository did not ask for is not "not needed": it was never chosen.
        let asked = ReviewConfig {
            specialists: vec!["security".into(), "correctness".into()],
            ..ReviewConfig::default()
        };
        let docs = select(&asked, false, &["README.md"]);
        assert_eq!(names(&docs.run), ["security"]);
        assert_eq!(names_of(&docs.not_needed), ["correctness"]);
    }

    fn names_of(left_out: &[NotNeeded]) -> Vec<&'static str> {
        left_out.iter().map(|n| n.specialist).collect()
    }

    #[tokio::test]
    async fn passes_run_concurrently_in_order_and_fail_alone() {
        let specialists = select(&ReviewConfig::default(), false, &["src/lib.rs"]).run;
        assert_eq!(
            specialists.len(),
            4,
            "guidelines pass needs guideline files"
        );
        let started = Instant::now();
        let results = run_all(
            &SlowLlm,
            &specialists,
            &[PartInput {
                message: "diff",
                tools: None,
            }],
            "",
            None,
            Duration::from_secs(5),
            &NoProgress,
        )
        .await;
        assert!(
            started.elapsed() < Duration::from_millis(400),
            "{:?}",
            started.elapsed()
        );
        let names: Vec<&str> = results.iter().map(|r| r.specialist).collect();
        assert_eq!(names, ["security", "correctness", "tests", "style"]);
        assert!(results[2].outcome.is_err());
        assert!(results[0].outcome.is_ok() && results[3].outcome.is_ok());
    }

    #[tokio::test]
    async fn a_pass_over_the_deadline_fails_alone() {
        let specialists = select(&ReviewConfig::default(), false, &["src/lib.rs"]).run;
        let started = Instant::now();
        // Security takes 200 ms, the others 50 ms.
        let results = run_all(
            &SlowLlm,
            &specialists,
            &[PartInput {
                message: "diff",
                tools: None,
            }],
            "",
            None,
            Duration::from_millis(120),
            &NoProgress,
        )
        .await;
        assert!(
            started.elapsed() < Duration::from_millis(190),
            "{:?}",
            started.elapsed()
        );
        assert!(
            matches!(results[0].outcome, Err(LlmError::Timeout(_))),
            "{:?}",
            results[0]
        );
        assert!(
            results[1].outcome.is_ok() && results[3].outcome.is_ok(),
            "{results:?}"
        );
    }

    /// Every pass reads every part, each part's message its prefix; the results come in
    /// part order, each saying its part, and one deadline holds for them all.
    #[tokio::test]
    async fn each_pass_reads_each_part() {
        let specialists = select(&ReviewConfig::default(), false, &["src/lib.rs"]).run;
        let llm = CachingLlm {
            streams: false,
            sent: std::sync::Mutex::new(Vec::new()),
        };
        let parts = [
            PartInput {
                message: "the first part's diff\n",
                tools: None,
            },
            PartInput {
                message: "the second part's diff\n",
                tools: None,
            },
        ];
        let started = Instant::now();
        let results = run_all(
            &llm,
            &specialists,
            &parts,
            "",
            None,
            Duration::from_secs(5),
            &NoProgress,
        )
        .await;
        assert!(
            started.elapsed() < Duration::from_millis(300),
            "side by side: {:?}",
            started.elapsed()
        );
        let order: Vec<(&str, usize)> = results.iter().map(|r| (r.specialist, r.part)).collect();
        assert_eq!(
            order,
            [
                ("security", 0),
                ("correctness", 0),
                ("tests", 0),
                ("style", 0),
                ("security", 1),
                ("correctness", 1),
                ("tests", 1),
                ("style", 1),
            ]
        );
        let sent = llm.sent.into_inner().unwrap_or_else(|e| e.into_inner());
        for part in &parts {
            let reading = sent
                .iter()
                .filter(|(_, r)| {
                    r.messages[0].split_at_cache_prefix().map(|(a, _)| a) == Some(part.message)
                })
                .count();
            assert_eq!(reading, 4, "{}", part.message);
        }
    }

    /// A provider that caches prompts: records when each pass started and what it sent.
    /// One that `streams` says it has begun answering 10 ms into a 50 ms call.
    struct CachingLlm {
        streams: bool,
        sent: std::sync::Mutex<Vec<(Instant, LlmRequest)>>,
    }

    #[async_trait]
    impl Llm for CachingLlm {
        async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
            self.sent
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((Instant::now(), request.clone()));
            if self.streams {
                tokio::time::sleep(Duration::from_millis(10)).await;
                if let Some(started) = &request.options.started {
                    started.set();
                }
                tokio::time::sleep(Duration::from_millis(40)).await;
            } else {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(LlmResponse::answer(
                r#"{"findings": []}"#,
                Usage::new(1, 1),
                "m",
            ))
        }

        fn model(&self) -> &str {
            "m"
        }

        fn prompt_cache(&self) -> crate::ports::llm::PromptCache {
            crate::ports::llm::PromptCache::Marked { min_tokens: 400 }
        }
    }

    /// Every pass sends the same system prompt and the same marked prefix, its own task
    /// after it. With a cache that takes a prefix this long, one pass goes first and the
    /// rest together once the provider has begun answering it (streamed: at its first
    /// event; otherwise when it is back); a prefix too short to cache runs them all at
    /// once.
    #[tokio::test]
    async fn passes_share_one_prefix_and_one_warms_the_cache_first() {
        let specialists = select(&ReviewConfig::default(), false, &["src/lib.rs"]).run;
        let long = "a line of the diff\n".repeat(100);
        // (shared prefix, adapter streams, passes sent after the first: at its first
        // event (8-40 ms), at its end (40 ms on)).
        let cases = [
            (long.as_str(), false, (0, 3)),
            (long.as_str(), true, (3, 0)),
            ("short diff\n", true, (0, 0)),
        ];
        for (shared, streams, expected) in cases {
            let llm = CachingLlm {
                streams,
                sent: std::sync::Mutex::new(Vec::new()),
            };
            run_all(
                &llm,
                &specialists,
                &[PartInput {
                    message: shared,
                    tools: None,
                }],
                "",
                None,
                Duration::from_secs(5),
                &NoProgress,
            )
            .await;
            let sent = llm.sent.into_inner().unwrap_or_else(|e| e.into_inner());
            assert_eq!(sent.len(), 4);
            for (_, request) in &sent {
                assert_eq!(request.system, sent[0].1.system);
                let message = &request.messages[0];
                assert_eq!(
                    message.split_at_cache_prefix().map(|(a, _)| a),
                    Some(shared)
                );
                assert!(message.text.contains("## Your task"), "{}", message.text);
            }
            let first = sent.iter().map(|(at, _)| *at).min().expect("sent");
            let after = |from: u64, to: u64| {
                sent.iter()
                    .map(|(at, _)| at.duration_since(first))
                    .filter(|d| *d >= Duration::from_millis(from) && *d < Duration::from_millis(to))
                    .count()
            };
            assert_eq!(
                (after(8, 40), after(40, 10_000)),
                expected,
                "streams: {streams}, shared: {} bytes",
                shared.len()
            );
            let signalled = sent.iter().filter(|(_, r)| r.options.started.is_some());
            assert_eq!(signalled.count(), usize::from(expected != (0, 0)));
        }
    }
}
