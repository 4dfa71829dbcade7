//! What Parley reads about a repository before it speaks: its `.parley.yml`, its guideline
//! files, which files it marks generated or vendored (`.gitattributes`), and who Parley
//! itself is there.
//!
//! Trust boundary: all of it comes from the default or base branch, never from a PR's
//! head, so a pull request cannot change the rules it is reviewed under.

pub mod attributes;
mod guidelines;
mod identity;

pub use attributes::{Attributes, Marked, load_attributes};
pub use guidelines::{GUIDELINE_FILES, Guideline, guideline_paths, load_guidelines};
pub use identity::BotIdentity;

use crate::config::{self, ConfigWarning, PassDeadline, RepoConfig};
use crate::ports::github::{GitHub, PullRequest, RepoScope};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// (installation, `owner/name`, branch).
type CacheKey = (u64, String, String);

/// `.parley.yml` as read for one repository.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedConfig {
    pub config: RepoConfig,
    pub warnings: Vec<ConfigWarning>,
    /// The branch it was read from.
    pub branch: String,
}

/// Reads `.parley.yml` from the default branch, cached per repository for a few minutes
/// so a burst of comments on one PR costs one contents call. The cache is per process and
/// holds only this: a warm Lambda never carries one tenant's settings into another's job
/// because the key includes the installation.
pub struct ConfigLoader {
    github: Arc<dyn GitHub>,
    ttl: Duration,
    /// What this deployment allows a review pass, put into every configuration read.
    deadline: PassDeadline,
    cache: Mutex<HashMap<CacheKey, (Instant, Arc<LoadedConfig>)>>,
}

impl ConfigLoader {
    pub const DEFAULT_TTL: Duration = Duration::from_secs(300);

    pub fn new(github: Arc<dyn GitHub>, ttl: Duration) -> Self {
        ConfigLoader {
            github,
            ttl,
            deadline: PassDeadline::default(),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The pass deadline this deployment allows (Lambda's unless set).
    pub fn with_pass_deadline(mut self, deadline: PassDeadline) -> Self {
        self.deadline = deadline;
        self
    }

    pub fn pass_deadline(&self) -> PassDeadline {
        self.deadline
    }

    /// The configuration for the repository `pr` belongs to, from its default branch.
    pub async fn for_pull(&self, scope: &RepoScope, pr: &PullRequest) -> Arc<LoadedConfig> {
        self.load(scope, &default_branch(pr)).await
    }

    /// The configuration read from `branch`. A read failure is not fatal: defaults apply
    /// and a warning says the file could not be read (not cached, so the next job retries).
    pub async fn load(&self, scope: &RepoScope, branch: &str) -> Arc<LoadedConfig> {
        let key = (scope.installation_id, scope.full_name(), branch.to_string());
        if let Some(hit) = self.cached(&key) {
            return hit;
        }
        let (loaded, cacheable) = match self
            .github
            .get_file_contents(scope, config::FILE_NAME, branch)
            .await
        {
            Ok(None) => (parsed("", branch, self.deadline), true),
            Ok(Some(file)) => match file.text() {
                Some(text) => (parsed(text, branch, self.deadline), true),
                None => (
                    with_warning(
                        branch,
                        "is not UTF-8 text; using defaults".to_string(),
                        self.deadline,
                    ),
                    true,
                ),
            },
            Err(err) => {
                tracing::warn!(repo = %scope.full_name(), error = %err, "could not read .parley.yml; using defaults");
                (
                    // Public text (reply footers, review summaries): what failed, not
                    // the raw error, which names internal paths and GitHub's message.
                    with_warning(
                        branch,
                        format!(
                            "could not be read ({}); using defaults",
                            err.public_reason()
                        ),
                        self.deadline,
                    ),
                    false,
                )
            }
        };
        let loaded = Arc::new(loaded);
        if cacheable && let Ok(mut cache) = self.cache.lock() {
            cache.insert(key, (Instant::now(), loaded.clone()));
        }
        loaded
    }

    fn cached(&self, key: &CacheKey) -> Option<Arc<LoadedConfig>> {
        let cache = self.cache.lock().ok()?;
        let (at, loaded) = cache.get(key)?;
        (at.elapsed() < self.ttl).then(|| loaded.clone())
    }
}

/// The branch repository settings are read from: the default branch, or the PR's base
/// when GitHub did not say (both are outside the PR author's control).
pub fn default_branch(pr: &PullRequest) -> String {
    pr.base
        .repo
        .as_ref()
        .and_then(|repo| repo.default_branch.clone())
        .unwrap_or_else(|| pr.base.ref_name.clone())
}

fn parsed(text: &str, branch: &str, deadline: PassDeadline) -> LoadedConfig {
    let (mut config, mut warnings) = config::parse(text);
    deadline.apply(&mut config, &mut warnings);
    LoadedConfig {
        config,
        warnings,
        branch: branch.to_string(),
    }
}

fn with_warning(branch: &str, message: String, deadline: PassDeadline) -> LoadedConfig {
    let mut config = RepoConfig::default();
    let mut warnings = vec![ConfigWarning {
        key: config::FILE_NAME.to_string(),
        message,
    }];
    deadline.apply(&mut config, &mut warnings);
    LoadedConfig {
        config,
        warnings,
        branch: branch.to_string(),
    }
}
