//! The embeddings adapters over real HTTP: the OpenAI-compatible client and the Bedrock
//! client (the real AWS SDK, signing and all) against the fake embeddings server on
//! 127.0.0.1, and the static model loaded from files a test writes.

use aws_config::BehaviorVersion;
use aws_sdk_dynamodb::config::{Credentials, Region};
use parley_core::ports::{Embedder, EmbeddingError};
use parley_embeddings::{BedrockEmbedder, EmbeddingsConfig};
use parley_runtime::clients::{Env, embedder_from_env};
use parley_tests::clients::{fast_retries, openai_embedder};
use parley_tests::fake_embeddings::{FakeEmbeddings, Trouble, closed_url};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

const DIMS: usize = 16;
const TEXTS: [&str; 3] = [
    "fn parse_header(input: &str)",
    "SELECT * FROM users WHERE name = '",
    "escape the string",
];

fn texts() -> Vec<String> {
    TEXTS.iter().map(|t| t.to_string()).collect()
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

fn unit(v: Vec<f32>) -> Vec<f32> {
    let n = norm(&v);
    v.into_iter().map(|x| x / n).collect()
}

fn assert_close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-5, "{got:?} vs {want:?}");
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>() / (norm(a) * norm(b))
}

// --- OpenAI-compatible ---------------------------------------------------------------------

#[tokio::test]
async fn openai_vectors_come_back_in_input_order_and_normalised() {
    let fake = FakeEmbeddings::start(DIMS).await;
    let embedder = openai_embedder(&fake, "nomic-embed-text", DIMS, Duration::from_secs(5));
    let got = embedder.embed(&texts()).await.unwrap();

    assert_eq!(got.vectors.len(), 3);
    for (vector, text) in got.vectors.iter().zip(TEXTS) {
        assert!((norm(vector) - 1.0).abs() < 1e-5, "unit length");
        // The fake lists the vectors in reverse; the adapter puts them back by index.
        assert_close(vector, &unit(fake.raw_vector(text)));
    }
    assert_eq!(got.input_tokens, 4 + 7 + 3, "the server's usage count");
    assert_eq!(embedder.model(), "nomic-embed-text");
    assert_eq!(embedder.dimensions(), DIMS);

    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["model"], "nomic-embed-text");
    assert_eq!(requests[0]["input"], serde_json::json!(TEXTS));
    assert_eq!(requests[0]["encoding_format"], "float");
    assert!(
        requests[0].get("dimensions").is_none(),
        "only text-embedding-3 takes `dimensions`"
    );
    assert_eq!(fake.paths(), ["/v1/embeddings"]);
}

