//! The merge gate: a check run named "Parley review" on the reviewed head, concluded by
//! the head's automatic review only.
//!
//! Fail closed on findings, open on Parley's own trouble: `failure` only when an
//! automatic review concludes with blocking findings (`gate.blockOn`, at or above the
//! confidence threshold) open on the PR, found by it or by an earlier review and not
//! resolved or conceded since ([`open_blocking`]; [`crate::review::regate`] judges again
//! when that changes), also when the head's own review was skipped or failed, which lifts
//! nothing; `neutral` for superseded runs and whenever Parley could not do its job. A
//! team that requires the check must never be blocked because an LLM provider was down,
//! unless it chose to be: with `gate.incomplete: hold` a head not reviewed in full (Parley's
//! trouble, or a PR whose own content left the review partial) is `action_required`,
//! which branch protection does not let through, instead of `neutral` ([`not_in_full`]).
//! Manual reviews (someone asked for advice, not a verdict) report `neutral` under a check
//! of their own, [`MANUAL_CHECK_NAME`], and never touch the gate.

use crate::config::{GateConfig, Incomplete, RepoConfig};
use crate::ports::github::{CheckConclusion, CheckRunOutput};
use crate::ports::{Finding, FindingState};
use crate::review::merge::Candidate;

mod check_run;
pub mod protection;
use crate::review::summary::{line_link, short};
#[cfg(test)]
use check_run::let_through_action;
pub use check_run::{
    CHECK_NAME, Check, LET_THROUGH, MANUAL_CHECK_NAME, check_name, complete, finish, publish, start,
};
use std::collections::HashSet;

/// What the check says of a partial review. The run's marker keeps only that it was
/// partial, not why, so this names both causes.
const PARTIAL: &str = "\n\nThe review was partial (a specialist pass failed, or changed files went unread), so nothing blocking is not reported as a pass; the review says what it did not cover.";

/// Said by a check held for want of a complete review (see [`not_in_full`]).
const HELD: &str = "\n\nThis repository holds the merge until its head is reviewed in full (`gate.incomplete: hold` in `.parley.yml`): press Re-run on this check once the cause is gone (the model back, the budget raised; files over `review.maxPatchTokens` need a larger budget or more `review.maxParts`). Or someone with `gate.resolveBy` on the repository, other than the PR's author, presses **Let it through** above: the gate then passes this head without a complete review (blocking findings still block).";

/// The conclusion of an automatic review's check when nothing blocks but the head was not
/// reviewed in full, and what it adds to the summary: `neutral` lets a required check
/// through, `action_required` (`gate.incomplete: hold`) does not, unless someone let the
/// head through (`let_through_by`, see [`crate::review::let_through`]): that holds for
/// every later conclusion of the head, so a retry or a re-judging does not hold it again.
fn not_in_full(gate: &GateConfig, let_through_by: Option<&str>) -> (CheckConclusion, String) {
    match (gate.incomplete, let_through_by) {
        (Incomplete::Pass, _) => (CheckConclusion::Neutral, String::new()),
        (Incomplete::Hold, Some(who)) => (
            CheckConclusion::Neutral,
            format!(
                "\n\n@{who} let this head through without a complete review (`gate.incomplete: hold`); a blocking finding would still block."
            ),
        ),
        (Incomplete::Hold, None) => (CheckConclusion::ActionRequired, HELD.to_string()),
    }
}

