//! False-positive patterns: what a repository keeps rejecting.
//!
//! Every rejected finding feeds a pattern, keyed by its category, its *path pattern* (the
//! directory and extension: `src/db/*.rs`) and its normalised title. A new finding
//! **matches** a pattern when its fingerprint is one the pattern has seen, or when it has
//! the same category and path pattern and a similar title: token Jaccard similarity of
//! the normalised titles at least [`TITLE_SIMILARITY`].
//!
//! A matching finding loses [`PENALTY_PER_REJECTION`] confidence points per rejection
//! (at most [`MAX_PENALTY`]), and is **dropped** once the pattern has at least
//! [`DROP_AFTER`] rejections from at least [`DISTINCT_PEOPLE`] different people across
//! at least [`DISTINCT_PRS`] pull requests: one annoyed person on one PR (three 👎 on
//! one review) must not silence a kind of finding for everyone.
//!
//! Never on outcomes alone: critical findings, and high ones in security or correctness,
//! are neither down-weighted nor dropped by patterns (a team dismisses those explicitly,
//! with a learning, or not at all).

use crate::ports::{Finding, Severity};
use crate::review::merge::{Candidate, normalise_title, title_words};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashSet};
use time::OffsetDateTime;

pub const TITLE_SIMILARITY: f64 = 0.6;
pub const PENALTY_PER_REJECTION: u8 = 10;
pub const MAX_PENALTY: u8 = 30;
pub const DROP_AFTER: u32 = 3;
pub const DISTINCT_PEOPLE: usize = 2;
pub const DISTINCT_PRS: usize = 2;
/// Fingerprints, people and PRs kept per pattern: enough to decide, bounded in size.
const KEEP: usize = 50;

pub const PATTERN_PREFIX: &str = "pattern#";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pattern {
    pub category: String,
    pub path_pattern: String,
    /// The normalised title of the first rejection.
    pub title: String,
    #[serde(default)]
    pub fingerprints: BTreeSet<String>,
    pub rejections: u32,
    #[serde(default)]
    pub people: BTreeSet<String>,
    #[serde(default)]
    pub prs: BTreeSet<u64>,
    #[serde(with = "time::serde::rfc3339")]
    pub last_at: OffsetDateTime,
}

/// What patterns do to one finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    None,
    /// Confidence lowered by this much.
    Penalised {
        by: u8,
        pattern: String,
    },
    Dropped {
        pattern: String,
    },
}

impl Pattern {
    /// The sort key of the pattern a rejected finding feeds.
    pub fn key_for(category: &str, path: &str, title: &str) -> String {
        use sha2::{Digest, Sha256};
        let mut hasher = Sha256::new();
        hasher.update(category.trim().to_ascii_lowercase().as_bytes());
        hasher.update([0]);
        hasher.update(path_pattern(path).as_bytes());
        hasher.update([0]);
        hasher.update(normalise_title(title).as_bytes());
        format!("{PATTERN_PREFIX}{}", hex::encode(&hasher.finalize()[..8]))
    }

    pub fn new(finding: &Finding, now: OffsetDateTime) -> Self {
        Pattern {
            category: finding.category.trim().to_ascii_lowercase(),
            path_pattern: path_pattern(&finding.path),
            title: normalise_title(&finding.title),
            fingerprints: BTreeSet::new(),
            rejections: 0,
            people: BTreeSet::new(),
            prs: BTreeSet::new(),
            last_at: now,
        }
    }

    /// Count one rejection of `finding` by `by`.
    pub fn reject(&mut self, finding: &Finding, by: Option<&str>, now: OffsetDateTime) {
        self.rejections = self.rejections.saturating_add(1);
        if self.fingerprints.len() < KEEP {
            self.fingerprints.insert(finding.fingerprint.clone());
        }
        if let Some(by) = by
            && self.people.len() < KEEP
        {
            self.people.insert(by.to_ascii_lowercase());
        }
        if self.prs.len() < KEEP {
            self.prs.insert(finding.pr);
        }
        self.last_at = now;
    }

    fn matches(&self, candidate: &Candidate) -> bool {
        self.fingerprints.contains(&candidate.fingerprint)
            || (self.category == candidate.category.trim().to_ascii_lowercase()
                && self.path_pattern == path_pattern(&candidate.path)
                && jaccard(&self.title, &normalise_title(&candidate.title)) >= TITLE_SIMILARITY)
    }

    fn may_drop(&self) -> bool {
        self.rejections >= DROP_AFTER
            && self.people.len() >= DISTINCT_PEOPLE
            && self.prs.len() >= DISTINCT_PRS
    }
}

/// Findings patterns never touch: outcomes alone must not silence these.
pub fn protected(severity: Severity, category: &str) -> bool {
    let category = category.to_ascii_lowercase();
    severity == Severity::Critical
        || (severity == Severity::High
            && (category.contains("security") || category.contains("correct")))
}

/// The strongest effect of `patterns` on `candidate` (a drop beats a penalty; the
/// largest penalty wins).
pub fn effect(patterns: &[(String, Pattern)], candidate: &Candidate) -> Effect {
    if protected(candidate.severity, &candidate.category) {
        return Effect::None;
    }
    let mut best = Effect::None;
    for (key, pattern) in patterns.iter().filter(|(_, p)| p.matches(candidate)) {
        if pattern.may_drop() {
            return Effect::Dropped {
                pattern: key.clone(),
            };
        }
        let by = (PENALTY_PER_REJECTION as u32 * pattern.rejections).min(MAX_PENALTY as u32) as u8;
        if !matches!(&best, Effect::Penalised { by: current, .. } if *current >= by) {
            best = Effect::Penalised {
                by,
                pattern: key.clone(),
            };
        }
    }
    best
}

