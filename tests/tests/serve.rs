//! `parley serve` end to end: a signed webhook over real HTTP, picked up by the workers
//! from the SQLite queue, and a clean drain on shutdown.

use parley_cli::poller::PollerOptions;
use parley_cli::{ServeOptions, start};
use parley_core::ports::{PollingQueue, QueueName, Store};
use parley_queue::sqlite::{QueueSettings, SqliteQueue};
use parley_runtime::clients::Env;
use parley_store::sqlite::SqliteStore;
use parley_tests::{sign, webhook_example};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const SECRET: &str = "serve-secret";

fn env(db: &std::path::Path) -> Env {
    let vars: HashMap<String, String> = HashMap::from([
        ("GITHUB_WEBHOOK_SECRET".to_string(), SECRET.to_string()),
        ("GITHUB_APP_SLUG".to_string(), "parley".to_string()),
        ("PARLEY_DB_PATH".to_string(), db.display().to_string()),
    ]);
    Arc::new(move |k: &str| vars.get(k).cloned())
}

async fn send(
    client: &reqwest::Client,
    url: &str,
    event: &str,
    delivery: &str,
    payload: &serde_json::Value,
) -> (u16, String) {
    let body = serde_json::to_vec(payload).expect("encode");
    let response = client
        .post(url)
        .header("X-GitHub-Event", event)
        .header("X-GitHub-Delivery", delivery)
        .header("X-Hub-Signature-256", sign(SECRET, &body))
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    (status, response.text().await.expect("body"))
}

#[tokio::test]
async fn serve_takes_a_webhook_and_the_worker_runs_the_job() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("nested/parley.db");
    let shutdown = CancellationToken::new();
    let running = start(
        ServeOptions {
            addr: "127.0.0.1:0".parse().expect("addr"),
            env: env(&db),
            poller: PollerOptions {
                idle_wait: Duration::from_millis(20),
                ..PollerOptions::default()
            },
        },
        shutdown.clone(),
    )
    .await
    .expect("start");
    let url = format!("http://{}/webhook", running.local_addr);
    let client = reqwest::Client::new();

    // A mention of the bot: accepted and consumed by the conversation worker.
    let mut comment = webhook_example("issue_comment", "created.payload.json");
    comment["comment"]["body"] = "@parley what does this change do?".into();
    let (status, body) = send(&client, &url, "issue_comment", "e2e-comment", &comment).await;
    assert_eq!(status, 202, "{body}");
    assert!(body.contains("accepted"), "{body}");

    // An installation: the worker records it in the store, which we can observe.
    let install = webhook_example("installation", "created.payload.json");
    let (status, body) = send(&client, &url, "installation", "e2e-install", &install).await;
    assert_eq!(status, 202, "{body}");

    let store = SqliteStore::open(&db).expect("open store");
    let mut recorded = None;
    for _ in 0..200 {
        recorded = store.installation(957387).await.expect("read");
        if recorded.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let recorded = recorded.expect("the conversation worker recorded the installation");
    assert_eq!(recorded.account, "Codertocat");

    // Both jobs were taken off the queue: nothing left to receive, nothing dead-lettered.
    let queue = SqliteQueue::open(&db, QueueSettings::default())
        .await
        .expect("open queue");
    let mut left = Vec::new();
    for _ in 0..100 {
        left = queue
            .receive(QueueName::Conversation, 10, Duration::from_secs(1))
            .await
            .expect("receive");
        if left.is_empty() {
            break;
        }
        for m in &left {
            queue
                .nack(QueueName::Conversation, &m.receipt)
                .await
                .expect("nack");
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(left.is_empty(), "jobs still queued: {left:?}");
    assert!(
        queue
            .dead_letters(QueueName::Conversation)
            .await
            .expect("dlq")
            .is_empty()
    );

    // A bad signature over real HTTP is a 401.
    let response = client
        .post(&url)
        .header("X-GitHub-Event", "ping")
        .header("X-GitHub-Delivery", "bad")
        .header("X-Hub-Signature-256", sign("nope", b"{}"))
        .body("{}")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status().as_u16(), 401);

    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(10), running.wait())
        .await
        .expect("drained in time")
        .expect("clean shutdown");
}
