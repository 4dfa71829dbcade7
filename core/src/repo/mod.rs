//! What Parley reads about a repository before it speaks: its `.parley.yml` (over its
//! organisation's, from `{owner}/.github`; see [`config::layers`]), its guideline
//! files, which files it marks generated or vendored (`.gitattributes`), and who Parley
//! itself is there.
//!
//! Trust boundary: all of it comes from the default or base branch, never from a PR's
//! head, so a pull request cannot change the rules it is reviewed under.

pub mod attributes;
pub mod codeowners;
pub mod generated;
mod guidelines;
mod identity;

pub use attributes::{Attributes, Marked, load_attributes};
pub use guidelines::{
    GUIDELINE_FILES, Guideline, INSTRUCTIONS_SOURCE, guideline_paths, instructions_for,
    load_guidelines,
};
pub use identity::BotIdentity;

use crate::config::{self, ConfigWarning, PassDeadline, RepoConfig, layers};
use crate::ports::Attempt;
use crate::ports::github::{GitHub, GitHubError, PullRequest, RepoScope};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// (installation, `owner/name`, branch).
type CacheKey = (u64, String, String);

/// `.parley.yml` as read for one repository.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    pub config: RepoConfig,
    pub warnings: Vec<ConfigWarning>,
    /// The branch it was read from.
    pub branch: String,
    /// `owner/.github` when the organisation's `.parley.yml` was read under it.
    pub org: Option<String>,
    /// The keys the organisation's file set and the repository's did not.
    pub from_org: std::collections::BTreeSet<String>,
    /// What the repository's file is read over (see [`config::Layered::under`]).
    pub under: RepoConfig,
    /// GitHub's error reading a `.parley.yml` (the repository's or its organisation's)
    /// that a later try may not meet (a 5xx, a rate limit, a timeout): the settings
    /// above stand in for it. See [`LoadedConfig::settled`].
    pub unread: Option<GitHubError>,
}

impl LoadedConfig {
    /// These settings, unless defaults stand in for a `.parley.yml` GitHub would not give
    /// for now: then GitHub's error, so that the job waits for the queue's retry. For
    /// whatever decides who may talk, who may lift a finding and what the gate blocks
    /// on: the defaults may be looser than the team's settings (a writer lifting what
    /// only admins may), or stricter (a check failed for Parley's own trouble).
    pub fn settled(&self) -> Result<&Self, GitHubError> {
        match &self.unread {
            Some(err) => Err(err.clone()),
            None => Ok(self),
        }
    }

    /// [`Self::settled`] until the job's last attempt, which goes on with what could be
    /// read and says so (as does a job whose attempts the queue does not count): a
    /// review that waited on every attempt would leave its head without a check.
    pub fn settled_unless_last(&self, attempt: Option<Attempt>) -> Result<&Self, GitHubError> {
        match attempt {
            Some(attempt) if !attempt.is_last() => self.settled(),
            _ => Ok(self),
        }
    }
}

