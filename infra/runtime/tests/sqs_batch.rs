//! The Lambda worker contract: partial batch failures that keep FIFO order.

use async_trait::async_trait;
use aws_lambda_events::event::sqs::SqsEvent;
use parley_core::Job;
use parley_core::ports::{JobError, JobHandler};
use std::sync::Mutex;

/// Fails the job whose delivery id is `fail_on`; records the order jobs were run in.
struct Scripted {
    fail_on: &'static str,
    seen: Mutex<Vec<String>>,
}

#[async_trait]
impl JobHandler for Scripted {
    async fn handle(&self, job: Job) -> Result<(), JobError> {
        let id = job.delivery_id().to_string();
        self.seen.lock().expect("lock").push(id.clone());
        if id == self.fail_on {
            Err(JobError::Transient("scripted failure".into()))
        } else {
            Ok(())
        }
    }
}

/// A job on PR `o/r#7`, whose FIFO message group is `o/r#7`.
fn job_body(delivery: &str) -> String {
    job_on_pr(delivery, 7)
}

fn job_on_pr(delivery: &str, number: u64) -> String {
    serde_json::json!({
        "kind": "bookkeeping",
        "delivery_id": delivery,
        "installation_id": 1,
        "event": { "event": "pull_request_closed", "repo": { "id": 1, "owner": "o", "name": "r" }, "number": number, "merged": true }
    })
    .to_string()
}

/// Records as SQS sends them, without a `MessageGroupId` attribute (the group is then
/// read from the job).
fn event(bodies: &[(&str, String)]) -> SqsEvent {
    let records: Vec<_> = bodies
        .iter()
        .map(|(id, body)| serde_json::json!({ "messageId": id, "body": body, "attributes": {}, "messageAttributes": {} }))
        .collect();
    serde_json::from_value(serde_json::json!({ "Records": records })).expect("sqs event")
}

/// Records carrying their FIFO `MessageGroupId`, as a FIFO event source sends them.
fn grouped_event(bodies: &[(&str, &str, String)]) -> SqsEvent {
    let records: Vec<_> = bodies
        .iter()
        .map(|(id, group, body)| serde_json::json!({ "messageId": id, "body": body, "attributes": { "MessageGroupId": group }, "messageAttributes": {} }))
        .collect();
    serde_json::from_value(serde_json::json!({ "Records": records })).expect("sqs event")
}

fn failures(response: &aws_lambda_events::event::sqs::SqsBatchResponse) -> Vec<&str> {
    response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect()
}

#[tokio::test]
async fn after_a_failure_the_rest_of_its_group_fails_unrun() {
    let handler = Scripted {
        fail_on: "d2",
        seen: Mutex::new(Vec::new()),
    };
    let batch = event(&[
        ("m1", job_body("d1")),
        ("m2", job_body("d2")),
        ("m3", job_body("d3")),
        ("m4", job_body("d4")),
    ]);
    let response = parley_runtime::sqs_batch::respond(batch, &handler, 5)
        .await
        .expect("response");
    assert_eq!(failures(&response), vec!["m2", "m3", "m4"]);
    assert_eq!(
        *handler.seen.lock().expect("lock"),
        vec!["d1", "d2"],
        "m3 and m4 must not run before m2 succeeds"
    );
}

#[tokio::test]
async fn a_failure_does_not_hold_back_other_groups() {
    let handler = Scripted {
        fail_on: "d2",
        seen: Mutex::new(Vec::new()),
    };
    // m2 fails on PR 7; m3 is PR 7 too and must wait; m4 (PR 8) and m5 (PR 9, group read
    // from the job) are other PRs and run.
    let batch = grouped_event(&[
        ("m1", "o/r#7", job_on_pr("d1", 7)),
        ("m2", "o/r#7", job_on_pr("d2", 7)),
        ("m3", "o/r#7", job_on_pr("d3", 7)),
        ("m4", "o/r#8", job_on_pr("d4", 8)),
    ]);
    let response = parley_runtime::sqs_batch::respond(batch, &handler, 5)
        .await
        .expect("response");
    assert_eq!(failures(&response), vec!["m2", "m3"]);
    assert_eq!(*handler.seen.lock().expect("lock"), vec!["d1", "d2", "d4"]);

    let handler = Scripted {
        fail_on: "d1",
        seen: Mutex::new(Vec::new()),
    };
    let batch = event(&[
        ("m1", job_on_pr("d1", 7)),
        ("m2", job_on_pr("d2", 9)),
        ("m3", job_on_pr("d3", 7)),
    ]);
    let response = parley_runtime::sqs_batch::respond(batch, &handler, 5)
        .await
        .expect("response");
    assert_eq!(failures(&response), vec!["m1", "m3"]);
    assert_eq!(*handler.seen.lock().expect("lock"), vec!["d1", "d2"]);
}

#[tokio::test]
async fn a_clean_batch_reports_no_failures() {
    let handler = Scripted {
        fail_on: "none",
        seen: Mutex::new(Vec::new()),
    };
    let batch = event(&[("m1", job_body("d1")), ("m2", job_body("d2"))]);
    let response = parley_runtime::sqs_batch::respond(batch, &handler, 5)
        .await
        .expect("response");
    assert!(failures(&response).is_empty());
    assert_eq!(handler.seen.lock().expect("lock").len(), 2);
}

#[tokio::test]
async fn an_undecodable_message_is_not_retried_and_holds_nothing_back() {
    let handler = Scripted {
        fail_on: "none",
        seen: Mutex::new(Vec::new()),
    };
    let batch = grouped_event(&[
        ("m1", "o/r#7", "{not a job".to_string()),
        ("m2", "o/r#7", job_body("d2")),
        ("m3", "o/r#8", job_on_pr("d3", 8)),
    ]);
    let response = parley_runtime::sqs_batch::respond(batch, &handler, 5)
        .await
        .expect("response");
    // Not a job: no retry can change that (a permanent failure), so it is logged and
    // deleted, and its group's next job runs.
    assert!(failures(&response).is_empty(), "{:?}", failures(&response));
    assert_eq!(*handler.seen.lock().expect("lock"), vec!["d2", "d3"]);
}

#[tokio::test]
async fn the_response_serialises_as_lambda_expects() {
    let handler = Scripted {
        fail_on: "d1",
        seen: Mutex::new(Vec::new()),
    };
    let response =
        parley_runtime::sqs_batch::respond(event(&[("m1", job_body("d1"))]), &handler, 5)
            .await
            .expect("response");
    let json = serde_json::to_value(&response).expect("json");
    assert_eq!(
        json,
        serde_json::json!({ "batchItemFailures": [ { "itemIdentifier": "m1" } ] })
    );
}
