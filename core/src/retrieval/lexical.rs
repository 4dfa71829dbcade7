//! Lexical search: Okapi BM25 over one corpus's candidates, always available (it needs no
//! embeddings provider).
//!
//! Hand-written, on purpose. Retrieval scores one query against a candidate set freshly
//! read from the store for that job (a Lambda keeps no index between jobs, and the set
//! changes as PRs are reviewed), so any index is built for exactly one query. The `bm25`
//! crate (2.3.2, the well-kept in-memory option; measured here with a code tokenizer)
//! took 595 ms to build its engine over 10,000 hunks and 6.3 s over 100,000, against a
//! 50 ms budget for the whole retrieval; tantivy builds a segmented on-disk-style index,
//! heavier still for a one-shot set, and a large dependency for the domain crate. For a
//! single query BM25 needs only, per document, its length and the frequencies of the
//! query's terms, plus each term's document frequency. A stored document brings those as
//! [`TermCounts`] computed when it was written, so scoring it is a lookup of each of its
//! distinct terms among the query's; a text without them (learnings, guidelines, a
//! document stored before they existed) is tokenised here into the same term ids
//! (`term_counts::for_each_term_id`), with the same result. rustc-hash's Fx hasher keys the
//! lookup: its keys are already hashes, and only the query's own terms are stored. The
//! formula is the standard one (Robertson/Sparck Jones idf in Lucene's non-negative form, k1 = 1.2,
//! b = 0.75), and the tests check it by hand.

use super::term_counts::{TermCounts, for_each_term_id};
use rustc_hash::FxHashMap;

/// BM25 term-frequency saturation.
const K1: f64 = 1.2;
/// BM25 length normalisation.
const B: f64 = 0.75;

/// A candidate's position in the input and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub index: usize,
    pub score: f64,
}

/// What BM25 reads of one document.
#[derive(Debug, Clone, Copy)]
pub enum Terms<'a> {
    /// Counted when the document was stored.
    Counted(&'a TermCounts),
    /// To be tokenised now.
    Text(&'a str),
}

impl<'a> From<&'a str> for Terms<'a> {
    fn from(text: &'a str) -> Self {
        Terms::Text(text)
    }
}

impl<'a> From<&'a TermCounts> for Terms<'a> {
    fn from(counts: &'a TermCounts) -> Self {
        Terms::Counted(counts)
    }
}

/// Score `documents` against `query`; the best `limit` with a positive score (sharing at
/// least one term with the query), best first, ties by input order.
pub fn rank<'a, T: Into<Terms<'a>>>(
    query: &str,
    documents: impl IntoIterator<Item = T>,
    limit: usize,
) -> Vec<Hit> {
    let mut terms: FxHashMap<u32, usize> = FxHashMap::default();
    for_each_term_id(query, |t| {
        let next = terms.len();
        terms.entry(t).or_insert(next);
    });
    if terms.is_empty() || limit == 0 {
        return Vec::new();
    }
    let counts = count(&terms, documents);
    let scores = counts.scores();
    top(scores, limit)
}

/// Per-document lengths and query-term frequencies, and per-term document frequencies.
struct Counts {
    lengths: Vec<u32>,
    /// `(document, term, frequency)` for each query term present in a document.
    postings: Vec<(u32, u32, u32)>,
    document_frequency: Vec<u32>,
}

