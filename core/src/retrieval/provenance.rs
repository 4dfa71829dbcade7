//! Where retrieved context came from, and what was left out and why: for the debug log,
//! and for the "Context used" section a reader of the review or reply can open, so
//! nobody has to guess why the model brought up an old PR.

use super::candidate::{Candidate, Source};
use std::collections::BTreeMap;
use std::fmt::Write as _;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Provenance {
    pub sources: BTreeMap<Source, SourceCounts>,
    /// What made it into the prompt, in prompt order.
    pub included: Vec<Cited>,
    pub dropped: Vec<Dropped>,
    pub vector: VectorUse,
    /// Tokens the query embedding cost, as the provider reported them (0 without one).
    pub embedding_tokens: u64,
    pub budget_chars: usize,
    pub used_chars: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceCounts {
    /// Documents searched (after leaving out the current PR's own).
    pub candidates: usize,
    /// The current PR's own documents, left out.
    pub same_pr: usize,
    pub lexical_hits: usize,
    pub vector_hits: usize,
    pub near_duplicates: usize,
    pub over_budget: usize,
    pub included: usize,
    /// The store could not be read for this corpus; it contributed nothing.
    pub store_error: Option<String>,
}

/// A retrieved item, named so a person can find it.
#[derive(Debug, Clone, PartialEq)]
pub struct Cited {
    pub source: Source,
    pub key: String,
    pub pr: Option<u64>,
    pub path: Option<String>,
    /// First and last line, when known.
    pub lines: Option<(u32, u32)>,
    pub score: f64,
}

impl Cited {
    pub fn of(candidate: &Candidate, score: f64) -> Self {
        let newest = candidate.newest_occurrence();
        Cited {
            source: candidate.source,
            key: candidate.key.clone(),
            pr: newest.map(|o| o.pr),
            path: candidate
                .path
                .clone()
                .or_else(|| newest.map(|o| o.path.clone())),
            lines: newest.filter(|o| o.start_line > 0).map(|o| {
                let end = o.start_line.saturating_add(o.line_count.max(1) - 1);
                (o.start_line, end)
            }),
            score,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Dropped {
    pub item: Cited,
    pub reason: DropReason,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DropReason {
    /// Token Jaccard similarity at or above the threshold with a better-ranked item of
    /// the same corpus (its key).
    NearDuplicate { of: String },
    /// Did not fit in what was left of the character budget.
    OverBudget,
}

/// Whether vector search took part.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum VectorUse {
    /// No embeddings provider: lexical only, by configuration.
    #[default]
    NotConfigured,
    Used {
        model: String,
    },
    /// The provider failed or answered garbage for the query: lexical only this time.
    Failed {
        reason: String,
    },
}

impl Provenance {
    pub fn counts(&mut self, source: Source) -> &mut SourceCounts {
        self.sources.entry(source).or_default()
    }

    /// Nothing was searched and nothing went wrong: retrieval had nothing to work on.
    pub fn is_empty(&self) -> bool {
        self.sources
            .values()
            .all(|c| c.candidates == 0 && c.store_error.is_none())
    }

    /// One line for the debug log: per corpus `included/candidates` with hits and drops,
    /// the vector search's state and the budget.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for (source, c) in &self.sources {
            let _ = write!(
                out,
                "{} {}/{} (lexical {}, vector {}, duplicates {}, over budget {}, same PR {}{}); ",
                source.name(),
                c.included,
                c.candidates,
                c.lexical_hits,
                c.vector_hits,
                c.near_duplicates,
                c.over_budget,
                c.same_pr,
                c.store_error
                    .as_ref()
                    .map(|e| format!(", store error: {e}"))
                    .unwrap_or_default(),
            );
        }
        let vector = match &self.vector {
            VectorUse::NotConfigured => "not configured".to_string(),
            VectorUse::Used { model } => format!("used ({model})"),
            VectorUse::Failed { reason } => format!("failed ({reason})"),
        };
        let _ = write!(
            out,
            "vector search {vector}; {} of {} characters",
            self.used_chars, self.budget_chars
        );
        out
    }
}
