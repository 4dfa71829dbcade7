//! Finding the JSON in a model's reply.
//!
//! Even when told to answer with JSON only, models wrap it in code fences, introduce it
//! with a sentence, add a note after it, or quote an example before the real answer. So
//! rather than parse the reply as a whole, we list every JSON object or array in it, most
//! likely first, and let the caller keep the first one that deserialises into its type.
//!
//! Boundaries are found by a real JSON parser (serde_json's stream deserialiser), not by
//! counting braces, so braces and backticks inside strings cannot fool it.

use serde::de::IgnoredAny;
use std::collections::HashSet;

/// Upper bound on the positions we try to parse from, so a reply full of stray brackets
/// costs a bounded amount of work rather than quadratic time.
const MAX_SCAN_STARTS: usize = 256;

/// How many times the reply's length failed parses may read, in all, before the scan for
/// loose values gives up. Starts are bounded, but each can read to the end of the reply
/// (`[[[[` before a long unterminated array): this keeps the scan linear in the reply.
const MAX_FAILED_READ_FACTOR: usize = 4;

/// Every JSON value in `reply`, most likely intended answer first:
/// 1. the whole reply, when it is exactly one JSON value;
/// 2. values opening a fenced block tagged `json`, then those in other fenced blocks;
/// 3. every other top-level object or array, in order of appearance.
///
/// Values nested inside an earlier candidate are not listed again.
pub fn json_candidates(reply: &str) -> Vec<&str> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    // A set beside the list: a reply of many small fenced blocks must not cost
    // quadratic time in duplicate checks.
    let mut seen: HashSet<(usize, usize)> = HashSet::new();
    let mut push = |span: (usize, usize)| {
        if seen.insert(span) {
            spans.push(span);
        }
    };

    let leading = reply.len() - reply.trim_start().len();
    let trimmed = reply.trim();
    if !trimmed.is_empty() && serde_json::from_str::<IgnoredAny>(trimmed).is_ok() {
        push((leading, leading + trimmed.len()));
    }

    let fences = fenced_block_starts(reply);
    for want_json_tag in [true, false] {
        for &(start, tagged_json) in &fences {
            if tagged_json == want_json_tag
                && let Ok(end) = value_end(reply, start)
            {
                push((start, end));
            }
        }
    }

    let mut from = 0;
    let mut tries = 0;
    let mut failed_reads = 0usize;
    let read_budget = reply.len().saturating_mul(MAX_FAILED_READ_FACTOR);
    while tries < MAX_SCAN_STARTS && failed_reads <= read_budget {
        let Some(offset) = reply[from..].find(['{', '[']) else {
            break;
        };
        tries += 1;
        let start = from + offset;
        match value_end(reply, start) {
            Ok(end) => {
                push((start, end));
                from = end;
            }
            Err(read) => {
                failed_reads = failed_reads.saturating_add(read);
                // Both brackets are one byte, so the next char boundary is one byte on.
                from = start + 1;
            }
        }
    }

    spans
        .into_iter()
        .map(|(start, end)| &reply[start..end])
        .collect()
}

/// Where one JSON object or array starting exactly at `start` ends, or, when none does,
/// about how many bytes the parser read before it gave up.
fn value_end(text: &str, start: usize) -> Result<usize, usize> {
    let Some(rest) = text.get(start..) else {
        return Err(0);
    };
    if !rest.starts_with(['{', '[']) {
        return Err(0);
    }
    let mut values = serde_json::Deserializer::from_str(rest).into_iter::<IgnoredAny>();
    match values.next() {
        Some(Ok(_)) => Ok(start + values.byte_offset()),
        Some(Err(err)) => Err(bytes_read(rest, &err)),
        None => Err(rest.len()),
    }
}

/// Where in `text` the parser stopped with `err`: the end for a premature end of input,
/// else its line and column turned into a byte offset.
fn bytes_read(text: &str, err: &serde_json::Error) -> usize {
    if err.is_eof() {
        return text.len();
    }
    let line_start = match err.line() {
        0 | 1 => 0,
        line => text
            .match_indices('\n')
            .nth(line - 2)
            .map_or(text.len(), |(at, _)| at + 1),
    };
    line_start.saturating_add(err.column()).min(text.len())
}

