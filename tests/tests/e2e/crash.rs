//! `kill -9` of `parley serve` at the worst moments of a job, then a restart on the same
//! SQLite file: the job must finish, exactly once.
//!
//! Each scenario runs the real binary as a child process against the fake GitHub and the
//! fake LLM, holds one request in a fake (a tripwire) so the worker is known to be at the
//! crash point, kills the process there, lets the dead worker's message come back as the
//! queue's visibility timeout would, and starts a new process. What must hold afterwards:
//! the question is answered by exactly one reply, or the PR carries exactly one review and
//! a completed "Parley review" check; nothing is dead-lettered; nothing is posted twice.
//!
//! `parley serve` hides a received message for 15 minutes (`PollerOptions::default`) and
//! has no setting to shorten that, so after the kill the test moves the message's
//! visibility deadline to now ([`queue_file::expire_in_flight`]) instead of waiting.

use parley_core::markers::{self, FindingMarker, ReplyMarker};
use parley_core::ports::{Finding, FindingState, Findings, Severity};
use parley_store::sqlite::SqliteStore;
use parley_tests::deliveries::{self, Source};
use parley_tests::fake_github::{FakeGitHub, HoldPoint};
use parley_tests::fake_llm::FakeLlm;
use parley_tests::review_harness::CORRECTNESS;
use parley_tests::rig::{AUTHOR, BASE, BOT, Fakes, HEAD, OWNER, SQL_HUNK as HUNK};
use parley_tests::scripts::one_blocking_finding;
use parley_tests::serve_process::{self, ServeProcess, queue_file};
use parley_tests::tenants::key;
use serde_json::Value;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const SECRET: &str = "crash-secret";
const NAME: &str = "crash";
const REPO: &str = "octo-org/crash";
const INSTALLATION: u64 = 55;
const PR: u64 = 7;
/// Every wait in a scenario ends within this, so a broken recovery fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(60);
const ANSWER: &str = "The caller validates the id first, so this is safe.";

/// The fakes, the SQLite file and whichever `parley serve` is running on it.
struct Rig {
    github: FakeGitHub,
    llm: FakeLlm,
    source: Source,
    dir: tempfile::TempDir,
    db: PathBuf,
    env: Vec<(String, String)>,
    binary: PathBuf,
    client: reqwest::Client,
    server: Option<ServeProcess>,
    generation: usize,
}

impl Rig {
    /// PR #7 by alice changing `src/db.rs`; specialists find nothing unless scripted; the
    /// model answers any question with [`ANSWER`].
    async fn new() -> Rig {
        let binary = serve_process::parley_binary();
        let fakes = Fakes::start().await;
        fakes.open_db_pull(REPO, PR, AUTHOR);
        fakes.answer_everything_with(ANSWER);
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("parley.db");
        let env = fakes.env(&db, SECRET);
        let Fakes { github, llm } = fakes;
        Rig {
            github,
            llm,
            source: Source::new(OWNER, NAME, INSTALLATION),
            dir,
            db,
            env,
            binary,
            client: parley_llm::client_builder().build().expect("HTTP client"),
            server: None,
            generation: 0,
        }
    }

    fn start(&mut self) {
        self.generation += 1;
        let log = format!("serve-{}.log", self.generation);
        self.server = Some(ServeProcess::start(
            &self.binary,
            &self.env,
            self.dir.path(),
            &log,
        ));
    }

    fn server(&mut self) -> &mut ServeProcess {
        self.server.as_mut().expect("parley serve is running")
    }

    async fn deliver(&mut self, event: &str, delivery: &str, payload: &Value) {
        let url = self.server().webhook_url.clone();
        let (status, body) =
            serve_process::deliver(&self.client, &url, SECRET, event, delivery, payload).await;
        assert_eq!(status, 202, "{body}");
        assert!(body.contains("accepted"), "{delivery}: {body}");
    }

