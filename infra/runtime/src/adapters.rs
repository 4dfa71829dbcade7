//! Pick and build the store and queue adapters the settings ask for.

use crate::settings::{Backend, Settings};
use parley_core::ports::{CorpusStore, JobQueue, PollingQueue, Store};
use parley_queue::sqlite::{QueueSettings, SqliteQueue};
use parley_queue::sqs::SqsQueue;
use parley_store::dynamo::DynamoStore;
use parley_store::sqlite::SqliteStore;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum AdapterError {
    #[error("cannot open the store: {0}")]
    Store(#[from] parley_core::ports::StoreError),
    #[error("cannot open the queue: {0}")]
    Queue(#[from] parley_core::ports::QueueError),
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
    let (store, corpus): (Arc<dyn Store>, Arc<dyn CorpusStore>) = match settings.store {
        Backend::Aws => {
            let store = Arc::new(DynamoStore::from_env().await);
            (store.clone(), store)
        }
        Backend::Sqlite => {
            let store = Arc::new(SqliteStore::open(&settings.db_path)?);
            (store.clone(), store)
        }
    };
    let polling: Arc<dyn PollingQueue> = match settings.queue {
        Backend::Aws => Arc::new(SqsQueue::from_env().await?),
        Backend::Sqlite => Arc::new(
            SqliteQueue::open(
                &settings.db_path,
                QueueSettings {
                    max_receive_count: settings.max_receive_count,
                    ..QueueSettings::default()
                },
            )
            .await?,
        ),
    };
    let queue: Arc<dyn JobQueue> = polling.clone();
    Ok(Adapters {
        store,
        corpus,
        queue,
        polling,
    })
}
