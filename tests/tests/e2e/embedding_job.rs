//! The embedding job on both stores, with the OpenAI-compatible client against
//! the fake embeddings server over real HTTP: documents gain vectors, a second run embeds
//! nothing, and a provider that is down or answers garbage fails the job (the queue
//! retries it) without storing anything.

use parley_core::config::RetrievalConfig;
use parley_core::embedding::{BATCH_SIZE, EmbedReport, EmbeddingHandler, enqueue_for, usage};
use parley_core::job::{EmbedJob, Job};
use parley_core::ports::{
    Corpus, CorpusStore, Document, Embedder, JobError, JobHandler, JobQueue, PollingQueue,
    QuantizedVector, QueueName,
};
use parley_core::services::Services;
use parley_queue::sqlite::{QueueSettings, SqliteQueue};
use parley_tests::clients::{openai_embedder, unreachable_embedder};
use parley_tests::fake_embeddings::{FakeEmbeddings, Trouble};
use parley_tests::rig::{Fakes, Rig};
use parley_tests::stores::Backend;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use time::OffsetDateTime;

const REPO: &str = "octo-org/embed";
const MODEL: &str = "nomic-embed-text";
const DIMS: usize = 32;

/// A [`Rig`] and the fake embeddings server. Derefs to the rig.
struct Harness {
    fake: FakeEmbeddings,
    rig: Rig,
}

impl std::ops::Deref for Harness {
    type Target = Rig;

    fn deref(&self) -> &Rig {
        &self.rig
    }
}

impl Harness {
    async fn start(backend: Backend) -> Self {
        let (rig, fake) = tokio::join!(Rig::start(backend), FakeEmbeddings::start(DIMS));
        Harness { fake, rig }
    }

    fn services(&self, embedder: Option<Arc<dyn Embedder>>) -> Services {
        self.rig.services_with(embedder)
    }

    fn handler(&self) -> EmbeddingHandler {
        let embedder = openai_embedder(&self.fake, MODEL, DIMS, Duration::from_secs(5));
        EmbeddingHandler::new(self.services(Some(Arc::new(embedder))))
    }

    /// A handler whose provider is down (nothing listens at its URL).
    async fn handler_for_a_server_that_is_down(&self) -> EmbeddingHandler {
        let embedder = unreachable_embedder(MODEL, DIMS).await;
        EmbeddingHandler::new(self.services(Some(Arc::new(embedder))))
    }

    async fn store_documents(&self, keys: &[(Corpus, &str)]) {
        for (i, (corpus, key)) in keys.iter().enumerate() {
            let doc = document(*corpus, key, &text_of(key), i as i64);
            self.corpus.upsert_document(&doc).await.expect("upsert");
        }
    }

    async fn vector(&self, corpus: Corpus, key: &str) -> Option<QuantizedVector> {
        self.corpus
            .document(REPO, corpus, key)
            .await
            .expect("read")
            .expect("document exists")
            .vector
    }
}

fn text_of(key: &str) -> String {
    format!("fn {key}(input: &str) parses the {key} header")
}

fn document(corpus: Corpus, key: &str, text: &str, seconds: i64) -> Document {
    let at = OffsetDateTime::UNIX_EPOCH
        + time::Duration::days(20_000)
        + time::Duration::seconds(seconds);
    Document {
        path: Some("src/lib.rs".into()),
        language: Some("rust".into()),
        ..Document::new(REPO, corpus, key, text, at)
    }
}

