//! Retrieval: what Parley remembers of a repository, found again for a review
//! or a question.
//!
//! [`retrieve`] reads a bounded candidate set per stored corpus (code hunks, past
//! findings, review threads) and takes the caller's learnings and guideline sections,
//! ranks each corpus lexically (BM25, always) and by vector (cosine, when an embedder is
//! given and answers), fuses everything with Reciprocal Rank Fusion, and renders what
//! fits the character budget, with its provenance. It is an extra, so it fails open:
//! a store or embedder failure costs context, never the job.
//!
//! The modules, in the order a query meets them: [`chunk`] and [`documents`] (what is
//! stored), [`candidate`] (one shape for all corpora), [`lexical`] and [`vector`]
//! (ranking per corpus), [`fuse`] (one ranking), [`context`] (the budget, the prompt
//! text and the "Context used" section), [`provenance`].

pub mod candidate;
pub mod chunk;
pub mod context;
pub mod documents;
pub mod fuse;
pub mod language;
pub mod lexical;
pub mod provenance;
pub mod queries;
pub mod remember;
pub mod term_counts;
pub mod tokens;
pub mod vector;

pub use candidate::{Candidate, Source};
pub use context::DEFAULT_BUDGET_CHARS;
pub use fuse::{Fusion, Trigger, Weights};
pub use provenance::{Provenance, VectorUse};
pub use term_counts::TermCounts;

use crate::concurrently::join2;
use crate::mention::Handles;
use crate::ports::{Corpus, CorpusStore, Document, Embedder, StoreError};
use fuse::Lists;
use time::OffsetDateTime;

/// Where retrieval reads: the corpus store, and the embedder when one is configured.
/// Borrowed from [`crate::services::Services`] by the workers; `parley review` in a
/// terminal reads the local store.
#[derive(Clone, Copy)]
pub struct Recall<'a> {
    pub corpus: &'a dyn CorpusStore,
    pub embedder: Option<&'a dyn Embedder>,
}

impl<'a> Recall<'a> {
    pub fn of(services: &'a crate::services::Services) -> Self {
        Recall {
            corpus: services.corpus.as_ref(),
            embedder: services.embedder.as_deref(),
        }
    }

    /// [`retrieve`] from these sources.
    pub async fn retrieve(
        &self,
        repo: &str,
        query: &Query,
        in_memory: Vec<Candidate>,
        settings: &Settings,
    ) -> Retrieved {
        retrieve(self.corpus, self.embedder, repo, query, in_memory, settings).await
    }
}

/// What to find context for.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub trigger: Trigger,
    /// The changed code (a review) or the question with its thread (a conversation).
    pub text: String,
    /// The language of the code in question, for the same-language boost.
    pub language: Option<String>,
    /// Paths and function names of the changed code: searched with the text.
    pub paths: Vec<String>,
    pub functions: Vec<String>,
    /// The PR being reviewed or discussed: its own documents are left out (its code is in
    /// the prompt already, and a review must not cite itself).
    pub pr: Option<u64>,
}

impl Query {
    /// The text searched and embedded: the query text, then the paths and functions.
    pub fn search_text(&self) -> String {
        let mut text = self.text.clone();
        for extra in self.paths.iter().chain(&self.functions) {
            text.push('\n');
            text.push_str(extra);
        }
        text
    }
}

/// Bounds of one retrieval.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Newest documents read per stored corpus: the candidate set.
    pub candidates_per_corpus: usize,
    /// Hits kept per list (lexical, vector) per corpus before fusion.
    pub per_list: usize,
    pub budget_chars: usize,
    /// `None`: [`Fusion::for_trigger`] of the query's trigger.
    pub fusion: Option<Fusion>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            candidates_per_corpus: 2000,
            per_list: 50,
            budget_chars: DEFAULT_BUDGET_CHARS,
            fusion: None,
        }
    }
}

