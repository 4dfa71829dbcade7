//! The embedding job: give stored documents their vectors.

use crate::job::{EmbedJob, Job};
use crate::ports::{Corpus, Embedder, EmbeddingError, JobError, JobHandler, QuantizedVector};
use crate::services::Services;
use async_trait::async_trait;
use std::sync::Arc;

/// Texts per embedding call. Each batch's vectors are stored before the next call, so a
/// job that fails half way keeps what it did, and its retry skips those documents.
/// 32 texts of at most [`MAX_EMBED_CHARS`] stay under the per-request token limits of the
/// OpenAI API (300k tokens) and of local servers' batch sizes.
pub const BATCH_SIZE: usize = 32;

/// How much of a document is embedded, in characters. Embedding models read 8k tokens at
/// most (Titan V2, text-embedding-3) and static models far fewer; the start of a hunk or
/// finding says what it is about. The whole text stays searchable lexically.
pub const MAX_EMBED_CHARS: usize = 16_000;

/// What one run did, for the log and for tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EmbedReport {
    /// Documents that got a vector.
    pub embedded: usize,
    /// Documents that already had a vector of the configured model.
    pub skipped: usize,
    /// Keys with no document (never stored, or not yet visible): nothing to embed.
    pub missing: usize,
}

pub struct EmbeddingHandler {
    services: Services,
}

impl EmbeddingHandler {
    pub fn new(services: Services) -> Self {
        Self { services }
    }

    /// Embed the job's documents that lack a vector of the configured model.
    ///
    /// Errors: the store or the provider being unavailable is transient, and the queue
    /// retries the job; a provider answering garbage is reported as permanent (it still
    /// goes through the queue's retries and dead-letter queue). Either way no vector is
    /// stored for the batch that failed.
    pub async fn embed(&self, job: &EmbedJob) -> Result<EmbedReport, JobError> {
        let Some(embedder) = self.services.embedder.clone() else {
            tracing::info!(repo = %job.repo, "no embeddings provider configured; embedding job skipped");
            return Ok(EmbedReport::default());
        };
        let (pending, mut report) = self.pending(job, embedder.as_ref()).await?;
        for batch in pending.chunks(BATCH_SIZE) {
            self.embed_batch(&job.repo, embedder.clone(), batch).await?;
            report.embedded += batch.len();
        }
        tracing::info!(
            repo = %job.repo,
            model = embedder.model(),
            embedded = report.embedded,
            skipped = report.skipped,
            missing = report.missing,
            "embedding job done"
        );
        Ok(report)
    }

    /// The documents still to embed, with their text.
    async fn pending(
        &self,
        job: &EmbedJob,
        embedder: &dyn Embedder,
    ) -> Result<(Vec<Pending>, EmbedReport), JobError> {
        let mut report = EmbedReport::default();
        let mut pending = Vec::new();
        for (corpus, keys) in &job.keys {
            for key in keys {
                let document = self
                    .services
                    .corpus
                    .document(&job.repo, *corpus, key)
                    .await
                    .map_err(|err| {
                        JobError::Transient(format!(
                            "reading {} document {key} of {}: {err}",
                            corpus.as_str(),
                            job.repo
                        ))
                    })?;
                let Some(document) = document else {
                    tracing::warn!(repo = %job.repo, corpus = corpus.as_str(), key, "document to embed is not in the store; skipped");
                    report.missing += 1;
                    continue;
                };
                let current = document.vector.as_ref().is_some_and(|v| {
                    v.model == embedder.model() && v.dimensions() == embedder.dimensions()
                });
                if current {
                    report.skipped += 1;
                } else {
                    pending.push(Pending {
                        corpus: *corpus,
                        key: key.clone(),
                        text: embeddable(&document.text),
                    });
                }
            }
        }
        Ok((pending, report))
    }

