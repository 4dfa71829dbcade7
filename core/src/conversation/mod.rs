//! The conversation worker: Parley answers mentions and holds threads about its findings.
//!
//! One job is one comment. The story of a turn, top-down:
//! 1. [`snapshot`]: fetch the PR, the comment listings, the reviews and `.parley.yml` once
//!    per job (on a plain issue: only its comments; the job carries its title and body);
//! 2. [`thread`]: rebuild the conversation the comment belongs to, from GitHub;
//! 3. [`gates`]: addressed to Parley? not a bot? allowed? not answered before? within the
//!    PR's turn limit? then acknowledge with `eyes`;
//! 4. [`review_request`]: `@parley review` / `@parley full review` queue a review instead (on a
//!    plain issue, a note says reviews are for pull requests);
//! 5. [`context`] and [`budget`]: the finding, the code, the guidelines and the history,
//!    fitted to the context budget; [`prompt`] words it;
//! 6. [`answer`]: ask the model (JSON: reply + resolution), post in the thread or the PR
//!    conversation with a hidden marker; [`dispute`] settles an argued finding;
//! 7. [`sweep`]: answer questions on the same PR that were missed.
//!
//! Failures after the gates post one short note ([`notes`]) and go back to the queue.

mod answer;
mod budget;
mod caches;
mod command;
mod concession;
mod context;
mod dispute;
mod error;
mod gates;

pub use gates::RECORD_TTL;
mod notes;
mod pause;
mod prompt;
mod reply;
mod reports;
mod review_request;
mod since;
mod snapshot;
mod sweep;
mod teach;
mod thread;
mod trigger;

pub use crate::commands::Command;
pub use answer::Resolution;
pub use budget::{Fitted, Turn, fit, per_comment_cap};
pub use error::ConversationError;
pub use gates::key as keys;
pub use gates::turns_used;
pub use teach::Taught;

use crate::bookkeeping;
use crate::concurrently;
use crate::job::{ConversationJob, Job};
use crate::llm::MeteredLlm;
use crate::mention::Handles;
use crate::ports::github::Listing;
use crate::ports::github::{GitHub, RepoScope};
use crate::ports::{Attempt, JobError, JobHandler, Store};
use crate::repo::LoadedConfig;
use crate::services::Services;
use answer::Destination;
use async_trait::async_trait;
use context::GuidelineCache;
use snapshot::{PrSnapshot, Subject};
use thread::Conversation;
use trigger::Trigger;

pub struct ConversationHandler {
    services: Services,
    permissions: gates::Permissions,
    guidelines: GuidelineCache,
}

/// What became of one comment, for the log (and the tests' reading of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Answered {
        comment_id: u64,
        reply_id: u64,
    },
    ReviewRequested(Command),
    /// A review command on a plain issue: answered with a note, nothing queued.
    ReviewNotPossible(Command),
    /// A command someone may not give (why); answered with a note saying so.
    CommandRefused(String),
    /// A review command over the PR's hourly allowance; the first one of the hour gets a
    /// note, the rest only the record.
    ReviewCapped,
    /// `@parley dismiss`: the finding, and whether the dismissal lifted it.
    Dismissed {
        finding: String,
        lifted: bool,
    },
    /// `@parley pause` / `resume`: whether automatic reviews are paused now, and whether
    /// the command changed that.
    Paused {
        paused: bool,
        changed: bool,
    },
    /// A teaching or reporting command, answered.
    Taught(Taught),
    LimitReached,
    /// The installation's monthly LLM budget is spent; the first such comment of the month
    /// on the PR gets a note.
    BudgetExhausted,
    Skipped(String),
}

impl ConversationHandler {
    pub fn new(services: Services) -> Self {
        ConversationHandler {
            services,
            permissions: gates::Permissions::default(),
            guidelines: GuidelineCache::new(context::GUIDELINE_TTL),
        }
    }

    fn github(&self) -> &dyn GitHub {
        self.services.github.as_ref()
    }

    fn store(&self) -> &dyn Store {
        self.services.store.as_ref()
    }

