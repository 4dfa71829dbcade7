//! Deleting what Parley kept about a repository (the App was uninstalled from it).
//!
//! Memory and snippets are partitioned by repository: one Query finds them. Findings,
//! review runs and counters are partitioned by PR (`repo#N`) or month (`usage#repo#…`),
//! so no key names the repository alone: a Scan with a key-prefix filter finds them. A
//! purge is rare (an uninstall), so a scan of two tables then costs less than an index on
//! the repository kept up on every write for it.

use super::DynamoStore;
use super::items::{Item, s, unavailable};
use aws_sdk_dynamodb::types::{DeleteRequest, WriteRequest};
use parley_core::ports::StoreError;
use std::time::Duration;

/// DynamoDB's limit of requests in one BatchWriteItem.
const BATCH: usize = 25;
/// Rounds of retrying what a throttled batch left unprocessed.
const ATTEMPTS: u32 = 8;

impl DynamoStore {
    /// The (`pk`, `sk`) of every item of `table` whose partition key starts with one of
    /// `prefixes`.
    pub(super) async fn scan_keys(
        &self,
        table: &str,
        prefixes: &[String],
        operation: &str,
    ) -> Result<Vec<Item>, StoreError> {
        self.scan_prefixes(table, prefixes, Some("pk, sk"), operation)
            .await
    }

    /// Every item (or its `projection`) whose partition key starts with one of `prefixes`.
    pub(super) async fn scan_prefixes(
        &self,
        table: &str,
        prefixes: &[String],
        projection: Option<&str>,
        operation: &str,
    ) -> Result<Vec<Item>, StoreError> {
        let mut filter = Vec::new();
        let mut scan = self
            .client
            .scan()
            .table_name(table)
            .consistent_read(true)
            .set_projection_expression(projection.map(str::to_owned));
        for (index, prefix) in prefixes.iter().enumerate() {
            filter.push(format!("begins_with(pk, :p{index})"));
            scan = scan.expression_attribute_values(format!(":p{index}"), s(prefix));
        }
        scan.filter_expression(filter.join(" OR "))
            .into_paginator()
            .items()
            .send()
            .collect::<Result<Vec<_>, _>>()
            .await
            .map_err(|e| unavailable(operation, &e))
    }

    /// Delete the items with these keys (only `pk` and `sk` are kept of each), in batches,
    /// retrying what DynamoDB leaves unprocessed. Returns how many were deleted.
    pub(super) async fn delete_keys(
        &self,
        table: &str,
        items: Vec<Item>,
        operation: &str,
    ) -> Result<u64, StoreError> {
        let total = items.len() as u64;
        for chunk in items.chunks(BATCH) {
            let mut pending = chunk
                .iter()
                .map(|item| {
                    let key: Item = item
                        .iter()
                        .filter(|(name, _)| *name == "pk" || *name == "sk")
                        .map(|(name, value)| (name.clone(), value.clone()))
                        .collect();
                    DeleteRequest::builder()
                        .set_key(Some(key))
                        .build()
                        .map(|delete| WriteRequest::builder().delete_request(delete).build())
                        .map_err(|e| unavailable(operation, &e))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let mut attempt = 0;
            while !pending.is_empty() {
                if attempt == ATTEMPTS {
                    return Err(StoreError::Unavailable(format!(
                        "dynamodb {operation}: {} deletes still unprocessed after {ATTEMPTS} rounds",
                        pending.len()
                    )));
                }
                if attempt > 0 {
                    tokio::time::sleep(Duration::from_millis(50 << attempt.min(6))).await;
                }
                attempt += 1;
                let answer = self
                    .client
                    .batch_write_item()
                    .request_items(table, std::mem::take(&mut pending))
                    .send()
                    .await
                    .map_err(|e| unavailable(operation, &e))?;
                pending = answer
                    .unprocessed_items
                    .and_then(|mut left| left.remove(table))
                    .unwrap_or_default();
            }
        }
        Ok(total)
    }
}
