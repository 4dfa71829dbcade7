//! SQLite-only behaviour: the file is shared between processes and outlives them.

use crate::common;

use parley_core::ports::{Claim, Claims, Counters, Installations, Store, StoreError};
use parley_store::SqliteStore;
use std::sync::Arc;
use std::time::Duration;

const HOUR: Duration = Duration::from_secs(3600);

#[tokio::test]
async fn records_survive_reopening_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parley.db");
    {
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.claim("k", HOUR).await.unwrap(), Claim::Won);
        store.increment_within("s", "turns", 9).await.unwrap();
        store
            .put_installation(&common::installation(5))
            .await
            .unwrap();
    }
    let store = SqliteStore::open(&path).expect("reopening migrates nothing and succeeds");
    assert_eq!(store.claim("k", HOUR).await.unwrap(), Claim::AlreadyClaimed);
    assert_eq!(store.counter("s", "turns").await.unwrap(), 1);
    assert_eq!(
        store.installation(5).await.unwrap(),
        Some(common::installation(5))
    );
}

/// Two stores on one file are two connections, like `parley serve` and an operator
/// command: the conditional writes must still admit exactly one winner.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn separate_connections_share_claims_and_counters() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parley.db");
    let stores: Vec<Arc<dyn Store>> = (0..4)
        .map(|_| Arc::new(SqliteStore::open(&path).unwrap()) as Arc<dyn Store>)
        .collect();

    let mut tasks = Vec::new();
    for i in 0..16 {
        let store = Arc::clone(&stores[i % stores.len()]);
        tasks.push(tokio::spawn(async move {
            let claim = store.claim("delivery#shared", HOUR).await.unwrap();
            let unit = store.increment_within("pr", "turns", 5).await.unwrap();
            (claim, unit)
        }));
    }
    let mut wins = 0;
    let mut units = Vec::new();
    for task in tasks {
        let (claim, unit) = task.await.unwrap();
        wins += usize::from(claim == Claim::Won);
        units.extend(unit);
    }
    units.sort_unstable();
    assert_eq!(wins, 1);
    assert_eq!(units, [1, 2, 3, 4, 5]);
    assert_eq!(stores[0].counter("pr", "turns").await.unwrap(), 5);
}

#[tokio::test]
async fn leaves_the_shared_user_version_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parley.db");
    let raw = rusqlite::Connection::open(&path).unwrap();
    // Whatever the queue adapter (or anyone else) keeps there.
    raw.pragma_update(None, "user_version", 42).unwrap();
    SqliteStore::open(&path).unwrap();
    let version: i64 = raw
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, 42);
    let mode: String = raw
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn refuses_a_schema_from_a_newer_build() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parley.db");
    SqliteStore::open(&path).unwrap();
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute("UPDATE store_schema SET version = 99", [])
        .unwrap();
    match SqliteStore::open(&path) {
        Err(StoreError::Config(message)) => assert!(message.contains("99"), "{message}"),
        other => panic!("expected a Config error, got {:?}", other.map(|_| ())),
    }
}

#[tokio::test]
async fn in_memory_store_works_and_is_private() {
    let a = SqliteStore::open_in_memory().unwrap();
    let b = SqliteStore::open_in_memory().unwrap();
    assert_eq!(a.claim("k", HOUR).await.unwrap(), Claim::Won);
    assert_eq!(b.claim("k", HOUR).await.unwrap(), Claim::Won);
}

/// A file written before term counts were kept (schema version 4, no `terms` column)
/// is migrated in place: its documents still read, without counts (lexical search then
/// tokenises their text), and gain them when next upserted.
#[tokio::test]
async fn a_version_4_file_gains_term_counts_without_losing_documents() {
    use parley_core::ports::{Corpus, CorpusStore};
    use parley_core::retrieval::TermCounts;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parley.db");
    let doc = common::document(
        "octo-org/old",
        Corpus::Code,
        "aa11",
        "fn parse_header(line: &str) {}",
        common::at(0, 0),
    );
    {
        let store = SqliteStore::open(&path).unwrap();
        store.upsert_document(&doc).await.unwrap();
    }
    // Back to what a build before term counts left behind.
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute_batch(
        "ALTER TABLE store_documents DROP COLUMN terms; UPDATE store_schema SET version = 4;",
    )
    .unwrap();
    drop(raw);

    let store = SqliteStore::open(&path).expect("migrates to the current schema");
    let read = |store: &SqliteStore| {
        let store = store.clone();
        async move {
            store
                .document("octo-org/old", Corpus::Code, "aa11")
                .await
                .expect("reads")
                .expect("still there")
        }
    };
    assert_eq!(read(&store).await, doc, "the document, without counts");
    store.upsert_document(&doc).await.unwrap();
    assert_eq!(
        read(&store).await.terms,
        Some(TermCounts::of(&doc.text)),
        "counted on the next upsert"
    );
}