fn count<'a, T: Into<Terms<'a>>>(
    terms: &FxHashMap<u32, usize>,
    documents: impl IntoIterator<Item = T>,
) -> Counts {
    let mut counts = Counts {
        lengths: Vec::new(),
        postings: Vec::new(),
        document_frequency: vec![0; terms.len()],
    };
    let mut frequency = vec![0u32; terms.len()];
    let mut present: Vec<usize> = Vec::new();
    let filter = Prefilter::of(terms.keys());
    let query_term = |id: u32| {
        if filter.may_contain(id) {
            terms.get(&id).copied()
        } else {
            None
        }
    };
    let occurs = |term: usize, times: u32, frequency: &mut [u32], present: &mut Vec<usize>| {
        if frequency[term] == 0 {
            present.push(term);
        }
        frequency[term] += times;
    };
    for (document, terms_of) in documents.into_iter().enumerate() {
        let length = match terms_of.into() {
            Terms::Counted(counted) => {
                for &(id, times) in counted.terms() {
                    if let Some(term) = query_term(id) {
                        occurs(term, times, &mut frequency, &mut present);
                    }
                }
                counted.length()
            }
            Terms::Text(text) => {
                let mut length = 0u32;
                for_each_term_id(text, |id| {
                    length += 1;
                    if let Some(term) = query_term(id) {
                        occurs(term, 1, &mut frequency, &mut present);
                    }
                });
                length
            }
        };
        // In query-term order, so a document's score is summed in the same order whether
        // its terms came counted or from its text (floating-point sums depend on it).
        present.sort_unstable();
        for &term in &present {
            counts.postings.push((
                u32::try_from(document).unwrap_or(u32::MAX),
                u32::try_from(term).unwrap_or(u32::MAX),
                frequency[term],
            ));
            counts.document_frequency[term] += 1;
            frequency[term] = 0;
        }
        present.clear();
        counts.lengths.push(length);
    }
    counts
}

/// A 4,096-bit set of the query's terms (by the top 12 bits of their ids): most tokens
/// of a document are not query terms, and this rejects nearly all of them before the map
/// lookup.
struct Prefilter([u64; 64]);

impl Prefilter {
    fn of<'a>(terms: impl Iterator<Item = &'a u32>) -> Self {
        let mut bits = [0u64; 64];
        for &term in terms {
            let slot = Self::slot(term);
            bits[slot / 64] |= 1 << (slot % 64);
        }
        Prefilter(bits)
    }

    #[inline]
    fn may_contain(&self, term: u32) -> bool {
        let slot = Self::slot(term);
        self.0[slot / 64] & (1 << (slot % 64)) != 0
    }

    /// The top bits: FNV-1a ends with a multiplication, which carries into the high bits.
    #[inline]
    fn slot(term: u32) -> usize {
        (term >> 20) as usize
    }
}

impl Counts {
    fn scores(&self) -> Vec<f64> {
        let documents = self.lengths.len() as f64;
        let total: f64 = self.lengths.iter().map(|&l| f64::from(l)).sum();
        let average = if documents > 0.0 {
            total / documents
        } else {
            0.0
        };
        let idf: Vec<f64> = self
            .document_frequency
            .iter()
            .map(|&df| idf(documents, f64::from(df)))
            .collect();
        let mut scores = vec![0.0; self.lengths.len()];
        for &(document, term, frequency) in &self.postings {
            let document = document as usize;
            let length = f64::from(self.lengths[document]);
            let norm = if average > 0.0 {
                1.0 - B + B * length / average
            } else {
                1.0
            };
            let tf = f64::from(frequency);
            scores[document] += idf[term as usize] * tf * (K1 + 1.0) / (tf + K1 * norm);
        }
        scores
    }
}

/// ln(1 + (N − df + 0.5) / (df + 0.5)): rare terms weigh more, and never below zero.
fn idf(documents: f64, document_frequency: f64) -> f64 {
    (1.0 + (documents - document_frequency + 0.5) / (document_frequency + 0.5)).ln()
}

