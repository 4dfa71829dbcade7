//! The corpus store port: what retrieval searches.
//!
//! One table of documents per repository, keyed by corpus and content hash, so the same
//! hunk seen in two PRs is one document with two occurrences and is embedded once.
//! Vectors are kept quantised (int8 with one scale per vector: a quarter of the f32 size,
//! and cosine ranking barely moves) next to the text, and scored in the worker over a
//! bounded candidate set read in one query.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::StoreError;
use crate::retrieval::TermCounts;

/// Which body of knowledge a document belongs to. Learnings and guideline files are
/// corpora too, but they are read from memory and from the repository at query time, so
/// they are never stored here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Corpus {
    /// A diff hunk of a reviewed PR.
    Code,
    /// A past finding, with how it ended.
    Finding,
    /// A review-comment thread (human and bot), recorded as conversation jobs pass.
    Thread,
}

impl Corpus {
    pub const STORED: [Corpus; 3] = [Corpus::Code, Corpus::Finding, Corpus::Thread];

    pub fn as_str(self) -> &'static str {
        match self {
            Corpus::Code => "code",
            Corpus::Finding => "finding",
            Corpus::Thread => "thread",
        }
    }
}

/// Where a document was seen: a hunk reappearing in another PR gains an occurrence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occurrence {
    pub pr: u64,
    pub pr_title: String,
    pub path: String,
    pub start_line: u32,
    pub line_count: u32,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// An int8-quantised, L2-normalised vector: `value[i] ≈ values[i] as f32 * scale`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuantizedVector {
    pub model: String,
    pub scale: f32,
    pub values: Vec<i8>,
}

impl QuantizedVector {
    /// Symmetric int8 quantisation with one scale per vector: the largest magnitude maps
    /// to ±127, so the rounding error of any value is at most `scale / 2`, i.e. 1/254 of
    /// the largest magnitude. Symmetric (no zero point) keeps a dot product of two
    /// quantised vectors a plain integer dot product times both scales.
    ///
    /// A non-finite value (which no adapter lets through) counts as 0 rather than
    /// poisoning the scale of the whole vector.
    pub fn quantize(model: impl Into<String>, vector: &[f32]) -> Self {
        let finite = |v: f32| if v.is_finite() { v } else { 0.0 };
        let max = vector
            .iter()
            .map(|v| finite(*v).abs())
            .fold(0.0_f32, f32::max);
        let scale = if max > 0.0 { max / 127.0 } else { 0.0 };
        let values = vector
            .iter()
            .map(|v| {
                if scale == 0.0 {
                    0
                } else {
                    // Within ±127 by construction; the clamp only guards rounding.
                    (finite(*v) / scale).round().clamp(-127.0, 127.0) as i8
                }
            })
            .collect();
        Self {
            model: model.into(),
            scale,
            values,
        }
    }

    /// The approximate original values.
    pub fn to_f32(&self) -> Vec<f32> {
        self.values
            .iter()
            .map(|v| f32::from(*v) * self.scale)
            .collect()
    }

