//! Acceptance statistics and the tuned confidence threshold.
//!
//! The evidence is counts, per repository: for each category and each confidence value
//! (0-100), how many decided findings were accepted and rejected, and how many were
//! ignored. Counts are cheap to update (one record, one versioned write per outcome) and
//! explain the threshold exactly: anyone can recompute it from the `stats` output.
//!
//! **Tuned threshold.** The lowest `T` in 50..=95 such that at least 90% of the decided
//! findings (accepted + rejected) with confidence `>= T` were accepted, used once the
//! repository has at least [`MIN_DECIDED`] decided findings. When no `T` reaches 90%,
//! nothing is tuned and the configured value stands: confidence that does not predict
//! acceptance anywhere is no reason to report less, and falling back to the highest value
//! handed a dozen rejections the power to silence a healthy repository. Ignored findings
//! are not evidence either way. The tuned value never holds blocking severities above the
//! configured one ([`super::apply`]).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const MIN_DECIDED: u64 = 20;
pub const TARGET_ACCEPTANCE: f64 = 0.9;
pub const LOWEST: u8 = 50;
pub const HIGHEST: u8 = 95;
/// Outcomes the statistics remember having counted (see [`RepoStats::count_outcome`]).
/// A retry comes within minutes of the attempt it repeats; this many other outcomes in
/// one repository in between is far beyond what happens, and it keeps the record small
/// (about 30 bytes each, well under DynamoDB's 400 KB item).
pub const COUNTED_KEEP: usize = 500;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    #[serde(default, rename = "a")]
    pub accepted: u64,
    #[serde(default, rename = "r")]
    pub rejected: u64,
    #[serde(default, rename = "i")]
    pub ignored: u64,
}

impl Counts {
    pub fn decided(&self) -> u64 {
        self.accepted + self.rejected
    }

    pub fn is_empty(&self) -> bool {
        self.decided() + self.ignored == 0
    }

    fn add(&mut self, other: &Counts) {
        self.accepted += other.accepted;
        self.rejected += other.rejected;
        self.ignored += other.ignored;
    }
}

/// The `stats` record of a repository.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoStats {
    /// category → confidence → counts.
    #[serde(default)]
    pub by_category: BTreeMap<String, BTreeMap<u8, Counts>>,
    /// severity name → counts.
    #[serde(default)]
    pub by_severity: BTreeMap<String, Counts>,
    /// Findings dropped before publishing, by what dropped them (a learning's id,
    /// `pattern`, `judge`).
    #[serde(default)]
    pub suppressed: BTreeMap<String, u64>,
    /// Findings posted, by category.
    #[serde(default)]
    pub posted: BTreeMap<String, u64>,
    /// Findings suppressed, by category.
    #[serde(default)]
    pub suppressed_by_category: BTreeMap<String, u64>,
    #[serde(default)]
    pub reviews: u64,
    /// Outcomes of blocking findings the judge doubted but could not drop: a rejection is
    /// people agreeing with the judge. How far a team may trust it.
    #[serde(default, skip_serializing_if = "Counts::is_empty")]
    pub doubted: Counts,
    /// The latest outcomes counted, oldest first: (`<pr>/<finding id>`, the verdict the
    /// counts hold for it), at most [`COUNTED_KEEP`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counted: Vec<(String, crate::ports::Verdict)>,
}

/// Where the threshold in force came from, for the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThresholdSource {
    Default,
    File,
    Tuned { decided: u64 },
}

impl RepoStats {
    /// Count one outcome (`delta` +1, or -1 to take back a superseded one).
    pub fn count(
        &mut self,
        category: &str,
        severity: &str,
        confidence: u8,
        verdict: crate::ports::Verdict,
        delta: i64,
    ) {
        let category = category.trim().to_ascii_lowercase();
        let bucket = self
            .by_category
            .entry(category)
            .or_default()
            .entry(confidence.min(100))
            .or_default();
        apply(bucket, verdict, delta);
        apply(
            self.by_severity.entry(severity.to_string()).or_default(),
            verdict,
            delta,
        );
    }