fn job(keys: &[(Corpus, &str)]) -> EmbedJob {
    let mut by_corpus: BTreeMap<Corpus, Vec<String>> = BTreeMap::new();
    for (corpus, key) in keys {
        by_corpus
            .entry(*corpus)
            .or_default()
            .push((*key).to_string());
    }
    EmbedJob {
        delivery_id: "embed-test".into(),
        repo: REPO.into(),
        keys: by_corpus,
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>() / (norm(a) * norm(b))
}

parley_tests::on_both_stores!(
    with Harness::start;
    documents_gain_vectors_and_usage_is_counted,
    a_second_run_embeds_nothing_new,
    a_server_that_is_down_fails_the_job_and_changes_nothing,
    garbage_fails_the_job_and_stores_nothing,
    a_failure_half_way_keeps_the_batches_already_stored,
    another_model_means_embedding_again,
);

const DOCS: [(Corpus, &str); 3] = [
    (Corpus::Code, "aa01"),
    (Corpus::Code, "aa02"),
    (Corpus::Finding, "f_1"),
];

async fn documents_gain_vectors_and_usage_is_counted(h: Harness) {
    h.store_documents(&DOCS).await;
    let mut keys = DOCS.to_vec();
    keys.push((Corpus::Code, "never-stored"));

    let report = h.handler().embed(&job(&keys)).await.expect("job succeeds");
    assert_eq!(
        report,
        EmbedReport {
            embedded: 3,
            skipped: 0,
            missing: 1
        }
    );
    for (corpus, key) in DOCS {
        let vector = h.vector(corpus, key).await.expect("a vector");
        assert_eq!(vector.model, MODEL);
        assert_eq!(vector.dimensions(), DIMS);
        let want = h.fake.raw_vector(&text_of(key));
        let similarity = cosine(&vector.to_f32(), &want);
        assert!(similarity > 0.99, "{key}: {similarity}");
    }
    assert_eq!(h.fake.texts_asked(), 3);

    let spent = usage::spent_this_month(h.store.as_ref(), REPO)
        .await
        .unwrap();
    assert_eq!(spent.calls, 1);
    let words: u64 = DOCS
        .iter()
        .map(|(_, k)| text_of(k).split_whitespace().count() as u64)
        .sum();
    assert_eq!(spent.input_tokens, words);
    assert_eq!(spent.cost_micro_usd, 0, "a local model has no price");
}

async fn a_second_run_embeds_nothing_new(h: Harness) {
    h.store_documents(&DOCS).await;
    let handler = h.handler();
    handler.embed(&job(&DOCS)).await.unwrap();
    let asked = h.fake.requests().len();
    let first: Vec<_> = {
        let mut v = Vec::new();
        for (corpus, key) in DOCS {
            v.push(h.vector(corpus, key).await);
        }
        v
    };

    // Through the JobHandler door this time, as the worker calls it.
    handler
        .handle(Job::Embed(job(&DOCS)))
        .await
        .expect("second run");
    let report = handler.embed(&job(&DOCS)).await.unwrap();
    assert_eq!(report.embedded, 0);
    assert_eq!(report.skipped, 3);
    assert_eq!(h.fake.requests().len(), asked, "no further embedding call");
    for ((corpus, key), before) in DOCS.iter().zip(first) {
        assert_eq!(h.vector(*corpus, key).await, before);
    }
}

async fn a_server_that_is_down_fails_the_job_and_changes_nothing(h: Harness) {
    h.store_documents(&DOCS).await;
    let before: Vec<Document> = h.corpus.documents(REPO, Corpus::Code, 10).await.unwrap();

    let handler = h.handler_for_a_server_that_is_down().await;
    let err = handler.handle(Job::Embed(job(&DOCS))).await.unwrap_err();
    assert!(
        matches!(&err, JobError::Transient(m) if m.contains("embedding")),
        "{err}"
    );

    assert_eq!(
        h.corpus.documents(REPO, Corpus::Code, 10).await.unwrap(),
        before
    );
    assert_eq!(h.vector(Corpus::Finding, "f_1").await, None);
    let spent = usage::spent_this_month(h.store.as_ref(), REPO)
        .await
        .unwrap();
    assert_eq!(spent.calls, 0, "nothing was spent");

    // The queue's retry, once the server is back, does the work.
    h.handler()
        .embed(&job(&DOCS))
        .await
        .expect("retry succeeds");
    assert!(h.vector(Corpus::Code, "aa01").await.is_some());
}

async fn garbage_fails_the_job_and_stores_nothing(h: Harness) {
    h.store_documents(&DOCS).await;
    for trouble in [
        Trouble::Garbage,
        Trouble::WrongDimensions,
        Trouble::MissingVector,
    ] {
        h.fake.trouble_always(trouble.clone());
        let err = h
            .handler()
            .handle(Job::Embed(job(&DOCS)))
            .await
            .unwrap_err();
        assert!(matches!(err, JobError::Permanent(_)), "{trouble:?}: {err}");
        for (corpus, key) in DOCS {
            assert_eq!(h.vector(corpus, key).await, None, "{trouble:?}");
        }
    }
    h.fake.trouble_always(Trouble::Status(503));
    let err = h
        .handler()
        .handle(Job::Embed(job(&DOCS)))
        .await
        .unwrap_err();
    assert!(matches!(err, JobError::Transient(_)), "{err}");
    for (corpus, key) in DOCS {
        assert_eq!(h.vector(corpus, key).await, None);
    }
}

async fn a_failure_half_way_keeps_the_batches_already_stored(h: Harness) {
    let names: Vec<String> = (0..BATCH_SIZE + 8).map(|i| format!("k{i:03}")).collect();
    let keys: Vec<(Corpus, &str)> = names.iter().map(|n| (Corpus::Code, n.as_str())).collect();
    h.store_documents(&keys).await;

    // The first batch goes through; every request after it fails.
    let handler = h.handler();
    let first_batch_then_down = {
        let fake = h.fake.clone();
        tokio::spawn(async move {
            while fake.requests().is_empty() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            fake.trouble_always(Trouble::Status(500));
        })
    };
    h.fake.latency(Duration::from_millis(50));
    let err = handler.embed(&job(&keys)).await.unwrap_err();
    first_batch_then_down.await.unwrap();
    assert!(matches!(err, JobError::Transient(_)), "{err}");

    let mut with_vectors = 0;
    for (corpus, key) in &keys {
        with_vectors += usize::from(h.vector(*corpus, key).await.is_some());
    }
    assert_eq!(with_vectors, BATCH_SIZE, "the first batch was stored");

    h.fake.heal();
    h.fake.latency(Duration::ZERO);
    let asked = h.fake.texts_asked();
    let report = handler.embed(&job(&keys)).await.unwrap();
    assert_eq!(report.embedded, 8);
    assert_eq!(report.skipped, BATCH_SIZE);
    assert_eq!(h.fake.texts_asked(), asked + 8, "only the rest is embedded");
}

async fn another_model_means_embedding_again(h: Harness) {
    h.store_documents(&DOCS[..1]).await;
    let (corpus, key) = DOCS[0];
    let old = QuantizedVector::quantize("some-other-model", &[1.0; DIMS]);
    h.corpus.set_vector(REPO, corpus, key, &old).await.unwrap();
    let report = h.handler().embed(&job(&DOCS[..1])).await.unwrap();
    assert_eq!(report.embedded, 1);
    assert_eq!(h.vector(corpus, key).await.unwrap().model, MODEL);
}

// --- enqueueing ------------------------------------------------------------------------------

#[tokio::test]
async fn enqueue_puts_one_job_on_the_embedding_queue_and_respects_the_settings() {
    let h = Harness::start(Backend::Sqlite).await;
    let embedder: Arc<dyn Embedder> = Arc::new(openai_embedder(
        &h.fake,
        MODEL,
        DIMS,
        Duration::from_secs(5),
    ));
    let services = h.services(Some(embedder));
    let keys: BTreeMap<Corpus, Vec<String>> = [
        (Corpus::Code, vec!["aa01".to_string(), "aa02".to_string()]),
        (Corpus::Finding, vec!["f_1".to_string()]),
    ]
    .into_iter()
    .collect();

    let sent = enqueue_for(&services, &RetrievalConfig::default(), REPO, keys.clone()).await;
    assert_eq!(sent, 1);
    // A retried publish enqueues the same keys: the queue's dedup drops it.
    enqueue_for(&services, &RetrievalConfig::default(), REPO, keys.clone()).await;
    let got = h
        .queue
        .receive(QueueName::Embedding, 10, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].group_id, REPO);
    let Job::Embed(job) = serde_json::from_str::<Job>(&got[0].body).unwrap() else {
        panic!("not an embed job: {}", got[0].body);
    };
    assert_eq!(job.keys, keys);
    assert!(
        h.queue
            .receive(QueueName::Review, 10, Duration::from_secs(30))
            .await
            .unwrap()
            .is_empty()
    );

    let off = RetrievalConfig {
        enabled: false,
        ..RetrievalConfig::default()
    };
    assert_eq!(
        enqueue_for(&services, &off, "octo-org/other", keys.clone()).await,
        0
    );
    let no_provider = h.services(None);
    assert_eq!(
        enqueue_for(
            &no_provider,
            &RetrievalConfig::default(),
            "octo-org/other",
            keys
        )
        .await,
        0
    );
}

