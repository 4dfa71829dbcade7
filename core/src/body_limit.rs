//! What GitHub takes in one comment, review or reply: at most 65,536 characters of body,
//! and a longer one is refused whole (422 "body is too long"). A large PR's review summary
//! (hundreds of files not reviewed, a long list of findings kept for the summary) or a
//! repository's long list of learnings can pass that, and a refused review would be paid
//! for and lost, retried to the same refusal. So every body Parley posts is fitted before
//! its hidden marker is added ([`crate::markers::append`]): what does not fit is cut at a
//! line, what the cut leaves open (a code fence, a `<details>` block) is closed, and a
//! last line says it was cut. The marker stays whole, so the posted text is still found
//! and trusted by the state it carries.
//!
//! A check run's summary and text are held to 65,535 *bytes* each ("summary exceeds a
//! maximum bytesize of 65535", though the documentation says characters): the list of a
//! PR's open blocking findings, written in Japanese say, can fit in characters and not in
//! bytes, and a refused check is a gate that never concludes. [`fit_check`] cuts those.

use std::borrow::Cow;

/// GitHub's limit, in characters.
pub const GITHUB_MAX_BODY_CHARS: usize = 65_536;

/// GitHub's limit on a check run's summary and on its text, in bytes.
pub const GITHUB_MAX_CHECK_BYTES: usize = 65_535;

/// Said where a body was cut.
const CUT_NOTE: &str =
    "*… cut here: GitHub takes at most 65,536 characters in one comment, and this was longer.*";

/// Said where a check's summary or text was cut.
const CHECK_CUT_NOTE: &str =
    "*… cut here: GitHub takes at most 65,535 bytes here, and this was longer.*";

/// Room kept for the closers and the note after the cut, in the measure cut by.
const AFTER_CUT: usize = 400;

/// `text` fitted into `max` UTF-16 units: as it is when it fits, else cut (see the
/// module docs). Counted in UTF-16 units, never fewer than characters, so the body fits
/// however GitHub counts its characters.
pub fn fit(text: &str, max: usize) -> Cow<'_, str> {
    fit_by(text, max, char::len_utf16, CUT_NOTE)
}

/// `text` fitted into a check run's summary or text ([`GITHUB_MAX_CHECK_BYTES`]), cut as
/// [`fit`] cuts a body.
pub fn fit_check(text: &str) -> Cow<'_, str> {
    fit_by(text, GITHUB_MAX_CHECK_BYTES, char::len_utf8, CHECK_CUT_NOTE)
}

fn fit_by<'a>(text: &'a str, max: usize, size: fn(char) -> usize, note: &str) -> Cow<'a, str> {
    if measure(text, size) <= max {
        return Cow::Borrowed(text);
    }
    let room = max.saturating_sub(AFTER_CUT);
    let mut end = 0;
    let mut used = 0;
    for (at, c) in text.char_indices() {
        used += size(c);
        if used > room {
            break;
        }
        end = at + c.len_utf8();
    }
    // At a line's end when one is near: a table row or a list item is not split.
    let kept = match text[..end].rfind('\n') {
        Some(line_end) if line_end >= end * 4 / 5 => &text[..line_end],
        _ => &text[..end],
    };
    let mut out = kept.trim_end().to_string();
    close_what_is_open(&mut out);
    out.push_str("\n\n");
    out.push_str(note);
    Cow::Owned(out)
}

fn measure(text: &str, size: fn(char) -> usize) -> usize {
    text.chars().map(size).sum()
}

