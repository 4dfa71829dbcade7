//! Diff hunks as the unit of code memory.
//!
//! A hunk is what a reviewer reads: a function's worth of change with its `@@` context.
//! The chunker reuses the review's diff parser ([`crate::review::diff`]), so a hunk is
//! read the same way for reviewing and for remembering, strict about corrupt hunks as
//! `git apply` is. What it keeps is what later retrieval can use: hunks that add code
//! (a pure deletion has nothing to show as an example), with at least a few changed
//! lines, outside lock, vendored, generated and binary files, and at most a bounded number
//! per PR, largest first, so one huge PR cannot flood the corpus or the embedding bill.

use super::language::language_of;
use crate::config::DEFAULT_SKIP_PATHS;
use crate::ports::github::{ChangedFile, FileStatus};
use crate::review::diff::{self, DiffError, FileDiff, Hunk, LineKind, Patch};
use crate::review::inputs::glob_set;
use globset::GlobSet;
use sha2::{Digest, Sha256};

/// Chunker limits. By default a hunk needs 3 changed lines, and a PR gives at most 100.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkOptions {
    /// Globs of paths never chunked, on top of [`DEFAULT_SKIP_PATHS`] (a repository's
    /// `review.skipPaths`).
    pub skip_paths: Vec<String>,
    /// Added plus removed lines a hunk needs to be kept.
    pub min_changed_lines: usize,
    /// Hunks kept per PR; the largest (most changed lines) win.
    pub max_hunks: usize,
}

impl Default for ChunkOptions {
    fn default() -> Self {
        ChunkOptions {
            skip_paths: Vec::new(),
            min_changed_lines: 3,
            max_hunks: 100,
        }
    }
}

/// One kept hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub path: String,
    /// First line of the hunk in the new file.
    pub start_line: u32,
    /// Lines of the hunk in the new file.
    pub line_count: u32,
    /// The `@@` header's trailing text (usually the enclosing function); `None` if empty.
    pub function_context: Option<String>,
    pub added_lines: Vec<String>,
    pub removed_lines: usize,
    pub language: Option<&'static str>,
}

impl Chunk {
    pub fn changed_lines(&self) -> usize {
        self.added_lines.len() + self.removed_lines
    }

    /// What is embedded and searched: PR title, path, function context, added lines,
    /// one per line. The first three lines are always those headers (empty when absent,
    /// newlines in them flattened), so [`code_body`] can find the code again.
    pub fn embedding_text(&self, pr_title: &str) -> String {
        let mut text = String::new();
        for header in [
            pr_title,
            self.path.as_str(),
            self.function_context.as_deref().unwrap_or(""),
        ] {
            text.push_str(&one_line(header));
            text.push('\n');
        }
        text.push_str(&self.added_lines.join("\n"));
        text
    }

    /// SHA-256 (hex) of [`Chunk::embedding_text`]: the document key, so a hunk seen
    /// again under the same title (another push of the PR, a backport) is stored and
    /// embedded once.
    pub fn content_hash(&self, pr_title: &str) -> String {
        content_hash(&self.embedding_text(pr_title))
    }
}

/// SHA-256 of `text`, lower-case hex.
pub fn content_hash(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The added lines of a code document's text (see [`Chunk::embedding_text`]).
pub fn code_body(text: &str) -> &str {
    text.splitn(4, '\n').nth(3).unwrap_or("")
}

/// What the chunker kept, and what it left out and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chunked {
    /// Largest first (most changed lines; then path and line, for a stable order).
    pub chunks: Vec<Chunk>,
    pub skipped: Vec<Skipped>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: String,
    /// The hunk's first new-file line, when one hunk (not the whole file) was skipped.
    pub start_line: Option<u32>,
    pub reason: SkipReason,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// Matches a default or configured skip glob (lock, vendored, generated, binary…).
    Excluded,
    Binary,
    /// A symbolic link: its "content" is a target path, not code.
    Symlink,
    Deleted,
    /// GitHub sent no patch (binary or too large).
    NoPatch,
    /// The patch is corrupt; the parser's reason.
    Unreadable(String),
    NoAddedLines,
    TooFewChangedLines,
    /// Beyond [`ChunkOptions::max_hunks`].
    OverCap,
}

/// Chunk a PR's changed files as GitHub lists them (hunk-only `patch` per file). A file
/// whose patch is corrupt is skipped with the reason; the others are still chunked.
pub fn chunk_changed_files(files: &[ChangedFile], options: &ChunkOptions) -> Chunked {
    let mut chunker = Chunker::new(options);
    for file in files {
        if file.status == FileStatus::Removed {
            chunker.skip(&file.filename, None, SkipReason::Deleted);
            continue;
        }
        if chunker.excluded(&file.filename) {
            continue;
        }
        let Some(raw) = file.patch.as_deref().filter(|p| !p.trim().is_empty()) else {
            chunker.skip(&file.filename, None, SkipReason::NoPatch);
            continue;
        };
        match diff::parse_hunks(raw) {
            Ok(patch) => chunker.patch(&file.filename, &patch),
            Err(err) => chunker.skip(
                &file.filename,
                None,
                SkipReason::Unreadable(err.to_string()),
            ),
        }
    }
    chunker.finish()
}