/// Reads `.parley.yml` from the default branch over the organisation's, cached per
/// repository for a few minutes so a burst of comments on one PR costs one contents call
/// for each. The cache is per process and
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

    /// The configuration read from `branch`, over the organisation's defaults (see
    /// [`config::layers`]). A read failure is not fatal: what could be read applies, a
    /// warning says what could not (not cached, so the next job retries).
    pub async fn load(&self, scope: &RepoScope, branch: &str) -> Arc<LoadedConfig> {
        let key = (scope.installation_id, scope.full_name(), branch.to_string());
        if let Some(hit) = self.cached(&key) {
            return hit;
        }
        let org_scope = RepoScope::new(scope.installation_id, &scope.owner, layers::ORG_REPO);
        let org_label = org_scope.full_name();
        let org = async {
            if scope.name == layers::ORG_REPO {
                Read::Absent
            } else {
                // `HEAD`: that repository's default branch, whatever it is named.
                self.read(&org_scope, "HEAD").await
            }
        };
        // Two independent reads: a cold load waits for one round trip, not two.
        let (org, repo) = crate::concurrently::join2(org, self.read(scope, branch)).await;

        let mut cacheable = true;
        let mut unread = Vec::new();
        let mut transient = None;
        let org_text = match org {
            Read::Absent => None,
            Read::Found(text) => Some(text),
            Read::Unreadable { why, retry, error } => {
                cacheable &= !retry;
                transient = transient.or(error);
                unread.push(ConfigWarning {
                    key: format!("{org_label}/{}", config::FILE_NAME),
                    message: format!("{why}; the organisation's settings are not applied"),
                });
                None
            }
        };
        let repo_text = match repo {
            Read::Absent => String::new(),
            Read::Found(text) => text,
            Read::Unreadable { why, retry, error } => {
                cacheable &= !retry;
                transient = transient.or(error);
                let using = match org_text {
                    Some(_) => "the organisation's settings and defaults",
                    None => "defaults",
                };
                unread.push(ConfigWarning {
                    key: config::FILE_NAME.to_string(),
                    message: format!("{why}; using {using}"),
                });
                String::new()
            }
        };
        let layered = config::parse_layered(
            org_text.as_deref().unwrap_or_default(),
            &org_label,
            &repo_text,
        );
        let (mut config, mut warnings) = (layered.config, unread);
        warnings.extend(layered.warnings);
        self.deadline.apply(&mut config, &mut warnings);
        let loaded = Arc::new(LoadedConfig {
            config,
            warnings,
            branch: branch.to_string(),
            org: org_text.map(|_| org_label),
            from_org: layered.from_org,
            under: layered.under,
            unread: transient,
        });
        if cacheable && let Ok(mut cache) = self.cache.lock() {
            cache.insert(key, (Instant::now(), loaded.clone()));
        }
        loaded
    }

    /// `.parley.yml` on `branch` of the repository `scope` names.
    async fn read(&self, scope: &RepoScope, branch: &str) -> Read {
        match self
            .github
            .get_file_contents(scope, config::FILE_NAME, branch)
            .await
        {
            Ok(None) => Read::Absent,
            Ok(Some(file)) => match file.text() {
                Some(text) => Read::Found(text.to_string()),
                None => Read::Unreadable {
                    why: "is not UTF-8 text".to_string(),
                    retry: false,
                    error: None,
                },
            },
            Err(err) => {
                tracing::warn!(repo = %scope.full_name(), error = %err, "could not read .parley.yml");
                // Public text (reply footers, review summaries): what failed, not the raw
                // error, which names internal paths and GitHub's message.
                Read::Unreadable {
                    why: format!("could not be read ({})", err.public_reason()),
                    retry: true,
                    error: err.is_transient().then_some(err),
                }
            }
        }
    }

    fn cached(&self, key: &CacheKey) -> Option<Arc<LoadedConfig>> {
        let cache = self.cache.lock().ok()?;
        let (at, loaded) = cache.get(key)?;
        (at.elapsed() < self.ttl).then(|| loaded.clone())
    }
}

/// What a PR touching `touched` is reviewed by besides `.parley.yml`: the guideline files
/// of its base branch `base_ref` with the config's instructions for those files, and the
/// `.gitattributes` of the branch the config was read from, read side by side.
pub async fn read_rules(
    github: &dyn GitHub,
    scope: &RepoScope,
    base_ref: &str,
    loaded: &LoadedConfig,
    touched: &[String],
) -> (Vec<Guideline>, Attributes) {
    let (mut guidelines, attributes) = crate::concurrently::join2(
        load_guidelines(github, scope, base_ref, touched),
        load_attributes(github, scope, &loaded.branch, touched),
    )
    .await;
    guidelines.extend(instructions_for(
        &loaded.config.review.instructions,
        touched,
    ));
    (guidelines, attributes)
}

/// The directories holding `touched` files, each once, nearest the root first (then by
/// name), at most `max`: where a repository's per-directory files (guideline files,
/// `.gitattributes`) are looked for, so a PR touching 500 folders does not cost a read
/// for each.
pub(crate) fn touched_directories(touched: &[String], max: usize) -> Vec<String> {
    let mut dirs = std::collections::BTreeSet::new();
    for path in touched {
        let mut end = 0;
        while let Some(slash) = path[end..].find('/') {
            end += slash;
            dirs.insert(&path[..end]);
            end += 1;
        }
    }
    let mut dirs: Vec<String> = dirs.into_iter().map(str::to_string).collect();
    dirs.sort_by_key(|d| (d.matches('/').count(), d.clone()));
    dirs.truncate(max);
    dirs
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

/// What reading one `.parley.yml` found.
enum Read {
    Absent,
    Found(String),
    /// There but unusable (`why`, public text); `retry`: worth reading again soon;
    /// `error`: GitHub's, where a later try may not meet it.
    Unreadable {
        why: String,
        retry: bool,
        error: Option<GitHubError>,
    },
}
