//! After a rebase or a force-push the head no longer descends from the commit a finding
//! (or a thread) was on, and GitHub's compare of the two is diffed from their merge base:
//! its line numbers are not that commit's and say nothing of the finding's lines. What
//! became of them is then read from the file at both commits: still there, whole, wherever
//! the rebase moved them ([`super::merge::block_at`]); or rewritten, told by the
//! unchanged code beside them ([`between`]).

use super::merge::{block_at, block_span};
use crate::ports::github::{GitHub, GitHubError, RepoScope};

/// What lines of a file on one commit became on another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Became {
    /// Still there, whole, wherever they moved: at this line (their last) now; `None` for
    /// lines with nothing but blanks, which cannot be looked for and count as unchanged.
    Stands(Option<u32>),
    /// Gone, and the code beside them tells what replaced them ([`between`]).
    Rewritten { diff: String, line: Option<u32> },
    /// Gone, and nothing tells what replaced them.
    Unrecognisable,
}

impl Became {
    /// Whether the lines are gone: the gate's "the code at its lines changed".
    pub fn gone(&self) -> bool {
        !matches!(self, Became::Stands(_))
    }
}

/// What lines `start..=end` of `then` became in `now`.
pub fn became(then: &str, now: &str, start: u32, end: u32) -> Became {
    let lines = lines_of(then, start, end);
    if lines.iter().all(|line| line.trim().is_empty()) {
        return Became::Stands(None);
    }
    if let Some(line) = block_at(&lines, now) {
        return Became::Stands(Some(line));
    }
    match between(then, now, start, end) {
        Some((diff, line)) => Became::Rewritten { diff, line },
        None => Became::Unrecognisable,
    }
}

/// `path` at `then` and at `now`, read side by side; each `None` where there is none to
/// read ([`text_at`]). A transient failure is the caller's.
pub async fn texts(
    github: &dyn GitHub,
    scope: &RepoScope,
    path: &str,
    then: &str,
    now: &str,
) -> Result<(Option<String>, Option<String>), GitHubError> {
    let (then, now) = crate::concurrently::join2(
        text_at(github, scope, path, then),
        text_at(github, scope, path, now),
    )
    .await;
    Ok((then?, now?))
}

/// Lines of unchanged code looked for on each side of a rewritten range.
const BESIDE: u32 = 3;

/// The most lines a rewritten range may have become and still be shown as its change.
const MOST_NOW: u32 = 60;

/// What lines `start..=end` of `then` became in `now`, told by the code beside them: the
/// [`BESIDE`] lines before and after, found in order in `now`, enclose what replaced the
/// range. A diff of it (with those lines as context) and its first line now; `None` where
/// either side is not found whole (the lines after, below those before), or encloses more
/// than [`MOST_NOW`] lines.
pub fn between(then: &str, now: &str, start: u32, end: u32) -> Option<(String, Option<u32>)> {
    let (start, end) = (start.min(end).max(1), start.max(end).max(1));
    let before = match start {
        1 => Vec::new(),
        _ => lines_of(then, start.saturating_sub(BESIDE).max(1), start - 1),
    };
    let after = lines_of(then, end.saturating_add(1), end.saturating_add(BESIDE));
    let now_lines: Vec<&str> = now.lines().collect();
    let from = match before.is_empty() {
        true => 1,
        false => block_span(&before, now)?.1 + 1,
    };
    let to = match after.is_empty() {
        true => u32::try_from(now_lines.len()).ok()?,
        false => {
            // Looked for only below what came before: a `}` stands everywhere.
            let rest = now_lines.get(from.saturating_sub(1) as usize..)?.join("\n");
            let (first, _) = block_span(&after, &rest)?;
            first + from - 2
        }
    };
    if to + 1 < from || to + 1 - from > MOST_NOW {
        return None;
    }
    let replaced = now_lines
        .get(from.saturating_sub(1) as usize..to as usize)
        .unwrap_or_default();
    let mut shown = String::new();
    let mut add = |sign: char, lines: &[&str]| {
        for line in lines {
            shown.push(sign);
            shown.push_str(line);
            shown.push('\n');
        }
    };
    add(' ', &before);
    add('-', &lines_of(then, start, end));
    add('+', replaced);
    add(' ', &after);
    let line = (!replaced.is_empty()).then_some(from);
    Some((shown, line))
}

/// Lines `start..=end` (counted from 1) of `text`, as many as it has.
fn lines_of(text: &str, start: u32, end: u32) -> Vec<&str> {
    let (start, end) = (start.min(end), start.max(end));
    text.lines()
        .skip(start.saturating_sub(1) as usize)
        .take((end - start + 1) as usize)
        .collect()
}

/// The text of `path` at `git_ref`; `None` when there is none to read (no such file, not
/// UTF-8, or GitHub refuses for good). A transient failure is the caller's.
async fn text_at(
    github: &dyn GitHub,
    scope: &RepoScope,
    path: &str,
    git_ref: &str,
) -> Result<Option<String>, GitHubError> {
    match github.get_file_contents(scope, path, git_ref).await {
        Ok(file) => Ok(file.and_then(|f| f.text().map(str::to_string))),
        Err(err) if err.is_transient() => Err(err),
        Err(err) => {
            tracing::info!(repo = %scope.full_name(), path, git_ref, error = %err, "cannot read the file; its code counts as unchanged");
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_with_nothing_to_look_for_stand() {
        assert_eq!(became("  \n\nx\n", "anything", 1, 2), Became::Stands(None));
        assert!(!Became::Stands(None).gone());
    }

    #[test]
    fn a_rewritten_range_is_told_by_the_code_beside_it() {
        let then = "a\nb\nc\nOLD1\nOLD2\nd\ne\nf\n";
        assert_eq!(
            between(then, "x\na\nb\nc\nNEW\nd\ne\nf\n", 4, 5),
            Some((
                " a\n b\n c\n-OLD1\n-OLD2\n+NEW\n d\n e\n f\n".to_string(),
                Some(5)
            )),
            "moved down a line, two lines become one"
        );
        assert_eq!(
            between(then, "a\nb\nc\nd\ne\nf\n", 4, 5),
            Some((" a\n b\n c\n-OLD1\n-OLD2\n d\n e\n f\n".to_string(), None)),
            "removed"
        );
        assert_eq!(
            between(then, "a\nb\nzz\nNEW\nd\ne\nf\n", 4, 5),
            None,
            "the code before it is not there whole"
        );
        assert_eq!(
            between(then, "d\ne\nf\na\nb\nc\nNEW\n", 4, 5),
            None,
            "out of order"
        );
        assert_eq!(
            between(
                "fn f() {\n    old();\n}\n",
                "}\nfn f() {\n    new();\n}\n",
                2,
                2
            )
            .map(|(_, line)| line),
            Some(Some(3)),
            "the closing brace after it, not the one above"
        );
    }
}
