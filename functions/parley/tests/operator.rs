//! The operator commands against the SQLite queue and store and against SQS and DynamoDB
//! on moto (`AWS_ENDPOINT_URL`; the moto tests fail without it, as everywhere).

use clap::Parser;
use parley_cli::budget::BudgetCommand;
use parley_cli::dlq::DlqCommand;
use parley_cli::replay::{self, ReplayCommand};
use parley_cli::tables;
use parley_core::budget::BudgetPolicy;
use parley_core::ports::{
    Counters, Findings, JobQueue, OutgoingMessage, PollingQueue, QueueName, ReceivedMessage, Store,
};
use parley_queue::sqlite::{QueueSettings, SqliteQueue};
use parley_queue::sqs::{QueueUrls, SqsQueue, create_fifo_queues};
use parley_store::dynamo::{DynamoStore, TableNames};
use parley_store::sqlite::SqliteStore;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const SECRET: &str = "operator-test-secret";

fn moto() -> String {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    assert!(
        !endpoint.is_empty(),
        "AWS_ENDPOINT_URL is not set: start moto (scripts/test.sh or scripts/moto.sh do it)"
    );
    endpoint
}

async fn aws() -> aws_config::SdkConfig {
    moto();
    aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await
}

fn args(words: &str) -> Vec<String> {
    words.split_whitespace().map(str::to_string).collect()
}

fn parse<P: Parser>(program: &str, words: &str) -> P {
    P::try_parse_from(std::iter::once(program.to_string()).chain(args(words)))
        .unwrap_or_else(|err| panic!("{words}: {err}"))
}

async fn output<F, Fut>(f: F) -> (anyhow::Result<()>, String)
where
    F: FnOnce(Vec<u8>) -> Fut,
    Fut: std::future::Future<Output = (anyhow::Result<()>, Vec<u8>)>,
{
    let (result, out) = f(Vec::new()).await;
    (result, String::from_utf8(out).expect("utf-8"))
}

async fn dlq(queue: &dyn PollingQueue, words: &str) -> (anyhow::Result<()>, String) {
    let command: DlqCommand = parse("parley dlq", words);
    output(|mut out| async move {
        let result = parley_cli::dlq::run(&command, queue, &mut out).await;
        (result, out)
    })
    .await
}

fn corpus(event: &str, file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/corpora/webhooks")
        .join(event)
        .join(file)
}

/// A review job as the webhook makes it, in PR `octo-org/hello#42`'s group.
fn review_job(delivery: &str) -> String {
    serde_json::json!({
        "kind": "review", "delivery_id": delivery, "installation_id": 5,
        "repo": { "id": 1, "owner": "octo-org", "name": "hello" }, "number": 42,
        "trigger": "opened", "head_sha": "a1", "base_sha": "b0", "base_ref": "main",
        "before_sha": null, "author": { "login": "alice", "kind": "User" }, "title": "t"
    })
    .to_string()
}

