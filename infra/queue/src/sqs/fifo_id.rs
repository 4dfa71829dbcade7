//! Group and deduplication ids that SQS accepts.
//!
//! SQS takes 1 to 128 characters of printable ASCII (`!` to `~`) for both
//! `MessageGroupId` and `MessageDeduplicationId`. Ours come from GitHub (`owner/repo#pr`,
//! delivery ids), and an owner of 39 characters with a repository name of 100 already
//! overflows. Truncating would merge distinct ids (two PRs sharing one FIFO group, or a job
//! dropped as a "duplicate" of another), so anything SQS would refuse is replaced by a hash
//! of itself instead: deterministic, so a resent duplicate still maps to the same id.

use sha2::{Digest, Sha256};
use std::borrow::Cow;

/// SQS's length limit for group and deduplication ids.
const MAX_LEN: usize = 128;

/// Marks a hashed id, so that an operator reading the console knows it is not the original.
const HASHED_PREFIX: &str = "sha256:";

/// The id itself when SQS accepts it, else `sha256:<hex>` of it (71 characters).
pub fn sqs_safe_id(raw: &str) -> Cow<'_, str> {
    if is_valid(raw) {
        Cow::Borrowed(raw)
    } else {
        let digest = Sha256::digest(raw.as_bytes());
        Cow::Owned(format!("{HASHED_PREFIX}{}", hex::encode(digest)))
    }
}

fn is_valid(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_LEN && id.bytes().all(|b| (b'!'..=b'~').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_ids_sqs_accepts() {
        for id in ["octo-org/hello-world#42", "a", "!~", &"x".repeat(MAX_LEN)] {
            assert_eq!(sqs_safe_id(id), id);
            assert!(matches!(sqs_safe_id(id), Cow::Borrowed(_)));
        }
    }

    #[test]
    fn hashes_ids_sqs_refuses_into_ids_it_accepts() {
        let too_long = "y".repeat(MAX_LEN + 1);
        for id in ["", "has space", "tab\there", "ünïcode", too_long.as_str()] {
            let safe = sqs_safe_id(id);
            assert!(
                is_valid(&safe),
                "{safe:?} from {id:?} is not a valid SQS id"
            );
            assert!(safe.starts_with(HASHED_PREFIX));
            assert_eq!(safe, sqs_safe_id(id), "hashing must be deterministic");
        }
    }

    #[test]
    fn long_ids_sharing_a_prefix_stay_distinct() {
        let base = "z".repeat(MAX_LEN);
        assert_ne!(
            sqs_safe_id(&format!("{base}1")),
            sqs_safe_id(&format!("{base}2"))
        );
    }
}
