//! The durable local queue for `parley serve`, in a SQLite file.
//!
//! It keeps the SQS FIFO behaviour a worker can observe, so that local runs exercise the
//! same failure paths as Lambda: per-group order, a visibility timeout after which an
//! un-acked message (a crashed worker's) comes back, receive counts, a move to the dead
//! letters on the receive after `max_receive_count`, a five-minute dedup window, and
//! receipts that go stale when their visibility ends. `receive` never waits for messages;
//! the local runtime polls.

mod fifo;
mod schema;

use async_trait::async_trait;
use parley_core::ports::{
    DeadLetter, JobQueue, OutgoingMessage, PollingQueue, QueueError, QueueName, ReceivedMessage,
};
use rusqlite::Connection;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Knobs SQS sets per queue (redrive policy) or fixes (dedup window).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSettings {
    /// A message received this many times is dead-lettered on its next receive, as with an
    /// SQS redrive policy's `maxReceiveCount`.
    pub max_receive_count: u32,
    /// A second send with the same dedup id within this window is dropped. SQS fixes it at
    /// five minutes; it is a setting only so tests can watch it expire.
    pub dedup_window: Duration,
}

impl Default for QueueSettings {
    fn default() -> Self {
        Self {
            max_receive_count: 5,
            dedup_window: Duration::from_secs(5 * 60),
        }
    }
}

/// Cheap to clone; clones share one connection. One connection is enough: every operation
/// is a short transaction, and SQLite serialises writers anyway.
#[derive(Clone)]
pub struct SqliteQueue {
    conn: Arc<Mutex<Connection>>,
    settings: QueueSettings,
}

impl SqliteQueue {
    /// Open (or create) the queue tables in the database at `path`, which may be the file
    /// the SQLite store uses too.
    pub async fn open(path: impl AsRef<Path>, settings: QueueSettings) -> Result<Self, QueueError> {
        let path = path.as_ref().to_path_buf();
        let shown = path.display().to_string();
        let conn = tokio::task::spawn_blocking(move || -> rusqlite::Result<Connection> {
            let conn = Connection::open(&path)?;
            schema::prepare(&conn)?;
            Ok(conn)
        })
        .await
        .map_err(|err| {
            QueueError::Unavailable(format!("opening the queue database {shown}: {err}"))
        })?
        .map_err(|err| {
            QueueError::Unavailable(format!("opening the queue database {shown}: {err}"))
        })?;
        Self::with_connection(conn, settings)
    }

    /// A queue that lives as long as this value; for tests and throwaway runs.
    pub fn open_in_memory(settings: QueueSettings) -> Result<Self, QueueError> {
        let conn = Connection::open_in_memory()
            .and_then(|conn| schema::prepare(&conn).map(|()| conn))
            .map_err(|err| QueueError::Unavailable(format!("opening an in-memory queue: {err}")))?;
        Self::with_connection(conn, settings)
    }

    fn with_connection(conn: Connection, settings: QueueSettings) -> Result<Self, QueueError> {
        if settings.max_receive_count == 0 {
            return Err(QueueError::Config(
                "max_receive_count must be at least 1".into(),
            ));
        }
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            settings,
        })
    }

    /// Run `operation` on the connection on the blocking pool: SQLite calls block, and may
    /// wait up to the busy timeout for another connection.
    async fn run<T, F>(&self, what: &'static str, operation: F) -> Result<T, QueueError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            // A panic while the lock was held cannot leave a half-done write behind: the
            // transaction rolls back when it is dropped during unwinding. So the
            // connection is still sound and a poisoned lock is taken over.
            let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
            operation(&mut conn)
        })
        .await
        .map_err(|err| QueueError::Unavailable(format!("{what}: {err}")))?
        .map_err(|err| QueueError::Unavailable(format!("{what}: {err}")))
    }
}

#[async_trait]
impl JobQueue for SqliteQueue {
    async fn send(&self, message: OutgoingMessage) -> Result<(), QueueError> {
        let window = self.settings.dedup_window;
        let (message, sent) = self
            .run("queue send", move |conn| {
                fifo::send(conn, &message, window, now_ms()).map(|sent| (message, sent))
            })
            .await?;
        match sent {
            fifo::Sent::Stored => tracing::debug!(
                queue = message.queue.as_str(), group_id = %message.group_id, dedup_id = %message.dedup_id, "sent"
            ),
            fifo::Sent::Duplicate => tracing::info!(
                queue = message.queue.as_str(), group_id = %message.group_id, dedup_id = %message.dedup_id,
                "dropped: dedup id already sent within the dedup window"
            ),
        }
        Ok(())
    }
}

#[async_trait]
impl PollingQueue for SqliteQueue {
    async fn receive(
        &self,
        queue: QueueName,
        max: usize,
        visibility: Duration,
    ) -> Result<Vec<ReceivedMessage>, QueueError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let max_receive_count = self.settings.max_receive_count;
        self.run("queue receive", move |conn| {
            fifo::receive(conn, queue, max, visibility, max_receive_count, now_ms())
        })
        .await
    }

    async fn ack(&self, queue: QueueName, receipt: &str) -> Result<(), QueueError> {
        let owned = receipt.to_string();
        let current = self
            .run("queue ack", move |conn| {
                fifo::ack(conn, queue, &owned, now_ms())
            })
            .await?;
        current.then_some(()).ok_or_else(|| stale(queue, receipt))
    }

    async fn nack(&self, queue: QueueName, receipt: &str) -> Result<(), QueueError> {
        let owned = receipt.to_string();
        let current = self
            .run("queue nack", move |conn| {
                fifo::nack(conn, queue, &owned, now_ms())
            })
            .await?;
        current.then_some(()).ok_or_else(|| stale(queue, receipt))
    }

    async fn list_dead_letters(&self, queue: QueueName) -> Result<Vec<DeadLetter>, QueueError> {
        self.run("queue dead letters", move |conn| {
            fifo::dead_letters(conn, queue)
        })
        .await
    }

    async fn redrive_dead_letter(
        &self,
        queue: QueueName,
        message_id: &str,
    ) -> Result<bool, QueueError> {
        let owned = message_id.to_string();
        self.run("queue redrive", move |conn| {
            fifo::redrive(conn, queue, &owned, now_ms())
        })
        .await
    }
}

fn stale(queue: QueueName, receipt: &str) -> QueueError {
    QueueError::StaleReceipt(format!(
        "{receipt} on the {} queue: its visibility timeout passed, or the message was acknowledged",
        queue.as_str()
    ))
}

/// Wall-clock milliseconds: visibility and dedup deadlines are stored in the file and must
/// mean the same after a restart, which a monotonic clock cannot give.
fn now_ms() -> i64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX)
}
