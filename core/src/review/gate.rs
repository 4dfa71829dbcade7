//! The merge gate: a check run named "Parley review" on the reviewed head, concluded by
//! the head's automatic review only.
//!
//! Fail closed on findings, open on Parley's own trouble: `failure` only when an
//! automatic review found blocking findings (`gate.blockOn`, at or above the confidence
//! threshold); `neutral` for superseded runs and whenever Parley could not do its job. A
//! team that requires the check must never be blocked because an LLM provider was down.
//! Manual reviews (someone asked for advice, not a verdict) report `neutral` under a check
//! of their own, [`MANUAL_CHECK_NAME`], and never touch the gate.

use crate::config::GateConfig;
use crate::ports::github::{
    CheckConclusion, CheckRunOutput, CheckRunUpdate, CheckStatus, GitHub, NewCheckRun, RepoScope,
};
use crate::review::merge::Candidate;
use crate::review::summary::{line_link, severity_name, short};
use time::OffsetDateTime;

/// The check a team requires: only automatic reviews report under it.
pub const CHECK_NAME: &str = "Parley review";

/// The check of every manual review (`@parley review`, `@parley full review`). A name of
/// its own: GitHub's branch protection reads the newest check of a name, so a manual
/// (`neutral`) review under [`CHECK_NAME`] would lift the automatic review's `failure`, or
/// satisfy the required check before the automatic review ran at all.
pub const MANUAL_CHECK_NAME: &str = "Parley review (manual)";

/// The check name for the run `run_key` (see [`crate::review::runs::manual_key`]).
pub fn check_name(run_key: &str) -> &'static str {
    if crate::review::runs::is_manual_key(run_key) {
        MANUAL_CHECK_NAME
    } else {
        CHECK_NAME
    }
}

/// GitHub refuses check-run text over 65 535 characters.
const MAX_TEXT: usize = 60_000;

/// Start the check run, `in_progress`. A failure is logged and the review goes on without
/// a gate (fail open: the review itself is worth more than its check).
pub async fn start(
    github: &dyn GitHub,
    scope: &RepoScope,
    name: &str,
    head_sha: &str,
    external_id: &str,
) -> Option<u64> {
    let run = NewCheckRun {
        name: name.to_string(),
        head_sha: head_sha.to_string(),
        status: Some(CheckStatus::InProgress),
        conclusion: None,
        details_url: None,
        external_id: Some(external_id.to_string()),
        started_at: Some(OffsetDateTime::now_utc()),
        completed_at: None,
        output: Some(CheckRunOutput {
            title: "Reviewing".to_string(),
            summary: format!("Parley is reviewing `{}`.", short(head_sha)),
            text: None,
        }),
    };
    match github.create_check_run(scope, &run).await {
        Ok(run) => Some(run.id),
        Err(err) => {
            tracing::warn!(repo = %scope.full_name(), error = %err, "could not create the check run; reviewing without a gate");
            None
        }
    }
}

/// How a run ended, as far as the gate is concerned.
pub enum Verdict<'a> {
    Reviewed {
        automatic: bool,
        /// Every reported finding (inline or in the summary).
        reported: Vec<&'a Candidate>,
        /// Some passes failed: no blocking finding then means "not known", not "none".
        partial: bool,
        review_url: &'a str,
        repo_url: &'a str,
        head_sha: &'a str,
    },
    Superseded {
        by: &'a str,
    },
    /// Parley could not do its job.
    Trouble {
        reason: String,
    },
}

