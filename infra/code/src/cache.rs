//! GitHub's archives of reviewed heads, kept on local disk per (repository id, sha).
//!
//! A PR's review and every answer in its threads read the same head; the download is the
//! slow part of opening a snapshot (the README's benchmarks), and a warm Lambda or
//! `parley serve` handles one PR's jobs back to back. The compressed archive is what is
//! kept (a fraction of the extracted size), and it is checked again on every read
//! ([`crate::Snapshot::from_tarball`]): a file on disk is no more trusted than the
//! download it came from. A byte budget bounds the directory; the least recently used
//! archives go first. Every failure here is logged and the job downloads instead: the
//! cache is an extra, never a reason a review reads less.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Where the archives go (`PARLEY_SNAPSHOT_DIR`); default `<temp dir>/parley-snapshots`.
pub const DIR_ENV: &str = "PARLEY_SNAPSHOT_DIR";
/// How many bytes the directory may hold (`PARLEY_SNAPSHOT_CACHE_BYTES`).
pub const BUDGET_ENV: &str = "PARLEY_SNAPSHOT_CACHE_BYTES";
/// 256 MB: half of a Lambda's default 512 MB of `/tmp`, which it shares with the job.
pub const DEFAULT_BUDGET: u64 = 256 * 1024 * 1024;

/// A directory of archives under a byte budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveCache {
    dir: PathBuf,
    budget: u64,
}

impl ArchiveCache {
    pub fn new(dir: impl Into<PathBuf>, budget: u64) -> Self {
        ArchiveCache {
            dir: dir.into(),
            budget,
        }
    }

    /// From `PARLEY_SNAPSHOT_DIR` and `PARLEY_SNAPSHOT_CACHE_BYTES`; a budget of 0 turns
    /// the cache off, an unreadable one is the default (logged).
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let get = |name: &str| parley_core::env::value(env(name));
        let dir = get(DIR_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(|| std::env::temp_dir().join("parley-snapshots"));
        let budget = match get(BUDGET_ENV) {
            None => DEFAULT_BUDGET,
            Some(text) => text.parse::<u64>().unwrap_or_else(|_| {
                tracing::warn!(value = %text, "{BUDGET_ENV} is not a number of bytes; using the default");
                DEFAULT_BUDGET
            }),
        };
        (budget > 0).then(|| ArchiveCache::new(dir, budget))
    }

    /// The archive of `sha` of the repository keyed `repo` (its store key, the GitHub
    /// id), if one is kept.
    pub fn get(&self, repo: &str, sha: &str) -> Option<Vec<u8>> {
        let path = self.path(repo, sha)?;
        let bytes = fs::read(&path).ok()?;
        // Read again is used again: the eviction order is by modification time.
        if let Err(err) = fs::File::options()
            .append(true)
            .open(&path)
            .and_then(|file| file.set_modified(SystemTime::now()))
        {
            tracing::debug!(path = %path.display(), error = %err, "could not mark a cached archive as used");
        }
        Some(bytes)
    }

    /// Keep `bytes` as the archive of `sha`, then evict the oldest archives until the
    /// directory is within the budget. An archive larger than the budget is not kept.
    pub fn put(&self, repo: &str, sha: &str, bytes: &[u8]) {
        let Some(path) = self.path(repo, sha) else {
            return;
        };
        if bytes.len() as u64 > self.budget {
            return;
        }
        if let Err(err) = self.write(&path, bytes) {
            tracing::warn!(dir = %self.dir.display(), error = %err, "could not cache the repository archive");
            return;
        }
        self.evict(&path);
    }

    /// Drop the archive of `sha` (it could not be read: a torn or altered file).
    pub fn remove(&self, repo: &str, sha: &str) {
        if let Some(path) = self.path(repo, sha) {
            let _ = fs::remove_file(path);
        }
    }

    /// Written under a temporary name and renamed, so a reader in another process (or a
    /// job that died halfway) never sees half an archive under the real name.
    fn write(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        fs::create_dir_all(&self.dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
        tmp.write_all(bytes)?;
        tmp.persist(path).map_err(|err| err.error)?;
        Ok(())
    }

    /// Oldest first until the total is within the budget; `keep` (just written) last.
    fn evict(&self, keep: &Path) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let mut archives: Vec<(SystemTime, u64, PathBuf)> = entries
            .flatten()
            .filter(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                if is_archive_name(&name) {
                    return true;
                }
                // A temporary file left by a job that died while writing: no writer takes
                // an hour over one archive, and nothing else would ever delete it.
                if name.starts_with(".tmp") && is_stale(entry, now) {
                    let _ = fs::remove_file(entry.path());
                }
                false
            })
            .filter_map(|entry| {
                let meta = entry.metadata().ok()?;
                meta.is_file().then(|| {
                    (
                        meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                        meta.len(),
                        entry.path(),
                    )
                })
            })
            .collect();
        let mut total: u64 = archives.iter().map(|(_, len, _)| len).sum();
        archives.sort_by_key(|(modified, _, path)| (path == keep, *modified));
        for (_, len, path) in archives {
            if total <= self.budget {
                break;
            }
            match fs::remove_file(&path) {
                Ok(()) => total = total.saturating_sub(len),
                Err(err) => {
                    tracing::debug!(path = %path.display(), error = %err, "could not evict a cached archive")
                }
            }
        }
    }

    /// `<repo>-<sha>.tar.gz` (the key's `:` written `-`: `repo:42` → `repo-42-<sha>`), or
    /// `None` (not cached) when either part could name anything but one file in the
    /// directory: the key must be id-shaped (letters, digits, `_`, `:`; a name-keyed
    /// `owner/name` is not cached) and the sha hex. Keys never hold `-`, so the mapping
    /// is one to one.
    fn path(&self, repo: &str, sha: &str) -> Option<PathBuf> {
        let repo_ok = !repo.is_empty()
            && repo.len() <= 64
            && repo
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
        let sha_ok = (7..=64).contains(&sha.len()) && sha.chars().all(|c| c.is_ascii_hexdigit());
        (repo_ok && sha_ok).then(|| {
            self.dir.join(format!(
                "{}-{}.tar.gz",
                repo.replace(':', "-"),
                sha.to_ascii_lowercase()
            ))
        })
    }
}

