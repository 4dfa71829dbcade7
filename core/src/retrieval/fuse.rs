//! Fusion: one ranked list out of lexical and vector lists of five corpora.
//!
//! Scores of BM25 and cosine are not comparable, nor are scores across corpora, so only
//! ranks are used (Reciprocal Rank Fusion, Cormack et al. 2009):
//!
//! ```text
//! rrf(d)   = Σ over the lists l of d's corpus that hold d:  weight(corpus, trigger) / (60 + rank_l(d))
//! score(d) = rrf(d) × recency(d) × language(d)
//! recency  = 0.5 + 0.5 × 2^(−age_days / 90)      (1 today, 0.75 at 90 days, → 0.5; none for
//!                                                  learnings and guidelines: current rules)
//! language = 1.2 when d's language is the query's, else 1
//! ```
//!
//! Ranks are 1-based. Within each corpus, near-duplicates are removed after scoring: an
//! item whose token set has a Jaccard similarity >= 0.9 with a better-scored item of the
//! same corpus is dropped (and counted), so three copies of one hunk do not crowd out
//! everything else. The weights lean a review on code and past findings and a question on
//! threads and learnings.

use super::candidate::{Candidate, Source};
use super::lexical::Hit;
use super::provenance::{Cited, DropReason, Dropped, Provenance};
use super::tokens::{TokenSet, jaccard, token_set};
use std::collections::BTreeMap;
use time::OffsetDateTime;

/// The RRF constant: dampens the difference between the first ranks.
pub const RRF_K: f64 = 60.0;

/// What retrieval serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// A review's specialist or judge prompt.
    Review,
    /// A question or reply in a conversation.
    Question,
}

/// How much each corpus counts for a trigger.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    pub code: f64,
    pub finding: f64,
    pub thread: f64,
    pub learning: f64,
    pub guideline: f64,
}

impl Weights {
    pub fn for_trigger(trigger: Trigger) -> Self {
        match trigger {
            Trigger::Review => Weights {
                code: 1.0,
                finding: 1.0,
                thread: 0.5,
                learning: 0.6,
                guideline: 0.6,
            },
            Trigger::Question => Weights {
                code: 0.6,
                finding: 0.7,
                thread: 1.0,
                learning: 1.0,
                guideline: 0.8,
            },
        }
    }

    pub fn of(&self, source: Source) -> f64 {
        match source {
            Source::Code => self.code,
            Source::Finding => self.finding,
            Source::Thread => self.thread,
            Source::Learning => self.learning,
            Source::Guideline => self.guideline,
        }
    }
}

/// Fusion settings; [`Fusion::for_trigger`] gives the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    pub weights: Weights,
    /// Age at which the recency factor is halfway between 1 and its floor of 0.5.
    pub half_life_days: f64,
    pub language_boost: f64,
    /// Token Jaccard similarity at or above which two items of a corpus are duplicates.
    pub duplicate_jaccard: f64,
}

impl Fusion {
    pub fn for_trigger(trigger: Trigger) -> Self {
        Fusion {
            weights: Weights::for_trigger(trigger),
            half_life_days: 90.0,
            language_boost: 1.2,
            duplicate_jaccard: 0.9,
        }
    }
}

/// One corpus's ranked lists; hits index into the candidates slice given to [`fuse`].
#[derive(Debug, Clone, PartialEq)]
pub struct Lists {
    pub source: Source,
    pub lexical: Vec<Hit>,
    pub vector: Vec<Hit>,
}

/// A fused item and how its score came about.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    /// Into the candidates slice.
    pub index: usize,
    pub score: f64,
    pub rrf: f64,
    pub recency: f64,
    pub language: f64,
    pub lexical_rank: Option<usize>,
    pub vector_rank: Option<usize>,
}

/// Merge `lists` into one ranking, best first (ties by corpus, then key), without
/// near-duplicates; drops are recorded in `provenance`.
pub fn fuse(
    candidates: &[Candidate],
    lists: &[Lists],
    fusion: &Fusion,
    query_language: Option<&str>,
    now: OffsetDateTime,
    provenance: &mut Provenance,
) -> Vec<Fused> {
    let mut all = Vec::new();
    for list in lists {
        let mut merged = merge(list, fusion.weights.of(list.source));
        for item in merged.values_mut() {
            let candidate = &candidates[item.index];
            item.recency = recency(candidate.updated_at, now, fusion.half_life_days);
            item.language = match (query_language, candidate.language.as_deref()) {
                (Some(q), Some(c)) if q.eq_ignore_ascii_case(c) => fusion.language_boost,
                _ => 1.0,
            };
            item.score = item.rrf * item.recency * item.language;
        }
        let mut ranked: Vec<Fused> = merged.into_values().collect();
        sort(&mut ranked, candidates);
        all.extend(without_duplicates(
            ranked,
            candidates,
            fusion.duplicate_jaccard,
            provenance,
        ));
    }
    sort(&mut all, candidates);
    all
}

