//! Posting the review and recording what it posted.
//!
//! One `COMMENT` review carries the summary and every inline finding, so a PR gets one
//! notification, not fifteen. If GitHub refuses the inline comments (422, usually a line
//! that is not in the diff any more), the same findings go into a summary-only review
//! with links to their lines. Afterwards the review's comments are listed and matched to
//! findings by their hidden markers, so each finding is stored with the comment id a
//! reply in its thread will carry.

use crate::job::{ReviewJob, ReviewTrigger};
use crate::markers::{self, FindingMarker};
use crate::ports::github::{
    DiffSide, GitHub, GitHubError, NewReview, NewReviewComment, PageLimit, RepoScope, Review,
    ReviewEvent,
};
use crate::ports::{Finding, Store, StoreError};
use crate::review::merge::Candidate;
use crate::review::{filter, lifecycle, runs};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use time::OffsetDateTime;

/// A finding with the id it is posted and stored under.
#[derive(Debug, Clone)]
pub struct Identified {
    pub id: String,
    pub candidate: Candidate,
}

impl Identified {
    /// The id is derived from the fingerprint and head, so a retried job that recomputes
    /// the same finding gives it the same id (and the store record is replaced, not
    /// duplicated).
    pub fn new(candidate: Candidate, head_sha: &str) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(candidate.fingerprint.as_bytes());
        hasher.update(head_sha.as_bytes());
        let id = format!("f_{}", hex::encode(&hasher.finalize()[..6]));
        Identified { id, candidate }
    }

    pub fn marker(&self) -> FindingMarker {
        let c = &self.candidate;
        FindingMarker {
            id: self.id.clone(),
            fingerprint: c.fingerprint.clone(),
            severity: c.severity,
            category: c.category.clone(),
            confidence: c.confidence,
            path: c.path.clone(),
            start_line: c.start_line,
            line: c.line,
            title: c.title.clone(),
            site: c.site.clone(),
        }
    }
}

/// What was posted.
#[derive(Debug, Clone)]
pub struct Posted {
    pub review: Review,
    /// GitHub refused the inline comments; the findings are in the summary.
    pub fallback: bool,
}

/// Post the review: inline first, summary-only if GitHub refuses the inline comments.
pub async fn post_review(
    github: &dyn GitHub,
    scope: &RepoScope,
    number: u64,
    head_sha: &str,
    inline: &[Identified],
    body: &str,
    fallback_body: &str,
) -> Result<Posted, GitHubError> {
    let review = NewReview {
        commit_id: Some(head_sha.to_string()),
        body: body.to_string(),
        event: ReviewEvent::Comment,
        comments: inline.iter().map(inline_comment).collect(),
    };
    match github.create_review(scope, number, &review).await {
        Ok(review) => Ok(Posted {
            review,
            fallback: false,
        }),
        Err(GitHubError::Unprocessable { message, errors }) if !inline.is_empty() => {
            tracing::warn!(
                repo = %scope.full_name(), number, %message, details = errors.len(),
                "GitHub refused the inline review; posting the findings in the summary"
            );
            let summary_only = NewReview {
                comments: Vec::new(),
                body: fallback_body.to_string(),
                ..review
            };
            let review = github.create_review(scope, number, &summary_only).await?;
            Ok(Posted {
                review,
                fallback: true,
            })
        }
        Err(err) => Err(err),
    }
}

fn inline_comment(finding: &Identified) -> NewReviewComment {
    let c = &finding.candidate;
    NewReviewComment {
        path: c.path.clone(),
        body: comment_body(finding),
        line: c.line,
        side: Some(DiffSide::Right),
        start_line: c.start_line,
        start_side: c.start_line.map(|_| DiffSide::Right),
    }
}

