//! Counters: one item per counter for those with a ceiling (`counter#<name>`, its value
//! in `value`), and one item per scope for those only ever added to together (`counters`,
//! an attribute `counter#<name>` per counter).
//!
//! A job's usage goes to seven counters under three scopes; an item per counter made that
//! up to 21 writes a job, where one `ADD` of every counter to the scope's one item makes
//! it three. Reads add the two up, so counters written one per item before the combined
//! item existed still count: nothing to migrate.

use super::items::{Item, n, number, s, unavailable};
use super::{COUNTER_ATTRIBUTE, COUNTER_PREFIX, DynamoStore};
use aws_sdk_dynamodb::types::ReturnValue;
use parley_core::ports::StoreError;

/// The sort key of a scope's combined item. It shares the `counter` prefix with the
/// one-per-counter items, so one Query reads both.
const COMBINED: &str = "counters";

impl DynamoStore {
    pub(super) async fn increment_counter_within(
        &self,
        scope: &str,
        counter: &str,
        ceiling: u64,
    ) -> Result<Option<u64>, StoreError> {
        // `attribute_not_exists` would let a first increment through a zero ceiling.
        if ceiling == 0 {
            return Ok(None);
        }
        let sk = format!("{COUNTER_PREFIX}{counter}");
        let result = self
            .client
            .update_item()
            .table_name(&self.tables.conversations)
            .key("pk", s(scope))
            .key("sk", s(&sk))
            .update_expression("ADD #v :one")
            .condition_expression("attribute_not_exists(#v) OR #v < :ceiling")
            .expression_attribute_names("#v", COUNTER_ATTRIBUTE)
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":ceiling", n(ceiling))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await;
        let output = match result {
            Ok(output) => output,
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_conditional_check_failed_exception()) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(unavailable("increment_within", &e)),
        };
        let location = format!("{}/{scope}/{sk}", self.tables.conversations);
        updated_value(output.attributes, COUNTER_ATTRIBUTE, &location).map(Some)
    }

    pub(super) async fn add_to_one_counter(
        &self,
        scope: &str,
        counter: &str,
        delta: u64,
    ) -> Result<u64, StoreError> {
        let sk = format!("{COUNTER_PREFIX}{counter}");
        let output = self
            .client
            .update_item()
            .table_name(&self.tables.conversations)
            .key("pk", s(scope))
            .key("sk", s(&sk))
            .update_expression("ADD #v :delta")
            .expression_attribute_names("#v", COUNTER_ATTRIBUTE)
            .expression_attribute_values(":delta", n(delta))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await
            .map_err(|e| unavailable("add_to_counter", &e))?;
        let location = format!("{}/{scope}/{sk}", self.tables.conversations);
        updated_value(output.attributes, COUNTER_ATTRIBUTE, &location)
    }

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

fn updated_value(
    attributes: Option<Item>,
    attribute: &str,
    location: &str,
) -> Result<u64, StoreError> {
    number(&attributes.unwrap_or_default(), attribute, location)?.ok_or_else(|| {
        StoreError::Corrupt {
            key: location.to_owned(),
            reason: "update returned no counter value".into(),
        }
    })
}