/// RRF over one corpus's lexical and vector lists.
fn merge(list: &Lists, weight: f64) -> BTreeMap<usize, Fused> {
    let mut merged: BTreeMap<usize, Fused> = BTreeMap::new();
    let entry = |merged: &mut BTreeMap<usize, Fused>, index: usize| {
        merged.entry(index).or_insert_with(|| Fused {
            index,
            score: 0.0,
            rrf: 0.0,
            recency: 1.0,
            language: 1.0,
            lexical_rank: None,
            vector_rank: None,
        });
    };
    for (position, hit) in list.lexical.iter().enumerate() {
        entry(&mut merged, hit.index);
        if let Some(item) = merged.get_mut(&hit.index) {
            item.lexical_rank = Some(position + 1);
            item.rrf += weight / (RRF_K + (position + 1) as f64);
        }
    }
    for (position, hit) in list.vector.iter().enumerate() {
        entry(&mut merged, hit.index);
        if let Some(item) = merged.get_mut(&hit.index) {
            item.vector_rank = Some(position + 1);
            item.rrf += weight / (RRF_K + (position + 1) as f64);
        }
    }
    merged
}

/// 0.5 + 0.5 × 2^(−age / half-life); 1 for no date or a date in the future.
pub fn recency(
    updated_at: Option<OffsetDateTime>,
    now: OffsetDateTime,
    half_life_days: f64,
) -> f64 {
    let Some(at) = updated_at else {
        return 1.0;
    };
    if half_life_days <= 0.0 {
        return 1.0;
    }
    let age_days = ((now - at).as_seconds_f64() / 86_400.0).max(0.0);
    0.5 + 0.5 * (-age_days / half_life_days).exp2()
}

fn sort(items: &mut [Fused], candidates: &[Candidate]) {
    items.sort_by(|a, b| {
        let (ca, cb) = (&candidates[a.index], &candidates[b.index]);
        b.score
            .total_cmp(&a.score)
            .then_with(|| ca.source.cmp(&cb.source))
            .then_with(|| ca.key.cmp(&cb.key))
    });
}

