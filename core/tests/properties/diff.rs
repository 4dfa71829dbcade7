//! The unified diff parser: patches rendered from a model parse back to that model, any
//! text is answered without a panic, and whatever parses obeys its headers.

use crate::common::{MEGABYTE, config, grow, huge_config, text, text_with, timed};
use parley_core::review::diff::{DiffError, LineKind, Patch, parse_hunks, parse_unified};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct ModelHunk {
    old_start: u32,
    new_start: u32,
    section: String,
    lines: Vec<(LineKind, String)>,
}

/// Line text: anything but a line break (`str::lines` also eats a `\r` before `\n`).
fn line_text() -> impl Strategy<Value = String> {
    text().prop_map(|t| t.replace(['\n', '\r'], ""))
}

fn line_kind() -> impl Strategy<Value = LineKind> {
    prop_oneof![
        Just(LineKind::Context),
        Just(LineKind::Added),
        Just(LineKind::Removed)
    ]
}

fn hunk() -> impl Strategy<Value = ModelHunk> {
    (
        // Real files, far from u32::MAX (see `huge_line_numbers_do_not_overflow`).
        1u32..1_000_000,
        1u32..1_000_000,
        line_text(),
        prop::collection::vec((line_kind(), line_text()), 1..24),
    )
        .prop_map(|(old_start, new_start, section, lines)| ModelHunk {
            old_start,
            new_start,
            section,
            lines,
        })
}

/// Render hunks as GitHub's `patch` field does; `markers` adds "\ No newline at end of
/// file" after a hunk's last line, and `bare_blank` writes empty context lines without
/// their space, as some tools do.
fn render(hunks: &[ModelHunk], markers: bool, bare_blank: bool) -> String {
    let mut out = String::new();
    for h in hunks {
        let old = h
            .lines
            .iter()
            .filter(|(k, _)| *k != LineKind::Added)
            .count();
        let new = h
            .lines
            .iter()
            .filter(|(k, _)| *k != LineKind::Removed)
            .count();
        out.push_str(&format!(
            "@@ -{},{old} +{},{new} @@ {}\n",
            h.old_start, h.new_start, h.section
        ));
        for (kind, text) in &h.lines {
            let prefix = match kind {
                LineKind::Context if bare_blank && text.is_empty() => "",
                LineKind::Context => " ",
                LineKind::Added => "+",
                LineKind::Removed => "-",
            };
            out.push_str(prefix);
            out.push_str(text);
            out.push('\n');
        }
        if markers {
            out.push_str("\\ No newline at end of file\n");
        }
    }
    out
}

/// What holds for any parsed patch: each hunk's body matches its header, and line
/// numbers run on consecutively from the header's starts.
fn check_patch(patch: &Patch) -> Result<(), TestCaseError> {
    for h in &patch.hunks {
        let (mut old, mut new) = (h.old_start, h.new_start);
        let (mut olds, mut news) = (0u32, 0u32);
        for l in &h.lines {
            prop_assert!(!l.text.contains('\n'));
            match l.kind {
                LineKind::Context => {
                    prop_assert_eq!((l.old, l.new), (Some(old), Some(new)));
                }
                LineKind::Added => prop_assert_eq!((l.old, l.new), (None, Some(new))),
                LineKind::Removed => prop_assert_eq!((l.old, l.new), (Some(old), None)),
            }
            if l.old.is_some() {
                old += 1;
                olds += 1;
            }
            if l.new.is_some() {
                new += 1;
                news += 1;
            }
        }
        prop_assert_eq!((olds, news), (h.old_lines, h.new_lines));
    }
    let right: Vec<u32> = patch.lines().filter_map(|l| l.new).collect();
    prop_assert!(right.iter().all(|n| patch.right_lines().contains(n)));
    prop_assert!(patch.added_lines().is_subset(&patch.right_lines()));
    Ok(())
}

const DIFF_TOKENS: &[&str] = &[
    "@@ -1,2 +1,2 @@",
    "@@ -1 +1 @@",
    "@@ -0,0 +1,3 @@ fn x",
    "@@ -3,0 +4 @@",
    "@@",
    "\n+",
    "\n-",
    "\n ",
    "\n\\ No newline at end of file",
    "\n",
    "\ndiff --git a/x b/x",
    "\n--- a/x\n+++ b/x",
    "\n--- /dev/null",
    "\nrename from \"q\\303\\270\"",
    "\nBinary files a/x and b/x differ",
    "\nnew file mode 100644",
    "\n-- ",
];

