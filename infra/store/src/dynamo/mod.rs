//! The DynamoDB store, used by the Lambda functions.
//!
//! Every "only once" decision is a single conditional write, so it holds across any
//! number of concurrent Lambdas without locks. Reads that guard a decision use strongly
//! consistent reads; the one exception is the `by_comment` index, which DynamoDB only
//! reads eventually consistently (a comment posted a moment ago may not be found yet;
//! callers treat "not found" as "not ours", which is safe).

mod corpus;
mod counters;
mod items;
mod purge;
mod rekey;
mod runs;
mod tables;

pub use tables::{TableNames, create_tables};

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::ReturnValue;
use items::{Item, conditional, decode, encode, n, number, s, unavailable};
use parley_core::ports::store::keys;
use parley_core::ports::{
    Claim, Claims, Counters, Finding, Findings, Installation, Installations, Memory, MemoryItem,
    StoreError, Tenancy,
};
use std::time::Duration;
use tables::{BY_COMMENT_INDEX, TTL_ATTRIBUTE};
use time::OffsetDateTime;

use crate::{expiry, ordering};

/// How long one DynamoDB call (and one attempt of it) may take before it fails. The SDK
/// sets no limit, and the webhook must answer inside GitHub's ten seconds and its own
/// timeout: it claims a delivery, sends it, and releases the claim if the send failed. A
/// call that hung past the function's timeout would end the process with the claim held,
/// and GitHub's redelivery of that event would be taken for a duplicate. Three seconds is
/// a hundred times DynamoDB's slow calls; three such calls fit the webhook's ten.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(3);
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(1500);

/// [`CALL_TIMEOUT`] and [`ATTEMPT_TIMEOUT`] as the SDK takes them.
pub fn call_timeouts() -> parley_aws::TimeoutConfig {
    parley_aws::TimeoutConfig::builder()
        .operation_timeout(CALL_TIMEOUT)
        .operation_attempt_timeout(ATTEMPT_TIMEOUT)
        .build()
}

const FINDING_PREFIX: &str = "finding#";
/// A memory item's version and its JSON record (a string: the record's shape is the
/// domain's, not the table's).
/// The finding's [`Finding::decision_token`], stored beside its fields so that a
/// conditional write can compare it in a condition expression.
const FINDING_DECISION: &str = "decision";
const MEMORY_VERSION: &str = "version";
const MEMORY_RECORD: &str = "record";
const COUNTER_PREFIX: &str = "counter#";
/// Owner of a claim taken with `claim_as`.
const OWNER_ATTRIBUTE: &str = "owner";
/// `value` is a DynamoDB reserved word, hence the `#v` placeholder wherever it appears.
const COUNTER_ATTRIBUTE: &str = "value";

#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    tables: TableNames,
}

impl DynamoStore {
    pub fn new(client: Client, tables: TableNames) -> Self {
        Self { client, tables }
    }

    /// A store from the ambient AWS configuration and `PARLEY_*_TABLE` names. The SDK
    /// reads `AWS_ENDPOINT_URL` itself, which is how local runs reach an emulator.
    pub async fn from_env() -> Self {
        let config = parley_aws::load(parley_aws::Overrides {
            timeouts: Some(call_timeouts()),
            ..Default::default()
        })
        .await;
        Self::new(Client::new(&config), TableNames::from_env())
    }

    pub fn tables(&self) -> &TableNames {
        &self.tables
    }

    /// One item by key, strongly consistent: these reads guard decisions.
    async fn get(
        &self,
        table: &str,
        keys: &[(&str, &str)],
        operation: &str,
    ) -> Result<Option<Item>, StoreError> {
        let mut request = self
            .client
            .get_item()
            .table_name(table)
            .consistent_read(true);
        for (name, value) in keys {
            request = request.key(*name, s(value));
        }
        let output = request
            .send()
            .await
            .map_err(|e| unavailable(operation, &e))?;
        Ok(output.item)
    }

