//! Few, right findings: a confidence threshold, then a cap on inline comments.
//!
//! Nothing is dropped silently. The summary states how many findings fell under
//! `review.minConfidence` and which setting would show them, and findings over
//! `review.maxInlineComments` are listed in the summary instead of inline.
//!
//! One problem at several places (the same unchecked `unwrap` in five handlers) is one
//! inline comment that names the other places, which are listed in the summary: five
//! comments saying the same thing are noise, and would take the cap from findings that
//! say something else. Only below the gate's severities: a finding the gate counts keeps
//! its own thread, where it is resolved once that place is fixed.

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

    fn blocks(&self, candidate: &Candidate) -> bool {
        self.blocking.contains(&candidate.severity)
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
    // Each inline finding with the places of the same problem folded into it.
    let mut posted: Vec<(Candidate, Vec<String>)> = Vec::new();
    for mut candidate in kept {
        if inline.wants(&candidate) && posted.len() < cap {
            let first = (!inline.blocks(&candidate))
                .then(|| {
                    posted.iter().position(|(first, _)| {
                        !inline.blocks(first)
                            && crate::review::merge::same_problem_elsewhere(first, &candidate)
                    })
                })
                .flatten();
            match first {
                Some(at) => {
                    let (first, places) = &mut posted[at];
                    places.push(format!("`{}:{}`", candidate.path, candidate.line));
                    candidate.body.push_str(&format!(
                        "\n\nThe same problem as the finding posted at `{}:{}`.",
                        first.path, first.line
                    ));
                    filtered.in_summary.push(candidate);
                }
                None => posted.push((candidate, Vec::new())),
            }
        } else {
            filtered.in_summary.push(candidate);
        }
    }
    filtered.inline = posted
        .into_iter()
        .map(|(mut first, places)| {
            if !places.is_empty() {
                first.body.push_str(&format!(
                    "\n\nThe same in this PR at {} (listed in the review's summary).",
                    places.join(", ")
                ));
            }
            first
        })
        .collect();
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

    /// One problem at three places is one inline comment naming the other two, which the
    /// summary lists; another kind of problem, and one the gate counts, keep their own.
    #[test]
    fn one_problem_at_several_places_is_one_comment_naming_the_others() {
        let at =
            |path: &str, line: u32, severity: Severity, category: &str, title: &str| Candidate {
                line,
                ..Candidate::sample(path, severity, category, title)
            };
        let filtered = apply(
            vec![
                at(
                    "src/a.rs",
                    10,
                    Severity::Medium,
                    "error-handling",
                    "Unwrap on a parsed header",
                ),
                at(
                    "src/b.rs",
                    20,
                    Severity::Medium,
                    "error-handling",
                    "unwrap() on parsed header",
                ),
                at(
                    "src/c.rs",
                    30,
                    Severity::Low,
                    "error-handling",
                    "Unwrap on a parsed header value",
                ),
                at(
                    "src/d.rs",
                    40,
                    Severity::Medium,
                    "style",
                    "Unwrap on a parsed header",
                ),
                at(
                    "src/e.rs",
                    50,
                    Severity::High,
                    "error-handling",
                    "Unwrap on a parsed header",
                ),
                at(
                    "src/f.rs",
                    60,
                    Severity::High,
                    "error-handling",
                    "Unwrap on a parsed header",
                ),
                at(
                    "src/g.rs",
                    70,
                    Severity::Medium,
                    "error-handling",
                    "Timeout missing on the client",
                ),
            ],
            75,
            Inline {
                max: 10,
                min_severity: Severity::Nit,
                blocking: &[Severity::High],
            },
        );
        let places = |list: &[Candidate]| list.iter().map(|c| c.path.clone()).collect::<Vec<_>>();
        assert_eq!(
            places(&filtered.inline),
            ["src/e.rs", "src/f.rs", "src/a.rs", "src/d.rs", "src/g.rs"]
        );
        assert_eq!(places(&filtered.in_summary), ["src/b.rs", "src/c.rs"]);
        assert!(
            filtered.inline[2].body.ends_with(
                "\n\nThe same in this PR at `src/b.rs:20`, `src/c.rs:30` (listed in the review's summary)."
            ),
            "{}",
            filtered.inline[2].body
        );
        assert!(
            filtered
                .inline
                .iter()
                .filter(|c| c.body.contains("The same"))
                .count()
                == 1
        );
        assert!(
            filtered.in_summary[0]
                .body
                .ends_with("\n\nThe same problem as the finding posted at `src/a.rs:10`."),
            "{}",
            filtered.in_summary[0].body
        );
        assert_eq!(filtered.reported().count(), 7, "every finding is reported");
    }
}