/// How a run ended, as far as the gate is concerned.
pub enum Verdict<'a> {
    Reviewed {
        automatic: bool,
        /// Every finding this run reported (inline or in the summary).
        reported: Vec<&'a Candidate>,
        /// Blocking findings of earlier reviews of the PR that are still open (see
        /// [`open_blocking`]): they block this head too. Without them an incremental
        /// review, which only sees the new commits, would pass any push that leaves an
        /// old blocking finding alone. Empty for manual reviews.
        earlier_open: Vec<&'a Finding>,
        /// Some passes failed or files went unread: no blocking finding then means "not
        /// known", not "none".
        partial: bool,
        /// No changed file was read (all skipped, binary or without a readable patch): the
        /// title then says so, where "No findings" would claim the change was checked.
        nothing_read: bool,
        /// `None`: a push with nothing new to say, which posted no review.
        review_url: Option<&'a str>,
        /// Who let the head through without a complete review, before this run ended
        /// ([`not_in_full`]).
        let_through_by: Option<&'a str>,
        /// What was reviewed (the range and its files), said by the check when no review
        /// was posted to say it.
        reviewed: &'a str,
        repo_url: &'a str,
        /// The PR's web page, to link earlier findings to their discussion threads.
        pr_url: &'a str,
        head_sha: &'a str,
    },
    /// The head's automatic review stands, but a finding changed state since (a thread
    /// resolved or unresolved, a dispute conceded): the gate judged again from the PR's
    /// open findings, see [`crate::review::regate`].
    Regated {
        cause: RegateCause,
        /// The PR's open blocking findings.
        open: Vec<&'a Finding>,
        /// Whether the head's review was partial; `None` when that could not be told, in
        /// which case nothing blocking is `neutral` (not known), never `success`.
        partial: Option<bool>,
        /// Who let the head through without a complete review ([`not_in_full`]).
        let_through_by: Option<&'a str>,
        review_url: &'a str,
        repo_url: &'a str,
        pr_url: &'a str,
    },
    Superseded {
        by: &'a str,
    },
    /// The automatic review was not wanted (draft, trigger off, author skipped): nothing
    /// was reviewed, but the PR's open blocking findings still block.
    Skipped {
        reason: &'a str,
        open: Vec<&'a Finding>,
        repo_url: &'a str,
        pr_url: &'a str,
        /// The review was owed but not given (the installation's budget spent), as
        /// against one the team's settings chose to skip: the head is then not reviewed in
        /// full ([`not_in_full`]), unless someone let it through (`let_through_by`).
        owed: bool,
        let_through_by: Option<&'a str>,
    },
    /// Parley could not do its job.
    Trouble {
        reason: String,
        /// The head's automatic review (the gate), not a manual one's check, which
        /// advises and is always `neutral`.
        automatic: bool,
        /// The PR's open blocking findings (automatic reviews), as for
        /// [`Verdict::Skipped`]: a review that failed must not lift a `failure` either, or
        /// a push whose review fails (the model down, or a diff that derails every pass)
        /// would get a PR with an open blocking finding past the gate. Empty when they
        /// could not be read (the store may be what failed).
        open: Vec<&'a Finding>,
        repo_url: &'a str,
        pr_url: &'a str,
        /// Who let the head through without a complete review ([`not_in_full`]).
        let_through_by: Option<&'a str>,
    },
}

/// What made the gate be judged again, said by the new check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegateCause {
    /// A thread resolved or reopened, a dispute settled, a finding dismissed.
    FindingChanged,
    /// A manual review published what changes the gate: a blocking finding, findings
    /// closed or reopened, or the whole head reviewed after a partial review.
    ManualReview,
    /// "Re-run" pressed on the check (see [`crate::review::rerun`]).
    Rerequested,
    /// "Let it through" pressed on a held check (see [`crate::review::let_through`]).
    LetThrough,
    /// "Let it through" pressed by someone who may not: the PR's author, or someone
    /// below `gate.resolveBy`.
    LetThroughRefused,
    /// The PR moved to another base branch and was reviewed against it (see
    /// [`crate::review::retarget`]).
    Retargeted,
    /// GitHub's merge queue asked for the gate on its commit for the PR (see
    /// [`crate::review::merge_queue`]).
    MergeGroup,
}

impl RegateCause {
    fn said(self) -> &'static str {
        match self {
            Self::FindingChanged => {
                "a finding changed state (a thread resolved or reopened, a dispute settled, or a finding dismissed)"
            }
            Self::ManualReview => "a review of this PR requested by hand",
            Self::Rerequested => "Re-run was asked for",
            Self::LetThrough => "someone let this head through without a complete review",
            Self::LetThroughRefused => {
                "someone asked to let this head through who may not (the PR's author, or someone without `gate.resolveBy`)"
            }
            Self::Retargeted => "the PR moved to another base branch and was reviewed against it",
            Self::MergeGroup => "the merge queue asked for it on its commit for this PR",
        }
    }
}

