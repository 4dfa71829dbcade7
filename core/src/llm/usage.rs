//! Adding up what a job spent on the LLM.
//!
//! A review runs several passes (in parallel, some retried for bad JSON) and a reply may
//! make more than one call; the summary reports the total. Wrapping the job's LLM in a
//! [`MeteredLlm`] counts every call that returned, including attempts whose output was
//! later rejected, without each caller threading usage through by hand.

use crate::llm::pricing::PriceTable;
use crate::ports::llm::{Llm, LlmError, LlmRequest, LlmResponse, Usage};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex, PoisonError};
use time::OffsetDateTime;

/// Tokens and estimated cost of a number of calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageTally {
    pub calls: u32,
    pub usage: Usage,
    /// Sum over the calls whose model has a price.
    pub priced_usd: f64,
    /// Calls to models without a price; while there are any, the total is unknown.
    pub unpriced_calls: u32,
    /// What the prompt cache saved on the priced calls (reads at their discount, less
    /// the premium on writes), against the same tokens sent uncached.
    #[serde(default)]
    pub saved_usd: f64,
}

impl UsageTally {
    /// Count one call; returns its estimated cost.
    pub fn record(&mut self, prices: &PriceTable, model: &str, usage: Usage) -> Option<f64> {
        let cost = prices.cost_usd(model, usage);
        self.calls = self.calls.saturating_add(1);
        self.usage += usage;
        match cost {
            Some(usd) => {
                self.priced_usd += usd;
                self.saved_usd += prices.saved_usd(model, usage).unwrap_or(0.0);
            }
            None => self.unpriced_calls = self.unpriced_calls.saturating_add(1),
        }
        cost
    }

    pub fn merge(&mut self, other: &UsageTally) {
        self.calls = self.calls.saturating_add(other.calls);
        self.usage += other.usage;
        self.priced_usd += other.priced_usd;
        self.unpriced_calls = self.unpriced_calls.saturating_add(other.unpriced_calls);
        self.saved_usd += other.saved_usd;
    }

    /// The estimated total, or `None` if any call's model has no price: a partial sum
    /// would understate the spend. [`priced_usd`](Self::priced_usd) is then a lower bound.
    pub fn cost_usd(&self) -> Option<f64> {
        (self.unpriced_calls == 0).then_some(self.priced_usd)
    }
}

/// The per-PR usage counters, one set for every writer (reviews, conversation turns) and
/// every reader (the review summary, `stats`). Kept under [`crate::ports::store::keys::pr_scope`].
pub mod counters {
    pub const INPUT_TOKENS: &str = "llm_input_tokens";
    pub const OUTPUT_TOKENS: &str = "llm_output_tokens";
    /// Estimated cost in millionths of a US dollar (priced calls only).
    pub const COST_MICRO_USD: &str = "llm_cost_micro_usd";
    pub const CALLS: &str = "llm_calls";
    /// Input tokens read from / written to the provider's prompt cache.
    pub const CACHE_READ_TOKENS: &str = "llm_cache_read_tokens";
    pub const CACHE_WRITE_TOKENS: &str = "llm_cache_write_tokens";
    /// What the cache saved, in millionths of a US dollar (net of write premiums; never
    /// below zero in the counter, which only adds).
    pub const SAVED_MICRO_USD: &str = "llm_cache_saved_micro_usd";
    /// Reviews published (month scope only).
    pub const REVIEWS: &str = "reviews";
    /// Embedding calls, their input tokens and estimated cost (month scope only; see
    /// `crate::embedding::usage`).
    pub const EMBEDDING_CALLS: &str = "embedding_calls";
    pub const EMBEDDING_INPUT_TOKENS: &str = "embedding_input_tokens";
    pub const EMBEDDING_COST_MICRO_USD: &str = "embedding_cost_micro_usd";
}

/// What a PR has spent so far, from its counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpentOnPr {
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_micro_usd: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub saved_micro_usd: u64,
}

impl SpentOnPr {
    /// The counters behind the fields, in the order of [`SpentOnPr::values`].
    const COUNTERS: [&'static str; 7] = [
        counters::CALLS,
        counters::INPUT_TOKENS,
        counters::OUTPUT_TOKENS,
        counters::COST_MICRO_USD,
        counters::CACHE_READ_TOKENS,
        counters::CACHE_WRITE_TOKENS,
        counters::SAVED_MICRO_USD,
    ];