    /// The one conditional write behind `claim` and `claim_as`: it succeeds when the key
    /// is free, its claim has lapsed (TTL deletion can lag by days, so a lapsed claim still
    /// in the table is overwritten rather than trusted to be gone), or, with an owner, when
    /// that same owner holds it.
    async fn put_claim(
        &self,
        key: &str,
        owner: Option<&str>,
        ttl: Duration,
        operation: &str,
    ) -> Result<Claim, StoreError> {
        let now = OffsetDateTime::now_utc();
        let mut request = self
            .client
            .put_item()
            .table_name(&self.tables.idempotency)
            .item("pk", s(key))
            .item(TTL_ATTRIBUTE, n(expiry::expires_at(now, ttl)))
            .expression_attribute_names("#exp", TTL_ATTRIBUTE)
            .expression_attribute_values(":now", n(expiry::now_secs(now)));
        request = match owner {
            None => request.condition_expression("attribute_not_exists(pk) OR #exp <= :now"),
            Some(owner) => request
                .item(OWNER_ATTRIBUTE, s(owner))
                .condition_expression("attribute_not_exists(pk) OR #exp <= :now OR #owner = :owner")
                .expression_attribute_names("#owner", OWNER_ATTRIBUTE)
                .expression_attribute_values(":owner", s(owner)),
        };
        Ok(match conditional(request.send().await, operation)? {
            Some(_) => Claim::Won,
            None => Claim::AlreadyClaimed,
        })
    }

    /// Write one whole item, unconditionally (records are upserted by key).
    async fn put(&self, table: &str, item: Item, operation: &str) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| unavailable(operation, &e))?;
        Ok(())
    }

    /// Every item in one partition whose sort key starts with `prefix`, across pages.
    async fn query_partition(
        &self,
        table: &str,
        pk: &str,
        prefix: &str,
        operation: &str,
    ) -> Result<Vec<Item>, StoreError> {
        let query = self
            .client
            .query()
            .table_name(table)
            .consistent_read(true)
            .expression_attribute_values(":pk", s(pk));
        // DynamoDB refuses an empty string in a key condition: no prefix, no condition.
        let query = if prefix.is_empty() {
            query.key_condition_expression("pk = :pk")
        } else {
            query
                .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
                .expression_attribute_values(":prefix", s(prefix))
        };
        let pages = query.into_paginator().items().send();
        pages
            .collect::<Result<Vec<_>, _>>()
            .await
            .map_err(|e| unavailable(operation, &e))
    }

    /// The records under `pk` whose sort key starts with `prefix`, decoded (an item that
    /// does not decode is an error naming it).
    async fn records<T: serde::de::DeserializeOwned>(
        &self,
        table: &str,
        pk: &str,
        prefix: &str,
        operation: &str,
    ) -> Result<Vec<T>, StoreError> {
        let items = self.query_partition(table, pk, prefix, operation).await?;
        items
            .into_iter()
            .map(|item| {
                let location = item_location(table, pk, &item);
                decode(item, &location)
            })
            .collect()
    }
}

fn installation_key(id: u64) -> String {
    format!("installation#{id}")
}

#[async_trait]
impl Claims for DynamoStore {
    async fn claim(&self, key: &str, ttl: Duration) -> Result<Claim, StoreError> {
        self.put_claim(key, None, ttl, "claim").await
    }

    async fn release(&self, key: &str) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.tables.idempotency)
            .key("pk", s(key))
            .send()
            .await
            .map_err(|e| unavailable("release", &e))?;
        Ok(())
    }

    async fn is_claimed(&self, key: &str) -> Result<bool, StoreError> {
        let Some(item) = self
            .get(&self.tables.idempotency, &[("pk", key)], "is_claimed")
            .await?
        else {
            return Ok(false);
        };
        let location = format!("{}/{key}", self.tables.idempotency);
        let expires_at: i64 =
            number(&item, TTL_ATTRIBUTE, &location)?.ok_or_else(|| StoreError::Corrupt {
                key: location.clone(),
                reason: format!("claim without `{TTL_ATTRIBUTE}`"),
            })?;
        Ok(expiry::is_live(
            expires_at,
            expiry::now_secs(OffsetDateTime::now_utc()),
        ))
    }

    async fn claim_as(&self, key: &str, owner: &str, ttl: Duration) -> Result<Claim, StoreError> {
        self.put_claim(key, Some(owner), ttl, "claim_as").await
    }
}

#[async_trait]
impl Counters for DynamoStore {
    async fn increment_within(
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
        let Some(output) = conditional(result, "increment_within")? else {
            return Ok(None);
        };
        let location = format!("{}/{scope}/{sk}", self.tables.conversations);
        let attributes = output.attributes.unwrap_or_default();
        let value = number(&attributes, COUNTER_ATTRIBUTE, &location)?.ok_or_else(|| {
            StoreError::Corrupt {
                key: location.clone(),
                reason: "update returned no counter value".into(),
            }
        })?;
        Ok(Some(value))
    }

    async fn counter(&self, scope: &str, counter: &str) -> Result<u64, StoreError> {
        let values = self.counter_values(scope, &[counter], "counter").await?;
        Ok(values.first().copied().unwrap_or(0))
    }

