//! When to try a request again, and how long to wait first.
//!
//! Three kinds of failure get retries, each with its own bound:
//! - 5xx and network errors: exponential backoff with jitter, at most
//!   [`RetryPolicy::max_attempts`] attempts and [`RetryPolicy::max_elapsed`] in total. Jitter
//!   keeps many workers that failed together from retrying together.
//! - Rate limits (429, and 403 that GitHub marks as a primary or secondary limit): wait as
//!   long as GitHub says (`Retry-After`, else `x-ratelimit-reset`, else the documented one
//!   minute), as long as the sum of waits stays within [`RetryPolicy::rate_limit_budget`];
//!   beyond it the caller gets `RateLimited { retry_after }` at once, without sleeping, so a
//!   queue can delay the job instead of a Lambda idling.
//! - 401 on an installation token: handled by the transport (one retry with a new token).
//!
//! Writes follow [`Replay`]: see there for the rule.

use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in total, the first included, for one call.
    pub max_attempts: u32,
    /// First backoff; doubled per retry. Tests set it to a few milliseconds.
    pub base_delay: Duration,
    /// Cap on one backoff.
    pub max_delay: Duration,
    /// No 5xx/network retry starts once this much time has passed since the first attempt.
    pub max_elapsed: Duration,
    /// The most a call may spend waiting out rate limits.
    pub rate_limit_budget: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_elapsed: Duration::from_secs(30),
            rate_limit_budget: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    /// Backoff before retry number `retry` (1 for the first retry): the exponential delay
    /// capped at `max_delay`, of which the upper half is random ("equal jitter": never zero,
    /// never synchronised).
    pub fn backoff(&self, retry: u32) -> Duration {
        let exponent = retry.saturating_sub(1).min(20);
        let full = self
            .base_delay
            .saturating_mul(1u32 << exponent)
            .min(self.max_delay);
        let half = full / 2;
        let jitter_ms = u64::try_from(half.as_millis()).unwrap_or(u64::MAX);
        let jitter = if jitter_ms == 0 {
            Duration::ZERO
        } else {
            Duration::from_millis(rand::random_range(0..=jitter_ms))
        };
        half + jitter
    }
}

/// Whether a request may be sent again after it may have reached GitHub.
///
/// The rule: a request that creates something (a comment, a reply, a review, a check run)
/// is `NotAfterSend`. If GitHub may have received it (a 5xx, or the connection failed after
/// the request went out), it is not retried, because GitHub may have created the thing and a
/// second attempt would post it twice; the caller checks GitHub for its hidden marker
/// instead. It is still retried when GitHub certainly did not act on it: the connection
/// never opened, a 401 (refused before processing), or a rate limit (rejected unprocessed).
///
/// Everything else is `Safe`: reads, PATCH edits (same body, same result), reactions and
/// reviewer requests (GitHub answers 200 for an existing one), thread resolution, and
/// token requests (a second token is harmless).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Replay {
    Safe,
    NotAfterSend,
}

/// GitHub's advice for a secondary rate limit that comes without headers: "wait for at
/// least one minute before retrying".
pub(crate) const SECONDARY_LIMIT_DEFAULT_WAIT: Duration = Duration::from_secs(60);

/// How long GitHub asks us to wait, if this response is a rate limit; `None` otherwise
/// (a 403 without rate-limit signals is a permission problem and must not be retried).
pub(crate) fn rate_limit_wait(
    status: u16,
    headers: &HeaderMap,
    message: &str,
    now: SystemTime,
) -> Option<Duration> {
    if status != 403 && status != 429 {
        return None;
    }
    if let Some(wait) = retry_after(headers, now) {
        return Some(wait);
    }
    if header(headers, "x-ratelimit-remaining") == Some("0") {
        if let Some(wait) = until_reset(headers, now) {
            return Some(wait);
        }
        return Some(SECONDARY_LIMIT_DEFAULT_WAIT);
    }
    if status == 429 || message.to_ascii_lowercase().contains("rate limit") {
        return Some(SECONDARY_LIMIT_DEFAULT_WAIT);
    }
    None
}

/// `Retry-After` as seconds or as an HTTP date.
fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = header(headers, "retry-after")?;
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// `x-ratelimit-reset` is the epoch second at which the window resets.
fn until_reset(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let reset = header(headers, "x-ratelimit-reset")?.parse::<u64>().ok()?;
    let reset_at = UNIX_EPOCH.checked_add(Duration::from_secs(reset))?;
    Some(reset_at.duration_since(now).unwrap_or(Duration::ZERO))
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok().map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(
                HeaderName::from_static(name),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    fn at(epoch_seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(epoch_seconds)
    }

    #[test]
    fn retry_after_seconds_and_date() {
        let now = at(1_700_000_000);
        let wait = rate_limit_wait(429, &headers(&[("retry-after", "7")]), "", now);
        assert_eq!(wait, Some(Duration::from_secs(7)));
        let date = httpdate::fmt_http_date(now + Duration::from_secs(30));
        let wait = rate_limit_wait(403, &headers(&[("retry-after", &date)]), "", now);
        assert_eq!(wait, Some(Duration::from_secs(30)));
    }

    #[test]
    fn primary_limit_waits_until_reset() {
        let now = at(1_700_000_000);
        let h = headers(&[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "1700000042"),
        ]);
        assert_eq!(
            rate_limit_wait(403, &h, "API rate limit exceeded", now),
            Some(Duration::from_secs(42))
        );
    }

    #[test]
    fn secondary_limit_without_headers_waits_a_minute() {
        let now = at(1_700_000_000);
        let message = "You have exceeded a secondary rate limit. Please wait a few minutes.";
        assert_eq!(
            rate_limit_wait(403, &HeaderMap::new(), message, now),
            Some(SECONDARY_LIMIT_DEFAULT_WAIT)
        );
    }

    #[test]
    fn plain_forbidden_is_not_a_rate_limit() {
        let now = at(1_700_000_000);
        let h = headers(&[("x-ratelimit-remaining", "4999")]);
        assert_eq!(
            rate_limit_wait(403, &h, "Resource not accessible by integration", now),
            None
        );
        assert_eq!(
            rate_limit_wait(500, &HeaderMap::new(), "rate limit", now),
            None
        );
    }

    #[test]
    fn backoff_grows_is_capped_and_jittered() {
        let policy = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
            ..RetryPolicy::default()
        };
        for _ in 0..50 {
            let first = policy.backoff(1);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let second = policy.backoff(2);
            assert!(second >= Duration::from_millis(100) && second <= Duration::from_millis(200));
            let capped = policy.backoff(30);
            assert!(capped >= Duration::from_millis(175) && capped <= Duration::from_millis(350));
        }
    }
}
