//! Table names and the key schema.
//!
//! The SAM template declares the same tables; this module is the copy used by tests and
//! local development against an emulator. Changing a key here without changing
//! `template.yaml` would make the deployed tables reject every write, so the schema is
//! spelled out once, in [`specs`].

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::client::Waiters;
use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType,
    LocalSecondaryIndex, Projection, ProjectionType, ScalarAttributeType, TimeToLiveSpecification,
    TimeToLiveStatus,
};
use parley_core::ports::StoreError;
use std::time::Duration;

/// Attribute every table reserves for DynamoDB TTL (epoch seconds).
pub(crate) const TTL_ATTRIBUTE: &str = "expires_at";
/// The findings GSI that answers "which finding is this review comment?".
pub(crate) const BY_COMMENT_INDEX: &str = "by_comment";
/// The snippets LSI that answers "the newest documents of one corpus of a repository":
/// same partition (`pk` = repo), sort key [`NEWEST_ATTRIBUTE`].
pub(crate) const NEWEST_INDEX: &str = "newest";
/// `<corpus>#<updated_at as 20-digit epoch nanoseconds>#<key>`: sorts by corpus, then
/// by time, then by key, so one descending `begins_with` query on the corpus is the
/// newest-first candidate set.
pub(crate) const NEWEST_ATTRIBUTE: &str = "newest";

/// The physical table names, so one account can host several stacks (and each test its
/// own tables).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableNames {
    pub findings: String,
    pub conversations: String,
    pub memory: String,
    pub idempotency: String,
    pub installations: String,
    /// The corpus store (retrieval documents and their vectors).
    pub snippets: String,
}

impl Default for TableNames {
    fn default() -> Self {
        Self {
            findings: "parley-findings".into(),
            conversations: "parley-conversations".into(),
            memory: "parley-memory".into(),
            idempotency: "parley-idempotency".into(),
            installations: "parley-installations".into(),
            snippets: "parley-snippets".into(),
        }
    }
}

impl TableNames {
    /// Names from `PARLEY_FINDINGS_TABLE`, `PARLEY_CONVERSATIONS_TABLE`,
    /// `PARLEY_MEMORY_TABLE`, `PARLEY_IDEMPOTENCY_TABLE`, `PARLEY_INSTALLATIONS_TABLE` and
    /// `PARLEY_SNIPPETS_TABLE` (the SAM template sets them), each defaulting to
    /// `parley-<purpose>`.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`Self::from_env`] over any lookup, so the mapping is testable without mutating
    /// the process environment. Empty values count as unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let defaults = Self::default();
        let pick =
            |var: &str, default: String| parley_core::env::value(lookup(var)).unwrap_or(default);
        Self {
            findings: pick("PARLEY_FINDINGS_TABLE", defaults.findings),
            conversations: pick("PARLEY_CONVERSATIONS_TABLE", defaults.conversations),
            memory: pick("PARLEY_MEMORY_TABLE", defaults.memory),
            idempotency: pick("PARLEY_IDEMPOTENCY_TABLE", defaults.idempotency),
            installations: pick("PARLEY_INSTALLATIONS_TABLE", defaults.installations),
            snippets: pick("PARLEY_SNIPPETS_TABLE", defaults.snippets),
        }
    }

    /// Every name with `suffix` appended: isolated tables for one test run.
    pub fn with_suffix(&self, suffix: &str) -> Self {
        Self {
            findings: format!("{}{suffix}", self.findings),
            conversations: format!("{}{suffix}", self.conversations),
            memory: format!("{}{suffix}", self.memory),
            idempotency: format!("{}{suffix}", self.idempotency),
            installations: format!("{}{suffix}", self.installations),
            snippets: format!("{}{suffix}", self.snippets),
        }
    }
}

/// One table's key schema. All keys are strings except the GSI's `comment_id`.
struct TableSpec<'a> {
    name: &'a str,
    has_sort_key: bool,
    by_comment_index: bool,
    newest_index: bool,
}

/// The schema the SAM template must match.
fn specs(tables: &TableNames) -> [TableSpec<'_>; 6] {
    [
        TableSpec {
            name: &tables.idempotency,
            has_sort_key: false,
            by_comment_index: false,
            newest_index: false,
        },
        TableSpec {
            name: &tables.conversations,
            has_sort_key: true,
            by_comment_index: false,
            newest_index: false,
        },
        TableSpec {
            name: &tables.findings,
            has_sort_key: true,
            by_comment_index: true,
            newest_index: false,
        },
        TableSpec {
            name: &tables.memory,
            has_sort_key: true,
            by_comment_index: false,
            newest_index: false,
        },
        TableSpec {
            name: &tables.installations,
            has_sort_key: false,
            by_comment_index: false,
            newest_index: false,
        },
        TableSpec {
            name: &tables.snippets,
            has_sort_key: true,
            by_comment_index: false,
            newest_index: true,
        },
    ]
}

/// Create the tables (pay per request, TTL on `expires_at`) unless they exist.
///
/// Idempotent so local development and tests can call it on every start; in AWS the
/// SAM template owns the tables and this is never called.
pub async fn create_tables(client: &Client, tables: &TableNames) -> Result<(), StoreError> {
    for spec in specs(tables) {
        create_table(client, &spec).await?;
        client
            .wait_until_table_exists()
            .table_name(spec.name)
            .wait(Duration::from_secs(120))
            .await
            .map_err(|e| {
                StoreError::Unavailable(format!(
                    "waiting for table {}: {}",
                    spec.name,
                    DisplayErrorContext(&e)
                ))
            })?;
        enable_ttl(client, spec.name).await?;
    }
    Ok(())
}

