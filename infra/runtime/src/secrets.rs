//! Secrets Manager indirection.
//!
//! In Lambda, `GITHUB_WEBHOOK_SECRET` and `GITHUB_PRIVATE_KEY` hold a Secrets Manager ARN
//! instead of the secret, so no plaintext secret sits in the function's configuration.
//! The value is fetched once per container, at cold start.

const ARN_PREFIX: &str = "arn:aws:secretsmanager:";

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("could not read secret {arn}: {reason}")]
    Fetch { arn: String, reason: String },
    #[error("secret {arn} has no string value")]
    Empty { arn: String },
}

pub fn is_secret_arn(value: &str) -> bool {
    value.starts_with(ARN_PREFIX)
}

/// Return `value` itself, or the secret it names when it is a Secrets Manager ARN.
pub async fn resolve(value: String) -> Result<String, SecretError> {
    if !is_secret_arn(&value) {
        return Ok(value);
    }
    let config = parley_aws::load(parley_aws::Overrides::default()).await;
    let client = aws_sdk_secretsmanager::Client::new(&config);
    let output = client
        .get_secret_value()
        .secret_id(&value)
        .send()
        .await
        .map_err(|err| SecretError::Fetch {
            arn: value.clone(),
            reason: aws_sdk_secretsmanager::error::DisplayErrorContext(&err).to_string(),
        })?;
    output
        .secret_string
        .ok_or(SecretError::Empty { arn: value })
}
