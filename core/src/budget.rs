//! Cost control: a monthly LLM budget per GitHub App installation.
//!
//! An installation is who pays (one organisation or user account), so the budget is kept
//! per installation, not per repository. The spend is the installation's month counter
//! ([`crate::llm::usage::installation_month_scope`]), written by the same accounting as
//! the per-repository counters `@parley stats` reports, so the two always agree.
//!
//! The limit is `PARLEY_MONTHLY_BUDGET_USD` for every installation, unless an operator
//! set an override for one (`parley budget set`). The override is a memory record
//! (partition `installation:<id>`, sort key `budget`) rather than a counter: it is a value
//! that is replaced, not added to, it can be cleared, and it says who set it and when —
//! the memory records give exactly that, versioned, on both stores.
//!
//! The budget is checked before each review and each conversation turn. A job that starts
//! under the budget runs to its end, so the spend can pass the limit by what the jobs
//! already running cost; calls to models without a price count nothing (see
//! [`crate::llm::usage::UsageTally::cost_usd`]).

use crate::llm::usage::{self, counters};
use crate::ports::{Store, StoreError};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// The environment variable holding the default monthly budget in US dollars.
pub const ENV: &str = "PARLEY_MONTHLY_BUDGET_USD";

/// The sort key of an installation's override in its memory partition.
pub const OVERRIDE_KEY: &str = "budget";

/// How many times [`set_override`] retries when another writer got there first.
const WRITE_ATTEMPTS: usize = 5;

#[derive(Debug, thiserror::Error)]
pub enum BudgetError {
    #[error("{what} must be an amount in US dollars of at least 0, got {value:?}")]
    Invalid { what: &'static str, value: String },
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("the budget of installation {0} kept changing under this write; try again")]
    Contended(u64),
}

/// The default limit, from the environment. Unset means no budget.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BudgetPolicy {
    pub default_monthly_usd: Option<f64>,
}

impl BudgetPolicy {
    /// From the value of [`ENV`]; blank counts as unset. A value that is not a
    /// non-negative amount is refused: a budget silently ignored would spend money.
    pub fn from_env_value(value: Option<&str>) -> Result<Self, BudgetError> {
        let default_monthly_usd = match value.map(str::trim).filter(|v| !v.is_empty()) {
            None => None,
            Some(text) => Some(parse_usd(ENV, text)?),
        };
        Ok(BudgetPolicy {
            default_monthly_usd,
        })
    }
}

/// An amount in US dollars: finite and at least 0 (`0` stops all LLM work).
pub fn parse_usd(what: &'static str, text: &str) -> Result<f64, BudgetError> {
    let invalid = || BudgetError::Invalid {
        what,
        value: text.to_string(),
    };
    let trimmed = text.trim().trim_start_matches('$');
    let amount: f64 = trimmed.parse().map_err(|_| invalid())?;
    if !amount.is_finite() || amount < 0.0 {
        return Err(invalid());
    }
    Ok(amount)
}

/// An installation's own limit, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Override {
    /// `None`: cleared, the default applies again.
    pub monthly_usd: Option<f64>,
    #[serde(default)]
    pub set_by: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub set_at: OffsetDateTime,
}

/// Where the limit in force comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitSource {
    Default,
    Override,
}

/// An installation's spend this month against its limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    pub installation: u64,
    /// `YYYY-MM`, UTC.
    pub month: String,
    pub spent_micro_usd: u64,
    /// The limit in force, and where it comes from; `None`: no budget.
    pub limit: Option<(f64, LimitSource)>,
}

impl Standing {
    pub fn spent_usd(&self) -> f64 {
        self.spent_micro_usd as f64 / 1_000_000.0
    }

    /// At or over the limit: a job now would spend past it.
    pub fn exhausted(&self) -> bool {
        self.limit
            .is_some_and(|(limit, _)| self.spent_micro_usd >= to_micro_usd(limit))
    }
}

/// The memory partition holding an installation's budget.
pub fn partition(installation: u64) -> String {
    format!("installation:{installation}")
}

/// The installation's spend this month (UTC) against its limit.
pub async fn standing(
    store: &dyn Store,
    policy: &BudgetPolicy,
    installation: u64,
    now: OffsetDateTime,
) -> Result<Standing, StoreError> {
    let limit = match override_for(store, installation).await? {
        Some(Override {
            monthly_usd: Some(usd),
            ..
        }) => Some((usd, LimitSource::Override)),
        _ => policy
            .default_monthly_usd
            .map(|usd| (usd, LimitSource::Default)),
    };
    let spent_micro_usd = store
        .counter(
            &usage::installation_month_scope(installation, now),
            counters::COST_MICRO_USD,
        )
        .await?;
    Ok(Standing {
        installation,
        month: month(now),
        spent_micro_usd,
        limit,
    })
}

