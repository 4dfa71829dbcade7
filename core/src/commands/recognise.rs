//! Where in a comment a command may start.
//!
//! After the last mention of Parley on a line, and, in a finding's thread, at the start of
//! the comment. Only the last mention of a line counts: a command never contains a
//! mention of Parley, which keeps the candidates disjoint (so parsing stays linear however
//! many mentions a comment holds) and leaves "@parley: @parley review" a review, as before.
//!
//! Quoted lines (`> …`) and code (fenced or inline) are someone else's words or an
//! example: a quote-reply of "@parley full review" must not order a second review.

use crate::mention::{Handles, mention_spans};
use std::ops::Range;

/// Text that may hold a command.
#[derive(Debug, Clone, Copy)]
pub(super) struct Candidate<'a> {
    /// From the command's first word to the end of its line, without trailing whitespace
    /// and without trailing `.` and `!`.
    pub line: &'a str,
    /// The body after this line, up to the next mention of Parley: where the paragraph of
    /// a `remember this:` comes from.
    following: &'a str,
    /// `following` stops at a mention rather than at the end of the body.
    following_cut: bool,
}

impl<'a> Candidate<'a> {
    #[cfg(test)]
    pub fn following_len(&self) -> usize {
        self.following.len()
    }

    /// The paragraph after the command's line: the lines up to the next blank line,
    /// leading blank lines skipped. `None` when there is none, or when it would run into a
    /// mention of Parley (a command never contains one).
    pub fn paragraph(&self) -> Option<&'a str> {
        let text = self.following;
        let mut start = None;
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            let blank = line.trim().is_empty();
            match (start, blank) {
                (None, false) => start = Some(offset),
                (Some(s), true) => return trimmed(&text[s..offset]),
                _ => {}
            }
            offset += line.len();
        }
        if self.following_cut {
            return None;
        }
        trimmed(&text[start?..])
    }
}

fn trimmed(text: &str) -> Option<&str> {
    let text = cut_end(text).trim_start();
    (!text.is_empty()).then_some(text)
}

/// `text` without trailing whitespace, `.` and `!`: "review." and "review!" are commands
/// as they always were; "review . !" is not (the same rule as before, kept exactly).
fn cut_end(text: &str) -> &str {
    text.trim_end().trim_end_matches(['.', '!']).trim_end()
}

/// The candidates of `body`, in the order they appear.
pub(super) fn candidates<'a>(
    body: &'a str,
    handles: &Handles,
    in_thread: bool,
) -> Vec<Candidate<'a>> {
    let mentions = mentions(body, handles);
    let mut out = Vec::new();
    let mut next = 0; // the first mention not on an earlier line
    let mut fence: Option<(char, usize)> = None;
    let mut at_start = in_thread;
    let mut offset = 0;
    for raw in body.split_inclusive('\n') {
        let start = offset;
        offset += raw.len();
        let line = raw.trim_end_matches(['\n', '\r']);
        let first = next;
        while next < mentions.len() && mentions[next].start < start + line.len() {
            next += 1;
        }
        let in_line = &mentions[first..next];
        let lead = line.trim_start();
        if let Some(open) = fence {
            if closes(lead, open) {
                fence = None;
            }
            continue;
        }
        if let Some(open) = opens(lead) {
            fence = Some(open);
            at_start = false;
            continue;
        }
        if lead.is_empty() || lead.starts_with('>') {
            continue;
        }
        let end = start + cut_end(line).len();
        let until = mentions.get(next).map_or(body.len(), |m| m.start);
        let candidate = |text| Candidate {
            line: text,
            following: body.get(offset..until).unwrap_or(""),
            following_cut: until < body.len(),
        };
        if std::mem::take(&mut at_start) && in_line.is_empty() {
            let from = start + (line.len() - lead.len());
            if let Some(text) = body.get(from..end) {
                out.push(candidate(text));
            }
        }
        if let Some(last) = in_line.last()
            && !body.get(start..last.start).is_some_and(in_inline_code)
            && let Some(from) = command_start(body, last.end, end)
            && let Some(text) = body.get(from..end)
        {
            out.push(candidate(text));
        }
    }
    out
}

/// Every mention of any of Parley's handles, in order.
fn mentions(body: &str, handles: &Handles) -> Vec<Range<usize>> {
    let mut all: Vec<Range<usize>> = handles
        .names()
        .iter()
        .flat_map(|name| mention_spans(body, name))
        .collect();
    all.sort_by_key(|m| m.start);
    all.dedup_by_key(|m| m.start);
    all
}

/// Where the command after a mention ending at `at` begins: past `[bot]`, spaces, and one
/// `,` or `:` ("@parley, remember …"). `None` when nothing is left before `end`.
fn command_start(body: &str, at: usize, end: usize) -> Option<usize> {
    let mut at = at;
    if body
        .get(at..at + 5)
        .is_some_and(|t| t.eq_ignore_ascii_case("[bot]"))
    {
        at += 5;
    }
    let rest = body.get(at..end)?;
    let rest = rest.trim_start();
    let rest = rest.strip_prefix([',', ':']).map_or(rest, str::trim_start);
    let from = end - rest.len();
    (from < end).then_some(from)
}

/// Whether a mention after `before` (its line so far) sits in an inline code span:
/// "type `@parley review` to ask for one" shows a command, it does not give one.
fn in_inline_code(before: &str) -> bool {
    before.matches('`').count() % 2 == 1
}

/// A code fence opening: three or more backticks or tildes.
fn opens(lead: &str) -> Option<(char, usize)> {
    let c = lead.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = lead.len() - lead.trim_start_matches(c).len();
    (run >= 3).then_some((c, run))
}

fn closes(lead: &str, (c, run): (char, usize)) -> bool {
    lead.len() - lead.trim_start_matches(c).len() >= run
}
