//! Few, right findings: a confidence threshold, then a cap on inline comments.
//!
//! Nothing is dropped silently. The summary states how many findings fell under
//! `review.minConfidence` and which setting would show them, and findings over
//! `review.maxInlineComments` are listed in the summary instead of inline.

use crate::ports::Severity;
use crate::review::merge::Candidate;

#[derive(Debug, Clone, Default)]
pub struct Filtered {
    /// Posted as inline comments, most important first.
    pub inline: Vec<Candidate>,
    /// Reported in the summary: off the diff, or over the inline cap.
    pub in_summary: Vec<Candidate>,
    /// Below the confidence threshold: counted, not shown.
    pub below_threshold: Vec<Candidate>,
    pub min_confidence: u8,
}

impl Filtered {
    /// Every finding that is reported, inline or in the summary.
    pub fn reported(&self) -> impl Iterator<Item = &Candidate> {
        self.inline.iter().chain(self.in_summary.iter())
    }

    /// The `review.minConfidence` that would have included every filtered finding.
    pub fn threshold_to_include_all(&self) -> Option<u8> {
        self.below_threshold.iter().map(|c| c.confidence).min()
    }
}

/// Which findings become inline comments: on the diff, within the cap, at or above the
/// severity, or one the gate counts (its thread is where it is resolved).
#[derive(Debug, Clone, Copy)]
pub struct Inline<'a> {
    pub max: u32,
    pub min_severity: Severity,
    pub blocking: &'a [Severity],
}

impl Inline<'_> {
    /// Every finding on the diff, up to `max`.
    pub fn up_to(max: u32) -> Inline<'static> {
        Inline {
            max,
            min_severity: Severity::Nit,
            blocking: &[],
        }
    }

    fn wants(&self, candidate: &Candidate) -> bool {
        candidate.on_diff
            && (candidate.severity >= self.min_severity
                || self.blocking.contains(&candidate.severity))
    }
}

pub fn apply(candidates: Vec<Candidate>, min_confidence: u8, inline: Inline<'_>) -> Filtered {
    apply_with(candidates, min_confidence, |_| min_confidence, inline)
}

/// [`apply`] with a threshold per finding: a learning that makes Parley stricter or more
/// lenient about a category (or a path) moves that category's threshold. `base` is the
/// threshold in force elsewhere, as the summary reports it.
pub fn apply_with(
    candidates: Vec<Candidate>,
    base: u8,
    threshold: impl Fn(&Candidate) -> u8,
    inline: Inline<'_>,
) -> Filtered {
    let mut filtered = Filtered {
        min_confidence: base,
        ..Filtered::default()
    };
    let mut kept: Vec<Candidate> = Vec::new();
    for candidate in candidates {
        if candidate.confidence < threshold(&candidate) {
            filtered.below_threshold.push(candidate);
        } else {
            kept.push(candidate);
        }
    }
    // Highest severity first, then most confident; stable, so equal findings keep the
    // order the passes reported them in.
    kept.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(b.confidence.cmp(&a.confidence))
    });
    let cap = usize::try_from(inline.max).unwrap_or(usize::MAX);
    for candidate in kept {
        if inline.wants(&candidate) && filtered.inline.len() < cap {
            filtered.inline.push(candidate);
        } else {
            filtered.in_summary.push(candidate);
        }
    }
    filtered
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(title: &str, severity: Severity, confidence: u8, on_diff: bool) -> Candidate {
        Candidate {
            line: 1,
            confidence,
            passes: vec!["correctness".into()],
            on_diff,
            ..Candidate::sample("a.rs", severity, "bug", title)
        }
    }

    #[test]
    fn threshold_then_cap_by_severity_and_confidence() {
        let filtered = apply(
            vec![
                candidate("low", Severity::Low, 99, true),
                candidate("unsure", Severity::Critical, 60, true),
                candidate("high-80", Severity::High, 80, true),
                candidate("high-95", Severity::High, 95, true),
                candidate("off", Severity::Critical, 90, false),
            ],
            75,
            Inline::up_to(2),
        );
        let titles = |list: &[Candidate]| list.iter().map(|c| c.title.clone()).collect::<Vec<_>>();
        assert_eq!(titles(&filtered.inline), ["high-95", "high-80"]);
        assert_eq!(titles(&filtered.in_summary), ["off", "low"]);
        assert_eq!(titles(&filtered.below_threshold), ["unsure"]);
        assert_eq!(filtered.threshold_to_include_all(), Some(60));
        assert_eq!(filtered.reported().count(), 4);
    }

    #[test]
    fn findings_under_the_inline_severity_go_to_the_summary_unless_they_block() {
        let inline = Inline {
            max: 10,
            min_severity: Severity::High,
            blocking: &[Severity::Critical, Severity::Medium],
        };
        let filtered = apply(
            vec![
                candidate("nit", Severity::Nit, 90, true),
                candidate("medium", Severity::Medium, 90, true),
                candidate("high", Severity::High, 90, true),
                candidate("low", Severity::Low, 90, true),
            ],
            75,
            inline,
        );
        let titles = |list: &[Candidate]| list.iter().map(|c| c.title.clone()).collect::<Vec<_>>();
        assert_eq!(titles(&filtered.inline), ["high", "medium"]);
        assert_eq!(titles(&filtered.in_summary), ["low", "nit"]);
    }
}