/// `src/db/users.rs` → `src/db/*.rs`; `Makefile` → `*`.
pub fn path_pattern(path: &str) -> String {
    let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
    let ext = file.rsplit_once('.').map(|(_, ext)| ext);
    let name = ext.map_or_else(|| "*".to_string(), |ext| format!("*.{ext}"));
    if dir.is_empty() {
        name
    } else {
        format!("{dir}/{name}")
    }
}

/// Jaccard similarity of two normalised titles' words ([`title_words`]).
pub fn jaccard(a: &str, b: &str) -> f64 {
    let a: HashSet<String> = title_words(a).into_iter().collect();
    let b: HashSet<String> = title_words(b).into_iter().collect();
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let common = a.intersection(&b).count() as f64;
    common / a.union(&b).count() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(path: &str, title: &str, severity: Severity, category: &str) -> Candidate {
        Candidate {
            fingerprint: format!("fp-{title}"),
            ..Candidate::sample(path, severity, category, title)
        }
    }

    fn rejected(title: &str, rejections: &[(&str, u64)]) -> (String, Pattern) {
        let finding = Finding {
            id: "f".into(),
            fingerprint: "fp-old".into(),
            severity: Severity::Low,
            category: "style".into(),
            confidence: 80,
            head_sha: "h".into(),
            ..Finding::sample("src/db/users.rs", title)
        };
        let mut pattern = Pattern::new(&finding, OffsetDateTime::UNIX_EPOCH);
        for (who, pr) in rejections {
            let mut on = finding.clone();
            on.pr = *pr;
            pattern.reject(&on, Some(who), OffsetDateTime::UNIX_EPOCH);
        }
        (Pattern::key_for("style", &finding.path, title), pattern)
    }

    #[test]
    fn similar_titles_in_the_same_place_are_penalised_per_rejection() {
        let patterns = vec![rejected(
            "Prefer iterator over index loop",
            &[("bob", 1), ("bob", 1)],
        )];
        let similar = candidate(
            "src/db/orders.rs",
            "Prefer an iterator over the index loop",
            Severity::Low,
            "style",
        );
        assert!(matches!(
            effect(&patterns, &similar),
            Effect::Penalised { by: 20, .. }
        ));
        // Another directory, another category, another title: untouched.
        for other in [
            candidate(
                "src/api/orders.rs",
                "Prefer an iterator over the index loop",
                Severity::Low,
                "style",
            ),
            candidate(
                "src/db/orders.rs",
                "Prefer an iterator over the index loop",
                Severity::Low,
                "performance",
            ),
            candidate(
                "src/db/orders.rs",
                "Unbounded retry loop",
                Severity::Low,
                "style",
            ),
        ] {
            assert_eq!(effect(&patterns, &other), Effect::None, "{other:?}");
        }
    }

    #[test]
    fn dropping_needs_three_rejections_two_people_two_prs() {
        let c = candidate(
            "src/db/x.rs",
            "Prefer iterator over index loop",
            Severity::Medium,
            "style",
        );
        let one_person = vec![rejected(
            "Prefer iterator over index loop",
            &[("bob", 1), ("bob", 2), ("bob", 3)],
        )];
        assert!(matches!(
            effect(&one_person, &c),
            Effect::Penalised { by: 30, .. }
        ));
        let one_pr = vec![rejected(
            "Prefer iterator over index loop",
            &[("bob", 1), ("amy", 1), ("cat", 1)],
        )];
        assert!(matches!(effect(&one_pr, &c), Effect::Penalised { .. }));
        let enough = vec![rejected(
            "Prefer iterator over index loop",
            &[("bob", 1), ("amy", 2), ("bob", 2)],
        )];
        assert!(matches!(effect(&enough, &c), Effect::Dropped { .. }));
    }

    #[test]
    fn critical_and_high_security_or_correctness_are_never_touched() {
        let patterns = vec![rejected(
            "Prefer iterator over index loop",
            &[("bob", 1), ("amy", 2), ("cat", 3)],
        )];
        for (severity, category) in [
            (Severity::Critical, "style"),
            (Severity::High, "security"),
            (Severity::High, "correctness"),
        ] {
            let mut c = candidate(
                "src/db/x.rs",
                "Prefer iterator over index loop",
                severity,
                category,
            );
            c.fingerprint = "fp-old".into();
            assert_eq!(
                effect(&patterns, &c),
                Effect::None,
                "{severity:?} {category}"
            );
        }
    }

    #[test]
    fn path_patterns_and_similarity() {
        assert_eq!(path_pattern("src/db/users.rs"), "src/db/*.rs");
        assert_eq!(path_pattern("Makefile"), "*");
        assert_eq!(path_pattern("a/b/c"), "a/b/*");
        assert!((jaccard("a b c", "a b d") - 0.5).abs() < 1e-9);
        assert_eq!(jaccard("", ""), 1.0);
        assert_eq!(jaccard("x", ""), 0.0);
        // Japanese has no spaces: one title would be one word, and a rewording of a
        // rejected finding would match nothing. By character pairs it does, and
        // another problem still does not.
        let rejected = normalise_title("インデックスループよりイテレータを使う");
        let reworded = normalise_title("インデックスループではなくイテレータを使う");
        assert!(jaccard(&rejected, &reworded) >= TITLE_SIMILARITY);
        let other = normalise_title("無制限のリトライループ");
        assert!(jaccard(&rejected, &other) < TITLE_SIMILARITY);
    }
}