#[tokio::test]
async fn openai_asks_text_embedding_3_for_the_configured_size_and_batches_inputs() {
    let fake = FakeEmbeddings::start(1536).await;
    let embedder = openai_embedder(&fake, "text-embedding-3-small", 8, Duration::from_secs(5));
    let many: Vec<String> = (0..150).map(|i| format!("hunk number {i}")).collect();
    let got = embedder.embed(&many).await.unwrap();

    assert_eq!(got.vectors.len(), 150);
    assert_close(
        &got.vectors[149],
        &unit(fake.raw_vector_sized("hunk number 149", 8)),
    );
    let sizes: Vec<usize> = fake
        .requests()
        .iter()
        .map(|r| r["input"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, [64, 64, 22]);
    assert!(fake.requests().iter().all(|r| r["dimensions"] == 8));

    assert!(embedder.embed(&[]).await.unwrap().vectors.is_empty());
    assert_eq!(fake.requests().len(), 3, "nothing to embed, no request");
}

#[tokio::test]
async fn openai_rate_limits_and_server_errors_are_retried() {
    let fake = FakeEmbeddings::start(DIMS).await;
    let embedder = openai_embedder(&fake, "nomic-embed-text", DIMS, Duration::from_secs(5));

    fake.trouble_times(Trouble::Status(429), 1);
    fake.trouble_times(Trouble::Status(503), 1);
    let got = embedder
        .embed(&texts())
        .await
        .expect("third attempt succeeds");
    assert_eq!(got.vectors.len(), 3);
    assert_eq!(fake.requests().len(), 3);

    fake.trouble_always(Trouble::Status(500));
    let err = embedder.embed(&texts()).await.unwrap_err();
    assert!(
        matches!(&err, EmbeddingError::Unavailable(m) if m.contains("500")),
        "{err}"
    );
    assert!(err.is_transient());
    assert_eq!(fake.requests().len(), 3 + 3, "one attempt and two retries");
}

#[tokio::test]
async fn openai_timeout_is_unavailable_and_not_retried() {
    let fake = FakeEmbeddings::start(DIMS).await;
    fake.latency(Duration::from_millis(800));
    let embedder = openai_embedder(&fake, "nomic-embed-text", DIMS, Duration::from_millis(150));
    let err = embedder.embed(&texts()).await.unwrap_err();
    assert!(
        matches!(&err, EmbeddingError::Unavailable(m) if m.contains("did not answer")),
        "{err}"
    );
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn openai_garbage_and_wrong_shapes_are_bad_responses() {
    let fake = FakeEmbeddings::start(DIMS).await;
    let embedder = openai_embedder(&fake, "nomic-embed-text", DIMS, Duration::from_secs(5));
    for trouble in [
        Trouble::Garbage,
        Trouble::MissingVector,
        Trouble::WrongDimensions,
    ] {
        let before = fake.requests().len();
        fake.trouble_times(trouble.clone(), 1);
        let err = embedder.embed(&texts()).await.unwrap_err();
        assert!(
            matches!(err, EmbeddingError::BadResponse(_)),
            "{trouble:?}: {err}"
        );
        assert!(!err.is_transient());
        assert_eq!(
            fake.requests().len(),
            before + 1,
            "{trouble:?} is not retried"
        );
    }
}

#[tokio::test]
async fn openai_refusals_name_the_setting_to_fix() {
    let fake = FakeEmbeddings::start(DIMS).await;
    let embedder = openai_embedder(&fake, "nomic-embed-text", DIMS, Duration::from_secs(5));
    for (status, variable) in [(401, "EMBEDDINGS_API_KEY"), (404, "EMBEDDINGS_BASE_URL")] {
        fake.trouble_times(Trouble::Status(status), 1);
        let err = embedder.embed(&texts()).await.unwrap_err();
        assert!(
            matches!(&err, EmbeddingError::Config(m) if m.contains(variable)),
            "{status}: {err}"
        );
    }
    fake.trouble_times(Trouble::Status(400), 1);
    assert!(matches!(
        embedder.embed(&texts()).await.unwrap_err(),
        EmbeddingError::Config(_)
    ));
}

#[tokio::test]
async fn openai_server_down_is_unavailable() {
    let base = format!("{}/v1", closed_url().await);
    let embedder = parley_embeddings::OpenAiEmbedder::new(
        &base,
        None,
        "nomic-embed-text",
        DIMS,
        Duration::from_secs(2),
        fast_retries(),
    )
    .unwrap();
    let err = embedder.embed(&texts()).await.unwrap_err();
    assert!(matches!(err, EmbeddingError::Unavailable(_)), "{err}");
}

// --- Bedrock (Titan Text Embeddings V2) ----------------------------------------------------

const TITAN: &str = "amazon.titan-embed-text-v2:0";

async fn titan(fake: &FakeEmbeddings, dimensions: usize) -> BedrockEmbedder {
    let sdk_config = aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("AKIDTEST", "secret", None, None, "test"))
        .endpoint_url(&fake.url)
        .load()
        .await;
    BedrockEmbedder::new(
        &sdk_config,
        TITAN,
        dimensions,
        Duration::from_secs(5),
        fast_retries(),
    )
}

#[tokio::test]
async fn titan_embeds_one_text_per_call_in_order() {
    let fake = FakeEmbeddings::start(1024).await;
    let embedder = titan(&fake, 256).await;
    let got = embedder.embed(&texts()).await.unwrap();

    assert_eq!(got.vectors.len(), 3);
    for (vector, text) in got.vectors.iter().zip(TEXTS) {
        assert_eq!(vector.len(), 256);
        assert_close(vector, &unit(fake.raw_vector_sized(text, 256)));
    }
    assert_eq!(got.input_tokens, 4 + 7 + 3, "inputTextTokenCount summed");

    let mut asked: Vec<String> = fake
        .requests()
        .iter()
        .map(|r| {
            assert_eq!(r["dimensions"], 256);
            assert_eq!(r["normalize"], true);
            r["inputText"].as_str().unwrap().to_string()
        })
        .collect();
    asked.sort();
    let mut want = texts();
    want.sort();
    assert_eq!(asked, want);
    assert!(
        fake.paths()
            .iter()
            .all(|p| p == "/model/amazon.titan-embed-text-v2%3A0/invoke"),
        "{:?}",
        fake.paths()
    );
}

#[tokio::test]
async fn titan_throttling_is_retried_and_garbage_is_refused() {
    let fake = FakeEmbeddings::start(512).await;
    let embedder = titan(&fake, 512).await;
    fake.trouble_times(Trouble::Status(429), 1);
    let got = embedder.embed(&texts()[..1]).await.unwrap();
    assert_eq!(got.vectors.len(), 1);
    assert_eq!(fake.requests().len(), 2);

    fake.trouble_always(Trouble::Status(503));
    let err = embedder.embed(&texts()[..1]).await.unwrap_err();
    assert!(matches!(err, EmbeddingError::Unavailable(_)), "{err}");

    for trouble in [Trouble::Garbage, Trouble::WrongDimensions] {
        fake.heal();
        fake.trouble_always(trouble.clone());
        let err = embedder.embed(&texts()[..1]).await.unwrap_err();
        assert!(
            matches!(err, EmbeddingError::BadResponse(_)),
            "{trouble:?}: {err}"
        );
    }

    fake.heal();
    fake.trouble_always(Trouble::Status(400));
    let err = embedder.embed(&texts()[..1]).await.unwrap_err();
    assert!(matches!(err, EmbeddingError::Config(_)), "{err}");
}

// --- static model ----------------------------------------------------------------------------

fn config(vars: &[(&str, &str)]) -> EmbeddingsConfig {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    EmbeddingsConfig::from_lookup(|k| map.get(k).cloned()).expect("config")
}

#[tokio::test]
async fn static_model_loads_from_a_directory_and_embeds_offline() {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("tiny-potion");
    parley_tests::static_model::write(&model_dir, 8);
    let embedder = parley_embeddings::build(config(&[
        ("EMBEDDINGS_PROVIDER", "static"),
        ("EMBEDDINGS_MODEL", model_dir.to_str().unwrap()),
    ]))
    .await
    .unwrap()
    .expect("an embedder");
    assert_eq!(embedder.model(), "static/tiny-potion");
    assert_eq!(embedder.dimensions(), 8);

    let got = embedder
        .embed(&[
            "fn parse header input".to_string(),
            "parse the header".to_string(),
            "sql query user database".to_string(),
        ])
        .await
        .unwrap();
    assert_eq!(got.vectors.len(), 3);
    for vector in &got.vectors {
        assert!((norm(vector) - 1.0).abs() < 1e-5, "{vector:?}");
    }
    let similar = cosine(&got.vectors[0], &got.vectors[1]);
    let unrelated = cosine(&got.vectors[0], &got.vectors[2]);
    assert!(similar > unrelated + 0.2, "{similar} vs {unrelated}");
    assert!(got.input_tokens > 0);
}

#[tokio::test]
async fn static_model_problems_are_config_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-model");
    let err = parley_embeddings::build(config(&[
        ("EMBEDDINGS_PROVIDER", "static"),
        ("EMBEDDINGS_MODEL", missing.to_str().unwrap()),
    ]))
    .await
    .err()
    .expect("refused");
    assert!(
        matches!(&err, EmbeddingError::Config(m) if m.contains("not a directory")),
        "{err}"
    );

    let model_dir = dir.path().join("m");
    parley_tests::static_model::write(&model_dir, 8);
    let err = parley_embeddings::build(config(&[
        ("EMBEDDINGS_PROVIDER", "static"),
        ("EMBEDDINGS_MODEL", model_dir.to_str().unwrap()),
        ("EMBEDDINGS_DIMENSIONS", "16"),
    ]))
    .await
    .err()
    .expect("refused");
    assert!(
        matches!(&err, EmbeddingError::Config(m) if m.contains("8")),
        "{err}"
    );

    std::fs::write(model_dir.join("tokenizer.json"), "{ not a tokenizer").unwrap();
    let err = parley_embeddings::build(config(&[
        ("EMBEDDINGS_PROVIDER", "static"),
        ("EMBEDDINGS_MODEL", model_dir.to_str().unwrap()),
    ]))
    .await
    .err()
    .expect("refused");
    assert!(
        matches!(&err, EmbeddingError::Config(m) if m.contains("cannot load")),
        "{err}"
    );
}

