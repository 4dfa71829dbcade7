//! The review worker's scenarios on a [`Rig`]: a real `GitHubClient` against the fake
//! GitHub, a real `AnthropicLlm` against the fake model scripted per specialist, a real
//! store (SQLite or DynamoDB on moto), wired into `Services` exactly as the Lambda and
//! `parley serve` do.

use crate::deliveries::{self, Source};
use crate::rig::Rig;
use parley_core::Job;
use parley_core::conversation::ConversationHandler;
use parley_core::job::{Actor, ReviewRequest, ReviewTrigger, Surface};
use parley_core::ports::{Attempt, Finding, JobError, JobHandler, Store};
use parley_core::review::ReviewHandler;
use parley_core::services::Services;
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "hello-world";
pub const REPO: &str = "octo-org/hello-world";
pub const INSTALLATION: u64 = 77;
pub const PR: u64 = 42;
pub use crate::rig::{BASE, DB_PATCH, HEAD, OWNER};
pub const HEAD2: &str = "c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2";
pub use crate::clients::MODEL;
pub use crate::scripts::{
    CONVERSATION, CORRECTNESS, FIX_CHECK, GUIDELINES, JUDGE, SECURITY, STYLE, TESTS, added_lines,
    finding, passes_find_nothing, reply,
};

/// The title of the blocking finding the gate scenarios review.
pub const SQL_TITLE: &str = "SQL injection through format!";
/// A change a later push makes that touches no finding.
pub const README_PATCH: &str = "@@ -0,0 +1,1 @@\n+Docs only.";

/// `src/db.rs` after [`ReviewHarness::push_sql_fix`], as the PR's files show it.
pub const FIXED_PATCH: &str = "@@ -1,3 +1,6 @@\n use std::io;\n+pub fn find(id: &str) -> String {\n+    query(\"SELECT * FROM users WHERE id = ?\", id)\n+}\n fn a() {}\n fn b() {}";
/// What [`ReviewHarness::push_sql_fix`] changed since HEAD: line 3 rewritten.
pub const FIX_SINCE_HEAD: &str = "@@ -2,3 +2,3 @@\n pub fn find(id: &str) -> String {\n-    format!(\"SELECT * FROM users WHERE id = '{}'\", id)\n+    query(\"SELECT * FROM users WHERE id = ?\", id)\n }";

/// Each scenario, an `async fn(ReviewHarness)`, on a fresh harness over SQLite and over
/// DynamoDB (moto): [`on_both_stores!`](crate::on_both_stores) with the harness's start.
#[macro_export]
macro_rules! review_on_both_stores {
    ($($name:ident),* $(,)?) => {
        $crate::on_both_stores!(with $crate::review_harness::ReviewHarness::start; $($name),*);
    };
}

pub use crate::stores::Backend;

/// A [`Rig`] with PR #42 open and a review handler on its services. Derefs to the rig,
/// so a scenario reaches `h.github`, `h.llm` and `h.store` directly.
pub struct ReviewHarness {
    pub rig: Rig,
    pub services: Services,
    pub handler: ReviewHandler,
}

impl std::ops::Deref for ReviewHarness {
    type Target = Rig;

    fn deref(&self) -> &Rig {
        &self.rig
    }
}

impl ReviewHarness {
    /// A push from HEAD to HEAD2 that rewrites line 3 of `src/db.rs` with a parameterised
    /// query: the SQL injection finding acted on. The PR's files show the fixed function.
    pub fn push_sql_fix(&self) {
        self.github
            .update_pull(REPO, PR, |pr| pr["head"]["sha"] = HEAD2.into());
        self.github
            .set_files(REPO, PR, &[("src/db.rs", "modified", FIXED_PATCH)]);
        self.github.set_compare(
            REPO,
            HEAD,
            HEAD2,
            &[("src/db.rs", "modified", FIX_SINCE_HEAD)],
        );
    }

