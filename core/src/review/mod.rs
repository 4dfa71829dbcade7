//! The review worker: every PR gets a review worth reading, and a check a team can require.
//!
//! A job goes through, in order:
//! 1. gates: open PR, trigger enabled, not a draft, neither author nor label skipped, a
//!    base branch reviewed ([`skip_reason`]), not paused ([`pause`]);
//! 2. the run: claimed per (repo, PR, head SHA), never redone once published, recovered
//!    from GitHub's own markers if a worker died after posting ([`runs`]);
//! 3. inputs: the PR's files, where comments may go ([`pull_files`]), those in the token
//!    budget, incremental on `synchronize` ([`inputs`]), the rules ([`read_rules`]) and
//!    the issues the PR says it resolves ([`linked_issues`]);
//! 4. specialist passes in parallel ([`specialists`]), merged and deduplicated
//!    ([`merge`]), filtered by confidence and capped ([`filter`]);
//! 5. a last look at the PR's head (a newer push supersedes this run), then one review
//!    with inline comments and a summary ([`publish`], [`summary`]), findings stored with
//!    their comment ids, and the check run concluded ([`gate`]) from every blocking
//!    finding still open on the PR;
//! 6. later, when a finding is resolved, reopened or conceded, the current head's gate is
//!    judged again ([`regate`]).
//!
//! Two buttons on the head's check come here too and review nothing new: "Re-run"
//! ([`rerun`]) and, on a check held for want of a complete review, "Let it through"
//! ([`let_through`]). A PR moved to another base branch is reviewed against it
//! ([`retarget`]); a merge queue's commit for a PR gets the PR's gate ([`merge_queue`]).

pub mod analyse;
mod conclude;
pub mod diff;
mod error;
mod failure_note;
pub mod file_kind;
pub mod filter;
pub mod findings;
pub mod fixed;
pub mod gate;
pub mod grounding;
pub mod inputs;
pub mod learned;
pub mod let_through;
pub mod lifecycle;
pub mod linked_issues;
mod lost;
pub mod merge;
pub mod merge_queue;
pub mod over_budget;
pub mod overview;
pub mod pause;
pub mod pointers;
pub mod progress;
pub mod prompts;
pub mod publish;
pub mod pull_files;
pub mod rebased;
mod recover;
pub mod regate;
pub mod rerun;
pub mod resolution;
pub mod retarget;
pub mod rules_change;
pub mod runs;
mod scope;
pub mod skip;
pub mod specialists;
pub mod summary;
mod which_run;

use crate::job::{Job, ReviewJob, ReviewTrigger};
use crate::llm::MeteredLlm;
use crate::ports::github::{PullRequest, RepoScope};
use crate::ports::{Attempt, Finding, JobError, JobHandler, ReviewRun, RunState};
use crate::repo::{LoadedConfig, generated, read_rules};
use crate::services::Services;
use async_trait::async_trait;
pub use error::ReviewError;
use merge::Candidate;
use publish::Identified;
pub use skip::skip_reason;
use std::collections::HashSet;
use time::OffsetDateTime;

pub struct ReviewHandler {
    services: Services,
}

impl ReviewHandler {
    pub fn new(services: Services) -> Self {
        ReviewHandler { services }
    }
}

#[async_trait]
impl JobHandler for ReviewHandler {
    async fn handle(&self, job: Job) -> Result<(), JobError> {
        self.handle_attempt(job, None).await
    }

    async fn handle_attempt(&self, job: Job, attempt: Option<Attempt>) -> Result<(), JobError> {
        crate::tenancy::adopt::settle(&self.services, &job).await?;
        match job {
            Job::Review(job) => self.review(&job, attempt).await.map_err(JobError::from),
            other => Err(JobError::Permanent(format!(
                "{} reached the review worker",
                other.describe()
            ))),
        }
    }
}

