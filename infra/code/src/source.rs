//! Where a review gets the code it reads: GitHub's tarball of the head, fetched (or
//! taken from the local [`ArchiveCache`]), checked and indexed once per job.

use crate::cache::ArchiveCache;
use crate::index::CodeIndex;
use crate::snapshot::{Limits, Snapshot};
use async_trait::async_trait;
use parley_core::ports::code::{CodeSource, Codebase};
use parley_core::ports::{GitHub, RepoScope};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The largest archive downloaded (compressed).
pub const MAX_ARCHIVE_BYTES: u64 = 100 * 1024 * 1024;

#[derive(Debug, Clone, Default)]
pub struct GitHubCode {
    pub limits: Limits,
    /// Archives already downloaded, per (repository id, sha); `None` downloads every time
    /// (the tests' default, so no test reads another's disk).
    pub cache: Option<ArchiveCache>,
    /// The last snapshot opened, indexed (see [`LastOpened`]).
    pub last: LastOpened,
}

/// The last (repository id, sha) opened, with its index. A burst of comments on one PR is
/// a burst of jobs on the same head: a warm worker answers the next from memory, with the
/// files the last one parsed already parsed, instead of extracting and indexing the
/// archive again. One only, shared by the clones of a [`GitHubCode`]: a large
/// repository's index is tens of megabytes, and a different head replaces it.
#[derive(Clone, Default)]
pub struct LastOpened(Arc<Mutex<Option<Opened>>>);

/// (repository id, sha, index).
type Opened = (String, String, Arc<CodeIndex>);

impl LastOpened {
    fn get(&self, key: &str, sha: &str) -> Option<Arc<CodeIndex>> {
        let last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        last.as_ref()
            .filter(|(k, s, _)| k == key && s == sha)
            .map(|(_, _, index)| Arc::clone(index))
    }

    /// Let go of the last index before a new one is built, so that the two are not held
    /// at once (jobs still using it keep their own handle).
    fn clear(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    fn put(&self, key: String, sha: String, index: Arc<CodeIndex>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some((key, sha, index));
    }
}

impl std::fmt::Debug for LastOpened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match last.as_ref() {
            Some((key, sha, _)) => write!(f, "LastOpened({key}@{sha})"),
            None => write!(f, "LastOpened(none)"),
        }
    }
}

impl GitHubCode {
    /// The default caps, with the archive cache the environment describes
    /// (`PARLEY_SNAPSHOT_DIR`, `PARLEY_SNAPSHOT_CACHE_BYTES`).
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Self {
        GitHubCode {
            limits: Limits::default(),
            cache: ArchiveCache::from_env(env),
            last: LastOpened::default(),
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
        if let Some(index) = self.last.get(&key, sha) {
            parley_core::metrics::snapshot_opened(None, started.elapsed());
            tracing::info!(repo = %scope.full_name(), sha, "repository snapshot reused from memory");
            return Ok(index);
        }
        self.last.clear();
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
        let index = Arc::new(index);
        self.last.put(key, sha.to_owned(), Arc::clone(&index));
        Ok(index)
    }
}

/// A local working tree, indexed (`parley review --git/--diff`).
pub fn open_dir(root: &std::path::Path, limits: Limits) -> Result<Arc<dyn Codebase>, String> {
    let snapshot = Snapshot::from_dir(root, limits).map_err(|err| err.to_string())?;
    Ok(Arc::new(CodeIndex::build(snapshot)))
}