/// Chunk a whole unified diff (`git diff`, `diff -u`, `git format-patch`). Strict like
/// `git apply`: a corrupt hunk anywhere rejects the diff, since hunk boundaries and line
/// numbers after it cannot be trusted.
pub fn chunk_diff(text: &str, options: &ChunkOptions) -> Result<Chunked, DiffError> {
    let files = diff::parse_unified(text)?;
    let mut chunker = Chunker::new(options);
    for file in &files {
        chunker.file_diff(file);
    }
    Ok(chunker.finish())
}

/// Git's file mode of a symbolic link.
const SYMLINK_MODE: &str = "120000";

struct Chunker<'a> {
    options: &'a ChunkOptions,
    skip: GlobSet,
    kept: Vec<Chunk>,
    skipped: Vec<Skipped>,
}

impl<'a> Chunker<'a> {
    fn new(options: &'a ChunkOptions) -> Self {
        let globs: Vec<String> = DEFAULT_SKIP_PATHS
            .iter()
            .map(|g| g.to_string())
            .chain(options.skip_paths.iter().cloned())
            .collect();
        Chunker {
            options,
            skip: glob_set(&globs),
            kept: Vec::new(),
            skipped: Vec::new(),
        }
    }

    fn skip(&mut self, path: &str, start_line: Option<u32>, reason: SkipReason) {
        self.skipped.push(Skipped {
            path: path.to_string(),
            start_line,
            reason,
        });
    }

    /// Whether `path` matches a skip glob (and record it if so).
    fn excluded(&mut self, path: &str) -> bool {
        let excluded = self.skip.is_match(path);
        if excluded {
            self.skip(path, None, SkipReason::Excluded);
        }
        excluded
    }

    fn file_diff(&mut self, file: &FileDiff) {
        let Some(path) = file.path() else {
            return;
        };
        if file.is_deleted() {
            self.skip(path, None, SkipReason::Deleted);
            return;
        }
        if self.excluded(path) {
            return;
        }
        if file.is_binary {
            self.skip(path, None, SkipReason::Binary);
            return;
        }
        if file.new_mode.as_deref() == Some(SYMLINK_MODE) {
            self.skip(path, None, SkipReason::Symlink);
            return;
        }
        self.patch(path, &file.patch);
    }

    fn patch(&mut self, path: &str, patch: &Patch) {
        for hunk in &patch.hunks {
            let chunk = chunk_of(path, hunk);
            let reason = if chunk.added_lines.is_empty() {
                Some(SkipReason::NoAddedLines)
            } else if chunk.changed_lines() < self.options.min_changed_lines {
                Some(SkipReason::TooFewChangedLines)
            } else {
                None
            };
            match reason {
                Some(reason) => self.skip(path, Some(chunk.start_line), reason),
                None => self.kept.push(chunk),
            }
        }
    }

    fn finish(mut self) -> Chunked {
        self.kept.sort_by(|a, b| {
            b.changed_lines()
                .cmp(&a.changed_lines())
                .then_with(|| a.path.cmp(&b.path))
                .then_with(|| a.start_line.cmp(&b.start_line))
        });
        if self.kept.len() > self.options.max_hunks {
            for chunk in self.kept.split_off(self.options.max_hunks) {
                self.skip(&chunk.path, Some(chunk.start_line), SkipReason::OverCap);
            }
        }
        Chunked {
            chunks: self.kept,
            skipped: self.skipped,
        }
    }
}

fn chunk_of(path: &str, hunk: &Hunk) -> Chunk {
    let context = hunk.section.trim();
    Chunk {
        path: path.to_string(),
        start_line: hunk.new_start,
        line_count: hunk.new_lines,
        function_context: (!context.is_empty()).then(|| context.to_string()),
        added_lines: hunk
            .lines
            .iter()
            .filter(|l| l.kind == LineKind::Added)
            .map(|l| l.text.clone())
            .collect(),
        removed_lines: hunk
            .lines
            .iter()
            .filter(|l| l.kind == LineKind::Removed)
            .count(),
        language: language_of(path),
    }
}

