//! Unified diffs: GitHub's hunk-only `patch` field, and whole multi-file diffs.
//!
//! The review needs one fact above all from a patch: which lines of the new file are on
//! the diff's right side, because GitHub accepts inline comments only there (a comment
//! anywhere else makes it refuse the whole review with 422). It also needs the code
//! around a line, for the finding's fingerprint.
//!
//! The parser is strict about hunk lengths: a body longer or shorter than its `@@` header
//! says is a corrupt patch (git apply rejects it too), and mapping lines through a corrupt
//! patch would put comments on the wrong lines. Such a file is reported as not reviewed
//! rather than reviewed wrongly.

use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiffError {
    #[error("line {line}: malformed hunk header {header:?}")]
    BadHeader { line: usize, header: String },
    #[error("line {line}: hunk body is longer than its header says")]
    HunkTooLong { line: usize },
    #[error("line {line}: hunk body is shorter than its header says")]
    HunkTooShort { line: usize },
    #[error("line {line}: unexpected text outside a hunk: {text:?}")]
    Stray { line: usize, text: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Context,
    Added,
    Removed,
}

impl LineKind {
    /// The character a unified diff starts such a line with.
    pub fn sign(self) -> char {
        match self {
            LineKind::Context => ' ',
            LineKind::Added => '+',
            LineKind::Removed => '-',
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: LineKind,
    /// Line number in the old file (context and removed lines).
    pub old: Option<u32>,
    /// Line number in the new file (context and added lines): the right side.
    pub new: Option<u32>,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub old_start: u32,
    pub old_lines: u32,
    pub new_start: u32,
    pub new_lines: u32,
    /// Text after the closing `@@` (often the enclosing function).
    pub section: String,
    pub lines: Vec<DiffLine>,
}

/// The hunks of one file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Patch {
    pub hunks: Vec<Hunk>,
}

impl Patch {
    /// Lines of the new file that are in the diff (added or context): where GitHub takes
    /// inline comments with `side: RIGHT`.
    pub fn right_lines(&self) -> BTreeSet<u32> {
        self.lines().filter_map(|l| l.new).collect()
    }

    /// Lines this change added.
    pub fn added_lines(&self) -> BTreeSet<u32> {
        self.lines()
            .filter(|l| l.kind == LineKind::Added)
            .filter_map(|l| l.new)
            .collect()
    }

    pub fn lines(&self) -> impl Iterator<Item = &DiffLine> {
        self.hunks.iter().flat_map(|h| h.lines.iter())
    }

    /// The new file's text of `line` and up to `radius` right-side lines each way, within
    /// the same hunk: the code a finding is about, independent of its line number.
    pub fn right_context(&self, line: u32, radius: u32) -> Option<String> {
        let hunk = self
            .hunks
            .iter()
            .find(|h| h.lines.iter().any(|l| l.new == Some(line)))?;
        let low = line.saturating_sub(radius);
        let high = line.saturating_add(radius);
        let text: Vec<&str> = hunk
            .lines
            .iter()
            .filter(|l| l.new.is_some_and(|n| n >= low && n <= high))
            .map(|l| l.text.as_str())
            .collect();
        Some(text.join("\n"))
    }

    /// The lines within `around` old lines of `start..=end` (numbered in the old file),
    /// as a diff, and the first new-side line among those at `start..=end` (else in the
    /// window): how the code someone commented on changed, and where it is now.
    pub fn near(&self, start: u32, end: u32, around: u32) -> (String, Option<u32>) {
        let (from, to) = (start.saturating_sub(around), end.saturating_add(around));
        let mut out = String::new();
        let (mut at, mut beside) = (None, None);
        for hunk in &self.hunks {
            let mut last_old = hunk.old_start.saturating_sub(1);
            for line in &hunk.lines {
                let old = line.old.unwrap_or(last_old);
                if let Some(number) = line.old {
                    last_old = number;
                }
                if old < from || old > to {
                    continue;
                }
                if (start..=end).contains(&old) {
                    at = at.or(line.new);
                }
                beside = beside.or(line.new);
                out.push_str(&format!("{}{}\n", line.kind.sign(), line.text));
            }
        }
        (out, at.or(beside))
    }

    /// Where old line `old` stands in the new file: `None` when the change removed it.
    /// A line no hunk shows moved by what the hunks before it added and removed.
    pub fn follow(&self, old: u32) -> Option<u32> {
        // A side with no lines names the line before the hunk (`@@ -3,0 +4,2 @@` adds
        // two lines after old line 3), so what follows it starts one later.
        let after = |start: u32, lines: u32| i64::from(start) + i64::from(lines.max(1));
        let mut shift: i64 = 0;
        for hunk in &self.hunks {
            let first = if hunk.old_lines == 0 {
                hunk.old_start.saturating_add(1)
            } else {
                hunk.old_start
            };
            if old < first {
                break;
            }
            if i64::from(old) < after(hunk.old_start, hunk.old_lines) && hunk.old_lines > 0 {
                return hunk
                    .lines
                    .iter()
                    .find(|l| l.old == Some(old))
                    .and_then(|l| l.new);
            }
            shift = after(hunk.new_start, hunk.new_lines) - after(hunk.old_start, hunk.old_lines);
        }
        u32::try_from(i64::from(old) + shift).ok()
    }

    /// The patch as GitHub sends it in a changed file's `patch` field (hunks only): how a
    /// local `git diff` becomes the same input a PR review gets.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for hunk in &self.hunks {
            out.push_str(&format!(
                "@@ -{},{} +{},{} @@",
                hunk.old_start, hunk.old_lines, hunk.new_start, hunk.new_lines
            ));
            if !hunk.section.is_empty() {
                out.push(' ');
                out.push_str(&hunk.section);
            }
            out.push('\n');
            for line in &hunk.lines {
                out.push(line.kind.sign());
                out.push_str(&line.text);
                out.push('\n');
            }
        }
        if out.ends_with('\n') {
            out.pop();
        }
        out
    }

    pub fn additions(&self) -> usize {
        self.lines().filter(|l| l.kind == LineKind::Added).count()
    }

    pub fn deletions(&self) -> usize {
        self.lines().filter(|l| l.kind == LineKind::Removed).count()
    }
}

