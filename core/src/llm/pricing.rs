//! What a call cost, estimated from its token counts.
//!
//! Providers do not return a price, so we keep a table of list prices (USD per million
//! tokens) keyed by model-id prefix. The same Claude model has many spellings (Anthropic's
//! dated ids, Bedrock's `us.anthropic.…-v1:0` inference profiles, OpenRouter's
//! `anthropic/…`), so ids are normalised before the look-up, and the longest matching
//! prefix wins. A model we have no price for costs `None`, never zero: a review summary
//! must not claim a local or new model was free.
//!
//! The table is an estimate (prompt-cache reads and writes at each provider's rule; no
//! long-context or regional surcharges, no batch rates). Operators correct or extend it with `PARLEY_LLM_PRICES`.

use crate::ports::llm::Usage;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Environment variable holding price overrides as JSON:
/// `{"model-prefix": {"input": 3.0, "output": 15.0}}` in USD per million tokens.
/// Read by the entrypoints (core does no I/O) and passed to [`PriceTable::with_overrides_json`].
pub const PRICES_ENV: &str = "PARLEY_LLM_PRICES";

/// List prices, USD per million tokens, as of early 2026: (prefix, input, output, cache
/// read and cache write as multiples of the input price). Keys are normalised prefixes.
///
/// Caching: Anthropic (and Claude on Bedrock) bills a 5-minute cache write at 1.25x the
/// input price and a read at 0.1x; OpenAI writes at the input price and reads at 0.5x
/// (GPT-4o, o1), 0.25x (GPT-4.1, o3, o4-mini) or 0.1x (GPT-5).
const BUILTIN: &[(&str, f64, f64, f64, f64)] = &[
    // Anthropic (same list price on the Anthropic API and Bedrock on-demand).
    ("claude-opus-4-6", 5.0, 25.0, 0.1, 1.25),
    ("claude-opus-4-5", 5.0, 25.0, 0.1, 1.25),
    ("claude-opus-4", 15.0, 75.0, 0.1, 1.25),
    ("claude-sonnet-4", 3.0, 15.0, 0.1, 1.25),
    ("claude-haiku-4", 1.0, 5.0, 0.1, 1.25),
    ("claude-3-7-sonnet", 3.0, 15.0, 0.1, 1.25),
    ("claude-3-5-sonnet", 3.0, 15.0, 0.1, 1.25),
    ("claude-3-5-haiku", 0.8, 4.0, 0.1, 1.25),
    ("claude-3-opus", 15.0, 75.0, 0.1, 1.25),
    ("claude-3-haiku", 0.25, 1.25, 0.1, 1.25),
    // OpenAI.
    ("gpt-4o", 2.5, 10.0, 0.5, 1.0),
    ("gpt-4o-mini", 0.15, 0.6, 0.5, 1.0),
    ("gpt-4.1", 2.0, 8.0, 0.25, 1.0),
    ("gpt-4.1-mini", 0.4, 1.6, 0.25, 1.0),
    ("gpt-4.1-nano", 0.1, 0.4, 0.25, 1.0),
    ("gpt-5", 1.25, 10.0, 0.1, 1.0),
    ("gpt-5-mini", 0.25, 2.0, 0.1, 1.0),
    ("gpt-5-nano", 0.05, 0.4, 0.1, 1.0),
    ("o1", 15.0, 60.0, 0.5, 1.0),
    ("o1-mini", 1.1, 4.4, 0.5, 1.0),
    ("o1-pro", 150.0, 600.0, 1.0, 1.0),
    ("o3", 2.0, 8.0, 0.25, 1.0),
    ("o3-mini", 1.1, 4.4, 0.5, 1.0),
    ("o3-pro", 20.0, 80.0, 1.0, 1.0),
    ("o4-mini", 1.1, 4.4, 0.25, 1.0),
    // Embeddings: input only. Titan Text Embeddings V2 on Bedrock
    // (`amazon.titan-embed-text-v2:0`), OpenAI's text-embedding-3 models.
    ("titan-embed-text-v2", 0.02, 0.0, 1.0, 1.0),
    ("text-embedding-3-small", 0.02, 0.0, 1.0, 1.0),
    ("text-embedding-3-large", 0.13, 0.0, 1.0, 1.0),
];

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PricingError {
    #[error("invalid {PRICES_ENV}: {0}")]
    Invalid(String),
}