    /// One conversation job: the comment it carries, then the sweep for missed ones.
    /// `attempt` is which delivery of the job this is: the last one's failure note says
    /// no more retries are coming.
    async fn converse(
        &self,
        job: &ConversationJob,
        attempt: Option<Attempt>,
    ) -> Result<(), ConversationError> {
        let installation = job
            .installation_id
            .ok_or(ConversationError::NoInstallation)?;
        let scope = RepoScope::for_repo(installation, &job.repo);
        let trigger = Trigger::from_job(job);
        let snap = if job.is_pull_request {
            self.snapshot(job, scope, &trigger).await?
        } else {
            // A plain issue: a conversation without diff context (docs/conversation.md,
            // "Plain issues").
            self.issue_snapshot(job, scope).await?
        };
        let llm = MeteredLlm::new(self.services.llm.clone(), self.services.prices.clone());

        let result = self
            .take(&snap, &llm, &trigger, &job.delivery_id, attempt)
            .await;
        if let Ok(outcome) = &result {
            tracing::info!(repo = %snap.repo, number = snap.number, pull_request = job.is_pull_request, comment = trigger.id, ?outcome, "conversation turn done");
            self.sweep(&snap, &llm, &trigger, &job.delivery_id).await;
        }
        self.record_usage(&snap, &llm).await;
        result.map(|_| ())
    }

    /// The PR, the comment listings, the reviews, the bot's identity and the repo's
    /// settings. All but the settings are independent and fetched concurrently.
    async fn snapshot(
        &self,
        job: &ConversationJob,
        scope: RepoScope,
        trigger: &Trigger,
    ) -> Result<PrSnapshot, ConversationError> {
        let github = self.github();
        let identity = &self.services.identity;
        // Both comment listings: the comment's own surface for its thread, the other for
        // the pending-work sweep that follows every turn; and the reviews, whose bodies
        // the sweep also reads. All in the same round trip as the PR.
        let listings = concurrently::join2(
            concurrently::join2(
                snapshot::list_review_comments(github, &scope, job.number, trigger.created_at),
                snapshot::list_issue_comments(github, &scope, job.number, trigger.created_at),
            ),
            github.list_reviews(&scope, job.number, snapshot::LISTING),
        );
        let ((pr, ((review_comments, issue_comments), reviews)), slug) = concurrently::join2(
            concurrently::join2(github.get_pull_request(&scope, job.number), listings),
            identity.slug(github),
        )
        .await;
        let (pr, _slug) = (pr?, slug?);
        let config = self.services.config.for_pull(&scope, &pr).await;
        // Who may talk to Parley, and what a dispute or a command may lift, are the
        // repository's settings: a turn waits for them like for the PR itself.
        config.settled()?;
        let (handles, silenced) = self.handles(&scope, &config).await?;
        let snap = PrSnapshot::new(
            scope,
            job.repo.clone(),
            pr.number,
            Subject::Pull(Box::new(pr)),
            config,
            handles,
            silenced,
        );
        // A listing that failed here is fetched again when needed (and fails the turn
        // then only if that comment's surface needs it).
        match review_comments {
            Ok(listing) => snap.preload_review_comments(listing),
            Err(err) if trigger.is_inline() => return Err(err.into()),
            Err(_) => {}
        }
        match issue_comments {
            Ok(listing) => snap.preload_issue_comments(listing),
            Err(err) if !trigger.is_inline() => return Err(err.into()),
            Err(_) => {}
        }
        // Only the sweep reads reviews, and the sweep is best effort: without them it
        // still answers the missed comments.
        match reviews {
            Ok(listing) => snap.preload_reviews(listing),
            Err(err) => {
                tracing::warn!(repo = %snap.repo, pr = snap.number, error = %err, "could not list reviews; the sweep goes on without review bodies");
            }
        }
        Ok(snap)
    }

