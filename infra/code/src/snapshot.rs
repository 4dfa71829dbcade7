//! A repository's text files at one commit, from GitHub's tarball or a working tree.
//!
//! The tarball is what a stranger's PR points at, so it is read as hostile: an entry
//! with an absolute path or `..`, a link that leaves the tree, or a device or FIFO makes
//! the whole tarball refused (nothing in it is used), and caps bound what is kept (total
//! bytes, number of files, bytes per file). Only source text is kept: binaries (a NUL in
//! the first 8 KB), vendored and generated trees, lock files and minified bundles are
//! skipped, since no review question is answered by them. Held in memory: a Lambda reads
//! the snapshot once per job, and the caps keep it well inside the function's memory.

use flate2::read::GzDecoder;
use parley_core::repo::generated::says_generated;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Component, Path};

/// What a snapshot may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_total_bytes: u64,
    pub max_files: usize,
    pub max_file_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            // A 10,000-file repository is about 100 MB of source once generated files
            // are left out; held with its word index in about 150 MB, inside the
            // conversation worker's 512 MB.
            max_total_bytes: 128 * 1024 * 1024,
            max_files: 20_000,
            max_file_bytes: 1024 * 1024,
        }
    }
}

impl Limits {
    /// Whether a file of `size` bytes is read, with `files` kept so far: `Ok(false)`
    /// skips a file over its own cap, an error means the snapshot has too many files.
    fn admit(&self, files: usize, size: u64) -> Result<bool, SnapshotError> {
        if size > self.max_file_bytes {
            return Ok(false);
        }
        if files >= self.max_files {
            return Err(SnapshotError::OverCaps(format!(
                "more than {} files",
                self.max_files
            )));
        }
        Ok(true)
    }

    /// Count a kept file's `size` into `total`; an error means the snapshot as a whole
    /// is over its cap. Only kept files count: a repository's binaries and generated
    /// files do not use up the budget of its source.
    fn count(&self, total: &mut u64, size: usize) -> Result<(), SnapshotError> {
        *total = total.saturating_add(size as u64);
        if *total > self.max_total_bytes {
            return Err(SnapshotError::OverCaps(format!(
                "more than {} bytes of source",
                self.max_total_bytes
            )));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// An entry that could write or read outside the tree: nothing of it is used.
    #[error("the repository archive was refused: {0}")]
    Unsafe(String),
    #[error("the repository is over the snapshot's caps: {0}")]
    OverCaps(String),
    #[error("the repository archive could not be read: {0}")]
    Corrupt(String),
}

impl SnapshotError {
    /// What went wrong without the archive's own text (its paths are whoever wrote the
    /// PR's), for a public summary; `Display` has the details, for the log.
    pub fn public_reason(&self) -> String {
        match self {
            SnapshotError::Unsafe(_) => {
                "the repository archive was refused (an entry outside its tree or a special file)"
                    .to_string()
            }
            // Parley's own caps, no archive text.
            SnapshotError::OverCaps(what) => {
                format!("the repository is over the snapshot's caps ({what})")
            }
            SnapshotError::Corrupt(_) => "the repository archive could not be read".to_string(),
        }
    }
}

/// Text files by path (relative, `/`-separated).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub files: BTreeMap<String, String>,
    /// Files left out because their header says a tool wrote them: a review leaves them
    /// out too, where the default branch's copy says so as well.
    pub generated: BTreeSet<String>,
}

impl Snapshot {
    /// Read a gzipped tarball as GitHub serves it (`GET /repos/{o}/{r}/tarball/{sha}`):
    /// every entry under one top-level directory, which is dropped.
    pub fn from_tarball(bytes: &[u8], limits: Limits) -> Result<Snapshot, SnapshotError> {
        let mut archive = tar::Archive::new(GzDecoder::new(bytes));
        let entries = archive
            .entries()
            .map_err(|e| SnapshotError::Corrupt(e.to_string()))?;
        let mut snapshot = Snapshot::default();
        let mut total: u64 = 0;
        for entry in entries {
            let mut entry = entry.map_err(|e| SnapshotError::Corrupt(e.to_string()))?;
            let raw = entry
                .path()
                .map_err(|e| SnapshotError::Corrupt(e.to_string()))?
                .into_owned();
            let kind = entry.header().entry_type();
            if kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
                continue;
            }
            let path = relative(&raw)?;
            if kind.is_symlink() || kind.is_hard_link() {
                let target = entry
                    .link_name()
                    .map_err(|e| SnapshotError::Corrupt(e.to_string()))?
                    .ok_or_else(|| SnapshotError::Corrupt(format!("{path}: a link to nothing")))?
                    .into_owned();
                check_link(&path, &target, kind.is_hard_link())?;
                continue; // links are never followed
            }
            if kind.is_character_special() || kind.is_block_special() || kind.is_fifo() {
                return Err(SnapshotError::Unsafe(format!(
                    "{path}: a device or FIFO entry"
                )));
            }
            if !kind.is_file() {
                continue;
            }
            let Some(path) = strip_top(&path) else {
                continue;
            };
            let size = entry.header().size().unwrap_or(u64::MAX);
            if skipped(&path) || !limits.admit(snapshot.files.len(), size)? {
                continue;
            }
            let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            (&mut entry)
                .take(limits.max_file_bytes + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| SnapshotError::Corrupt(format!("{path}: {e}")))?;
            snapshot.keep(path, bytes, &limits, &mut total)?;
        }
        Ok(snapshot)
    }