    pub fn dimensions(&self) -> usize {
        self.values.len()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// `owner/name`.
    pub repo: String,
    pub corpus: Corpus,
    /// SHA-256 (hex) of `text` for code; a stable id for findings (`f_…`) and threads
    /// (the root comment id).
    pub key: String,
    /// What lexical search indexes and what a prompt may quote.
    pub text: String,
    pub path: Option<String>,
    /// Language from the file extension (`rust`, `python`, …), for the same-language boost.
    pub language: Option<String>,
    /// The `@@` header's function context, for code.
    pub function_context: Option<String>,
    /// Free-form facts shown with the document: a finding's severity and outcome, a
    /// thread's participants. Small, flat, string-valued.
    #[serde(default)]
    pub attributes: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub occurrences: Vec<Occurrence>,
    /// Absent until the embedding job has run (or when no provider is configured).
    pub vector: Option<QuantizedVector>,
    /// What lexical search needs of `text`, counted once by the store when it writes the
    /// document (in its own column or attribute, like the vector) and read back with it.
    /// `None` on a document being built, and on one stored before counts were kept:
    /// search then tokenises the text, with the same result.
    #[serde(skip)]
    pub terms: Option<TermCounts>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl Document {
    /// A document as a producer first builds it: not yet embedded or counted, with no
    /// place, facts or sightings until the caller names them with struct update syntax.
    pub fn new(
        repo: impl Into<String>,
        corpus: Corpus,
        key: impl Into<String>,
        text: impl Into<String>,
        at: OffsetDateTime,
    ) -> Self {
        Document {
            repo: repo.into(),
            corpus,
            key: key.into(),
            text: text.into(),
            path: None,
            language: None,
            function_context: None,
            attributes: std::collections::BTreeMap::new(),
            occurrences: Vec::new(),
            vector: None,
            terms: None,
            created_at: at,
            updated_at: at,
        }
    }
}

#[async_trait]
pub trait CorpusStore: Send + Sync {
    /// Insert `doc`, or when (repo, corpus, key) exists: merge its occurrences (no
    /// duplicates by PR and path), replace text/attributes, and keep the stored vector
    /// unless `doc` brings one. Returns whether the document was new.
    ///
    /// One exception to keeping the vector: when the text itself changed (a finding or a
    /// thread under a stable key), the old vector describes text that is gone, so it is
    /// dropped and the embedding job embeds the new text. Code documents are keyed by the
    /// hash of their text, so theirs never changes.
    ///
    /// Adapters cap what one document may hold (see `parley_store`): text beyond 32 KiB is
    /// cut at a character boundary and only the newest 100 occurrences are kept, so a
    /// DynamoDB item stays well under its 400 KB limit.
    async fn upsert_document(&self, doc: &Document) -> Result<bool, StoreError>;

    /// Attach a vector to an existing document (the embedding job's write). A document
    /// that does not exist is left absent (no half document is created); its `updated_at`
    /// is not touched, so embedding never reorders the candidate set.
    async fn set_vector(
        &self,
        repo: &str,
        corpus: Corpus,
        key: &str,
        vector: &QuantizedVector,
    ) -> Result<(), StoreError>;

    async fn document(
        &self,
        repo: &str,
        corpus: Corpus,
        key: &str,
    ) -> Result<Option<Document>, StoreError>;

    /// The newest `limit` documents of one corpus of a repository (by `updated_at`):
    /// the bounded candidate set lexical and vector search score in the worker.
    async fn documents(
        &self,
        repo: &str,
        corpus: Corpus,
        limit: usize,
    ) -> Result<Vec<Document>, StoreError>;

    /// Delete every document of every corpus of `repo` (an uninstalled repository's
    /// history). Idempotent; returns how many went.
    async fn purge_documents(&self, repo: &str) -> Result<u64, StoreError>;

    /// Move every document of `from` to repository key `to` (see
    /// `crate::tenancy`), keeping any document `to` already has. Idempotent; returns
    /// how many moved.
    async fn rekey_documents(&self, from: &str, to: &str) -> Result<u64, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random unit vector (no RNG crate in core).
    fn unit_vector(seed: u64, dimensions: usize) -> Vec<f32> {
        let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let mut values: Vec<f32> = (0..dimensions)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect();
        let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
        values.iter_mut().for_each(|v| *v /= norm);
        values
    }

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        dot / (norm(a) * norm(b))
    }

    #[test]
    fn round_trip_stays_within_half_a_step_and_keeps_the_direction() {
        for (seed, dimensions) in [(1, 256), (2, 512), (3, 1024), (4, 7)] {
            let original = unit_vector(seed, dimensions);
            let quantized = QuantizedVector::quantize("m", &original);
            assert_eq!(quantized.dimensions(), dimensions);
            assert_eq!(quantized.model, "m");
            let restored = quantized.to_f32();
            let max = original.iter().fold(0.0_f32, |m, v| m.max(v.abs()));
            let bound = max / 254.0 + 1e-6;
            for (o, r) in original.iter().zip(&restored) {
                assert!((o - r).abs() <= bound, "{o} vs {r} (bound {bound})");
            }
            let similarity = cosine(&original, &restored);
            assert!(similarity >= 0.99, "cosine {similarity} at {dimensions}");
            assert!(quantized.values.iter().any(|v| v.abs() == 127));
        }
    }

    #[test]
    fn zero_and_non_finite_values_do_not_break_the_scale() {
        let zero = QuantizedVector::quantize("m", &[0.0; 4]);
        assert_eq!(zero.scale, 0.0);
        assert_eq!(zero.to_f32(), vec![0.0; 4]);

        let odd = QuantizedVector::quantize("m", &[f32::NAN, 0.5, f32::INFINITY, -1.0]);
        assert_eq!(odd.values, vec![0, 64, 0, -127]);
        assert!(odd.scale.is_finite());
    }
}