/// For each opening code fence (```` ``` ```` or `~~~`), the offset of the first
/// non-blank character of its body, and whether the fence is tagged `json`.
///
/// Fence lines toggle in and out of a block. A JSON string cannot hold a raw newline, so a
/// fence inside a JSON string (a suggestion block in a finding's body) is never at the
/// start of a line and cannot confuse the toggling.
fn fenced_block_starts(reply: &str) -> Vec<(usize, bool)> {
    let mut starts = Vec::new();
    let mut inside = false;
    let mut offset = 0;
    for line in reply.split_inclusive('\n') {
        offset += line.len();
        let content = line.trim_start();
        let Some(tag) = content
            .strip_prefix("```")
            .or_else(|| content.strip_prefix("~~~"))
        else {
            continue;
        };
        if inside {
            inside = false;
            continue;
        }
        inside = true;
        let tag = tag
            .trim()
            .trim_start_matches(['`', '~'])
            .to_ascii_lowercase();
        let body = &reply[offset..];
        let body_start = offset + (body.len() - body.trim_start().len());
        starts.push((body_start, tag.starts_with("json")));
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_json_reply_is_the_only_candidate() {
        assert_eq!(json_candidates("  {\"a\": 1}\n"), vec!["{\"a\": 1}"]);
        assert_eq!(json_candidates("[1, 2]"), vec!["[1, 2]"]);
    }

    #[test]
    fn fenced_json_is_found_with_prose_around_it() {
        let reply = "Here is my review:\n\n```json\n{\"findings\": []}\n```\n\nLet me know!";
        assert_eq!(json_candidates(reply), vec!["{\"findings\": []}"]);
    }

    #[test]
    fn untagged_and_tilde_fences_work() {
        assert_eq!(json_candidates("```\n{\"a\":1}\n```"), vec!["{\"a\":1}"]);
        assert_eq!(json_candidates("~~~\n[true]\n~~~"), vec!["[true]"]);
    }

    #[test]
    fn json_tagged_fences_come_before_other_fences_and_loose_json() {
        let reply = "Input was {\"x\": 0}.\n```text\n{\"b\": 2}\n```\n```json\n{\"c\": 3}\n```";
        assert_eq!(
            json_candidates(reply),
            vec!["{\"c\": 3}", "{\"b\": 2}", "{\"x\": 0}"]
        );
    }

    #[test]
    fn leading_prose_and_trailing_text_without_fences() {
        let reply = "Sure! The answer is {\"resolution\": \"concede\"} -- hope that helps.";
        assert_eq!(
            json_candidates(reply),
            vec!["{\"resolution\": \"concede\"}"]
        );
    }

    #[test]
    fn braces_brackets_and_fences_inside_strings_do_not_end_the_value() {
        let value =
            r#"{"body": "use `}` or ] here\n```suggestion\nx { y }\n```", "n": [1, {"k": "}"}]}"#;
        let reply = format!("Result:\n```json\n{value}\n```\ntrailing {{ junk");
        assert_eq!(json_candidates(&reply), vec![value]);
    }

    #[test]
    fn nested_values_are_not_listed_twice() {
        let reply = "x {\"outer\": {\"inner\": [1]}} y";
        assert_eq!(
            json_candidates(reply),
            vec!["{\"outer\": {\"inner\": [1]}}"]
        );
    }

    #[test]
    fn multiple_loose_blocks_are_listed_in_order() {
        let reply = "first {\"a\":1} then [2] and {\"b\":{\"c\":3}}";
        assert_eq!(
            json_candidates(reply),
            vec!["{\"a\":1}", "[2]", "{\"b\":{\"c\":3}}"]
        );
    }

    #[test]
    fn stray_brackets_before_the_answer_are_skipped() {
        let reply = "See [the docs] and {this} or \"{\" first: {\"ok\": true}";
        assert_eq!(json_candidates(reply), vec!["{\"ok\": true}"]);
    }

    #[test]
    fn garbage_yields_nothing() {
        assert!(json_candidates("").is_empty());
        assert!(json_candidates("I could not review this PR.").is_empty());
        assert!(json_candidates("{\"unterminated\": [1, 2").is_empty());
        assert!(json_candidates("```json\n{not json}\n```").is_empty());
    }

    #[test]
    fn stray_brackets_are_scanned_only_up_to_a_bound() {
        let near = format!("{}{{\"found\": 1}}", "{ ".repeat(100));
        assert_eq!(json_candidates(&near), vec!["{\"found\": 1}"]);
        // Past the bound the answer is given up on, quickly, rather than parsed in
        // quadratic time.
        let far = format!("{}{{\"late\": 1}}", "{ ".repeat(10_000));
        assert!(json_candidates(&far).is_empty());
    }

    #[test]
    fn failed_parses_report_how_far_they_read() {
        let text = "[1,\n  2 x, 3]";
        let err = serde_json::from_str::<IgnoredAny>(text).expect_err("syntax error");
        assert_eq!(bytes_read(text, &err), text.find('x').expect("x") + 1);
        assert_eq!(value_end("[1, [2", 0), Err(6));
        assert_eq!(value_end("ab [1] c", 3), Ok(6));
    }

    #[test]
    fn multibyte_text_around_json_is_handled() {
        let reply = "Résumé — voilà: {\"ü\": \"ß{\"} ✓";
        assert_eq!(json_candidates(reply), vec!["{\"ü\": \"ß{\"}"]);
    }
}