    /// The files under `root` (a working tree), with the same rules; `.git` and hidden
    /// directories are left out, and links are not followed.
    pub fn from_dir(root: &Path, limits: Limits) -> Result<Snapshot, SnapshotError> {
        let mut snapshot = Snapshot::default();
        let mut total: u64 = 0;
        let mut pending = vec![root.to_path_buf()];
        while let Some(dir) = pending.pop() {
            let entries =
                std::fs::read_dir(&dir).map_err(|e| SnapshotError::Corrupt(e.to_string()))?;
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let full = entry.path();
                let Ok(rel) = full.strip_prefix(root) else {
                    continue;
                };
                let path = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                if kind.is_dir() {
                    if !name.starts_with('.') && !skipped(&format!("{path}/")) {
                        pending.push(full);
                    }
                    continue;
                }
                if !kind.is_file() || skipped(&path) {
                    continue;
                }
                let size = entry.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
                if !limits.admit(snapshot.files.len(), size)? {
                    continue;
                }
                if let Ok(bytes) = std::fs::read(&full) {
                    snapshot.keep(path, bytes, &limits, &mut total)?;
                }
            }
        }
        Ok(snapshot)
    }

    pub fn bytes(&self) -> usize {
        self.files.values().map(String::len).sum()
    }
}

/// The entry's path as `/`-separated text, refusing what could leave the tree.
fn relative(path: &Path) -> Result<String, SnapshotError> {
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(SnapshotError::Unsafe(format!(
                    "{}: a path with ..",
                    path.display()
                )));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(SnapshotError::Unsafe(format!(
                    "{}: an absolute path",
                    path.display()
                )));
            }
        }
    }
    Ok(parts.join("/"))
}

/// A link is refused when its target is absolute or climbs out of the tree from where
/// the link stands (a hard link's target is relative to the archive's root).
fn check_link(path: &str, target: &Path, hard: bool) -> Result<(), SnapshotError> {
    if target.is_absolute() {
        return Err(SnapshotError::Unsafe(format!(
            "{path}: a link to an absolute path"
        )));
    }
    let mut depth: i64 = if hard {
        0
    } else {
        path.split('/').count() as i64 - 1
    };
    for component in target.components() {
        match component {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => depth = -1,
        }
        if depth < 0 {
            return Err(SnapshotError::Unsafe(format!(
                "{path}: a link out of the tree"
            )));
        }
    }
    Ok(())
}

/// GitHub puts everything under `owner-repo-sha/`.
fn strip_top(path: &str) -> Option<String> {
    path.split_once('/')
        .map(|(_, rest)| rest.to_string())
        .filter(|rest| !rest.is_empty())
}

