//! The webhook path through the real handler, the SQLite store and the SQLite queue.

use http::{HeaderMap, HeaderValue};
use parley_core::job::{BookkeepingEvent, Job, ReviewTrigger, Surface};
use parley_core::mention::Handles;
use parley_core::ports::{PollingQueue, QueueName, Store};
use parley_core::webhook::Ingest;
use parley_queue::sqlite::{QueueSettings, SqliteQueue};
use parley_store::sqlite::SqliteStore;
use parley_tests::{sign, webhook_example, webhook_examples};
use std::sync::Arc;
use std::time::Duration;

const SECRET: &str = "test-secret";

struct Harness {
    ingest: Ingest,
    queue: Arc<SqliteQueue>,
}

/// The webhook with two secrets (a rotation under way: an old one and [`SECRET`]).
fn harness(slug: Option<&str>) -> Harness {
    harness_with(Some(&format!("old-secret,{SECRET}")), slug)
}

fn harness_with(secrets: Option<&str>, slug: Option<&str>) -> Harness {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().expect("store"));
    let queue = Arc::new(SqliteQueue::open_in_memory(QueueSettings::default()).expect("queue"));
    let ingest = parley_webhook::ingest(
        secrets,
        slug.map(|s| Handles::new(s, &[])),
        store,
        queue.clone(),
    );
    Harness { ingest, queue }
}

fn headers(event: Option<&str>, delivery: Option<&str>, signature: Option<&str>) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (name, value) in [
        ("x-github-event", event),
        ("x-github-delivery", delivery),
        ("x-hub-signature-256", signature),
    ] {
        if let Some(v) = value {
            h.insert(name, HeaderValue::from_str(v).expect("header"));
        }
    }
    h
}

async fn post(h: &Harness, event: &str, delivery: &str, body: &[u8]) -> (u16, serde_json::Value) {
    let sig = sign(SECRET, body);
    let response = parley_webhook::respond(
        &h.ingest,
        &headers(Some(event), Some(delivery), Some(&sig)),
        body,
    )
    .await;
    let json = serde_json::from_str(response.body()).expect("json body");
    (response.status().as_u16(), json)
}

async fn drain(queue: &SqliteQueue, name: QueueName) -> Vec<Job> {
    let mut jobs = Vec::new();
    loop {
        let batch = queue
            .receive(name, 10, Duration::from_secs(60))
            .await
            .expect("receive");
        if batch.is_empty() {
            return jobs;
        }
        for m in batch {
            jobs.push(serde_json::from_str(&m.body).expect("job"));
            queue.ack(name, &m.receipt).await.expect("ack");
        }
    }
}

async fn single_job(h: &Harness, event: &str, value: &serde_json::Value) -> Job {
    let body = serde_json::to_vec(value).expect("encode");
    let (status, json) = post(h, event, &uuid::Uuid::new_v4().to_string(), &body).await;
    assert_eq!(status, 202, "{json}");
    assert_eq!(json["status"], "accepted", "{json}");
    let mut jobs = drain(&h.queue, QueueName::Conversation).await;
    jobs.extend(drain(&h.queue, QueueName::Review).await);
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    jobs.remove(0)
}

#[tokio::test]
async fn every_corpus_payload_is_answered_without_a_server_error() {
    for slug in [None, Some("parley")] {
        let h = harness(slug);
        let examples = webhook_examples();
        assert!(
            examples.len() >= 70,
            "corpus has {} payloads",
            examples.len()
        );
        for (i, (event, file, body)) in examples.iter().enumerate() {
            let (status, json) = post(&h, event, &format!("d-{i}"), body).await;
            let expected = if event == "ping" { 200 } else { 202 };
            assert_eq!(status, expected, "{event}/{file} (slug {slug:?}): {json}");
        }
    }
}

