//! A review already on GitHub when its run was not marked published (the worker died
//! after posting it): its findings are rebuilt from their markers and stored, and what it
//! did to earlier findings (closed, reopened, fixed) from its summary's marker.

use super::merge::Candidate;
use super::{ReviewError, ReviewHandler, fixed, lifecycle, pr_url, repo_url, runs};
use crate::config::RepoConfig;
use crate::job::ReviewJob;
use crate::markers::{self, FindingMarker};
use crate::mention::Handles;
use crate::ports::github::{PageLimit, PullRequest, RepoScope, Review};
use crate::ports::{Finding, FindingState, ReviewRun};
use std::collections::HashSet;
use time::OffsetDateTime;

impl ReviewHandler {
    /// A review for this head is already on GitHub (the worker died after posting it):
    /// store its findings from their markers and its changes to earlier ones from the
    /// summary's, mark the run published, settle the check.
    #[allow(clippy::too_many_arguments)] // one call site; each part is a different thing
    pub(super) async fn recover(
        &self,
        scope: &RepoScope,
        job: &ReviewJob,
        pr: &PullRequest,
        config: &RepoConfig,
        run: &mut ReviewRun,
        review: Review,
        parley: &Handles,
    ) -> Result<(), ReviewError> {
        let github = self.services.github.as_ref();
        let store = self.services.store.as_ref();
        tracing::info!(repo = %run.repo, number = run.pr, head_sha = %run.head_sha, review_id = review.id, "review already on GitHub; recording it instead of posting again");
        let comments = github
            .list_review_comments_for_review(scope, job.number, review.id, PageLimit::pages(3))
            .await?;
        // Findings already stored keep their state: since the crash, a thread may have
        // been resolved or a dispute conceded, and recovery must not reopen them.
        let earlier = store.findings_for_pr(&run.repo, job.number).await?;
        let stored: HashSet<&str> = earlier.iter().map(|f| f.id.as_str()).collect();
        let mut recovered = Vec::new();
        for comment in &comments.items {
            // The review is Parley's (see `runs::review_on_github`), and so are its
            // comments; the author is checked anyway, as everywhere markers are read.
            let Some(marker) = markers::trusted::<FindingMarker>(
                comment.user.as_ref(),
                parley,
                &comment.body,
                markers::kind::FINDING,
            ) else {
                continue;
            };
            if !stored.contains(marker.id.as_str()) {
                let head_sha = runs::head_of(&run.head_sha).to_string();
                let finding = Finding {
                    review_id: Some(review.id),
                    comment_id: Some(comment.id),
                    ..marker.finding(
                        &run.repo,
                        job.number,
                        &comment.body,
                        head_sha,
                        OffsetDateTime::now_utc(),
                    )
                };
                // Only if still absent: one stored since the listing above keeps what
                // people decided about it.
                store.put_finding_if(&finding, None).await?;
            }
            recovered.push(candidate_from_marker(marker));
        }
        // What the review changed of earlier findings (closed, reopened, fixed), from its
        // marker: stored now unless it was before the crash, or people decided since (each
        // write is conditional on the finding as read above).
        let marker = runs::review_marker(&review, parley);
        let changed = marker
            .as_ref()
            .map(|m| &m.changed)
            .filter(|c| !c.is_empty());
        if let Some(changed) = changed {
            let changes = changed.replay(&earlier, review.submitted_at, OffsetDateTime::now_utc());
            lifecycle::write_back(store, &earlier, &changes).await?;
        }
        // Read (and the check concluded) before marking the run published: a failure
        // retries the whole recovery.
        let on_pr = store.findings_for_pr(&run.repo, job.number).await?;
        if let Some(changed) = changed {
            // Settling records outcomes and resolves threads, never a state the gate reads.
            fixed::settle(
                &self.services,
                scope,
                job.number,
                &changed.fixed_as_stored(&on_pr),
            )
            .await;
        }
        let repo_url = repo_url(pr, &job.repo.full_name());
        let pr_url = pr_url(pr, &repo_url);
        let automatic = !runs::is_manual(job.trigger);
        // Only findings still open count as this run's: one resolved since the crash must
        // not block again through the recovered list.
        let still_open: HashSet<&str> = on_pr
            .iter()
            .filter(|f| f.state == FindingState::Open)
            .map(|f| f.id.as_str())
            .collect();
        let recovered_ids: Vec<String> = comments
            .items
            .iter()
            .filter_map(|c| {
                markers::trusted::<FindingMarker>(
                    c.user.as_ref(),
                    parley,
                    &c.body,
                    markers::kind::FINDING,
                )
            })
            .map(|m| m.id)
            .collect();
        let reported: Vec<&Candidate> = recovered
            .iter()
            .zip(&recovered_ids)
            .filter(|(_, id)| still_open.contains(id.as_str()))
            .map(|(c, _)| c)
            .collect();
        let recovered_here: HashSet<&str> =
            recovered.iter().map(|c| c.fingerprint.as_str()).collect();
        // Whether the posted review was partial, from its own (trusted) marker; not
        // known means partial, so nothing blocking is `neutral`, never `success`.
        let partial = marker.is_none_or(|m| m.partial);
        let published = super::conclude::Published {
            automatic,
            partial,
            // The marker does not say; the check keeps the plain "No findings".
            nothing_read: false,
            // A recovered review was posted: the check links to it.
            reviewed: "",
            reported,
            on_pr: &on_pr,
            this_run: &recovered_here,
            repo_url: &repo_url,
            pr_url: &pr_url,
        };
        self.conclude_published(scope, run, config, Some(&review), published)
            .await?;
        // The crash may have come before the review was remembered for retrieval: do it
        // now, as publishing does (failing open), rather than wait for the PR's next review.
        let findings: Vec<Finding> = on_pr
            .into_iter()
            .filter(|f| f.review_id == Some(review.id))
            .collect();
        self.remember_recovered(scope, job.number, pr, config, &findings)
            .await;
        Ok(())
    }

    /// [`crate::retrieval::remember::review`] for a recovered review, which has no file
    /// listing of its own: one more read, and a failure only leaves the remembering to
    /// the PR's next review.
    pub(super) async fn remember_recovered(
        &self,
        scope: &RepoScope,
        number: u64,
        pr: &PullRequest,
        config: &RepoConfig,
        findings: &[Finding],
    ) {
        if !config.retrieval.enabled || !crate::retrieval::remember::admissible(pr) {
            return;
        }
        let files = match super::pull_files::PullFiles::fetch(
            self.services.github.as_ref(),
            scope,
            number,
        )
        .await
        {
            Ok(listing) => listing.files,
            Err(err) => {
                tracing::warn!(repo = %scope.full_name(), number, error = %err, "could not list the PR's files to remember the recovered review; its next review will");
                return;
            }
        };
        let repo = scope.tenant().repo;
        let pr_ref = crate::retrieval::documents::PrRef {
            repo: &repo,
            number,
            title: &pr.title,
        };
        crate::retrieval::remember::review(&self.services, config, pr_ref, &files, findings).await;
    }
}

fn candidate_from_marker(marker: FindingMarker) -> Candidate {
    Candidate {
        path: marker.path,
        line: marker.line,
        start_line: marker.start_line,
        severity: marker.severity,
        category: marker.category,
        confidence: marker.confidence,
        title: marker.title,
        body: String::new(),
        suggestion: None,
        passes: Vec::new(),
        fingerprint: marker.fingerprint,
        site: marker.site,
        // Not in the marker: the recovered finding is stored, not matched again.
        code: String::new(),
        on_diff: true,
        doubt: None,
    }
}