impl ReviewHandler {
    async fn review(&self, job: &ReviewJob, attempt: Option<Attempt>) -> Result<(), ReviewError> {
        match job.trigger {
            ReviewTrigger::Rerequested => return self.rerequested(job, attempt).await,
            ReviewTrigger::LetThrough => return self.let_through(job).await,
            ReviewTrigger::Retargeted => return self.retargeted(job, attempt).await,
            _ => {}
        }
        let github = self.services.github.as_ref();
        let store = self.services.store.as_ref();
        let installation = job.installation_id.ok_or(ReviewError::NoInstallation)?;
        let scope = RepoScope::for_repo(installation, &job.repo);
        let repo = job.repo.tenant().repo;
        let manual = runs::is_manual(job.trigger);

        let pr = github.get_pull_request(&scope, job.number).await?;
        let loaded = self.services.config.for_pull(&scope, &pr).await;
        loaded.settled_unless_last(attempt)?;
        let parley = self.services.identity.handles(github, false).await?;
        match skip::wanted(store, job, &pr, &loaded.config, &parley).await? {
            skip::Wanted::Go => {}
            skip::Wanted::Leave => return Ok(()),
            skip::Wanted::Skip { reason, owed } => {
                tracing::info!(%repo, number = job.number, %reason, "review skipped");
                let config = &loaded.config;
                return self
                    .conclude_skipped(&scope, job, &pr, config, &reason, owed)
                    .await;
            }
        }
        // A manual request reviews whatever the head is now; an automatic job for a head
        // that has moved on is superseded before it starts (the newer push has its own).
        let head_sha = if manual {
            pr.head.sha.clone()
        } else {
            job.head_sha.clone()
        };
        if pr.head.sha != head_sha {
            tracing::info!(%repo, number = job.number, job_head = %head_sha, pr_head = %pr.head.sha, "review skipped: the PR head has moved on");
            return Ok(());
        }
        if manual {
            self.requeue_lost_automatic_run(&scope, job, &pr).await;
        }

        // A published run is never redone, whoever asks; checked before the claim too,
        // because the claim of the delivery that published outlives the run. Manual runs
        // have keys of their own, so neither claim nor record here ever makes the
        // automatic run of this head skip.
        let run_key = self.run_key(job, &head_sha).await?;
        if self.settled(&scope, job, &run_key, &parley).await? {
            return Ok(());
        }
        // Cost control before anything is spent (see `crate::budget`).
        if let Some(standing) =
            crate::budget::exhausted(store, &self.services.budget, installation).await?
        {
            return over_budget::conclude(
                &self.services,
                &scope,
                job,
                &pr,
                &loaded.config,
                &standing,
            )
            .await;
        }
        if !runs::claim(store, job, &run_key).await? {
            tracing::info!(%repo, number = job.number, %run_key, "review skipped: another delivery holds this run");
            return Ok(());
        }
        if self.settled(&scope, job, &run_key, &parley).await? {
            return Ok(());
        }
        let existing = store.review_run(&repo, job.number, &run_key).await?;
        let mut run = existing.unwrap_or_else(|| ReviewRun {
            repo: repo.clone(),
            pr: job.number,
            head_sha: run_key.clone(),
            base_sha: pr.base.sha.clone(),
            trigger: runs::trigger_name(job.trigger).to_string(),
            state: RunState::Running,
            check_run_id: None,
            review_id: None,
            review_url: None,
            started_at: OffsetDateTime::now_utc(),
            finished_at: None,
            let_through_by: None,
            moved_from: job.moved_from.clone(),
        });
        // GitHub is the source of truth when a worker died between posting and recording;
        // only a review Parley itself submitted counts.
        if let Some(review) =
            runs::review_on_github(github, &scope, job.number, &run_key, &parley).await?
        {
            return self
                .recover(&scope, job, &pr, &loaded.config, &mut run, review, &parley)
                .await;
        }

        // The run's check: the one still in progress from an attempt that died (or whose
        // trouble could not be reported), else a new one. A failed attempt that concluded
        // its check `neutral` dropped the id: GitHub never reopens a completed check run,
        // so a new one of the same name (which GitHub shows and branch protection reads
        // instead) says "in progress" while the retry works. A check that cannot be
        // created now is created, completed, at the end.
        run.state = RunState::Running;
        if run.check_run_id.is_none() {
            let key = runs::claim_key(&repo, job.number, &run_key);
            run.check_run_id =
                gate::start(github, &scope, gate::check_name(&run_key), &head_sha, &key).await;
        }
        // Recorded with its check's id before the review starts. Failing to record it is a
        // failure like any later one: the check just created is concluded, never left in
        // progress (a retry without the id would start a check of its own).
        let result = match store.put_review_run(&run).await {
            Ok(()) => self.review_head(&scope, job, &pr, &loaded, &mut run).await,
            Err(err) => Err(err.into()),
        };
        match result {
            Ok(()) => {
                if run.state == RunState::Published {
                    self.settle_failure_note(
                        &scope,
                        job.number,
                        &head_sha,
                        run.review_url.as_deref(),
                        &parley,
                    )
                    .await;
                }
                Ok(())
            }
            Err(err) => {
                tracing::error!(%repo, number = job.number, %head_sha, error = %err, "review failed");
                let_through::arrived_during(store, &mut run).await;
                // The public check says what failed, never the raw error (provider
                // messages carry internal hostnames and request ids).
                let (conclusion, output) = conclude::failed(
                    &self.services,
                    job,
                    &pr,
                    &loaded.config,
                    &run_key,
                    run.let_through_by.as_deref(),
                    &err,
                )
                .await;
                let key = runs::claim_key(&repo, job.number, &run_key);
                let check = gate::Check {
                    id: run.check_run_id,
                    name: gate::check_name(&run_key),
                    head_sha: &head_sha,
                    external_id: &key,
                };
                match let_through::complete_newest(
                    github,
                    &scope,
                    &check,
                    conclusion,
                    output,
                    run.let_through_by.is_some(),
                )
                .await
                {
                    // Concluded: the retry starts a check of its own.
                    Ok(_) => run.check_run_id = None,
                    // Still in progress: the retry concludes this one.
                    Err(check_err) => {
                        tracing::warn!(%repo, number = job.number, error = %check_err, "could not conclude the check run of a failed review")
                    }
                }
                if let Err(store_err) = runs::finish(store, &mut run, RunState::Failed).await {
                    tracing::warn!(error = %store_err, "could not record the failed run");
                }
                // No retry will come (a permanent error, or the queue's last attempt: the
                // message goes to the dead-letter queue next): the PR says so, once per
                // head. Earlier attempts stay quiet; the check run shows the trouble.
                let retried = err.is_transient() || err.is_config();
                if !retried || attempt.is_some_and(|a| a.is_last()) {
                    let tries = attempt.map(|a| a.number).filter(|_| retried);
                    self.report_failure(&scope, job.number, &head_sha, &parley, &err, tries)
                        .await;
                }
                Err(err)
            }
        }
    }

