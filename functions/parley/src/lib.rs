//! `parley`: the whole stack in one process (`serve`), the commands a person runs
//! (`review`, `doctor`, `app manifest`) and the operator commands, one module each
//! (`dlq`, `replay`, `tables`, `budget`).
//!
//! The same webhook handler as the Lambda, the workers polling the durable queue (the
//! conversation, review and embedding queues), and one SQLite file for queue and store. Started by `main.rs`, and in-process by the end-to-end
//! tests.

pub mod budget;
pub mod dlq;
pub mod doctor;
pub mod manifest;
pub mod memory;
pub mod poller;
pub mod replay;
pub mod review;
pub mod schedule;
pub mod server;
pub mod tables;

use anyhow::Context;
use parley_core::conversation::ConversationHandler;
use parley_core::embedding::EmbeddingHandler;
use parley_core::ports::{JobHandler, QueueName};
use parley_core::review::ReviewHandler;
use parley_runtime::clients::{self, Env};
use parley_runtime::{Settings, build_adapters};
use poller::PollerOptions;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

pub struct ServeOptions {
    pub addr: SocketAddr,
    /// Where settings and credentials are read from (the process environment, or a map in
    /// tests).
    pub env: Env,
    pub poller: PollerOptions,
}

/// A started server. Cancel the token given to [`start`] to stop; then [`Running::wait`].
pub struct Running {
    pub local_addr: SocketAddr,
    /// What the workers poll with (the visibility follows the pass deadline).
    pub poller: PollerOptions,
    tasks: JoinSet<anyhow::Result<()>>,
}

impl Running {
    /// Wait until the server and every worker have finished their in-flight work.
    pub async fn wait(mut self) -> anyhow::Result<()> {
        while let Some(joined) = self.tasks.join_next().await {
            joined.context("a serve task panicked")??;
        }
        Ok(())
    }
}

pub async fn start(options: ServeOptions, shutdown: CancellationToken) -> anyhow::Result<Running> {
    let env = options.env;
    let settings = Settings::from_lookup(|name| env(name))?;
    let sweep_every = schedule::every(env("PARLEY_REDELIVERY_MINUTES"))?;
    let adapters = build_adapters(&settings).await.with_context(|| {
        format!(
            "opening the local database at {}",
            settings.db_path.display()
        )
    })?;
    let ingest = parley_webhook::ingest_from_settings(
        &settings,
        adapters.store.clone(),
        adapters.queue.clone(),
    )
    .await?;

    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .with_context(|| format!("binding {}", options.addr))?;
    let local_addr = listener.local_addr()?;
    let mut tasks = JoinSet::new();
    tasks.spawn(server::run(listener, ingest, shutdown.clone()));

    let services = clients::services_from_env(&env, &settings, &adapters).await?;
    // The SQLite queue dead-letters after the settings' count: the handlers hear the same.
    // A received job stays hidden for as long as a review may take with the pass deadline
    // this operator allows, so no second worker starts it while the first is still at it.
    let poller = PollerOptions {
        max_receive_count: settings.max_receive_count,
        visibility: options
            .poller
            .visibility
            .max(services.config.pass_deadline().job_bound()),
        ..options.poller
    };
    let handlers: [(QueueName, Arc<dyn JobHandler>); 3] = [
        (
            QueueName::Conversation,
            Arc::new(ConversationHandler::new(services.clone())),
        ),
        (
            QueueName::Review,
            Arc::new(ReviewHandler::new(services.clone())),
        ),
        (
            QueueName::Embedding,
            Arc::new(EmbeddingHandler::new(services)),
        ),
    ];
    for (queue, handler) in handlers {
        for worker in 0..poller.workers_per_queue {
            tasks.spawn(poller::run(
                adapters.polling.clone(),
                queue,
                handler.clone(),
                poller.clone(),
                shutdown.clone(),
                worker,
            ));
        }
    }
    if let Some(every) = sweep_every {
        tasks.spawn(schedule::run(
            adapters.queue.clone(),
            every,
            shutdown.clone(),
        ));
    }
    tracing::info!(%local_addr, db = %settings.db_path.display(), "parley serve: POST /webhook");
    Ok(Running {
        local_addr,
        poller,
        tasks,
    })
}