fn one_line(text: &str) -> String {
    text.split(['\n', '\r'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changed(name: &str, status: FileStatus, patch: Option<&str>) -> ChangedFile {
        ChangedFile::listed(name, status, patch)
    }

    const THREE_ADDED: &str = "@@ -1,2 +1,5 @@ fn main() {\n a\n+b\n+c\n+d\n e\n";

    #[test]
    fn a_hunk_keeps_path_lines_context_added_lines_and_language() {
        let chunked = chunk_changed_files(
            &[changed(
                "src/main.rs",
                FileStatus::Modified,
                Some(THREE_ADDED),
            )],
            &ChunkOptions::default(),
        );
        assert_eq!(
            chunked.chunks,
            [Chunk {
                path: "src/main.rs".into(),
                start_line: 1,
                line_count: 5,
                function_context: Some("fn main() {".into()),
                added_lines: vec!["b".into(), "c".into(), "d".into()],
                removed_lines: 0,
                language: Some("rust"),
            }]
        );
        let text = chunked.chunks[0].embedding_text("Fix\nthe parser");
        assert_eq!(text, "Fix the parser\nsrc/main.rs\nfn main() {\nb\nc\nd");
        assert_eq!(code_body(&text), "b\nc\nd");
        assert_eq!(
            chunked.chunks[0].content_hash("Fix\nthe parser"),
            content_hash(&text)
        );
        assert_eq!(chunked.chunks[0].content_hash("x").len(), 64);
        assert_ne!(
            chunked.chunks[0].content_hash("x"),
            chunked.chunks[0].content_hash("y")
        );
    }

    #[test]
    fn excluded_small_deleted_unreadable_and_patchless_files_are_reported() {
        let options = ChunkOptions {
            skip_paths: vec!["docs/**".into()],
            ..ChunkOptions::default()
        };
        let chunked = chunk_changed_files(
            &[
                changed("Cargo.lock", FileStatus::Modified, Some(THREE_ADDED)),
                changed("vendor/x/y.go", FileStatus::Added, Some(THREE_ADDED)),
                changed("docs/a.md", FileStatus::Modified, Some(THREE_ADDED)),
                changed("img/logo.png", FileStatus::Added, None),
                changed("gone.rs", FileStatus::Removed, Some("@@ -1 +0,0 @@\n-x\n")),
                changed(
                    "small.rs",
                    FileStatus::Modified,
                    Some("@@ -1 +1 @@\n-a\n+b\n"),
                ),
                changed("cut.rs", FileStatus::Modified, Some("@@ -1 +1,3 @@\n+b\n")),
                changed(
                    "only_removed.rs",
                    FileStatus::Modified,
                    Some("@@ -1,3 +0,0 @@\n-a\n-b\n-c\n"),
                ),
                changed("ok.py", FileStatus::Modified, Some(THREE_ADDED)),
            ],
            &options,
        );
        let kept: Vec<&str> = chunked.chunks.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(kept, ["ok.py"]);
        let reasons: Vec<(&str, &SkipReason)> = chunked
            .skipped
            .iter()
            .map(|s| (s.path.as_str(), &s.reason))
            .collect();
        assert_eq!(reasons[0], ("Cargo.lock", &SkipReason::Excluded));
        assert_eq!(reasons[1], ("vendor/x/y.go", &SkipReason::Excluded));
        assert_eq!(reasons[2], ("docs/a.md", &SkipReason::Excluded));
        // A `.png` matches the default binary globs before GitHub's missing patch counts.
        assert_eq!(reasons[3], ("img/logo.png", &SkipReason::Excluded));
        assert_eq!(reasons[4], ("gone.rs", &SkipReason::Deleted));
        assert_eq!(reasons[5], ("small.rs", &SkipReason::TooFewChangedLines));
        assert!(matches!(reasons[6], ("cut.rs", SkipReason::Unreadable(_))));
        assert_eq!(reasons[7], ("only_removed.rs", &SkipReason::NoAddedLines));
        assert_eq!(reasons.len(), 8);
    }

    #[test]
    fn binary_files_and_symlinks_in_a_whole_diff_are_skipped() {
        let text = "diff --git a/data.dat b/data.dat\nindex 1..2 100644\nBinary files a/data.dat and b/data.dat differ\ndiff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n@@ -0,0 +1,3 @@\n+a\n+b\n+c\n";
        let chunked = chunk_diff(text, &ChunkOptions::default()).unwrap();
        assert!(chunked.chunks.is_empty());
        let reasons: Vec<(&str, &SkipReason)> = chunked
            .skipped
            .iter()
            .map(|s| (s.path.as_str(), &s.reason))
            .collect();
        assert_eq!(
            reasons,
            [
                ("data.dat", &SkipReason::Binary),
                ("link", &SkipReason::Symlink)
            ]
        );
    }

    #[test]
    fn the_cap_keeps_the_largest_hunks() {
        let hunk = |start: u32, added: usize| {
            let body: String = (0..added).map(|i| format!("+l{i}\n")).collect();
            format!("@@ -{start},0 +{start},{added} @@\n{body}")
        };
        let patch = [hunk(1, 3), hunk(10, 7), hunk(30, 5), hunk(50, 4)].concat();
        let options = ChunkOptions {
            max_hunks: 2,
            ..ChunkOptions::default()
        };
        let chunked = chunk_changed_files(
            &[changed("a.rs", FileStatus::Modified, Some(&patch))],
            &options,
        );
        let starts: Vec<u32> = chunked.chunks.iter().map(|c| c.start_line).collect();
        assert_eq!(starts, [10, 30]);
        let over: Vec<Option<u32>> = chunked
            .skipped
            .iter()
            .filter(|s| s.reason == SkipReason::OverCap)
            .map(|s| s.start_line)
            .collect();
        assert_eq!(over, [Some(50), Some(1)]);
    }
}