    /// Count `verdict` as the outcome of finding `key` (`<pr>/<id>`), taking back the
    /// verdict counted for it before: the one this record remembers, else `replaces` (what
    /// the finding says was counted, for outcomes older than the memory). Returns whether
    /// anything changed: nothing does when this verdict is already counted for the finding.
    ///
    /// Why the statistics remember what they counted, rather than the finding remembering
    /// what was counted: the counts and the memory of them change in one versioned write,
    /// so a crash between the finding's write and this one, a redelivered event or a
    /// retried job can repeat the call any number of times and the counts move once.
    /// Remembering on the finding instead would take a second write that a crash can
    /// separate from this one, and the retry could not tell whether to count again.
    #[allow(clippy::too_many_arguments)] // the finding's key and what is counted of it
    pub fn count_outcome(
        &mut self,
        key: &str,
        category: &str,
        severity: &str,
        confidence: u8,
        doubted: bool,
        verdict: crate::ports::Verdict,
        replaces: Option<crate::ports::Verdict>,
    ) -> bool {
        let remembered = self.counted.iter().position(|(k, _)| k == key);
        let before = match remembered {
            Some(at) => Some(self.counted.remove(at).1),
            None => replaces,
        };
        if before == Some(verdict) {
            // Already counted: put the memory back where it was found (at the end now,
            // which only makes it live longer).
            self.counted.push((key.to_string(), verdict));
            return false;
        }
        if let Some(old) = before {
            self.count(category, severity, confidence, old, -1);
            if doubted {
                apply(&mut self.doubted, old, -1);
            }
        }
        self.count(category, severity, confidence, verdict, 1);
        if doubted {
            apply(&mut self.doubted, verdict, 1);
        }
        self.counted.push((key.to_string(), verdict));
        if self.counted.len() > COUNTED_KEEP {
            let excess = self.counted.len() - COUNTED_KEEP;
            self.counted.drain(..excess);
        }
        true
    }

    pub fn totals_by_category(&self) -> BTreeMap<&str, Counts> {
        self.by_category
            .iter()
            .map(|(category, buckets)| {
                let mut total = Counts::default();
                for counts in buckets.values() {
                    total.add(counts);
                }
                (category.as_str(), total)
            })
            .collect()
    }

    pub fn total(&self) -> Counts {
        let mut total = Counts::default();
        for counts in self.totals_by_category().values() {
            total.add(counts);
        }
        total
    }

    /// The tuned threshold, or `None` while there is too little evidence or no threshold
    /// reaches the target acceptance (the configured value stands).
    pub fn tuned_threshold(&self) -> Option<u8> {
        let mut by_confidence = [Counts::default(); 101];
        for buckets in self.by_category.values() {
            for (confidence, counts) in buckets {
                by_confidence[usize::from((*confidence).min(100))].add(counts);
            }
        }
        let decided: u64 = by_confidence.iter().map(Counts::decided).sum();
        if decided < MIN_DECIDED {
            return None;
        }
        // Suffix sums: accepted and decided at or above each confidence.
        let mut accepted_from = [0u64; 102];
        let mut decided_from = [0u64; 102];
        for confidence in (0..=100).rev() {
            accepted_from[confidence] =
                accepted_from[confidence + 1] + by_confidence[confidence].accepted;
            decided_from[confidence] =
                decided_from[confidence + 1] + by_confidence[confidence].decided();
        }
        // With nothing decided at or above T, nothing there was rejected: T qualifies.
        (LOWEST..=HIGHEST).find(|t| {
            let t = usize::from(*t);
            accepted_from[t] as f64 >= TARGET_ACCEPTANCE * decided_from[t] as f64
        })
    }
}

fn apply(counts: &mut Counts, verdict: crate::ports::Verdict, delta: i64) {
    let slot = match verdict {
        crate::ports::Verdict::Accepted => &mut counts.accepted,
        crate::ports::Verdict::Rejected => &mut counts.rejected,
        crate::ports::Verdict::Ignored => &mut counts.ignored,
    };
    *slot = slot.saturating_add_signed(delta);
}

