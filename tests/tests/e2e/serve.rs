//! `parley serve` end to end: a signed webhook over real HTTP, picked up by the
//! conversation worker from the SQLite queue, answered through a fake GitHub and a fake
//! LLM, and a clean drain on shutdown.

use parley_core::markers::{self, ReplyMarker};
use parley_core::ports::{Installations, PollingQueue, QueueName};
use parley_queue::sqlite::{QueueSettings, SqliteQueue};
use parley_runtime::clients::Env;
use parley_store::sqlite::SqliteStore;
use parley_tests::rig::Fakes;
use parley_tests::{sign, webhook_example};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

const SECRET: &str = "serve-secret";

const REPO: &str = "Codertocat/Hello-World";

/// The same variables an operator would put in `.env`, pointing at the fakes.
fn env(db: &std::path::Path, fakes: &Fakes) -> Env {
    let vars: HashMap<String, String> = fakes.env(db, SECRET).into_iter().collect();
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
    parley_runtime::telemetry::init();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("nested/parley.db");
    let fakes = Fakes::start().await;
    let Fakes { github, llm } = &fakes;
    github.add_pull(REPO, 1, "Codertocat", "a1a1a1a1", "b0b0b0b0");
    llm.answer(
        "what does this change do",
        &parley_tests::conversation_harness::answer(
            "It updates the README with new information.",
            None,
        ),
    );
    let (running, shutdown) = parley_tests::serve_process::in_process(env(&db, &fakes)).await;
    let url = format!("http://{}/webhook", running.local_addr);
    let client = parley_llm::client_builder().build().expect("HTTP client");

    // A mention of the bot on a PR: accepted, then answered by the conversation worker.
    let question = "@parley what does this change do?";
    let comment_id = github.add_issue_comment(REPO, 1, "Codertocat", question);
    let mut comment = webhook_example("issue_comment", "created.with-installation.payload.json");
    comment["comment"]["id"] = comment_id.into();
    comment["comment"]["body"] = question.into();
    comment["issue"]["pull_request"] =
        serde_json::json!({ "url": format!("https://api.github.com/repos/{REPO}/pulls/1") });
    let (status, body) = send(&client, &url, "issue_comment", "e2e-comment", &comment).await;
    assert_eq!(status, 202, "{body}");
    assert!(body.contains("accepted"), "{body}");

    let mut reply = None;
    for _ in 0..400 {
        reply = github
            .issue_comments(REPO, 1)
            .into_iter()
            .find(|c| c["user"]["login"] == "parley[bot]");
        if reply.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let reply = reply.unwrap_or_else(|| {
        panic!(
            "the conversation worker did not answer; GitHub saw: {:#?}",
            github
                .requests()
                .iter()
                .map(|r| format!("{} {}", r.method, r.path))
                .collect::<Vec<_>>()
        )
    });
    let text = reply["body"].as_str().unwrap_or_default();
    assert!(text.contains("It updates the README"), "{text}");
    assert!(
        !text.contains("@parley"),
        "a reply never mentions the bot: {text}"
    );
    let marker: ReplyMarker = markers::find(text, markers::kind::REPLY).expect("reply marker");
    assert_eq!(marker.reply_to, comment_id);
    assert!(
        llm.prompts()
            .iter()
            .any(|p| p.text().contains("what does this change do")),
        "the question reached the model"
    );

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

#[tokio::test]
async fn serve_asks_for_the_deliveries_it_missed_when_it_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fakes = Fakes::start().await;
    // GitHub could not reach the machine while it was down.
    let missed = fakes
        .github
        .add_webhook_delivery("g-while-down", "pull_request", 0, 30);
    let (running, shutdown) =
        parley_tests::serve_process::in_process(env(&dir.path().join("parley.db"), &fakes)).await;
    let mut asked = Vec::new();
    for _ in 0..400 {
        asked = fakes.github.redelivery_requests();
        if !asked.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(asked, [missed]);
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(10), running.wait())
        .await
        .expect("drained in time")
        .expect("clean shutdown");

    // Turned off, the sweep is never queued: the same start asks GitHub nothing about it.
    let fakes = Fakes::start().await;
    let vars: HashMap<String, String> = fakes
        .env(&dir.path().join("off.db"), SECRET)
        .into_iter()
        .chain([("PARLEY_REDELIVERY_MINUTES".to_string(), "0".to_string())])
        .collect();
    let (running, shutdown) =
        parley_tests::serve_process::in_process(Arc::new(move |k: &str| vars.get(k).cloned()))
            .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(10), running.wait())
        .await
        .expect("drained in time")
        .expect("clean shutdown");
    assert!(
        fakes
            .github
            .requests_to("GET", "/app/hook/deliveries")
            .is_empty()
    );
}