    fn values(&self) -> [u64; 7] {
        [
            self.calls,
            self.input_tokens,
            self.output_tokens,
            self.cost_micro_usd,
            self.cache_read_tokens,
            self.cache_write_tokens,
            self.saved_micro_usd,
        ]
    }

    fn from_values(v: [u64; 7]) -> Self {
        SpentOnPr {
            calls: v[0],
            input_tokens: v[1],
            output_tokens: v[2],
            cost_micro_usd: v[3],
            cache_read_tokens: v[4],
            cache_write_tokens: v[5],
            saved_micro_usd: v[6],
        }
    }
}

/// Add a job's tally to the PR's counters, its repository's month and its installation's
/// month (what the budget is checked against, see [`crate::budget`]). Accounting never
/// fails the job whose work is done, so errors are logged.
pub async fn record_for_pr(
    store: &dyn crate::ports::Store,
    installation: u64,
    repo: &str,
    pr: u64,
    tally: &UsageTally,
) {
    crate::metrics::llm_usage(tally.calls, tally.usage, tally.priced_usd, tally.saved_usd);
    if tally.calls == 0 {
        return;
    }
    let micro_usd = (tally.priced_usd * 1_000_000.0).round().max(0.0) as u64;
    let saved_micro_usd = (tally.saved_usd * 1_000_000.0).round().max(0.0) as u64;
    let now = OffsetDateTime::now_utc();
    let added = SpentOnPr {
        calls: u64::from(tally.calls),
        input_tokens: tally.usage.input_tokens,
        output_tokens: tally.usage.output_tokens,
        cost_micro_usd: micro_usd,
        cache_read_tokens: tally.usage.cache_read_tokens,
        cache_write_tokens: tally.usage.cache_write_tokens,
        saved_micro_usd,
    };
    let deltas: Vec<(&'static str, u64)> = SpentOnPr::COUNTERS
        .into_iter()
        .zip(added.values())
        .collect();
    let scopes = [
        crate::ports::store::keys::pr_scope(repo, pr),
        month_scope(repo, now),
        installation_month_scope(installation, now),
    ];
    add_counters(store, &scopes, &deltas, "LLM usage").await;
}

/// Add the deltas under each scope: one write a scope (see [`Counters::add_to_counters`]),
/// the scopes at once, so a job waits for one round trip. Accounting never fails the job
/// whose work is done, so a failed write is logged as `what` could not be recorded.
///
/// [`Counters::add_to_counters`]: crate::ports::Counters::add_to_counters
pub(crate) async fn add_counters(
    store: &dyn crate::ports::Store,
    scopes: &[String],
    deltas: &[(&'static str, u64)],
    what: &'static str,
) {
    let writes = scopes
        .iter()
        .map(|scope| async move {
            if let Err(err) = store.add_to_counters(scope, deltas).await {
                tracing::warn!(%scope, error = %err, "could not record {what}");
            }
        })
        .collect();
    crate::concurrently::join_all(writes).await;
}

/// The counters `names` under `scope`, in one read.
pub(crate) async fn read_counters<const N: usize>(
    store: &dyn crate::ports::Store,
    scope: &str,
    names: [&str; N],
) -> Result<[u64; N], crate::ports::StoreError> {
    let values = store.counters(scope, &names).await?;
    let mut out = [0; N];
    for (slot, value) in out.iter_mut().zip(values) {
        *slot = value;
    }
    Ok(out)
}

/// The scope of a repository's usage counters for the calendar month (UTC) of `at`: the
/// same counters as a PR's, added up per month for `@parley stats`.
pub fn month_scope(repo: &str, at: OffsetDateTime) -> String {
    format!("usage#{repo}#{}", month(at))
}

/// The scope of an installation's usage counters for the calendar month (UTC) of `at`:
/// the same counters, added up over every repository the installation covers.
pub fn installation_month_scope(installation: u64, at: OffsetDateTime) -> String {
    format!("usage#installation:{installation}#{}", month(at))
}

/// `YYYY-MM` of `at`, the month the counters, the budget and the once-a-month notes go
/// by.
pub fn month(at: OffsetDateTime) -> String {
    format!("{:04}-{:02}", at.year(), u8::from(at.month()))
}

/// A repository's usage this month, from its counters.
pub async fn spent_this_month(
    store: &dyn crate::ports::Store,
    repo: &str,
) -> Result<SpentOnPr, crate::ports::StoreError> {
    spent(store, &month_scope(repo, OffsetDateTime::now_utc())).await
}

/// The PR's usage counters as they stand.
pub async fn spent_on_pr(
    store: &dyn crate::ports::Store,
    repo: &str,
    pr: u64,
) -> Result<SpentOnPr, crate::ports::StoreError> {
    spent(store, &crate::ports::store::keys::pr_scope(repo, pr)).await
}

/// The usage counters under one scope.
async fn spent(
    store: &dyn crate::ports::Store,
    scope: &str,
) -> Result<SpentOnPr, crate::ports::StoreError> {
    read_counters(store, scope, SpentOnPr::COUNTERS)
        .await
        .map(SpentOnPr::from_values)
}

/// An [`Llm`] that records every successful call into a tally. Make one per job around
/// the shared adapter, so tallies of concurrent jobs never mix.
pub struct MeteredLlm {
    inner: Arc<dyn Llm>,
    prices: Arc<PriceTable>,
    tally: Mutex<UsageTally>,
}

impl MeteredLlm {
    pub fn new(inner: Arc<dyn Llm>, prices: Arc<PriceTable>) -> Self {
        Self {
            inner,
            prices,
            tally: Mutex::new(UsageTally::default()),
        }
    }

    /// What has been spent so far.
    pub fn tally(&self) -> UsageTally {
        self.tally
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[async_trait]
impl Llm for MeteredLlm {
    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let response = self.inner.complete(request).await?;
        let cost = self
            .tally
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(&self.prices, &response.model, response.usage);
        tracing::info!(
            model = %response.model,
            input_tokens = response.usage.input_tokens,
            cache_read_tokens = response.usage.cache_read_tokens,
            cache_write_tokens = response.usage.cache_write_tokens,
            output_tokens = response.usage.output_tokens,
            cost_usd = cost,
            "LLM call"
        );
        Ok(response)
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn prompt_cache(&self) -> crate::ports::llm::PromptCache {
        self.inner.prompt_cache()
    }
    fn supports_tools(&self) -> bool {
        self.inner.supports_tools()
    }

    fn tools_went_unused(&self) {
        self.inner.tools_went_unused()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::llm::Message;

    #[test]
    fn a_repositorys_month_scopes_are_what_a_purge_deletes() {
        let scope = month_scope("o/r", time::macros::datetime!(2026-11-25 0:00 UTC));
        let [pr, usage] = crate::ports::store::keys::repo_scope_prefixes("o/r");
        assert!(scope.starts_with(&usage), "{scope}");
        assert!(!scope.starts_with(&pr));
        assert!(!month_scope("o/r-2", time::OffsetDateTime::now_utc()).starts_with(&usage));
    }

    struct EchoModel(&'static str);

    #[async_trait]
    impl Llm for EchoModel {
        async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
            if request.system == "fail" {
                return Err(LlmError::Network("down".into()));
            }
            Ok(LlmResponse::answer("ok", Usage::new(1_000_000, 0), self.0))
        }

        fn model(&self) -> &str {
            self.0
        }
    }

    fn ask(system: &str) -> LlmRequest {
        LlmRequest::new(system, vec![Message::user("hi")])
    }

    #[tokio::test]
    async fn every_successful_call_is_counted_and_priced() {
        let metered = MeteredLlm::new(
            Arc::new(EchoModel("claude-sonnet-4-5-20250929")),
            Arc::new(PriceTable::builtin()),
        );
        metered.complete(&ask("a")).await.unwrap();
        metered.complete(&ask("b")).await.unwrap();
        assert!(metered.complete(&ask("fail")).await.is_err());

        let tally = metered.tally();
        assert_eq!(tally.calls, 2);
        assert_eq!(tally.usage, Usage::new(2_000_000, 0));
        assert_eq!(tally.cost_usd(), Some(6.0));
        assert_eq!(metered.model(), "claude-sonnet-4-5-20250929");
    }

    #[tokio::test]
    async fn one_unpriced_call_makes_the_total_unknown() {
        let prices = Arc::new(PriceTable::builtin());
        let local = MeteredLlm::new(Arc::new(EchoModel("qwen2.5-coder:7b")), prices.clone());
        local.complete(&ask("a")).await.unwrap();

        let mut total = UsageTally::default();
        total.record(&prices, "gpt-4o", Usage::new(1_000_000, 0));
        total.merge(&local.tally());
        assert_eq!(total.calls, 2);
        assert_eq!(total.cost_usd(), None);
        assert_eq!(total.priced_usd, 2.5);
        assert_eq!(total.unpriced_calls, 1);
    }
}
