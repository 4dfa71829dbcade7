//! Client configuration, read from the environment the same way in Lambda and locally.
//!
//! Absent credentials are not an error here: `parley serve` runs without a GitHub App
//! (webhooks still verify and queue), and every call then fails with a typed
//! [`GitHubError::Config`]. Credentials that are present but unusable (half set, an ARN, an
//! unreadable file, text that is not PEM) fail at once, because they are an operator's
//! mistake that should surface at startup, not on the first review.

use crate::retry::RetryPolicy;
use parley_core::ports::github::GitHubError;
use std::fmt;
use std::time::Duration;

pub const DEFAULT_API_URL: &str = "https://api.github.com";

/// GitHub asks every client to identify itself; it is also how GitHub support finds our
/// traffic in their logs.
pub const DEFAULT_USER_AGENT: &str = concat!("parley/", env!("CARGO_PKG_VERSION"));

pub const ENV_APP_ID: &str = "GITHUB_APP_ID";
pub const ENV_PRIVATE_KEY: &str = "GITHUB_PRIVATE_KEY";
pub const ENV_PRIVATE_KEY_FILE: &str = "GITHUB_PRIVATE_KEY_FILE";
pub const ENV_API_URL: &str = "GITHUB_API_URL";
/// Read by `parley review` only: a server never acts as a person.
pub const ENV_TOKEN: &str = "GITHUB_TOKEN";

/// The App's private key. Its `Debug` never prints the key, so a config can be logged.
#[derive(Clone)]
pub struct PrivateKeyPem(String);

impl PrivateKeyPem {
    pub fn new(pem: impl Into<String>) -> Self {
        PrivateKeyPem(pem.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for PrivateKeyPem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PrivateKeyPem(<redacted>)")
    }
}

#[derive(Debug, Clone)]
pub struct GitHubConfig {
    /// App id (`12345`) or client id (`Iv1.…`); either is a valid JWT issuer.
    pub app_id: Option<String>,
    pub private_key_pem: Option<PrivateKeyPem>,
    /// A personal access token, for `parley review` run by a person: every repository
    /// call then goes as that person (App calls still need the App's key). Never read
    /// from the environment by [`from_lookup`](Self::from_lookup): a worker that found a
    /// stray `GITHUB_TOKEN` (CI runners set one) must not post as someone else.
    pub token: Option<PrivateKeyPem>,
    /// REST base: `https://api.github.com`, or `https://HOST/api/v3` for GitHub Enterprise
    /// Server. The GraphQL endpoint is derived from it.
    pub api_url: String,
    pub user_agent: String,
    pub retry: RetryPolicy,
    /// Upper bound for one HTTP exchange, so a hung connection cannot eat a Lambda's time.
    pub request_timeout: Duration,
}

impl Default for GitHubConfig {
    /// No credentials, public GitHub, default retries.
    fn default() -> Self {
        GitHubConfig {
            app_id: None,
            private_key_pem: None,
            token: None,
            api_url: DEFAULT_API_URL.to_owned(),
            user_agent: DEFAULT_USER_AGENT.to_owned(),
            retry: RetryPolicy::default(),
            request_timeout: Duration::from_secs(30),
        }
    }
}

impl GitHubConfig {
    /// Credentials given directly (tests, or a caller that fetched the key itself).
    pub fn new(app_id: impl Into<String>, private_key_pem: impl Into<String>) -> Self {
        GitHubConfig {
            app_id: Some(app_id.into()),
            private_key_pem: Some(PrivateKeyPem::new(private_key_pem.into())),
            ..GitHubConfig::default()
        }
    }

    /// `GITHUB_APP_ID`, `GITHUB_PRIVATE_KEY` or `GITHUB_PRIVATE_KEY_FILE`, `GITHUB_API_URL`.
    pub fn from_env() -> Result<Self, GitHubError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`from_env`](Self::from_env) over any variable source. In Lambda the runtime crate
    /// resolves a Secrets Manager ARN in `GITHUB_PRIVATE_KEY` first and answers that name
    /// with the PEM it fetched; tests use it to avoid mutating the process environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, GitHubError> {
        let var = |name: &str| parley_core::env::value(lookup(name));

        let app_id = var(ENV_APP_ID);
        let private_key_pem = match (var(ENV_PRIVATE_KEY), var(ENV_PRIVATE_KEY_FILE)) {
            (Some(inline), _) => Some(pem_from_variable(&inline)?),
            (None, Some(path)) => Some(pem_from_file(&path)?),
            (None, None) => None,
        };
        match (&app_id, &private_key_pem) {
            (Some(_), None) => {
                return Err(GitHubError::Config(format!(
                    "{ENV_APP_ID} is set but neither {ENV_PRIVATE_KEY} nor {ENV_PRIVATE_KEY_FILE} is"
                )));
            }
            (None, Some(_)) => {
                return Err(GitHubError::Config(format!(
                    "a private key is set but {ENV_APP_ID} is not"
                )));
            }
            _ => {}
        }

        let api_url = var(ENV_API_URL).unwrap_or_else(|| DEFAULT_API_URL.to_owned());
        validate_api_url(&api_url)?;