/// USD per million tokens. A cache price left out is the input price (no discount, no
/// premium): an operator's override never claims savings it was not told of.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Price {
    pub input: f64,
    pub output: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

impl Price {
    pub fn new(input: f64, output: f64) -> Self {
        Price {
            input,
            output,
            cache_read: None,
            cache_write: None,
        }
    }

    pub fn cost_usd(&self, usage: Usage) -> f64 {
        (usage.input_tokens as f64 * self.input
            + usage.cache_read_tokens as f64 * self.cache_read.unwrap_or(self.input)
            + usage.cache_write_tokens as f64 * self.cache_write.unwrap_or(self.input)
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }

    /// What the cache saved on `usage` against sending every input token uncached: reads
    /// at their discount, less the premium paid on writes (negative when a write was
    /// never read back).
    pub fn saved_usd(&self, usage: Usage) -> f64 {
        (usage.cache_read_tokens as f64 * (self.input - self.cache_read.unwrap_or(self.input))
            + usage.cache_write_tokens as f64
                * (self.input - self.cache_write.unwrap_or(self.input)))
            / 1_000_000.0
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct PriceTable {
    /// Normalised prefix → price.
    entries: BTreeMap<String, Price>,
}

impl Default for PriceTable {
    fn default() -> Self {
        Self::builtin()
    }
}

impl PriceTable {
    pub fn builtin() -> Self {
        let entries = BUILTIN
            .iter()
            .map(|&(prefix, input, output, read, write)| {
                let price = Price {
                    input,
                    output,
                    cache_read: Some(input * read),
                    cache_write: Some(input * write),
                };
                (prefix.to_owned(), price)
            })
            .collect();
        Self { entries }
    }

    pub fn empty() -> Self {
        Self {
            entries: BTreeMap::new(),
        }
    }

    /// Add or replace entries from the `PARLEY_LLM_PRICES` JSON. An entry replaces a
    /// built-in one with the same (normalised) key; otherwise the longest prefix still
    /// wins, so `{"claude": …}` prices only Claude models the table does not know.
    /// A typo must not silently fall back to wrong prices, hence the strict parse.
    pub fn with_overrides_json(mut self, json: &str) -> Result<Self, PricingError> {
        let overrides: BTreeMap<String, Price> =
            serde_json::from_str(json).map_err(|e| PricingError::Invalid(e.to_string()))?;
        for (prefix, price) in overrides {
            let valid = |v: f64| v.is_finite() && v >= 0.0;
            let cache_ok = [price.cache_read, price.cache_write]
                .into_iter()
                .flatten()
                .all(valid);
            if !valid(price.input) || !valid(price.output) || !cache_ok {
                return Err(PricingError::Invalid(format!(
                    "price for {prefix:?} must be finite and not negative"
                )));
            }
            let key = normalise_model_id(&prefix);
            if key.is_empty() {
                return Err(PricingError::Invalid("empty model prefix".to_owned()));
            }
            self.entries.insert(key, price);
        }
        Ok(self)
    }

    /// The price of `model`, by the longest matching prefix of its normalised id. A
    /// prefix matches only at a boundary (`gpt-4.1` prices `gpt-4.1-2025-04-14` but not
    /// `gpt-4.10`).
    pub fn price(&self, model: &str) -> Option<Price> {
        let id = normalise_model_id(model);
        self.entries
            .iter()
            .filter(|(prefix, _)| {
                id.strip_prefix(prefix.as_str())
                    .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_alphanumeric()))
            })
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, price)| *price)
    }

    /// Estimated cost of `usage` on `model`; `None` when the model has no price.
    pub fn cost_usd(&self, model: &str, usage: Usage) -> Option<f64> {
        self.price(model).map(|price| price.cost_usd(usage))
    }

    pub fn saved_usd(&self, model: &str, usage: Usage) -> Option<f64> {
        self.price(model).map(|price| price.saved_usd(usage))
    }
}

