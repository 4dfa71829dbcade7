//! The embeddings port: text in, vectors out.
//!
//! Retrieval is an aid, never a dependency: every caller treats an error here as "no
//! vectors this time" and carries on lexically. The error kinds therefore only separate
//! what is worth retrying (the embedding job's queue retry) from what is not.

use async_trait::async_trait;

#[async_trait]
pub trait Embedder: Send + Sync {
    /// Embed each text; the answer has one vector per input, in order, each of
    /// [`Embedder::dimensions`] values and L2-normalised (adapters normalise when the
    /// provider does not), so cosine similarity is a dot product.
    async fn embed(&self, texts: &[String]) -> Result<Embeddings, EmbeddingError>;

    /// The model id, recorded with every stored vector: vectors of different models are
    /// never compared.
    fn model(&self) -> &str;

    fn dimensions(&self) -> usize;
}

#[derive(Debug, Clone, PartialEq)]
pub struct Embeddings {
    pub vectors: Vec<Vec<f32>>,
    /// Input tokens as the provider reported them (estimated when it does not), for
    /// usage and cost accounting.
    pub input_tokens: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum EmbeddingError {
    /// Rate limit, overload, 5xx, network trouble, timeout: worth another try later.
    #[error("embeddings provider unavailable: {0}")]
    Unavailable(String),
    /// The provider answered something that is not the vectors asked for (wrong count,
    /// wrong dimensions, not JSON).
    #[error("embeddings provider answered garbage: {0}")]
    BadResponse(String),
    /// Missing key, unknown model, unreadable local model: fix the settings.
    #[error("embeddings misconfigured: {0}")]
    Config(String),
}

impl EmbeddingError {
    pub fn is_transient(&self) -> bool {
        matches!(self, EmbeddingError::Unavailable(_))
    }
}