/// The best `limit` positive scores, best first, ties by index.
pub(crate) fn top(scores: Vec<f64>, limit: usize) -> Vec<Hit> {
    let mut hits: Vec<Hit> = scores
        .into_iter()
        .enumerate()
        .filter(|(_, s)| *s > 0.0)
        .map(|(index, score)| Hit { index, score })
        .collect();
    let better = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index));
    if hits.len() > limit {
        hits.select_nth_unstable_by(limit - 1, better);
        hits.truncate(limit);
    }
    hits.sort_by(better);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORPUS: [&str; 5] = [
        "fn parse_header(line: &str) -> Header",
        "fn parse_body(lines: &[String]) -> Body { body }",
        "let retries = config.max_retries; sleep(backoff)",
        "fn render(header: Header) -> String",
        "header header header header",
    ];

    fn order(query: &str) -> Vec<usize> {
        rank(query, CORPUS, 10).iter().map(|h| h.index).collect()
    }

    #[test]
    fn the_rarer_shared_term_decides() {
        // "timeout" is in four of five documents, "retry" in two: a document with only
        // "retry" outranks every document with only "timeout" (same length, same
        // frequency), and the one with both ranks first. Ties keep input order.
        let corpus = [
            "connection timeout error",
            "connection retry error",
            "timeout handler value",
            "timeout config value",
            "retry on timeout",
        ];
        let order: Vec<usize> = rank("retry timeout", corpus, 10)
            .iter()
            .map(|h| h.index)
            .collect();
        assert_eq!(order, [4, 1, 0, 2, 3]);
    }

    #[test]
    fn code_identifiers_match_by_their_parts() {
        // "parse" (2 documents) is rarer than "header" (3): document 0 has both; 4 repeats
        // "header" in a short text; 1 has "parse" inside `parse_body`; 3 has "header" twice
        // in a longer text.
        assert_eq!(order("parse header"), [0, 4, 1, 3]);
        assert_eq!(order("why so many retries?"), [2]);
        assert!(order("zebra").is_empty());
        assert!(rank("", CORPUS, 10).is_empty());
    }

    #[test]
    fn scores_are_bm25_by_hand() {
        // Two documents: "alpha beta" (2 tokens) and "beta beta gamma delta" (4): avgdl 3.
        let hits = rank("beta", ["alpha beta", "beta beta gamma delta"], 10);
        let idf = (1.0f64 + (2.0 - 2.0 + 0.5) / (2.0 + 0.5)).ln();
        let first = idf * 1.0 * 2.2 / (1.0 + 1.2 * (0.25 + 0.75 * 2.0 / 3.0));
        let second = idf * 2.0 * 2.2 / (2.0 + 1.2 * (0.25 + 0.75 * 4.0 / 3.0));
        assert_eq!(hits.len(), 2);
        let by_index = |i: usize| hits.iter().find(|h| h.index == i).unwrap().score;
        assert!((by_index(0) - first).abs() < 1e-12);
        assert!((by_index(1) - second).abs() < 1e-12);
        assert_eq!(hits[0].index, 1, "{second} > {first}");
    }

    #[test]
    fn stored_counts_score_exactly_as_the_text() {
        let counted: Vec<TermCounts> = CORPUS.iter().map(|t| TermCounts::of(t)).collect();
        for query in [
            "parse header",
            "header",
            "why so many retries?",
            "Body body",
        ] {
            let from_text = rank(query, CORPUS, 10);
            let from_counts = rank(query, &counted, 10);
            assert!(!from_text.is_empty());
            assert_eq!(from_text, from_counts, "{query}");
            // Mixed: some documents counted, some not.
            let mixed = CORPUS
                .iter()
                .zip(&counted)
                .enumerate()
                .map(|(i, (text, counts))| {
                    if i % 2 == 0 {
                        Terms::Text(text)
                    } else {
                        Terms::Counted(counts)
                    }
                });
            assert_eq!(rank(query, mixed, 10), from_text, "{query}");
        }
    }

    proptest::proptest! {
        #[test]
        fn stored_counts_score_as_the_text_for_any_corpus(
            texts in proptest::collection::vec("[a-zA-Z_ ]{0,40}", 1..12),
            query in "[a-zA-Z_ ]{1,30}",
        ) {
            let counted: Vec<TermCounts> = texts.iter().map(|t| TermCounts::of(t)).collect();
            proptest::prop_assert_eq!(
                rank(&query, texts.iter().map(String::as_str), 20),
                rank(&query, &counted, 20)
            );
        }
    }

    #[test]
    fn limit_keeps_the_best_in_order() {
        let hits = rank("header", CORPUS, 2);
        let order: Vec<usize> = hits.iter().map(|h| h.index).collect();
        assert_eq!(order, [4, 3]);
        assert!(hits[0].score > hits[1].score);
    }
}