    /// `kill -9` while the job from `queue` is in hand, then what the queue's visibility
    /// timeout would do later: bring the dead worker's message back.
    fn crash(&mut self, queue: &str) {
        self.server().kill();
        let depth = queue_file::depth(&self.db, queue);
        assert_eq!(
            depth.in_flight, 1,
            "the killed worker held the job's message: {depth:?}"
        );
        let hidden = queue_file::hidden_for(&self.db, queue);
        eprintln!("after the kill the message would stay hidden for {hidden:?}");
        assert_eq!(queue_file::expire_in_flight(&self.db), 1);
    }

    /// Wait until both queues are empty: every job acknowledged, so every side effect of
    /// the restarted process is done. Fails on a dead-lettered job or after [`LIMIT`].
    async fn finish(&mut self) {
        let started = Instant::now();
        loop {
            let conversation = queue_file::depth(&self.db, "conversation");
            let review = queue_file::depth(&self.db, "review");
            assert_eq!(
                conversation.dead + review.dead,
                0,
                "a job was dead-lettered:\n{}",
                self.server().logs()
            );
            if conversation.is_drained() && review.is_drained() {
                return;
            }
            assert!(
                self.server().is_running(),
                "parley serve exited:\n{}",
                self.server().logs()
            );
            assert!(
                started.elapsed() < LIMIT,
                "jobs not done within {LIMIT:?}: conversation {conversation:?}, review {review:?}\n{}",
                self.server().logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A question from alice: a top-level mention (`None`) or a reply in the thread of
    /// finding comment `root`. Returns its comment id, event name and payload.
    fn question(&self, text: &str, root: Option<u64>) -> (u64, &'static str, Value) {
        match root {
            None => {
                let id = self.github.add_issue_comment(REPO, PR, AUTHOR, text);
                let comment = find(&self.github.issue_comments(REPO, PR), id);
                let payload = deliveries::pr_issue_comment(&self.source, PR, &comment);
                (id, "issue_comment", payload)
            }
            Some(root) => {
                let id = self.github.add_review_comment(
                    REPO,
                    PR,
                    AUTHOR,
                    text,
                    Some(root),
                    "src/db.rs",
                    3,
                );
                let comment = find(&self.github.review_comments(REPO, PR), id);
                let payload = deliveries::review_comment(&self.source, PR, AUTHOR, &comment, HUNK);
                (id, "pull_request_review_comment", payload)
            }
        }
    }

    /// A finding Parley posted in an earlier review, as GitHub shows it.
    fn seed_finding(&self) -> u64 {
        let body = deliveries::finding_body("f-sql-1", "src/db.rs", 3, "SQL built by format!");
        self.github
            .add_review_comment(REPO, PR, BOT, &body, None, "src/db.rs", 3)
    }

    /// Parley's comments on the PR (both surfaces), findings left out.
    fn parley_comments(&self) -> Vec<Value> {
        let mut all = self.github.review_comments(REPO, PR);
        all.extend(self.github.issue_comments(REPO, PR));
        all.retain(|c| {
            c["user"]["login"] == BOT
                && markers::parse_all(c["body"].as_str().unwrap_or(""))
                    .iter()
                    .all(|m| m.kind != markers::kind::FINDING)
        });
        all
    }

    /// Parley's replies answering comment `id`.
    fn replies_to(&self, id: u64) -> Vec<Value> {
        self.parley_comments()
            .into_iter()
            .filter(|c| {
                markers::find::<ReplyMarker>(c["body"].as_str().unwrap_or(""), markers::kind::REPLY)
                    .is_some_and(|m| m.reply_to == id)
            })
            .collect()
    }

    /// Reviews on the PR whose summary marker names `head`.
    fn reviews_of(&self, head: &str) -> Vec<Value> {
        self.github.reviews_of(REPO, PR, head)
    }

    fn gate_checks(&self, head: &str) -> Vec<Value> {
        self.github.gate_checks(REPO, head)
    }

    fn store(&self) -> SqliteStore {
        SqliteStore::open(&self.db).expect("open the store")
    }

    async fn findings(&self) -> Vec<Finding> {
        self.store()
            .findings_for_pr(&key(REPO), PR)
            .await
            .expect("findings")
    }
}

fn find(comments: &[Value], id: u64) -> Value {
    comments
        .iter()
        .find(|c| c["id"] == id)
        .cloned()
        .expect("comment on the fake")
}

/// Scenario 1, and the question's surface: killed while the model is answering (nothing
/// posted yet). The restart must ask again and post one reply.
async fn killed_while_the_model_answers(root: bool) {
    let mut rig = Rig::new().await;
    let root = root.then(|| rig.seed_finding());
    let phrase = "why is building this query safe";
    let thinking = rig.llm.tripwire(phrase, 1);
    let (question, event, payload) = rig.question(&format!("@parley {phrase}?"), root);
    rig.start();
    rig.deliver(event, "crash-turn-1", &payload).await;

    thinking
        .wait_caught(1, LIMIT, "the conversation's model call")
        .await;
    rig.crash("conversation");
    thinking.abandon();
    assert!(
        rig.replies_to(question).is_empty(),
        "killed before posting, yet a reply is on GitHub"
    );

    rig.start();
    rig.finish().await;
    let replies = rig.replies_to(question);
    assert_eq!(replies.len(), 1, "exactly one reply: {replies:#?}");
    assert!(
        replies[0]["body"].as_str().unwrap_or("").contains(ANSWER),
        "{:#?}",
        replies[0]
    );
    assert_eq!(
        rig.parley_comments().len(),
        1,
        "nothing but the reply (no error note): {:#?}",
        rig.parley_comments()
    );
    assert_eq!(
        rig.llm.calls_containing(phrase),
        2,
        "the restarted process asked the model again (the first call died with the process)"
    );
}

#[tokio::test]
async fn killed_while_the_model_answers_a_mention_the_restart_replies_once() {
    killed_while_the_model_answers(false).await;
}

#[tokio::test]
async fn killed_while_the_model_answers_a_reply_to_a_finding_the_restart_replies_once() {
    killed_while_the_model_answers(true).await;
}

/// Scenario 2, and the question's surface: GitHub stored the reply, the process died
/// before it heard so. The restart must find the reply on GitHub and post nothing.
async fn killed_after_github_stored_the_reply(root: bool) {
    let mut rig = Rig::new().await;
    let root = root.then(|| rig.seed_finding());
    let phrase = "is this query injectable";
    let (question, event, payload) = rig.question(&format!("@parley {phrase}?"), root);
    let reply_path = match root {
        None => format!("/repos/{REPO}/issues/{PR}/comments"),
        Some(root) => format!("/repos/{REPO}/pulls/{PR}/comments/{root}/replies"),
    };
    let posting = rig
        .github
        .tripwire("POST", &reply_path, HoldPoint::AfterApplying, 1);
    rig.start();
    rig.deliver(event, "crash-turn-2", &payload).await;

    posting.wait_caught(1, LIMIT, "the reply's POST").await;
    rig.crash("conversation");
    posting.abandon();
    assert_eq!(
        rig.replies_to(question).len(),
        1,
        "the fake stored the reply before the kill"
    );

    rig.start();
    rig.finish().await;
    let replies = rig.replies_to(question);
    assert_eq!(replies.len(), 1, "still exactly one reply: {replies:#?}");
    assert_eq!(
        rig.github.requests_to("POST", &reply_path).len(),
        1,
        "the restart did not post the reply again"
    );
    assert_eq!(
        rig.parley_comments().len(),
        1,
        "nothing but the reply (no error note): {:#?}",
        rig.parley_comments()
    );
    assert_eq!(
        rig.llm.calls_containing(phrase),
        1,
        "the restart saw the answer on GitHub and did not ask the model again"
    );
}

#[tokio::test]
async fn killed_after_github_stored_a_top_level_reply_the_restart_posts_nothing() {
    killed_after_github_stored_the_reply(false).await;
}

#[tokio::test]
async fn killed_after_github_stored_a_thread_reply_the_restart_posts_nothing() {
    killed_after_github_stored_the_reply(true).await;
}

/// After the restart: one review for the head, its inline finding recorded with its
/// GitHub comment id, one "Parley review" check for the head, completed with `failure`.
async fn assert_reviewed_once(rig: &mut Rig) {
    parley_tests::expect::reviewed_once_with_one_blocking_finding(
        &rig.github,
        &rig.store(),
        REPO,
        PR,
        HEAD,
    )
    .await;
}

/// Scenario 3: killed while the specialist passes run (the review is not on GitHub yet).
/// The restart reviews the head again and publishes once, on the check run it started.
#[tokio::test]
async fn killed_during_the_specialist_passes_the_restart_publishes_one_review() {
    let mut rig = Rig::new().await;
    one_blocking_finding(&rig.llm);
    let passes = rig.llm.tripwire(CORRECTNESS, 1);
    let opened = deliveries::pull_request(&rig.source, "opened", PR, AUTHOR, HEAD, BASE, None);
    rig.start();
    rig.deliver("pull_request", "crash-review-1", &opened).await;

    passes
        .wait_caught(1, LIMIT, "the correctness specialist's pass")
        .await;
    rig.crash("review");
    passes.abandon();
    assert!(
        rig.github.reviews(REPO, PR).is_empty(),
        "killed before posting"
    );
    let checks = rig.gate_checks(HEAD);
    assert_eq!(checks.len(), 1, "{checks:#?}");
    assert_eq!(checks[0]["status"], "in_progress", "{:#?}", checks[0]);

    rig.start();
    rig.finish().await;
    assert_reviewed_once(&mut rig).await;
    assert_eq!(
        rig.llm.calls_containing(CORRECTNESS),
        2,
        "the restarted process ran the passes again"
    );
}

/// Scenario 4: GitHub accepted the review, the process died before recording the run or
/// concluding the check. The restart must recover the review from GitHub (findings from
/// their markers), conclude the check, and post nothing.
#[tokio::test]
async fn killed_after_github_stored_the_review_the_restart_records_it_and_posts_nothing() {
    let mut rig = Rig::new().await;
    one_blocking_finding(&rig.llm);
    let reviews_path = format!("/repos/{REPO}/pulls/{PR}/reviews");
    let posting = rig
        .github
        .tripwire("POST", &reviews_path, HoldPoint::AfterApplying, 1);
    let opened = deliveries::pull_request(&rig.source, "opened", PR, AUTHOR, HEAD, BASE, None);
    rig.start();
    rig.deliver("pull_request", "crash-review-2", &opened).await;

    posting.wait_caught(1, LIMIT, "the review's POST").await;
    rig.crash("review");
    posting.abandon();
    assert_eq!(rig.reviews_of(HEAD).len(), 1, "the fake stored the review");
    assert!(
        rig.store()
            .findings_for_pr(&key(REPO), PR)
            .await
            .expect("findings")
            .is_empty(),
        "killed before the findings were recorded"
    );
    let checks = rig.gate_checks(HEAD);
    assert_eq!(checks.len(), 1, "{checks:#?}");
    assert_eq!(checks[0]["status"], "in_progress", "{:#?}", checks[0]);

    rig.start();
    rig.finish().await;
    assert_reviewed_once(&mut rig).await;
    assert_eq!(
        rig.github.requests_to("POST", &reviews_path).len(),
        1,
        "the restart did not post the review again"
    );
    assert_eq!(
        rig.llm.calls_containing(CORRECTNESS),
        1,
        "the restart recovered the posted review instead of reviewing again"
    );
}

/// Scenario 3, earliest point: GitHub created the "Parley review" check run, the process
/// died before the run (and its check run id) was recorded. The restart must not leave
/// that check in progress forever beside a second one.
#[tokio::test]
async fn killed_after_github_created_the_check_run_the_restart_leaves_no_check_in_progress() {
    let mut rig = Rig::new().await;
    one_blocking_finding(&rig.llm);
    let checks_path = format!("/repos/{REPO}/check-runs");
    let creating = rig
        .github
        .tripwire("POST", &checks_path, HoldPoint::AfterApplying, 1);
    let opened = deliveries::pull_request(&rig.source, "opened", PR, AUTHOR, HEAD, BASE, None);
    rig.start();
    rig.deliver("pull_request", "crash-review-3", &opened).await;

    creating.wait_caught(1, LIMIT, "the check run's POST").await;
    rig.crash("review");
    creating.abandon();
    assert_eq!(rig.gate_checks(HEAD).len(), 1, "the fake created the check");

    rig.start();
    rig.finish().await;
    assert_reviewed_once(&mut rig).await;
}

/// Scenario 4, last point: the run was recorded as published, the process died while
/// concluding the check run. The restart must conclude it: a required check left
/// "in progress" blocks the merge for good.
#[tokio::test]
async fn killed_while_concluding_the_check_the_restart_concludes_it() {
    let mut rig = Rig::new().await;
    one_blocking_finding(&rig.llm);
    let concluding = rig
        .github
        .tripwire("PATCH", "/check-runs/", HoldPoint::BeforeApplying, 1);
    let opened = deliveries::pull_request(&rig.source, "opened", PR, AUTHOR, HEAD, BASE, None);
    rig.start();
    rig.deliver("pull_request", "crash-review-4", &opened).await;

    concluding
        .wait_caught(1, LIMIT, "the check run's conclusion")
        .await;
    rig.crash("review");
    concluding.abandon();
    assert_eq!(rig.reviews_of(HEAD).len(), 1, "the review was posted");
    let checks = rig.gate_checks(HEAD);
    assert_eq!(checks.len(), 1, "{checks:#?}");
    assert_eq!(checks[0]["status"], "in_progress", "{:#?}", checks[0]);

    rig.start();
    rig.finish().await;
    assert_reviewed_once(&mut rig).await;
}

/// Scenario 2 with a dispute: the model concedes a finding, GitHub stored the reply (whose
/// marker says "concede"), the process died before the concession was recorded. The
/// restart must not answer again, and the concession must not be lost: the finding is
/// no longer open (it would keep the merge gate failing) and its thread is resolved.
#[tokio::test]
async fn killed_after_github_stored_a_concession_the_restart_still_settles_the_dispute() {
    killed_after_github_stored_the_answer(
        "Not a bug: the id is validated by the caller.",
        "You are right: the caller validates it. I withdraw this finding.",
        "concede",
        FindingState::WontFix,
    )
    .await;
}

/// The same with a fix the model confirmed in the thread (marker `fixed`): the finding is
/// resolved, its thread too, after the restart.
#[tokio::test]
async fn killed_after_github_stored_a_confirmed_fix_the_restart_still_resolves_it() {
    killed_after_github_stored_the_answer(
        "Fixed in the last push: the id is validated by the caller.",
        "Confirmed: the caller validates it now.",
        "fixed",
        FindingState::Resolved,
    )
    .await;
}

/// The question (`asked`, naming "validated by the caller") answered with `resolution`,
/// the process killed once GitHub stored the reply; after the restart the finding is in
/// `state` and its thread resolved, with one reply.
async fn killed_after_github_stored_the_answer(
    asked: &str,
    answered: &str,
    resolution: &str,
    state: FindingState,
) {
    let mut rig = Rig::new().await;
    let root = rig.seed_finding();
    // Medium: a concession to the PR's author lifts it (a blocking one would need a code
    // change first, see `parley_core::review::resolution`), so the thread gets resolved.
    let marker = FindingMarker {
        severity: Severity::Medium,
        ..deliveries::finding_marker("f-sql-1", "src/db.rs", 3, "SQL built by format!")
    };
    let body = "SQL built by format!.";
    let finding = Finding {
        comment_id: Some(root),
        ..marker.finding(
            &key(REPO),
            PR,
            body,
            HEAD.into(),
            time::OffsetDateTime::now_utc(),
        )
    };
    rig.store()
        .put_finding(&finding)
        .await
        .expect("seed finding");
    rig.llm.answer(
        "validated by the caller",
        &parley_tests::conversation_harness::answer(answered, Some(resolution)),
    );
    let (question, event, payload) = rig.question(asked, Some(root));
    let reply_path = format!("/repos/{REPO}/pulls/{PR}/comments/{root}/replies");
    let posting = rig
        .github
        .tripwire("POST", &reply_path, HoldPoint::AfterApplying, 1);
    rig.start();
    rig.deliver(event, "crash-dispute", &payload).await;

    posting.wait_caught(1, LIMIT, "the concession's POST").await;
    rig.crash("conversation");
    posting.abandon();
    assert_eq!(
        rig.replies_to(question).len(),
        1,
        "the fake stored the reply"
    );

    rig.start();
    rig.finish().await;
    assert_eq!(rig.replies_to(question).len(), 1, "still exactly one reply");
    assert_eq!(rig.github.requests_to("POST", &reply_path).len(), 1);
    let stored = rig
        .store()
        .findings_for_pr(&key(REPO), PR)
        .await
        .expect("findings");
    assert_eq!(stored.len(), 1);
    assert_eq!(
        stored[0].state, state,
        "the {resolution} posted on GitHub was never recorded: the finding stays open and keeps blocking the merge gate"
    );
    assert!(
        rig.github
            .resolved_threads()
            .contains(&format!("PRRT_{root}")),
        "the finding's thread was not resolved: {:?}",
        rig.github.resolved_threads()
    );
}

/// A maintainer deletes a blocking finding's comment, and the process is killed as the
/// gate is judged again (the finding dismissed already, its comment not yet forgotten):
/// the restart finishes the work, and the gate passes.
#[tokio::test]
async fn killed_while_a_deletion_judges_the_gate_the_restart_finishes_it() {
    let mut rig = Rig::new().await;
    one_blocking_finding(&rig.llm);
    let opened = deliveries::pull_request(&rig.source, "opened", PR, AUTHOR, HEAD, BASE, None);
    rig.start();
    rig.deliver("pull_request", "crash-deleted-1", &opened)
        .await;
    rig.finish().await;
    assert_reviewed_once(&mut rig).await;
    let root = rig.findings().await[0].comment_id.expect("inline");
    rig.github.set_permission(REPO, "bob", "write");
    rig.github.delete_review_comment(root);
    let judging = rig.github.tripwire(
        "POST",
        &format!("/repos/{REPO}/check-runs"),
        HoldPoint::BeforeApplying,
        1,
    );
    let deleted = deliveries::review_comment_deleted(&rig.source, PR, root, "bob");
    rig.deliver("pull_request_review_comment", "crash-deleted-2", &deleted)
        .await;

    judging.wait_caught(1, LIMIT, "the gate judged again").await;
    rig.crash("conversation");
    judging.abandon();
    let half = rig.findings().await.remove(0);
    assert_eq!(
        half.state,
        FindingState::WontFix,
        "dismissed before the kill"
    );
    assert_eq!(half.comment_id, Some(root), "its comment not yet forgotten");
    assert_eq!(rig.gate_checks(HEAD).len(), 1, "not judged again yet");

    rig.start();
    rig.finish().await;
    let after = rig.findings().await.remove(0);
    assert_eq!(
        (after.state, after.comment_id),
        (FindingState::WontFix, None)
    );
    let checks = rig.gate_checks(HEAD);
    assert_eq!(checks.len(), 2, "judged again once: {checks:#?}");
    assert_eq!(checks[1]["conclusion"], "success", "{:#?}", checks[1]);
}