#[tokio::test]
async fn corpus_events_route_to_the_right_queue() {
    let h = harness(None);
    for (i, (event, _file, body)) in webhook_examples().iter().enumerate() {
        post(&h, event, &format!("r-{i}"), body).await;
    }
    let conversation = drain(&h.queue, QueueName::Conversation).await;
    let review = drain(&h.queue, QueueName::Review).await;
    assert!(review.iter().all(|j| matches!(j, Job::Review(_))));
    assert!(conversation.iter().all(|j| !matches!(j, Job::Review(_))));
    // opened x3, reopened x2, ready_for_review x3, synchronize x1, unlabeled x2 (no
    // drafts in these), and check_suite.rerequested x2 (check_run.rerequested's checks
    // are another App's).
    assert_eq!(review.len(), 13, "{review:#?}");
    let surfaces: Vec<_> = conversation
        .iter()
        .filter_map(|j| match j {
            Job::Conversation(c) => Some(c.surface),
            _ => None,
        })
        .collect();
    // With no slug configured every created or edited comment is forwarded (created x4
    // and edited x2 top-level, created x2 and edited x1 inline); reviews only with a body.
    assert_eq!(
        surfaces
            .iter()
            .filter(|s| **s == Surface::IssueComment)
            .count(),
        6
    );
    assert_eq!(
        surfaces
            .iter()
            .filter(|s| **s == Surface::ReviewComment)
            .count(),
        3
    );
}

/// "Re-run" pressed on Parley's gate check, and "Re-run all checks" on its suite: review
/// jobs that ask for the head's gate again, for the PR the check was made for.
#[tokio::test]
async fn a_rerun_of_parleys_check_becomes_a_rerequested_review() {
    let h = harness(Some("parley"));
    let mut payload = webhook_example("check_run", "rerequested.payload.json");
    payload["check_run"]["name"] = serde_json::json!("Parley review");
    payload["check_run"]["external_id"] =
        serde_json::json!("review#repo:1296269#42#d6fde92930d4715a2b49857d24b940956b26d2d3");
    let Job::Review(job) = single_job(&h, "check_run", &payload).await else {
        panic!("expected a review job");
    };
    assert_eq!(job.trigger, ReviewTrigger::Rerequested);
    assert_eq!(job.number, 42, "the PR the check was made for");
    assert_eq!(job.head_sha, "d6fde92930d4715a2b49857d24b940956b26d2d3");

    let suite = webhook_example("check_suite", "rerequested.payload.json");
    let Job::Review(job) = single_job(&h, "check_suite", &suite).await else {
        panic!("expected a review job");
    };
    assert_eq!(job.trigger, ReviewTrigger::Rerequested);
    assert_eq!(job.number, 2);
    assert_eq!(job.head_sha, "ec26c3e57ca3a959ca5aad62de7213c562f8c821");
}

#[tokio::test]
async fn synchronize_becomes_a_review_job_with_its_range() {
    let h = harness(Some("parley"));
    let payload = webhook_example("pull_request", "synchronize.payload.json");
    let Job::Review(job) = single_job(&h, "pull_request", &payload).await else {
        panic!("expected a review job");
    };
    assert_eq!(job.trigger, ReviewTrigger::Synchronize);
    assert_eq!(job.repo.full_name(), "Codertocat/Hello-World");
    assert_eq!(job.number, 2);
    assert_eq!(job.head_sha, "ec26c3e57ca3a959ca5aad62de7213c562f8c821");
    assert_eq!(
        job.before_sha.as_deref(),
        Some("f95f852bd8fca8fcc58a9a2d6c842781e32a215e")
    );
    assert_eq!(job.base_ref, "master");
    assert_eq!(job.installation_id, Some(1));
    assert_eq!(job.author.login, "Codertocat");
}

#[tokio::test]
async fn unlabeled_becomes_a_review_job_naming_the_label() {
    let h = harness(Some("parley"));
    let payload = webhook_example("pull_request", "unlabeled.payload.json");
    let Job::Review(job) = single_job(&h, "pull_request", &payload).await else {
        panic!("expected a review job");
    };
    assert_eq!(job.trigger, ReviewTrigger::Unlabeled);
    assert_eq!(job.label.as_deref(), Some("bug"));
    assert_eq!(job.before_sha, None);
    // A label put on is no reason to review.
    let labeled = webhook_example("pull_request", "labeled.payload.json");
    let body = serde_json::to_vec(&labeled).expect("encode");
    let (status, json) = post(&h, "pull_request", "labeled-1", &body).await;
    assert_eq!(status, 202);
    assert_eq!(json["status"], "ignored", "{json}");
}