/// The PR's findings that block the gate: still [`FindingState::Open`] (nobody resolved
/// the thread, Parley did not concede), a severity in `gate.blockOn`, at or above
/// `review.minConfidence`, and not among `except` (fingerprints a run lists itself).
pub fn open_blocking<'a>(
    findings: &'a [Finding],
    gate: &GateConfig,
    min_confidence: u8,
    except: &HashSet<&str>,
) -> Vec<&'a Finding> {
    findings
        .iter()
        .filter(|f| {
            f.state == FindingState::Open
                && gate.block_on.contains(&f.severity)
                && f.confidence >= min_confidence
                && !except.contains(f.fingerprint.as_str())
        })
        .collect()
}

/// The PR's open blocking findings under `config`, none excepted: what still blocks a head
/// whatever its own review did.
pub fn still_blocking<'a>(findings: &'a [Finding], config: &RepoConfig) -> Vec<&'a Finding> {
    open_blocking(
        findings,
        &config.gate,
        config.review.min_confidence,
        &HashSet::new(),
    )
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
        Verdict::Skipped {
            reason,
            open,
            repo_url,
            pr_url,
            owed,
            let_through_by,
        } => {
            let open = blocking_findings(open, gate);
            let mut summary = format!("Parley did not review this commit: {reason}.");
            if open.is_empty() {
                let (conclusion, held) = if *owed {
                    not_in_full(gate, *let_through_by)
                } else {
                    (CheckConclusion::Neutral, String::new())
                };
                summary.push_str(&held);
                (
                    conclusion,
                    CheckRunOutput {
                        title: "Not reviewed".to_string(),
                        summary,
                        text: None,
                    },
                )
            } else {
                (
                    CheckConclusion::Failure,
                    CheckRunOutput {
                        title: format!(
                            "Not reviewed; {} blocking finding(s) from earlier reviews still open",
                            open.len()
                        ),
                        summary,
                        text: Some(earlier_list(&open, repo_url, pr_url)),
                    },
                )
            }
        }
        Verdict::Trouble {
            reason,
            automatic,
            open,
            repo_url,
            pr_url,
            let_through_by,
        } => {
            let open = if *automatic {
                blocking_findings(open, gate)
            } else {
                Vec::new()
            };
            if !open.is_empty() {
                return (
                    CheckConclusion::Failure,
                    CheckRunOutput {
                        title: format!(
                            "Parley could not finish this review; {} blocking finding(s) from earlier reviews still open",
                            open.len()
                        ),
                        summary: format!(
                            "{reason}\n\nParley tries again by itself. Meanwhile the PR's open blocking findings still block: a review that failed lifts none."
                        ),
                        text: Some(earlier_list(&open, repo_url, pr_url)),
                    },
                );
            }
            let (conclusion, held) = if *automatic {
                not_in_full(gate, *let_through_by)
            } else {
                (CheckConclusion::Neutral, String::new())
            };
            let blocks = if conclusion != CheckConclusion::ActionRequired {
                "so the check does not block"
            } else {
                "but this repository waits for a complete review"
            };
            (
                conclusion,
                CheckRunOutput {
                    title: "Parley could not finish this review".to_string(),
                    summary: format!(
                        "{reason}\n\nThis is Parley's problem, not the PR's, {blocks}. \
                         Parley tries again by itself; if it gives up, a note on the PR says how to ask again.{held}"
                    ),
                    text: None,
                },
            )
        }
        Verdict::Reviewed {
            automatic,
            reported,
            earlier_open,
            partial,
            nothing_read,
            review_url,
            let_through_by,
            reviewed,
            repo_url,
            pr_url,
            head_sha,
        } => {
            let blocking: Vec<&&Candidate> = reported
                .iter()
                .filter(|c| gate.block_on.contains(&c.severity))
                .collect();
            let earlier: Vec<&Finding> = if *automatic {
                blocking_findings(earlier_open, gate)
            } else {
                Vec::new()
            };
            let (conclusion, held) = if !automatic {
                (CheckConclusion::Neutral, String::new())
            } else if !blocking.is_empty() || !earlier.is_empty() {
                (CheckConclusion::Failure, String::new())
            } else if *partial {
                not_in_full(gate, *let_through_by)
            } else {
                (CheckConclusion::Success, String::new())
            };
            let mut title = match (blocking.len(), reported.len()) {
                (0, 0) if *nothing_read => "Nothing to review".to_string(),
                (0, 0) if review_url.is_none() => "No new findings".to_string(),
                (0, 0) => "No findings".to_string(),
                (0, n) => format!("{n} finding(s), none blocking"),
                (b, n) => format!("{b} blocking of {n} finding(s)"),
            };
            if !earlier.is_empty() {
                title.push_str(&format!(
                    "; {} blocking from earlier reviews still open",
                    earlier.len()
                ));
            } else if *partial && blocking.is_empty() {
                // What a `neutral` says, on the line branch protection shows.
                title.push_str("; the review was partial");
            }
            let mut summary = match review_url {
                Some(url) => format!("[The review]({url})"),
                None => format!(
                    "Reviewed {reviewed}: nothing new to say, so no review was posted; the findings on [the PR]({pr_url}) stand."
                ),
            };
            if !automatic {
                // A manual review, or one of what a move to another base brings.
                summary.push_str(if review_url.is_some() {
                    " is not the head's automatic review: this check never blocks, and what it finds counts on the **Parley review** check."
                } else {
                    " This check never blocks, and what a review finds counts on the **Parley review** check."
                });
            }
            if *partial {
                summary.push_str(PARTIAL);
                summary.push_str(&held);
            } else if *nothing_read {
                summary.push_str(if review_url.is_some() {
                    "\n\nNo changed file could be reviewed; the review says why."
                } else {
                    "\n\nNo file they change could be reviewed (skipped, binary, or without a patch)."
                });
            }
            let mut text = String::new();
            if !blocking.is_empty() {
                text.push_str("Blocking findings:\n\n");
                for c in &blocking {
                    text.push_str(&format!(
                        "- **[{}]** [{}]({}) — `{}:{}`{}\n",
                        c.severity.name().to_uppercase(),
                        c.title,
                        line_link(repo_url, head_sha, c),
                        c.path,
                        c.line,
                        doubted(c.doubt.is_some())
                    ));
                }
            }
            if !earlier.is_empty() {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&earlier_list(&earlier, repo_url, pr_url));
            }
            (
                conclusion,
                CheckRunOutput {
                    title,
                    summary,
                    text: (!text.is_empty()).then_some(text),
                },
            )
        }
        Verdict::Regated {
            cause,
            open,
            partial,
            let_through_by,
            review_url,
            repo_url,
            pr_url,
        } => {
            let open = blocking_findings(open, gate);
            let (conclusion, title, held) = match (open.len(), partial) {
                (0, Some(false)) => (
                    CheckConclusion::Success,
                    "No blocking findings open".to_string(),
                    String::new(),
                ),
                (0, _) => {
                    let (conclusion, held) = not_in_full(gate, *let_through_by);
                    let title = match let_through_by.filter(|_| !held.is_empty()) {
                        Some(who) => format!(
                            "No blocking findings open; let through by @{who} without a complete review"
                        ),
                        None => "No blocking findings open; the review was partial".to_string(),
                    };
                    (conclusion, title, held)
                }
                (n, _) => (
                    CheckConclusion::Failure,
                    format!("{n} blocking finding(s) still open"),
                    String::new(),
                ),
            };
            let mut summary = format!(
                "Judged again after {}, from [the review]({review_url}) of the PR's head and the PR's open findings.",
                cause.said()
            );
            match partial {
                Some(true) => summary.push_str(PARTIAL),
                None => summary.push_str(
                    "\n\nParley could not tell whether that review was complete, so nothing blocking is not reported as a pass.",
                ),
                Some(false) => {}
            }
            summary.push_str(&held);
            let text = (!open.is_empty()).then(|| earlier_list(&open, repo_url, pr_url));
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

/// The findings among `findings` whose severity blocks (callers filter state and
/// confidence; the severity is checked here too, so the gate config decides alone).
fn blocking_findings<'a>(findings: &[&'a Finding], gate: &GateConfig) -> Vec<&'a Finding> {
    findings
        .iter()
        .copied()
        .filter(|f| gate.block_on.contains(&f.severity))
        .collect()
}