#[tokio::test]
async fn enqueue_fails_open_when_the_queue_is_missing() {
    let h = Harness::start(Backend::Sqlite).await;
    // SQS without PARLEY_EMBEDDING_QUEUE_URL: sending is refused before any network call.
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
        .load()
        .await;
    let sqs = parley_queue::sqs::SqsQueue::new(
        aws_sdk_sqs::Client::new(&config),
        parley_queue::sqs::QueueUrls {
            conversation: "http://127.0.0.1:9/c.fifo".into(),
            review: "http://127.0.0.1:9/r.fifo".into(),
            embedding: None,
            conversation_dlq: None,
            review_dlq: None,
            embedding_dlq: None,
        },
    );
    let embedder: Arc<dyn Embedder> = Arc::new(openai_embedder(
        &h.fake,
        MODEL,
        DIMS,
        Duration::from_secs(5),
    ));
    let mut services = h.services(Some(embedder));
    services.queue = Arc::new(sqs) as Arc<dyn JobQueue>;
    let keys: BTreeMap<Corpus, Vec<String>> = [(Corpus::Code, vec!["aa01".to_string()])]
        .into_iter()
        .collect();
    assert_eq!(
        enqueue_for(&services, &RetrievalConfig::default(), REPO, keys).await,
        0,
        "logged, not raised"
    );
}