/// Parse a hunk-only patch, as GitHub sends in a changed file's `patch` field.
pub fn parse_hunks(patch: &str) -> Result<Patch, DiffError> {
    let mut parser = HunkParser::default();
    for (index, line) in patch.lines().enumerate() {
        let number = index + 1;
        if parser.wants_body() {
            parser.body_line(line, number)?;
        } else if line.starts_with("@@") {
            parser.header(line, number)?;
        } else if line.starts_with('\\') && !parser.hunks.is_empty() {
            // "\ No newline at end of file" after the last line of a hunk.
        } else if line.starts_with(['+', '-', ' ']) && !parser.hunks.is_empty() {
            return Err(DiffError::HunkTooLong { line: number });
        } else if !line.is_empty() {
            return Err(DiffError::Stray {
                line: number,
                text: line.to_string(),
            });
        }
    }
    parser.finish(patch.lines().count() + 1)
}

#[derive(Default)]
struct HunkParser {
    hunks: Vec<Hunk>,
    old_left: u32,
    new_left: u32,
    old_next: u32,
    new_next: u32,
}

impl HunkParser {
    fn wants_body(&self) -> bool {
        self.old_left > 0 || self.new_left > 0
    }

    fn header(&mut self, line: &str, number: usize) -> Result<(), DiffError> {
        let bad = || DiffError::BadHeader {
            line: number,
            header: line.to_string(),
        };
        let rest = line.strip_prefix("@@ ").ok_or_else(bad)?;
        let (ranges, section) = rest.split_once(" @@").ok_or_else(bad)?;
        let (old, new) = ranges.split_once(' ').ok_or_else(bad)?;
        let (old_start, old_lines) =
            range(old.strip_prefix('-').ok_or_else(bad)?).ok_or_else(bad)?;
        let (new_start, new_lines) =
            range(new.strip_prefix('+').ok_or_else(bad)?).ok_or_else(bad)?;
        // A range past u32::MAX cannot be numbered: refuse it rather than wrap.
        if old_start.checked_add(old_lines).is_none() || new_start.checked_add(new_lines).is_none()
        {
            return Err(bad());
        }
        self.hunks.push(Hunk {
            old_start,
            old_lines,
            new_start,
            new_lines,
            section: section.trim().to_string(),
            lines: Vec::new(),
        });
        self.old_left = old_lines;
        self.new_left = new_lines;
        self.old_next = old_start;
        self.new_next = new_start;
        Ok(())
    }

