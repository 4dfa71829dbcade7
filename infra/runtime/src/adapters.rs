//! Pick and build the store and queue adapters the settings ask for.

use crate::settings::{Backend, Settings};
use parley_core::ports::{CorpusStore, JobQueue, PollingQueue, Store};
#[cfg(feature = "sqlite")]
use parley_queue::sqlite::{QueueSettings, SqliteQueue};
use parley_queue::sqs::SqsQueue;
use parley_store::dynamo::DynamoStore;
#[cfg(feature = "sqlite")]
use parley_store::sqlite::SqliteStore;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum AdapterError {
    #[error("cannot open the store: {0}")]
    Store(#[from] parley_core::ports::StoreError),
    #[error("cannot open the queue: {0}")]
    Queue(#[from] parley_core::ports::QueueError),
    /// The Lambda functions are built without SQLite (see parley-runtime's `sqlite`
    /// feature); `parley serve` is the local runtime.
    #[error(
        "{variable}=sqlite, but this binary is built without SQLite (the Lambda functions run on DynamoDB and SQS); run `parley serve` locally, or these functions against moto: scripts/moto.sh --provision"
    )]
    SqliteNotBuilt { variable: &'static str },
}

/// The adapters an entrypoint runs on. `polling` is set when the queue can be polled by
/// this process (SQLite, or SQS for the local runtime against a real queue).
#[derive(Clone)]
pub struct Adapters {
    pub store: Arc<dyn Store>,
    /// The same store behind its corpus port (retrieval documents and vectors).
    pub corpus: Arc<dyn CorpusStore>,
    pub queue: Arc<dyn JobQueue>,
    pub polling: Arc<dyn PollingQueue>,
}

pub async fn build_adapters(settings: &Settings) -> Result<Adapters, AdapterError> {
    let (store, corpus): Stores = match settings.store {
        Backend::Aws => {
            let store = Arc::new(DynamoStore::from_env().await);
            (store.clone(), store)
        }
        Backend::Sqlite => sqlite_store(settings)?,
    };
    let polling: Arc<dyn PollingQueue> = match settings.queue {
        Backend::Aws => Arc::new(SqsQueue::from_env().await?),
        Backend::Sqlite => sqlite_queue(settings).await?,
    };
    let queue: Arc<dyn JobQueue> = polling.clone();
    Ok(Adapters {
        store,
        corpus,
        queue,
        polling,
    })
}

/// The store and its corpus port: one SQLite file serves both.
type Stores = (Arc<dyn Store>, Arc<dyn CorpusStore>);

#[cfg(feature = "sqlite")]
fn sqlite_store(settings: &Settings) -> Result<Stores, AdapterError> {
    let store = Arc::new(SqliteStore::open(&settings.db_path)?);
    Ok((store.clone(), store))
}

#[cfg(not(feature = "sqlite"))]
fn sqlite_store(_settings: &Settings) -> Result<Stores, AdapterError> {
    Err(AdapterError::SqliteNotBuilt {
        variable: "PARLEY_STORE",
    })
}

#[cfg(feature = "sqlite")]
async fn sqlite_queue(settings: &Settings) -> Result<Arc<dyn PollingQueue>, AdapterError> {
    let queue = SqliteQueue::open(
        &settings.db_path,
        QueueSettings {
            max_receive_count: settings.max_receive_count,
            ..QueueSettings::default()
        },
    )
    .await?;
    Ok(Arc::new(queue))
}

#[cfg(not(feature = "sqlite"))]
async fn sqlite_queue(_settings: &Settings) -> Result<Arc<dyn PollingQueue>, AdapterError> {
    Err(AdapterError::SqliteNotBuilt {
        variable: "PARLEY_QUEUE",
    })
}
