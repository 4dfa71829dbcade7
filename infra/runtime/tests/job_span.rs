//! Every log line of a job carries the job's span, in the JSON the Lambda functions write:
//! delivery id, repository, PR, kind of job and queue message id.

use async_trait::async_trait;
use parley_core::Job;
use parley_core::ports::{JobError, JobHandler};
use parley_core::worker::{BatchItem, process_one};
use serde_json::Value;
use std::io::Write;
use std::sync::{Arc, Mutex};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// Logs a line from inside the job, as handlers do, then fails or succeeds.
struct Logging {
    fail: bool,
}

#[async_trait]
impl JobHandler for Logging {
    async fn handle(&self, job: Job) -> Result<(), JobError> {
        tracing::warn!(seen = job.delivery_id(), "deep inside the handler");
        if self.fail {
            Err(JobError::Transient("scripted".into()))
        } else {
            Ok(())
        }
    }
}

/// A shared buffer the subscriber writes its lines to.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("buffer").extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'w> MakeWriter<'w> for Buffer {
    type Writer = Buffer;
    fn make_writer(&'w self) -> Buffer {
        self.clone()
    }
}

impl Buffer {
    fn lines(&self) -> Vec<Value> {
        let bytes = self.0.lock().expect("buffer").clone();
        String::from_utf8(bytes)
            .expect("utf-8")
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect()
    }
}

/// Run `body` as the message `message_id` under the Lambda JSON subscriber.
async fn logged(body: &str, message_id: &str, handler: &dyn JobHandler) -> Vec<Value> {
    let buffer = Buffer::default();
    let subscriber = parley_runtime::telemetry::json(buffer.clone(), EnvFilter::new("info"));
    let _guard = tracing::subscriber::set_default(subscriber);
    let item = BatchItem {
        message_id,
        group_id: None,
        body,
        attempt: None,
    };
    let _ = process_one(&item, handler).await;
    buffer.lines()
}

fn review_job(delivery: &str) -> String {
    serde_json::json!({
        "kind": "review", "delivery_id": delivery, "installation_id": 5,
        "repo": { "id": 1, "owner": "octo-org", "name": "hello" }, "number": 42,
        "trigger": "opened", "head_sha": "a1", "base_sha": "b0", "base_ref": "main",
        "before_sha": null, "author": { "login": "alice", "kind": "User" }, "title": "t"
    })
    .to_string()
}

#[tokio::test(flavor = "current_thread")]
async fn a_line_logged_inside_a_job_carries_the_jobs_fields() {
    let lines = logged(&review_job("d-123"), "m-456", &Logging { fail: false }).await;
    let inside = lines
        .iter()
        .find(|l| l["fields"]["message"] == "deep inside the handler")
        .unwrap_or_else(|| panic!("no line from the handler: {lines:#?}"));
    let span = &inside["span"];
    assert_eq!(span["name"], "job");
    assert_eq!(span["delivery_id"], "d-123");
    assert_eq!(span["repo"], "octo-org/hello");
    assert_eq!(span["pr"], 42);
    assert_eq!(span["kind"], "review");
    assert_eq!(span["message_id"], "m-456");
    // Every line of the job, the worker's own included, carries it.
    for line in &lines {
        assert_eq!(line["span"]["delivery_id"], "d-123", "{line}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_failure_line_of_a_job_carries_its_fields_too() {
    let lines = logged(&review_job("d-9"), "m-9", &Logging { fail: true }).await;
    assert!(
        lines
            .iter()
            .any(|l| l["fields"]["message"] == "deep inside the handler"
                && l["span"]["message_id"] == "m-9")
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_installation_job_has_no_repository_or_pr() {
    let body = serde_json::json!({
        "kind": "bookkeeping", "delivery_id": "d-inst", "installation_id": 7,
        "event": { "event": "installation", "action": "created", "installation_id": 7,
                   "account": "octo-org", "repositories_added": [], "repositories_removed": [] }
    })
    .to_string();
    let lines = logged(&body, "m-inst", &Logging { fail: false }).await;
    let inside = lines
        .iter()
        .find(|l| l["fields"]["message"] == "deep inside the handler")
        .expect("handler line");
    assert_eq!(inside["span"]["kind"], "bookkeeping");
    assert_eq!(inside["span"]["delivery_id"], "d-inst");
    assert!(inside["span"].get("repo").is_none(), "{inside}");
    assert!(inside["span"].get("pr").is_none(), "{inside}");
}