// --- choosing the provider from the environment ----------------------------------------------

fn env(vars: &[(&str, &str)]) -> Env {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Arc::new(move |name: &str| map.get(name).cloned())
}

#[tokio::test]
async fn the_runtime_picks_the_provider_from_the_environment() {
    assert!(embedder_from_env(&env(&[])).await.unwrap().is_none());
    assert!(
        embedder_from_env(&env(&[("EMBEDDINGS_PROVIDER", "none")]))
            .await
            .unwrap()
            .is_none()
    );

    let fake = FakeEmbeddings::start(768).await;
    let base = fake.openai_base();
    let embedder = embedder_from_env(&env(&[
        ("EMBEDDINGS_PROVIDER", "openai"),
        ("EMBEDDINGS_BASE_URL", &base),
        ("EMBEDDINGS_MODEL", "nomic-embed-text"),
    ]))
    .await
    .unwrap()
    .expect("configured");
    assert_eq!(embedder.dimensions(), 768);
    let got = embedder.embed(&texts()).await.unwrap();
    assert_eq!(got.vectors.len(), 3);

    // Settings that cannot work: the process still starts, and every call says why.
    let broken = embedder_from_env(&env(&[
        ("EMBEDDINGS_PROVIDER", "openai"),
        ("EMBEDDINGS_BASE_URL", &base),
    ]))
    .await
    .unwrap()
    .expect("an embedder that explains");
    let err = broken.embed(&texts()).await.unwrap_err();
    assert!(
        matches!(&err, EmbeddingError::Config(m) if m.contains("EMBEDDINGS_MODEL")),
        "{err}"
    );
}
