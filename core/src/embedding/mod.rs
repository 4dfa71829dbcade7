//! Embedding stored documents, as a job of its own.
//!
//! A Lambda cannot keep working after it returns, so the review publish step does not
//! embed anything itself: it stores the documents (hunks, findings) and calls
//! [`enqueue_for`], which puts an [`EmbedJob`](crate::job::EmbedJob) on the embedding
//! queue. [`EmbeddingHandler`] then embeds whatever has no vector of the configured model
//! yet and stores the vectors. Retrieval is an extra: if the provider is down the job
//! fails and is retried by the queue, and nothing else waits on it.

mod enqueue;
mod job;
mod route;
pub mod usage;

pub use enqueue::{MAX_KEYS_PER_JOB, enqueue_for};
pub use job::{BATCH_SIZE, EmbedReport, EmbeddingHandler, MAX_EMBED_CHARS};
pub use route::WithEmbedding;
