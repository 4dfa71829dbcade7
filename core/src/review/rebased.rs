//! After a rebase or a force-push the head no longer descends from the commit a finding
//! (or a thread) was on, and GitHub's compare of the two is diffed from their merge base:
//! its line numbers are not that commit's and say nothing of the finding's lines. What
//! became of them is then read from the file at both commits: still there, whole, wherever
//! the rebase moved them ([`super::merge::block_in_text`]); or rewritten, told by the
//! unchanged code beside them ([`between`]).

use super::merge::block_span;
use super::resolution::lines_of;

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

#[cfg(test)]
mod tests {
    use super::*;

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
