//! Counters: one item per counter for those with a ceiling (`counter#<name>`, its value
//! in `value`), and one item per scope for those only ever added to together (`counters`,
//! an attribute `counter#<name>` per counter).
//!
//! A job's usage goes to seven counters under three scopes; an item per counter made that
//! up to 21 writes a job, where one `ADD` of every counter to the scope's one item makes
//! it three. Reads add the two up, so counters written one per item before the combined
//! item existed still count: nothing to migrate.

use super::items::{n, number, s, unavailable};
use super::{COUNTER_ATTRIBUTE, COUNTER_PREFIX, DynamoStore};
use parley_core::ports::StoreError;

/// The sort key of a scope's combined item. It shares the `counter` prefix with the
/// one-per-counter items, so one Query reads both.
const COMBINED: &str = "counters";

impl DynamoStore {
    /// One `UpdateItem` adding every non-zero delta to the scope's combined item.
    pub(super) async fn add_to_counters_together(
        &self,
        scope: &str,
        deltas: &[(&str, u64)],
    ) -> Result<(), StoreError> {
        let deltas: Vec<&(&str, u64)> = deltas.iter().filter(|(_, d)| *d > 0).collect();
        if deltas.is_empty() {
            return Ok(());
        }
        let mut request = self
            .client
            .update_item()
            .table_name(&self.tables.conversations)
            .key("pk", s(scope))
            .key("sk", s(COMBINED));
        let mut adds = Vec::with_capacity(deltas.len());
        for (i, (counter, delta)) in deltas.iter().enumerate() {
            adds.push(format!("#c{i} :d{i}"));
            request = request
                .expression_attribute_names(format!("#c{i}"), format!("{COUNTER_PREFIX}{counter}"))
                .expression_attribute_values(format!(":d{i}"), n(delta));
        }
        request
            .update_expression(format!("ADD {}", adds.join(", ")))
            .send()
            .await
            .map_err(|e| unavailable("add_to_counters", &e))?;
        Ok(())
    }

    /// One consistent Query over the scope's counter items: each counter is its own item's
    /// value plus its attribute on the combined item.
    pub(super) async fn counter_values(
        &self,
        scope: &str,
        names: &[&str],
        operation: &str,
    ) -> Result<Vec<u64>, StoreError> {
        let items = self
            .query_partition(&self.tables.conversations, scope, "counter", operation)
            .await?;
        let mut values = vec![0u64; names.len()];
        for item in &items {
            let sk = item
                .get("sk")
                .and_then(|v| v.as_s().ok())
                .map(String::as_str);
            let location = format!("{}/{scope}/{}", self.tables.conversations, sk.unwrap_or(""));
            for (value, name) in values.iter_mut().zip(names) {
                let attribute = format!("{COUNTER_PREFIX}{name}");
                let found = match sk {
                    Some(COMBINED) => number::<u64>(item, &attribute, &location)?,
                    Some(sk) if sk == attribute => {
                        number::<u64>(item, COUNTER_ATTRIBUTE, &location)?
                    }
                    _ => None,
                };
                *value = value.saturating_add(found.unwrap_or(0));
            }
        }
        Ok(values)
    }
}