    fn body_line(&mut self, line: &str, number: usize) -> Result<(), DiffError> {
        if line.starts_with('\\') {
            return Ok(());
        }
        if line.starts_with("@@") {
            return Err(DiffError::HunkTooShort { line: number });
        }
        // Some tools strip the single space of an empty context line.
        let (kind, text) = match line.chars().next() {
            Some('+') => (LineKind::Added, &line[1..]),
            Some('-') => (LineKind::Removed, &line[1..]),
            Some(' ') => (LineKind::Context, &line[1..]),
            None => (LineKind::Context, ""),
            Some(_) => return Err(DiffError::HunkTooShort { line: number }),
        };
        let takes_old = kind != LineKind::Added;
        let takes_new = kind != LineKind::Removed;
        if (takes_old && self.old_left == 0) || (takes_new && self.new_left == 0) {
            return Err(DiffError::HunkTooLong { line: number });
        }
        let mut entry = DiffLine {
            kind,
            old: None,
            new: None,
            text: text.to_string(),
        };
        if takes_old {
            entry.old = Some(self.old_next);
            self.old_next = self.old_next.saturating_add(1);
            self.old_left -= 1;
        }
        if takes_new {
            entry.new = Some(self.new_next);
            self.new_next = self.new_next.saturating_add(1);
            self.new_left -= 1;
        }
        if let Some(hunk) = self.hunks.last_mut() {
            hunk.lines.push(entry);
        }
        Ok(())
    }

    fn finish(self, line: usize) -> Result<Patch, DiffError> {
        if self.wants_body() {
            return Err(DiffError::HunkTooShort { line });
        }
        Ok(Patch { hunks: self.hunks })
    }
}

/// `start,count` or `start` (count 1).
fn range(spec: &str) -> Option<(u32, u32)> {
    match spec.split_once(',') {
        Some((start, count)) => Some((start.parse().ok()?, count.parse().ok()?)),
        None => Some((spec.parse().ok()?, 1)),
    }
}

// --- whole diffs ---------------------------------------------------------------------------

/// One file of a multi-file diff.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileDiff {
    /// `None` for an added file.
    pub old_path: Option<String>,
    /// `None` for a deleted file.
    pub new_path: Option<String>,
    pub is_rename: bool,
    pub is_copy: bool,
    pub is_binary: bool,
    pub old_mode: Option<String>,
    pub new_mode: Option<String>,
    pub patch: Patch,
}

impl FileDiff {
    pub fn is_added(&self) -> bool {
        self.old_path.is_none()
    }

    pub fn is_deleted(&self) -> bool {
        self.new_path.is_none()
    }

    /// The path a reviewer would name: the new one, or the old one for a deletion.
    pub fn path(&self) -> Option<&str> {
        self.new_path.as_deref().or(self.old_path.as_deref())
    }
}

/// Parse a whole diff (`git diff`, `diff -u`, `git format-patch`) into its files. Lines
/// outside any file (mail headers, signatures) are skipped; hunks are parsed strictly.
pub fn parse_unified(text: &str) -> Result<Vec<FileDiff>, DiffError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut files: Vec<FileDiff> = Vec::new();
    let mut hunks = HunkParser::default();
    let mut in_file = false;
    // Whether the current file already had its `---`/`+++` pair: a second pair starts the
    // next file of a plain `diff -u` (no `diff --git` lines).
    let mut has_headers = false;
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        let number = index + 1;
        index += 1;
        if hunks.wants_body() {
            hunks.body_line(line, number)?;
            continue;
        }
        if let Some(rest) = line.strip_prefix("diff --git ") {
            close_file(&mut files, &mut hunks);
            let (old, new) = git_header_paths(rest);
            files.push(FileDiff {
                old_path: old,
                new_path: new,
                ..FileDiff::default()
            });
            in_file = true;
            has_headers = false;
            continue;
        }
        if let Some(old) = line.strip_prefix("--- ")
            && let Some(new) = lines.get(index).and_then(|l| l.strip_prefix("+++ "))
        {
            index += 1;
            if !in_file || has_headers {
                close_file(&mut files, &mut hunks);
                files.push(FileDiff::default());
            }
            in_file = true;
            has_headers = true;
            if let Some(file) = files.last_mut() {
                file.old_path = header_path(old, "a/");
                file.new_path = header_path(new, "b/");
            }
            continue;
        }
        if !in_file {
            continue;
        }
        if line.starts_with("@@") {
            hunks.header(line, number)?;
            continue;
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        if line.starts_with('\\') && !hunks.hunks.is_empty() {
            continue;
        }
        if line.starts_with(['+', ' ']) && !hunks.hunks.is_empty() {
            return Err(DiffError::HunkTooLong { line: number });
        }
        if let Some(mode) = line.strip_prefix("new file mode ") {
            file.old_path = None;
            file.new_mode = Some(mode.trim().to_string());
        } else if let Some(mode) = line.strip_prefix("deleted file mode ") {
            file.new_path = None;
            file.old_mode = Some(mode.trim().to_string());
        } else if let Some(mode) = line.strip_prefix("old mode ") {
            file.old_mode = Some(mode.trim().to_string());
        } else if let Some(mode) = line.strip_prefix("new mode ") {
            file.new_mode = Some(mode.trim().to_string());
        } else if let Some(path) = line.strip_prefix("rename from ") {
            file.is_rename = true;
            // The `diff --git` line's path is complete; these lines are the fallback.
            file.old_path.get_or_insert_with(|| unquote(path));
        } else if let Some(path) = line.strip_prefix("rename to ") {
            file.is_rename = true;
            // The `diff --git` line's path is complete; these lines are the fallback.
            file.new_path.get_or_insert_with(|| unquote(path));
        } else if let Some(path) = line.strip_prefix("copy from ") {
            file.is_copy = true;
            // The `diff --git` line's path is complete; these lines are the fallback.
            file.old_path.get_or_insert_with(|| unquote(path));
        } else if let Some(path) = line.strip_prefix("copy to ") {
            file.is_copy = true;
            // The `diff --git` line's path is complete; these lines are the fallback.
            file.new_path.get_or_insert_with(|| unquote(path));
        } else if line.starts_with("Binary files ") || line == "GIT binary patch" {
            file.is_binary = true;
        } else if line.starts_with('-') && !hunks.hunks.is_empty() && line != "-- " {
            return Err(DiffError::HunkTooLong { line: number });
        }
    }
    if hunks.wants_body() {
        return Err(DiffError::HunkTooShort {
            line: lines.len() + 1,
        });
    }
    close_file(&mut files, &mut hunks);
    Ok(files)
}