/// The standing when the budget is used up, else `None`: the check before a job.
pub async fn exhausted(
    store: &dyn Store,
    policy: &BudgetPolicy,
    installation: u64,
) -> Result<Option<Standing>, StoreError> {
    let standing = standing(store, policy, installation, OffsetDateTime::now_utc()).await?;
    if standing.exhausted() {
        tracing::info!(
            installation,
            month = %standing.month,
            spent_usd = standing.spent_usd(),
            limit_usd = standing.limit.map(|(usd, _)| usd),
            "monthly LLM budget exhausted"
        );
        return Ok(Some(standing));
    }
    Ok(None)
}

/// The installation's override, if one was ever set. A record that cannot be read is
/// logged and treated as absent, so the default still applies.
pub async fn override_for(
    store: &dyn Store,
    installation: u64,
) -> Result<Option<Override>, StoreError> {
    let items = store.memory(&partition(installation)).await?;
    let Some(item) = items.into_iter().find(|i| i.sort_key == OVERRIDE_KEY) else {
        return Ok(None);
    };
    match serde_json::from_value::<Override>(item.record) {
        Ok(found) => Ok(Some(found)),
        Err(err) => {
            tracing::warn!(installation, error = %err, "unreadable budget override; the default applies");
            Ok(None)
        }
    }
}

/// Set (`Some`) or clear (`None`) an installation's monthly limit.
pub async fn set_override(
    store: &dyn Store,
    installation: u64,
    monthly_usd: Option<f64>,
    set_by: Option<&str>,
) -> Result<(), BudgetError> {
    if let Some(usd) = monthly_usd
        && (!usd.is_finite() || usd < 0.0)
    {
        return Err(BudgetError::Invalid {
            what: "the override",
            value: usd.to_string(),
        });
    }
    let record = serde_json::to_value(Override {
        monthly_usd,
        set_by: set_by.map(str::to_string),
        set_at: OffsetDateTime::now_utc(),
    })
    .map_err(|err| StoreError::Corrupt {
        key: OVERRIDE_KEY.to_string(),
        reason: err.to_string(),
    })?;
    let partition = partition(installation);
    for _ in 0..WRITE_ATTEMPTS {
        let version = store
            .memory(&partition)
            .await?
            .into_iter()
            .find(|i| i.sort_key == OVERRIDE_KEY)
            .map_or(0, |i| i.version);
        if store
            .put_memory(&partition, OVERRIDE_KEY, &record, version)
            .await?
        {
            tracing::info!(installation, monthly_usd, "budget override written");
            return Ok(());
        }
    }
    Err(BudgetError::Contended(installation))
}

pub use usage::month;

fn to_micro_usd(usd: f64) -> u64 {
    (usd * 1_000_000.0).round().max(0.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_a_non_negative_amount_or_unset() {
        assert_eq!(
            BudgetPolicy::from_env_value(None).unwrap(),
            BudgetPolicy::default()
        );
        assert_eq!(
            BudgetPolicy::from_env_value(Some("  ")).unwrap(),
            BudgetPolicy::default()
        );
        assert_eq!(
            BudgetPolicy::from_env_value(Some("25.50"))
                .unwrap()
                .default_monthly_usd,
            Some(25.5)
        );
        assert_eq!(
            BudgetPolicy::from_env_value(Some("$0"))
                .unwrap()
                .default_monthly_usd,
            Some(0.0)
        );
        for bad in ["-1", "ten", "NaN", "inf", "1e400"] {
            let err = BudgetPolicy::from_env_value(Some(bad)).unwrap_err();
            assert!(err.to_string().contains(ENV), "{bad}: {err}");
        }
    }

    fn standing(spent_micro_usd: u64, limit: Option<f64>) -> Standing {
        Standing {
            installation: 1,
            month: "2025-01".into(),
            spent_micro_usd,
            limit: limit.map(|usd| (usd, LimitSource::Default)),
        }
    }

    #[test]
    fn exhausted_at_the_limit_not_below_it() {
        assert!(!standing(9_999_999, Some(10.0)).exhausted());
        assert!(standing(10_000_000, Some(10.0)).exhausted());
        assert!(standing(10_000_001, Some(10.0)).exhausted());
        assert!(standing(0, Some(0.0)).exhausted(), "0 stops everything");
        assert!(!standing(u64::MAX, None).exhausted(), "no budget, no limit");
    }
}
