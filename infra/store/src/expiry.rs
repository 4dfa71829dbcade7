//! When an idempotency claim lapses.
//!
//! DynamoDB's TTL attribute is whole epoch seconds, so both adapters store and compare
//! whole seconds: a claim that is live in one backend is live in the other. The lapse
//! time is rounded *up*, so a claim is never given up before its full TTL; the cost is
//! holding it at most one second longer, which only delays a retry.

use std::time::Duration;
use time::OffsetDateTime;

const NANOS_PER_SEC: i128 = 1_000_000_000;

/// Epoch second from which a claim taken at `now` for `ttl` no longer counts.
pub(crate) fn expires_at(now: OffsetDateTime, ttl: Duration) -> i64 {
    // Saturate rather than overflow: a TTL of centuries is a caller's way of saying
    // "forever", not an error.
    let ttl_nanos = i128::try_from(ttl.as_nanos()).unwrap_or(i128::MAX);
    let end = now.unix_timestamp_nanos().saturating_add(ttl_nanos);
    let secs = end.div_euclid(NANOS_PER_SEC) + i128::from(end.rem_euclid(NANOS_PER_SEC) != 0);
    i64::try_from(secs).unwrap_or(i64::MAX)
}

/// The current whole epoch second, compared against stored `expires_at` values.
pub(crate) fn now_secs(now: OffsetDateTime) -> i64 {
    now.unix_timestamp()
}

/// Whether a claim stored with `expires_at` still holds at `now_secs`. Writers use the
/// negation (`expires_at <= now`) in their conditions; keep the two in step.
pub(crate) fn is_live(expires_at: i64, now_secs: i64) -> bool {
    expires_at > now_secs
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn rounds_a_fractional_end_up() {
        let now = datetime!(2024-01-01 00:00:00.250 UTC);
        let start = now.unix_timestamp();
        assert_eq!(expires_at(now, Duration::from_secs(1)), start + 2);
    }

    #[test]
    fn keeps_a_whole_end() {
        let now = datetime!(2024-01-01 00:00:00 UTC);
        let start = now.unix_timestamp();
        assert_eq!(expires_at(now, Duration::from_secs(1)), start + 1);
    }

    #[test]
    fn a_fresh_claim_is_live_for_at_least_its_ttl() {
        let now = datetime!(2024-01-01 00:00:00.999 UTC);
        let exp = expires_at(now, Duration::from_secs(1));
        assert!(is_live(exp, now_secs(now)));
        assert!(is_live(exp, now_secs(now + Duration::from_millis(1_000))));
        assert!(!is_live(exp, now_secs(now + Duration::from_millis(2_001))));
    }

    #[test]
    fn a_claim_lapses_at_its_expiry_second_matching_the_writers_condition() {
        // Writers take over when `expires_at <= now`; readers must agree on the boundary.
        assert!(is_live(11, 10));
        assert!(!is_live(10, 10));
        assert!(!is_live(9, 10));
    }

    #[test]
    fn a_huge_ttl_saturates_instead_of_overflowing() {
        let now = datetime!(2024-01-01 00:00:00 UTC);
        assert_eq!(expires_at(now, Duration::MAX), i64::MAX);
    }
}