/// The check text listing open findings of earlier reviews, each linked to its discussion
/// thread: that is where it gets resolved or disputed. One without a thread (listed only
/// in a summary, or its comment deleted) is named by its id, which is how it is
/// dismissed or asked about.
fn earlier_list(findings: &[&Finding], repo_url: &str, pr_url: &str) -> String {
    let mut text = String::from(
        "Still open (resolve the thread once fixed, or reply to dispute the finding; one without a thread by its id, with `dismiss` or a question naming it):\n\n",
    );
    for f in findings {
        let no_thread = match f.comment_id {
            Some(_) => String::new(),
            None => format!("; no thread: `{}`", f.id),
        };
        text.push_str(&format!(
            "- **[{}]** [{}]({}) — `{}:{}` (found at `{}`{no_thread}){}\n",
            f.severity.name().to_uppercase(),
            f.title,
            finding_link(repo_url, pr_url, f),
            f.path,
            f.line,
            short(&f.head_sha),
            doubted(f.doubt.is_some())
        ));
    }
    text
}

/// Said beside a blocking finding the judge doubts: whoever may lift it sees at once where
/// a resolve may be all it takes.
fn doubted(doubted: bool) -> &'static str {
    if doubted {
        " (the judge doubts it: see its thread)"
    } else {
        ""
    }
}