    async fn counters(&self, scope: &str, names: &[&str]) -> Result<Vec<u64>, StoreError> {
        self.counter_values(scope, names, "counters").await
    }

    async fn add_to_counters(&self, scope: &str, deltas: &[(&str, u64)]) -> Result<(), StoreError> {
        self.add_to_counters_together(scope, deltas).await
    }

    async fn add_to_counter(
        &self,
        scope: &str,
        counter: &str,
        delta: u64,
    ) -> Result<u64, StoreError> {
        // An update that changes nothing need not return the attribute (moto returns
        // none), which would read as a corrupt counter: adding nothing is a read.
        if delta == 0 {
            return self.counter(scope, counter).await;
        }
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
        let attributes = output.attributes.unwrap_or_default();
        number(&attributes, COUNTER_ATTRIBUTE, &location)?.ok_or_else(|| StoreError::Corrupt {
            key: location.clone(),
            reason: "update returned no counter value".into(),
        })
    }
}

#[async_trait]
impl Installations for DynamoStore {
    async fn put_installation(&self, installation: &Installation) -> Result<(), StoreError> {
        let pk = installation_key(installation.id);
        let item = encode(installation, &[("pk", &pk)], "installation")?;
        self.put(&self.tables.installations, item, "put_installation")
            .await
    }

    async fn installation(&self, id: u64) -> Result<Option<Installation>, StoreError> {
        let pk = installation_key(id);
        let item = self
            .get(&self.tables.installations, &[("pk", &pk)], "installation")
            .await?;
        item.map(|item| decode(item, &format!("{}/{pk}", self.tables.installations)))
            .transpose()
    }

    async fn delete_installation(&self, id: u64) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.tables.installations)
            .key("pk", s(&installation_key(id)))
            .send()
            .await
            .map_err(|e| unavailable("delete_installation", &e))?;
        Ok(())
    }
}

#[async_trait]
impl Findings for DynamoStore {
    async fn put_finding(&self, finding: &Finding) -> Result<(), StoreError> {
        let item = finding_item(finding)?;
        self.put(&self.tables.findings, item, "put_finding").await
    }

    async fn put_finding_if(
        &self,
        finding: &Finding,
        read: Option<&Finding>,
    ) -> Result<bool, StoreError> {
        let request = self
            .client
            .put_item()
            .table_name(&self.tables.findings)
            .set_item(Some(finding_item(finding)?));
        let request = match read {
            None => request.condition_expression("attribute_not_exists(pk)"),
            // A finding written before the token existed has none: its state is compared
            // instead, the closest check such a record allows (it gets a token now).
            Some(read) => request
                .condition_expression(
                    "attribute_exists(pk) AND (#decision = :decision \
                     OR (attribute_not_exists(#decision) AND #state = :state))",
                )
                .expression_attribute_names("#decision", FINDING_DECISION)
                .expression_attribute_names("#state", "state")
                .expression_attribute_values(":decision", s(&read.decision_token()))
                .expression_attribute_values(":state", state_value(read)?),
        };
        Ok(conditional(request.send().await, "put_finding_if")?.is_some())
    }

    async fn finding_by_comment(
        &self,
        repo: &str,
        comment_id: u64,
    ) -> Result<Option<Finding>, StoreError> {
        let output = self
            .client
            .query()
            .table_name(&self.tables.findings)
            .index_name(BY_COMMENT_INDEX)
            .key_condition_expression("#repo = :repo AND #comment = :comment")
            .expression_attribute_names("#repo", "repo")
            .expression_attribute_names("#comment", "comment_id")
            .expression_attribute_values(":repo", s(repo))
            .expression_attribute_values(":comment", n(comment_id))
            .send()
            .await
            .map_err(|e| unavailable("finding_by_comment", &e))?;
        let mut items = output.items.unwrap_or_default().into_iter();
        let Some(first) = items.next() else {
            return Ok(None);
        };
        if items.next().is_some() {
            tracing::warn!(
                repo,
                comment_id,
                "several findings claim one review comment; using the first"
            );
        }
        let location = format!(
            "{}/{BY_COMMENT_INDEX}/{repo}/{comment_id}",
            self.tables.findings
        );
        decode(first, &location).map(Some)
    }