    /// A push from HEAD to HEAD2 that adds one file: the PR now changes `src/db.rs` and
    /// `path`, and the compare since HEAD shows only `path`.
    pub fn push_added_file(&self, path: &str, patch: &str) {
        self.github
            .update_pull(REPO, PR, |pr| pr["head"]["sha"] = HEAD2.into());
        self.github.set_files(
            REPO,
            PR,
            &[("src/db.rs", "modified", DB_PATCH), (path, "added", patch)],
        );
        self.github
            .set_compare(REPO, HEAD, HEAD2, &[(path, "added", patch)]);
    }

    /// A fake GitHub with PR #42 (head [`HEAD`], base [`BASE`], one file `src/db.rs`), a
    /// fake LLM whose passes find nothing unless scripted, and a fresh store.
    pub async fn start(backend: Backend) -> Self {
        Self::on(Rig::start(backend).await)
    }

    /// [`ReviewHarness::start`] on a store of the caller's (see [`Rig::with_store`]).
    pub async fn start_with(store: Arc<dyn Store>, dir: Option<tempfile::TempDir>) -> Self {
        Self::on(Rig::with_store(store, dir).await)
    }

    fn on(rig: Rig) -> Self {
        rig.llm.default_reply(r#"{"findings": []}"#);
        rig.open_db_pull(REPO, PR, "alice");
        // Who resolves threads in the corpus payloads: a maintainer, whose resolution of
        // a blocking finding counts (see `parley_core::review::resolution`).
        rig.github.set_permission(REPO, &thread_actor(), "write");
        let services = rig.services();
        let handler = ReviewHandler::new(services.clone());
        ReviewHarness {
            rig,
            services,
            handler,
        }
    }

    pub async fn run(&self, job: Job) -> Result<(), JobError> {
        self.handler.handle(job).await
    }

    /// The conversation worker on the same services, for scenarios where people answer
    /// the review's findings.
    pub fn conversation(&self) -> ConversationHandler {
        ConversationHandler::new(self.services.clone())
    }

    /// The conversation worker as deployed, in a process of its own: the same services
    /// but its own cache of `.parley.yml` (the review worker's read is not its read).
    pub fn conversation_elsewhere(&self) -> ConversationHandler {
        let mut services = self.services.clone();
        services.config = Arc::new(parley_core::repo::ConfigLoader::new(
            services.github.clone(),
            parley_core::repo::ConfigLoader::DEFAULT_TTL,
        ));
        ConversationHandler::new(services)
    }

    /// `.parley.yml` on the default branch, where Parley reads it. Config is cached per
    /// repository for a few minutes, so a scenario sets it before the first job.
    pub fn config(&self, yaml: &str) {
        self.github.set_file(REPO, "main", ".parley.yml", yaml);
    }

    /// `author` says `text` in a top-level comment on the PR and the conversation worker
    /// handles it, which must succeed. The job, for a redelivery.
    pub async fn say(&self, author: &str, text: &str) -> Job {
        let job = top_level(self, author, text);
        self.conversation()
            .handle(job.clone())
            .await
            .expect("answered");
        job
    }

    /// The review jobs waiting on the queue (a review asked for in a comment, say), taken
    /// off it.
    pub async fn queued_reviews(&self) -> Vec<Job> {
        use parley_core::ports::{PollingQueue, QueueName};
        let wait = std::time::Duration::from_secs(30);
        let messages = self
            .queue
            .receive(QueueName::Review, 10, wait)
            .await
            .expect("queue");
        let mut jobs = Vec::new();
        for message in messages {
            jobs.push(serde_json::from_str(&message.body).expect("a job"));
            self.queue
                .ack(QueueName::Review, &message.receipt)
                .await
                .expect("ack");
        }
        jobs
    }

    /// Parley's newest top-level comment on the PR ("" when it said nothing).
    pub fn last_said(&self) -> String {
        parley_says(self).last().cloned().unwrap_or_default()
    }

    /// Every learning kept for the repository and its organisation.
    pub async fn learnings(&self) -> Vec<parley_core::learning::Learning> {
        parley_core::learning::memory::load(
            self.store.as_ref(),
            &crate::tenants::key(REPO),
            &crate::tenants::org(OWNER),
        )
        .await
        .expect("memory")
        .learnings
    }

    /// Change the repository's learning statistics as `change` says (decided findings
    /// counted in, say), as if earlier PRs had been decided so.
    pub async fn seed_stats(&self, change: impl Fn(&mut parley_core::learning::stats::RepoStats)) {
        parley_core::learning::memory::update_stats(
            self.store.as_ref(),
            &crate::tenants::key(REPO),
            change,
        )
        .await
        .expect("statistics seeded");
    }

    /// The findings the store holds for the PR.
    pub async fn findings(&self) -> Vec<Finding> {
        self.store
            .findings_for_pr(&crate::tenants::key(REPO), PR)
            .await
            .expect("findings")
    }

    /// The stored review run of `head` (there must be one).
    pub async fn run_of(&self, head: &str) -> parley_core::ports::ReviewRun {
        self.store
            .review_run(&crate::tenants::key(REPO), PR, head)
            .await
            .expect("store")
            .unwrap_or_else(|| panic!("no review run of {head}"))
    }

    /// [`review_opened`](Self::review_opened) with the security pass finding one blocking
    /// problem ([`SQL_TITLE`], high, on `src/db.rs:3`), posted inline: the gate fails.
    /// Returns the stored finding.
    pub async fn review_opened_with_a_blocking_finding(&self) -> Finding {
        let blocking = reply(&[finding("src/db.rs", 3, "high", 90, SQL_TITLE)]);
        self.llm.answer_in_turn(SECURITY, &[&blocking]);
        self.review_opened().await;
        assert_eq!(self.latest_gate(HEAD)["conclusion"], "failure");
        let found = self.findings().await;
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].comment_id.is_some(), "posted inline");
        found[0].clone()
    }

    /// The automatic review of HEAD that opening the PR asks for (delivery `d-1`), which
    /// must succeed.
    pub async fn review_opened(&self) {
        self.run(job(ReviewTrigger::Opened, HEAD, "d-1"))
            .await
            .expect("the review of the opened PR");
    }

    /// [`run`](Self::run) as delivery `number` of `of` (the queue's `maxReceiveCount`).
    pub async fn run_attempt(&self, job: Job, number: u32, of: u32) -> Result<(), JobError> {
        self.handler
            .handle_attempt(job, Some(Attempt { number, of }))
            .await
    }

    /// The check runs on the repository, as GitHub holds them after every update.
    pub fn check_runs(&self) -> Vec<Value> {
        self.github.check_runs(REPO)
    }

    /// The conclusion of the only check run, asserting there is exactly one.
    pub fn conclusion(&self) -> String {
        let runs = self.check_runs();
        assert_eq!(runs.len(), 1, "check runs: {runs:#?}");
        assert_eq!(runs[0]["name"], "Parley review");
        assert_eq!(runs[0]["status"], "completed", "{:#?}", runs[0]);
        runs[0]["conclusion"].as_str().unwrap_or("").to_string()
    }

    /// The check runs named `name`, oldest first.
    pub fn checks_named(&self, name: &str) -> Vec<Value> {
        self.check_runs()
            .into_iter()
            .filter(|run| run["name"] == name)
            .collect()
    }

    /// The newest check run named `name`: the one GitHub shows on the PR and branch
    /// protection reads.
    pub fn latest_check(&self, name: &str) -> Value {
        let runs = self.checks_named(name);
        runs.last()
            .cloned()
            .unwrap_or_else(|| panic!("no check run named {name}: {:#?}", self.check_runs()))
    }

    /// The "Parley review" checks on `head`, oldest first.
    pub fn gate_checks(&self, head: &str) -> Vec<Value> {
        self.github.gate_checks(REPO, head)
    }

    /// The newest "Parley review" check on `head`: the one branch protection reads.
    pub fn latest_gate(&self, head: &str) -> Value {
        self.gate_checks(head)
            .last()
            .cloned()
            .unwrap_or_else(|| panic!("no Parley review on {head}: {:#?}", self.check_runs()))
    }

    /// Review with `llm` from now on (the handler is rebuilt around it).
    pub fn use_llm(&mut self, llm: Arc<dyn parley_core::ports::llm::Llm>) {
        self.services.llm = llm;
        self.rebuild_handler();
    }

    /// Run as a deployment whose operator allows review passes `deadline`
    /// (`PARLEY_PASS_TIMEOUT_SECS`); set before the first job reads `.parley.yml`.
    pub fn use_pass_deadline(&mut self, deadline: parley_core::config::PassDeadline) {
        self.services.config = Arc::new(
            parley_core::repo::ConfigLoader::new(
                self.services.github.clone(),
                parley_core::repo::ConfigLoader::DEFAULT_TTL,
            )
            .with_pass_deadline(deadline),
        );
        self.rebuild_handler();
    }

    /// Rebuild the handler after a test changed [`ReviewHarness::services`].
    pub fn rebuild_handler(&mut self) {
        self.handler = ReviewHandler::new(self.services.clone());
    }

    /// The body of the first review posted on the PR.
    pub fn first_review_body(&self) -> String {
        self.reviews()[0]["body"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The specialist passes' prompts: the request that asked each pass (offering the
    /// tools where they are on), not the judge's, not a later round of reading.
    pub fn pass_prompts(&self) -> Vec<crate::fake_llm::Prompt> {
        self.llm
            .prompts()
            .into_iter()
            .filter(|p| {
                let text = p.text();
                !text.contains(JUDGE) && !text.contains(FIX_CHECK) && !p.carries_tool_results()
            })
            .collect()
    }

    /// The passes' requests that offered tools to read code, every round.
    pub fn exploring_prompts(&self) -> Vec<crate::fake_llm::Prompt> {
        self.llm
            .prompts()
            .into_iter()
            .filter(|p| p.offers_tools())
            .collect()
    }

    /// The judge pass's prompts.
    /// The text of the first prompt of the pass named `specialist` (its name is in the
    /// pass's own instructions).
    pub fn pass_prompt(&self, specialist: &str) -> String {
        self.pass_prompts()
            .into_iter()
            .find(|p| p.text().contains(specialist))
            .unwrap_or_else(|| panic!("no prompt of the {specialist} pass"))
            .text()
    }

    pub fn judge_prompts(&self) -> Vec<crate::fake_llm::Prompt> {
        self.llm
            .prompts()
            .into_iter()
            .filter(|p| p.text().contains(JUDGE))
            .collect()
    }

    pub fn reviews(&self) -> Vec<Value> {
        self.github.reviews(REPO, PR)
    }

    /// The body of the PR's one review (there must be exactly one).
    pub fn summary(&self) -> String {
        let reviews = self.reviews();
        assert_eq!(reviews.len(), 1, "reviews: {reviews:#?}");
        reviews[0]["body"].as_str().unwrap_or_default().to_string()
    }

    /// `who` asks in the PR's conversation for a review of `head` (`@parley full review`
    /// for [`ReviewTrigger::ManualFull`], else `@parley review`): the comment on GitHub,
    /// and the job it becomes.
    pub fn requested(&self, who: &str, trigger: ReviewTrigger, head: &str, delivery: &str) -> Job {
        let command = match trigger {
            ReviewTrigger::ManualFull => "@parley full review",
            _ => "@parley review",
        };
        let request = self.github.add_issue_comment(REPO, PR, who, command);
        manual_job(trigger, head, delivery, request)
    }

    /// The body of the PR's latest review.
    pub fn latest_summary(&self) -> String {
        self.reviews().last().cloned().unwrap_or_default()["body"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Inline comments Parley posted (root comments of reviews).
    pub fn inline_comments(&self) -> Vec<Value> {
        self.github
            .review_comments(REPO, PR)
            .into_iter()
            .filter(|c| !c["pull_request_review_id"].is_null())
            .collect()
    }

    /// The bodies of [`Self::inline_comments`].
    pub fn inline_bodies(&self) -> Vec<String> {
        self.inline_comments()
            .iter()
            .map(|c| c["body"].as_str().unwrap_or_default().to_string())
            .collect()
    }
}

/// An automatic review job for `head`.
pub fn job(trigger: ReviewTrigger, head: &str, delivery: &str) -> Job {
    deliveries::review_job(&source(), PR, trigger, head, delivery)
}

/// A manual request (`@parley review` / `@parley full review`) from issue comment
/// `comment_id`.
pub fn manual_job(trigger: ReviewTrigger, head: &str, delivery: &str, comment_id: u64) -> Job {
    let Job::Review(mut review) = job(trigger, head, delivery) else {
        unreachable!("job() builds review jobs")
    };
    review.request = Some(ReviewRequest {
        comment_id,
        surface: Surface::IssueComment,
        author: Actor {
            login: "bob".to_string(),
            kind: "User".to_string(),
        },
        html_url: format!("https://github.com/{REPO}/pull/{PR}#issuecomment-{comment_id}"),
    });
    Job::Review(review)
}

/// The bookkeeping job GitHub's `pull_request_review_thread` delivery becomes, from the
/// corpus payload, for the thread rooted at `root`.
pub fn thread_job(root: u64, resolved: bool, delivery: &str) -> Job {
    thread_job_by(root, resolved, delivery, &thread_actor())
}

/// [`thread_job`], resolved or reopened by `actor`.
pub fn thread_job_by(root: u64, resolved: bool, delivery: &str, actor: &str) -> Job {
    let file = if resolved {
        "resolved.payload.json"
    } else {
        "unresolved.payload.json"
    };
    let mut payload = crate::webhook_example("pull_request_review_thread", file);
    source().stamp(&mut payload);
    payload["sender"]["login"] = actor.into();
    payload["pull_request"]["number"] = PR.into();
    if let Some(comments) = payload["thread"]["comments"].as_array_mut() {
        for comment in comments.iter_mut() {
            comment["id"] = root.into();
        }
    }
    deliveries::job("pull_request_review_thread", delivery, &payload)
}

/// `actor` deleting Parley's review comment `root` (the first of its thread), as the
/// webhook enqueues it.
pub fn deleted_job_by(root: u64, delivery: &str, actor: &str) -> Job {
    let payload = deliveries::review_comment_deleted(&source(), PR, root, actor);
    deliveries::job("pull_request_review_comment", delivery, &payload)
}

/// Where the harness's deliveries come from.
pub fn source() -> Source {
    Source::new(OWNER, NAME, INSTALLATION)
}

/// The webhook's sender in the thread payloads: who resolved or reopened the thread.
pub fn thread_actor() -> String {
    crate::webhook_example("pull_request_review_thread", "resolved.payload.json")["sender"]["login"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// `author` replies to the finding's thread, on GitHub and as the job its delivery becomes.
pub fn reply_in_thread(h: &ReviewHarness, root: u64, author: &str, body: &str) -> Job {
    let id = h
        .github
        .add_review_comment(REPO, PR, author, body, Some(root), "src/db.rs", 3);
    let comment = h.github.review_comment(REPO, PR, id);
    let payload = deliveries::review_comment(&source(), PR, "alice", &comment, DB_PATCH);
    deliveries::job(
        "pull_request_review_comment",
        &format!("delivery-{id}"),
        &payload,
    )
}

/// `author` writes `@<the App's handle> <command>` at top level, as the job its delivery
/// becomes.
pub fn top_level(h: &ReviewHarness, author: &str, text: &str) -> Job {
    let id = h.github.add_issue_comment(REPO, PR, author, text);
    let comment = h.github.issue_comment(REPO, PR, id);
    let payload = deliveries::pr_issue_comment(&source(), PR, &comment);
    deliveries::job_for(
        &h.github.app_slug(),
        "issue_comment",
        &format!("delivery-{id}"),
        &payload,
    )
}

/// GitHub's `pull_request.closed` delivery for the PR (merged or not), as the bookkeeping
/// job it becomes.
pub fn closed_job(merged: bool, delivery: &str) -> Job {
    deliveries::job(
        "pull_request",
        delivery,
        &deliveries::closed(&source(), PR, merged),
    )
}

/// Parley's top-level comments' bodies, oldest first.
pub fn parley_says(h: &ReviewHarness) -> Vec<String> {
    h.github
        .issue_comments(REPO, PR)
        .into_iter()
        .filter(|c| c["user"]["login"] == h.github.bot_login().as_str())
        .map(|c| c["body"].as_str().unwrap_or_default().to_string())
        .collect()
}