    /// Review the claimed head and publish, unless a newer head supersedes it first.
    async fn review_head(
        &self,
        scope: &RepoScope,
        job: &ReviewJob,
        pr: &PullRequest,
        loaded: &LoadedConfig,
        run: &mut ReviewRun,
    ) -> Result<(), ReviewError> {
        let github = self.services.github.as_ref();
        let store = self.services.store.as_ref();
        let config = &loaded.config;
        let repo = job.repo.tenant().repo;
        let head_sha = runs::head_of(&run.head_sha).to_string();

        // The whole PR: its patches decide where inline comments may go, even for an
        // incremental review (GitHub places comments on the PR's diff).
        let listing = pull_files::PullFiles::fetch(github, scope, job.number).await?;
        let pr_paths = &listing.paths;

        let scope_of_review = self
            .changes_to_review(scope, job, pr, &listing.files, listing.truncated, &head_sha)
            .await?;
        run.base_sha = scope_of_review.base_sha.clone();
        let (guidelines, attributes) =
            read_rules(github, scope, &pr.base.ref_name, loaded, pr_paths).await;
        let in_force = rules_change::InForce {
            config,
            under: &loaded.under,
            attributes: &attributes,
            deadline: self.services.config.pass_deadline(),
        };
        let rules_changed =
            rules_change::rules_changed(github, scope, &head_sha, &listing.files, &in_force).await;
        let earlier = store.findings_for_pr(&repo, job.number).await?;
        // After a force-push or a move to another base the patches are the PR's against
        // its base, not changes since the findings' commit: their line numbers would say
        // nothing about those findings.
        if scope_of_review.incremental && scope_of_review.narrowed.is_none() {
            learned::code_changed(
                store,
                self.services.corpus.as_ref(),
                &earlier,
                &scope_of_review.base_sha,
                &scope_of_review.files,
            )
            .await;
        }
        // The repository at the head, read once for every pass (fail open: a review
        // never fails because the code around it could not be read). Not downloaded
        // when no changed file will be read and none is deleted, or when no pass asked
        // for has anything to look at in what will be read: no pass runs then (a
        // deletion is reviewed when code at the head still uses what it deleted).
        let read = inputs::select(
            scope_of_review.files.clone(),
            scope_of_review.truncated,
            &config.review,
            &attributes,
        )
        .files;
        let nothing_to_read =
            inputs::nothing_to_read(&read, &scope_of_review.files, config, &guidelines);
        let open_code = async {
            match (&self.services.code, config.review.context_enabled) {
                _ if nothing_to_read => Err("no changed file to review".to_string()),
                (_, false) => Err("`review.context.enabled` is off".to_string()),
                (Some(source), true) => source.open(github, scope, &head_sha).await,
                (None, true) => Err("no code reader is configured".to_string()),
            }
        };
        // The issues the PR says it resolves are read only for a pass that will run.
        let read_issues = async {
            if nothing_to_read {
                linked_issues::Linked::default()
            } else {
                linked_issues::read(github, scope, pr, &config.review).await
            }
        };
        let (code, issues) = crate::concurrently::join2(open_code, read_issues).await;
        // Files whose own header says a tool wrote them, on the default branch too.
        let code_read = code.as_ref().ok().map(|c| c.as_ref());
        let headed = generated::marked_in_files(github, scope, &loaded.branch, code_read, &read);
        let attributes = attributes.with_headers(headed.await);
        let subject = analyse::Subject {
            repo: &job.repo.full_name(),
            tenant: &job.repo.tenant(),
            code: code.as_ref().map(|c| c.as_ref()).map_err(Clone::clone),
            number: job.number,
            title: &pr.title,
            description: &pr.body,
            base_sha: &run.base_sha,
            head_sha: &head_sha,
            incremental: scope_of_review.incremental,
            files: scope_of_review.files.clone(),
            truncated: scope_of_review.truncated,
            pull: &listing,
            guidelines: &guidelines,
            issues: &issues,
            attributes: &attributes,
            earlier: &earlier,
            recall: Some(crate::retrieval::Recall::of(&self.services)),
        };
        let metered = MeteredLlm::new(self.services.llm.clone(), self.services.prices.clone());
        let silenced = self.services.identity.handles(github, true).await?;
        let progress = progress::CheckProgress::new(github, scope, run.check_run_id);
        let analysis =
            analyse::analyse(store, &metered, config, &subject, &silenced, &progress).await?;
        let (inputs, merged, filtered) = (&analysis.inputs, &analysis.merged, &analysis.filtered);
        // Open findings whose lines this push changed, which it fixed: resolved with it.
        let mut compares = resolution::Compares::default();
        let weighing = fixed::Weighing::new(
            &config.review,
            &earlier,
            &head_sha,
            inputs,
            &scope_of_review.files,
        );
        let fixed = weighing
            .resolved(github, scope, &metered, &mut compares, subject.code.ok())
            .await;

        // Last look before publishing: a newer push makes this review stale.
        let current = github.get_pull_request(scope, job.number).await?;
        if current.head.sha != head_sha {
            return self.supersede(scope, config, run, &current.head.sha).await;
        }

        // Spent whether or not the post succeeds (a retry runs the passes again), so it is
        // counted now; the summary then reports the PR's total with this run's share.
        let usage = metered.tally();
        crate::llm::usage::record_for_pr(store, scope.installation_id, &repo, job.number, &usage)
            .await;
        let spent_on_pr = crate::llm::usage::spent_on_pr(store, &repo, job.number)
            .await
            .inspect_err(|err| tracing::warn!(%repo, number = job.number, error = %err, "could not read the PR's usage counters"))
            .ok();
        let repo_url = repo_url(pr, &job.repo.full_name());
        let report = analysis.summary(analyse::Framing {
            repo_url: &repo_url,
            head_sha: &head_sha,
            base_sha: &run.base_sha,
            incremental: scope_of_review.incremental,
            narrowed: scope_of_review.narrowed.as_ref(),
            trigger: &run.trigger,
            rerun_of: runs::parse_key(&run.head_sha).1,
            guidelines: &guidelines,
            config_warnings: &loaded.warnings,
            rules_changed: &rules_changed,
            usage: &usage,
            spent_on_pr,
            silenced: &silenced,
        });
        // Earlier findings this review closes (summary-only ones a full review no longer
        // finds) or reopens (resolved ones found again); stored once the review is posted.
        let seen = lifecycle::Seen {
            found: merged
                .candidates
                .iter()
                .chain(merged.repeated.iter())
                .map(|c| c.fingerprint.as_str())
                .collect(),
            repeated: &merged.repeated,
            // After a force-push or a move to another base each file reviewed was reviewed
            // whole, by every pass: its silence about a finding there means what a full
            // review's does. A pass the change gave nothing to look at did not look:
            // nothing is closed then.
            complete_full_review: (!scope_of_review.incremental
                || scope_of_review.narrowed.is_some())
                && !report.partial
                && report.passes_not_needed.is_empty(),
            reviewed_paths: inputs.files.iter().map(|f| f.path.as_str()).collect(),
            pr_paths: pr_paths.iter().map(String::as_str).collect(),
        };
        let changes =
            lifecycle::after_review(&earlier, &seen, &config.gate, OffsetDateTime::now_utc());
        let changes = lifecycle::hold_unchanged_blocking(
            github,
            scope,
            &config.gate,
            &head_sha,
            &seen.pr_paths,
            &mut compares,
            changes,
        )
        .await?
        .with_fixed(fixed, &seen.found);
        let mut report = report;
        report.fixed_earlier = summary::fixed_lines(&changes.fixed);
        report.changed = changes.ids();
        report.held_earlier = changes.held.len();
        let inline: Vec<Identified> = filtered
            .inline
            .iter()
            .map(|c| Identified::new(c.clone(), &head_sha))
            .collect();
        let in_summary: Vec<Identified> = filtered
            .in_summary
            .iter()
            .map(|c| Identified::new(c.clone(), &head_sha))
            .collect();
        let quiet = config.review.quiet_pushes
            && publish::quiet(
                job,
                scope_of_review.incremental,
                filtered,
                &changes,
                report.partial,
                &loaded.warnings,
            );
        let posted_review = if quiet {
            None
        } else {
            Some(
                publish::post_review(
                    github,
                    scope,
                    job.number,
                    &head_sha,
                    &inline,
                    &report.render(false),
                    &report.render(true),
                )
                .await?,
            )
        };
        let review = posted_review.as_ref().map(|p| &p.review);
        let linked = match review {
            Some(review) => {
                publish::record_findings(
                    github,
                    store,
                    scope,
                    job.number,
                    &head_sha,
                    review.id,
                    &inline,
                    &in_summary,
                )
                .await?
            }
            None => 0,
        };
        tracing::info!(
            %repo, number = job.number, %head_sha,
            inline = inline.len(), in_summary = in_summary.len(), linked, quiet,
            fallback = posted_review.as_ref().is_some_and(|p| p.fallback),
            filtered = filtered.below_threshold.len(),
            input_tokens = usage.usage.input_tokens, output_tokens = usage.usage.output_tokens,
            "review published"
        );
        crate::metrics::findings(
            inline.len() + in_summary.len(),
            analysis.suppressed.len(),
            filtered.below_threshold.len(),
        );

        // The PR's findings as they stand now, this run's included. The gate is concluded
        // before the run is marked published: a failure on the way (store or GitHub) fails
        // the job, and the queue's retry recovers the posted review and concludes then. A
        // run is never "published" with its check left in progress.
        lifecycle::write_back(store, &earlier, &changes).await?;
        fixed::settle(&self.services, scope, job.number, &changes.fixed).await;
        let reported: Vec<&Candidate> = filtered.reported().collect();
        learned::account(
            store,
            &repo,
            &job.repo.tenant().org,
            &analysis.applied,
            &analysis.suppressed,
            &reported,
        )
        .await;
        if changes.any() {
            tracing::info!(%repo, number = job.number, closed = changes.closed.len(), reopened = changes.reopened.len(), fixed = changes.fixed.len(), "earlier findings closed, reopened or resolved as fixed by this review");
        }
        let on_pr = store.findings_for_pr(&repo, job.number).await?;
        let partial = report.partial;
        // A force-push that changed none of the PR's changes left nothing to read, and
        // nothing unread: it is reviewed, not "nothing to review".
        let pushed_no_change =
            scope_of_review.narrowed.is_some() && scope_of_review.files.is_empty();
        let nothing_read = report.nothing_ran() && !pushed_no_change;
        let automatic = !runs::is_manual(job.trigger);
        // A finding a manual review of this head already posted, which this run found
        // again and did not re-post (fingerprints), is this run's: asking first does not
        // lift a `failure`.
        let this_run: HashSet<&str> = filtered
            .reported()
            .map(|c| c.fingerprint.as_str())
            .collect();
        let pr_url = pr_url(pr, &repo_url);
        let reviewed = format!(
            "`{}`…`{}`{} ({})",
            summary::short(&run.base_sha),
            summary::short(&head_sha),
            scope_of_review
                .narrowed
                .as_ref()
                .map_or_else(String::new, summary::Narrowed::after),
            match summary::named_files(&report.files_reviewed) {
                none if pushed_no_change => {
                    format!("{none} whose changes it changed")
                }
                named => named,
            }
        );
        let published = conclude::Published {
            automatic,
            partial,
            nothing_read,
            reviewed: &reviewed,
            reported: filtered.reported().collect(),
            on_pr: &on_pr,
            this_run: &this_run,
            repo_url: &repo_url,
            pr_url: &pr_url,
        };
        self.conclude_published(scope, run, config, review, published)
            .await?;
        // A manual review never concludes the gate itself, but what it published can
        // change what the head's automatic review concluded. A re-run's completing review
        // (no request) leaves that to the re-run, which judges the gate once after it.
        if !automatic && job.request.is_some() {
            let published = regate::ManualReview {
                full: job.trigger == ReviewTrigger::ManualFull,
                partial,
                blocking: reported
                    .iter()
                    .any(|c| config.gate.block_on.contains(&c.severity)),
                changed: changes.any(),
            };
            regate::after_manual_review(&self.services, scope, job.number, &head_sha, published)
                .await;
        }
        // Remembered for later reviews and answers once all above is done, failing open
        // (it can neither fail nor hold up the review or its check). The whole PR's hunks,
        // not only this run's: a write missed in a crash here is made good next review.
        let changed: HashSet<&str> = changes.all().map(|f| f.id.as_str()).collect();
        let findings: Vec<Finding> = on_pr
            .into_iter()
            .filter(|f| {
                review.is_some_and(|r| f.review_id == Some(r.id)) || changed.contains(f.id.as_str())
            })
            .collect();
        let pr_ref = crate::retrieval::documents::PrRef {
            repo: &repo,
            number: job.number,
            title: &pr.title,
        };
        if crate::retrieval::remember::admissible(pr) {
            crate::retrieval::remember::review(
                &self.services,
                config,
                pr_ref,
                &listing.files,
                &findings,
            )
            .await;
        } else {
            tracing::info!(repo = %repo, number = job.number, "a fork PR is remembered for retrieval once merged");
        }
        Ok(())
    }
}

/// The PR's web page, where earlier findings' threads are linked from the check.
pub(crate) fn pr_url(pr: &PullRequest, repo_url: &str) -> String {
    if pr.html_url.is_empty() {
        format!("{repo_url}/pull/{}", pr.number)
    } else {
        pr.html_url.clone()
    }
}

/// The repository's web root, from the PR's URL (right on GitHub Enterprise too).
pub(crate) fn repo_url(pr: &PullRequest, repo: &str) -> String {
    debug_assert!(repo.contains('/'), "a repository's name, not its store key");
    match pr.html_url.rsplit_once("/pull/") {
        Some((root, _)) if root.ends_with(&format!("/{repo}")) => root.to_string(),
        _ => format!("https://github.com/{repo}"),
    }
}
