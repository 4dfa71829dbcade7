//! Applying what Parley learned to one review, without a model: which learnings concern
//! this PR, the lines they add to the specialists' prompts, the confidence threshold per
//! finding, and the findings dismissals and false-positive patterns drop.
//!
//! **Thresholds.** The base is [`super::stats::threshold_in_force`]. Each active adjust
//! learning that covers the PR moves the threshold of findings in its category (and its
//! paths, when it names some) by [`ADJUST_STEP`]: down for "be stricter about" (more is
//! reported), up for "be more lenient with". The result is clamped to 50..=95.
//!
//! **Dismissals.** An active dismiss learning drops a finding when every hint it has
//! matches: its category (a finding's category, or the category its words point at), its
//! paths (globs), its severity ceiling and its keywords (any, in the title or body). A
//! dismissal with none of category, paths or keywords matches nothing here; the judge pass
//! weighs it by meaning. PR- and thread-scoped dismissals (anyone allowed to talk may add
//! them) never drop a finding whose severity blocks the merge gate: otherwise a PR's
//! author could silence the finding that blocks their own PR.

use super::hints::canonical_category;
use super::memory::RepoMemory;
use super::patterns::{self, Effect};
use super::record::{Direction, Learning, LearningKind, Scope};
use super::stats::{HIGHEST, LOWEST, ThresholdSource};
use crate::config::GateConfig;
use crate::review::merge::Candidate;
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::sync::Arc;

/// Learnings put in one prompt at most, and characters of each: bounded context whatever
/// a repository accumulates (the rest still apply as filters).
pub const MAX_PROMPT_LINES: usize = 40;
pub const MAX_LINE_CHARS: usize = 300;

/// Threshold points one adjust learning moves its category by.
pub const ADJUST_STEP: i16 = 10;

/// What one review takes from memory.
#[derive(Debug, Clone)]
pub struct Applied {
    /// The learnings that concern this PR (active, scope covering it, paths touching it).
    pub relevant: Vec<Learning>,
    pub thresholds: Thresholds,
    /// The path globs of `relevant`, compiled once for the whole review.
    paths: Arc<PathIndex>,
}

/// Every learning's path globs in one compiled set: compiling a set per learning costs
/// tens of microseconds each, which hundreds of learnings turn into milliseconds a review.
#[derive(Debug, Default)]
struct PathIndex {
    set: GlobSet,
    /// The learning (index into the list the index was built from) of each glob.
    owner: Vec<usize>,
    /// Learnings with no paths: they match every path.
    everywhere: Vec<bool>,
}

impl PathIndex {
    fn build(learnings: &[&Learning]) -> Self {
        let mut builder = GlobSetBuilder::new();
        let mut owner = Vec::new();
        let mut everywhere = Vec::with_capacity(learnings.len());
        for (index, learning) in learnings.iter().enumerate() {
            for pattern in &learning.hints.paths {
                // A glob that does not parse matches nothing (it was checked when added).
                if let Ok(glob) = Glob::new(pattern) {
                    builder.add(glob);
                    owner.push(index);
                }
            }
            everywhere.push(learning.hints.paths.is_empty());
        }
        PathIndex {
            set: builder.build().unwrap_or_default(),
            owner,
            everywhere,
        }
    }

    /// Whether learning `index`'s paths (if any) match `path`, given the set's matches.
    fn matches(&self, index: usize, matched: &[usize]) -> bool {
        self.everywhere.get(index).copied().unwrap_or(false)
            || matched
                .iter()
                .any(|glob| self.owner.get(*glob) == Some(&index))
    }

    fn matched(&self, path: &str) -> Vec<usize> {
        self.set.matches(path)
    }
}

/// A finding dropped before publishing, and what dropped it.
#[derive(Debug, Clone, PartialEq)]
pub struct Suppressed {
    pub candidate: Candidate,
    /// `L-3f9a` (a learning), `pattern` (repeated rejections) or `judge`.
    pub by: String,
    pub why: String,
}

#[derive(Debug, Clone)]
pub struct Thresholds {
    pub base: u8,
    pub source: ThresholdSource,
    adjustments: Vec<Adjustment>,
    paths: Arc<PathIndex>,
}

#[derive(Debug, Clone)]
struct Adjustment {
    category: String,
    /// The adjusting learning, by index into the review's relevant learnings (its paths
    /// are in the path index).
    learning: usize,
    delta: i16,
}

