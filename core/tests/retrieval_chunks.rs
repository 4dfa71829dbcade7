//! The retrieval chunker on all 30 real diffs of ../shared/corpora/diffs, against the
//! facts its INDEX.md records (the origin test suites' results and `git apply`): which
//! files have hunks, where they start, how many lines they add and remove, which patches
//! are corrupt. Each diff is chunked twice: with the default options (what is stored),
//! and with a minimum of one changed line, so every hunk's facts are checked even where
//! the default minimum of three leaves it out.

use parley_core::ports::github::{ChangedFile, FileStatus};
use parley_core::retrieval::chunk::{
    ChunkOptions, Chunked, SkipReason, chunk_changed_files, chunk_diff,
};
use parley_core::review::diff::DiffError;
use std::path::PathBuf;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpora/diffs")
}

fn read(name: &str) -> String {
    let path = corpus().join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    String::from_utf8_lossy(&bytes).into_owned()
}

/// How the chunker reads a corpus file: a whole diff, or a GitHub `patch` field (hunks
/// only, no file headers), under the given file name.
#[derive(Clone, Copy)]
enum Form {
    Whole,
    HunkOnly(&'static str),
}

fn chunk(name: &str, form: Form, min_changed_lines: usize) -> Result<Chunked, DiffError> {
    let options = ChunkOptions {
        min_changed_lines,
        ..ChunkOptions::default()
    };
    match form {
        Form::Whole => chunk_diff(&read(name), &options),
        Form::HunkOnly(path) => Ok(chunk_changed_files(
            &[ChangedFile {
                filename: path.to_string(),
                status: FileStatus::Modified,
                additions: 0,
                deletions: 0,
                changes: 0,
                patch: Some(read(name)),
                previous_filename: None,
                sha: None,
            }],
            &options,
        )),
    }
}

/// One line per chunk (`path@start+count +added -removed [context] language`) and per
/// skip (`skip path[@line] reason`), in the chunker's order; or the error.
fn describe(result: Result<Chunked, DiffError>) -> Vec<String> {
    let chunked = match result {
        Ok(chunked) => chunked,
        Err(DiffError::HunkTooLong { .. }) => return vec!["corrupt: too long".into()],
        Err(DiffError::HunkTooShort { .. }) => return vec!["corrupt: too short".into()],
        Err(other) => return vec![format!("error: {other}")],
    };
    let mut out: Vec<String> = chunked
        .chunks
        .iter()
        .map(|c| {
            format!(
                "{}@{}+{} +{} -{} [{}] {}",
                c.path,
                c.start_line,
                c.line_count,
                c.added_lines.len(),
                c.removed_lines,
                c.function_context.as_deref().unwrap_or(""),
                c.language.unwrap_or("-"),
            )
        })
        .collect();
    out.extend(chunked.skipped.iter().map(|s| {
        let reason = match &s.reason {
            SkipReason::Excluded => "excluded".to_string(),
            SkipReason::Binary => "binary".to_string(),
            SkipReason::Symlink => "symlink".to_string(),
            SkipReason::Deleted => "deleted".to_string(),
            SkipReason::NoPatch => "no patch".to_string(),
            SkipReason::Unreadable(_) => "unreadable".to_string(),
            SkipReason::NoAddedLines => "no added lines".to_string(),
            SkipReason::TooFewChangedLines => "too few".to_string(),
            SkipReason::OverCap => "over cap".to_string(),
        };
        match s.start_line {
            Some(line) => format!("skip {}@{line} {reason}", s.path),
            None => format!("skip {} {reason}", s.path),
        }
    }));
    out
}

struct Case {
    name: &'static str,
    form: Form,
    /// Default options (at least 3 changed lines).
    stored: &'static [&'static str],
    /// At least 1 changed line.
    every_hunk: &'static [&'static str],
}

