//! An offline static-embedding model (model2vec: a potion-style table of token vectors,
//! averaged over a text's tokens), loaded from a local directory with `model2vec-rs`.
//!
//! No service, no network: `parley serve` and the tests get real vectors from a file.
//! The crate is built without its Hugging Face Hub feature, and a path that is not an
//! existing directory is refused before the crate sees it, so a typo can never turn into
//! a download attempt.

use crate::vectors::estimated_tokens;
use async_trait::async_trait;
use model2vec_rs::model::StaticModel;
use parley_core::ports::{Embedder, EmbeddingError, Embeddings};
use std::path::Path;

/// Tokens per text the model reads; model2vec's own default, and plenty for a static
/// model, whose vector is an average that longer texts only blur.
const MAX_TOKENS: usize = 512;

#[derive(Debug)]
pub struct StaticEmbedder {
    model: StaticModel,
    /// `static/<directory name>`: recorded with every vector, so switching models
    /// re-embeds instead of comparing vectors of different models.
    id: String,
    dimensions: usize,
}

impl StaticEmbedder {
    /// Load the model in `dir` (`tokenizer.json`, `model.safetensors`, `config.json`).
    /// `expected_dimensions`, when given, must match the model's own size.
    pub fn load(dir: &Path, expected_dimensions: Option<usize>) -> Result<Self, EmbeddingError> {
        if !dir.is_dir() {
            return Err(EmbeddingError::Config(format!(
                "EMBEDDINGS_MODEL={} is not a directory; download a model2vec model (e.g. \
                 minishlab/potion-base-8M) and point EMBEDDINGS_MODEL at its folder",
                dir.display()
            )));
        }
        let model = StaticModel::from_pretrained(dir, None, Some(true), None).map_err(|e| {
            EmbeddingError::Config(format!(
                "cannot load the static model in {}: {e:#}",
                dir.display()
            ))
        })?;
        let dimensions = model.dim();
        if dimensions == 0 {
            return Err(EmbeddingError::Config(format!(
                "the static model in {} has vectors of size 0",
                dir.display()
            )));
        }
        if let Some(expected) = expected_dimensions
            && expected != dimensions
        {
            return Err(EmbeddingError::Config(format!(
                "EMBEDDINGS_DIMENSIONS={expected}, but the static model in {} makes vectors of {dimensions}",
                dir.display()
            )));
        }
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "model".to_owned());
        Ok(Self {
            model,
            id: format!("static/{name}"),
            dimensions,
        })
    }
}

#[async_trait]
impl Embedder for StaticEmbedder {
    /// Runs on the blocking pool: it is CPU work (microseconds a text, but a job embeds
    /// hundreds). A panic inside the model crate (a tokenizer that cannot split a text,
    /// a token id outside the table of a broken model) becomes an error, not a crash.
    async fn embed(&self, texts: &[String]) -> Result<Embeddings, EmbeddingError> {
        let model = self.model.clone();
        let owned = texts.to_vec();
        let vectors = tokio::task::spawn_blocking(move || {
            model.encode_with_args(&owned, Some(MAX_TOKENS), owned.len().max(1))
        })
        .await
        .map_err(|e| EmbeddingError::Config(format!("the static model failed: {e}")))?;
        if vectors.len() != texts.len() || vectors.iter().any(|v| v.len() != self.dimensions) {
            return Err(EmbeddingError::BadResponse(format!(
                "the static model made {} vectors for {} texts",
                vectors.len(),
                texts.len()
            )));
        }
        // A text with no known token averages nothing: the zero vector, which is
        // similar to nothing, rather than an error for the whole batch.
        Ok(Embeddings {
            vectors,
            input_tokens: estimated_tokens(texts),
        })
    }

    fn model(&self) -> &str {
        &self.id
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }
}