proptest! {
    #![proptest_config(config())]

    /// A rendered patch parses back to its model, line for line.
    #[test]
    fn rendered_patches_round_trip(
        hunks in prop::collection::vec(hunk(), 0..6),
        markers in any::<bool>(),
        bare_blank in any::<bool>(),
    ) {
        let rendered = render(&hunks, markers, bare_blank);
        let patch = parse_hunks(&rendered).map_err(|e| TestCaseError::fail(format!("{e}\n{rendered}")))?;
        prop_assert_eq!(patch.hunks.len(), hunks.len());
        for (parsed, model) in patch.hunks.iter().zip(&hunks) {
            prop_assert_eq!(parsed.old_start, model.old_start);
            prop_assert_eq!(parsed.new_start, model.new_start);
            prop_assert_eq!(&parsed.section, model.section.trim());
            let lines: Vec<(LineKind, String)> =
                parsed.lines.iter().map(|l| (l.kind, l.text.clone())).collect();
            prop_assert_eq!(&lines, &model.lines);
        }
        check_patch(&patch)?;
        let added = hunks.iter().flat_map(|h| &h.lines).filter(|(k, _)| *k == LineKind::Added).count();
        let removed = hunks.iter().flat_map(|h| &h.lines).filter(|(k, _)| *k == LineKind::Removed).count();
        prop_assert_eq!((patch.additions(), patch.deletions()), (added, removed));
    }

    /// Dropping or duplicating one body line makes the body disagree with its header:
    /// the parser must say so rather than number lines wrongly.
    #[test]
    fn a_body_that_disagrees_with_its_header_is_an_error(
        hunks in prop::collection::vec(hunk(), 1..4),
        at in any::<prop::sample::Index>(),
        duplicate in any::<bool>(),
    ) {
        let rendered = render(&hunks, false, false);
        let mut lines: Vec<&str> = rendered.lines().collect();
        let body: Vec<usize> = (0..lines.len()).filter(|&i| !lines[i].starts_with("@@")).collect();
        let i = body[at.index(body.len())];
        if duplicate {
            lines.insert(i, lines[i]);
        } else {
            lines.remove(i);
        }
        let broken = lines.join("\n");
        let result = parse_hunks(&broken);
        prop_assert!(
            matches!(result, Err(DiffError::HunkTooLong { .. } | DiffError::HunkTooShort { .. })),
            "{result:?} for\n{broken}"
        );
    }

    /// Any text, with diff syntax mixed in: an error or a patch that obeys its headers.
    #[test]
    fn any_text_parses_or_fails_cleanly(input in text_with(DIFF_TOKENS)) {
        if let Ok(patch) = timed("parse_hunks", || parse_hunks(&input))? {
            check_patch(&patch)?;
        }
        if let Ok(files) = timed("parse_unified", || parse_unified(&input))? {
            for file in &files {
                check_patch(&file.patch)?;
            }
        }
    }

    /// Whole `git diff` output: each file's paths (multi-byte, with spaces) and hunks come
    /// back.
    #[test]
    fn git_diffs_round_trip(
        files in prop::collection::vec(
            ("[a-z0-9_.-]{1,8}( [a-z0-9_.-]{1,8})?(/[a-zé中😀0-9_.-]{1,8}){0,3}", prop::collection::vec(hunk(), 0..3)),
            1..5,
        ),
    ) {
        let mut text = String::new();
        for (path, hunks) in &files {
            text.push_str(&format!(
                "diff --git a/{path} b/{path}\nindex 83db48f..bf269f4 100644\n--- a/{path}\n+++ b/{path}\n{}",
                render(hunks, false, false)
            ));
        }
        let parsed = parse_unified(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(parsed.len(), files.len());
        for (file, (path, hunks)) in parsed.iter().zip(&files) {
            prop_assert_eq!(file.old_path.as_deref(), Some(path.as_str()));
            prop_assert_eq!(file.new_path.as_deref(), Some(path.as_str()));
            prop_assert_eq!(file.patch.hunks.len(), hunks.len());
            check_patch(&file.patch)?;
        }
    }
}

proptest! {
    #![proptest_config(huge_config())]

    /// A megabyte of patch, as one hunk of many lines or as one huge line.
    #[test]
    fn huge_patches_parse_in_bounded_time(unit in line_text(), one_line in any::<bool>()) {
        let (body, count) = if one_line {
            (format!("+{}\n", grow(&unit, MEGABYTE)), 1)
        } else {
            let line = format!("+{unit}\n");
            let count = MEGABYTE / line.len() + 1;
            (line.repeat(count), count)
        };
        let patch = format!("@@ -0,0 +1,{count} @@\n{body}");
        let parsed = timed("parse_hunks", || parse_hunks(&patch))?
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(parsed.additions(), count);
        let whole = format!("diff --git a/x b/x\n--- a/x\n+++ b/x\n{patch}");
        let files = timed("parse_unified", || parse_unified(&whole))?
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(files[0].patch.additions(), count);
        let junk = grow(&unit, MEGABYTE);
        let _ = timed("parse_hunks on junk", || parse_hunks(&junk))?;
        let _ = timed("parse_unified on junk", || parse_unified(&junk))?;
    }
}

/// A header near `u32::MAX` must give an error or unwrapped numbers, not a panic.
/// `old_next += 1` / `new_next += 1` in `HunkParser::body_line` overflow: a panic in debug
/// builds, line numbers wrapped to 0 in release. Fixed: such a header is `BadHeader`.
#[test]
fn huge_line_numbers_do_not_overflow() {
    for patch in [
        "@@ -4294967295,2 +1,2 @@\n a\n a\n",
        "@@ -1,2 +4294967295,2 @@\n a\n a\n",
    ] {
        let parsed = std::panic::catch_unwind(|| parse_hunks(patch));
        let parsed = parsed.unwrap_or_else(|_| panic!("panicked on {patch:?}"));
        if let Ok(p) = parsed {
            assert!(
                p.lines()
                    .all(|l| l.new.is_none_or(|n| n >= 1) && l.old.is_none_or(|n| n >= 1)),
                "wrapped line numbers for {patch:?}: {p:?}"
            );
        }
    }
}