/// Move the hunks parsed so far onto the current file.
fn close_file(files: &mut [FileDiff], hunks: &mut HunkParser) {
    let parsed = std::mem::take(hunks);
    if let Some(file) = files.last_mut()
        && !parsed.hunks.is_empty()
    {
        file.patch.hunks.extend(parsed.hunks);
    }
}

/// A `---`/`+++` path: `/dev/null` is no file; a trailing tab starts a timestamp; the
/// `a/`/`b/` prefix is dropped when present.
fn header_path(raw: &str, prefix: &str) -> Option<String> {
    let raw = raw.split('\t').next().unwrap_or(raw).trim_end();
    let path = unquote(raw);
    if path == "/dev/null" {
        return None;
    }
    Some(path.strip_prefix(prefix).unwrap_or(&path).to_string())
}

/// The two paths of `diff --git a/x b/y`. Unquoted paths may contain spaces, so the
/// split is found by the ` b/` separator, or, for `--no-prefix` diffs, by two equal halves.
fn git_header_paths(rest: &str) -> (Option<String>, Option<String>) {
    let rest = rest.trim_end();
    if rest.starts_with('"') {
        let (old, tail) = split_quoted(rest);
        let new = unquote(tail.trim_start());
        return (Some(strip(&old, "a/")), Some(strip(&new, "b/")));
    }
    if let Some(at) = rest.find(" \"b/").or_else(|| rest.find(" \"")) {
        let old = &rest[..at];
        let new = unquote(&rest[at + 1..]);
        return (Some(strip(old, "a/")), Some(strip(&new, "b/")));
    }
    if rest.starts_with("a/")
        && let Some(at) = middle_split(rest, " b/").or_else(|| rest.find(" b/"))
    {
        return (
            Some(rest[2..at].to_string()),
            Some(rest[at + 3..].to_string()),
        );
    }
    let half = rest.len() / 2;
    if rest.len() % 2 == 1 && rest.is_char_boundary(half) && rest[..half] == rest[half + 1..] {
        let path = rest[..half].to_string();
        return (Some(path.clone()), Some(path));
    }
    (None, Some(rest.to_string()))
}

/// The separator occurrence that splits `a/P b/P` into two equal paths, if any.
fn middle_split(rest: &str, separator: &str) -> Option<usize> {
    rest.match_indices(separator)
        .map(|(at, _)| at)
        .find(|&at| rest[2..at] == rest[at + separator.len()..])
}

fn strip(path: &str, prefix: &str) -> String {
    path.strip_prefix(prefix).unwrap_or(path).to_string()
}

/// Split a leading C-quoted string from the rest.
fn split_quoted(text: &str) -> (String, &str) {
    let mut escaped = false;
    for (at, c) in text.char_indices().skip(1) {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => return (unquote(&text[..=at]), &text[at + 1..]),
            _ => escaped = false,
        }
    }
    (unquote(text), "")
}

