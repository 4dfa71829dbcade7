//! App authentication: the short-lived RS256 JWT that identifies Parley as the GitHub App.
//!
//! The JWT is only used for App-level calls (`GET /app`) and to mint installation tokens;
//! every repository call uses an installation token (see `token_cache`).

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use parley_core::ports::github::GitHubError;
use serde::Serialize;
use time::OffsetDateTime;

/// GitHub rejects a JWT issued "in the future"; backdating `iat` absorbs clock drift
/// between a Lambda host and GitHub.
const ISSUED_AT_BACKDATE_SECS: i64 = 60;

/// GitHub refuses a JWT whose `exp` is more than 10 minutes ahead; stay clearly under it.
const LIFETIME_SECS: i64 = 9 * 60;

/// Signs App JWTs. Holds the parsed key so each call only signs.
pub(crate) struct AppSigner {
    /// The App id (`12345`) or client id (`Iv1.…`). Sent as a string either way: RFC 7519
    /// makes `iss` a string, and GitHub accepts both ids in that form.
    issuer: String,
    key: EncodingKey,
}

#[derive(Serialize)]
struct Claims<'a> {
    iat: i64,
    exp: i64,
    iss: &'a str,
}

impl AppSigner {
    /// Parses the key and signs once, so a malformed or non-RSA key is a configuration
    /// error when the client is built, not a surprise on the first webhook.
    pub(crate) fn new(app_id: &str, private_key_pem: &str) -> Result<Self, GitHubError> {
        select_crypto_provider();
        let key = EncodingKey::from_rsa_pem(private_key_pem.as_bytes()).map_err(|err| {
            GitHubError::Config(format!(
                "GitHub App private key is not a usable RSA PEM: {err}"
            ))
        })?;
        let signer = AppSigner {
            issuer: app_id.trim().to_owned(),
            key,
        };
        signer.jwt(OffsetDateTime::now_utc()).map_err(|err| {
            GitHubError::Config(format!("GitHub App private key cannot sign: {err}"))
        })?;
        Ok(signer)
    }

    /// A JWT valid from a minute before `now` until nine minutes after it.
    pub(crate) fn jwt(&self, now: OffsetDateTime) -> Result<String, GitHubError> {
        let now = now.unix_timestamp();
        let claims = Claims {
            iat: now - ISSUED_AT_BACKDATE_SECS,
            exp: now + LIFETIME_SECS,
            iss: &self.issuer,
        };
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &self.key)
            .map_err(|err| GitHubError::Config(format!("cannot sign the App JWT: {err}")))
    }
}

/// jsonwebtoken picks its crypto backend from crate features and panics on first use when
/// feature unification in the workspace enables two. Installing ours explicitly turns that
/// latent panic into a no-op; a provider someone else installed first is kept. The backend
/// is aws-lc-rs, which the AWS SDK links anyway (RustCrypto's RSA and curves would add
/// their own copy of the same algorithms to every bootstrap).
/// reqwest is built without a TLS crypto provider of its own and takes rustls' process
/// default: aws-lc-rs, as in every other Parley client (see `parley_llm::client_builder`).
pub(crate) fn select_tls_provider() {
    let _already_installed = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

fn select_crypto_provider() {
    let _already_installed = jsonwebtoken::crypto::CryptoProvider::install_default(
        &jsonwebtoken::crypto::aws_lc::DEFAULT_PROVIDER,
    );
}
