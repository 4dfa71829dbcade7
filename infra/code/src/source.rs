//! Where a review gets the code it reads: GitHub's tarball of the head, fetched,
//! checked and indexed once per job.

use crate::index::CodeIndex;
use crate::snapshot::{Limits, Snapshot};
use async_trait::async_trait;
use parley_core::ports::code::{CodeSource, Codebase};
use parley_core::ports::{GitHub, RepoScope};
use std::sync::Arc;
use std::time::Instant;

/// The largest archive downloaded (compressed).
pub const MAX_ARCHIVE_BYTES: u64 = 100 * 1024 * 1024;

#[derive(Debug, Clone, Default)]
pub struct GitHubCode {
    pub limits: Limits,
}

#[async_trait]
impl CodeSource for GitHubCode {
    async fn open(
        &self,
        github: &dyn GitHub,
        scope: &RepoScope,
        sha: &str,
    ) -> Result<Arc<dyn Codebase>, String> {
        let started = Instant::now();
        // The reasons go into a public summary: what went wrong in Parley's words, the
        // details (GitHub's message, the archive's own paths) to the log only.
        let bytes = github
            .download_tarball(scope, sha, MAX_ARCHIVE_BYTES)
            .await
            .map_err(|err| {
                tracing::warn!(repo = %scope.full_name(), sha, error = %err, "could not download the repository archive");
                "the repository archive could not be downloaded".to_string()
            })?;
        let downloaded = started.elapsed();
        let limits = self.limits;
        let index = tokio::task::spawn_blocking(move || {
            Snapshot::from_tarball(&bytes, limits).map(CodeIndex::build)
        })
        .await
        .map_err(|err| {
            tracing::warn!(error = %err, "indexing the repository failed");
            "indexing the repository failed".to_string()
        })?
        .map_err(|err| {
            tracing::warn!(repo = %scope.full_name(), sha, error = %err, "repository archive not used");
            err.public_reason()
        })?;
        tracing::info!(
            repo = %scope.full_name(),
            sha,
            files = index.files(),
            definitions = index.definition_count(),
            download_ms = downloaded.as_millis() as u64,
            index_ms = (started.elapsed() - downloaded).as_millis() as u64,
            "repository snapshot indexed"
        );
        Ok(Arc::new(index))
    }
}

/// A local working tree, indexed (`parley review --git/--diff`).
pub fn open_dir(root: &std::path::Path, limits: Limits) -> Result<Arc<dyn Codebase>, String> {
    let snapshot = Snapshot::from_dir(root, limits).map_err(|err| err.to_string())?;
    Ok(Arc::new(CodeIndex::build(snapshot)))
}
