//! The review's side of learning: read what the repository taught Parley, run the judge
//! pass, and account for what was applied. Every step fails open: a review without its
//! learnings is still a review, never a failed job.

use crate::context::tools::Toolbox;
use crate::learning::apply::{Applied, Suppressed};
use crate::learning::judge::{self, Decision, Judgement};
use crate::learning::memory::{self, RepoMemory};
use crate::learning::outcomes::{self, Signal};
use crate::learning::record::{partition, sort_key};
use crate::ports::github::ChangedFile;
use crate::ports::{Finding, FindingState, Store, Verdict};
use crate::repo::Guideline;
use crate::review::diff::{self, Patch};
use crate::review::merge::Candidate;
use crate::review::resolution;
use std::collections::{BTreeMap, HashMap};

/// What the judge pass did, for the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JudgeStatus {
    /// `review.judge: false`.
    Off,
    /// Nothing to judge.
    Idle,
    Ran {
        dropped: usize,
        rescored: usize,
        /// Findings at a blocking severity it would have dropped (or scored under the
        /// threshold): kept, with its reason.
        doubted: usize,
    },
    /// It failed; the specialists' scores stand (why, in public words).
    Failed(String),
}

impl JudgeStatus {
    /// Two parts' judges as one.
    fn and(self, other: JudgeStatus) -> JudgeStatus {
        use JudgeStatus::{Failed, Idle, Off, Ran};
        match (self, other) {
            (Failed(why), _) | (_, Failed(why)) => Failed(why),
            (Idle | Off, status) | (status, Idle | Off) => status,
            (
                Ran {
                    dropped,
                    rescored,
                    doubted,
                },
                Ran {
                    dropped: d,
                    rescored: r,
                    doubted: o,
                },
            ) => Ran {
                dropped: dropped + d,
                rescored: rescored + r,
                doubted: doubted + o,
            },
        }
    }
}

/// The repository's memory, or an empty one (logged) when it cannot be read.
pub async fn load(store: &dyn Store, repo: &str, org: &str) -> RepoMemory {
    match memory::load(store, repo, org).await {
        Ok(memory) => memory,
        Err(err) => {
            tracing::warn!(repo, error = %err, "could not read what Parley learned; reviewing without it");
            RepoMemory::default()
        }
    }
}

/// What the judge reads besides the findings: earlier PRs' similar findings (retrieval's
/// rendering), the review's shared user message, which its prompt starts with, and the
/// review's tools, when its passes had them.
pub struct JudgeText<'a> {
    pub past_findings: &'a str,
    pub shared: &'a str,
    pub tools: Option<&'a Toolbox<'a>>,
}

/// What the judge pass left, dropped and did.
pub struct Judged {
    pub kept: Vec<Candidate>,
    pub dropped: Vec<Suppressed>,
    pub status: JudgeStatus,
    /// What it read with tools, `tool(argument)` per call.
    pub read: Vec<String>,
}

impl Judged {
    /// The judges of a review read in parts, as one: what each kept and dropped, and a
    /// status that counts them all: failed if any failed (the scores of that part's
    /// findings stand, and the summary should not claim every finding was judged),
    /// saying which part and what the other parts' judges did.
    pub fn together(parts: Vec<Judged>) -> Judged {
        let count = parts.len();
        let mut all = Judged::untouched(Vec::new(), JudgeStatus::Idle);
        let mut failed = Vec::new();
        for (index, part) in parts.into_iter().enumerate() {
            all.kept.extend(part.kept);
            all.dropped.extend(part.dropped);
            all.read.extend(part.read);
            match part.status {
                JudgeStatus::Failed(why) if count > 1 => {
                    failed.push(format!("{why}, on part {} of {count}", index + 1));
                }
                status => all.status = all.status.and(status),
            }
        }
        if !failed.is_empty() {
            let others = match all.status {
                JudgeStatus::Ran {
                    dropped, rescored, ..
                } => format!("; the other parts' judges dropped {dropped}, re-scored {rescored}"),
                _ => String::new(),
            };
            all.status = JudgeStatus::Failed(format!("{}{others}", failed.join("; ")));
        }
        all
    }

