//! The GitHub and LLM clients for the workers, built once per process.
//!
//! Secrets given as Secrets Manager ARNs (Lambda) are resolved here, before the clients
//! see them. Missing credentials never stop a process from starting: the local server must
//! run on a fresh machine. Instead, each call on a client without credentials fails with a
//! configuration error that names the variable to set, and the job fails with that line.

use crate::secrets;
use async_trait::async_trait;
use parley_core::ports::llm::{Llm, LlmError, LlmRequest, LlmResponse};
use parley_core::ports::{Embedder, EmbeddingError, Embeddings, GitHub};
use parley_github::{GitHubClient, GitHubConfig};
use parley_llm::LlmConfig;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Wrong prices would make every cost report wrong; refuse to start instead.
    #[error("PARLEY_LLM_PRICES: {0}")]
    Prices(#[from] parley_core::llm::PricingError),
    #[error(transparent)]
    Secret(#[from] secrets::SecretError),
    #[error("GitHub client: {0}")]
    GitHub(#[from] parley_core::ports::GitHubError),
    /// A bad `LLM_MAX_CONCURRENCY` or `LLM_MAX_OUTPUT_TOKENS`: refuse to start rather
    /// than ignore the limit.
    #[error("{0}")]
    Llm(#[from] parley_core::ports::llm::LlmError),
    /// A budget that cannot be read would be a budget silently not enforced.
    #[error(transparent)]
    Budget(#[from] parley_core::budget::BudgetError),
    /// A pass deadline that cannot be read: the operator meant a different one.
    #[error(transparent)]
    PassDeadline(#[from] parley_core::config::PassDeadlineError),
}

/// An environment: `std::env::var` in production, a map in tests.
pub type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The process environment.
pub fn process_env() -> Env {
    Arc::new(|name: &str| std::env::var(name).ok())
}

/// The GitHub App client from `GITHUB_APP_ID`, `GITHUB_PRIVATE_KEY[_FILE]`, `GITHUB_API_URL`.
pub async fn github_from_env(env: &Env) -> Result<Arc<dyn GitHub>, ClientError> {
    let lookup = resolved_env(env, &["GITHUB_PRIVATE_KEY"]).await?;
    let config = GitHubConfig::from_lookup(|name| lookup(name))?;
    if !config.has_credentials() {
        tracing::warn!(
            "GITHUB_APP_ID / GITHUB_PRIVATE_KEY are not set: jobs that need GitHub will fail until they are"
        );
    }
    Ok(Arc::new(GitHubClient::new(config)?))
}

/// The LLM provider from `LLM_PROVIDER`, `LLM_MODEL`, `LLM_BASE_URL`, `LLM_API_KEY`, ….
/// Never fails: a provider that cannot be built becomes one that explains why on each call.
pub async fn llm_from_env(env: &Env) -> Result<Arc<dyn Llm>, ClientError> {
    let lookup = resolved_env(env, &["LLM_API_KEY"]).await?;
    // One limit for the whole process: every job's calls queue in the same line.
    let slots =
        parley_llm::limit::slots_from(lookup(parley_llm::limit::MAX_CONCURRENCY_ENV).as_deref())?;
    let cap = parley_llm::limit::output_cap_from(
        lookup(parley_llm::limit::MAX_OUTPUT_TOKENS_ENV).as_deref(),
    )?;
    let built = match LlmConfig::from_lookup(|name| lookup(name)) {
        Ok(config) => parley_llm::build_limited(config, slots, cap).await,
        Err(err) => Err(err),
    };
    Ok(match built {
        Ok(llm) => llm,
        Err(err) => {
            tracing::warn!(error = %err, "no LLM provider: jobs that need one will fail until it is configured");
            Arc::new(Unconfigured(err.to_string()))
        }
    })
}

/// The embeddings provider from `EMBEDDINGS_PROVIDER`, `EMBEDDINGS_MODEL`,
/// `EMBEDDINGS_BASE_URL`, `EMBEDDINGS_API_KEY`, `EMBEDDINGS_DIMENSIONS`; `None` when none
/// is configured (retrieval is then lexical only). Never fails, like the LLM: settings
/// that cannot be built become an embedder that names the problem on every call, so
/// embedding jobs fail visibly (and dead-letter) while everything else runs.
pub async fn embedder_from_env(env: &Env) -> Result<Option<Arc<dyn Embedder>>, ClientError> {
    let lookup = resolved_env(env, &["EMBEDDINGS_API_KEY"]).await?;
    let built = match parley_embeddings::EmbeddingsConfig::from_lookup(|name| lookup(name)) {
        Ok(config) => parley_embeddings::build(config).await,
        Err(err) => Err(err),
    };
    Ok(match built {
        Ok(embedder) => embedder,
        Err(err) => {
            tracing::error!(error = %err, "embeddings provider cannot be built: embedding jobs will fail until it is fixed; retrieval stays lexical");
            Some(Arc::new(UnconfiguredEmbedder(err.to_string())))
        }
    })
}

/// The embeddings slot when the configured provider cannot be built.
struct UnconfiguredEmbedder(String);

#[async_trait]
impl Embedder for UnconfiguredEmbedder {
    async fn embed(&self, _texts: &[String]) -> Result<Embeddings, EmbeddingError> {
        Err(EmbeddingError::Config(self.0.clone()))
    }

    fn model(&self) -> &str {
        "unconfigured"
    }

    fn dimensions(&self) -> usize {
        0
    }
}

/// An environment lookup in which the named variables, when they hold a Secrets Manager
/// ARN, are replaced by the secret's value.
async fn resolved_env(
    env: &Env,
    secret_names: &[&str],
) -> Result<impl Fn(&str) -> Option<String> + use<>, ClientError> {
    let mut resolved = HashMap::new();
    for name in secret_names {
        if let Some(value) = env(name)
            && secrets::is_secret_arn(&value)
        {
            resolved.insert(name.to_string(), secrets::resolve(value).await?);
        }
    }
    let env = env.clone();
    Ok(move |name: &str| resolved.get(name).cloned().or_else(|| env(name)))
}

/// The LLM slot when no provider is configured: every call says what to set.
struct Unconfigured(String);

#[async_trait]
impl Llm for Unconfigured {
    async fn complete(&self, _request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        Err(LlmError::Config(self.0.clone()))
    }

    fn model(&self) -> &str {
        "unconfigured"
    }
}

/// Every service a worker needs, from the settings, the adapters and the environment.
pub async fn services_from_env(
    env: &Env,
    settings: &crate::Settings,
    adapters: &crate::Adapters,
) -> Result<parley_core::services::Services, ClientError> {
    let github = github_from_env(env).await?;
    let llm = llm_from_env(env).await?;
    let embedder = embedder_from_env(env).await?;
    let prices = prices(env)?;
    let budget = parley_core::budget::BudgetPolicy::from_env_value(
        env(parley_core::budget::ENV).as_deref(),
    )?;
    let deadline = pass_deadline(env)?;
    Ok(parley_core::services::Services {
        store: adapters.store.clone(),
        queue: adapters.queue.clone(),
        github: github.clone(),
        llm,
        prices: Arc::new(prices),
        identity: Arc::new(parley_core::repo::BotIdentity::new(
            settings.app_slug.clone(),
            settings.mention_aliases.clone(),
        )),
        config: Arc::new(
            parley_core::repo::ConfigLoader::new(
                github,
                parley_core::repo::ConfigLoader::DEFAULT_TTL,
            )
            .with_pass_deadline(deadline),
        ),
        budget,
        corpus: adapters.corpus.clone(),
        embedder,
        // Archives cached on local disk (`PARLEY_SNAPSHOT_DIR`): a warm worker answers a
        // PR's threads from the archive its review downloaded.
        code: Some(Arc::new(parley_code::GitHubCode::from_env(|name| {
            env(name)
        }))),
    })
}

/// The review pass deadline this process allows (`PARLEY_PASS_TIMEOUT_SECS`), never
/// more than a Lambda worker can wait when this is one.
pub fn pass_deadline(env: &Env) -> Result<parley_core::config::PassDeadline, ClientError> {
    let on_lambda = env("AWS_LAMBDA_FUNCTION_NAME").is_some();
    Ok(parley_core::config::PassDeadline::from_env_value(
        env(parley_core::config::deadline::ENV).as_deref(),
        on_lambda,
    )?)
}

/// The price table, with `PARLEY_LLM_PRICES` overrides.
pub fn prices(env: &Env) -> Result<parley_core::llm::PriceTable, ClientError> {
    let table = parley_core::llm::PriceTable::builtin();
    Ok(match env(parley_core::llm::PRICES_ENV) {
        Some(json) if !json.trim().is_empty() => table.with_overrides_json(&json)?,
        _ => table,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_core::config::PassDeadline;

    fn env_of(vars: &[(&'static str, &'static str)]) -> Env {
        let vars: HashMap<&str, &str> = vars.iter().copied().collect();
        Arc::new(move |name: &str| vars.get(name).map(|v| v.to_string()))
    }

    #[test]
    fn the_pass_deadline_is_the_operators_but_never_past_a_lambda_worker() {
        let serve = pass_deadline(&env_of(&[("PARLEY_PASS_TIMEOUT_SECS", "900")])).expect("900");
        assert_eq!(serve.max_secs, 900);
        let lambda = pass_deadline(&env_of(&[
            ("PARLEY_PASS_TIMEOUT_SECS", "900"),
            ("AWS_LAMBDA_FUNCTION_NAME", "parley-review-worker"),
        ]))
        .expect("clamped");
        assert_eq!(lambda.max_secs, 240);
        assert_eq!(
            pass_deadline(&env_of(&[])).expect("unset"),
            PassDeadline::LAMBDA
        );
        let err =
            pass_deadline(&env_of(&[("PARLEY_PASS_TIMEOUT_SECS", "soon")])).expect_err("refused");
        assert!(
            err.to_string().contains("PARLEY_PASS_TIMEOUT_SECS"),
            "{err}"
        );
    }
}
