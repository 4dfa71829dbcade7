//! The review's diff parser on the corpus of real diffs (../shared/corpora/diffs), checked
//! against the results the corpus's source test suites and `git apply` give.

use parley_core::review::diff::{DiffError, FileDiff, LineKind, parse_hunks, parse_unified};

fn read(name: &str) -> String {
    let path = parley_tests::corpora().join("diffs").join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    String::from_utf8_lossy(&bytes).into_owned()
}

fn files(name: &str) -> Vec<FileDiff> {
    parse_unified(&read(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `(path, additions, deletions)` per file.
fn stats(files: &[FileDiff]) -> Vec<(String, usize, usize)> {
    files
        .iter()
        .map(|f| {
            (
                f.path().unwrap_or_default().to_string(),
                f.patch.additions(),
                f.patch.deletions(),
            )
        })
        .collect()
}

fn owned(expected: &[(&str, usize, usize)]) -> Vec<(String, usize, usize)> {
    expected
        .iter()
        .map(|(p, a, d)| (p.to_string(), *a, *d))
        .collect()
}

#[test]
fn git_diff_with_added_modified_and_deleted_files() {
    let parsed = files("unidiff/git.diff");
    assert_eq!(parsed.len(), 3);
    assert!(parsed[0].is_added());
    assert_eq!(
        (parsed[0].patch.additions(), parsed[0].patch.deletions()),
        (4, 0)
    );
    assert_eq!(
        (parsed[1].patch.additions(), parsed[1].patch.deletions()),
        (3, 1)
    );
    assert!(parsed[2].is_deleted());
    assert_eq!(
        (parsed[2].patch.additions(), parsed[2].patch.deletions()),
        (0, 3)
    );
}

#[test]
fn renames_with_and_without_hunks() {
    let parsed = files("unidiff/git_rename.diff");
    assert_eq!(parsed.len(), 3);
    assert!(parsed.iter().all(|f| f.is_rename));
    let counts: Vec<(usize, usize)> = parsed
        .iter()
        .map(|f| (f.patch.additions(), f.patch.deletions()))
        .collect();
    assert_eq!(counts, [(1, 1), (1, 1), (0, 0)]);
    assert!(
        parsed
            .iter()
            .any(|f| f.new_path.as_deref() == Some("sub/otherfile"))
    );

    let hunkless = files("unidiff/inline_format_patch_hunkless_rename.diff");
    assert_eq!(hunkless.len(), 1);
    assert!(hunkless[0].is_rename);
    assert!(hunkless[0].patch.hunks.is_empty());

    let mode = files("go-diff/sample_file_extended_empty_rename_and_mode_change.diff");
    assert_eq!(mode.len(), 1);
    assert_eq!(mode[0].old_path.as_deref(), Some("textfile.txt"));
    assert_eq!(mode[0].new_path.as_deref(), Some("textfile2.txt"));
    assert_eq!(mode[0].old_mode.as_deref(), Some("100644"));
    assert_eq!(mode[0].new_mode.as_deref(), Some("100755"));

    let binary = files("go-diff/sample_file_extended_binary_rename.diff");
    assert_eq!(binary.len(), 1);
    assert!(binary[0].is_rename && binary[0].is_binary);
    assert_eq!(binary[0].new_path.as_deref(), Some("data/Other.png"));

    assert_eq!(files("go-diff/sample_multi_file_rename.diff").len(), 3);
}

#[test]
fn deleted_file_to_dev_null() {
    let parsed = files("unidiff/git_delete.diff");
    assert_eq!(parsed.len(), 1);
    assert!(parsed[0].is_deleted());
    assert_eq!(parsed[0].old_path.as_deref(), Some("somefile.c"));
    assert_eq!(parsed[0].patch.hunks[0].new_start, 0);
}

#[test]
fn no_prefix_diff_with_zero_length_old_side() {
    let parsed = files("unidiff/git_no_prefix.diff");
    assert_eq!(
        stats(&parsed),
        owned(&[("file1", 0, 3), ("file2", 6, 0), ("file3", 3, 0)])
    );
    assert!(parsed[0].is_deleted());
    assert!(parsed[2].is_added());
    // `@@ -4,0 +5,3 @@`: the added lines are 5, 6 and 7 of the new file.
    let right: Vec<u32> = parsed[1].patch.hunks[0]
        .lines
        .iter()
        .filter_map(|l| l.new)
        .collect();
    assert_eq!(right, [5, 6, 7]);
}

#[test]
fn paths_with_spaces_and_quoted_utf8() {
    assert_eq!(
        files("unidiff/git_filenames_with_spaces.diff")[0].path(),
        Some("has spaces/t.sql")
    );
    assert_eq!(
        files("unidiff/git_quoted_filename_with_spaces.diff")[0].path(),
        Some("docs/develop/Bug 排查.md")
    );
    let complicated = files("go-diff/complicated_filenames.diff");
    assert_eq!(complicated.len(), 6);
    assert_eq!(complicated[0].path(), Some("new empty file with spaces"));
    assert_eq!(complicated[1].path(), Some("new file with text"));
    assert_eq!(complicated[3].path(), Some("new, complicated\nfilenøme"));
    assert_eq!(complicated[4].path(), Some("new \"complicated\" filename"));
    assert_eq!(
        complicated[5].old_path.as_deref(),
        Some("existing \"complicated\" filename")
    );

    let deleted = files("go-diff/delete_empty_file.diff");
    assert_eq!(deleted.len(), 5);
    assert!(deleted.iter().all(FileDiff::is_deleted));
    assert_eq!(
        deleted[0].old_path.as_deref(),
        Some("Euler 0011/README.txt~")
    );
}

#[test]
fn bare_carriage_return_inside_a_line() {
    let parsed = files("unidiff/git_cr.diff");
    assert_eq!(parsed.len(), 1);
    assert_eq!(parsed[0].patch.additions(), 3);
}

#[test]
fn plain_diff_u_without_git_headers() {
    let parsed = files("unidiff/sample0.diff");
    let counts: Vec<(usize, usize)> = parsed
        .iter()
        .map(|f| (f.patch.additions(), f.patch.deletions()))
        .collect();
    assert_eq!(counts, [(12, 8), (9, 0), (0, 9)]);
    assert!(parsed[1].is_added());
    assert!(parsed[2].is_deleted());
}

#[test]
fn binary_files_have_no_hunks() {
    let parsed = files("unidiff/sample8.diff");
    assert_eq!(parsed.len(), 5);
    let binary: Vec<bool> = parsed.iter().map(|f| f.is_binary).collect();
    assert_eq!(binary, [false, true, true, true, false]);
    assert!(parsed.iter().all(|f| f.patch.hunks.is_empty()));

    let literal = files("unidiff/binary.diff");
    assert_eq!(literal.len(), 1);
    assert!(literal[0].is_binary && literal[0].is_added());
    assert_eq!(literal[0].path(), Some("1x1.png"));

    let symlink = files("unidiff/git_symlink.diff");
    assert_eq!(symlink[0].new_mode.as_deref(), Some("120000"));
}

#[test]
fn hunk_lengths_that_disagree_with_the_header_are_corrupt() {
    for name in [
        "unidiff/sample6.diff",
        "unidiff/sample7.diff",
        "go-diff/sample_multi_file_deleted.diff",
        "go-diff/sample_multi_file_new_win.diff",
    ] {
        let result = parse_unified(&read(name));
        assert!(
            matches!(
                result,
                Err(DiffError::HunkTooLong { .. } | DiffError::HunkTooShort { .. })
            ),
            "{name}: {result:?}"
        );
    }
    let result = parse_hunks(&read("go-diff/sample_bad_hunks.diff"));
    assert!(result.is_err(), "{result:?}");
}

#[test]
fn githubs_hunk_only_patches() {
    let patch = parse_hunks(&read("go-diff/sample_hunks.diff")).unwrap();
    assert_eq!(patch.hunks.len(), 3);
    assert_eq!(patch.hunks[0].section, "Section Header");
    assert_eq!(
        (
            patch.hunks[1].old_start,
            patch.hunks[1].old_lines,
            patch.hunks[1].new_start,
            patch.hunks[1].new_lines
        ),
        (5, 16, 11, 10)
    );
    let right = patch.right_lines();
    assert!(right.contains(&1) && right.contains(&28));
    assert!(!right.contains(&29));

    let minuses = parse_hunks(&read("go-diff/sample_hunk_lines_start_with_minuses.diff")).unwrap();
    let removed: Vec<&str> = minuses
        .lines()
        .filter(|l| l.kind == LineKind::Removed)
        .map(|l| l.text.as_str())
        .collect();
    assert_eq!(removed, ["-- this is my query", "-- this is the last line"]);

    let no_size = parse_hunks(&read("go-diff/sample_no_chunksize.diff")).unwrap();
    let h = &no_size.hunks[0];
    assert_eq!(
        (h.old_start, h.old_lines, h.new_start, h.new_lines),
        (0, 0, 1, 1)
    );

    for name in [
        "go-diff/sample_hunks_no_newline.diff",
        "go-diff/no_newline_both.diff",
        "go-diff/no_newline_new.diff",
        "go-diff/no_newline_orig.diff",
        "go-diff/oneline_hunk.diff",
    ] {
        let patch = parse_hunks(&read(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(patch.additions() >= 1, "{name}");
        assert!(
            patch.lines().all(|l| !l.text.starts_with("No newline")),
            "{name}: the marker is not a line"
        );
    }
    let both = parse_hunks(&read("go-diff/no_newline_both.diff")).unwrap();
    assert_eq!(both.right_lines().into_iter().collect::<Vec<_>>(), [1]);
}