/// Severity, category and confidence up front; the body; a suggestion block when there
/// is a replacement; the hidden marker last.
pub fn comment_body(finding: &Identified) -> String {
    let c = &finding.candidate;
    let mut body = format!(
        "**[{}] {}** · confidence {}%\n\n**{}**\n\n{}",
        c.severity.name().to_uppercase(),
        c.category,
        c.confidence,
        c.title,
        c.body
    );
    if let Some(note) = c.doubt_note() {
        body.push_str(&format!("\n\n> {note}"));
    }
    if let Some(suggestion) = &c.suggestion {
        // A fence longer than any backtick run inside keeps the suggestion intact.
        let fence = "`".repeat(longest_backtick_run(suggestion).max(2) + 1);
        body.push_str(&format!(
            "\n\n{fence}suggestion\n{}\n{fence}",
            suggestion.trim_end_matches('\n')
        ));
    }
    markers::append(&body, markers::kind::FINDING, &finding.marker())
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// Store every finding of the review, each inline one with the GitHub comment id found by
/// its marker among the review's comments. Findings that went to the summary are stored
/// without a comment id: they still count as posted for the next review's dedupe.
#[allow(clippy::too_many_arguments)] // one call site; the parts are all different things
pub async fn record_findings(
    github: &dyn GitHub,
    store: &dyn Store,
    scope: &RepoScope,
    number: u64,
    head_sha: &str,
    review_id: u64,
    inline: &[Identified],
    in_summary: &[Identified],
) -> Result<usize, RecordError> {
    let comment_ids = if inline.is_empty() {
        HashMap::new()
    } else {
        comment_ids_by_marker(github, scope, number, review_id).await?
    };
    let repo = scope.tenant().repo;
    let now = OffsetDateTime::now_utc();
    for finding in inline.iter().chain(in_summary.iter()) {
        // What the marker on GitHub says of it, with the body the model wrote and where
        // the review put it.
        let record = Finding {
            body: finding.candidate.body.clone(),
            review_id: Some(review_id),
            comment_id: comment_ids.get(&finding.id).copied(),
            doubt: finding.candidate.doubt.clone(),
            ..finding
                .marker()
                .finding(&repo, number, "", head_sha.to_string(), now)
        };
        store_new(store, &record).await?;
    }
    Ok(comment_ids.len())
}

/// Store a finding this review posted. A finding of the same id already stored (the same
/// finding on the same head, stored by an earlier attempt of this run) keeps what people
/// decided about it since; only the review's own fields (where it was posted) are
/// brought up to date. A blind write here would reopen a finding resolved or conceded in
/// between, and drop its outcome, which would then be counted again.
async fn store_new(store: &dyn Store, record: &Finding) -> Result<(), StoreError> {
    for _ in 0..5 {
        if store.put_finding_if(record, None).await? {
            return Ok(());
        }
        let Some(stored) = store
            .findings_for_pr(&record.repo, record.pr)
            .await?
            .into_iter()
            .find(|f| f.id == record.id)
        else {
            continue;
        };
        let merged = Finding {
            review_id: record.review_id.or(stored.review_id),
            comment_id: record.comment_id.or(stored.comment_id),
            ..stored.clone()
        };
        if merged == stored || store.put_finding_if(&merged, Some(&stored)).await? {
            return Ok(());
        }
    }
    Err(StoreError::Unavailable(format!(
        "finding {} kept changing while the review stored it",
        record.id
    )))
}

/// Finding id → comment id for the comments of `review_id` that carry a finding marker.
pub async fn comment_ids_by_marker(
    github: &dyn GitHub,
    scope: &RepoScope,
    number: u64,
    review_id: u64,
) -> Result<HashMap<String, u64>, GitHubError> {
    let comments = github
        .list_review_comments_for_review(scope, number, review_id, PageLimit::pages(3))
        .await?;
    Ok(comments
        .items
        .iter()
        .filter_map(|comment| {
            let marker: FindingMarker = markers::find(&comment.body, markers::kind::FINDING)?;
            Some((marker.id, comment.id))
        })
        .collect())
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Whether this run posts no review: a push whose commits, or a move to another base
/// whose new diff, give Parley nothing new to say. The head's check still says it was
/// reviewed (and what of the PR's findings still blocks), but a busy PR does not get a
/// "no findings" review, and a notification to everyone watching it, for every push, nor
/// every PR of a stack GitHub moves to the base when the PR below is merged. Only a
/// review no one asked for by name (of a push's commits, or of what a move brings;
/// `runs::is_retarget_job`), complete, that reports nothing, changes no earlier finding's
/// state, and has no `.parley.yml` warning to show; anything else is said in a review as
/// before.
pub(super) fn quiet(
    job: &ReviewJob,
    incremental: bool,
    filtered: &filter::Filtered,
    changes: &lifecycle::Changes,
    partial: bool,
    warnings: &[crate::config::ConfigWarning],
) -> bool {
    (job.trigger == ReviewTrigger::Synchronize || runs::is_retarget_job(job))
        && incremental
        && !partial
        && filtered.reported().next().is_none()
        && !changes.any()
        && warnings.is_empty()
}