#[tokio::test]
async fn drafts_are_skipped_with_a_reason() {
    let h = harness(Some("parley"));
    let mut payload = webhook_example("pull_request", "opened.payload.json");
    payload["pull_request"]["draft"] = true.into();
    let body = serde_json::to_vec(&payload).expect("encode");
    let (status, json) = post(&h, "pull_request", "draft-1", &body).await;
    assert_eq!(status, 202);
    assert_eq!(json["status"], "ignored");
    assert!(
        json["reason"].as_str().unwrap_or("").contains("draft"),
        "{json}"
    );
    assert!(drain(&h.queue, QueueName::Review).await.is_empty());
}

#[tokio::test]
async fn issue_comment_needs_a_mention_when_the_handle_is_known() {
    let h = harness(Some("parley"));
    let mut payload = webhook_example("issue_comment", "created.payload.json");
    let body = serde_json::to_vec(&payload).expect("encode");
    let (_, json) = post(&h, "issue_comment", "c-1", &body).await;
    assert_eq!(json["status"], "ignored", "{json}");

    payload["comment"]["body"] = "@Parley is this a bug?".into();
    let Job::Conversation(job) = single_job(&h, "issue_comment", &payload).await else {
        panic!("expected a conversation job");
    };
    assert_eq!(job.surface, Surface::IssueComment);
    assert!(job.mentions_bot);
    assert!(!job.is_pull_request, "the example comment is on an issue");
    assert_eq!(job.number, 1);
    assert_eq!(job.comment.id, 492700400);
    assert_eq!(job.comment.author.login, "Codertocat");
    assert_eq!(job.comment.author.kind, "User");
    assert_eq!(job.comment.body, "@Parley is this a bug?");
    assert_eq!(job.in_reply_to_id, None);
    let topic = job
        .topic
        .expect("top-level comments carry their issue's title and body");
    assert_eq!(topic.title, "Spelling error in the README file");
    assert!(
        topic
            .body
            .starts_with("It looks like you accidently spelled"),
        "{}",
        topic.body
    );
}

#[tokio::test]
async fn review_comment_replies_are_candidates_without_a_mention() {
    let h = harness(Some("parley"));
    let mut payload = webhook_example("pull_request_review_comment", "created.payload.json");
    let body = serde_json::to_vec(&payload).expect("encode");
    let (_, json) = post(&h, "pull_request_review_comment", "rc-1", &body).await;
    assert_eq!(
        json["status"], "ignored",
        "a new thread without a mention: {json}"
    );

    payload["comment"]["in_reply_to_id"] = 111.into();
    let Job::Conversation(job) = single_job(&h, "pull_request_review_comment", &payload).await
    else {
        panic!("expected a conversation job");
    };
    assert_eq!(job.surface, Surface::ReviewComment);
    assert!(!job.mentions_bot);
    assert_eq!(job.in_reply_to_id, Some(111));
    assert_eq!(job.number, 2);
    assert_eq!(job.review_id, Some(237895671));
    let position = job.position.expect("inline position");
    assert_eq!(position.path, "README.md");
    assert_eq!(position.line, Some(265));
    assert_eq!(position.side.as_deref(), Some("RIGHT"));
    assert_eq!(
        position.diff_hunk.as_deref(),
        Some("@@ -1 +1 @@\n-# Hello-World")
    );
    assert_eq!(
        position.commit_id.as_deref(),
        Some("ec26c3e57ca3a959ca5aad62de7213c562f8c821")
    );
}

#[tokio::test]
async fn review_bodies_are_candidates_when_they_mention_the_bot() {
    let h = harness(Some("parley"));
    let mut payload = webhook_example("pull_request_review", "submitted.payload.json");
    let body = serde_json::to_vec(&payload).expect("encode");
    let (_, json) = post(&h, "pull_request_review", "rv-1", &body).await;
    assert_eq!(json["status"], "ignored", "null body: {json}");

    payload["review"]["body"] = "looks fine, @parley anything else?".into();
    let Job::Conversation(job) = single_job(&h, "pull_request_review", &payload).await else {
        panic!("expected a conversation job");
    };
    assert_eq!(job.surface, Surface::ReviewBody);
    assert_eq!(job.review_id, Some(237895671));
    assert_eq!(job.comment.id, 237895671);
}

