//! Settings from the environment, read once at start-up.

use parley_core::mention::Handles;
use std::path::PathBuf;

/// Which store/queue adapters to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// DynamoDB and SQS (the deployed stack, or moto in tests).
    Aws,
    /// One SQLite file (local runs).
    Sqlite,
}

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{name} must be one of {allowed}, got {value:?}")]
    Invalid {
        name: &'static str,
        allowed: &'static str,
        value: String,
    },
}

/// `Debug` is written by hand: settings get logged at start-up and in error reports, and
/// the webhook secret must never reach a log line (only whether it is set and how).
#[derive(Clone)]
pub struct Settings {
    /// Raw `GITHUB_WEBHOOK_SECRET`: comma-separated secrets, or a Secrets Manager ARN.
    pub webhook_secret: Option<String>,
    /// `GITHUB_APP_SLUG`: the bot's handle. Unset means "ask GitHub" (worker side).
    pub app_slug: Option<String>,
    /// `PARLEY_MENTION_ALIASES`: extra handles such as `claude`. Off by default.
    pub mention_aliases: Vec<String>,
    pub store: Backend,
    pub queue: Backend,
    /// `PARLEY_DB_PATH`: the SQLite file for the local store and queue.
    pub db_path: PathBuf,
    /// `PARLEY_MAX_RECEIVE`: attempts before the local queue dead-letters a message
    /// (the SAM stack's redrive policy says 5 for SQS).
    pub max_receive_count: u32,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secret = match self.webhook_secret.as_deref() {
            None => "unset".to_string(),
            Some(arn) if arn.trim_start().starts_with("arn:") => {
                "a Secrets Manager ARN (redacted)".to_string()
            }
            Some(raw) => format!(
                "{} secret(s) (redacted)",
                raw.split(',').filter(|s| !s.trim().is_empty()).count()
            ),
        };
        f.debug_struct("Settings")
            .field("webhook_secret", &secret)
            .field("app_slug", &self.app_slug)
            .field("mention_aliases", &self.mention_aliases)
            .field("store", &self.store)
            .field("queue", &self.queue)
            .field("db_path", &self.db_path)
            .field("max_receive_count", &self.max_receive_count)
            .finish()
    }
}

impl Settings {
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Testable core of [`Settings::from_env`].
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let non_empty = |name: &str| parley_core::env::value(get(name));
        let in_lambda = non_empty("AWS_LAMBDA_FUNCTION_NAME").is_some();
        let default_backend = if in_lambda {
            Backend::Aws
        } else {
            Backend::Sqlite
        };
        let store = backend(
            non_empty("PARLEY_STORE"),
            "PARLEY_STORE",
            "dynamodb",
            default_backend,
        )?;
        let queue = backend(
            non_empty("PARLEY_QUEUE"),
            "PARLEY_QUEUE",
            "sqs",
            default_backend,
        )?;
        let max_receive_count = match non_empty("PARLEY_MAX_RECEIVE") {
            None => 5,
            Some(value) => {
                value
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or(SettingsError::Invalid {
                        name: "PARLEY_MAX_RECEIVE",
                        allowed: "a positive integer",
                        value,
                    })?
            }
        };
        Ok(Settings {
            webhook_secret: non_empty("GITHUB_WEBHOOK_SECRET"),
            app_slug: non_empty("GITHUB_APP_SLUG"),
            mention_aliases: non_empty("PARLEY_MENTION_ALIASES")
                .map(|v| {
                    v.split(',')
                        .map(|a| a.trim().to_string())
                        .filter(|a| !a.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            store,
            queue,
            db_path: non_empty("PARLEY_DB_PATH")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(".parley/parley.db")),
            max_receive_count,
        })
    }

    /// The bot's handles, when the slug is known.
    pub fn handles(&self) -> Option<Handles> {
        self.app_slug
            .as_deref()
            .map(|slug| Handles::new(slug, &self.mention_aliases))
    }
}

fn backend(
    value: Option<String>,
    name: &'static str,
    aws_name: &'static str,
    default: Backend,
) -> Result<Backend, SettingsError> {
    match value.as_deref() {
        None => Ok(default),
        Some("sqlite") => Ok(Backend::Sqlite),
        Some(v) if v == aws_name => Ok(Backend::Aws),
        Some(_) => Err(SettingsError::Invalid {
            name,
            allowed: if aws_name == "sqs" {
                "sqlite, sqs"
            } else {
                "sqlite, dynamodb"
            },
            value: value.unwrap_or_default(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> Result<Settings, SettingsError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn local_defaults_need_nothing() {
        let s = settings(&[]).expect("defaults");
        assert_eq!(s.store, Backend::Sqlite);
        assert_eq!(s.queue, Backend::Sqlite);
        assert_eq!(s.db_path, PathBuf::from(".parley/parley.db"));
        assert!(s.webhook_secret.is_none());
        assert!(s.handles().is_none());
        assert_eq!(s.max_receive_count, 5);
    }

    #[test]
    fn debug_output_never_shows_the_webhook_secret() {
        let s = settings(&[(
            "GITHUB_WEBHOOK_SECRET",
            "old-s3cret-value, new-s3cret-value",
        )])
        .expect("settings");
        let shown = format!("{s:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("2 secret(s) (redacted)"), "{shown}");
        let arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:parley-webhook";
        let shown = format!(
            "{:?}",
            settings(&[("GITHUB_WEBHOOK_SECRET", arn)]).expect("arn")
        );
        assert!(!shown.contains("parley-webhook"), "{shown}");
    }

    #[test]
    fn lambda_defaults_to_aws() {
        let s = settings(&[("AWS_LAMBDA_FUNCTION_NAME", "webhook")]).expect("lambda");
        assert_eq!(s.store, Backend::Aws);
        assert_eq!(s.queue, Backend::Aws);
    }

    #[test]
    fn explicit_backends_and_aliases() {
        let s = settings(&[
            ("PARLEY_STORE", "dynamodb"),
            ("PARLEY_QUEUE", "sqlite"),
            ("GITHUB_APP_SLUG", "parley"),
            ("PARLEY_MENTION_ALIASES", "claude, "),
        ])
        .expect("explicit");
        assert_eq!(s.store, Backend::Aws);
        assert_eq!(s.queue, Backend::Sqlite);
        let handles = s.handles().expect("slug set");
        assert!(handles.mentioned_in("@claude hi"));
    }

    #[test]
    fn bad_values_are_named() {
        let err = settings(&[("PARLEY_QUEUE", "kafka")]).expect_err("bad queue");
        assert!(err.to_string().contains("PARLEY_QUEUE"), "{err}");
        let err = settings(&[("PARLEY_MAX_RECEIVE", "0")]).expect_err("bad count");
        assert!(err.to_string().contains("PARLEY_MAX_RECEIVE"), "{err}");
    }
}