impl Thresholds {
    pub fn flat(base: u8, source: ThresholdSource) -> Self {
        Thresholds {
            base,
            source,
            adjustments: Vec::new(),
            paths: Arc::default(),
        }
    }

    /// The threshold for one finding.
    pub fn for_candidate(&self, candidate: &Candidate) -> u8 {
        let mut threshold = i16::from(self.base);
        let mut matched = None;
        for adjustment in &self.adjustments {
            if !category_matches(&adjustment.category, candidate) {
                continue;
            }
            let matched = matched.get_or_insert_with(|| self.paths.matched(&candidate.path));
            if self.paths.matches(adjustment.learning, matched) {
                threshold += adjustment.delta;
            }
        }
        threshold.clamp(i16::from(LOWEST), i16::from(HIGHEST)) as u8
    }

    /// `security 65, style 85`: the categories whose threshold differs from the base.
    pub fn describe_adjustments(&self) -> Vec<String> {
        self.adjustments
            .iter()
            .map(|a| {
                let shifted =
                    (i16::from(self.base) + a.delta).clamp(i16::from(LOWEST), i16::from(HIGHEST));
                format!("{} {shifted}", a.category)
            })
            .collect()
    }
}

/// The learnings that concern PR `pr` whose changed files are `paths`, and the
/// thresholds they make.
pub fn for_review(
    memory: &RepoMemory,
    pr: u64,
    paths: &[&str],
    base: u8,
    source: ThresholdSource,
) -> Applied {
    let scoped: Vec<&Learning> = memory
        .active()
        .filter(|l| {
            l.scope.covers(pr, None) || matches!(l.scope, Scope::Thread { pr: p, .. } if p == pr)
        })
        .collect();
    let scoped_paths = PathIndex::build(&scoped);
    let touched: Vec<Vec<usize>> = paths.iter().map(|p| scoped_paths.matched(p)).collect();
    let relevant: Vec<Learning> = scoped
        .iter()
        .enumerate()
        .filter(|(index, _)| {
            scoped_paths.everywhere[*index]
                || touched.iter().any(|m| scoped_paths.matches(*index, m))
        })
        .map(|(_, l)| (*l).clone())
        .collect();
    let index = Arc::new(PathIndex::build(&relevant.iter().collect::<Vec<_>>()));
    let adjustments = relevant
        .iter()
        .enumerate()
        .filter(|(_, l)| l.kind == LearningKind::Adjust)
        .filter_map(|(learning, l)| {
            let category = l.hints.category.clone()?;
            let delta = match l.hints.direction? {
                Direction::Stricter => -ADJUST_STEP,
                Direction::Lenient => ADJUST_STEP,
            };
            Some(Adjustment {
                category,
                learning,
                delta,
            })
        })
        .collect();
    Applied {
        relevant,
        thresholds: Thresholds {
            base,
            source,
            adjustments,
            paths: index.clone(),
        },
        paths: index,
    }
}

/// The lines the specialists' and the judge's prompts get: remember and adjust rules.
/// Dismissals are applied, not asked for, but the judge sees them too.
pub fn prompt_lines(learnings: &[Learning], include_dismissals: bool) -> Vec<String> {
    learnings
        .iter()
        .filter(|l| include_dismissals || l.kind != LearningKind::Dismiss)
        .map(|l| {
            let paths = if l.hints.paths.is_empty() {
                String::new()
            } else {
                format!(" (paths: {})", l.hints.paths.join(", "))
            };
            format!(
                "[{}] {}: {}{paths}",
                l.id,
                l.kind.name(),
                crate::sanitize::truncate(&crate::sanitize::user_text(&l.text), MAX_LINE_CHARS)
            )
        })
        .take(MAX_PROMPT_LINES)
        .collect()
}

