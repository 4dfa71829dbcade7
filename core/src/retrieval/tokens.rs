//! Words of code and prose, as lexical search and near-duplicate removal see them.
//!
//! Code names its ideas in identifiers: `parseHunkHeader` and `parse_hunk_header` are the
//! same words to a person asking "where do we parse hunk headers?". Each identifier is
//! therefore one token as written (lower-cased, so an exact name matches exactly) plus
//! its camelCase / snake_case parts when it has more than one. One-letter words and bare
//! numbers carry no meaning across documents and are left out.

use std::collections::HashSet;

/// Call `emit` with each token of `text`, in order. Allocation-free per token (one
/// reused buffer): lexical search runs this over every candidate on every query.
pub fn for_each_token(text: &str, mut emit: impl FnMut(&str)) {
    let mut lower = String::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        let word = word.trim_matches('_');
        if word.is_empty() {
            continue;
        }
        if keep(word) {
            lowercase_into(word, &mut lower);
            emit(&lower);
        }
        if has_parts(word) {
            for part in parts(word) {
                if keep(part) {
                    lowercase_into(part, &mut lower);
                    emit(&lower);
                }
            }
        }
    }
}

/// The tokens of `text`, in order.
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(t.to_string()));
    out
}

/// The distinct tokens of `text`.
pub fn token_set(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    for_each_token(text, |t| {
        if !out.contains(t) {
            out.insert(t.to_string());
        }
    });
    out
}

/// |A ∩ B| / |A ∪ B|; two empty sets are identical (1.0).
pub fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 1.0;
    }
    let shared = a.intersection(b).count();
    shared as f64 / union as f64
}

fn keep(token: &str) -> bool {
    token.chars().count() >= 2 && !token.chars().all(|c| c.is_ascii_digit())
}

fn lowercase_into(word: &str, out: &mut String) {
    out.clear();
    if word.is_ascii() {
        out.push_str(word);
        out.make_ascii_lowercase();
    } else {
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
}

fn has_parts(word: &str) -> bool {
    word.contains('_') || {
        let mut previous_lower = false;
        word.chars().any(|c| {
            let boundary = previous_lower && c.is_uppercase();
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
            boundary
        })
    }
}

/// Split at `_` and at a lower-case (or digit) to upper-case step: `parseHunk_header2X`
/// → `parse`, `Hunk`, `header2`, `X`.
fn parts(word: &str) -> impl Iterator<Item = &str> {
    word.split('_').flat_map(|piece| {
        let mut cuts = Vec::new();
        let mut previous_lower = false;
        for (at, c) in piece.char_indices() {
            if previous_lower && c.is_uppercase() {
                cuts.push(at);
            }
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
        }
        let mut pieces = Vec::with_capacity(cuts.len() + 1);
        let mut start = 0;
        for cut in cuts {
            pieces.push(&piece[start..cut]);
            start = cut;
        }
        pieces.push(&piece[start..]);
        pieces
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_whole_and_split() {
        assert_eq!(
            tokens("fn parseHunkHeader(x: u32) -> parse_hunk_header"),
            [
                "fn",
                "parsehunkheader",
                "parse",
                "hunk",
                "header",
                "u32",
                "parse_hunk_header",
                "parse",
                "hunk",
                "header"
            ]
        );
        // One-letter words, bare numbers and lone underscores are not tokens.
        assert_eq!(tokens("a = 42 + _ + __init__"), ["init"]);
        assert_eq!(tokens("Größe ÜBER"), ["größe", "über"]);
    }

    #[test]
    fn jaccard_of_token_sets() {
        let a = token_set("let total = price * quantity");
        let b = token_set("let total = price * amount");
        // {let,total,price,quantity} vs {let,total,price,amount}: 3 shared of 5.
        assert!((jaccard(&a, &b) - 0.6).abs() < 1e-9);
        assert!((jaccard(&a, &a) - 1.0).abs() < 1e-9);
        assert!((jaccard(&HashSet::new(), &HashSet::new()) - 1.0).abs() < 1e-9);
    }
}
