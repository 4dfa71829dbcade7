//! Whether an automatic review is wanted for a PR at all: its state, the trigger, draft,
//! the author, its labels and its base branch, as `.parley.yml` says. A manual request
//! passes whatever these say: someone asked.

use super::{inputs, pause, runs};
use crate::config::RepoConfig;
use crate::job::{ReviewJob, ReviewTrigger};
use crate::mention::Handles;
use crate::ports::github::PullRequest;
use crate::ports::{Store, StoreError};

/// Whether a review job goes ahead.
pub(super) enum Wanted {
    Go,
    /// Nothing to do, and the check is left as it is.
    Leave,
    /// Not reviewed, and the head's check says why; `owed` when the review was wanted but
    /// held back (the PR paused), which the gate counts as a review not given in full.
    Skip {
        reason: String,
        owed: bool,
    },
}

/// Whether `job` reviews anything: [`skip_reason`], then (for an automatic review) a
/// pause ([`super::pause`]). A store failure is the caller's.
pub(super) async fn wanted(
    store: &dyn Store,
    job: &ReviewJob,
    pr: &PullRequest,
    config: &RepoConfig,
    parley: &Handles,
) -> Result<Wanted, StoreError> {
    if job.trigger == ReviewTrigger::Unlabeled && !lifts_a_skip_label(job, config) {
        // Any other label coming off changes nothing, and must not touch the check.
        return Ok(Wanted::Leave);
    }
    if let Some(reason) = skip_reason(job, pr, config) {
        return Ok(Wanted::Skip {
            reason,
            owed: false,
        });
    }
    let repo = job.repo.tenant().repo;
    Ok(
        match !runs::is_manual(job.trigger) && pause::is_paused(store, &repo, job.number).await? {
            true => Wanted::Skip {
                reason: pause::reason(parley),
                owed: true,
            },
            false => Wanted::Go,
        },
    )
}

/// Why an automatic review is not wanted, if it is not. Manual requests pass: someone
/// asked explicitly, on a draft or not.
pub fn skip_reason(job: &ReviewJob, pr: &PullRequest, config: &RepoConfig) -> Option<String> {
    if pr.state != "open" {
        return Some(format!("the PR is {}", pr.state));
    }
    if runs::is_manual(job.trigger) {
        return None;
    }
    let triggers = &config.review.triggers;
    let enabled = match job.trigger {
        ReviewTrigger::Opened => triggers.opened,
        ReviewTrigger::Reopened => triggers.reopened,
        ReviewTrigger::ReadyForReview => triggers.ready_for_review,
        ReviewTrigger::Synchronize => triggers.synchronize,
        // Only a label that held reviews off gets this far (see `lifts_a_skip_label`).
        ReviewTrigger::Unlabeled => true,
        ReviewTrigger::ManualIncremental | ReviewTrigger::ManualFull => true,
        // Turned into the head's automatic review before it gets here (see `rerun`), or
        // answered without a review (see `let_through`).
        ReviewTrigger::Rerequested | ReviewTrigger::LetThrough => true,
        // Turned into the head's automatic review or a full review first (see `retarget`).
        ReviewTrigger::Retargeted => true,
    };
    if !enabled {
        return Some(format!("review.triggers turns {:?} off", job.trigger));
    }
    if pr.draft {
        return Some("the PR is a draft".to_string());
    }
    let author = &job.author.login;
    if config
        .review
        .skip_authors
        .iter()
        .any(|skipped| crate::config::names_login(skipped, author))
    {
        return Some(format!("{author} is in review.skipAuthors"));
    }
    if let Some(label) = pr
        .labels
        .iter()
        .find(|label| is_skip_label(config, &label.name))
    {
        return Some(format!(
            "it is labelled {} (review.skipLabels)",
            quoted(&label.name)
        ));
    }
    let base = &pr.base.ref_name;
    if !reviews_base(&config.review.base_branches, base) {
        return Some(format!(
            "its base branch {} is not in review.baseBranches",
            quoted(base)
        ));
    }
    None
}

/// Whether PRs into `base` are reviewed under `review.baseBranches` (`bases`): all are
/// where the list is empty.
pub fn reviews_base(bases: &[String], base: &str) -> bool {
    bases.is_empty() || inputs::glob_set(bases).is_match(base)
}

/// Whether the label an `unlabeled` job took off was holding automatic reviews off.
fn lifts_a_skip_label(job: &ReviewJob, config: &RepoConfig) -> bool {
    job.label
        .as_deref()
        .is_some_and(|removed| is_skip_label(config, removed))
}

/// Label names compare as GitHub compares them, without regard to case.
fn is_skip_label(config: &RepoConfig, name: &str) -> bool {
    config
        .review
        .skip_labels
        .iter()
        .any(|skip| skip.eq_ignore_ascii_case(name))
}

/// A name someone chose (a label, a branch), as inline code in Parley's text.
pub(super) fn quoted(name: &str) -> String {
    format!("`{}`", name.replace('`', "'"))
}