        Ok(GitHubConfig {
            app_id,
            private_key_pem,
            api_url,
            ..GitHubConfig::default()
        })
    }

    /// Whether calls can authenticate at all.
    pub fn has_credentials(&self) -> bool {
        self.app_id.is_some() && self.private_key_pem.is_some() || self.token.is_some()
    }

    /// Repository calls as the person owning `token` (see [`GitHubConfig::token`]).
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(PrivateKeyPem::new(token.into().trim().to_owned()));
        self
    }
}

/// The PEM from `GITHUB_PRIVATE_KEY`. Env files and Lambda console fields cannot hold
/// newlines, so keys are commonly pasted with literal `\n`; turn those back into newlines.
fn pem_from_variable(value: &str) -> Result<PrivateKeyPem, GitHubError> {
    if value.starts_with("arn:") {
        return Err(GitHubError::Config(format!(
            "{ENV_PRIVATE_KEY} holds an ARN; the Secrets Manager value must be resolved to PEM \
             text before the GitHub client is configured"
        )));
    }
    let pem = value.replace("\\n", "\n");
    ensure_pem(&pem, ENV_PRIVATE_KEY)?;
    Ok(PrivateKeyPem(pem))
}

fn pem_from_file(path: &str) -> Result<PrivateKeyPem, GitHubError> {
    let text = std::fs::read_to_string(path).map_err(|err| {
        GitHubError::Config(format!("cannot read {ENV_PRIVATE_KEY_FILE} {path}: {err}"))
    })?;
    let pem = text.replace("\\n", "\n");
    ensure_pem(&pem, ENV_PRIVATE_KEY_FILE)?;
    Ok(PrivateKeyPem(pem))
}

/// A cheap shape check so a wrong value gets a message naming the variable; the key itself
/// is parsed when the client is built.
fn ensure_pem(pem: &str, source: &str) -> Result<(), GitHubError> {
    if pem.contains("-----BEGIN") && pem.contains("PRIVATE KEY-----") {
        Ok(())
    } else {
        Err(GitHubError::Config(format!(
            "{source} does not contain a PEM private key (expected -----BEGIN RSA PRIVATE KEY-----)"
        )))
    }
}

fn validate_api_url(api_url: &str) -> Result<(), GitHubError> {
    match reqwest::Url::parse(api_url) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host_str().is_some() => Ok(()),
        Ok(_) => Err(GitHubError::Config(format!(
            "{ENV_API_URL} must be an http(s) URL, got {api_url}"
        ))),
        Err(err) => Err(GitHubError::Config(format!(
            "{ENV_API_URL} is not a URL ({err}): {api_url}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const PEM: &str = "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n";

    fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn nothing_set_is_an_unconfigured_client_not_an_error() {
        let config = GitHubConfig::from_lookup(lookup(&[])).unwrap();
        assert!(!config.has_credentials());
        assert_eq!(config.api_url, DEFAULT_API_URL);
    }

    #[test]
    fn escaped_newlines_become_newlines() {
        let escaped = PEM.replace('\n', "\\n");
        let config = GitHubConfig::from_lookup(lookup(&[
            (ENV_APP_ID, "42"),
            (ENV_PRIVATE_KEY, &escaped),
            (ENV_API_URL, "https://ghe.example.com/api/v3"),
        ]))
        .unwrap();
        assert_eq!(config.private_key_pem.unwrap().expose(), PEM);
        assert_eq!(config.app_id.as_deref(), Some("42"));
        assert_eq!(config.api_url, "https://ghe.example.com/api/v3");
    }

    #[test]
    fn key_file_is_read() {
        let path = std::env::temp_dir().join(format!("parley-key-{}.pem", std::process::id()));
        std::fs::write(&path, PEM).unwrap();
        let config = GitHubConfig::from_lookup(lookup(&[
            (ENV_APP_ID, "42"),
            (ENV_PRIVATE_KEY_FILE, path.to_str().unwrap()),
        ]))
        .unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(config.private_key_pem.unwrap().expose(), PEM);
    }

    #[test]
    fn arn_is_refused_with_a_config_error() {
        let err = GitHubConfig::from_lookup(lookup(&[
            (ENV_APP_ID, "42"),
            (
                ENV_PRIVATE_KEY,
                "arn:aws:secretsmanager:eu-west-1:123456789012:secret:parley-key",
            ),
        ]))
        .unwrap_err();
        assert!(
            matches!(&err, GitHubError::Config(m) if m.contains("ARN")),
            "{err}"
        );
    }

    #[test]
    fn bad_values_are_config_errors() {
        let cases: Vec<Vec<(&str, &str)>> = vec![
            vec![(ENV_APP_ID, "42")],
            vec![(ENV_PRIVATE_KEY, PEM)],
            vec![(ENV_APP_ID, "42"), (ENV_PRIVATE_KEY, "not a key")],
            vec![
                (ENV_APP_ID, "42"),
                (ENV_PRIVATE_KEY_FILE, "/nonexistent/parley.pem"),
            ],
            vec![(ENV_API_URL, "ftp://example.com")],
            vec![(ENV_API_URL, "not a url")],
        ];
        for vars in cases {
            let result = GitHubConfig::from_lookup(lookup(&vars));
            assert!(
                matches!(result, Err(GitHubError::Config(_))),
                "{vars:?} gave {result:?}"
            );
        }
    }

    #[test]
    fn debug_never_prints_the_key() {
        let config = GitHubConfig::new("42", PEM);
        assert!(!format!("{config:?}").contains("MIIB"));
    }
}