const CASES: &[Case] = &[
    // 3 files: added 4/0, modified +3/-1, removed 0/3 (the deletion is not chunked).
    Case {
        name: "unidiff/git.diff",
        form: Form::Whole,
        stored: &[
            "added_file@1+4 +4 -0 [] -",
            "modified_file@1+7 +3 -1 [] -",
            "skip removed_file deleted",
        ],
        every_hunk: &[
            "added_file@1+4 +4 -0 [] -",
            "modified_file@1+7 +3 -1 [] -",
            "skip removed_file deleted",
        ],
    },
    // Renames +1/-1, +1/-1 (`@@ -9,4 +9,4 @@ Some content`) and a pure rename (no hunk).
    Case {
        name: "unidiff/git_rename.diff",
        form: Form::Whole,
        stored: &["skip moved@9 too few", "skip newfile@9 too few"],
        every_hunk: &[
            "moved@9+4 +1 -1 [Some content] -",
            "newfile@9+4 +1 -1 [Some content] -",
        ],
    },
    Case {
        name: "unidiff/git_delete.diff",
        form: Form::Whole,
        stored: &["skip somefile.c deleted"],
        every_hunk: &["skip somefile.c deleted"],
    },
    // A new symlink (mode 120000): its one "line" is a target path.
    Case {
        name: "unidiff/git_symlink.diff",
        form: Form::Whole,
        stored: &["skip bin/check symlink"],
        every_hunk: &["skip bin/check symlink"],
    },
    // --no-prefix: file1 0/3 deleted, file2 +6 in two hunks (`@@ -4,0 +5,3 @@`), file3 +3 new.
    Case {
        name: "unidiff/git_no_prefix.diff",
        form: Form::Whole,
        stored: &[
            "file2@5+3 +3 -0 [line24] -",
            "file2@19+3 +3 -0 [line215] -",
            "file3@1+3 +3 -0 [] -",
            "skip file1 deleted",
        ],
        every_hunk: &[
            "file2@5+3 +3 -0 [line24] -",
            "file2@19+3 +3 -0 [line215] -",
            "file3@1+3 +3 -0 [] -",
            "skip file1 deleted",
        ],
    },
    Case {
        name: "unidiff/git_filenames_with_spaces.diff",
        form: Form::Whole,
        stored: &["skip has spaces/t.sql@1 too few"],
        every_hunk: &["has spaces/t.sql@1+1 +1 -0 [] sql"],
    },
    Case {
        name: "unidiff/git_quoted_filename_with_spaces.diff",
        form: Form::Whole,
        stored: &["skip docs/develop/Bug 排查.md@1 too few"],
        every_hunk: &["docs/develop/Bug 排查.md@1+1 +1 -1 [] markdown"],
    },
    // A bare CR inside a line is content, not a line break (git apply: +3).
    Case {
        name: "unidiff/git_cr.diff",
        form: Form::Whole,
        stored: &[
            "src/test/org/apache/commons/math/util/ExpandableDoubleArrayTest.java@1+3 +3 -0 [] java",
        ],
        every_hunk: &[
            "src/test/org/apache/commons/math/util/ExpandableDoubleArrayTest.java@1+3 +3 -0 [] java",
        ],
    },
    // Plain `diff -u`: +12/-8 in three hunks (one with a section header), +9 added, -9 deleted.
    Case {
        name: "unidiff/sample0.diff",
        form: Form::Whole,
        stored: &[
            "/path/to/new@11+10 +2 -8 [] -",
            "/path/to/another_new@1+9 +9 -0 [] -",
            "/path/to/new@1+9 +6 -0 [Section Header] -",
            "/path/to/new@22+7 +4 -0 [] -",
            "skip /path/to/existing deleted",
        ],
        every_hunk: &[
            "/path/to/new@11+10 +2 -8 [] -",
            "/path/to/another_new@1+9 +9 -0 [] -",
            "/path/to/new@1+9 +6 -0 [Section Header] -",
            "/path/to/new@22+7 +4 -0 [] -",
            "skip /path/to/existing deleted",
        ],
    },
    // Corrupt: git apply says "corrupt patch"; so does the chunker, for the whole diff.
    Case {
        name: "unidiff/sample6.diff",
        form: Form::Whole,
        stored: &["corrupt: too long"],
        every_hunk: &["corrupt: too long"],
    },
    Case {
        name: "unidiff/sample7.diff",
        form: Form::Whole,
        stored: &["corrupt: too short"],
        every_hunk: &["corrupt: too short"],
    },
    // Binary files (and empty new files) have no hunks; `.bin` is a default skip glob.
    Case {
        name: "unidiff/sample8.diff",
        form: Form::Whole,
        stored: &[
            "skip boo.bin excluded",
            "skip foo.bin excluded",
            "skip bar.bin excluded",
            "skip baz.bin deleted",
            "skip fuz.bin excluded",
        ],
        every_hunk: &[
            "skip boo.bin excluded",
            "skip foo.bin excluded",
            "skip bar.bin excluded",
            "skip baz.bin deleted",
            "skip fuz.bin excluded",
        ],
    },
    Case {
        name: "unidiff/binary.diff",
        form: Form::Whole,
        stored: &["skip 1x1.png excluded"],
        every_hunk: &["skip 1x1.png excluded"],
    },
    Case {
        name: "unidiff/inline_format_patch_hunkless_rename.diff",
        form: Form::Whole,
        stored: &[],
        every_hunk: &[],
    },
    // GitHub-style hunk-only patches.
    Case {
        name: "go-diff/sample_hunks.diff",
        form: Form::HunkOnly("lib/sample.go"),
        stored: &[
            "lib/sample.go@11+10 +2 -8 [] go",
            "lib/sample.go@1+9 +6 -0 [Section Header] go",
            "lib/sample.go@22+7 +4 -0 [] go",
        ],
        every_hunk: &[
            "lib/sample.go@11+10 +2 -8 [] go",
            "lib/sample.go@1+9 +6 -0 [Section Header] go",
            "lib/sample.go@22+7 +4 -0 [] go",
        ],
    },
    // Header counts disagree with the body: go-diff is lenient, git and Parley are not.
    Case {
        name: "go-diff/sample_bad_hunks.diff",
        form: Form::HunkOnly("lib/sample.go"),
        stored: &["skip lib/sample.go unreadable"],
        every_hunk: &["skip lib/sample.go unreadable"],
    },
    // Removed lines starting with `--` are not file headers; nothing is added.
    Case {
        name: "go-diff/sample_hunk_lines_start_with_minuses.diff",
        form: Form::HunkOnly("query.sql"),
        stored: &["skip query.sql@1 no added lines"],
        every_hunk: &["skip query.sql@1 no added lines"],
    },
    Case {
        name: "go-diff/sample_hunks_no_newline.diff",
        form: Form::HunkOnly("a.txt"),
        stored: &["skip a.txt@1 too few"],
        every_hunk: &["a.txt@1+1 +1 -1 [] -"],
    },
    Case {
        name: "go-diff/no_newline_both.diff",
        form: Form::HunkOnly("a.txt"),
        stored: &["skip a.txt@1 too few"],
        every_hunk: &["a.txt@1+1 +1 -1 [] -"],
    },
    Case {
        name: "go-diff/no_newline_new.diff",
        form: Form::HunkOnly("a.txt"),
        stored: &["a.txt@1+2 +1 -2 [] -"],
        every_hunk: &["a.txt@1+2 +1 -2 [] -"],
    },
    Case {
        name: "go-diff/no_newline_orig.diff",
        form: Form::HunkOnly("a.txt"),
        stored: &["skip a.txt@1 too few"],
        every_hunk: &["a.txt@1+1 +1 -1 [] -"],
    },
    Case {
        name: "go-diff/oneline_hunk.diff",
        form: Form::HunkOnly("a.txt"),
        stored: &["skip a.txt@1 too few"],
        every_hunk: &["a.txt@1+1 +1 -1 [] -"],
    },
    // `@@ -0,0 +1 @@`: an omitted count is 1 (NewStart 1, NewLines 1).
    Case {
        name: "go-diff/sample_no_chunksize.diff",
        form: Form::HunkOnly("a.txt"),
        stored: &["skip a.txt@1 too few"],
        every_hunk: &["a.txt@1+1 +1 -0 [] -"],
    },
    Case {
        name: "go-diff/sample_file_extended_binary_rename.diff",
        form: Form::Whole,
        stored: &["skip data/Other.png excluded"],
        every_hunk: &["skip data/Other.png excluded"],
    },
    Case {
        name: "go-diff/sample_file_extended_empty_rename_and_mode_change.diff",
        form: Form::Whole,
        stored: &[],
        every_hunk: &[],
    },
    // The 62-line hunk header over a shorter body: git apply says corrupt.
    Case {
        name: "go-diff/sample_multi_file_deleted.diff",
        form: Form::Whole,
        stored: &["corrupt: too short"],
        every_hunk: &["corrupt: too short"],
    },
    Case {
        name: "go-diff/sample_multi_file_new_win.diff",
        form: Form::Whole,
        stored: &["corrupt: too short"],
        every_hunk: &["corrupt: too short"],
    },
    Case {
        name: "go-diff/sample_multi_file_rename.diff",
        form: Form::Whole,
        stored: &[
            "skip README.md@24 too few",
            "skip release_notes.md@1 too few",
        ],
        every_hunk: &[
            "README.md@24+8 +2 -0 [and [view enterprise capabilities](https://www.example.com).*] markdown",
            "release_notes.md@1+5 +2 -0 [] markdown",
        ],
    },
    Case {
        name: "go-diff/delete_empty_file.diff",
        form: Form::Whole,
        stored: &[
            "skip Euler 0011/README.txt~ deleted",
            "skip Euler 0011/Euler0011.cpp deleted",
            "skip Euler 0011/README.txt~ deleted",
            "skip Euler 0011/README.txt deleted",
            "skip Euler 0011/README.txt~ deleted",
        ],
        every_hunk: &[
            "skip Euler 0011/README.txt~ deleted",
            "skip Euler 0011/Euler0011.cpp deleted",
            "skip Euler 0011/README.txt~ deleted",
            "skip Euler 0011/README.txt deleted",
            "skip Euler 0011/README.txt~ deleted",
        ],
    },
    // Quoted names with `\n`, `\"`, octal UTF-8; only one file has a hunk.
    Case {
        name: "go-diff/complicated_filenames.diff",
        form: Form::Whole,
        stored: &["skip new file with text@1 too few"],
        every_hunk: &["new file with text@1+1 +1 -0 [] -"],
    },
];