/// Keep the better-ranked of each pair of near-duplicates (`ranked` is best first).
fn without_duplicates(
    ranked: Vec<Fused>,
    candidates: &[Candidate],
    threshold: f64,
    provenance: &mut Provenance,
) -> Vec<Fused> {
    let mut kept: Vec<(Fused, TokenSet)> = Vec::with_capacity(ranked.len());
    for item in ranked {
        let candidate = &candidates[item.index];
        let tokens = token_set(&candidate.text);
        // Jaccard is at most |smaller| / |larger|: most pairs are ruled out by size alone.
        let could_match = |other: &TokenSet| {
            let (small, large) = (tokens.len().min(other.len()), tokens.len().max(other.len()));
            large == 0 || small as f64 / large as f64 >= threshold
        };
        let original = kept
            .iter()
            .find(|(_, other)| could_match(other) && jaccard(&tokens, other) >= threshold)
            .map(|(k, _)| candidates[k.index].key.clone());
        match original {
            Some(of) => {
                provenance.counts(candidate.source).near_duplicates += 1;
                provenance.dropped.push(Dropped {
                    item: Cited::of(candidate, item.score),
                    reason: DropReason::NearDuplicate { of },
                });
            }
            None => kept.push((item, tokens)),
        }
    }
    kept.into_iter().map(|(item, _)| item).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-05-01 0:00 UTC);

    fn candidate(source: Source, key: &str, text: &str) -> Candidate {
        Candidate::text(source, key, text)
    }

    fn hits(indices: &[usize]) -> Vec<Hit> {
        indices
            .iter()
            .map(|&index| Hit { index, score: 1.0 })
            .collect()
    }

    fn plain(weights: Weights) -> Fusion {
        Fusion {
            weights,
            half_life_days: 90.0,
            language_boost: 1.2,
            duplicate_jaccard: 0.9,
        }
    }

    const ONES: Weights = Weights {
        code: 1.0,
        finding: 1.0,
        thread: 1.0,
        learning: 1.0,
        guideline: 1.0,
    };

    #[test]
    fn rrf_arithmetic_on_a_fixed_example() {
        // Code: lexical [c0, c1, c2], vector [c1, c0]. Findings: lexical [f3], vector [f4, f3].
        let candidates = vec![
            candidate(Source::Code, "c0", "alpha one"),
            candidate(Source::Code, "c1", "beta two"),
            candidate(Source::Code, "c2", "gamma three"),
            candidate(Source::Finding, "f3", "delta four"),
            candidate(Source::Finding, "f4", "epsilon five"),
        ];
        let lists = [
            Lists {
                source: Source::Code,
                lexical: hits(&[0, 1, 2]),
                vector: hits(&[1, 0]),
            },
            Lists {
                source: Source::Finding,
                lexical: hits(&[3]),
                vector: hits(&[4, 3]),
            },
        ];
        let weights = Weights {
            finding: 0.5,
            ..ONES
        };
        let mut provenance = Provenance::default();
        let fused = fuse(
            &candidates,
            &lists,
            &plain(weights),
            None,
            NOW,
            &mut provenance,
        );
        let got: Vec<(&str, f64)> = fused
            .iter()
            .map(|f| (candidates[f.index].key.as_str(), f.score))
            .collect();
        // Hand-computed: c0 = 1/61 + 1/62, c1 = 1/62 + 1/61 (equal: tie broken by key),
        // c2 = 1/63, f3 = 0.5/61 + 0.5/62, f4 = 0.5/61.
        let expected = [
            ("c0", 1.0 / 61.0 + 1.0 / 62.0),
            ("c1", 1.0 / 62.0 + 1.0 / 61.0),
            ("f3", 0.5 / 61.0 + 0.5 / 62.0),
            ("c2", 1.0 / 63.0),
            ("f4", 0.5 / 61.0),
        ];
        assert_eq!(got.len(), expected.len());
        for ((key, score), (want_key, want)) in got.iter().zip(expected) {
            assert_eq!(*key, want_key);
            assert!((score - want).abs() < 1e-12, "{key}: {score} vs {want}");
        }
        assert_eq!(fused[0].lexical_rank, Some(1));
        assert_eq!(fused[0].vector_rank, Some(2));
        assert!(provenance.dropped.is_empty());
    }

    #[test]
    fn near_duplicates_within_a_corpus_keep_the_better_ranked() {
        let text =
            "fn total(items: &[Item]) -> u64 { items.iter().map(|i| i.price * i.count).sum() }";
        let candidates = vec![
            candidate(Source::Code, "a", text),
            // The same tokens (trailing space): Jaccard 1.0.
            candidate(Source::Code, "b", &format!("{text} ")),
            candidate(Source::Code, "c", "fn render(page: Page) -> Html"),
            // The same text in another corpus is not a duplicate of the code.
            candidate(Source::Finding, "d", text),
        ];
        let lists = [
            Lists {
                source: Source::Code,
                lexical: hits(&[1, 0, 2]),
                vector: Vec::new(),
            },
            Lists {
                source: Source::Finding,
                lexical: hits(&[3]),
                vector: Vec::new(),
            },
        ];
        let (keys, provenance) = fused_keys(&candidates, &lists);
        // b and d tie at 1/61 (corpus order breaks it); a (1/62) is b's duplicate.
        assert_eq!(keys, ["b", "d", "c"]);
        assert_eq!(provenance.dropped.len(), 1);
        assert_eq!(provenance.dropped[0].item.key, "a");
        assert_eq!(
            provenance.dropped[0].reason,
            DropReason::NearDuplicate { of: "b".into() }
        );
        assert_eq!(provenance.sources[&Source::Code].near_duplicates, 1);

        // The rule is ">= 0.9": nine of ten tokens (9/10 = 0.9) is a duplicate; eight
        // shared with one new (8/11 ≈ 0.73) is not.
        let ten = "aa bb cc dd ee ff gg hh ii jj";
        let nine = "aa bb cc dd ee ff gg hh ii";
        let eight = "aa bb cc dd ee ff gg hh kk";
        let candidates = vec![
            candidate(Source::Thread, "ten", ten),
            candidate(Source::Thread, "nine", nine),
            candidate(Source::Thread, "eight", eight),
        ];
        let lists = [Lists {
            source: Source::Thread,
            lexical: hits(&[0, 1, 2]),
            vector: Vec::new(),
        }];
        assert_eq!(fused_keys(&candidates, &lists).0, ["ten", "eight"]);
    }

    /// [`fuse`] with equal weights, no language, now: the keys in fused order, and the
    /// provenance it filled.
    fn fused_keys(candidates: &[Candidate], lists: &[Lists]) -> (Vec<String>, Provenance) {
        let mut provenance = Provenance::default();
        let fused = fuse(candidates, lists, &plain(ONES), None, NOW, &mut provenance);
        let keys = fused
            .iter()
            .map(|f| candidates[f.index].key.clone())
            .collect();
        (keys, provenance)
    }

    #[test]
    fn weights_follow_the_trigger() {
        // One code hit and one thread hit, both first in their lists.
        let candidates = vec![
            candidate(Source::Code, "code", "x1"),
            candidate(Source::Thread, "thread", "y1"),
        ];
        let lists = [
            Lists {
                source: Source::Code,
                lexical: hits(&[0]),
                vector: Vec::new(),
            },
            Lists {
                source: Source::Thread,
                lexical: hits(&[1]),
                vector: Vec::new(),
            },
        ];
        let first = |trigger| {
            let fused = fuse(
                &candidates,
                &lists,
                &Fusion::for_trigger(trigger),
                None,
                NOW,
                &mut Provenance::default(),
            );
            candidates[fused[0].index].key.clone()
        };
        assert_eq!(first(Trigger::Review), "code");
        assert_eq!(first(Trigger::Question), "thread");
    }

    #[test]
    fn recency_halves_towards_its_floor() {
        let day = time::Duration::days(1);
        assert!((recency(Some(NOW), NOW, 90.0) - 1.0).abs() < 1e-12);
        assert!((recency(Some(NOW - day * 90), NOW, 90.0) - 0.75).abs() < 1e-12);
        assert!((recency(Some(NOW - day * 180), NOW, 90.0) - 0.625).abs() < 1e-12);
        assert!((recency(Some(NOW + day), NOW, 90.0) - 1.0).abs() < 1e-12);
        assert!((recency(None, NOW, 90.0) - 1.0).abs() < 1e-12);

        // A year-old first-ranked hit falls behind a fresh second-ranked one:
        // old = (1/61) × (0.5 + 0.5 × 2^(−365/90)) ≈ 0.00858; new = 1/62 ≈ 0.01613.
        let mut old = candidate(Source::Code, "old", "a1");
        old.updated_at = Some(NOW - day * 365);
        let mut new = candidate(Source::Code, "new", "b1");
        new.updated_at = Some(NOW);
        let candidates = vec![old, new];
        let fused = fuse(
            &candidates,
            &[Lists {
                source: Source::Code,
                lexical: hits(&[0, 1]),
                vector: Vec::new(),
            }],
            &plain(ONES),
            None,
            NOW,
            &mut Provenance::default(),
        );
        assert_eq!(candidates[fused[0].index].key, "new");
        let old_score = (1.0 / 61.0) * (0.5 + 0.5 * (-365.0f64 / 90.0).exp2());
        assert!((fused[1].score - old_score).abs() < 1e-12);
    }

    #[test]
    fn the_same_language_is_boosted() {
        // Second-ranked Rust beats first-ranked Python for a Rust query: 1.2/62 > 1/61.
        let mut python = candidate(Source::Code, "py", "p1");
        python.language = Some("python".into());
        let mut rust = candidate(Source::Code, "rs", "r1");
        rust.language = Some("rust".into());
        let candidates = vec![python, rust];
        let lists = [Lists {
            source: Source::Code,
            lexical: hits(&[0, 1]),
            vector: Vec::new(),
        }];
        let run = |language| {
            fuse(
                &candidates,
                &lists,
                &plain(ONES),
                language,
                NOW,
                &mut Provenance::default(),
            )
        };
        let rust_query = run(Some("rust"));
        assert_eq!(candidates[rust_query[0].index].key, "rs");
        assert!((rust_query[0].score - 1.2 / 62.0).abs() < 1e-12);
        assert_eq!(rust_query[0].language, 1.2);
        let no_language = run(None);
        assert_eq!(candidates[no_language[0].index].key, "py");
    }
}
