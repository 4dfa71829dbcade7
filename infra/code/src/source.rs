//! Where a review gets the code it reads: GitHub's tarball of the head, fetched (or
//! taken from the local [`ArchiveCache`]), checked and indexed once per job.

use crate::cache::ArchiveCache;
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
    /// Archives already downloaded, per (repository id, sha); `None` downloads every time
    /// (the tests' default, so no test reads another's disk).
    pub cache: Option<ArchiveCache>,
}

impl GitHubCode {
    /// The default caps, with the archive cache the environment describes
    /// (`PARLEY_SNAPSHOT_DIR`, `PARLEY_SNAPSHOT_CACHE_BYTES`).
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Self {
        GitHubCode {
            limits: Limits::default(),
            cache: ArchiveCache::from_env(env),
        }
    }

    /// The archive from the cache, else downloaded (and then cached); `true` when it came
    /// from the cache.
    async fn archive(
        &self,
        github: &dyn GitHub,
        scope: &RepoScope,
        key: &str,
        sha: &str,
    ) -> Result<(Vec<u8>, bool), String> {
        if let Some(bytes) = self.cache.as_ref().and_then(|cache| cache.get(key, sha)) {
            return Ok((bytes, true));
        }
        let bytes = github
            .download_tarball(scope, sha, MAX_ARCHIVE_BYTES)
            .await
            .map_err(|err| {
                tracing::warn!(repo = %scope.full_name(), sha, error = %err, "could not download the repository archive");
                "the repository archive could not be downloaded".to_string()
            })?;
        if let Some(cache) = &self.cache {
            cache.put(key, sha, &bytes);
        }
        Ok((bytes, false))
    }
}

#[async_trait]
impl CodeSource for GitHubCode {
    async fn open(
        &self,
        github: &dyn GitHub,
        scope: &RepoScope,
        sha: &str,
    ) -> Result<Arc<dyn Codebase>, String> {
        let opened = self.open_indexed(github, scope, sha).await;
        if opened.is_err() {
            parley_core::metrics::snapshot_unused();
        }
        opened
    }
}

impl GitHubCode {
    async fn open_indexed(
        &self,
        github: &dyn GitHub,
        scope: &RepoScope,
        sha: &str,
    ) -> Result<Arc<dyn Codebase>, String> {
        let started = Instant::now();
        // Keyed by the repository's id (its store key), never its name: a name changes
        // hands, and the next holder must not read the last one's archive.
        let key = scope.tenant().repo;
        // The reasons go into a public summary: what went wrong in Parley's words, the
        // details (GitHub's message, the archive's own paths) to the log only.
        let (bytes, cached) = self.archive(github, scope, &key, sha).await?;
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
            tracing::warn!(repo = %scope.full_name(), sha, cached, error = %err, "repository archive not used");
            // A cached archive that no longer reads was torn or altered on disk: the
            // next job downloads it again. (An unsafe or oversized one stays: GitHub
            // would serve the same bytes, and the answer would be the same.)
            if let (true, crate::SnapshotError::Corrupt(_), Some(cache)) =
                (cached, &err, &self.cache)
            {
                cache.remove(&key, sha);
            }
            err.public_reason()
        })?;
        let indexed = started.elapsed().saturating_sub(downloaded);
        parley_core::metrics::snapshot_opened((!cached).then_some(downloaded), indexed);
        tracing::info!(
            repo = %scope.full_name(),
            sha,
            files = index.files(),
            words = index.word_count(),
            cached,
            download_ms = downloaded.as_millis() as u64,
            index_ms = indexed.as_millis() as u64,
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