#[tokio::test]
async fn events_from_parley_itself_and_other_bots_are_ignored() {
    let h = harness(Some("parley"));
    let mut payload = webhook_example("issue_comment", "created.payload.json");
    payload["comment"]["body"] = "@parley hello".into();
    payload["sender"]["login"] = "parley[bot]".into();
    let (_, json) = post(
        &h,
        "issue_comment",
        "self-1",
        &serde_json::to_vec(&payload).expect("encode"),
    )
    .await;
    assert_eq!(json["status"], "ignored");
    assert!(
        json["reason"]
            .as_str()
            .unwrap_or("")
            .contains("Parley itself"),
        "{json}"
    );

    payload["sender"]["login"] = "dependabot[bot]".into();
    payload["comment"]["user"]["login"] = "dependabot[bot]".into();
    payload["comment"]["user"]["type"] = "Bot".into();
    let (_, json) = post(
        &h,
        "issue_comment",
        "bot-1",
        &serde_json::to_vec(&payload).expect("encode"),
    )
    .await;
    assert_eq!(json["status"], "ignored", "{json}");
    assert!(drain(&h.queue, QueueName::Conversation).await.is_empty());
}

#[tokio::test]
async fn bookkeeping_events_become_jobs() {
    let h = harness(Some("parley"));
    let installation = single_job(
        &h,
        "installation",
        &webhook_example("installation", "created.payload.json"),
    )
    .await;
    let Job::Bookkeeping(job) = installation else {
        panic!("bookkeeping")
    };
    let BookkeepingEvent::Installation {
        installation_id,
        account,
        repositories_added,
        ..
    } = job.event
    else {
        panic!("installation event");
    };
    assert_eq!(installation_id, 957387);
    assert_eq!(account, "Codertocat");
    assert!(repositories_added.contains(&"Codertocat/Hello-World".to_string()));

    let thread = single_job(
        &h,
        "pull_request_review_thread",
        &webhook_example("pull_request_review_thread", "resolved.payload.json"),
    )
    .await;
    let Job::Bookkeeping(job) = thread else {
        panic!("bookkeeping")
    };
    let BookkeepingEvent::ReviewThread {
        resolved,
        comment_ids,
        number,
        ..
    } = job.event
    else {
        panic!("thread event");
    };
    assert!(resolved);
    assert_eq!(number, 2);
    assert!(!comment_ids.is_empty());

    let closed = single_job(
        &h,
        "pull_request",
        &webhook_example("pull_request", "closed.payload.json"),
    )
    .await;
    assert!(
        matches!(
            closed,
            Job::Bookkeeping(ref j) if matches!(j.event, BookkeepingEvent::PullRequestClosed { merged: false, .. })
        ),
        "{closed:?}"
    );

    // The merge queue asks for the gate on its commit for PR #42.
    let source = parley_tests::deliveries::Source::new("octo-org", "hello", 5);
    let queued = single_job(
        &h,
        "merge_group",
        &parley_tests::deliveries::merge_group(&source, 42, "9a9a"),
    )
    .await;
    let Job::Bookkeeping(job) = queued else {
        panic!("bookkeeping")
    };
    assert!(
        matches!(&job.event, BookkeepingEvent::MergeGroup { number: 42, group_head, .. } if group_head == "9a9a"),
        "{:?}",
        job.event
    );
}

#[tokio::test]
async fn redelivery_is_enqueued_once() {
    let h = harness(None);
    let body = serde_json::to_vec(&webhook_example("pull_request", "opened.payload.json"))
        .expect("encode");
    let (s1, j1) = post(&h, "pull_request", "same-delivery", &body).await;
    let (s2, j2) = post(&h, "pull_request", "same-delivery", &body).await;
    assert_eq!((s1, s2), (202, 202));
    assert_eq!(j1["status"], "accepted");
    assert_eq!(j2["status"], "duplicate");
    assert_eq!(drain(&h.queue, QueueName::Review).await.len(), 1);
}