/// How old an unfinished temporary file must be before it is taken for abandoned.
const STALE_TMP: Duration = Duration::from_secs(3600);

fn is_stale(entry: &fs::DirEntry, now: SystemTime) -> bool {
    entry
        .metadata()
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|modified| now.duration_since(modified).ok())
        .is_some_and(|age| age > STALE_TMP)
}

fn is_archive_name(name: &str) -> bool {
    name.ends_with(".tar.gz") && !name.starts_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const SHA_B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    const SHA_C: &str = "cccccccccccccccccccccccccccccccccccccccc";

    fn age(cache: &ArchiveCache, repo: &str, sha: &str, secs_ago: u64) {
        let path = cache.path(repo, sha).expect("a cacheable key");
        fs::File::options()
            .append(true)
            .open(path)
            .and_then(|f| f.set_modified(SystemTime::now() - Duration::from_secs(secs_ago)))
            .expect("set mtime");
    }

    #[test]
    fn an_archive_is_kept_per_repository_and_sha() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ArchiveCache::new(dir.path(), 1024);
        cache.put("101", SHA_A, b"archive of 101");
        cache.put("202", SHA_A, b"archive of 202");
        assert_eq!(
            cache.get("101", SHA_A).as_deref(),
            Some(&b"archive of 101"[..])
        );
        assert_eq!(
            cache.get("202", SHA_A).as_deref(),
            Some(&b"archive of 202"[..])
        );
        assert_eq!(cache.get("101", SHA_B), None);
        cache.remove("101", SHA_A);
        assert_eq!(cache.get("101", SHA_A), None);
    }

    #[test]
    fn the_least_recently_used_archives_go_first_past_the_budget() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ArchiveCache::new(dir.path(), 25);
        cache.put("1", SHA_A, &[1; 10]);
        age(&cache, "1", SHA_A, 300);
        cache.put("1", SHA_B, &[2; 10]);
        age(&cache, "1", SHA_B, 200);
        // A is read: now the most recently used of the two.
        assert!(cache.get("1", SHA_A).is_some());
        cache.put("1", SHA_C, &[3; 10]);
        assert_eq!(
            cache.get("1", SHA_B),
            None,
            "the oldest unused archive is evicted"
        );
        assert!(cache.get("1", SHA_A).is_some());
        assert!(cache.get("1", SHA_C).is_some());
    }

    #[test]
    fn an_archive_over_the_budget_is_not_kept_and_evicts_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ArchiveCache::new(dir.path(), 16);
        cache.put("1", SHA_A, &[1; 10]);
        cache.put("1", SHA_B, &[2; 17]);
        assert_eq!(cache.get("1", SHA_B), None);
        assert!(cache.get("1", SHA_A).is_some());
    }

    #[test]
    fn temporary_files_a_dead_writer_left_are_removed_once_stale() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ArchiveCache::new(dir.path(), 1024);
        let stale = dir.path().join(".tmpDEAD");
        let fresh = dir.path().join(".tmpLIVE");
        fs::write(&stale, b"half an archive").expect("write");
        fs::write(&fresh, b"being written").expect("write");
        fs::File::options()
            .append(true)
            .open(&stale)
            .and_then(|f| f.set_modified(SystemTime::now() - Duration::from_secs(7200)))
            .expect("set mtime");
        cache.put("repo:1", SHA_A, b"archive");
        assert!(!stale.exists(), "an abandoned temporary file is removed");
        assert!(
            fresh.exists(),
            "one that may still be written is left alone"
        );
    }

    #[test]
    fn keys_that_could_name_another_file_are_not_cached() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ArchiveCache::new(dir.path().join("cache"), 1024);
        for (repo, sha) in [
            ("../x", SHA_A),
            ("octo/repo", SHA_A),
            ("repo-1", SHA_A),
            ("", SHA_A),
            ("1", "../../etc/passwd"),
            ("1", "HEAD"),
            ("1", "abc"),
        ] {
            cache.put(repo, sha, b"x");
            assert_eq!(cache.get(repo, sha), None, "{repo} {sha}");
        }
        assert!(
            !dir.path().join("cache").exists()
                || fs::read_dir(dir.path().join("cache"))
                    .expect("dir")
                    .next()
                    .is_none(),
            "nothing was written"
        );
    }

    #[test]
    fn the_environment_sets_the_directory_and_budget() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            ArchiveCache::from_env(env(&[(DIR_ENV, "/var/snap"), (BUDGET_ENV, "1000")])),
            Some(ArchiveCache::new("/var/snap", 1000))
        );
        assert_eq!(ArchiveCache::from_env(env(&[(BUDGET_ENV, "0")])), None);
        assert_eq!(
            ArchiveCache::from_env(env(&[(BUDGET_ENV, "lots")])),
            Some(ArchiveCache::new(
                std::env::temp_dir().join("parley-snapshots"),
                DEFAULT_BUDGET
            ))
        );
    }
}