    /// A plain issue: its top-level comments and the bot's identity (concurrently), and
    /// `.parley.yml` from the default branch. Nothing under `/pulls/` is asked: an issue
    /// has no pull request, no diff and no review comments, so its review-comment listing
    /// is known to be empty without a call.
    async fn issue_snapshot(
        &self,
        job: &ConversationJob,
        scope: RepoScope,
    ) -> Result<PrSnapshot, ConversationError> {
        let github = self.github();
        let (issue_comments, slug) = concurrently::join2(
            snapshot::list_issue_comments(
                github,
                &scope,
                job.number,
                Trigger::from_job(job).created_at,
            ),
            self.services.identity.slug(github),
        )
        .await;
        let (issue_comments, _slug) = (issue_comments?, slug?);
        let config = self
            .services
            .config
            .load(&scope, snapshot::DEFAULT_BRANCH)
            .await;
        config.settled()?;
        let (handles, silenced) = self.handles(&scope, &config).await?;
        let snap = PrSnapshot::new(
            scope,
            job.repo.clone(),
            job.number,
            Subject::Issue(job.topic.clone()),
            config,
            handles,
            silenced,
        );
        snap.preload_review_comments(Listing {
            items: Vec::new(),
            truncated: false,
        });
        snap.preload_issue_comments(issue_comments);
        Ok(snap)
    }

    /// The handles that summon Parley under this configuration, and those outgoing text
    /// must never mention. Logs the configuration's problems once per job.
    async fn handles(
        &self,
        scope: &RepoScope,
        config: &LoadedConfig,
    ) -> Result<(Handles, Handles), ConversationError> {
        for warning in &config.warnings {
            tracing::warn!(repo = %scope.full_name(), %warning, ".parley.yml problem; default used");
        }
        let identity = &self.services.identity;
        let handles = identity
            .handles(self.github(), config.config.mention.claude_alias)
            .await?;
        let silenced = identity.handles(self.github(), true).await?;
        Ok((handles, silenced))
    }

    /// One comment through the gates and, if it passes them all, an answer.
    async fn take(
        &self,
        snap: &PrSnapshot,
        llm: &MeteredLlm,
        trigger: &Trigger,
        owner: &str,
        attempt: Option<Attempt>,
    ) -> Result<Outcome, ConversationError> {
        let conversation = thread::reconstruct(self.github(), snap, trigger).await?;
        if conversation.trigger_deleted {
            return Ok(skipped(snap, trigger, "the comment was deleted"));
        }
        // Gate 1: addressed to Parley.
        if gates::addressed(trigger, &conversation, snap).is_none() {
            return Ok(skipped(
                snap,
                trigger,
                "neither a mention nor a reply to a finding",
            ));
        }
        // Gate 2: never a bot.
        if gates::is_bot(trigger, snap) {
            return Ok(skipped(snap, trigger, "written by a bot"));
        }
        // Gate 3: only people allowed to spend this repository's budget.
        if let Err(why) = self
            .permissions
            .allows(self.github(), snap, &trigger.author.login)
            .await?
        {
            return Ok(skipped(snap, trigger, &why));
        }
        // Gate 4: answered once. The store's record of answers, its claim, then GitHub's
        // own record (a reply marker).
        if gates::answered_in_store(self.store(), snap, trigger.id).await? {
            snap.mark_answered(trigger.id);
            return Ok(skipped(
                snap,
                trigger,
                "the store records an answer already",
            ));
        }
        if !gates::claim_reply(self.store(), snap, trigger.id, owner).await? {
            return Ok(skipped(snap, trigger, "another job claimed this comment"));
        }
        if conversation.already_answered {
            // A post that failed with a 5xx may have landed after all: its turn, given
            // back then, is used.
            gates::recharge_if_landed(self.store(), snap, trigger.id).await;
            // A worker that died between posting a concession and recording it: the
            // reply's marker says what was decided; settle it now (idempotent).
            self.settle_posted_concession(snap, trigger).await;
            return Ok(skipped(
                snap,
                trigger,
                "Parley's reply is already on GitHub",
            ));
        }
        let result = self
            .after_claim(snap, llm, trigger, &conversation, owner, attempt)
            .await;
        if result.is_err() {
            // Let the queue's retry claim it again and post.
            let claim = gates::key::reply(&snap.repo, trigger.id);
            if let Err(err) = self.store().release(&claim).await {
                tracing::warn!(key = %claim, error = %err, "could not release the reply claim");
            }
        }
        result
    }