/// What retrieval found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Retrieved {
    /// For the prompt; empty when nothing relevant fitted.
    pub prompt: String,
    pub provenance: Provenance,
    /// The items of `prompt`, each with its corpus, best first.
    pub blocks: Vec<(Source, String)>,
}

impl Retrieved {
    /// Whether anything made it into the prompt: only then do a review summary and a
    /// reply carry a "Context used" section (a section listing nothing is noise).
    pub fn used(&self) -> bool {
        !self.provenance.included.is_empty()
    }

    /// The prompt text of `sources` only (with the same preamble), e.g. the past findings
    /// for the judge pass; empty when none of them was included.
    pub fn section(&self, sources: &[Source]) -> String {
        context::prompt(&self.blocks, |source| sources.contains(&source))
    }

    /// The collapsed "Context used" section for the review summary or a reply (empty when
    /// retrieval had nothing to search).
    pub fn context_used(&self, handles: &Handles) -> String {
        context::context_used(&self.provenance, handles)
    }

    /// One line per item put in the prompt (`code — PR #1 \`src/parse.rs\` lines 10-17`),
    /// for a report that is not a PR comment (the terminal review).
    pub fn citations(&self) -> Vec<String> {
        self.provenance
            .included
            .iter()
            .map(context::citation)
            .collect()
    }
}

/// Find context for `query` in `repo`: the stored corpora read from `store` (the newest
/// [`Settings::candidates_per_corpus`] of each) and the caller's `in_memory` learnings
/// and guideline sections. The query is embedded once, while the store is read; with no
/// embedder, or when it fails, the search is lexical only. Never fails: a corpus that
/// cannot be read is left out and named in the provenance.
pub async fn retrieve(
    store: &dyn CorpusStore,
    embedder: Option<&dyn Embedder>,
    repo: &str,
    query: &Query,
    in_memory: Vec<Candidate>,
    settings: &Settings,
) -> Retrieved {
    let search_text = query.search_text();
    let limit = settings.candidates_per_corpus;
    let reads = join2(
        join2(
            store.documents(repo, Corpus::Code, limit),
            store.documents(repo, Corpus::Finding, limit),
        ),
        store.documents(repo, Corpus::Thread, limit),
    );
    let (((code, findings), threads), embedded) =
        join2(reads, embed_query(embedder, &search_text)).await;

    let mut provenance = Provenance::default();
    let mut candidates = in_memory;
    for (corpus, read) in [
        (Corpus::Code, code),
        (Corpus::Finding, findings),
        (Corpus::Thread, threads),
    ] {
        absorb(repo, corpus, read, &mut candidates, &mut provenance);
    }
    let (query_vector, vector_use, tokens) = embedded;
    provenance.vector = vector_use;
    provenance.embedding_tokens = tokens;
    let model = embedder.map(|e| e.model().to_string());
    let vector = query_vector
        .as_deref()
        .zip(model.as_deref())
        .map(|(values, model)| QueryVector { model, values });
    let retrieved = rank(
        &candidates,
        query,
        vector,
        settings,
        OffsetDateTime::now_utc(),
        provenance,
    );
    tracing::debug!(repo, provenance = %retrieved.provenance.summary(), "retrieval");
    retrieved
}

/// The query's embedding and the model it belongs to.
#[derive(Debug, Clone, Copy)]
pub struct QueryVector<'a> {
    pub model: &'a str,
    pub values: &'a [f32],
}