    /// The judge did not change anything.
    fn untouched(kept: Vec<Candidate>, status: JudgeStatus) -> Self {
        Judged {
            kept,
            dropped: Vec::new(),
            status,
            read: Vec::new(),
        }
    }
}

/// [`Suppressed::by`] for a finding the judge dropped on its own reasoning (a drop that
/// rests on a learning names the learning).
pub const BY_JUDGE: &str = "judge";

/// Run the judge over `kept`: drop what it may drop (as suppressed, by the learning it
/// names when one), take its confidence for the rest, and keep what it doubts but may not
/// drop with its reason (see [`rule`]).
pub async fn judge(
    llm: &dyn crate::ports::llm::Llm,
    kept: Vec<Candidate>,
    guidelines: &[Guideline],
    applied: &Applied,
    memory: &RepoMemory,
    patches: &HashMap<String, Patch>,
    text: JudgeText<'_>,
) -> Judged {
    let JudgeText {
        past_findings,
        shared,
        tools,
    } = text;
    if kept.is_empty() {
        return Judged::untouched(kept, JudgeStatus::Idle);
    }
    // The judge only ever loosens (it drops and re-scores), so it hears only the
    // learnings of people who may loosen: a PR author's wish is context for the
    // specialists, never a reason to drop.
    let authoritative: Vec<crate::learning::Learning> = applied
        .relevant
        .iter()
        .filter(|l| l.authority().may_loosen())
        .cloned()
        .collect();
    let learnings = crate::learning::apply::prompt_lines(&authoritative, true);
    let patterns: Vec<String> = memory
        .patterns
        .iter()
        .map(|(_, p)| {
            format!(
                "{} findings in `{}` like \"{}\" (rejected {} times)",
                p.category, p.path_pattern, p.title, p.rejections
            )
        })
        .collect();
    let guideline_texts: Vec<String> = guidelines
        .iter()
        .map(|g| format!("{}:\n{}", g.path, g.text))
        .collect();
    let code: Vec<String> = kept
        .iter()
        .map(|c| {
            patches
                .get(&c.path)
                .and_then(|p| p.right_context(c.line, 4))
                .unwrap_or_default()
        })
        .collect();
    let context = judge::Context {
        guidelines: &guideline_texts,
        learnings: &learnings,
        patterns: &patterns,
        code: &code,
        past_findings,
    };
    let (judgement, read) = judge::judge(llm, &kept, &context, shared, tools).await;
    match judgement {
        Judgement::Skipped(why) => Judged {
            read,
            ..Judged::untouched(kept, JudgeStatus::Failed(why))
        },
        Judgement::Judged(decisions) => {
            let (mut kept_now, mut dropped) = (Vec::new(), Vec::new());
            let (mut rescored, mut doubted) = (0, 0);
            for (candidate, decision) in kept.into_iter().zip(decisions) {
                match rule(candidate, decision, applied, &authoritative) {
                    Ruling::Kept(candidate) => kept_now.push(candidate),
                    Ruling::Rescored(candidate) => {
                        rescored += 1;
                        kept_now.push(candidate);
                    }
                    Ruling::Doubted(candidate) => {
                        doubted += 1;
                        kept_now.push(candidate);
                    }
                    Ruling::Dropped(suppressed) => dropped.push(suppressed),
                }
            }
            Judged {
                status: JudgeStatus::Ran {
                    dropped: dropped.len(),
                    rescored,
                    doubted,
                },
                kept: kept_now,
                dropped,
                read,
            }
        }
    }
}

/// What became of one finding the judge ruled on.
enum Ruling {
    Kept(Candidate),
    Rescored(Candidate),
    /// At a blocking severity, with the judge's case against it in [`Candidate::doubt`].
    Doubted(Candidate),
    Dropped(Suppressed),
}