/// Drop what dismissals and patterns drop, and lower what patterns penalise. Returns the
/// findings kept and the ones dropped with why.
pub fn suppress(
    candidates: Vec<Candidate>,
    applied: &Applied,
    memory: &RepoMemory,
    gate: &GateConfig,
) -> (Vec<Candidate>, Vec<Suppressed>) {
    let dismissals: Vec<(usize, &Learning)> = applied
        .relevant
        .iter()
        .enumerate()
        .filter(|(_, l)| l.kind == LearningKind::Dismiss)
        .collect();
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for mut candidate in candidates {
        let blocking = gate.block_on.contains(&candidate.severity);
        let matched = if dismissals.is_empty() {
            Vec::new()
        } else {
            applied.paths.matched(&candidate.path)
        };
        if let Some((_, learning)) = dismissals.iter().find(|(index, learning)| {
            let narrow = matches!(learning.scope, Scope::Pr { .. } | Scope::Thread { .. });
            !(narrow && blocking)
                && applied.paths.matches(*index, &matched)
                && dismisses(learning, &candidate)
        }) {
            dropped.push(Suppressed {
                why: format!("dismissed by {}: {}", learning.id, learning.text),
                by: learning.id.clone(),
                candidate,
            });
            continue;
        }
        match patterns::effect(&memory.patterns, &candidate) {
            Effect::Dropped { pattern } => {
                let rejections = memory
                    .patterns
                    .iter()
                    .find(|(key, _)| *key == pattern)
                    .map_or(0, |(_, p)| p.rejections);
                dropped.push(Suppressed {
                    why: format!("rejected {rejections} times before on this repository"),
                    by: "pattern".to_string(),
                    candidate,
                });
            }
            Effect::Penalised { by, .. } => {
                candidate.confidence = candidate.confidence.saturating_sub(by);
                kept.push(candidate);
            }
            Effect::None => kept.push(candidate),
        }
    }
    (kept, dropped)
}

/// Whether `learning`'s hints other than paths (checked by the caller) match.
fn dismisses(learning: &Learning, candidate: &Candidate) -> bool {
    let hints = &learning.hints;
    if hints.category.is_none() && hints.paths.is_empty() && hints.keywords.is_empty() {
        return false;
    }
    let category_ok = hints
        .category
        .as_deref()
        .is_none_or(|c| category_matches(c, candidate));
    let severity_ok = hints
        .max_severity
        .is_none_or(|max| candidate.severity <= max);
    let text = format!("{} {}", candidate.title, candidate.body).to_ascii_lowercase();
    let keywords_ok =
        hints.keywords.is_empty() || hints.keywords.iter().any(|k| text.contains(k.as_str()));
    category_ok && severity_ok && keywords_ok
}