/// The confidence threshold in force for a review: the tuned one when `review.autoTune`
/// is on, the repository has the evidence, and `.parley.yml` does not set
/// `review.minConfidence` itself (a team's explicit choice wins); else the file's or the
/// default.
pub fn threshold_in_force(
    configured: u8,
    configured_in_file: bool,
    auto_tune: bool,
    stats: &RepoStats,
) -> (u8, ThresholdSource) {
    if configured_in_file {
        return (configured, ThresholdSource::File);
    }
    if auto_tune && let Some(tuned) = stats.tuned_threshold() {
        return (
            tuned,
            ThresholdSource::Tuned {
                decided: stats.total().decided(),
            },
        );
    }
    (configured, ThresholdSource::Default)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::Verdict::{Accepted, Rejected};

    fn seeded(history: &[(u8, u64, u64)]) -> RepoStats {
        let mut stats = RepoStats::default();
        for (confidence, accepted, rejected) in history {
            for _ in 0..*accepted {
                stats.count("security", "high", *confidence, Accepted, 1);
            }
            for _ in 0..*rejected {
                stats.count("style", "low", *confidence, Rejected, 1);
            }
        }
        stats
    }

    #[test]
    fn the_lowest_threshold_with_ninety_percent_accepted() {
        // Confidence >= 71 (i.e. the 80s and 90s): 18 accepted of 19 decided, 94.7%.
        // Confidence >= 70: 20 of 25, 80%; >= 60: 20 of 30. So T = 71.
        let stats = seeded(&[(90, 10, 0), (80, 8, 1), (70, 2, 4), (60, 0, 5)]);
        assert_eq!(stats.total().decided(), 30);
        assert_eq!(stats.tuned_threshold(), Some(71));
    }

    #[test]
    fn too_little_evidence_tunes_nothing_and_the_clamp_holds() {
        assert_eq!(seeded(&[(90, 10, 9)]).tuned_threshold(), None);
        // Everything accepted: the lowest allowed.
        assert_eq!(seeded(&[(10, 25, 0)]).tuned_threshold(), Some(LOWEST));
        // Nothing ever reaches 90%: nothing is tuned (the configured value stands).
        assert_eq!(seeded(&[(99, 10, 10), (60, 5, 5)]).tuned_threshold(), None);
    }

    #[test]
    fn a_dozen_rejections_cannot_push_a_healthy_repository_to_the_top() {
        // 100 accepted findings across the range, then 12 rejections at confidence 100.
        let mut history: Vec<(u8, u64, u64)> = (50..100).map(|c| (c, 2, 0)).collect();
        history.push((100, 0, 12));
        let stats = seeded(&history);
        let (threshold, _) = threshold_in_force(50, false, true, &stats);
        assert!(threshold < HIGHEST, "{threshold}");
        assert_eq!(
            threshold_in_force(60, false, true, &seeded(&[(100, 0, 30)])).0,
            60
        );
    }

    #[test]
    fn the_file_wins_then_the_tuned_value_then_the_default() {
        let stats = seeded(&[(90, 10, 0), (80, 8, 1), (70, 2, 4), (60, 0, 5)]);
        assert_eq!(
            threshold_in_force(80, true, true, &stats),
            (80, ThresholdSource::File)
        );
        assert_eq!(
            threshold_in_force(75, false, true, &stats),
            (71, ThresholdSource::Tuned { decided: 30 })
        );
        assert_eq!(
            threshold_in_force(75, false, false, &stats),
            (75, ThresholdSource::Default)
        );
        assert_eq!(
            threshold_in_force(75, false, true, &RepoStats::default()),
            (75, ThresholdSource::Default)
        );
    }

    #[test]
    fn an_outcome_counts_once_however_often_it_is_counted() {
        let mut stats = RepoStats::default();
        assert!(stats.count_outcome("1/f_a", "bug", "high", 80, false, Rejected, None));
        assert!(!stats.count_outcome("1/f_a", "bug", "high", 80, false, Rejected, None));
        assert_eq!(stats.total().rejected, 1);
        // A later verdict replaces the counted one, once.
        assert!(stats.count_outcome("1/f_a", "bug", "high", 80, false, Accepted, Some(Rejected)));
        assert!(!stats.count_outcome("1/f_a", "bug", "high", 80, false, Accepted, Some(Rejected)));
        assert_eq!(
            (stats.total().accepted, stats.total().rejected),
            (1, 0),
            "the rejection was taken back"
        );
        // An outcome counted before the memory existed is taken back by what the finding
        // says it replaces.
        let mut legacy = seeded(&[(80, 0, 1)]);
        assert!(legacy.count_outcome("2/f_b", "style", "low", 80, false, Accepted, Some(Rejected)));
        assert_eq!((legacy.total().accepted, legacy.total().rejected), (1, 0));
        assert!(legacy.doubted.is_empty(), "not a finding the judge doubted");
        // One the judge doubted is counted for the judge too, and taken back with it.
        assert!(stats.count_outcome("1/f_c", "bug", "critical", 90, true, Rejected, None));
        assert!(stats.count_outcome("1/f_c", "bug", "critical", 90, true, Accepted, None));
        assert_eq!(
            (stats.doubted.accepted, stats.doubted.rejected),
            (1, 0),
            "the later verdict replaces the earlier for the judge too"
        );
    }

    #[test]
    fn the_memory_of_counted_outcomes_is_bounded() {
        let mut stats = RepoStats::default();
        for i in 0..COUNTED_KEEP + 10 {
            stats.count_outcome(&format!("1/f_{i}"), "bug", "low", 60, false, Accepted, None);
        }
        assert_eq!(stats.counted.len(), COUNTED_KEEP);
        assert_eq!(
            stats.counted[0].0, "1/f_10",
            "the oldest are forgotten first"
        );
        assert_eq!(stats.total().accepted, (COUNTED_KEEP + 10) as u64);
    }

    #[test]
    fn a_taken_back_outcome_leaves_no_trace() {
        let mut stats = RepoStats::default();
        stats.count("bug", "high", 80, Accepted, 1);
        stats.count("bug", "high", 80, Accepted, -1);
        stats.count("bug", "high", 80, Rejected, 1);
        assert_eq!(
            stats.total(),
            Counts {
                accepted: 0,
                rejected: 1,
                ignored: 0
            }
        );
    }
}