/// Trees and files no review question is answered by: build output, caches, lock files,
/// and other projects' code. Which trees hold other projects' code follows GitHub's own
/// conventions (Linguist's vendored paths), so that a definition found for a name is the
/// repository's own and not a bundled library's of the same name (`deps/` at the top
/// of a C project, `3rdparty/`, `external/`).
fn skipped(path: &str) -> bool {
    const DIRS: [&str; 19] = [
        "vendor/",
        "vendors/",
        "node_modules/",
        "bower_components/",
        "third_party/",
        "third-party/",
        "thirdparty/",
        "3rdparty/",
        "3rd_party/",
        "3rd-party/",
        "external/",
        "extern/",
        "target/",
        "dist/",
        "build/",
        ".git/",
        "__pycache__/",
        "venv/",
        "godeps/_workspace/",
    ];
    // Vendored only at the top: `src/deps/` is as often the project's own code.
    const TOP_DIRS: [&str; 1] = ["deps/"];
    const SUFFIXES: [&str; 6] = [".min.js", ".lock", ".map", "-lock.json", ".pb.go", ".snap"];
    let lower = path.to_ascii_lowercase();
    DIRS.iter()
        .any(|dir| lower.starts_with(dir) || lower.contains(&format!("/{dir}")))
        || TOP_DIRS.iter().any(|dir| lower.starts_with(dir))
        || SUFFIXES.iter().any(|suffix| lower.ends_with(suffix))
}