/// Apply one decision of the judge's.
///
/// The judge may weed out findings, but not the ones the merge gate blocks on: it reads
/// the diff and code the PR's author wrote (and may be argued with in them), and nothing
/// its author says lifts a blocking finding without a code change (see
/// [`resolution`]). So a drop of a blocking finding the gate would count, on its own
/// reasoning or citing a learning, and a re-score that would put one under its threshold,
/// keep it with the judge's reason for whoever may lift it. Elsewhere its word stands
/// (below the gate's severities, or a finding already under its threshold), except a drop
/// that rests on a learning of someone without `gate.resolveBy`.
fn rule(
    mut candidate: Candidate,
    decision: Decision,
    applied: &Applied,
    authoritative: &[crate::learning::Learning],
) -> Ruling {
    // The threshold of a finding the gate counts as the passes reported it: at a blocking
    // severity and not under its threshold. Others the judge cannot take out of the gate.
    let counted = applied
        .thresholds
        .blocks(candidate.severity)
        .then(|| applied.thresholds.for_candidate(&candidate))
        .filter(|threshold| candidate.confidence >= *threshold);
    match decision {
        Decision::Keep { confidence } => {
            if let Some(threshold) = counted
                && confidence < threshold
            {
                candidate.doubt = Some(format!(
                    "it rated this finding {confidence}% likely, under the {threshold}% a finding needs to be reported"
                ));
                return Ruling::Doubted(candidate);
            }
            if confidence == candidate.confidence {
                return Ruling::Kept(candidate);
            }
            candidate.confidence = confidence;
            Ruling::Rescored(candidate)
        }
        Decision::Drop { reason, learning } => {
            if counted.is_some() {
                tracing::info!(finding = %candidate.title, learning = ?learning, "the judge would drop a blocking finding; kept with its doubt");
                candidate.doubt = Some(match &learning {
                    Some(id) => format!("{reason} (citing {id})"),
                    None => reason,
                });
                return Ruling::Doubted(candidate);
            }
            // The judge reads the passes' prompt, every learning in it; only a
            // maintainer's may drop a finding (see `authoritative` in [`judge`]).
            if let Some(id) = &learning
                && !authoritative.iter().any(|l| &l.id == id)
                && applied.relevant.iter().any(|l| &l.id == id)
            {
                tracing::info!(finding = %candidate.title, learning = %id, "the judge cited a learning of someone without gate.resolveBy; kept");
                return Ruling::Kept(candidate);
            }
            let known = learning.filter(|id| authoritative.iter().any(|l| &l.id == id));
            Ruling::Dropped(Suppressed {
                by: known.clone().unwrap_or_else(|| BY_JUDGE.to_string()),
                why: match known {
                    Some(id) => format!("contradicts {id}: {reason}"),
                    None => format!("judge: {reason}"),
                },
                candidate,
            })
        }
    }
}

/// After publishing: count the review, what was suppressed and by what, and each applied
/// learning's use. Best effort: the review is posted.
pub async fn account(
    store: &dyn Store,
    repo: &str,
    org: &str,
    applied: &Applied,
    suppressed: &[Suppressed],
    posted: &[&Candidate],
) {
    let category = |c: &Candidate| c.category.trim().to_ascii_lowercase();
    let mut by: BTreeMap<String, u64> = BTreeMap::new();
    let mut suppressed_in: BTreeMap<String, u64> = BTreeMap::new();
    for s in suppressed {
        *by.entry(s.by.clone()).or_default() += 1;
        *suppressed_in.entry(category(&s.candidate)).or_default() += 1;
    }
    let mut posted_in: BTreeMap<String, u64> = BTreeMap::new();
    for c in posted {
        *posted_in.entry(category(c)).or_default() += 1;
    }
    let counted = by.clone();
    if let Err(err) = memory::update_stats(store, repo, |stats| {
        stats.reviews += 1;
        for (key, n) in &counted {
            *stats.suppressed.entry(key.clone()).or_default() += n;
        }
        for (key, n) in &suppressed_in {
            *stats.suppressed_by_category.entry(key.clone()).or_default() += n;
        }
        for (key, n) in &posted_in {
            *stats.posted.entry(key.clone()).or_default() += n;
        }
    })
    .await
    {
        tracing::warn!(repo, error = %err, "could not count the review in the statistics");
    }
    let month = crate::llm::usage::month_scope(repo, time::OffsetDateTime::now_utc());
    if let Err(err) = store
        .add_to_counter(&month, crate::llm::usage::counters::REVIEWS, 1)
        .await
    {
        tracing::warn!(repo, error = %err, "could not count the review in this month's usage");
    }
    for learning in &applied.relevant {
        let suppressed_here = by.get(&learning.id).copied().unwrap_or(0);
        let part = partition(&learning.repo, org, &learning.scope);
        let result = memory::update_learning(store, &part, &learning.id, |l| {
            l.times_applied += 1;
            l.findings_suppressed += suppressed_here;
        })
        .await;
        if let Err(err) = result {
            tracing::warn!(repo, learning = %learning.id, key = sort_key(&learning.id), error = %err, "could not count the learning's use");
        }
    }
}