// --- parley serve ------------------------------------------------------------------------------

/// `parley serve` polls the embedding queue and builds the embedder from the same
/// variables an operator sets: here the static model from local files, as a laptop
/// would run it, with no service at all.
#[tokio::test]
async fn parley_serve_embeds_what_lands_on_the_embedding_queue() {
    use std::collections::HashMap;

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("parley.db");
    let model_dir = dir.path().join("potion-tiny");
    parley_tests::static_model::write(&model_dir, 8);
    let fakes = Fakes::start().await;
    let mut vars: HashMap<String, String> = fakes.env(&db, "s").into_iter().collect();
    vars.insert("EMBEDDINGS_PROVIDER".into(), "static".into());
    vars.insert("EMBEDDINGS_MODEL".into(), model_dir.display().to_string());
    let env: parley_runtime::clients::Env = Arc::new(move |k: &str| vars.get(k).cloned());

    // A document reviewed earlier, and its embedding job waiting in the queue.
    let store = parley_store::sqlite::SqliteStore::open(&db).unwrap();
    let doc = document(Corpus::Code, "abc123", "fn parse header input", 0);
    store.upsert_document(&doc).await.unwrap();
    let queue = SqliteQueue::open(&db, QueueSettings::default())
        .await
        .unwrap();
    let job = Job::Embed(job(&[(Corpus::Code, "abc123")]));
    queue
        .send(parley_core::ports::OutgoingMessage {
            queue: QueueName::Embedding,
            group_id: job.group_id(),
            dedup_id: job.delivery_id().to_string(),
            body: serde_json::to_string(&job).unwrap(),
        })
        .await
        .unwrap();

    let (running, shutdown) = parley_tests::serve_process::in_process(env).await;

    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let vector = loop {
        let stored = store
            .document(REPO, Corpus::Code, "abc123")
            .await
            .unwrap()
            .unwrap();
        if let Some(vector) = stored.vector {
            break vector;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the embedding job was not run"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(vector.model, "static/potion-tiny");
    assert_eq!(vector.dimensions(), 8);
    assert!(
        queue
            .dead_letters(QueueName::Embedding)
            .await
            .unwrap()
            .is_empty()
    );

    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(10), running.wait())
        .await
        .expect("drained in time")
        .expect("clean shutdown");
}

// --- the review worker Lambda: two event sources, one handler ---------------------------------

/// Records the jobs the review side is given.
struct ReviewSide(std::sync::Mutex<Vec<String>>);

#[async_trait::async_trait]
impl JobHandler for ReviewSide {
    async fn handle(&self, job: Job) -> Result<(), JobError> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(job.delivery_id().to_string());
        Ok(())
    }
}

