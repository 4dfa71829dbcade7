//! Installation access tokens, cached per installation.
//!
//! A token lives an hour; minting one costs a round trip and counts against the App's rate
//! limit, so a warm Lambda reuses it until five minutes before it expires (the margin
//! covers clock drift and a call that starts just before expiry). One async lock per
//! installation makes concurrent calls for the same installation share a single mint, while
//! different installations never wait on each other. A mint that fails fails the calls
//! queued behind it too: each minting again in turn would make a hanging token endpoint
//! cost one timeout per concurrent call.

use parley_core::ports::github::GitHubError;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use time::{Duration, OffsetDateTime};

/// Tokens expiring sooner than this are replaced before use.
pub(crate) const REFRESH_MARGIN: Duration = Duration::minutes(5);

#[derive(Clone)]
pub(crate) struct InstallationToken {
    pub(crate) secret: String,
    pub(crate) expires_at: OffsetDateTime,
}

impl InstallationToken {
    fn usable_at(&self, now: OffsetDateTime) -> bool {
        now + REFRESH_MARGIN < self.expires_at
    }
}

impl fmt::Debug for InstallationToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InstallationToken")
            .field("secret", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

#[derive(Default)]
struct SlotState {
    token: Option<InstallationToken>,
    /// When the last mint failed, and why: the calls that were already waiting then get
    /// this error instead of minting again.
    failed: Option<(std::time::Instant, GitHubError)>,
}

type Slot = Arc<tokio::sync::Mutex<SlotState>>;

#[derive(Default)]
pub(crate) struct TokenCache {
    slots: Mutex<HashMap<u64, Slot>>,
}

impl TokenCache {
    fn slot(&self, installation_id: u64) -> Slot {
        // A poisoned map only means another thread panicked while inserting an empty slot;
        // the map itself is still consistent.
        let mut slots = self
            .slots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        slots.entry(installation_id).or_default().clone()
    }

    /// The cached token if it is still usable at `now`, else the one `mint` produces (and
    /// caches). Callers for the same installation queue behind one mint.
    pub(crate) async fn get_or_mint<F, Fut>(
        &self,
        installation_id: u64,
        now: OffsetDateTime,
        mint: F,
    ) -> Result<String, GitHubError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<InstallationToken, GitHubError>>,
    {
        let slot = self.slot(installation_id);
        let queued_at = std::time::Instant::now();
        let mut state = slot.lock().await;
        if let Some(token) = state.token.as_ref().filter(|token| token.usable_at(now)) {
            return Ok(token.secret.clone());
        }
        if let Some((failed_at, err)) = &state.failed
            && *failed_at >= queued_at
        {
            return Err(err.clone());
        }
        match mint().await {
            Ok(token) => {
                let secret = token.secret.clone();
                state.token = Some(token);
                state.failed = None;
                Ok(secret)
            }
            Err(err) => {
                state.failed = Some((std::time::Instant::now(), err.clone()));
                Err(err)
            }
        }
    }

    /// Forget `rejected` after GitHub answered 401 to it (revoked, or the App's permissions
    /// changed). A token another call already replaced is left alone.
    pub(crate) async fn invalidate(&self, installation_id: u64, rejected: &str) {
        let slot = self.slot(installation_id);
        let mut state = slot.lock().await;
        if state
            .token
            .as_ref()
            .is_some_and(|token| token.secret == rejected)
        {
            state.token = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn token(secret: &str, expires_at: OffsetDateTime) -> InstallationToken {
        InstallationToken {
            secret: secret.to_owned(),
            expires_at,
        }
    }

    #[tokio::test]
    async fn reuses_until_the_margin_then_mints_again() {
        let cache = TokenCache::default();
        let mints = AtomicU32::new(0);
        let now = OffsetDateTime::now_utc();
        let expires = now + Duration::minutes(60);
        let mint = |secret: &'static str| {
            mints.fetch_add(1, Ordering::SeqCst);
            async move { Ok(token(secret, expires)) }
        };

        assert_eq!(cache.get_or_mint(1, now, || mint("a")).await.unwrap(), "a");
        let later = now + Duration::minutes(54);
        assert_eq!(
            cache.get_or_mint(1, later, || mint("b")).await.unwrap(),
            "a"
        );
        let inside_margin = now + Duration::minutes(55) + Duration::seconds(1);
        assert_eq!(
            cache
                .get_or_mint(1, inside_margin, || mint("c"))
                .await
                .unwrap(),
            "c"
        );
        assert_eq!(mints.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn installations_do_not_share_tokens() {
        let cache = TokenCache::default();
        let now = OffsetDateTime::now_utc();
        let expires = now + Duration::minutes(60);
        cache
            .get_or_mint(1, now, || async { Ok(token("one", expires)) })
            .await
            .unwrap();
        let second = cache
            .get_or_mint(2, now, || async { Ok(token("two", expires)) })
            .await;
        assert_eq!(second.unwrap(), "two");
    }

    #[tokio::test]
    async fn invalidate_drops_only_the_rejected_token() {
        let cache = TokenCache::default();
        let now = OffsetDateTime::now_utc();
        let expires = now + Duration::minutes(60);
        cache
            .get_or_mint(1, now, || async { Ok(token("new", expires)) })
            .await
            .unwrap();
        cache.invalidate(1, "old").await;
        let kept = cache
            .get_or_mint(1, now, || async { Ok(token("other", expires)) })
            .await;
        assert_eq!(kept.unwrap(), "new");
        cache.invalidate(1, "new").await;
        let replaced = cache
            .get_or_mint(1, now, || async { Ok(token("fresh", expires)) })
            .await;
        assert_eq!(replaced.unwrap(), "fresh");
    }

    #[tokio::test]
    async fn calls_queued_behind_a_failed_mint_share_its_failure() {
        let cache = TokenCache::default();
        let mints = AtomicU32::new(0);
        let now = OffsetDateTime::now_utc();
        let failing = || {
            mints.fetch_add(1, Ordering::SeqCst);
            async {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                Err(GitHubError::Network("token endpoint hung".into()))
            }
        };
        let (a, b, c) = tokio::join!(
            cache.get_or_mint(1, now, failing),
            cache.get_or_mint(1, now, failing),
            cache.get_or_mint(1, now, failing),
        );
        assert!(a.is_err() && b.is_err() && c.is_err());
        assert_eq!(
            mints.load(Ordering::SeqCst),
            1,
            "one mint, not one per call"
        );
    }

    #[tokio::test]
    async fn a_failed_mint_caches_nothing() {
        let cache = TokenCache::default();
        let now = OffsetDateTime::now_utc();
        let failed = cache
            .get_or_mint(1, now, || async {
                Err(GitHubError::Network("down".into()))
            })
            .await;
        assert!(failed.is_err());
        let expires = now + Duration::minutes(60);
        let next = cache
            .get_or_mint(1, now, || async { Ok(token("ok", expires)) })
            .await;
        assert_eq!(next.unwrap(), "ok");
    }
}
