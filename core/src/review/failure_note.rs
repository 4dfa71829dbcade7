//! The one note on a PR that says Parley could not review a head. A model or provider
//! that stays broken over several pushes fails every one of them; a new comment for each
//! would be the noise a team installs a reviewer to avoid. So the PR has one such note,
//! edited in place (an edit notifies nobody): it names the newest head it could not
//! review and lists the earlier ones. The check run on each head says the same. Once a
//! later review is posted the note says so, so that nobody reading the PR takes an old
//! failure for how things stand.

use super::{ReviewError, ReviewHandler, gate, runs, summary};
use crate::markers;
use crate::mention::Handles;
use crate::ports::github::{GitHubError, PageLimit, RepoScope};
use crate::ports::{Claim, RunState};
use serde::{Deserialize, Serialize};

/// The marker on the note: the heads it has reported, oldest first.
const REVIEW_FAILED: &str = "review-failed";
/// Heads the marker remembers (and the note lists, less the newest).
const HEADS_KEPT: usize = 10;
/// How far back the PR's comments are read for the note.
const LISTING: PageLimit = PageLimit::pages(10);

#[derive(Debug, Default, Serialize, Deserialize)]
struct FailedHeads {
    heads: Vec<String>,
}

impl ReviewHandler {
    /// Say on the PR that `head_sha` could not be reviewed and why (public words), once
    /// per head whatever the number of jobs that fail on it, in Parley's existing note
    /// when the PR has one. Best effort: the check run already says the same.
    pub(super) async fn report_failure(
        &self,
        scope: &RepoScope,
        number: u64,
        head_sha: &str,
        parley: &Handles,
        err: &ReviewError,
        tries: Option<u32>,
    ) {
        let store = self.services.store.as_ref();
        let key = note_key(&scope.tenant().repo, number, head_sha);
        if !self.claim_once(&key).await {
            return;
        }
        let earlier = self.failure_note(scope, number, parley).await;
        let mut heads = earlier
            .as_ref()
            .map(|(_, marker)| marker.heads.clone())
            .unwrap_or_default();
        heads.retain(|h| h != head_sha);
        let text = note_text(head_sha, &heads, parley, err, tries);
        heads.push(head_sha.to_string());
        let excess = heads.len().saturating_sub(HEADS_KEPT);
        heads.drain(..excess);
        let body = markers::append(&text, REVIEW_FAILED, &FailedHeads { heads });
        let github = self.services.github.as_ref();
        let posted = match earlier {
            Some((id, _)) => match github.update_issue_comment(scope, id, &body).await {
                // Deleted since it was listed: a new one.
                Err(GitHubError::NotFound(_)) => {
                    github.create_issue_comment(scope, number, &body).await
                }
                other => other,
            },
            None => github.create_issue_comment(scope, number, &body).await,
        };
        if let Err(post_err) = posted {
            tracing::warn!(error = %post_err, "could not post the review-failure note");
            let _ = store.release(&key).await;
        }
    }

    /// After a review of `head_sha` was posted (at `review_url`): Parley's failure note on
    /// the PR, when a head it could not review has one, says that the PR was reviewed
    /// since. Once per failed head: the runs the store keeps tell whether there is a note
    /// to settle, so a PR that never failed costs no listing of its comments. Best effort.
    pub(super) async fn settle_failure_note(
        &self,
        scope: &RepoScope,
        number: u64,
        head_sha: &str,
        review_url: Option<&str>,
        parley: &Handles,
    ) {
        let store = self.services.store.as_ref();
        let repo = &scope.tenant().repo;
        let mut failed = match store.review_runs(repo, number).await {
            Ok(runs) => runs
                .into_iter()
                .filter(|run| run.state == RunState::Failed)
                .collect::<Vec<_>>(),
            Err(err) => {
                tracing::warn!(error = %err, "could not read the PR's runs for the review-failure note");
                return;
            }
        };
        failed.sort_by_key(|run| run.finished_at.unwrap_or(run.started_at));
        // The newest failed head the note names: the note is settled for it at most once.
        let mut noted = None;
        for run in failed.iter().rev() {
            let (failed_head, _) = runs::parse_key(&run.head_sha);
            if store
                .is_claimed(&note_key(repo, number, failed_head))
                .await
                .unwrap_or(false)
            {
                noted = Some(failed_head);
                break;
            }
        }
        let Some(failed_head) = noted else {
            return;
        };
        let key = format!("review-failed-settled#{repo}#{number}#{failed_head}");
        if !self.claim_once(&key).await {
            return;
        }
        let Some((id, marker)) = self.failure_note(scope, number, parley).await else {
            return;
        };
        let text = settled_text(&marker.heads, head_sha, review_url);
        let body = markers::append(&text, REVIEW_FAILED, &marker);
        match self
            .services
            .github
            .update_issue_comment(scope, id, &body)
            .await
        {
            // Deleted: nothing left to settle.
            Ok(_) | Err(GitHubError::NotFound(_)) => {}
            Err(err) => {
                tracing::warn!(error = %err, "could not settle the review-failure note");
                let _ = store.release(&key).await;
            }
        }
    }

