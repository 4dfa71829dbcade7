//! Parley's GitHub App client: the adapter behind [`parley_core::ports::github::GitHub`].
//!
//! Reading order:
//! 1. [`config`]: what the operator sets (`GITHUB_APP_ID`, `GITHUB_PRIVATE_KEY` /
//!    `GITHUB_PRIVATE_KEY_FILE`, `GITHUB_API_URL`) and the [`RetryPolicy`].
//! 2. `client`: the [`GitHubClient`] value, authenticating as the App (`auth`: RS256 JWT)
//!    or as an installation (`token_cache`: tokens reused until 5 minutes before expiry).
//! 3. `transport`: one logical call — headers, the retry loop (`retry`), the 401 → new
//!    token rule, error mapping (`responses`) and `Link` pagination (`pagination`).
//! 4. `operations`: the REST calls by area, and `graphql` for review threads.
//! 5. `port`: the trait implementation, one line per method.
//!
//! The client is deliberately hand-written rather than generated: Parley uses about twenty
//! endpoints, and each carries a decision (may it be retried? is 404 an error or "absent"?)
//! that a generated client would hide.

mod auth;
mod client;
pub mod config;
mod endpoint;
mod graphql;
mod operations;
mod pagination;
mod port;
mod request;
mod responses;
pub mod retry;
mod token_cache;
mod transport;

pub use client::GitHubClient;
pub use config::{GitHubConfig, PrivateKeyPem};
pub use retry::RetryPolicy;
