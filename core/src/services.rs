//! Everything a worker's job handler talks to, bundled once per process.
//!
//! Built by `parley-runtime` from the environment (Lambda and `parley serve`) and by the
//! end-to-end tests against fake servers, so handlers are constructed the same way
//! everywhere.

use crate::llm::PriceTable;
use crate::ports::llm::Llm;
use crate::ports::{CorpusStore, Embedder, GitHub, JobQueue, Store};
use crate::repo::{BotIdentity, ConfigLoader};
use std::sync::Arc;

#[derive(Clone)]
pub struct Services {
    pub store: Arc<dyn Store>,
    /// For jobs that enqueue other jobs (`@parley review` → a review job).
    pub queue: Arc<dyn JobQueue>,
    pub github: Arc<dyn GitHub>,
    /// Shared across jobs; wrap per job in `MeteredLlm` to account for cost.
    pub llm: Arc<dyn Llm>,
    pub prices: Arc<PriceTable>,
    pub identity: Arc<BotIdentity>,
    pub config: Arc<ConfigLoader>,
    /// The monthly LLM budget's default (`PARLEY_MONTHLY_BUDGET_USD`); see [`crate::budget`].
    pub budget: crate::budget::BudgetPolicy,
    /// What retrieval searches: in production the same adapter (and table file) as
    /// `store`, behind its corpus port.
    pub corpus: Arc<dyn CorpusStore>,
    /// `None` when no embeddings provider is configured: retrieval is lexical only and
    /// nothing is enqueued for embedding.
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Where a review reads the repository beyond the diff; `None`: from the diff alone.
    pub code: Option<Arc<dyn crate::ports::code::CodeSource>>,
}