async fn create_table(client: &Client, spec: &TableSpec<'_>) -> Result<(), StoreError> {
    let mut request = client
        .create_table()
        .table_name(spec.name)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attribute("pk", ScalarAttributeType::S)?)
        .key_schema(key("pk", KeyType::Hash)?);
    if spec.has_sort_key {
        request = request
            .attribute_definitions(attribute("sk", ScalarAttributeType::S)?)
            .key_schema(key("sk", KeyType::Range)?);
    }
    if spec.newest_index {
        let index = LocalSecondaryIndex::builder()
            .index_name(NEWEST_INDEX)
            .key_schema(key("pk", KeyType::Hash)?)
            .key_schema(key(NEWEST_ATTRIBUTE, KeyType::Range)?)
            .projection(every_attribute())
            .build()
            .map_err(config_error)?;
        request = request
            .attribute_definitions(attribute(NEWEST_ATTRIBUTE, ScalarAttributeType::S)?)
            .local_secondary_indexes(index);
    }
    if spec.by_comment_index {
        let index = GlobalSecondaryIndex::builder()
            .index_name(BY_COMMENT_INDEX)
            .key_schema(key("repo", KeyType::Hash)?)
            .key_schema(key("comment_id", KeyType::Range)?)
            .projection(every_attribute())
            .build()
            .map_err(config_error)?;
        request = request
            .attribute_definitions(attribute("repo", ScalarAttributeType::S)?)
            .attribute_definitions(attribute("comment_id", ScalarAttributeType::N)?)
            .global_secondary_indexes(index);
    }
    match request.send().await {
        Ok(_) => {
            tracing::info!(table = spec.name, "created DynamoDB table");
            Ok(())
        }
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_in_use_exception()) =>
        {
            tracing::debug!(table = spec.name, "DynamoDB table already exists");
            Ok(())
        }
        Err(e) => Err(StoreError::Unavailable(format!(
            "creating table {}: {}",
            spec.name,
            DisplayErrorContext(&e)
        ))),
    }
}

/// Turn TTL on unless it already is: DynamoDB rejects enabling it twice.
async fn enable_ttl(client: &Client, table: &str) -> Result<(), StoreError> {
    let unavailable = |what: &str, e: &dyn std::error::Error| {
        StoreError::Unavailable(format!("{what} on {table}: {}", DisplayErrorContext(e)))
    };
    let current = client
        .describe_time_to_live()
        .table_name(table)
        .send()
        .await
        .map_err(|e| unavailable("describing TTL", &e))?;
    let status = current
        .time_to_live_description()
        .and_then(|d| d.time_to_live_status());
    if matches!(
        status,
        Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
    ) {
        return Ok(());
    }
    let spec = TimeToLiveSpecification::builder()
        .enabled(true)
        .attribute_name(TTL_ATTRIBUTE)
        .build()
        .map_err(config_error)?;
    client
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(spec)
        .send()
        .await
        .map_err(|e| unavailable("enabling TTL", &e))?;
    Ok(())
}

fn attribute(name: &str, kind: ScalarAttributeType) -> Result<AttributeDefinition, StoreError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(kind)
        .build()
        .map_err(config_error)
}

/// Both indexes carry whole items: their queries (newest documents, a finding by its
/// comment) read records, and a projection of keys only would cost a second read each.
fn every_attribute() -> Projection {
    Projection::builder()
        .projection_type(ProjectionType::All)
        .build()
}

fn key(name: &str, kind: KeyType) -> Result<KeySchemaElement, StoreError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .map_err(config_error)
}

fn config_error(e: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Config(format!("building a DynamoDB request: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_when_nothing_is_set() {
        let names = TableNames::from_lookup(|_| None);
        assert_eq!(names, TableNames::default());
        assert_eq!(names.findings, "parley-findings");
        assert_eq!(names.conversations, "parley-conversations");
        assert_eq!(names.memory, "parley-memory");
        assert_eq!(names.idempotency, "parley-idempotency");
        assert_eq!(names.installations, "parley-installations");
        assert_eq!(names.snippets, "parley-snippets");
    }

    #[test]
    fn each_variable_overrides_its_table_only() {
        let names = TableNames::from_lookup(|var| match var {
            "PARLEY_FINDINGS_TABLE" => Some("f".into()),
            "PARLEY_CONVERSATIONS_TABLE" => Some("c".into()),
            "PARLEY_MEMORY_TABLE" => Some("m".into()),
            "PARLEY_IDEMPOTENCY_TABLE" => Some("i".into()),
            "PARLEY_INSTALLATIONS_TABLE" => Some(" ".into()),
            "PARLEY_SNIPPETS_TABLE" => Some("s".into()),
            _ => None,
        });
        assert_eq!(names.findings, "f");
        assert_eq!(names.conversations, "c");
        assert_eq!(names.memory, "m");
        assert_eq!(names.idempotency, "i");
        assert_eq!(names.installations, "parley-installations");
        assert_eq!(names.snippets, "s");
    }
}
