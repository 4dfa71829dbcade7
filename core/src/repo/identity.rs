//! Who Parley is: its handle, from `GITHUB_APP_SLUG` or else `GET /app`, and its App id,
//! each learnt once per process (neither changes).

use crate::mention::Handles;
use crate::ports::github::{GitHub, GitHubError};
use std::sync::OnceLock;

pub struct BotIdentity {
    configured_slug: Option<String>,
    /// Global aliases (`PARLEY_MENTION_ALIASES`).
    aliases: Vec<String>,
    learnt: OnceLock<String>,
    learnt_id: OnceLock<u64>,
}

impl BotIdentity {
    pub fn new(configured_slug: Option<String>, aliases: Vec<String>) -> Self {
        BotIdentity {
            configured_slug,
            aliases,
            learnt: OnceLock::new(),
            learnt_id: OnceLock::new(),
        }
    }

    /// The App's slug, asking GitHub the first time when it was not configured.
    pub async fn slug(&self, github: &dyn GitHub) -> Result<String, GitHubError> {
        if let Some(slug) = &self.configured_slug {
            return Ok(slug.clone());
        }
        if let Some(slug) = self.learnt.get() {
            return Ok(slug.clone());
        }
        let app = github.get_app().await?;
        let _ = self.learnt_id.set(app.id);
        let slug = app
            .slug
            .ok_or_else(|| GitHubError::Decode("GET /app returned no slug".into()))?;
        // A concurrent first call may have set it already; both learnt the same value.
        let _ = self.learnt.set(slug.clone());
        Ok(slug)
    }

    /// The App's id, asking GitHub the first time: the App a required check must come
    /// from for the merge gate to hold (see [`crate::review::gate::protection`]).
    pub async fn app_id(&self, github: &dyn GitHub) -> Result<u64, GitHubError> {
        if let Some(id) = self.learnt_id.get() {
            return Ok(*id);
        }
        let id = github.get_app().await?.id;
        let _ = self.learnt_id.set(id);
        Ok(id)
    }

    /// The handles that summon Parley in one repository: the slug, the global aliases,
    /// and `claude` when that repository opted in.
    pub async fn handles(
        &self,
        github: &dyn GitHub,
        claude_alias: bool,
    ) -> Result<Handles, GitHubError> {
        let slug = self.slug(github).await?;
        let mut aliases = self.aliases.clone();
        if claude_alias {
            aliases.push("claude".to_string());
        }
        Ok(Handles::new(&slug, &aliases))
    }
}