    async fn after_claim(
        &self,
        snap: &PrSnapshot,
        llm: &MeteredLlm,
        trigger: &Trigger,
        conversation: &Conversation,
        owner: &str,
        attempt: Option<Attempt>,
    ) -> Result<Outcome, ConversationError> {
        let destination = answer::destination(trigger, conversation);
        let parse_context = crate::commands::ParseContext {
            in_finding_thread: conversation.finding.is_some(),
        };
        if let Some(command) = crate::commands::parse(&trigger.body, &snap.handles, parse_context) {
            // Teaching and asking what Parley knows are turns like any answer (and
            // `remember` calls the model): a comment storm of commands meets the same
            // limit and budget as one of questions.
            let teaching = is_teaching(&command);
            if teaching && let Some(stopped) = self.spend(snap, trigger, &destination).await? {
                return Ok(stopped);
            }
            let outcome = self
                .command(
                    snap,
                    llm,
                    trigger,
                    conversation,
                    &destination,
                    command,
                    owner,
                )
                .await;
            if teaching && outcome.is_err() {
                gates::give_back_turn(self.store(), snap, trigger.id, false).await;
            }
            snap.mark_answered(trigger.id);
            return outcome;
        }
        if let Some(stopped) = self.spend(snap, trigger, &destination).await? {
            return Ok(stopped);
        }
        // Gate 7: acknowledge.
        gates::acknowledge(self.github(), snap, trigger).await;

        let (err, ambiguous) = match self
            .reply(snap, llm, trigger, conversation, &destination)
            .await
        {
            Ok(outcome) => return Ok(outcome),
            Err(Failed::BeforePosting(err)) => {
                notes::could_not_answer(
                    self.github(),
                    self.store(),
                    snap,
                    trigger,
                    &destination,
                    &err,
                    attempt,
                )
                .await;
                (err, false)
            }
            // The post may have gone through (GitHub does not say on a 5xx): no error
            // note; the retry looks for the reply's marker first.
            Err(Failed::Posting(err)) => {
                let ambiguous = matches!(
                    err,
                    ConversationError::GitHub(
                        crate::ports::GitHubError::Server { .. }
                            | crate::ports::GitHubError::Network(_)
                    )
                );
                (err, ambiguous)
            }
        };
        // No reply is on GitHub (as far as we know): the turn must not stay used, or a
        // job that ends in the dead-letter queue would eat the PR's limit.
        gates::give_back_turn(self.store(), snap, trigger.id, ambiguous).await;
        Err(err)
    }

    /// Gates 5 and 6, for anything that answers with the model or takes a turn: the
    /// installation's monthly LLM budget (see `crate::budget`), then the PR's turn limit.
    /// `Some` when the comment stops here (its note is posted).
    async fn spend(
        &self,
        snap: &PrSnapshot,
        trigger: &Trigger,
        destination: &Destination,
    ) -> Result<Option<Outcome>, ConversationError> {
        if let Some(standing) = crate::budget::exhausted(
            self.store(),
            &self.services.budget,
            snap.scope.installation_id,
        )
        .await?
        {
            notes::budget_exhausted(
                self.github(),
                self.store(),
                snap,
                trigger,
                destination,
                &standing.month,
            )
            .await?;
            return Ok(Some(Outcome::BudgetExhausted));
        }
        if gates::take_turn(self.store(), snap, trigger.id).await? == gates::TurnGate::LimitReached
        {
            notes::limit_reached(self.github(), self.store(), snap, trigger, destination).await?;
            return Ok(Some(Outcome::LimitReached));
        }
        Ok(None)
    }

    /// The conversation with only the turns of people allowed to talk to Parley (and
    /// Parley's own). Anyone can comment in a thread; someone who failed the permission
    /// gate must not steer the answer to someone who passed it by writing instructions
    /// into the history. A lookup that fails drops the turn (fail closed).
    async fn permitted_history(
        &self,
        snap: &PrSnapshot,
        conversation: &Conversation,
    ) -> Conversation {
        let mut verdicts: std::collections::HashMap<String, bool> =
            std::collections::HashMap::new();
        let mut kept = conversation.clone();
        kept.history.clear();
        for said in &conversation.history {
            let allowed = if said.parley {
                true
            } else if let Some(known) = verdicts.get(&said.author) {
                *known
            } else {
                let allowed = matches!(
                    self.permissions
                        .allows(self.github(), snap, &said.author)
                        .await,
                    Ok(Ok(()))
                );
                verdicts.insert(said.author.clone(), allowed);
                allowed
            };
            if allowed {
                kept.history.push(said.clone());
            } else {
                tracing::info!(repo = %snap.repo, pr = snap.number, comment = said.id, author = %said.author, "turn left out of the prompt: its author may not talk to Parley");
            }
        }
        kept
    }

