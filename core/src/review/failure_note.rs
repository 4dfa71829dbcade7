//! The one note on a PR that says Parley could not review a head. A model or provider
//! that stays broken over several pushes fails every one of them; a new comment for each
//! would be the noise a team installs a reviewer to avoid. So the PR has one such note,
//! edited in place (an edit notifies nobody): it names the newest head it could not
//! review and lists the earlier ones. The check run on each head says the same.

use super::{ReviewError, ReviewHandler, summary};
use crate::markers;
use crate::mention::Handles;
use crate::ports::github::{GitHubError, PageLimit, RepoScope};
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
        let key = format!("review-failed#{}#{number}#{head_sha}", scope.tenant().repo);
        match store.claim(&key, crate::conversation::RECORD_TTL).await {
            Ok(crate::ports::Claim::Won) => {}
            Ok(crate::ports::Claim::AlreadyClaimed) => return,
            Err(store_err) => {
                tracing::warn!(error = %store_err, "could not claim the review-failure note");
                return;
            }
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
        "Parley could not review `{}`{after}: {}. It will not try this commit again; \
         push a new commit or comment {} to ask again.",
        summary::short(head_sha),
        err.public_reason(),
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