    /// Claim `key` for as long as Parley keeps a PR's records; false when it was claimed
    /// before or the store cannot say (then nothing is posted: the check run says it).
    async fn claim_once(&self, key: &str) -> bool {
        match self
            .services
            .store
            .claim(key, crate::conversation::RECORD_TTL)
            .await
        {
            Ok(Claim::Won) => true,
            Ok(Claim::AlreadyClaimed) => false,
            Err(err) => {
                tracing::warn!(error = %err, %key, "could not claim the review-failure note");
                false
            }
        }
    }

    /// Parley's latest failure note on the PR and what its marker says; `None` when there
    /// is none or the comments cannot be read (a new note then, rather than none). Only
    /// Parley's own comments count: anyone can type the marker.
    async fn failure_note(
        &self,
        scope: &RepoScope,
        number: u64,
        parley: &Handles,
    ) -> Option<(u64, FailedHeads)> {
        let listing = self
            .services
            .github
            .list_issue_comments(scope, number, None, LISTING)
            .await;
        match listing {
            Ok(listing) => listing.items.into_iter().rev().find_map(|c| {
                markers::trusted::<FailedHeads>(c.user.as_ref(), parley, &c.body, REVIEW_FAILED)
                    .map(|marker| (c.id, marker))
            }),
            Err(err) => {
                tracing::warn!(error = %err, "could not read the PR's comments for the review-failure note");
                None
            }
        }
    }
}

/// The claim that a note was posted for `head_sha`: one note per head whatever the number
/// of jobs that fail on it.
fn note_key(repo: &str, number: u64, head_sha: &str) -> String {
    format!("review-failed#{repo}#{number}#{head_sha}")
}

/// The note once `reviewed` was: the heads it could not review (newest first), and where
/// the later review is. The marker keeps the heads, so a later failure still lists them.
fn settled_text(failed: &[String], reviewed: &str, review_url: Option<&str>) -> String {
    let heads: Vec<String> = failed
        .iter()
        .rev()
        .map(|h| format!("`{}`", summary::short(h)))
        .collect();
    let reviewed = match review_url {
        Some(url) => format!("posted [a review]({url}) of `{}`", summary::short(reviewed)),
        // A push with nothing new posts no review; its check says so.
        None => format!("reviewed `{}`", summary::short(reviewed)),
    };
    format!(
        "Parley could not review {}; it has since {reviewed}, so this note is only history.",
        heads.join(", "),
    )
}

/// What failed on `head_sha`, what to do, and the heads reported before it (newest first).
fn note_text(
    head_sha: &str,
    earlier: &[String],
    parley: &Handles,
    err: &ReviewError,
    tries: Option<u32>,
) -> String {
    let after = match tries {
        Some(n) if n > 1 => format!(" after {n} attempts"),
        _ => String::new(),
    };
    let mut text = format!(
        "Parley could not review `{}`{after}: {}. It will not try this commit again by \
         itself: press \"Re-run\" on its **{}** check, push a new commit, or comment {} to \
         ask again.",
        summary::short(head_sha),
        err.public_reason(),
        gate::CHECK_NAME,
        parley.command("review"),
    );
    if !earlier.is_empty() {
        let listed: Vec<String> = earlier
            .iter()
            .rev()
            .map(|h| format!("`{}`", summary::short(h)))
            .collect();
        text.push_str(&format!(
            "\n\nEarlier commits it could not review: {}.",
            listed.join(", ")
        ));
    }
    text
}