    /// Answer missed questions on the same PR. Best effort: a failure stops the sweep
    /// (the next job sweeps again) but never fails the job that ran it.
    async fn sweep(&self, snap: &PrSnapshot, llm: &MeteredLlm, handled: &Trigger, delivery: &str) {
        let listings = concurrently::join2(
            snap.review_comments(self.github()),
            snap.issue_comments(self.github()),
        )
        .await;
        let (review_comments, issue_comments) = match listings {
            (Ok(r), Ok(i)) => (r, i),
            (Err(err), _) | (_, Err(err)) => {
                tracing::warn!(repo = %snap.repo, pr = snap.number, error = %err, "could not list comments for the pending-work sweep");
                return;
            }
        };
        let owner = format!("sweep:{delivery}");
        let reviews = snap.reviews();
        let mut taken = 0;
        for pending in sweep::pending(
            snap,
            &review_comments.items,
            &issue_comments.items,
            &reviews,
            handled.id,
            handled.created_at,
        ) {
            if taken == sweep::MAX_PER_RUN {
                tracing::info!(repo = %snap.repo, pr = snap.number, "sweep stops at its per-job limit; the next job goes on");
                return;
            }
            // A swept comment is not this job's: its attempts are not the comment's.
            match self.take(snap, llm, &pending, &owner, None).await {
                Ok(outcome) => {
                    tracing::info!(repo = %snap.repo, pr = snap.number, comment = pending.id, ?outcome, "pending comment swept");
                    if matches!(outcome, Outcome::LimitReached | Outcome::BudgetExhausted) {
                        return;
                    }
                    // Turned away by a gate: costs little and does not count.
                    if !matches!(outcome, Outcome::Skipped(_)) {
                        taken += 1;
                    }
                }
                Err(err) => {
                    tracing::warn!(repo = %snap.repo, pr = snap.number, comment = pending.id, error = %err, "sweep stopped");
                    return;
                }
            }
        }
    }

    /// Tokens and estimated cost on the PR's counters (see [`crate::llm::usage::counters`]).
    async fn record_usage(&self, snap: &PrSnapshot, llm: &MeteredLlm) {
        crate::llm::usage::record_for_pr(
            self.store(),
            snap.scope.installation_id,
            &snap.repo,
            snap.number,
            &llm.tally(),
        )
        .await;
    }
}

#[async_trait]
impl JobHandler for ConversationHandler {
    async fn handle(&self, job: Job) -> Result<(), JobError> {
        self.handle_attempt(job, None).await
    }

    async fn handle_attempt(&self, job: Job, attempt: Option<Attempt>) -> Result<(), JobError> {
        crate::tenancy::adopt::settle(&self.services, &job).await?;
        match job {
            Job::Bookkeeping(job) => bookkeeping::record(&self.services, &job).await,
            Job::Conversation(job) => self.converse(&job, attempt).await.map_err(|err| {
                tracing::warn!(repo = %job.repo.full_name(), number = job.number, comment = job.comment.id, error = %err, "conversation turn failed");
                JobError::from(err)
            }),
            Job::Review(job) => Err(JobError::Permanent(format!(
                "review job for {}#{} reached the conversation worker",
                job.repo.full_name(),
                job.number
            ))),
            Job::Embed(job) => Err(JobError::Permanent(format!(
                "embedding job for {} reached the conversation worker",
                job.repo
            ))),
        }
    }
}

/// Where a turn failed decides whether the asker gets an error note.
enum Failed {
    BeforePosting(ConversationError),
    Posting(ConversationError),
}

/// Commands answered from what Parley knows (teaching, forgetting, reporting), as opposed
/// to reviews and dismissals, which have their own allowances.
fn is_teaching(command: &Command) -> bool {
    command.trigger().is_none()
        && !matches!(
            command,
            Command::DismissFinding { .. } | Command::Pause | Command::Resume
        )
}

fn skipped(snap: &PrSnapshot, trigger: &Trigger, why: &str) -> Outcome {
    tracing::info!(repo = %snap.repo, pr = snap.number, comment = trigger.id, author = %trigger.author.login, why, "comment not answered");
    Outcome::Skipped(why.to_string())
}