/// The conclusion and output for a verdict.
pub fn conclude(verdict: &Verdict<'_>, gate: &GateConfig) -> (CheckConclusion, CheckRunOutput) {
    match verdict {
        Verdict::Superseded { by } => (
            CheckConclusion::Neutral,
            CheckRunOutput {
                title: format!("Superseded by {}", short(by)),
                summary: format!(
                    "A newer commit ({by}) arrived before this review finished; it is reviewed instead."
                ),
                text: None,
            },
        ),
        Verdict::Trouble { reason } => (
            CheckConclusion::Neutral,
            CheckRunOutput {
                title: "Parley could not finish this review".to_string(),
                summary: format!(
                    "{reason}\n\nThis is Parley's problem, not the PR's, so the check does not block."
                ),
                text: None,
            },
        ),
        Verdict::Reviewed {
            automatic,
            reported,
            partial,
            review_url,
            repo_url,
            head_sha,
        } => {
            let blocking: Vec<&&Candidate> = reported
                .iter()
                .filter(|c| gate.block_on.contains(&c.severity))
                .collect();
            let conclusion = if !automatic {
                CheckConclusion::Neutral
            } else if !blocking.is_empty() {
                CheckConclusion::Failure
            } else if *partial {
                CheckConclusion::Neutral
            } else {
                CheckConclusion::Success
            };
            let title = match (blocking.len(), reported.len()) {
                (0, 0) => "No findings".to_string(),
                (0, n) => format!("{n} finding(s), none blocking"),
                (b, n) => format!("{b} blocking of {n} finding(s)"),
            };
            let mut summary = format!("[The review]({review_url})");
            if !automatic {
                summary.push_str(" was requested by hand; manual reviews advise and never block.");
            }
            if *partial {
                summary.push_str("\n\nSome specialist passes failed; see the review for which.");
            }
            let text = (!blocking.is_empty()).then(|| {
                let mut text = String::from("Blocking findings:\n\n");
                for c in &blocking {
                    text.push_str(&format!(
                        "- **[{}]** [{}]({}) — `{}:{}`\n",
                        severity_name(c.severity).to_uppercase(),
                        c.title,
                        line_link(repo_url, head_sha, c),
                        c.path,
                        c.line
                    ));
                }
                crate::sanitize::truncate(&text, MAX_TEXT)
            });
            (
                conclusion,
                CheckRunOutput {
                    title,
                    summary,
                    text,
                },
            )
        }
    }
}

/// Complete the check run. Failures are logged: the review is already posted.
pub async fn finish(
    github: &dyn GitHub,
    scope: &RepoScope,
    check_run_id: Option<u64>,
    conclusion: CheckConclusion,
    output: CheckRunOutput,
) {
    let Some(id) = check_run_id else { return };
    let update = CheckRunUpdate {
        status: Some(CheckStatus::Completed),
        conclusion: Some(conclusion),
        details_url: None,
        completed_at: Some(OffsetDateTime::now_utc()),
        output: Some(output),
    };
    if let Err(err) = github.update_check_run(scope, id, &update).await {
        tracing::warn!(repo = %scope.full_name(), check_run_id = id, error = %err, "could not complete the check run");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::Severity;

    fn finding(severity: Severity) -> Candidate {
        Candidate {
            path: "a.rs".into(),
            line: 3,
            start_line: None,
            severity,
            category: "bug".into(),
            confidence: 90,
            title: "t".into(),
            body: String::new(),
            suggestion: None,
            passes: vec![],
            fingerprint: "f".into(),
            on_diff: true,
        }
    }

    fn reviewed<'a>(automatic: bool, reported: Vec<&'a Candidate>, partial: bool) -> Verdict<'a> {
        Verdict::Reviewed {
            automatic,
            reported,
            partial,
            review_url: "u",
            repo_url: "https://github.com/o/r",
            head_sha: "abc",
        }
    }

    #[test]
    fn conclusions() {
        let gate = GateConfig::default();
        let high = finding(Severity::High);
        let low = finding(Severity::Low);
        assert_eq!(
            conclude(&reviewed(true, vec![&high], false), &gate).0,
            CheckConclusion::Failure
        );
        assert_eq!(
            conclude(&reviewed(true, vec![&high], true), &gate).0,
            CheckConclusion::Failure
        );
        assert_eq!(
            conclude(&reviewed(false, vec![&high], false), &gate).0,
            CheckConclusion::Neutral
        );
        assert_eq!(
            conclude(&reviewed(true, vec![&low], false), &gate).0,
            CheckConclusion::Success
        );
        assert_eq!(
            conclude(&reviewed(true, vec![&low], true), &gate).0,
            CheckConclusion::Neutral
        );
        let trouble = Verdict::Trouble {
            reason: "LLM down".into(),
        };
        assert_eq!(conclude(&trouble, &gate).0, CheckConclusion::Neutral);
        let (_, output) = conclude(&reviewed(true, vec![&high], false), &gate);
        assert!(
            output
                .text
                .unwrap()
                .contains("https://github.com/o/r/blob/abc/a.rs#L3")
        );
    }
}