#[tokio::test]
async fn bad_requests_get_their_codes() {
    let h = harness(Some("parley"));
    let body = br#"{"action":"opened"}"#;
    let good = sign(SECRET, body);
    let cases: Vec<(HeaderMap, Vec<u8>, u16, &str)> = vec![
        (
            headers(Some("pull_request"), Some("d"), None),
            body.to_vec(),
            401,
            "missing signature",
        ),
        (
            headers(Some("pull_request"), Some("d"), Some(&sign("wrong", body))),
            body.to_vec(),
            401,
            "wrong secret",
        ),
        (
            headers(Some("pull_request"), Some("d"), Some("sha256=nothex")),
            body.to_vec(),
            401,
            "malformed signature",
        ),
        (
            headers(Some("pull_request"), Some("d"), Some(&good)),
            br#"{"action":"opened""#.to_vec(),
            401,
            "body changed after signing",
        ),
        (
            headers(None, Some("d"), Some(&good)),
            body.to_vec(),
            400,
            "missing event",
        ),
        (
            headers(Some("pull_request"), None, Some(&good)),
            body.to_vec(),
            400,
            "missing delivery",
        ),
    ];
    for (headers, body, status, what) in cases {
        let response = parley_webhook::respond(&h.ingest, &headers, &body).await;
        assert_eq!(
            response.status().as_u16(),
            status,
            "{what}: {}",
            response.body()
        );
    }

    let truncated = br#"{"action":"opened","pull_request":{"#;
    let response = parley_webhook::respond(
        &h.ingest,
        &headers(
            Some("pull_request"),
            Some("t"),
            Some(&sign(SECRET, truncated)),
        ),
        truncated,
    )
    .await;
    assert_eq!(response.status().as_u16(), 400);
    assert!(
        response.body().contains("invalid JSON"),
        "{}",
        response.body()
    );

    // Valid JSON that is not the event it claims to be: 400 with the reason.
    let wrong_shape = br#"{"action":"opened","pull_request":{"number":"seven"}}"#;
    let response = parley_webhook::respond(
        &h.ingest,
        &headers(
            Some("pull_request"),
            Some("w"),
            Some(&sign(SECRET, wrong_shape)),
        ),
        wrong_shape,
    )
    .await;
    assert_eq!(response.status().as_u16(), 400);
    assert!(
        response.body().contains("payload does not match"),
        "{}",
        response.body()
    );

    let huge = vec![b' '; 10 * 1024 * 1024 + 1];
    let response = parley_webhook::respond(
        &h.ingest,
        &headers(Some("pull_request"), Some("h"), Some(&sign(SECRET, &huge))),
        &huge,
    )
    .await;
    assert_eq!(response.status().as_u16(), 413);

    assert!(drain(&h.queue, QueueName::Review).await.is_empty());
}

#[tokio::test]
async fn no_secret_configured_refuses_everything() {
    let h = harness_with(None, None);
    let body = b"{}";
    let response = parley_webhook::respond(
        &h.ingest,
        &headers(Some("ping"), Some("p"), Some(&sign("", body))),
        body,
    )
    .await;
    assert_eq!(response.status().as_u16(), 401);
    assert!(
        response.body().contains("GITHUB_WEBHOOK_SECRET"),
        "{}",
        response.body()
    );
}

#[tokio::test]
async fn signature_vectors_from_github_docs_verify() {
    let path = parley_tests::corpora().join("signature-vector.json");
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json");
    let vectors = doc["vectors"].as_array().expect("vectors");
    assert_eq!(vectors.len(), 5);
    for v in vectors {
        let secret = v["secret"].as_str().expect("secret");
        let payload = hex::decode(v["payload_hex"].as_str().expect("hex")).expect("payload");
        let expected = v["expected_header_X-Hub-Signature-256"]
            .as_str()
            .expect("header");
        assert_eq!(sign(secret, &payload), expected, "{}", v["name"]);
        let secrets = parley_core::webhook::WebhookSecrets::parse(&format!("other,{secret}"));
        assert!(
            secrets.verify(Some(expected), &payload).is_ok(),
            "{}",
            v["name"]
        );
        let mut tampered = payload.clone();
        tampered.push(b' ');
        assert!(
            secrets.verify(Some(expected), &tampered).is_err(),
            "{}",
            v["name"]
        );
    }
}