impl Snapshot {
    /// Keep `bytes` as `path`'s text when they are UTF-8 text without a NUL in their first
    /// 8 KB; one whose header says a tool wrote it is only named as generated.
    fn keep(
        &mut self,
        path: String,
        bytes: Vec<u8>,
        limits: &Limits,
        total: &mut u64,
    ) -> Result<(), SnapshotError> {
        if bytes.iter().take(8192).any(|b| *b == 0) {
            return Ok(());
        }
        let Ok(text) = String::from_utf8(bytes) else {
            return Ok(());
        };
        if says_generated(&text) {
            // Names only, and no more of them than files are kept: a hostile tarball of
            // countless tiny generated files costs no more than the cap.
            if self.generated.len() < limits.max_files {
                self.generated.insert(path);
            }
            return Ok(());
        }
        limits.count(total, text.len())?;
        self.files.insert(path, text);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::GzEncoder;

    /// A tarball as GitHub builds one: entries under `octo-repo-abc/`.
    fn tarball(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::fast()));
        for (path, kind, data, link) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            if let Some(link) = link {
                header.set_link_name(link).expect("link name");
            }
            // Written raw: the builder's own path checks would refuse the hostile ones.
            let name = header.as_old_mut();
            let bytes = path.as_bytes();
            name.name[..bytes.len()].copy_from_slice(bytes);
            header.set_cksum();
            builder.append(&header, *data).expect("append");
        }
        builder.into_inner().expect("tar").finish().expect("gzip")
    }

    const FILE: tar::EntryType = tar::EntryType::Regular;

    #[test]
    fn source_files_are_kept_under_their_repository_paths() {
        let bytes = tarball(&[
            ("octo-repo-abc/src/lib.rs", FILE, b"pub fn a() {}\n", None),
            ("octo-repo-abc/logo.png", FILE, b"\x89PNG\0\0", None),
            ("octo-repo-abc/vendor/x.rs", FILE, b"fn v() {}", None),
            ("octo-repo-abc/Cargo.lock", FILE, b"# lock", None),
            (
                "octo-repo-abc/api/types.pb.rs",
                FILE,
                b"// Code generated by protoc-gen-rust. DO NOT EDIT.\npub struct T;\n",
                None,
            ),
            (
                "octo-repo-abc/src/bindings.rs",
                FILE,
                b"/* automatically generated by rust-bindgen 0.69.4 */\npub type c_int = i32;\n",
                None,
            ),
            (
                "octo-repo-abc/src/parser.c",
                FILE,
                b"/* A Bison parser, made by GNU Bison 3.8.2.  */\nint yyparse(void) { return 0; }\n",
                None,
            ),
            (
                "octo-repo-abc/src/lexer.c",
                FILE,
                b"#line 2 \"src/lexer.c\"\n\n#line 4 \"src/lexer.c\"\n\n#define  YY_INT_ALIGNED short int\n\n/* A lexical scanner generated by flex */\nint yylex(void) { return 0; }\n",
                None,
            ),
            (
                "octo-repo-abc/src/ok_link",
                tar::EntryType::Symlink,
                b"",
                Some("lib.rs"),
            ),
        ]);
        let snapshot = Snapshot::from_tarball(&bytes, Limits::default()).expect("read");
        assert_eq!(
            snapshot.files.keys().collect::<Vec<_>>(),
            ["src/lib.rs"],
            "binaries, vendored code, generated files and lock files are skipped; links are not followed"
        );
        assert_eq!(
            snapshot.generated.iter().collect::<Vec<_>>(),
            [
                "api/types.pb.rs",
                "src/bindings.rs",
                "src/lexer.c",
                "src/parser.c"
            ],
            "the generated ones are named"
        );
    }

    #[test]
    fn other_projects_trees_are_skipped_where_github_calls_them_vendored() {
        for path in [
            "deps/jemalloc/src/arena.c",
            "src/3rdparty/zlib/inflate.c",
            "third-party/fmt/format.h",
            "lib/external/json.hpp",
            "extern/lua/lapi.c",
            "web/bower_components/x.js",
            "Godeps/_workspace/src/x.go",
            "venv/lib/site.py",
        ] {
            assert!(skipped(path), "{path}");
        }
        for path in [
            "src/deps/resolve.rs",
            "src/externals.rs",
            "src/vendoring/mod.rs",
            "deps.rs",
            "src/server.c",
            "app/venv_check.py",
        ] {
            assert!(!skipped(path), "{path}");
        }
    }

    #[test]
    fn hostile_entries_refuse_the_whole_tarball() {
        let cases: [(&str, tar::EntryType, Option<&str>); 6] = [
            ("/etc/passwd", FILE, None),
            ("octo-repo-abc/../../escape.rs", FILE, None),
            (
                "octo-repo-abc/src/out",
                tar::EntryType::Symlink,
                Some("../../../etc/passwd"),
            ),
            (
                "octo-repo-abc/src/abs",
                tar::EntryType::Symlink,
                Some("/etc/passwd"),
            ),
            (
                "octo-repo-abc/hard",
                tar::EntryType::Link,
                Some("../outside"),
            ),
            ("octo-repo-abc/dev", tar::EntryType::Char, None),
        ];
        for (path, kind, link) in cases {
            let bytes = tarball(&[
                ("octo-repo-abc/src/lib.rs", FILE, b"pub fn a() {}\n", None),
                (path, kind, b"", link),
            ]);
            let err = Snapshot::from_tarball(&bytes, Limits::default()).unwrap_err();
            assert!(matches!(err, SnapshotError::Unsafe(_)), "{path}: {err}");
        }
    }

    #[test]
    fn caps_are_enforced() {
        let bytes = tarball(&[
            ("octo-repo-abc/a.rs", FILE, b"fn a() {}", None),
            ("octo-repo-abc/b.rs", FILE, b"fn b() {}", None),
            ("octo-repo-abc/big.rs", FILE, &[b'x'; 100], None),
        ]);
        let few = Limits {
            max_files: 1,
            ..Limits::default()
        };
        assert!(matches!(
            Snapshot::from_tarball(&bytes, few),
            Err(SnapshotError::OverCaps(_))
        ));
        let small = Limits {
            max_total_bytes: 15,
            ..Limits::default()
        };
        assert!(matches!(
            Snapshot::from_tarball(&bytes, small),
            Err(SnapshotError::OverCaps(_))
        ));
        let generated = tarball(&[
            ("octo-repo-abc/a.rs", FILE, b"fn a() {}", None),
            (
                "octo-repo-abc/gen.rs",
                FILE,
                b"// @generated\nfn g() {}",
                None,
            ),
        ]);
        let tight = Limits {
            max_total_bytes: 10,
            ..Limits::default()
        };
        assert_eq!(
            Snapshot::from_tarball(&generated, tight)
                .expect("read")
                .files
                .len(),
            1,
            "a skipped file does not count against the total"
        );
        let many = tarball(&[
            ("octo-repo-abc/g1.rs", FILE, b"// @generated\n", None),
            ("octo-repo-abc/g2.rs", FILE, b"// @generated\n", None),
            ("octo-repo-abc/a.rs", FILE, b"fn a() {}", None),
        ]);
        let one = Limits {
            max_files: 1,
            ..Limits::default()
        };
        let read = Snapshot::from_tarball(&many, one).expect("generated files are not kept");
        assert_eq!(read.generated.len(), 1, "named no more than files are kept");
        let per_file = Limits {
            max_file_bytes: 50,
            ..Limits::default()
        };
        let kept = Snapshot::from_tarball(&bytes, per_file).expect("read");
        assert_eq!(kept.files.len(), 2, "a file over its cap is skipped");
        assert!(matches!(
            Snapshot::from_tarball(b"not a tarball", Limits::default()),
            Err(SnapshotError::Corrupt(_))
        ));
    }
}