/// The provider-independent core of a model id: lower case, without an ARN or
/// `vendor/` path, Bedrock's geography (`us.`, `eu.`, `global.`, …) and vendor
/// (`anthropic.`) prefixes. `us.anthropic.claude-sonnet-4-5-20250929-v1:0` becomes
/// `claude-sonnet-4-5-20250929-v1:0`.
pub fn normalise_model_id(model: &str) -> String {
    let lower = model.trim().to_ascii_lowercase();
    let mut id = lower.rsplit('/').next().unwrap_or_default();
    // Bedrock prefixes are purely alphabetic dotted segments; a model's own name always
    // carries a digit before any dot (`gpt-4.1`), so it is never stripped.
    while let Some((head, rest)) = id.split_once('.') {
        if !head.is_empty() && head.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
            id = rest;
        } else {
            break;
        }
    }
    id.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn price(model: &str) -> Option<(f64, f64)> {
        PriceTable::builtin()
            .price(model)
            .map(|p| (p.input, p.output))
    }

    #[test]
    fn normalisation_strips_provider_spellings() {
        let cases = [
            (
                "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
                "claude-sonnet-4-5-20250929-v1:0",
            ),
            (
                "global.anthropic.claude-opus-4-5-20251101-v1:0",
                "claude-opus-4-5-20251101-v1:0",
            ),
            (
                "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-haiku-4-5-20251001-v1:0",
                "claude-haiku-4-5-20251001-v1:0",
            ),
            (
                "us-gov.anthropic.claude-3-5-sonnet-20240620-v1:0",
                "claude-3-5-sonnet-20240620-v1:0",
            ),
            ("anthropic/claude-sonnet-4", "claude-sonnet-4"),
            ("GPT-4.1-mini", "gpt-4.1-mini"),
            ("o3", "o3"),
        ];
        for (raw, want) in cases {
            assert_eq!(normalise_model_id(raw), want, "{raw}");
        }
    }

    #[test]
    fn claude_ids_on_every_provider_get_the_same_price() {
        for model in [
            "claude-sonnet-4-5",
            "claude-sonnet-4-5-20250929",
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "anthropic.claude-sonnet-4-20250514-v1:0",
            "anthropic/claude-sonnet-4",
        ] {
            assert_eq!(price(model), Some((3.0, 15.0)), "{model}");
        }
    }

    #[test]
    fn the_longest_prefix_wins() {
        assert_eq!(price("claude-opus-4-1-20250805"), Some((15.0, 75.0)));
        assert_eq!(price("claude-opus-4-5-20251101"), Some((5.0, 25.0)));
        assert_eq!(price("gpt-4o-mini-2024-07-18"), Some((0.15, 0.6)));
        assert_eq!(price("gpt-4o-2024-08-06"), Some((2.5, 10.0)));
        assert_eq!(price("gpt-4.1-nano"), Some((0.1, 0.4)));
        assert_eq!(price("o3-mini"), Some((1.1, 4.4)));
        assert_eq!(price("o3"), Some((2.0, 8.0)));
    }

    #[test]
    fn embedding_models_are_priced_by_input() {
        assert_eq!(price("amazon.titan-embed-text-v2:0"), Some((0.02, 0.0)));
        assert_eq!(price("text-embedding-3-small"), Some((0.02, 0.0)));
        let cost = PriceTable::builtin()
            .cost_usd("amazon.titan-embed-text-v2:0", Usage::new(1_000_000, 0))
            .unwrap();
        assert!((cost - 0.02).abs() < 1e-12, "{cost}");
        assert_eq!(price("potion-base-8M"), None);
    }

    #[test]
    fn prefixes_match_only_at_a_boundary() {
        assert_eq!(price("gpt-4.10"), None);
        assert_eq!(price("o30"), None);
        assert_eq!(price("claude-sonnet-40"), None);
    }

    #[test]
    fn unknown_models_have_no_cost_rather_than_zero() {
        let table = PriceTable::builtin();
        assert_eq!(table.cost_usd("llama3.1:8b", Usage::new(1000, 1000)), None);
        assert_eq!(table.cost_usd("", Usage::new(1, 1)), None);
    }

    #[test]
    fn cost_is_per_million_tokens() {
        let cost = PriceTable::builtin()
            .cost_usd("claude-sonnet-4-5", Usage::new(1_000_000, 100_000))
            .unwrap();
        assert!((cost - 4.5).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn overrides_replace_and_extend_the_table() {
        let table = PriceTable::builtin()
            .with_overrides_json(
                r#"{"claude-sonnet-4": {"input": 6, "output": 22.5},
                    "llama3": {"input": 0, "output": 0}}"#,
            )
            .unwrap();
        let sonnet = table.price("us.anthropic.claude-sonnet-4-5-20250929-v1:0");
        assert_eq!(sonnet, Some(Price::new(6.0, 22.5)));
        // A local model an operator declares free really costs zero, not "unknown".
        assert_eq!(table.cost_usd("llama3.1:8b", Usage::new(5, 5)), Some(0.0));
        // Untouched entries keep their built-in price.
        assert_eq!(table.price("gpt-4o").map(|p| p.input), Some(2.5));
    }

    /// Anthropic's rules on a cached review: a write at 1.25x, reads at 0.1x; what the
    /// cache saved is the difference to the same tokens uncached.
    #[test]
    fn cache_reads_and_writes_are_priced_at_the_providers_rules() {
        let table = PriceTable::builtin();
        let usage = Usage::new(1_000_000, 0).with_cache(5_000_000, 1_000_000);
        let cost = table.cost_usd("claude-sonnet-4-5", usage).unwrap();
        // 1M at $3 + 5M at $0.30 + 1M at $3.75
        assert!((cost - (3.0 + 1.5 + 3.75)).abs() < 1e-9, "{cost}");
        let saved = table.saved_usd("claude-sonnet-4-5", usage).unwrap();
        // 5M x $2.70 saved, 1M x $0.75 paid extra
        assert!((saved - (13.5 - 0.75)).abs() < 1e-9, "{saved}");
        let gpt = table.cost_usd("gpt-4.1", Usage::new(0, 0).with_cache(1_000_000, 0));
        assert_eq!(gpt, Some(0.5));
        // An override without cache prices claims no discount.
        let plain = PriceTable::builtin()
            .with_overrides_json(r#"{"llama3": {"input": 1, "output": 1}}"#)
            .unwrap();
        assert_eq!(plain.saved_usd("llama3", usage), Some(0.0));
        let priced = PriceTable::builtin()
            .with_overrides_json(r#"{"llama3": {"input": 1, "output": 1, "cacheRead": 0.1}}"#)
            .unwrap();
        assert!(priced.saved_usd("llama3", usage).unwrap() > 4.4);
    }

    #[test]
    fn bad_overrides_are_rejected_not_ignored() {
        for bad in [
            "not json",
            r#"{"m": {"input": 1}}"#,
            r#"{"m": {"input": 1, "output": 2, "inptu": 3}}"#,
            r#"{"m": {"input": -1, "output": 2}}"#,
            r#"{"": {"input": 1, "output": 2}}"#,
            r#"["m"]"#,
        ] {
            assert!(
                PriceTable::builtin().with_overrides_json(bad).is_err(),
                "{bad}"
            );
        }
    }
}
