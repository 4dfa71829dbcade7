//! The corpus store port (issue 10): what retrieval searches.
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
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

#[async_trait]
pub trait CorpusStore: Send + Sync {
    /// Insert `doc`, or when (repo, corpus, key) exists: merge its occurrences (no
    /// duplicates by PR and path), replace text/attributes, and keep the stored vector
    /// unless `doc` brings one. Returns whether the document was new.
    async fn upsert_document(&self, doc: &Document) -> Result<bool, StoreError>;

    /// Attach a vector to an existing document (the embedding job's write).
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
}
