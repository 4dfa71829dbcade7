//! The events of Parley's checks and of GitHub's merge queue: a button pressed on a check
//! ("Re-run", "Re-run all checks", "Let it through") and the queue asking for the checks
//! on its commit. Each becomes a job for the PR the check was made for, never one a
//! branch name alone could point at another PR's check.

use super::{Meta, Normalised, Step, bookkeeping, job, repo_ref};
use crate::job::{Actor, BookkeepingEvent, Job, ReviewJob, ReviewTrigger};
use crate::review::{gate, merge_queue, runs};
use crate::webhook::payload::{Check, CheckEvent, MergeGroupEvent, Repository, Text};
use crate::webhook::source::Source;

/// "Re-run" on a check of Parley's (see [`crate::review::rerun`]): the gate's, or a
/// manual review's, whose run the check's external id names. The PR is the one the check
/// was made for (its external id), which GitHub does not name for a fork's PR, else the
/// first GitHub names.
pub(super) fn check_run_rerequested<'de>(meta: &Meta<'_>, payload: &impl Source<'de>) -> Step {
    let event: CheckEvent<'de> = payload.decode()?;
    let check = event.check;
    let external_id = check.external_id.as_ref().map(Text::as_str);
    let rerun_of = match check.name.as_ref().map(Text::as_str) {
        Some(gate::CHECK_NAME) => match check.branch().and_then(merge_queue::queued_pr) {
            // Only a check Parley made for that PR on that commit: anyone who may push can
            // name a branch like the queue's, and GitHub sends this event only to the App
            // that made the check, so its external id is Parley's own word.
            Some(number)
                if external_id.is_some_and(|id| {
                    runs::pr_of_check(id) == Some(number)
                        && runs::run_key_of_check(id) == Some(check.head_sha.as_str())
                }) =>
            {
                return Ok(merge_group_job(
                    meta,
                    &event.repository,
                    (number, check.head_sha),
                    false,
                ));
            }
            _ => None,
        },
        Some(gate::MANUAL_CHECK_NAME) => match external_id.and_then(runs::run_key_of_check) {
            Some(key) if runs::is_manual_key(key) => Some(key.to_string()),
            _ => {
                return Ok(Normalised::Ignored(format!(
                    "check run {} names no manual review",
                    check.id
                )));
            }
        },
        _ => {
            return Ok(Normalised::Ignored(format!(
                "check run {} is not one of Parley's",
                check.id
            )));
        }
    };
    Ok(on_check(
        meta,
        &event.repository,
        check,
        ReviewTrigger::Rerequested,
        rerun_of,
    ))
}

/// "Let it through" pressed on a held gate check (see [`crate::review::let_through`]):
/// the PR is found as for a re-run; any other button, or a check not Parley's gate, is
/// ignored.
pub(super) fn check_run_requested_action<'de>(meta: &Meta<'_>, payload: &impl Source<'de>) -> Step {
    let event: CheckEvent<'de> = payload.decode()?;
    let check = event.check;
    let identifier = event
        .requested_action
        .as_ref()
        .map(|a| a.identifier.as_str());
    if check.name.as_ref().map(Text::as_str) != Some(gate::CHECK_NAME)
        || identifier != Some(gate::LET_THROUGH)
    {
        return Ok(Normalised::Ignored(format!(
            "check run {}: not an action Parley offers",
            check.id
        )));
    }
    Ok(on_check(
        meta,
        &event.repository,
        check,
        ReviewTrigger::LetThrough,
        None,
    ))
}

/// "Re-run all checks" on Parley's suite of a commit: its PR's gate is run again. GitHub
/// names no PR for a fork's; there the check's own "Re-run" does it.
pub(super) fn check_suite_rerequested<'de>(meta: &Meta<'_>, payload: &impl Source<'de>) -> Step {
    let event: CheckEvent<'de> = payload.decode()?;
    let suite = event.check;
    if let Some(number) = suite.branch().and_then(merge_queue::queued_pr) {
        // Named by its branch alone: judged only where Parley judged it for that PR.
        return Ok(merge_group_job(
            meta,
            &event.repository,
            (number, suite.head_sha),
            true,
        ));
    }
    let Some(pr) = suite.pull_requests.first() else {
        return Ok(Normalised::Ignored(format!(
            "check suite {} names no pull request (a fork's: re-run its check instead)",
            suite.id
        )));
    };
    Ok(rerun(
        meta,
        &event.repository,
        pr.number,
        suite.head_sha,
        ReviewTrigger::Rerequested,
        None,
    ))
}

/// A button pressed on one of Parley's checks, for the PR the check was made for: the one
/// its external id names (GitHub names no PR on a fork's checks), else the first GitHub
/// names; a check that names none is ignored.
fn on_check(
    meta: &Meta<'_>,
    repository: &Repository<'_>,
    check: Check<'_>,
    trigger: ReviewTrigger,
    rerun_of: Option<String>,
) -> Normalised {
    let number = check
        .external_id
        .as_ref()
        .and_then(|id| runs::pr_of_check(id.as_str()))
        .or_else(|| check.pull_requests.first().map(|pr| pr.number));
    match number {
        Some(number) => rerun(meta, repository, number, check.head_sha, trigger, rerun_of),
        None => Normalised::Ignored(format!("check run {} names no pull request", check.id)),
    }
}

/// What the delivery's sender asked of PR `number`'s gate at `head_sha` by a button on a
/// check: a re-run (or of the manual run `rerun_of`), or letting the head through.
fn rerun(
    meta: &Meta<'_>,
    repository: &Repository<'_>,
    number: u64,
    head_sha: Text<'_>,
    trigger: ReviewTrigger,
    rerun_of: Option<String>,
) -> Normalised {
    job(Job::Review(ReviewJob {
        delivery_id: meta.delivery_id.to_string(),
        installation_id: meta.installation_id,
        repo: repo_ref(repository),
        number,
        trigger,
        head_sha: head_sha.into_string(),
        base_sha: String::new(),
        base_ref: String::new(),
        before_sha: None,
        author: Actor {
            login: meta.sender.to_string(),
            kind: "User".to_string(),
        },
        title: String::new(),
        request: None,
        label: None,
        rerun_of,
        moved_from: None,
    }))
}

/// GitHub's merge queue asks for the required checks on its commit for a queued PR (see
/// [`crate::review::merge_queue`]): the PR its branch names. A branch of another shape
/// names no PR Parley could judge.
pub(super) fn merge_group<'de>(meta: &Meta<'_>, payload: &impl Source<'de>) -> Step {
    let event: MergeGroupEvent<'de> = payload.decode()?;
    let group = event.merge_group;
    let Some(number) = merge_queue::queued_pr(group.head_ref.as_str()) else {
        return Ok(Normalised::Ignored(format!(
            "merge group branch {} names no pull request",
            group.head_ref.as_str()
        )));
    };
    Ok(merge_group_job(
        meta,
        &event.repository,
        (number, group.head_sha),
        false,
    ))
}

/// Judge the merge queue's commit `group_head` for PR `number`: the queue asked, or
/// "Re-run" was pressed on Parley's check there (GitHub names the queue's branch on it,
/// not the PR; judging again loosens nothing, so who pressed it decides nothing).
/// `verify`: the PR was read from the commit's branch name alone.
fn merge_group_job(
    meta: &Meta<'_>,
    repository: &Repository<'_>,
    (number, group_head): (u64, Text<'_>),
    verify: bool,
) -> Normalised {
    bookkeeping(
        meta,
        BookkeepingEvent::MergeGroup {
            repo: repo_ref(repository),
            number,
            group_head: group_head.into_string(),
            verify,
        },
    )
}
