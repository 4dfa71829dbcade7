//! Fixtures shared by the store tests: one store per backend, each isolated, and sample
//! records.

#![allow(dead_code)] // each test binary uses its own subset

mod one_at_a_time;

use async_trait::async_trait;
use aws_config::BehaviorVersion;
use aws_config::meta::region::RegionProviderChain;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;
use parley_core::ports::{
    Corpus, CorpusStore, Document, Finding, FindingOutcome, FindingState, Installation, Occurrence,
    Severity, Store, Verdict,
};
use parley_store::{DynamoStore, SqliteStore, TableNames, create_tables};
use std::path::PathBuf;
use std::sync::Arc;
use tempfile::TempDir;
use time::OffsetDateTime;
use time::macros::datetime;

/// One test per check and adapter (`sqlite::<check>`, `dynamodb::<check>`), each on a
/// fresh fixture, handing the check the fixture's `$port` (`store` or `corpus`).
macro_rules! on_both_adapters {
    ($port:ident; $($check:ident),+ $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $check() {
                    let fixture = crate::common::sqlite();
                    super::$check(fixture.$port.clone()).await;
                }
            )+
        }
        mod dynamodb {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $check() {
                    let fixture = crate::common::dynamo().await;
                    super::$check(fixture.$port.clone()).await;
                }
            )+
        }
    };
}
pub(crate) use on_both_adapters;

/// Writes records the store's own API would never write, to see how reads cope.
#[async_trait]
pub trait Vandal: Send + Sync {
    /// Replace installation `id` with something that does not decode.
    async fn corrupt_installation(&self, id: u64);
    /// Set a stored document's term counts to raw `bytes`, or remove them (`None`: a
    /// document written before counts were kept).
    async fn set_document_terms(&self, repo: &str, sk: (&str, &str), bytes: Option<Vec<u8>>);
}

/// A store under test plus whatever keeps it alive.
pub struct Fixture {
    pub store: Arc<dyn Store>,
    /// The same adapter behind its corpus port.
    pub corpus: Arc<dyn CorpusStore>,
    pub vandal: Box<dyn Vandal>,
    /// Held so the temporary directory outlives the test.
    _dir: Option<TempDir>,
}

// --- SQLite ---------------------------------------------------------------------------

pub fn sqlite() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    // A nested path also checks that `open` creates missing parent directories.
    let path = dir.path().join("state").join("parley.db");
    let store = Arc::new(SqliteStore::open(&path).expect("open sqlite store"));
    Fixture {
        store: store.clone(),
        corpus: store,
        vandal: Box::new(SqliteVandal { path }),
        _dir: Some(dir),
    }
}

struct SqliteVandal {
    path: PathBuf,
}

#[async_trait]
impl Vandal for SqliteVandal {
    async fn corrupt_installation(&self, id: u64) {
        // A second connection, as another process would have.
        let conn = rusqlite::Connection::open(&self.path).expect("open raw connection");
        conn.execute(
            "INSERT OR REPLACE INTO store_installations (id, record) VALUES (?1, ?2)",
            rusqlite::params![i64::try_from(id).expect("small id"), "{not json"],
        )
        .expect("write corrupt installation");
    }

    async fn set_document_terms(
        &self,
        repo: &str,
        (corpus, key): (&str, &str),
        bytes: Option<Vec<u8>>,
    ) {
        let conn = rusqlite::Connection::open(&self.path).expect("open raw connection");
        let changed = conn
            .execute(
                "UPDATE store_documents SET terms = ?4 WHERE repo = ?1 AND corpus = ?2 AND key = ?3",
                rusqlite::params![repo, corpus, key, bytes],
            )
            .expect("write raw terms");
        assert_eq!(changed, 1, "the document exists");
    }
}

// --- DynamoDB (moto) ------------------------------------------------------------------

/// A client for the emulator named by `AWS_ENDPOINT_URL`, sending one request at a time
/// (see [`one_at_a_time`] for why).
///
/// Panics when the variable is unset: a DynamoDB test that silently skipped would
/// report a pass for code that never ran, and one that fell through to real AWS would
/// touch an actual account.
pub async fn dynamo_client() -> Client {
    match std::env::var("AWS_ENDPOINT_URL") {
        Ok(url) if !url.trim().is_empty() => {}
        _ => panic!(
            "AWS_ENDPOINT_URL is not set, so the DynamoDB contract tests have nothing to \
             run against: start moto: scripts/test.sh does it (or run \
             `moto_server -p 5001` and export AWS_ENDPOINT_URL=http://127.0.0.1:5001 \
             AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1)"
        ),
    }
    let region = RegionProviderChain::default_provider().or_else("us-east-1");
    let config = aws_config::defaults(BehaviorVersion::latest())
        .region(region)
        .load()
        .await;
    let config = config
        .into_builder()
        .http_client(one_at_a_time::OneAtATime::new())
        .build();
    Client::new(&config)
}

/// Fresh tables with a unique suffix, so tests can run in parallel against one moto.
pub async fn dynamo_tables(client: &Client) -> TableNames {
    let suffix = format!("-{}", uuid::Uuid::new_v4().simple());
    let tables = TableNames::default().with_suffix(&suffix);
    create_tables(client, &tables).await.expect("create tables");
    tables
}