    async fn embed_batch(
        &self,
        repo: &str,
        embedder: Arc<dyn Embedder>,
        batch: &[Pending],
    ) -> Result<(), JobError> {
        let texts: Vec<String> = batch.iter().map(|p| p.text.clone()).collect();
        let embeddings = embedder
            .embed(&texts)
            .await
            .and_then(|e| checked(e, texts.len(), embedder.dimensions()))
            .map_err(|err| {
                let message = format!("embedding {} documents of {repo}: {err}", texts.len());
                if err.is_transient() {
                    JobError::Transient(message)
                } else {
                    JobError::Permanent(message)
                }
            })?;
        super::usage::record_for_month(
            self.services.store.as_ref(),
            &self.services.prices,
            repo,
            embedder.model(),
            embeddings.input_tokens,
        )
        .await;
        for (item, vector) in batch.iter().zip(&embeddings.vectors) {
            let quantized = QuantizedVector::quantize(embedder.model(), vector);
            self.services
                .corpus
                .set_vector(repo, item.corpus, &item.key, &quantized)
                .await
                .map_err(|err| {
                    JobError::Transient(format!(
                        "storing the vector of {} document {} of {repo}: {err}",
                        item.corpus.as_str(),
                        item.key
                    ))
                })?;
        }
        Ok(())
    }
}

#[async_trait]
impl JobHandler for EmbeddingHandler {
    async fn handle(&self, job: Job) -> Result<(), JobError> {
        match job {
            Job::Embed(job) => self.embed(&job).await.map(|_| ()),
            other => Err(JobError::Permanent(format!(
                "{} reached the embedding worker",
                other.describe()
            ))),
        }
    }
}

struct Pending {
    corpus: Corpus,
    key: String,
    text: String,
}

/// The first [`MAX_EMBED_CHARS`] characters of `text`.
fn embeddable(text: &str) -> String {
    match text.char_indices().nth(MAX_EMBED_CHARS) {
        Some((cut, _)) => text[..cut].to_string(),
        None => text.to_string(),
    }
}

/// The port promises one finite vector of the model's size per text; an adapter that
/// breaks that promise must not get garbage into the store.
fn checked(
    embeddings: crate::ports::Embeddings,
    count: usize,
    dimensions: usize,
) -> Result<crate::ports::Embeddings, EmbeddingError> {
    if embeddings.vectors.len() != count {
        return Err(EmbeddingError::BadResponse(format!(
            "{} vectors for {count} texts",
            embeddings.vectors.len()
        )));
    }
    if let Some(bad) = embeddings
        .vectors
        .iter()
        .find(|v| v.len() != dimensions || v.iter().any(|x| !x.is_finite()))
    {
        return Err(EmbeddingError::BadResponse(format!(
            "a vector of {} values (expected {dimensions} finite values)",
            bad.len()
        )));
    }
    Ok(embeddings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_cut_on_a_character_boundary() {
        let text = "é".repeat(MAX_EMBED_CHARS + 10);
        let cut = embeddable(&text);
        assert_eq!(cut.chars().count(), MAX_EMBED_CHARS);
        assert_eq!(embeddable("short"), "short");
    }

    #[test]
    fn vectors_that_break_the_port_promise_are_refused() {
        let ok = crate::ports::Embeddings {
            vectors: vec![vec![1.0, 0.0]; 2],
            input_tokens: 4,
        };
        assert!(checked(ok.clone(), 2, 2).is_ok());
        assert!(matches!(
            checked(ok.clone(), 3, 2),
            Err(EmbeddingError::BadResponse(_))
        ));
        assert!(matches!(
            checked(ok, 2, 3),
            Err(EmbeddingError::BadResponse(_))
        ));
        let nan = crate::ports::Embeddings {
            vectors: vec![vec![f32::NAN, 0.0]],
            input_tokens: 1,
        };
        assert!(matches!(
            checked(nan, 1, 2),
            Err(EmbeddingError::BadResponse(_))
        ));
    }
}