#[test]
fn every_diff_of_the_corpus_is_chunked_as_its_index_says() {
    let mut failures = Vec::new();
    for case in CASES {
        for (min, expected) in [(3, case.stored), (1, case.every_hunk)] {
            let got = describe(chunk(case.name, case.form, min));
            if got != expected {
                failures.push(format!(
                    "{} (min {min}):\n  got      {got:?}\n  expected {expected:?}",
                    case.name
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_table_covers_all_thirty_diffs() {
    let mut on_disk = Vec::new();
    for folder in ["unidiff", "go-diff"] {
        for entry in std::fs::read_dir(corpus().join(folder)).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".diff") {
                on_disk.push(format!("{folder}/{name}"));
            }
        }
    }
    on_disk.sort();
    let mut covered: Vec<String> = CASES.iter().map(|c| c.name.to_string()).collect();
    covered.sort();
    assert_eq!(on_disk.len(), 30);
    assert_eq!(covered, on_disk);
}

#[test]
fn a_corrupt_patch_of_one_file_spares_the_others() {
    let good = "@@ -1,1 +1,4 @@ fn main() {\n a\n+b\n+c\n+d\n";
    let files = [
        ChangedFile {
            filename: "bad.go".into(),
            status: FileStatus::Modified,
            additions: 0,
            deletions: 0,
            changes: 0,
            patch: Some(read("go-diff/sample_bad_hunks.diff")),
            previous_filename: None,
            sha: None,
        },
        ChangedFile {
            filename: "good.rs".into(),
            status: FileStatus::Modified,
            additions: 3,
            deletions: 0,
            changes: 3,
            patch: Some(good.into()),
            previous_filename: None,
            sha: None,
        },
    ];
    let chunked = chunk_changed_files(&files, &ChunkOptions::default());
    assert_eq!(
        describe(Ok(chunked)),
        [
            "good.rs@1+4 +3 -0 [fn main() {] rust",
            "skip bad.go unreadable"
        ]
    );
}
