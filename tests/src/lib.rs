//! Shared helpers for the end-to-end tests: the corpora, signing, local adapters.

use std::path::PathBuf;

/// `../shared/corpora`, the test corpora shipped beside the repository.
pub fn corpora() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpora");
    assert!(
        dir.is_dir(),
        "test corpora not found at {} (expected ../shared/corpora beside the repository)",
        dir.display()
    );
    dir
}

/// Every webhook payload example: `(event, file name, bytes)`.
pub fn webhook_examples() -> Vec<(String, String, Vec<u8>)> {
    let root = corpora().join("webhooks");
    let mut examples = Vec::new();
    let mut events: Vec<_> = std::fs::read_dir(&root)
        .expect("read webhooks corpus")
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir() && e.file_name() != "schema")
        .collect();
    events.sort_by_key(|e| e.file_name());
    for event in events {
        let name = event.file_name().to_string_lossy().to_string();
        let mut files: Vec<_> = std::fs::read_dir(event.path())
            .expect("read event dir")
            .filter_map(Result::ok)
            .filter(|f| f.path().extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort_by_key(|f| f.file_name());
        for file in files {
            let bytes = std::fs::read(file.path()).expect("read example");
            examples.push((
                name.clone(),
                file.file_name().to_string_lossy().to_string(),
                bytes,
            ));
        }
    }
    examples
}

pub fn webhook_example(event: &str, file: &str) -> serde_json::Value {
    let path = corpora().join("webhooks").join(event).join(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).expect("example is JSON")
}

/// `sha256=<hex>` as GitHub computes it.
pub fn sign(secret: &str, body: &[u8]) -> String {
    parley_core::webhook::signature::sign(secret.as_bytes(), body)
}

pub mod clients;
pub mod conversation_harness;
pub mod deliveries;
pub mod expect;
pub mod fake_embeddings;
pub mod fake_github;
pub mod fake_llm;
pub mod flaky_store;
pub mod iam;
pub mod lambda_apigw;
pub mod lambda_emulator;
pub mod lambda_esm;
pub mod lambda_stack;
pub mod lambda_template;
pub mod local_server;
pub mod review_harness;
pub mod rig;
pub mod scripts;
pub mod serve_process;
pub mod static_model;
pub mod tenants;
pub mod tripwire;

pub mod stores {
    //! Both store adapters, for end-to-end tests that must pass on each.
    use parley_core::ports::{CorpusStore, Store};
    use parley_store::dynamo::{DynamoStore, TableNames, create_tables};
    use parley_store::sqlite::SqliteStore;
    use std::sync::Arc;

    /// A fresh SQLite store in a temp dir (kept alive by the returned guard).
    pub fn sqlite() -> (Arc<dyn Store>, tempfile::TempDir) {
        let (store, dir) = sqlite_file();
        (store, dir)
    }

    /// Which adapter an end-to-end scenario runs on (each runs on both).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Backend {
        Sqlite,
        Dynamo,
    }

    /// A fresh store on `backend`, behind both its ports, with the temp dir a SQLite file
    /// lives in (kept alive by the caller).
    pub async fn open(
        backend: Backend,
    ) -> (
        Arc<dyn Store>,
        Arc<dyn CorpusStore>,
        Option<tempfile::TempDir>,
    ) {
        match backend {
            Backend::Sqlite => {
                let (store, dir) = sqlite_file();
                (store.clone(), store, Some(dir))
            }
            Backend::Dynamo => {
                let store = dynamo_store().await;
                (store.clone(), store, None)
            }
        }
    }

    fn sqlite_file() -> (Arc<SqliteStore>, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(dir.path().join("parley.db")).expect("sqlite store");
        (Arc::new(store), dir)
    }

    /// A DynamoDB store on moto with its own freshly created tables. Fails (never skips)
    /// when moto is not running: `scripts/test.sh` starts it and sets AWS_ENDPOINT_URL.
    async fn dynamo_store() -> Arc<DynamoStore> {
        assert!(
            std::env::var_os("AWS_ENDPOINT_URL").is_some(),
            "AWS_ENDPOINT_URL is not set: start moto (scripts/test.sh does it, or scripts/moto.sh for one run)"
        );
        let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        let client = aws_sdk_dynamodb::Client::new(&config);
        let tables =
            TableNames::default().with_suffix(&uuid::Uuid::new_v4().simple().to_string()[..12]);
        create_tables(&client, &tables)
            .await
            .expect("create tables in moto");
        Arc::new(DynamoStore::new(client, tables))
    }
}