pub async fn dynamo() -> Fixture {
    let client = dynamo_client().await;
    let tables = dynamo_tables(&client).await;
    let store = Arc::new(DynamoStore::new(client.clone(), tables.clone()));
    Fixture {
        store: store.clone(),
        corpus: store,
        vandal: Box::new(DynamoVandal { client, tables }),
        _dir: None,
    }
}

struct DynamoVandal {
    client: Client,
    tables: TableNames,
}

#[async_trait]
impl Vandal for DynamoVandal {
    async fn corrupt_installation(&self, id: u64) {
        self.client
            .put_item()
            .table_name(&self.tables.installations)
            .item("pk", AttributeValue::S(format!("installation#{id}")))
            .item("id", AttributeValue::S("not a number".into()))
            .send()
            .await
            .expect("write corrupt installation");
    }

    async fn set_document_terms(
        &self,
        repo: &str,
        (corpus, key): (&str, &str),
        bytes: Option<Vec<u8>>,
    ) {
        let update = self
            .client
            .update_item()
            .table_name(&self.tables.snippets)
            .key("pk", AttributeValue::S(repo.into()))
            .key("sk", AttributeValue::S(format!("{corpus}#{key}")))
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_names("#terms", "terms");
        let update = match bytes {
            Some(bytes) => update
                .update_expression("SET #terms = :terms")
                .expression_attribute_values(
                    ":terms",
                    AttributeValue::B(aws_sdk_dynamodb::primitives::Blob::new(bytes)),
                ),
            None => update.update_expression("REMOVE #terms"),
        };
        update.send().await.expect("write raw terms");
    }
}

// --- sample records -------------------------------------------------------------------

/// A moment `day` days (and `nanos` ns) after a fixed start.
pub fn at(day: i64, nanos: i64) -> OffsetDateTime {
    datetime!(2025-03-01 12:00 UTC) + time::Duration::days(day) + time::Duration::nanoseconds(nanos)
}

/// Where a corpus document was seen: PR `pr`, on `day`.
pub fn occurrence(pr: u64, path: &str, start_line: u32, day: i64) -> Occurrence {
    Occurrence {
        pr,
        pr_title: format!("Fix the parser ({pr})"),
        path: path.into(),
        start_line,
        line_count: 7,
        created_at: at(day, 0),
    }
}

/// A code-like corpus document with one occurrence and one attribute.
pub fn document(
    repo: &str,
    corpus: Corpus,
    key: &str,
    text: &str,
    updated: OffsetDateTime,
) -> Document {
    Document {
        path: Some("src/parse.rs".into()),
        language: Some("rust".into()),
        function_context: Some("fn parse_header(input: &str)".into()),
        attributes: [("severity".to_string(), "high".to_string())]
            .into_iter()
            .collect(),
        occurrences: vec![occurrence(1, "src/parse.rs", 10, 0)],
        ..Document::new(repo, corpus, key, text, updated)
    }
}

pub fn finding(repo: &str, pr: u64, id: &str, created_at: OffsetDateTime) -> Finding {
    Finding {
        repo: repo.into(),
        pr,
        id: id.into(),
        fingerprint: format!("src/lib.rs:{id}"),
        site: String::new(),
        severity: Severity::Medium,
        category: "correctness".into(),
        confidence: 80,
        path: "src/lib.rs".into(),
        start_line: None,
        line: 42,
        title: format!("finding {id}"),
        body: "The error is swallowed here.".into(),
        head_sha: "0123456789abcdef0123456789abcdef01234567".into(),
        review_id: None,
        comment_id: None,
        state: FindingState::Open,
        state_changed_by: None,
        state_changed_at: None,
        created_at,
        outcome: None,
        doubt: None,
    }
}

/// A finding with every optional field set, to check nothing is lost on the way.
pub fn posted_finding(repo: &str, pr: u64, id: &str, comment_id: u64) -> Finding {
    Finding {
        site: "9f86d081884c7d65".into(),
        doubt: Some("the caller checks for null".into()),
        start_line: Some(40),
        review_id: Some(9_000_000_001),
        comment_id: Some(comment_id),
        state: FindingState::WontFix,
        state_changed_by: Some("octocat".into()),
        state_changed_at: Some(datetime!(2024-05-02 10:00:00.123456789 UTC)),
        severity: Severity::Critical,
        outcome: Some(FindingOutcome {
            verdict: Verdict::Rejected,
            signal: "conceded".into(),
            by: Some("octocat".into()),
            at: datetime!(2024-05-02 10:00:00 UTC),
            also_by: Vec::new(),
            replaces: None,
            counted: true,
        }),
        ..finding(repo, pr, id, datetime!(2024-05-01 09:30:00 UTC))
    }
}

pub fn installation(id: u64) -> Installation {
    Installation {
        id,
        account: "octo-org".into(),
        repositories: vec!["octo-org/a".into(), "octo-org/b".into()],
        repository_ids: vec![11, 12],
        suspended: false,
        updated_at: datetime!(2024-05-01 12:00:00 UTC),
    }
}
