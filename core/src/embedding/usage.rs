//! What embedding costs, counted per repository and month beside the LLM counters.
//!
//! Embedding calls are not tied to one PR (a job may carry hunks of several), so they are
//! counted in the repository's month scope only ([`crate::llm::usage::month_scope`]).

use crate::llm::PriceTable;
use crate::llm::usage::{add_counters, counters, month_scope, read_counters};
use crate::ports::llm::Usage;
use crate::ports::{Store, StoreError};
use time::OffsetDateTime;

/// A repository's embedding spend in one month.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EmbeddingSpend {
    pub calls: u64,
    pub input_tokens: u64,
    /// Priced calls only: a local model has no price and adds nothing.
    pub cost_micro_usd: u64,
}

/// Count one embedding call. Accounting never fails the job, so errors are logged.
pub async fn record_for_month(
    store: &dyn Store,
    prices: &PriceTable,
    repo: &str,
    model: &str,
    input_tokens: u64,
) {
    let cost = prices.cost_usd(model, Usage::new(input_tokens, 0));
    let micro_usd = cost.map_or(0, |usd| (usd * 1_000_000.0).round().max(0.0) as u64);
    tracing::info!(repo, model, input_tokens, cost_usd = cost, "embedding call");
    let scope = month_scope(repo, OffsetDateTime::now_utc());
    let deltas = [
        (counters::EMBEDDING_CALLS, 1),
        (counters::EMBEDDING_INPUT_TOKENS, input_tokens),
        (counters::EMBEDDING_COST_MICRO_USD, micro_usd),
    ];
    add_counters(store, &[scope], &deltas, "embedding usage").await;
}

/// The repository's embedding spend this month (UTC).
pub async fn spent_this_month(store: &dyn Store, repo: &str) -> Result<EmbeddingSpend, StoreError> {
    let scope = month_scope(repo, OffsetDateTime::now_utc());
    let names = [
        counters::EMBEDDING_CALLS,
        counters::EMBEDDING_INPUT_TOKENS,
        counters::EMBEDDING_COST_MICRO_USD,
    ];
    let [calls, input_tokens, cost_micro_usd] = read_counters(store, &scope, names).await?;
    Ok(EmbeddingSpend {
        calls,
        input_tokens,
        cost_micro_usd,
    })
}