/// An SQS event from the embedding queue's event source, as Lambda delivers it.
fn embedding_event(message_id: &str, job: &Job) -> serde_json::Value {
    serde_json::json!({"Records": [{
        "messageId": message_id,
        "body": serde_json::to_string(job).unwrap(),
        "attributes": {"MessageGroupId": job.group_id()},
        "messageAttributes": {}
    }]})
}

fn failed_ids(response: serde_json::Value) -> Vec<String> {
    response["batchItemFailures"]
        .as_array()
        .map(|failures| {
            failures
                .iter()
                .map(|f| f["itemIdentifier"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn the_review_worker_routes_embedding_jobs_and_reports_their_failures() {
    use parley_core::embedding::WithEmbedding;

    let h = Harness::start(Backend::Sqlite).await;
    h.store_documents(&DOCS).await;
    let review_side = Arc::new(ReviewSide(Default::default()));
    let routed = WithEmbedding::new(ForwardTo(review_side.clone()), h.handler());

    // An embedding batch: embedded, nothing reported failed, the review side not involved.
    let embed = Job::Embed(job(&DOCS));
    let response = parley_runtime::sqs_batch::respond(
        serde_json::from_value(embedding_event("m-1", &embed)).unwrap(),
        &routed,
        5,
    )
    .await
    .unwrap();
    assert!(failed_ids(serde_json::to_value(response).unwrap()).is_empty());
    assert!(h.vector(Corpus::Code, "aa01").await.is_some());
    assert!(review_side.0.lock().unwrap().is_empty());

    // Any other job goes to the review side.
    let other: Job = serde_json::from_value(serde_json::json!({
        "kind": "bookkeeping", "delivery_id": "d-9", "installation_id": 1,
        "event": {"event": "pull_request_closed", "repo": {"id": 1, "owner": "o", "name": "r"},
                  "number": 3, "merged": true}
    }))
    .unwrap();
    routed.handle(other).await.unwrap();
    assert_eq!(*review_side.0.lock().unwrap(), ["d-9"]);

    // The provider down: the message is reported failed, so SQS retries it.
    let down = WithEmbedding::new(
        ForwardTo(review_side.clone()),
        h.handler_for_a_server_that_is_down().await,
    );
    let fresh = Job::Embed(job(&[(Corpus::Code, "not-yet")]));
    h.store_documents(&[(Corpus::Code, "not-yet")]).await;
    let response = parley_runtime::sqs_batch::respond(
        serde_json::from_value(embedding_event("m-2", &fresh)).unwrap(),
        &down,
        5,
    )
    .await
    .unwrap();
    assert_eq!(failed_ids(serde_json::to_value(response).unwrap()), ["m-2"]);
    assert_eq!(h.vector(Corpus::Code, "not-yet").await, None);
}

/// A `JobHandler` that hands every job to a shared one.
struct ForwardTo(Arc<ReviewSide>);

#[async_trait::async_trait]
impl JobHandler for ForwardTo {
    async fn handle(&self, job: Job) -> Result<(), JobError> {
        self.0.handle(job).await
    }
}