/// Where a stored finding is discussed: its inline comment's thread, or (for a finding
/// listed only in a review summary) its lines at the commit it was found on.
pub fn finding_link(repo_url: &str, pr_url: &str, finding: &Finding) -> String {
    match finding.comment_id {
        Some(id) => format!("{pr_url}#discussion_r{id}"),
        None => {
            let anchor = match finding.start_line {
                Some(start) => format!("L{start}-L{}", finding.line),
                None => format!("L{}", finding.line),
            };
            format!(
                "{repo_url}/blob/{}/{}#{anchor}",
                finding.head_sha, finding.path
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::Severity;

    fn finding(severity: Severity) -> Candidate {
        Candidate {
            confidence: 90,
            fingerprint: "f".into(),
            ..Candidate::sample("a.rs", severity, "bug", "t")
        }
    }

    fn reviewed<'a>(automatic: bool, reported: Vec<&'a Candidate>, partial: bool) -> Verdict<'a> {
        Verdict::Reviewed {
            automatic,
            reported,
            earlier_open: Vec::new(),
            partial,
            nothing_read: false,
            review_url: Some("u"),
            let_through_by: None,
            reviewed: "",
            repo_url: "https://github.com/o/r",
            pr_url: "https://github.com/o/r/pull/1",
            head_sha: "abc",
        }
    }

    /// Parley's trouble (`reason`) as the head's automatic review (`automatic`) or a manual
    /// one's, with the PR's `open` findings and who let the head through.
    fn trouble(
        reason: &str,
        automatic: bool,
        open: Vec<&'static Finding>,
        let_through_by: Option<&'static str>,
    ) -> Verdict<'static> {
        Verdict::Trouble {
            reason: reason.into(),
            automatic,
            open,
            repo_url: "https://github.com/o/r",
            pr_url: "https://github.com/o/r/pull/1",
            let_through_by,
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
        let trouble = trouble("LLM down", true, vec![], None);
        let (conclusion, output) = conclude(&trouble, &gate);
        assert_eq!(conclusion, CheckConclusion::Neutral);
        assert!(
            output
                .summary
                .contains("a note on the PR says how to ask again"),
            "{}",
            output.summary
        );
        let (_, output) = conclude(&reviewed(true, vec![&high], false), &gate);
        let text = output.text.unwrap_or_default();
        assert!(
            text.contains("https://github.com/o/r/blob/abc/a.rs#L3"),
            "{text}"
        );
        assert!(!text.contains("the judge doubts it"), "{text}");
        // A blocking finding the judge doubts still fails the gate, and the check says so.
        let doubted = Candidate {
            doubt: Some("checked upstream".into()),
            ..finding(Severity::High)
        };
        let (conclusion, output) = conclude(&reviewed(true, vec![&doubted], false), &gate);
        assert_eq!(conclusion, CheckConclusion::Failure);
        let text = output.text.unwrap_or_default();
        assert!(
            text.contains("`a.rs:3` (the judge doubts it: see its thread)"),
            "{text}"
        );
    }

    /// With `gate.incomplete: hold`, every way an automatic review can leave its head not
    /// reviewed in full, with nothing blocking, holds the merge (`action_required`, and the
    /// check says how to go on); what the team chose to skip, a complete review, a blocking
    /// finding and a manual review's check conclude as they do by default.
    #[test]
    fn holding_waits_for_a_complete_review() {
        let hold = GateConfig {
            incomplete: Incomplete::Hold,
            ..GateConfig::default()
        };
        let high = finding(Severity::High);
        let low = finding(Severity::Low);
        let trouble = |automatic| trouble("LLM down", automatic, vec![], None);
        let skipped = |owed| Verdict::Skipped {
            reason: "the budget is spent",
            open: vec![],
            repo_url: "https://github.com/o/r",
            pr_url: "https://github.com/o/r/pull/1",
            owed,
            let_through_by: None,
        };
        let regated = |partial| Verdict::Regated {
            cause: RegateCause::Rerequested,
            open: vec![],
            partial,
            let_through_by: None,
            review_url: "u",
            repo_url: "https://github.com/o/r",
            pr_url: "https://github.com/o/r/pull/1",
        };
        let held = [
            reviewed(true, vec![&low], true),
            trouble(true),
            skipped(true),
            regated(Some(true)),
            regated(None),
        ];
        for verdict in &held {
            let (conclusion, output) = conclude(verdict, &hold);
            assert_eq!(conclusion, CheckConclusion::ActionRequired);
            assert!(
                output.summary.contains("`gate.incomplete: hold`"),
                "{}",
                output.summary
            );
            // By default the same verdicts let the merge through.
            let (conclusion, output) = conclude(verdict, &GateConfig::default());
            assert_eq!(conclusion, CheckConclusion::Neutral);
            assert!(
                !output.summary.contains("gate.incomplete"),
                "{}",
                output.summary
            );
        }
        let (_, output) = conclude(&trouble(true), &hold);
        assert!(
            output.summary.contains("waits for a complete review")
                && !output.summary.contains("does not block"),
            "{}",
            output.summary
        );
        let as_default = [
            (reviewed(true, vec![&low], false), CheckConclusion::Success),
            (reviewed(true, vec![&high], true), CheckConclusion::Failure),
            (reviewed(false, vec![&low], true), CheckConclusion::Neutral),
            (trouble(false), CheckConclusion::Neutral),
            (skipped(false), CheckConclusion::Neutral),
            (regated(Some(false)), CheckConclusion::Success),
        ];
        for (verdict, expected) in &as_default {
            let (conclusion, output) = conclude(verdict, &hold);
            assert_eq!(conclusion, *expected);
            assert!(
                !output.summary.contains("gate.incomplete"),
                "{}",
                output.summary
            );
        }
    }

    /// GitHub refuses a check whose button's label is over 20 characters, its description
    /// over 40 or its identifier over 20 (422), which would leave a held check unconcluded.
    #[test]
    fn the_let_through_button_is_within_githubs_limits() {
        let action = let_through_action();
        assert!(action.label.chars().count() <= 20, "{}", action.label);
        assert!(
            action.description.chars().count() <= 40,
            "{}",
            action.description
        );
        assert!(
            action.identifier.chars().count() <= 20,
            "{}",
            action.identifier
        );
    }

    /// A partial head someone let through is `neutral`, saying who, when the gate is judged
    /// again; an open blocking finding still fails it.
    #[test]
    fn a_head_let_through_passes_unless_something_blocks() {
        let hold = GateConfig {
            incomplete: Incomplete::Hold,
            ..GateConfig::default()
        };
        let open: &'static Finding =
            Box::leak(Box::new(stored(Severity::High, FindingState::Open, None)));
        let regated = |open: Vec<&'static Finding>| Verdict::Regated {
            cause: RegateCause::LetThrough,
            open,
            partial: Some(true),
            let_through_by: Some("carol"),
            review_url: "u",
            repo_url: "https://github.com/o/r",
            pr_url: "https://github.com/o/r/pull/1",
        };
        let (conclusion, output) = conclude(&regated(vec![]), &hold);
        assert_eq!(conclusion, CheckConclusion::Neutral);
        assert!(
            output.title.contains("let through by @carol"),
            "{}",
            output.title
        );
        assert!(
            output.summary.contains("without a complete review"),
            "{}",
            output.summary
        );
        assert_eq!(
            conclude(&regated(vec![open]), &hold).0,
            CheckConclusion::Failure
        );
        // Every later conclusion of the head: a failed retry, a partial review.
        let trouble = trouble("LLM down", true, vec![], Some("carol"));
        let low = finding(Severity::Low);
        let partial = Verdict::Reviewed {
            automatic: true,
            reported: vec![&low],
            earlier_open: Vec::new(),
            partial: true,
            nothing_read: false,
            review_url: Some("u"),
            let_through_by: Some("carol"),
            reviewed: "",
            repo_url: "https://github.com/o/r",
            pr_url: "https://github.com/o/r/pull/1",
            head_sha: "abc",
        };
        for verdict in [trouble, partial] {
            let (conclusion, output) = conclude(&verdict, &hold);
            assert_eq!(conclusion, CheckConclusion::Neutral);
            assert!(
                output.summary.contains("@carol let this head through"),
                "{}",
                output.summary
            );
        }
    }

    /// A review that failed lifts no `failure`: while an earlier review's blocking finding
    /// is open, the head's check fails (listing it), with either `gate.incomplete`. A
    /// manual review's failed check still only advises.
    #[test]
    fn a_failed_review_lifts_no_blocking_finding() {
        let open = stored(Severity::High, FindingState::Open, Some(7));
        let low = stored(Severity::Low, FindingState::Open, None);
        let trouble = |automatic, open: Vec<&'static Finding>| {
            trouble(
                "Parley could not finish the review: the model did not answer.",
                automatic,
                open,
                None,
            )
        };
        let open: &'static Finding = Box::leak(Box::new(open));
        let low: &'static Finding = Box::leak(Box::new(low));
        for incomplete in [Incomplete::Pass, Incomplete::Hold] {
            let gate = GateConfig {
                incomplete,
                ..GateConfig::default()
            };
            let (conclusion, output) = conclude(&trouble(true, vec![open, low]), &gate);
            assert_eq!(conclusion, CheckConclusion::Failure);
            assert!(
                output.title.contains("1 blocking finding(s)"),
                "{}",
                output.title
            );
            let text = output.text.unwrap_or_default();
            assert!(text.contains("#discussion_r7"), "{text}");
            assert!(!text.contains("; no thread: "), "it has one: {text}");
            assert!(output.summary.contains("the model did not answer"));
            assert_eq!(
                conclude(&trouble(false, vec![open]), &gate).0,
                CheckConclusion::Neutral
            );
            // Only findings below the gate's severities: Parley's trouble, as before.
            assert_ne!(
                conclude(&trouble(true, vec![low]), &gate).0,
                CheckConclusion::Failure
            );
        }
    }

    fn stored(severity: Severity, state: FindingState, comment_id: Option<u64>) -> Finding {
        Finding {
            id: format!("{severity:?}-{state:?}"),
            fingerprint: format!("fp-{severity:?}-{state:?}"),
            severity,
            head_sha: "0123456789".into(),
            comment_id,
            state,
            ..Finding::sample("a.rs", "old")
        }
    }

    #[test]
    fn open_blocking_findings_of_earlier_reviews_block() {
        let gate = GateConfig::default();
        let findings = vec![
            stored(Severity::High, FindingState::Open, Some(55)),
            stored(Severity::High, FindingState::Resolved, Some(56)),
            stored(Severity::Critical, FindingState::WontFix, Some(57)),
            stored(Severity::Low, FindingState::Open, Some(58)),
        ];
        let open = open_blocking(&findings, &gate, 75, &HashSet::new());
        assert_eq!(open.len(), 1);
        assert!(open_blocking(&findings, &gate, 95, &HashSet::new()).is_empty());
        let except: HashSet<&str> = [findings[0].fingerprint.as_str()].into();
        assert!(open_blocking(&findings, &gate, 75, &except).is_empty());

        let low = finding(Severity::Low);
        let mut verdict = reviewed(true, vec![&low], false);
        if let Verdict::Reviewed { earlier_open, .. } = &mut verdict {
            *earlier_open = open.clone();
        }
        let (conclusion, output) = conclude(&verdict, &gate);
        assert_eq!(conclusion, CheckConclusion::Failure);
        assert!(
            output
                .text
                .unwrap()
                .contains("https://github.com/o/r/pull/1#discussion_r55")
        );
        // A manual review never blocks, whatever is open.
        let mut manual = reviewed(false, vec![], false);
        if let Verdict::Reviewed { earlier_open, .. } = &mut manual {
            *earlier_open = open.clone();
        }
        assert_eq!(conclude(&manual, &gate).0, CheckConclusion::Neutral);
        // And says so in sentences, posted or quiet (a move's review with nothing new).
        if let Verdict::Reviewed {
            earlier_open,
            review_url,
            ..
        } = &mut manual
        {
            earlier_open.clear();
            *review_url = None;
        }
        let said = conclude(&manual, &gate).1.summary;
        assert!(
            said.ends_with(
                "stand. This check never blocks, and what a review finds counts on the **Parley review** check."
            ),
            "{said}"
        );
    }

    /// A push whose only change is one no review reads stays quiet: the check must not
    /// point at a review that was not posted.
    #[test]
    fn a_quiet_push_with_nothing_to_read_names_no_review() {
        let quiet = Verdict::Reviewed {
            automatic: true,
            reported: Vec::new(),
            earlier_open: Vec::new(),
            partial: false,
            nothing_read: true,
            review_url: None,
            let_through_by: None,
            reviewed: "`a`…`b` (no file)",
            repo_url: "https://github.com/o/r",
            pr_url: "https://github.com/o/r/pull/1",
            head_sha: "abc",
        };
        let (conclusion, output) = conclude(&quiet, &GateConfig::default());
        assert_eq!(conclusion, CheckConclusion::Success);
        assert_eq!(output.title, "Nothing to review");
        assert!(!output.summary.contains("the review"), "{}", output.summary);
        assert!(output.summary.contains("Reviewed `a`…`b` (no file)"));
    }

    #[test]
    fn regated_conclusions() {
        let gate = GateConfig::default();
        let open = stored(Severity::High, FindingState::Open, None);
        let regated = |open: Vec<&'static Finding>, partial| Verdict::Regated {
            cause: RegateCause::FindingChanged,
            open,
            partial,
            let_through_by: None,
            review_url: "u",
            repo_url: "https://github.com/o/r",
            pr_url: "https://github.com/o/r/pull/1",
        };
        // The conclusion and the text with one finding open.
        let with_open = |finding: Finding| {
            let leaked: &'static Finding = Box::leak(Box::new(finding));
            let (conclusion, output) = conclude(&regated(vec![leaked], Some(false)), &gate);
            (conclusion, output.text.unwrap_or_default())
        };
        let (conclusion, text) = with_open(open);
        assert_eq!(conclusion, CheckConclusion::Failure);
        assert!(
            text.contains("https://github.com/o/r/blob/0123456789/a.rs#L3"),
            "{text}"
        );
        assert!(!text.contains("the judge doubts it"), "{text}");
        // The judge's doubt is stored with the finding: judged again, the check names it.
        let (conclusion, text) = with_open(Finding {
            doubt: Some("checked upstream".into()),
            ..stored(Severity::Critical, FindingState::Open, None)
        });
        assert_eq!(conclusion, CheckConclusion::Failure);
        assert!(
            text.contains(
                "(found at `0123456`; no thread: `Critical-Open`) (the judge doubts it: see its thread)"
            ),
            "{text}"
        );
        assert_eq!(
            conclude(&regated(vec![], Some(false)), &gate).0,
            CheckConclusion::Success
        );
        assert_eq!(
            conclude(&regated(vec![], Some(true)), &gate).0,
            CheckConclusion::Neutral
        );
        assert_eq!(
            conclude(&regated(vec![], None), &gate).0,
            CheckConclusion::Neutral
        );
    }

    /// The new check says why it was judged again, so a check that turned green after a
    /// Re-run does not claim a thread was resolved.
    #[test]
    fn a_regated_check_says_what_made_it() {
        let summary = |cause| {
            let verdict = Verdict::Regated {
                cause,
                open: vec![],
                partial: Some(false),
                let_through_by: None,
                review_url: "u",
                repo_url: "https://github.com/o/r",
                pr_url: "https://github.com/o/r/pull/1",
            };
            conclude(&verdict, &GateConfig::default()).1.summary
        };
        assert!(summary(RegateCause::FindingChanged).contains("a thread resolved"));
        assert!(summary(RegateCause::Rerequested).contains("Re-run was asked for"));
        assert!(summary(RegateCause::ManualReview).contains("requested by hand"));
        assert!(summary(RegateCause::Retargeted).contains("another base branch"));
    }
}