/// Rank `candidates` (every corpus together) for `query` and render what fits: the pure
/// part of [`retrieve`], after the reads and the embedding call. `provenance` may already
/// hold what the reads recorded.
pub fn rank(
    candidates: &[Candidate],
    query: &Query,
    vector: Option<QueryVector<'_>>,
    settings: &Settings,
    now: OffsetDateTime,
    mut provenance: Provenance,
) -> Retrieved {
    let search_text = query.search_text();
    let mut lists = Vec::new();
    for source in Source::ALL {
        let mut same_pr = 0;
        let members: Vec<usize> = (0..candidates.len())
            .filter(|&i| candidates[i].source == source)
            .filter(|&i| match query.pr {
                Some(pr) if candidates[i].only_from_pr(pr) => {
                    same_pr += 1;
                    false
                }
                _ => true,
            })
            .collect();
        let counts = provenance.counts(source);
        counts.candidates = members.len();
        counts.same_pr = same_pr;
        if members.is_empty() {
            continue;
        }
        let global = |hits: Vec<lexical::Hit>| -> Vec<lexical::Hit> {
            hits.into_iter()
                .map(|h| lexical::Hit {
                    index: members[h.index],
                    score: h.score,
                })
                .collect()
        };
        let lexical = global(lexical::rank(
            &search_text,
            members.iter().map(|&i| candidates[i].lexical_terms()),
            settings.per_list,
        ));
        let vector = match vector {
            Some(q) => global(vector::rank(
                q.values,
                q.model,
                members.iter().map(|&i| candidates[i].vector.as_ref()),
                settings.per_list,
            )),
            None => Vec::new(),
        };
        counts.lexical_hits = lexical.len();
        counts.vector_hits = vector.len();
        lists.push(Lists {
            source,
            lexical,
            vector,
        });
    }
    let fusion = settings
        .fusion
        .unwrap_or_else(|| Fusion::for_trigger(query.trigger));
    let fused = fuse::fuse(
        candidates,
        &lists,
        &fusion,
        query.language.as_deref(),
        now,
        &mut provenance,
    );
    let blocks = context::blocks(candidates, &fused, settings.budget_chars, &mut provenance);
    let prompt = context::prompt(&blocks, |_| true);
    provenance.used_chars = prompt.chars().count();
    Retrieved {
        prompt,
        provenance,
        blocks,
    }
}

/// Keep a corpus's documents as candidates, or record why it contributed none.
fn absorb(
    repo: &str,
    corpus: Corpus,
    read: Result<Vec<Document>, StoreError>,
    candidates: &mut Vec<Candidate>,
    provenance: &mut Provenance,
) {
    match read {
        Ok(documents) => candidates.extend(documents.into_iter().map(Candidate::from)),
        Err(err) => {
            tracing::warn!(repo, corpus = corpus.as_str(), error = %err, "could not read a retrieval corpus; going on without it");
            provenance.counts(corpus.into()).store_error = Some(err.to_string());
        }
    }
}

/// The query's vector, how vector search fares, and the tokens it cost. Any failure
/// (an error, the wrong number of vectors or dimensions) means lexical only, logged.
async fn embed_query(
    embedder: Option<&dyn Embedder>,
    text: &str,
) -> (Option<Vec<f32>>, VectorUse, u64) {
    let Some(embedder) = embedder else {
        return (None, VectorUse::NotConfigured, 0);
    };
    let failed = |reason: String| {
        tracing::warn!(
            model = embedder.model(),
            reason,
            "query embedding failed; lexical search only"
        );
        (None, VectorUse::Failed { reason }, 0)
    };
    match embedder.embed(&[text.to_string()]).await {
        Ok(embeddings) => {
            let tokens = embeddings.input_tokens;
            let mut vectors = embeddings.vectors.into_iter();
            match (vectors.next(), vectors.next()) {
                (Some(vector), None)
                    if vector.len() == embedder.dimensions()
                        && vector.iter().all(|v| v.is_finite()) =>
                {
                    let model = embedder.model().to_string();
                    (Some(vector), VectorUse::Used { model }, tokens)
                }
                _ => {
                    let (v, u, _) = failed(format!(
                        "expected one finite vector of {} dimensions",
                        embedder.dimensions()
                    ));
                    (v, u, tokens)
                }
            }
        }
        Err(err) => failed(err.to_string()),
    }
}

#[cfg(test)]
mod tests;