fn category_matches(category: &str, candidate: &Candidate) -> bool {
    candidate.category.eq_ignore_ascii_case(category)
        || canonical_category(&candidate.category).as_deref() == Some(category)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learning::record::{Hints, Learning};
    use crate::ports::Severity;
    use time::OffsetDateTime;

    fn learning(id: &str, kind: LearningKind, scope: Scope, hints: Hints) -> Learning {
        Learning {
            id: id.into(),
            repo: "o/r".into(),
            scope,
            kind,
            text: format!("rule {id}"),
            hints,
            author: "bob".into(),
            source_url: String::new(),
            source_comment_id: 1,
            created_at: OffsetDateTime::UNIX_EPOCH,
            forgotten: None,
            times_applied: 0,
            findings_suppressed: 0,
        }
    }

    fn candidate(path: &str, category: &str, severity: Severity, title: &str) -> Candidate {
        Candidate {
            path: path.into(),
            line: 1,
            start_line: None,
            severity,
            category: category.into(),
            confidence: 80,
            title: title.into(),
            body: String::new(),
            suggestion: None,
            passes: vec![],
            fingerprint: title.into(),
            on_diff: true,
        }
    }

    fn memory(learnings: Vec<Learning>) -> RepoMemory {
        RepoMemory {
            learnings,
            ..RepoMemory::default()
        }
    }

    #[test]
    fn dismissals_match_every_hint_they_have() {
        let unwrap_in_tests = learning(
            "L-1",
            LearningKind::Dismiss,
            Scope::Repo,
            Hints {
                category: Some("correctness".into()),
                paths: vec!["tests/**".into()],
                keywords: vec!["unwrap".into()],
                ..Hints::default()
            },
        );
        let m = memory(vec![unwrap_in_tests]);
        let applied = for_review(
            &m,
            1,
            &["tests/a.rs", "src/b.rs"],
            75,
            ThresholdSource::Default,
        );
        assert_eq!(applied.relevant.len(), 1);
        let (kept, dropped) = suppress(
            vec![
                candidate(
                    "tests/a.rs",
                    "bug",
                    Severity::Medium,
                    "unwrap on a missing key",
                ),
                candidate(
                    "src/b.rs",
                    "bug",
                    Severity::Medium,
                    "unwrap on a missing key",
                ),
                candidate("tests/a.rs", "style", Severity::Medium, "unwrap is ugly"),
                candidate("tests/a.rs", "bug", Severity::Medium, "off by one"),
            ],
            &applied,
            &m,
            &GateConfig::default(),
        );
        assert_eq!(dropped.len(), 1);
        assert_eq!(dropped[0].by, "L-1");
        assert_eq!(kept.len(), 3);
    }

    #[test]
    fn a_pr_scoped_dismissal_cannot_drop_a_blocking_finding() {
        let hints = Hints {
            category: Some("security".into()),
            ..Hints::default()
        };
        let pr_only = learning(
            "L-2",
            LearningKind::Dismiss,
            Scope::Pr { pr: 1 },
            hints.clone(),
        );
        let repo_wide = learning("L-3", LearningKind::Dismiss, Scope::Repo, hints);
        let high = candidate("a.rs", "security", Severity::High, "xss");
        let low = candidate("a.rs", "security", Severity::Low, "weak hash in a test");
        let m = memory(vec![pr_only]);
        let applied = for_review(&m, 1, &["a.rs"], 75, ThresholdSource::Default);
        let (kept, dropped) = suppress(
            vec![high.clone(), low.clone()],
            &applied,
            &m,
            &GateConfig::default(),
        );
        assert_eq!((kept.len(), dropped.len()), (1, 1));
        assert_eq!(kept[0].title, "xss");
        let m = memory(vec![repo_wide]);
        let applied = for_review(&m, 1, &["a.rs"], 75, ThresholdSource::Default);
        let (kept, _) = suppress(vec![high, low], &applied, &m, &GateConfig::default());
        assert!(kept.is_empty());
    }

    #[test]
    fn adjustments_move_their_category_and_paths_clamped() {
        let stricter = learning(
            "L-4",
            LearningKind::Adjust,
            Scope::Repo,
            Hints {
                category: Some("security".into()),
                direction: Some(Direction::Stricter),
                ..Hints::default()
            },
        );
        let lenient_tests = learning(
            "L-5",
            LearningKind::Adjust,
            Scope::Repo,
            Hints {
                category: Some("style".into()),
                direction: Some(Direction::Lenient),
                paths: vec!["tests/**".into()],
                ..Hints::default()
            },
        );
        let m = memory(vec![stricter, lenient_tests]);
        let applied = for_review(&m, 1, &["tests/a.rs"], 75, ThresholdSource::Default);
        let t = &applied.thresholds;
        assert_eq!(
            t.for_candidate(&candidate("src/a.rs", "security", Severity::Low, "x")),
            65
        );
        assert_eq!(
            t.for_candidate(&candidate("tests/a.rs", "style", Severity::Low, "x")),
            85
        );
        assert_eq!(
            t.for_candidate(&candidate("src/a.rs", "style", Severity::Low, "x")),
            75
        );
        let low_base = for_review(&m, 1, &["tests/a.rs"], 55, ThresholdSource::Default);
        assert_eq!(
            low_base.thresholds.for_candidate(&candidate(
                "src/a.rs",
                "security",
                Severity::Low,
                "x"
            )),
            LOWEST
        );
    }

    #[test]
    fn forgotten_and_other_prs_learnings_do_not_apply() {
        let mut forgotten = learning("L-6", LearningKind::Remember, Scope::Repo, Hints::default());
        forgotten.forgotten = Some(crate::learning::record::Forgotten {
            by: "bob".into(),
            at: OffsetDateTime::UNIX_EPOCH,
        });
        let other_pr = learning(
            "L-7",
            LearningKind::Remember,
            Scope::Pr { pr: 2 },
            Hints::default(),
        );
        let here = learning(
            "L-8",
            LearningKind::Remember,
            Scope::Pr { pr: 1 },
            Hints::default(),
        );
        let m = memory(vec![forgotten, other_pr, here]);
        let applied = for_review(&m, 1, &["a.rs"], 75, ThresholdSource::Default);
        let ids: Vec<&str> = applied.relevant.iter().map(|l| l.id.as_str()).collect();
        assert_eq!(ids, vec!["L-8"]);
        assert_eq!(
            prompt_lines(&applied.relevant, false),
            vec!["[L-8] remember: rule L-8"]
        );
    }
}