/// On an incremental review: earlier open findings whose lines the new commits changed
/// were acted on — accepted. Only findings posted on the previous reviewed head are
/// weighed (their line numbers are that commit's, the compare's old side; a renamed
/// file's patch has the finding's file on its old side too).
pub async fn code_changed(
    store: &dyn Store,
    corpus: &dyn crate::ports::CorpusStore,
    earlier: &[Finding],
    previous_head: &str,
    compare: &[ChangedFile],
) {
    for finding in earlier.iter().filter(|f| {
        f.outcome.is_none() && f.state == FindingState::Open && f.head_sha == previous_head
    }) {
        let Some(file) = resolution::file_of(compare, &finding.path) else {
            continue;
        };
        let touched = match file.patch.as_deref().map(diff::parse_hunks) {
            Some(Ok(patch)) => resolution::touches(
                &patch,
                finding.start_line.unwrap_or(finding.line),
                finding.line,
            ),
            _ => false,
        };
        if touched {
            let mut finding = finding.clone();
            if let Err(err) = outcomes::record(
                store,
                corpus,
                &mut finding,
                &Signal::new(Verdict::Accepted, "code_changed", None),
            )
            .await
            {
                tracing::warn!(finding = %finding.id, error = %err, "could not record the finding's outcome");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_judges_of_parts_count_as_one() {
        let ran = |dropped, rescored, doubted| {
            Judged::untouched(
                Vec::new(),
                JudgeStatus::Ran {
                    dropped,
                    rescored,
                    doubted,
                },
            )
        };
        let idle = || Judged::untouched(Vec::new(), JudgeStatus::Idle);
        assert_eq!(
            Judged::together(vec![ran(1, 2, 0), idle(), ran(0, 1, 1)]).status,
            JudgeStatus::Ran {
                dropped: 1,
                rescored: 3,
                doubted: 1
            }
        );
        assert_eq!(
            Judged::together(vec![idle(), idle()]).status,
            JudgeStatus::Idle
        );
        let failed = || Judged::untouched(Vec::new(), JudgeStatus::Failed("timed out".into()));
        assert_eq!(
            Judged::together(vec![ran(1, 0, 0), failed(), ran(1, 2, 0)]).status,
            JudgeStatus::Failed(
                "timed out, on part 2 of 3; the other parts' judges dropped 2, re-scored 2".into()
            ),
            "one part's scores stand: not every finding was judged"
        );
        assert_eq!(
            Judged::together(vec![failed(), idle(), failed()]).status,
            JudgeStatus::Failed("timed out, on part 1 of 3; timed out, on part 3 of 3".into())
        );
        assert_eq!(
            Judged::together(vec![failed()]).status,
            JudgeStatus::Failed("timed out".into()),
            "one part: as the judge said"
        );
    }
    use crate::learning::apply::{Base, for_review};
    use crate::learning::stats::ThresholdSource;
    use crate::ports::Severity;

    /// The ruling on a finding at `severity` and confidence `confidence`, with a threshold
    /// of 70, the gate blocking on critical and high and nothing learned.
    fn ruling(severity: Severity, confidence: u8, decision: Decision) -> Ruling {
        let applied = for_review(
            &RepoMemory::default(),
            1,
            &[],
            Base {
                threshold: 70,
                source: ThresholdSource::Default,
                configured: 70,
                blocking: vec![Severity::Critical, Severity::High],
            },
        );
        let finding = Candidate {
            confidence,
            ..Candidate::sample("src/api.rs", severity, "correctness", "Unchecked id")
        };
        rule(finding, decision, &applied, &[])
    }

    fn drop(reason: &str, learning: Option<&str>) -> Decision {
        Decision::Drop {
            reason: reason.into(),
            learning: learning.map(str::to_string),
        }
    }

    /// (kind of ruling, confidence after it, the judge's doubt).
    fn outcome(ruling: Ruling) -> (&'static str, u8, Option<String>) {
        match ruling {
            Ruling::Kept(c) => ("kept", c.confidence, c.doubt),
            Ruling::Rescored(c) => ("rescored", c.confidence, c.doubt),
            Ruling::Doubted(c) => ("doubted", c.confidence, c.doubt),
            Ruling::Dropped(s) => ("dropped", s.candidate.confidence, Some(s.why)),
        }
    }

    #[test]
    fn a_blocking_finding_the_judge_would_drop_is_kept_at_its_score_with_its_reason() {
        let (kind, confidence, doubt) = outcome(ruling(
            Severity::High,
            80,
            drop("the gateway never passes an empty id", None),
        ));
        assert_eq!((kind, confidence), ("doubted", 80));
        assert_eq!(
            doubt.as_deref(),
            Some("the gateway never passes an empty id")
        );
        let cited = outcome(ruling(
            Severity::Critical,
            80,
            drop("ids are validated", Some("L-3f9a")),
        ));
        assert_eq!(
            cited.2.as_deref(),
            Some("ids are validated (citing L-3f9a)")
        );
        let note = Candidate {
            doubt,
            ..Candidate::sample("a.rs", Severity::High, "bug", "t")
        }
        .doubt_note()
        .expect("a note");
        assert!(
            note.starts_with(
                "The judge doubts this finding: the gateway never passes an empty id. It is kept"
            ),
            "{note}"
        );
    }

    #[test]
    fn a_score_under_the_threshold_is_a_drop_by_another_name_for_a_blocking_finding() {
        assert_eq!(
            outcome(ruling(Severity::High, 80, Decision::Keep { confidence: 20 })),
            (
                "doubted",
                80,
                Some(
                    "it rated this finding 20% likely, under the 70% a finding needs to be reported"
                        .into()
                )
            )
        );
        // Within the threshold it is an ordinary re-score, and so is one of a finding that
        // was under the threshold before the judge.
        assert_eq!(
            outcome(ruling(
                Severity::High,
                80,
                Decision::Keep { confidence: 72 }
            )),
            ("rescored", 72, None)
        );
        assert_eq!(
            outcome(ruling(
                Severity::High,
                60,
                Decision::Keep { confidence: 30 }
            )),
            ("rescored", 30, None)
        );
        // A blocking finding under its threshold never counted: the judge's drop stands.
        assert_eq!(
            outcome(ruling(Severity::Critical, 60, drop("not a bug", None))),
            ("dropped", 60, Some("judge: not a bug".into()))
        );
    }

    #[test]
    fn below_the_gate_the_judge_drops_and_rescores_as_it_likes() {
        assert_eq!(
            outcome(ruling(Severity::Medium, 80, drop("not a bug", None))),
            ("dropped", 80, Some("judge: not a bug".into()))
        );
        assert_eq!(
            outcome(ruling(Severity::Low, 80, Decision::Keep { confidence: 10 })),
            ("rescored", 10, None)
        );
        assert_eq!(
            outcome(ruling(
                Severity::Medium,
                80,
                Decision::Keep { confidence: 80 }
            )),
            ("kept", 80, None)
        );
    }
}
