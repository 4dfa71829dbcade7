//! Real clients wired to the fakes, built the way the Lambda and `parley serve` build
//! them, so an end-to-end test exercises the production HTTP code.

use crate::fake_github::FakeGitHub;
use crate::fake_llm::FakeLlm;
use parley_core::llm::PriceTable;
use parley_core::ports::llm::Llm;
use parley_core::ports::{CorpusStore, Embedder, GitHub, JobQueue, Store};
use parley_core::repo::{BotIdentity, ConfigLoader};
use parley_core::services::Services;
use parley_github::{GitHubClient, GitHubConfig};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The model id the fake LLM is asked for.
pub const MODEL: &str = "claude-sonnet-4-5";

/// A GitHub App client against the fake, with fast retries.
pub fn github_client(fake: &FakeGitHub) -> GitHubClient {
    github_client_with_timeout(fake, Duration::from_secs(10))
}

/// [`github_client`] giving up on each attempt after `request_timeout`, for tests of
/// GitHub answering too late.
pub fn github_client_with_timeout(fake: &FakeGitHub, request_timeout: Duration) -> GitHubClient {
    GitHubClient::new(GitHubConfig {
        api_url: fake.url.clone(),
        retry: parley_github::RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(20),
            max_elapsed: Duration::from_secs(5),
            rate_limit_budget: Duration::from_secs(2),
        },
        request_timeout,
        ..GitHubConfig::new("12345", app_key())
    })
    .expect("github client")
}

/// An Anthropic client against the fake LLM, with one fast retry.
pub fn anthropic_llm(fake: &FakeLlm) -> Arc<dyn Llm> {
    anthropic_llm_with_timeout(fake, Duration::from_secs(5))
}

/// [`anthropic_llm`] giving up on each attempt after `timeout`.
pub fn anthropic_llm_with_timeout(fake: &FakeLlm, timeout: Duration) -> Arc<dyn Llm> {
    Arc::new(
        parley_llm::AnthropicLlm::new(
            &fake.url,
            "test-key",
            MODEL,
            timeout,
            parley_llm::RetryPolicy {
                max_retries: 1,
                base_delay: Duration::from_millis(5),
                max_delay: Duration::from_millis(20),
            },
        )
        .expect("anthropic client"),
    )
}

/// Every service a worker needs, on the fakes and the given store, queue, corpus store
/// (usually the same adapter as `store`) and embedder. Most tests take theirs from a
/// [`Rig`](crate::rig::Rig).
pub fn services_with_retrieval(
    github: &FakeGitHub,
    llm: &FakeLlm,
    store: Arc<dyn Store>,
    queue: Arc<dyn JobQueue>,
    corpus: Arc<dyn CorpusStore>,
    embedder: Option<Arc<dyn Embedder>>,
) -> Services {
    let github: Arc<dyn GitHub> = Arc::new(github_client(github));
    Services {
        store,
        queue,
        github: github.clone(),
        llm: anthropic_llm(llm),
        prices: Arc::new(PriceTable::builtin()),
        identity: Arc::new(BotIdentity::new(None, Vec::new())),
        config: Arc::new(ConfigLoader::new(github, ConfigLoader::DEFAULT_TTL)),
        budget: parley_core::budget::BudgetPolicy::default(),
        corpus,
        embedder,
        code: Some(Arc::new(parley_code::GitHubCode::default())),
    }
}

/// An OpenAI-compatible embeddings client against the fake, with fast retries.
pub fn openai_embedder(
    fake: &crate::fake_embeddings::FakeEmbeddings,
    model: &str,
    dimensions: usize,
    timeout: Duration,
) -> parley_embeddings::OpenAiEmbedder {
    parley_embeddings::OpenAiEmbedder::new(
        &fake.openai_base(),
        Some("test-key".into()),
        model,
        dimensions,
        timeout,
        fast_retries(),
    )
    .expect("embeddings client")
}

/// An OpenAI-compatible embeddings client for a port nothing listens on (no key, as for a
/// local server): every call fails with a network error, after the fast retries.
pub async fn unreachable_embedder(
    model: &str,
    dimensions: usize,
) -> parley_embeddings::OpenAiEmbedder {
    parley_embeddings::OpenAiEmbedder::new(
        &format!("{}/v1", crate::fake_embeddings::closed_url().await),
        None,
        model,
        dimensions,
        Duration::from_secs(2),
        fast_retries(),
    )
    .expect("embeddings client")
}

/// Retries as in production, but with millisecond waits.
pub fn fast_retries() -> parley_llm::RetryPolicy {
    parley_llm::RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(50),
    }
}

/// A 2048-bit App key, generated once and shared with other test processes through a
/// file in the target dir (nextest runs each test in its own process, and generating a
/// key in a debug build takes seconds). The public half is written beside it for tests
/// that verify the JWTs the fake receives.
pub fn app_key() -> String {
    static KEY: OnceLock<String> = OnceLock::new();
    KEY.get_or_init(|| {
        use rsa::pkcs1::{EncodeRsaPrivateKey, EncodeRsaPublicKey, LineEnding};
        let dir =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/tmp/parley-github-test-key");
        let private_path = dir.join("app.pem");
        if let Ok(pem) = std::fs::read_to_string(&private_path) {
            return pem;
        }
        let private = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).expect("rsa key");
        let private_pem = private
            .to_pkcs1_pem(LineEnding::LF)
            .expect("pem")
            .to_string();
        let public_pem = private
            .to_public_key()
            .to_pkcs1_pem(LineEnding::LF)
            .expect("pem");
        std::fs::create_dir_all(&dir).expect("key dir");
        let unique = format!("{}-{:?}", std::process::id(), std::thread::current().id());
        // Public first: a reader that finds app.pem can rely on app.pub.pem being there.
        for (name, text) in [("app.pub.pem", &public_pem), ("app.pem", &private_pem)] {
            let temp = dir.join(format!("{unique}.tmp"));
            std::fs::write(&temp, text).expect("write key");
            std::fs::rename(&temp, dir.join(name)).expect("place key");
        }
        private_pem
    })
    .clone()
}
