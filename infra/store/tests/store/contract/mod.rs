//! The store contract: what every `Store` adapter must do, run against each of them, a
//! module per focused store (`parley_core::ports::store`).
//!
//! Each `check_*` function states one part of the contract against `Arc<dyn Store>`;
//! `on_both_adapters!` runs it once on SQLite (a temp file) and once on DynamoDB (moto,
//! via `AWS_ENDPOINT_URL`; those tests fail, never skip, when it is unset).

use crate::common;

use parley_core::ports::store::keys;
use parley_core::ports::{
    Claim, FindingOutcome, FindingState, ReviewRun, RunState, Store, StoreError, Verdict,
};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use time::macros::datetime;
use tokio::sync::Barrier;

/// Long enough that no claim in a test lapses by accident.
const HOUR: Duration = Duration::from_secs(3600);
/// How many callers race in the concurrency checks.
const RACERS: usize = 16;

mod claims;
mod counters;
mod findings;
mod installations;
mod memory;
mod review_runs;
mod tenancy;

/// Run `RACERS` copies of `attempt` at the same instant and collect what each got.
async fn race<T, F, Fut>(store: &Arc<dyn Store>, attempt: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(Arc<dyn Store>) -> Fut,
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    let start = Arc::new(Barrier::new(RACERS));
    let tasks: Vec<_> = (0..RACERS)
        .map(|_| {
            let start = Arc::clone(&start);
            let attempt = attempt(Arc::clone(store));
            tokio::spawn(async move {
                start.wait().await;
                attempt.await
            })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(RACERS);
    for task in tasks {
        outcomes.push(task.await.expect("racer panicked"));
    }
    outcomes
}

fn won(outcomes: &[Claim]) -> usize {
    outcomes.iter().filter(|c| **c == Claim::Won).count()
}
