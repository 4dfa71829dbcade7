//! `X-Hub-Signature-256` verification with secret rotation.
//!
//! `GITHUB_WEBHOOK_SECRET` may hold several comma-separated secrets so a team can rotate:
//! add the new secret, switch the App to it, then drop the old one, without a window
//! where deliveries fail.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::{Choice, ConstantTimeEq};

type HmacSha256 = Hmac<Sha256>;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("no webhook secret is configured (set GITHUB_WEBHOOK_SECRET)")]
    NotConfigured,
    #[error("missing X-Hub-Signature-256 header")]
    Missing,
    #[error("X-Hub-Signature-256 is not of the form sha256=<64 hex digits>")]
    Malformed,
    #[error("signature does not match any configured secret")]
    Mismatch,
}

/// The configured webhook secrets. Debug output never shows them.
#[derive(Clone, Default)]
pub struct WebhookSecrets {
    secrets: Vec<Vec<u8>>,
}

impl std::fmt::Debug for WebhookSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WebhookSecrets({} configured)", self.secrets.len())
    }
}

impl WebhookSecrets {
    /// Parse a comma-separated list; blanks are dropped.
    pub fn parse(value: &str) -> Self {
        let secrets = value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.as_bytes().to_vec())
            .collect();
        WebhookSecrets { secrets }
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// Check `header` (the raw `X-Hub-Signature-256` value) against every secret.
    ///
    /// Every secret is tried, whichever matches, so timing does not reveal which one did.
    pub fn verify(&self, header: Option<&str>, body: &[u8]) -> Result<(), SignatureError> {
        if self.secrets.is_empty() {
            return Err(SignatureError::NotConfigured);
        }
        let header = header.ok_or(SignatureError::Missing)?;
        let expected = header
            .trim()
            .strip_prefix("sha256=")
            .and_then(|hex_digest| hex::decode(hex_digest).ok())
            .filter(|digest| digest.len() == 32)
            .ok_or(SignatureError::Malformed)?;
        let mut matched = Choice::from(0);
        for secret in &self.secrets {
            matched |= sign_raw(secret, body).as_slice().ct_eq(&expected);
        }
        if bool::from(matched) {
            Ok(())
        } else {
            Err(SignatureError::Mismatch)
        }
    }
}

/// `sha256=<hex>` for `body` under `secret`: what GitHub sends, and what tests and the
/// README's curl example produce.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    format!("sha256={}", hex::encode(sign_raw(secret, body)))
}

fn sign_raw(secret: &[u8], body: &[u8]) -> [u8; 32] {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = <HmacSha256 as Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(body);
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_accepts_any_configured_secret() {
        let secrets = WebhookSecrets::parse("old-secret, new-secret");
        let body = b"{\"zen\":\"hi\"}";
        assert!(
            secrets
                .verify(Some(&sign(b"old-secret", body)), body)
                .is_ok()
        );
        assert!(
            secrets
                .verify(Some(&sign(b"new-secret", body)), body)
                .is_ok()
        );
        assert_eq!(
            secrets.verify(Some(&sign(b"other", body)), body),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn malformed_headers() {
        let secrets = WebhookSecrets::parse("s");
        assert_eq!(secrets.verify(None, b"x"), Err(SignatureError::Missing));
        for bad in ["sha1=abcd", "sha256=zz", "sha256=abcd", ""] {
            assert_eq!(
                secrets.verify(Some(bad), b"x"),
                Err(SignatureError::Malformed),
                "{bad}"
            );
        }
    }

    #[test]
    fn no_secret_rejects_everything() {
        let secrets = WebhookSecrets::parse(" , ");
        assert_eq!(
            secrets.verify(Some(&sign(b"", b"x")), b"x"),
            Err(SignatureError::NotConfigured)
        );
    }

    #[test]
    fn secrets_do_not_leak_in_debug() {
        let secrets = WebhookSecrets::parse("hunter2");
        assert!(!format!("{secrets:?}").contains("hunter2"));
    }
}