    async fn findings_for_pr(&self, repo: &str, pr: u64) -> Result<Vec<Finding>, StoreError> {
        let pk = keys::pr_scope(repo, pr);
        let mut findings: Vec<Finding> = self
            .records(
                &self.tables.findings,
                &pk,
                FINDING_PREFIX,
                "findings_for_pr",
            )
            .await?;
        ordering::findings_oldest_first(&mut findings);
        Ok(findings)
    }
}

#[async_trait]
impl Memory for DynamoStore {
    async fn memory(&self, partition: &str) -> Result<Vec<MemoryItem>, StoreError> {
        let items = self
            .query_partition(&self.tables.memory, partition, "", "memory")
            .await?;
        items
            .into_iter()
            .map(|item| {
                let location = item_location(&self.tables.memory, partition, &item);
                let text = |name: &str| {
                    item.get(name)
                        .and_then(|v| v.as_s().ok())
                        .cloned()
                        .ok_or_else(|| StoreError::Corrupt {
                            key: location.clone(),
                            reason: format!("`{name}` is missing or not a string"),
                        })
                };
                let record = text(MEMORY_RECORD)?;
                Ok(MemoryItem {
                    sort_key: text("sk")?,
                    version: number(&item, MEMORY_VERSION, &location)?.unwrap_or(0),
                    record: serde_json::from_str(&record).map_err(|e| StoreError::Corrupt {
                        key: location.clone(),
                        reason: e.to_string(),
                    })?,
                })
            })
            .collect()
    }

    async fn put_memory(
        &self,
        partition: &str,
        sort_key: &str,
        record: &serde_json::Value,
        expected: u64,
    ) -> Result<bool, StoreError> {
        let request = self
            .client
            .put_item()
            .table_name(&self.tables.memory)
            .item("pk", s(partition))
            .item("sk", s(sort_key))
            .item(MEMORY_VERSION, n(expected + 1))
            .item(MEMORY_RECORD, s(&record.to_string()));
        let request = if expected == 0 {
            request.condition_expression("attribute_not_exists(pk)")
        } else {
            request
                .condition_expression("#ver = :expected")
                .expression_attribute_names("#ver", MEMORY_VERSION)
                .expression_attribute_values(":expected", n(expected))
        };
        Ok(conditional(request.send().await, "put_memory")?.is_some())
    }
}

#[async_trait]
impl Tenancy for DynamoStore {
    async fn purge_repository(&self, repo: &str) -> Result<u64, StoreError> {
        let prefixes = keys::repo_scope_prefixes(repo);
        let mut deleted = 0;
        for table in [&self.tables.findings, &self.tables.conversations] {
            let found = self.scan_keys(table, &prefixes, "purge_repository").await?;
            deleted += self.delete_keys(table, found, "purge_repository").await?;
        }
        Ok(deleted + self.purge_memory(repo).await?)
    }

    async fn rekey_repository(&self, from: &str, to: &str) -> Result<u64, StoreError> {
        self.rekey_tables(from, to).await
    }

    async fn rekey_memory(&self, from: &str, to: &str) -> Result<u64, StoreError> {
        self.rekey_partition(from, to, "rekey_memory").await
    }

    async fn purge_memory(&self, partition: &str) -> Result<u64, StoreError> {
        let found = self
            .query_partition(&self.tables.memory, partition, "", "purge_memory")
            .await?;
        self.delete_keys(&self.tables.memory, found, "purge_memory")
            .await
    }
}

/// A finding as its item: its fields, its keys and its decision token.
fn finding_item(finding: &Finding) -> Result<Item, StoreError> {
    let pk = keys::pr_scope(&finding.repo, finding.pr);
    let sk = format!("{FINDING_PREFIX}{}", finding.id);
    // `repo` and `comment_id` are top-level fields of the record already, which is
    // what the `by_comment` index keys on.
    let mut item = encode(finding, &[("pk", &pk), ("sk", &sk)], "finding")?;
    item.insert(FINDING_DECISION.to_owned(), s(&finding.decision_token()));
    Ok(item)
}

/// The `state` attribute as the item stores it (serde's name for the variant).
fn state_value(finding: &Finding) -> Result<aws_sdk_dynamodb::types::AttributeValue, StoreError> {
    serde_dynamo::aws_sdk_dynamodb_1::to_attribute_value(finding.state)
        .map_err(|e| StoreError::Config(format!("encoding a finding's state for DynamoDB: {e}")))
}

/// `table/pk/sk` of an item, for error messages.
fn item_location(table: &str, pk: &str, item: &Item) -> String {
    let sk = item
        .get("sk")
        .and_then(|v| v.as_s().ok())
        .map_or("?", String::as_str);
    format!("{table}/{pk}/{sk}")
}
