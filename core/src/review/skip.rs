//! Whether an automatic review is wanted for a PR at all: its state, the trigger, draft,
//! the author, its labels and its base branch, as `.parley.yml` says. A manual request
//! passes whatever these say: someone asked.

use super::{inputs, runs};
use crate::config::RepoConfig;
use crate::job::{ReviewJob, ReviewTrigger};
use crate::ports::github::PullRequest;

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
    let bases = &config.review.base_branches;
    let base = &pr.base.ref_name;
    if !bases.is_empty() && !inputs::glob_set(bases).is_match(base) {
        return Some(format!(
            "its base branch {} is not in review.baseBranches",
            quoted(base)
        ));
    }
    None
}

/// Whether the label an `unlabeled` job took off was holding automatic reviews off.
pub(super) fn lifts_a_skip_label(job: &ReviewJob, config: &RepoConfig) -> bool {
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
