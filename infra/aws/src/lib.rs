//! The AWS SDK configuration every AWS adapter (DynamoDB, SQS, Secrets Manager, Bedrock)
//! starts from.
//!
//! On Lambda the execution role's credentials (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`) and the region (`AWS_REGION`) are
//! environment variables, valid for the life of the execution environment, so the
//! functions build the configuration from those alone ([`from_env`]); the SDK's clients
//! bring their own defaults for the rest (HTTP client, sleep, clock). aws-config's full
//! default chain (profiles, SSO, web identity through STS, the instance metadata service)
//! linked about 0.5 MB into each bootstrap; it is for people, so the `parley` CLI, which
//! links it, hands it to [`set_loader`] when it starts, and [`load`] then uses it. A
//! loader set at run time rather than a cargo feature: a feature the CLI turned on would
//! be on in every binary a workspace build makes, the Lambda functions the tests run
//! included, and the functions' own way would go untested. Either way `AWS_ENDPOINT_URL`
//! points every client at an emulator.

pub use aws_smithy_types::timeout::TimeoutConfig;
pub use aws_types::SdkConfig;

use aws_credential_types::Credentials;
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_smithy_runtime_api::client::behavior_version::BehaviorVersion;
use aws_smithy_types::retry::RetryConfig;
use aws_types::region::Region;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;

/// What an adapter sets over the defaults.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// An endpoint other than AWS's (`LLM_BASE_URL` for Bedrock), over `AWS_ENDPOINT_URL`.
    pub endpoint_url: Option<String>,
    pub timeouts: Option<TimeoutConfig>,
}

/// A process's own way to load a configuration (the CLI's: aws-config's default chain).
pub type Loader = fn(Overrides) -> Pin<Box<dyn Future<Output = SdkConfig> + Send>>;

static LOADER: OnceLock<Loader> = OnceLock::new();

/// Load every configuration of this process with `loader` from now on; the first call
/// wins (a process has one way).
pub fn set_loader(loader: Loader) {
    let _ = LOADER.set(loader);
}

/// The configuration for this process: its loader's ([`set_loader`]), else the
/// environment's variables ([`from_env`]).
pub async fn load(overrides: Overrides) -> SdkConfig {
    match LOADER.get() {
        Some(loader) => loader(overrides).await,
        None => from_env(overrides, |name| std::env::var(name).ok()),
    }
}

/// The configuration `var` gives: region, static credentials and endpoint. No
/// credentials is no provider (a call then fails with the SDK's own "no credentials"
/// error, as the default chain's would).
pub fn from_env(overrides: Overrides, var: impl Fn(&str) -> Option<String>) -> SdkConfig {
    let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
    // aws-config's defaults for what the clients would otherwise leave off: standard
    // retries (three attempts, backoff), as on every AWS SDK.
    let mut config = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .retry_config(RetryConfig::standard());
    if let Some(region) = var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")) {
        config = config.region(Region::new(region));
    }
    if let (Some(id), Some(secret)) = (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
        let credentials =
            Credentials::new(id, secret, var("AWS_SESSION_TOKEN"), None, "environment");
        config = config.credentials_provider(SharedCredentialsProvider::new(credentials));
    }
    if let Some(url) = overrides.endpoint_url.or_else(|| var("AWS_ENDPOINT_URL")) {
        config = config.endpoint_url(url);
    }
    if let Some(timeouts) = overrides.timeouts {
        config = config.timeout_config(timeouts);
    }
    if let Some(sleep) = aws_smithy_async::rt::sleep::default_async_sleep() {
        config = config.sleep_impl(sleep);
    }
    config.build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_credential_types::provider::ProvideCredentials;

    #[tokio::test]
    async fn the_environment_gives_region_credentials_and_endpoint() {
        let env = |name: &str| {
            match name {
                "AWS_REGION" => Some("eu-west-1"),
                "AWS_ACCESS_KEY_ID" => Some("AKIDEXAMPLE"),
                "AWS_SECRET_ACCESS_KEY" => Some("secret"),
                "AWS_SESSION_TOKEN" => Some("token"),
                "AWS_ENDPOINT_URL" => Some("http://127.0.0.1:5000"),
                _ => None,
            }
            .map(String::from)
        };
        let config = from_env(Overrides::default(), env);
        assert_eq!(config.region().map(|r| r.as_ref()), Some("eu-west-1"));
        assert_eq!(config.endpoint_url(), Some("http://127.0.0.1:5000"));
        assert_eq!(config.retry_config(), Some(&RetryConfig::standard()));
        let credentials = config
            .credentials_provider()
            .expect("a provider")
            .provide_credentials()
            .await
            .expect("credentials");
        assert_eq!(credentials.access_key_id(), "AKIDEXAMPLE");
        assert_eq!(credentials.session_token(), Some("token"));
        // An adapter's endpoint wins; the older region variable is read too.
        let other = from_env(
            Overrides {
                endpoint_url: Some("http://bedrock.local".into()),
                timeouts: None,
            },
            |name| (name == "AWS_DEFAULT_REGION").then(|| "us-east-1".to_string()),
        );
        assert_eq!(other.endpoint_url(), Some("http://bedrock.local"));
        assert_eq!(other.region().map(|r| r.as_ref()), Some("us-east-1"));
        assert!(other.credentials_provider().is_none());
    }
}
