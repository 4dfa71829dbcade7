//! The client value and how it authenticates each call.

use crate::auth::AppSigner;
use crate::config::{
    ENV_APP_ID, ENV_PRIVATE_KEY, ENV_PRIVATE_KEY_FILE, GitHubConfig, PrivateKeyPem,
};
use crate::endpoint::ApiBase;
use crate::request::{Auth, Call, Reply};
use crate::responses::decode;
use crate::retry::{Replay, RetryPolicy};
use crate::token_cache::{InstallationToken, TokenCache};
use parley_core::ports::github::GitHubError;
use reqwest::Method;
use reqwest::header::{ACCEPT, HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use time::OffsetDateTime;

/// The media type GitHub documents for its REST API.
const MEDIA_TYPE: &str = "application/vnd.github+json";

/// Pinning the API version keeps response shapes stable when GitHub ships a new one.
const API_VERSION: &str = "2022-11-28";

/// A GitHub App client: one per process, shared by every job (it holds the token cache).
pub struct GitHubClient {
    pub(crate) http: reqwest::Client,
    pub(crate) base: ApiBase,
    /// `None` when the process runs without App credentials; every call then fails with
    /// [`GitHubError::Config`].
    signer: Option<AppSigner>,
    /// A person's token (`parley review`), used when there is no App key.
    personal: Option<PrivateKeyPem>,
    tokens: TokenCache,
    pub(crate) retry: RetryPolicy,
}

impl GitHubClient {
    /// Builds the client. Fails only on settings that can never work (an unparsable key or
    /// URL); missing credentials are reported by each call instead, so a local server can
    /// start without them.
    pub fn new(config: GitHubConfig) -> Result<Self, GitHubError> {
        let base = ApiBase::parse(&config.api_url)?;
        let signer = match (&config.app_id, &config.private_key_pem) {
            (Some(app_id), Some(pem)) => Some(AppSigner::new(app_id, pem.expose())?),
            _ => None,
        };
        crate::auth::select_tls_provider();
        let http = reqwest::Client::builder()
            .user_agent(config.user_agent.clone())
            .default_headers(default_headers())
            .timeout(config.request_timeout)
            .connect_timeout(Duration::from_secs(10).min(config.request_timeout))
            .build()
            .map_err(|err| GitHubError::Config(format!("cannot build the HTTP client: {err}")))?;
        Ok(GitHubClient {
            http,
            base,
            signer,
            personal: config.token,
            tokens: TokenCache::default(),
            retry: config.retry,
        })
    }

    /// Whether calls can authenticate. A local server checks this to say, once at startup,
    /// that it will not talk to GitHub.
    pub fn has_credentials(&self) -> bool {
        self.signer.is_some() || self.personal.is_some()
    }

    /// Whether this client acts as a GitHub App (else as a person, or not at all).
    pub fn is_app(&self) -> bool {
        self.signer.is_some()
    }

    /// The secret to put in `Authorization: Bearer …` for `auth`.
    pub(crate) async fn credential(&self, auth: Auth) -> Result<String, GitHubError> {
        if let (None, Some(token), Auth::Installation(_)) = (&self.signer, &self.personal, auth) {
            return Ok(token.expose().to_owned());
        }
        let signer = self.signer()?;
        match auth {
            Auth::App => signer.jwt(OffsetDateTime::now_utc()),
            Auth::Installation(installation_id) => {
                self.tokens
                    .get_or_mint(installation_id, OffsetDateTime::now_utc(), || {
                        self.mint_installation_token(installation_id)
                    })
                    .await
            }
        }
    }

    /// Called after GitHub answered 401 to `token`.
    pub(crate) async fn forget_token(&self, installation_id: u64, token: &str) {
        self.tokens.invalidate(installation_id, token).await;
    }

    fn signer(&self) -> Result<&AppSigner, GitHubError> {
        self.signer.as_ref().ok_or_else(|| {
            GitHubError::Config(format!(
                "GitHub App credentials are not configured: set {ENV_APP_ID} and \
                 {ENV_PRIVATE_KEY} (or {ENV_PRIVATE_KEY_FILE})"
            ))
        })
    }

    /// `POST /app/installations/{id}/access_tokens`, authenticated with the App JWT.
    async fn mint_installation_token(
        &self,
        installation_id: u64,
    ) -> Result<InstallationToken, GitHubError> {
        let installation = installation_id.to_string();
        let call = Call {
            method: Method::POST,
            url: self.base.url(&[
                "app",
                "installations",
                installation.as_str(),
                "access_tokens",
            ])?,
            auth: Auth::App,
            body: None,
            replay: Replay::Safe,
        };
        // Minting happens inside `send` (via `credential`), so the future must be boxed and
        // type-erased to break the cycle in its type.
        let reply = self.send_boxed(call).await?;
        let wire: AccessTokenWire =
            decode(&reply.body, "POST /app/installations/{id}/access_tokens")?;
        tracing::debug!(installation_id, expires_at = %wire.expires_at, "minted installation token");
        Ok(InstallationToken {
            secret: wire.token,
            expires_at: wire.expires_at,
        })
    }

    fn send_boxed(
        &self,
        call: Call,
    ) -> Pin<Box<dyn Future<Output = Result<Reply, GitHubError>> + Send + '_>> {
        Box::pin(async move { self.send(&call).await })
    }
}

/// No `Debug`: the token must never reach a log line.
#[derive(Deserialize)]
struct AccessTokenWire {
    token: String,
    #[serde(with = "time::serde::rfc3339")]
    expires_at: OffsetDateTime,
}

fn default_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(ACCEPT, HeaderValue::from_static(MEDIA_TYPE));
    headers.insert(
        HeaderName::from_static("x-github-api-version"),
        HeaderValue::from_static(API_VERSION),
    );
    headers
}