/// Close a fenced code block the cut left open (a fence is three or more backticks or
/// tildes starting a line, closed by a line of the same character at least as long), and
/// any `<details>` it left open, so what follows the cut is not swallowed by them.
fn close_what_is_open(out: &mut String) {
    let mut fence: Option<(char, usize)> = None;
    let mut details: usize = 0;
    for line in out.lines() {
        let trimmed = line.trim_start();
        let run = |c: char| trimmed.chars().take_while(|x| *x == c).count();
        match fence {
            Some((c, n)) => {
                if run(c) >= n && trimmed.trim_end().chars().all(|x| x == c) {
                    fence = None;
                }
            }
            None => {
                if let Some(c) = ['`', '~'].into_iter().find(|c| run(*c) >= 3) {
                    fence = Some((c, run(c)));
                    continue;
                }
                details += trimmed.matches("<details>").count();
                details = details.saturating_sub(trimmed.matches("</details>").count());
            }
        }
    }
    if let Some((c, n)) = fence {
        out.push('\n');
        out.extend(std::iter::repeat_n(c, n));
    }
    for _ in 0..details {
        out.push_str("\n</details>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_fits_is_left_as_it_is() {
        assert!(matches!(fit("short", 10), Cow::Borrowed("short")));
        let exact = "é".repeat(100);
        assert!(matches!(fit(&exact, 100), Cow::Borrowed(_)));
    }

    #[test]
    fn a_long_body_is_cut_at_a_line_and_says_so() {
        let rows: Vec<String> = (0..2000)
            .map(|i| format!("| `file{i}.rs` | ok |"))
            .collect();
        let text = rows.join("\n");
        let fitted = fit(&text, 10_000);
        assert!(
            measure(&fitted, char::len_utf16) <= 10_000,
            "{}",
            measure(&fitted, char::len_utf16)
        );
        assert!(fitted.ends_with(CUT_NOTE));
        let body = fitted.trim_end_matches(CUT_NOTE).trim_end();
        assert!(body.ends_with(" | ok |"), "a whole row last: {body:?}");
        assert!(text.starts_with(body));
    }

    #[test]
    fn counted_in_utf16_units_so_emoji_cannot_push_it_over() {
        let text = "😀".repeat(40_000); // 40,000 characters, 80,000 UTF-16 units
        let fitted = fit(&text, GITHUB_MAX_BODY_CHARS);
        assert!(measure(&fitted, char::len_utf16) <= GITHUB_MAX_BODY_CHARS);
        assert!(fitted.chars().count() > 30_000);
    }

    /// 30,000 characters of Japanese titles are 90,000 bytes: within a character count
    /// GitHub would still refuse them in a check.
    #[test]
    fn a_check_is_cut_in_bytes_at_a_line() {
        let line = format!(
            "- **[HIGH]** {} — `src/db.rs:3`",
            "検証されていない入力".repeat(10)
        );
        let text = vec![line.as_str(); 300].join("\n");
        assert!(text.chars().count() < 60_000 && text.len() > GITHUB_MAX_CHECK_BYTES);
        let fitted = fit_check(&text);
        assert!(fitted.len() <= GITHUB_MAX_CHECK_BYTES, "{}", fitted.len());
        assert!(fitted.ends_with(CHECK_CUT_NOTE));
        let kept = fitted.trim_end_matches(CHECK_CUT_NOTE).trim_end();
        assert!(kept.ends_with(&line), "a whole line last");
        assert!(kept.len() > GITHUB_MAX_CHECK_BYTES * 4 / 5);
        let short = [line.as_str(); 3].join("\n");
        assert!(matches!(fit_check(&short), Cow::Borrowed(_)));
    }

    #[test]
    fn a_fence_or_details_the_cut_leaves_open_is_closed() {
        let text = format!(
            "<details><summary>x</summary>\n\n````suggestion\n{}\n```\nstill code\n",
            "let a = 1;\n".repeat(5_000)
        );
        let fitted = fit(&text, 5_000);
        let closers: Vec<&str> = fitted.lines().rev().skip(2).take(2).collect();
        assert_eq!(closers, ["</details>", "````"], "{fitted}");

        let closed = format!(
            "```\ncode\n```\n<details>a</details>\n{}",
            "word ".repeat(5_000)
        );
        let fitted = fit(&closed, 2_000);
        assert!(!fitted.contains("</details>\n</details>"), "{fitted}");
        assert!(
            !fitted
                .trim_end_matches(CUT_NOTE)
                .trim_end()
                .ends_with("```")
        );
    }
}