async fn receive(q: &dyn PollingQueue, name: QueueName) -> Vec<ReceivedMessage> {
    for _ in 0..40 {
        let got = q
            .receive(name, 10, Duration::from_secs(30))
            .await
            .expect("receive");
        if !got.is_empty() {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Vec::new()
}

/// Two review jobs (one of them not a job at all) fail their one allowed attempt and are
/// dead-lettered; then the commands list, show and redrive them.
async fn check_dlq_commands(q: Arc<dyn PollingQueue>) {
    let group = "octo-org/hello#42";
    for (dedup, body) in [
        ("d1", review_job("delivery-1")),
        ("d2", "{broken".to_string()),
    ] {
        q.send(OutgoingMessage {
            queue: QueueName::Review,
            group_id: group.into(),
            dedup_id: dedup.into(),
            body,
        })
        .await
        .expect("send");
        let got = receive(q.as_ref(), QueueName::Review).await;
        assert_eq!(got.len(), 1);
        q.nack(QueueName::Review, &got[0].receipt)
            .await
            .expect("nack");
    }
    // The receive after the last attempt moves what is left to the dead letters.
    assert!(
        q.receive(QueueName::Review, 10, Duration::from_secs(30))
            .await
            .expect("receive")
            .is_empty()
    );
    let dead = q.list_dead_letters(QueueName::Review).await.expect("list");
    assert_eq!(dead.len(), 2, "{dead:?}");

    let (result, listed) = dlq(q.as_ref(), "list").await;
    result.expect("list");
    assert!(listed.contains(&dead[0].message_id), "{listed}");
    assert!(listed.contains("review octo-org/hello#42"), "{listed}");
    assert!(listed.contains("delivery delivery-1"), "{listed}");
    assert!(listed.contains("not a job"), "{listed}");
    assert!(listed.contains("2 dead letter(s)"), "{listed}");
    let (result, conversation_only) = dlq(q.as_ref(), "list --queue conversation").await;
    result.expect("list one queue");
    assert!(
        conversation_only.contains("0 dead letter(s)"),
        "{conversation_only}"
    );

    let (result, shown) = dlq(q.as_ref(), &format!("show {}", dead[0].message_id)).await;
    result.expect("show");
    assert!(shown.contains("queue:    review"), "{shown}");
    assert!(shown.contains(&format!("group:    {group}")), "{shown}");
    assert!(
        shown.contains("\"delivery_id\": \"delivery-1\""),
        "pretty body: {shown}"
    );

    let (result, _) = dlq(q.as_ref(), "show no-such-id").await;
    let err = result.expect_err("unknown id");
    assert!(
        err.to_string().contains("no dead letter no-such-id"),
        "{err}"
    );
    let (result, _) = dlq(q.as_ref(), "redrive no-such-id").await;
    assert!(
        result.is_err(),
        "an unknown id is an error, not a silent no-op"
    );

    let (result, said) = dlq(q.as_ref(), &format!("redrive {}", dead[0].message_id)).await;
    result.expect("redrive one");
    assert!(said.contains("redriven"), "{said}");
    let back = receive(q.as_ref(), QueueName::Review).await;
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].body, review_job("delivery-1"));
    assert_eq!(back[0].group_id, group);
    q.ack(QueueName::Review, &back[0].receipt)
        .await
        .expect("ack");

    let (result, said) = dlq(q.as_ref(), "redrive --all").await;
    result.expect("redrive all");
    assert!(said.contains("1 dead letter(s) redriven"), "{said}");
    let back = receive(q.as_ref(), QueueName::Review).await;
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].body, "{broken");
    let (result, listed) = dlq(q.as_ref(), "list").await;
    result.expect("list");
    assert!(listed.contains("0 dead letter(s)"), "{listed}");
}

#[test]
fn dlq_redrive_needs_an_id_or_all_but_not_both() {
    assert!(DlqCommand::try_parse_from(["parley dlq", "redrive"]).is_err());
    assert!(DlqCommand::try_parse_from(["parley dlq", "redrive", "x", "--all"]).is_err());
    assert!(DlqCommand::try_parse_from(["parley dlq", "list", "--queue", "kafka"]).is_err());
}

#[tokio::test]
async fn dlq_commands_on_the_sqlite_queue() {
    let dir = tempfile::tempdir().expect("tempdir");
    let q = SqliteQueue::open(
        dir.path().join("parley.db"),
        QueueSettings {
            max_receive_count: 1,
            ..QueueSettings::default()
        },
    )
    .await
    .expect("queue");
    check_dlq_commands(Arc::new(q)).await;
}

#[tokio::test]
async fn dlq_commands_on_sqs() {
    let config = aws().await;
    let client = aws_sdk_sqs::Client::new(&config);
    let prefix = format!("op{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let urls = create_fifo_queues(&client, &prefix, 1)
        .await
        .expect("queues");
    check_dlq_commands(Arc::new(SqsQueue::new(client, urls))).await;
}

// --- replay --------------------------------------------------------------------------

fn replay_command(words: &str) -> ReplayCommand {
    parse("parley replay", words)
}

fn opened() -> String {
    corpus("pull_request", "opened.payload.json")
        .display()
        .to_string()
}

async fn check_replay_through_the_handler(store: Arc<dyn Store>, queue: Arc<dyn PollingQueue>) {
    let command = replay_command(&format!(
        "{} --event pull_request --delivery op-1",
        opened()
    ));
    let delivery = replay::signed(&command, SECRET).expect("signed");
    let answer =
        replay::through_handler(&delivery, SECRET, None, store.clone(), queue.clone()).await;
    assert_eq!(answer.status, 202, "{answer:?}");
    assert!(answer.body.contains("accepted"), "{answer:?}");
    let again = replay::through_handler(&delivery, SECRET, None, store, queue.clone()).await;
    assert!(again.body.contains("duplicate"), "{again:?}");
    let jobs = receive(queue.as_ref(), QueueName::Review).await;
    assert_eq!(jobs.len(), 1, "enqueued once");
    assert!(
        jobs[0].body.contains("\"delivery_id\":\"op-1\""),
        "{}",
        jobs[0].body
    );
}

#[tokio::test]
async fn replay_enqueues_through_the_webhook_handler_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("parley.db");
    let store = Arc::new(SqliteStore::open(&db).expect("store"));
    let queue = Arc::new(
        SqliteQueue::open(&db, QueueSettings::default())
            .await
            .expect("queue"),
    );
    check_replay_through_the_handler(store, queue).await;
}