/// Git's C-style quoting: `"a\tb\303\270"` → the UTF-8 bytes it spells. Unquoted text is
/// returned as is.
fn unquote(text: &str) -> String {
    let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        return text.to_string();
    };
    let mut bytes = Vec::with_capacity(inner.len());
    let mut chars = inner.bytes().peekable();
    while let Some(b) = chars.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        match chars.next() {
            Some(b'n') => bytes.push(b'\n'),
            Some(b't') => bytes.push(b'\t'),
            Some(b'r') => bytes.push(b'\r'),
            Some(b'a') => bytes.push(0x07),
            Some(b'b') => bytes.push(0x08),
            Some(b'f') => bytes.push(0x0c),
            Some(b'v') => bytes.push(0x0b),
            Some(d @ b'0'..=b'7') => {
                let mut value = u32::from(d - b'0');
                for _ in 0..2 {
                    match chars.peek() {
                        Some(n @ b'0'..=b'7') => {
                            value = value * 8 + u32::from(n - b'0');
                            chars.next();
                        }
                        _ => break,
                    }
                }
                bytes.push(u8::try_from(value).unwrap_or(b'?'));
            }
            Some(other) => bytes.push(other),
            None => bytes.push(b'\\'),
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_patch_renders_back_to_text_that_parses_the_same() {
        let text = "@@ -1,3 +1,4 @@ fn main() {\n use std::io;\n-let a = 1;\n+let a = 2;\n+let b = 3;\n fn a() {}\n@@ -10,2 +11,2 @@\n x\n-y\n+z";
        let patch = parse_hunks(text).unwrap();
        assert_eq!(patch.to_text(), text);
        assert_eq!(parse_hunks(&patch.to_text()).unwrap(), patch);
    }

    use super::*;

    #[test]
    fn right_side_lines_and_context() {
        let patch = parse_hunks("@@ -1,3 +1,4 @@ fn main\n a\n-b\n+c\n+d\n e\n").unwrap();
        assert_eq!(
            patch.right_lines().into_iter().collect::<Vec<_>>(),
            vec![1, 2, 3, 4]
        );
        assert_eq!(
            patch.added_lines().into_iter().collect::<Vec<_>>(),
            vec![2, 3]
        );
        assert_eq!(patch.right_context(2, 1).as_deref(), Some("a\nc\nd"));
        assert_eq!(patch.hunks[0].section, "fn main");
        assert!(patch.right_context(9, 1).is_none());
    }

    #[test]
    fn an_old_line_is_followed_to_where_it_stands_now() {
        // Two lines added after old 3; old 10-11 replaced by one line; old 20 removed.
        let patch = parse_hunks(
            "@@ -3,0 +4,2 @@\n+x\n+y\n@@ -9,4 +11,3 @@\n nine\n-ten\n-eleven\n+ten and eleven\n twelve\n@@ -20,1 +20,0 @@\n-twenty",
        )
        .unwrap();
        let followed: Vec<Option<u32>> = [1, 3, 4, 9, 10, 11, 12, 13, 19, 20, 21, 40]
            .iter()
            .map(|&old| patch.follow(old))
            .collect();
        assert_eq!(
            followed,
            [1, 3, 6, 11, 0, 0, 13, 14, 20, 0, 21, 40]
                .map(|n| (n != 0).then_some(n))
                .to_vec(),
            "before any hunk: the same; after an insertion: shifted; removed: none; after a removal: shifted back"
        );
    }

    #[test]
    fn near_shows_the_change_at_and_around_the_old_lines_and_where_they_went() {
        let patch = parse_hunks(
            "@@ -1,6 +1,6 @@\n a\n b\n-c\n+C\n d\n e\n f\n@@ -30,1 +30,1 @@\n-far\n+FAR",
        )
        .unwrap();
        let (diff, now) = patch.near(3, 3, 1);
        assert_eq!(diff, " b\n-c\n+C\n d\n");
        assert_eq!(now, Some(3), "the added line that replaced it");
        let (diff, now) = patch.near(30, 30, 0);
        assert_eq!((diff.as_str(), now), ("-far\n+FAR\n", Some(30)));
    }

    #[test]
    fn lengths_must_match_the_header() {
        assert!(matches!(
            parse_hunks("@@ -1,1 +1,1 @@\n-a\n+b\n+c\n"),
            Err(DiffError::HunkTooLong { .. })
        ));
        assert!(matches!(
            parse_hunks("@@ -1,2 +1,2 @@\n-a\n+b\n"),
            Err(DiffError::HunkTooShort { .. })
        ));
        assert!(matches!(
            parse_hunks("@@ -x +1 @@\n+a\n"),
            Err(DiffError::BadHeader { .. })
        ));
    }

    #[test]
    fn quoted_paths_decode_octal_utf8() {
        assert_eq!(unquote(r#""filen\303\270me \"q\"""#), "filenøme \"q\"");
    }
}
