//! The webhook's hot path: verify + parse + normalise + dedup claim + enqueue.
//!
//! `cargo bench -p parley-webhook --bench webhook_path`
//!
//! Two payloads from the corpus: the largest one (a `pull_request.labeled`, which is
//! verified, parsed and then ignored) and the largest one that becomes a job
//! (`pull_request.opened`, which also costs the dedup claim and the enqueue). The queue is
//! in memory; the dedup claim goes to an in-memory SQLite store, so the figure includes a
//! real conditional write.
//!
//! `webhook_parts` times the ignored delivery's two passes over its body apart: the
//! HMAC-SHA256 and the UTF-8 check with the one JSON pass.

use async_trait::async_trait;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use http::{HeaderMap, HeaderValue};
use parley_core::ports::{JobQueue, OutgoingMessage, QueueError, Store};
use parley_store::sqlite::SqliteStore;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default)]
struct MemoryQueue(Mutex<Vec<OutgoingMessage>>);

#[async_trait]
impl JobQueue for MemoryQueue {
    async fn send(&self, message: OutgoingMessage) -> Result<(), QueueError> {
        let mut queue = self
            .0
            .lock()
            .map_err(|_| QueueError::Unavailable("poisoned".into()))?;
        if queue.len() > 10_000 {
            queue.clear();
        }
        queue.push(message);
        Ok(())
    }
}

fn example(path: &str) -> Vec<u8> {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/corpora/webhooks")
        .join(path);
    std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

fn sign(secret: &str, body: &[u8]) -> String {
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("hmac key");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_in_memory().expect("store"));
    let queue = Arc::new(MemoryQueue::default());
    let ingest = parley_webhook::ingest(Some("bench-secret"), None, store, queue);
    let deliveries = AtomicU64::new(0);

    let mut group = c.benchmark_group("webhook_path");
    for (name, event, path) in [
        (
            "largest_payload_ignored",
            "pull_request",
            "pull_request/labeled.with-organization.payload.json",
        ),
        (
            "largest_job_enqueued",
            "pull_request",
            "pull_request/opened.with-organization.payload.json",
        ),
    ] {
        let body = example(path);
        let signature = sign("bench-secret", &body);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter(|| async {
                let mut headers = HeaderMap::new();
                headers.insert("x-github-event", HeaderValue::from_static(event));
                let delivery = format!("bench-{}", deliveries.fetch_add(1, Ordering::Relaxed));
                headers.insert(
                    "x-github-delivery",
                    HeaderValue::from_str(&delivery).expect("header"),
                );
                headers.insert(
                    "x-hub-signature-256",
                    HeaderValue::from_str(&signature).expect("header"),
                );
                let response = parley_webhook::respond(&ingest, &headers, &body).await;
                assert_eq!(response.status().as_u16(), 202, "{}", response.body());
            });
        });
    }
    group.finish();
}

/// The ignored delivery's two passes over the body, apart: what the whole path is made of.
fn parts(c: &mut Criterion) {
    use parley_core::webhook::normalise::{NormaliseContext, Normalised, normalise_body};
    use parley_core::webhook::signature::WebhookSecrets;
    let body = example("pull_request/labeled.with-organization.payload.json");
    let signature = sign("bench-secret", &body);
    let secrets = WebhookSecrets::parse("bench-secret");
    let context = NormaliseContext::default();
    let mut group = c.benchmark_group("webhook_parts");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("hmac_sha256_verify", |b| {
        b.iter(|| secrets.verify(Some(&signature), &body).expect("verified"))
    });
    group.bench_function("utf8_and_json_pass", |b| {
        b.iter(|| {
            let normalised = normalise_body("pull_request", "bench", &body, &context);
            assert!(
                matches!(normalised, Normalised::Ignored(_)),
                "{normalised:?}"
            );
        })
    });
    group.finish();
}

criterion_group!(benches, bench, parts);
criterion_main!(benches);