#[tokio::test]
async fn replay_enqueues_through_the_webhook_handler_on_dynamodb_and_sqs() {
    let config = aws().await;
    let dynamo = aws_sdk_dynamodb::Client::new(&config);
    let names = TableNames::default().with_suffix(&uuid::Uuid::new_v4().simple().to_string()[..12]);
    parley_store::dynamo::create_tables(&dynamo, &names)
        .await
        .expect("tables");
    let sqs = aws_sdk_sqs::Client::new(&config);
    let prefix = format!("rp{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let urls = create_fifo_queues(&sqs, &prefix, 5).await.expect("queues");
    check_replay_through_the_handler(
        Arc::new(DynamoStore::new(dynamo, names)),
        Arc::new(SqsQueue::new(sqs, urls)),
    )
    .await;
}

#[tokio::test]
async fn replay_posts_a_signed_delivery_to_a_running_webhook() {
    let (running, shutdown, dir) = serve_with(&[]).await;
    let running = running.expect("serve");
    let db = dir.path().join("parley.db");
    let url = format!("http://{}/webhook", running.local_addr);

    let command = replay_command(&format!("{} --event pull_request --url {url}", opened()));
    let answer = replay::post(&url, &replay::signed(&command, SECRET).expect("signed"))
        .await
        .expect("post");
    assert_eq!(answer.status, 202, "{answer:?}");
    replay::report(&answer, &mut Vec::new()).expect("accepted is success");

    let forged = replay::post(
        &url,
        &replay::signed(&command, "not-the-secret").expect("signed"),
    )
    .await
    .expect("post");
    assert_eq!(forged.status, 401, "{forged:?}");
    let err = replay::report(&forged, &mut Vec::new()).expect_err("refused");
    assert!(err.to_string().contains("401"), "{err}");

    shutdown.cancel();
    running.wait().await.expect("stopped");
    let queue = SqliteQueue::open(&db, QueueSettings::default())
        .await
        .expect("queue");
    assert_eq!(receive(&queue, QueueName::Review).await.len(), 1);
}

#[test]
fn replay_refuses_a_payload_that_is_missing_or_not_json() {
    let missing = replay_command("/no/such/payload.json --event push");
    let err = replay::signed(&missing, SECRET).expect_err("missing");
    assert!(
        format!("{err:#}").contains("/no/such/payload.json"),
        "{err:#}"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{not json").expect("write");
    let command = replay_command(&format!("{} --event push", broken.display()));
    let err = replay::signed(&command, SECRET).expect_err("not JSON");
    assert!(format!("{err:#}").contains("is not JSON"), "{err:#}");

    let fine = replay_command(&format!("{} --event pull_request", opened()));
    let err = replay::signed(&fine, " , ").expect_err("no secret");
    assert!(err.to_string().contains("no secret"), "{err}");
    assert!(
        ReplayCommand::try_parse_from(["parley replay", "x.json"]).is_err(),
        "--event is required"
    );
}

// --- tables ----------------------------------------------------------------------------

fn template() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../template.yaml")
}

#[tokio::test]
async fn tables_create_provisions_the_template_in_moto() {
    let config = aws().await;
    let stack = format!("tc{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let created = tables::create(&template(), &stack, &config)
        .await
        .expect("create");
    assert_eq!(created.tables.len(), 6, "{:?}", created.tables);
    assert_eq!(created.queues.len(), 6, "{:?}", created.queues);
    // Twice is fine: an emulator that already has them is left as it is.
    let again = tables::create(&template(), &stack, &config)
        .await
        .expect("again");
    assert_eq!(again.queues, created.queues);

    let vars: std::collections::HashMap<String, String> =
        created.variables.iter().cloned().collect();
    assert_eq!(vars["PARLEY_STORE"], "dynamodb");
    assert_eq!(vars["PARLEY_FINDINGS_TABLE"], format!("{stack}-Findings"));
    let lookup = |name: &str| vars.get(name).cloned();

    // The store and queue adapters work on what was created.
    let store = DynamoStore::new(
        aws_sdk_dynamodb::Client::new(&config),
        TableNames::from_lookup(lookup),
    );
    store
        .add_to_counter("scope", "c", 2)
        .await
        .expect("counter");
    assert_eq!(store.counter("scope", "c").await.expect("counter"), 2);
    assert!(
        store
            .findings_for_pr("o/r", 1)
            .await
            .expect("GSI table")
            .is_empty()
    );
    // The secondary indexes as the template declares them, global and local alike.
    let dynamo = aws_sdk_dynamodb::Client::new(&config);
    let describe = |table: String| {
        let dynamo = dynamo.clone();
        async move {
            dynamo
                .describe_table()
                .table_name(table)
                .send()
                .await
                .expect("describe")
                .table
                .expect("a table")
        }
    };
    let keys = |schema: &[aws_sdk_dynamodb::types::KeySchemaElement]| -> Vec<String> {
        schema
            .iter()
            .map(|k| format!("{}:{}", k.attribute_name(), k.key_type().as_str()))
            .collect()
    };
    let findings = describe(vars["PARLEY_FINDINGS_TABLE"].clone()).await;
    let gsi = &findings.global_secondary_indexes()[0];
    assert_eq!(gsi.index_name(), Some("by_comment"));
    assert_eq!(keys(gsi.key_schema()), ["repo:HASH", "comment_id:RANGE"]);
    let snippets = describe(vars["PARLEY_SNIPPETS_TABLE"].clone()).await;
    let lsi = &snippets.local_secondary_indexes()[0];
    assert_eq!(lsi.index_name(), Some("newest"));
    assert_eq!(keys(lsi.key_schema()), ["pk:HASH", "newest:RANGE"]);

    let urls = QueueUrls::from_lookup(lookup).expect("urls");
    assert!(
        urls.review.ends_with(&format!("{stack}-ReviewQueue.fifo")),
        "{urls:?}"
    );
    let sqs = aws_sdk_sqs::Client::new(&config);
    let redrive = sqs
        .get_queue_attributes()
        .queue_url(&urls.review)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::All)
        .send()
        .await
        .expect("attributes")
        .attributes
        .unwrap_or_default();
    let policy: serde_json::Value =
        serde_json::from_str(&redrive[&aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy])
            .expect("policy is JSON");
    let target = policy["deadLetterTargetArn"].as_str().unwrap_or_default();
    assert!(
        target.ends_with(&format!(":{stack}-ReviewDLQ.fifo")),
        "{policy}"
    );
    // The template's MaxReceiveCount parameter, at its default.
    assert_eq!(policy["maxReceiveCount"], 5, "{policy}");
    assert_eq!(
        redrive[&aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout],
        "1800"
    );
    let queue = SqsQueue::new(sqs, urls);
    queue
        .send(OutgoingMessage {
            queue: QueueName::Conversation,
            group_id: "o/r#1".into(),
            dedup_id: "x".into(),
            body: "hello".into(),
        })
        .await
        .expect("send");
    assert_eq!(
        receive(&queue, QueueName::Conversation).await[0].body,
        "hello"
    );
}

#[tokio::test]
async fn tables_create_names_what_it_cannot_read() {
    let config = aws().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("template.yaml");
    std::fs::write(
        &path,
        "Resources:\n  OddQueue:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: !Join [\"-\", [a, b]]\n",
    )
    .expect("write");
    let err = tables::create(&path, "s", &config)
        .await
        .expect_err("unsupported");
    assert!(err.to_string().contains("OddQueue"), "{err}");

    let err = tables::create(&dir.path().join("missing.yaml"), "s", &config)
        .await
        .expect_err("missing");
    assert!(format!("{err:#}").contains("missing.yaml"), "{err:#}");
}

// --- budget ----------------------------------------------------------------------------

async fn budget(
    store: &dyn Store,
    policy: &BudgetPolicy,
    words: &str,
) -> (anyhow::Result<()>, String) {
    let command: BudgetCommand = parse("parley budget", words);
    output(|mut out| async move {
        let result = parley_cli::budget::run(&command, store, policy, &mut out).await;
        (result, out)
    })
    .await
}

async fn check_budget_commands(store: Arc<dyn Store>) {
    let policy = BudgetPolicy {
        default_monthly_usd: Some(20.0),
    };
    let (result, said) = budget(store.as_ref(), &policy, "show 7").await;
    result.expect("show");
    assert!(
        said.contains("limit $20.00 (PARLEY_MONTHLY_BUDGET_USD)"),
        "{said}"
    );

    let (result, said) = budget(store.as_ref(), &policy, "set 7 5.5 --by ops").await;
    result.expect("set");
    assert!(
        said.contains("limit $5.50 (this installation's own)"),
        "{said}"
    );
    let found = parley_core::budget::override_for(store.as_ref(), 7)
        .await
        .expect("read");
    assert_eq!(found.and_then(|o| o.set_by).as_deref(), Some("ops"));

    let (result, _) = budget(store.as_ref(), &policy, "set 7 -3").await;
    assert!(result.is_err(), "a negative budget is refused");
    let (result, _) = budget(store.as_ref(), &policy, "set 7 lots").await;
    assert!(result.is_err(), "a budget that is not an amount is refused");

    let (result, said) = budget(store.as_ref(), &policy, "clear 7").await;
    result.expect("clear");
    assert!(said.contains("limit $20.00"), "{said}");
}

#[tokio::test]
async fn budget_commands_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(dir.path().join("parley.db")).expect("store");
    check_budget_commands(Arc::new(store)).await;
}

#[tokio::test]
async fn budget_commands_on_dynamodb() {
    let config = aws().await;
    let client = aws_sdk_dynamodb::Client::new(&config);
    let names = TableNames::default().with_suffix(&uuid::Uuid::new_v4().simple().to_string()[..12]);
    parley_store::dynamo::create_tables(&client, &names)
        .await
        .expect("tables");
    check_budget_commands(Arc::new(DynamoStore::new(client, names))).await;
}

/// `parley serve` on a fresh database with `extra` in its environment and no workers.
async fn serve_with(
    extra: &[(&str, &str)],
) -> (
    anyhow::Result<parley_cli::Running>,
    tokio_util::sync::CancellationToken,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut vars: std::collections::HashMap<String, String> = [
        ("GITHUB_WEBHOOK_SECRET", SECRET.to_string()),
        (
            "PARLEY_DB_PATH",
            dir.path().join("parley.db").display().to_string(),
        ),
        ("PARLEY_REDELIVERY_MINUTES", "0".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    vars.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let shutdown = tokio_util::sync::CancellationToken::new();
    let running = parley_cli::start(
        parley_cli::ServeOptions {
            addr: "127.0.0.1:0".parse().expect("addr"),
            env: Arc::new(move |name: &str| vars.get(name).cloned()),
            poller: parley_cli::poller::PollerOptions {
                workers_per_queue: 0,
                ..Default::default()
            },
        },
        shutdown.clone(),
    )
    .await;
    (running, shutdown, dir)
}

#[tokio::test]
async fn serve_hides_a_job_for_as_long_as_a_review_may_take_at_the_operators_deadline() {
    // A slow local model: passes may take 15 minutes, so a job is hidden for two of them
    // and five minutes more; the default 15 minutes would hand it to a second worker.
    let (running, shutdown, _dir) = serve_with(&[("PARLEY_PASS_TIMEOUT_SECS", "900")]).await;
    let running = running.expect("serve");
    assert_eq!(
        running.poller.visibility,
        Duration::from_secs(2 * 900 + 300)
    );
    shutdown.cancel();
    running.wait().await.expect("stopped");

    let (running, shutdown, _dir) = serve_with(&[]).await;
    let running = running.expect("serve");
    assert_eq!(running.poller.visibility, Duration::from_secs(15 * 60));
    shutdown.cancel();
    running.wait().await.expect("stopped");
}

#[tokio::test]
async fn serve_refuses_a_pass_deadline_it_cannot_read() {
    for bad in ["soon", "0", "7200"] {
        let (running, _shutdown, _dir) = serve_with(&[("PARLEY_PASS_TIMEOUT_SECS", bad)]).await;
        let err = running.err().unwrap_or_else(|| panic!("{bad} was taken"));
        assert!(
            format!("{err:#}").contains("PARLEY_PASS_TIMEOUT_SECS"),
            "{bad}: {err:#}"
        );
    }
}
