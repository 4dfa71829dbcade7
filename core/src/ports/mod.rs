//! The traits adapters implement. Each is object-safe so entrypoints can pick an adapter at
//! run time (DynamoDB in Lambda, SQLite locally) behind an `Arc<dyn …>`.

pub mod code;
pub mod corpus;
pub mod embeddings;
pub mod github;
pub mod handler;
pub mod llm;
pub mod queue;
pub mod store;

pub use corpus::{Corpus, CorpusStore, Document, Occurrence, QuantizedVector};
pub use embeddings::{Embedder, EmbeddingError, Embeddings};
pub use github::{GitHub, GitHubError, RepoScope};
pub use handler::{Attempt, JobError, JobHandler};
pub use queue::{
    DeadLetter, JobQueue, OutgoingMessage, PollingQueue, QueueError, QueueName, ReceivedMessage,
};
pub use store::{
    Claim, Claims, Counters, Finding, FindingOutcome, FindingState, Findings, Installation,
    Installations, Memory, MemoryItem, ReviewRun, ReviewRuns, RunState, Severity, Store,
    StoreError, Tenancy, Verdict,
};
