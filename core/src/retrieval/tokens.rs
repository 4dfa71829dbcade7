//! Words of code and prose, as lexical search and near-duplicate removal see them.
//!
//! Code names its ideas in identifiers: `parseHunkHeader` and `parse_hunk_header` are the
//! same words to a person asking "where do we parse hunk headers?". Each identifier is
//! therefore one token as written (lower-cased, so an exact name matches exactly) plus
//! its camelCase / snake_case parts when it has more than one. One-letter words and bare
//! numbers carry no meaning across documents and are left out.

use std::hash::Hasher;

/// Call `emit` with each token of `text`, in order. Lexical search runs this over every
/// candidate on every query (most of its time), so ASCII is scanned byte by byte through
/// a table, only non-ASCII characters are decoded, and nothing is allocated per token: an
/// already lower-case token is passed as a slice of `text`, others through one buffer.
pub fn for_each_token(text: &str, mut emit: impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let mut lower = String::new();
    let mut at = 0;
    while at < bytes.len() {
        // Separators, ASCII first.
        while at < bytes.len() && bytes[at].is_ascii() && !WORD_BYTE[usize::from(bytes[at])] {
            at += 1;
        }
        if at >= bytes.len() {
            break;
        }
        let (in_word, width) = class(text, at);
        if !in_word {
            at += width;
            continue;
        }
        let start = at;
        let mut ascii = true;
        loop {
            // Word bytes, ASCII first.
            while at < bytes.len() && bytes[at].is_ascii() && WORD_BYTE[usize::from(bytes[at])] {
                at += 1;
            }
            if at >= bytes.len() || bytes[at].is_ascii() {
                break;
            }
            let (in_word, width) = class(text, at);
            if !in_word {
                break;
            }
            ascii = false;
            at += width;
        }
        let word = &text[start..at];
        if ascii {
            ascii_word(word, &mut lower, &mut emit);
        } else {
            unicode_word(word, &mut lower, &mut emit);
        }
    }
}

/// Whether the character at byte `at` belongs to a word, and its width in bytes.
#[inline]
fn class(text: &str, at: usize) -> (bool, usize) {
    let byte = text.as_bytes()[at];
    if byte.is_ascii() {
        return (WORD_BYTE[usize::from(byte)], 1);
    }
    match text[at..].chars().next() {
        Some(c) => (c.is_alphanumeric(), c.len_utf8()),
        None => (false, 1),
    }
}

/// ASCII letters, digits and `_`.
const WORD_BYTE: [bool; 128] = {
    let mut table = [false; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || c == b'_';
        b += 1;
    }
    table
};

/// An ASCII identifier in one pass: the whole (lower-cased), then its parts.
fn ascii_word(word: &str, lower: &mut String, emit: &mut impl FnMut(&str)) {
    let word = word.trim_matches('_');
    let bytes = word.as_bytes();
    let (mut upper, mut split, mut digits_only) = (false, false, true);
    let mut previous_lower = false;
    for &b in bytes {
        upper |= b.is_ascii_uppercase();
        split |= b == b'_' || (previous_lower && b.is_ascii_uppercase());
        digits_only &= b.is_ascii_digit();
        previous_lower = b.is_ascii_lowercase() || b.is_ascii_digit();
    }
    if bytes.len() >= 2 && !digits_only {
        emit(ascii_lower(word, upper, lower));
    }
    if split {
        let mut emit_part = |start: usize, end: usize| {
            let part = &bytes[start..end];
            if part.len() >= 2 && !part.iter().all(u8::is_ascii_digit) {
                let upper = part.iter().any(u8::is_ascii_uppercase);
                emit(ascii_lower(&word[start..end], upper, lower));
            }
        };
        // The same cuts as `parts`, on bytes.
        let mut start = 0;
        for at in 1..bytes.len() {
            let (before, here) = (bytes[at - 1], bytes[at]);
            if here == b'_' {
                emit_part(start, at);
                start = at + 1;
            } else if here.is_ascii_uppercase()
                && (before.is_ascii_lowercase() || before.is_ascii_digit())
                && at > start
            {
                emit_part(start, at);
                start = at;
            }
        }
        if start < bytes.len() {
            emit_part(start, bytes.len());
        }
    }
}

fn ascii_lower<'a>(word: &'a str, upper: bool, buffer: &'a mut String) -> &'a str {
    if !upper {
        return word;
    }
    buffer.clear();
    buffer.push_str(word);
    buffer.make_ascii_lowercase();
    buffer
}

/// The same for a word with non-ASCII letters.
fn unicode_word(word: &str, lower: &mut String, emit: &mut impl FnMut(&str)) {
    let word = word.trim_matches('_');
    if word.is_empty() {
        return;
    }
    if keep(word) {
        emit(lowercase(word, lower));
    }
    if has_parts(word) {
        for part in parts(word) {
            if keep(part) {
                emit(lowercase(part, lower));
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

/// The distinct tokens of `text`, as sorted 64-bit hashes: near-duplicate removal
/// compares every pair of a corpus's merged hits, and merging two sorted integer lists is
/// far cheaper than intersecting sets of strings. (Two different tokens sharing a 64-bit
/// hash would count as one; at a few hundred tokens per text that chance is ~1e-15.)
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TokenSet(Vec<u64>);

impl TokenSet {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

pub fn token_set(text: &str) -> TokenSet {
    let mut hashes = Vec::new();
    for_each_token(text, |t| {
        let mut hasher = rustc_hash::FxHasher::default();
        hasher.write(t.as_bytes());
        hashes.push(hasher.finish());
    });
    hashes.sort_unstable();
    hashes.dedup();
    TokenSet(hashes)
}

/// |A ∩ B| / |A ∪ B|; two empty sets are identical (1.0).
pub fn jaccard(a: &TokenSet, b: &TokenSet) -> f64 {
    let (a, b) = (&a.0, &b.0);
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut shared) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    shared as f64 / (a.len() + b.len() - shared) as f64
}

fn keep(token: &str) -> bool {
    let long_enough = token.len() >= 2 && (token.is_ascii() || token.chars().nth(1).is_some());
    long_enough && !token.bytes().all(|b| b.is_ascii_digit())
}

/// `word` lower-cased: itself when it already is (ASCII), else a copy in `buffer`.
fn lowercase<'a>(word: &'a str, buffer: &'a mut String) -> &'a str {
    if word.is_ascii() {
        if !word.bytes().any(|b| b.is_ascii_uppercase()) {
            return word;
        }
        buffer.clear();
        buffer.push_str(word);
        buffer.make_ascii_lowercase();
    } else {
        buffer.clear();
        buffer.extend(word.chars().flat_map(char::to_lowercase));
    }
    buffer
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
    let mut chars = word.char_indices();
    let mut start = 0;
    let mut previous_lower = false;
    std::iter::from_fn(move || {
        for (at, c) in chars.by_ref() {
            if c == '_' {
                let part = &word[start..at];
                start = at + 1;
                previous_lower = false;
                if !part.is_empty() {
                    return Some(part);
                }
                continue;
            }
            let boundary = previous_lower && c.is_uppercase();
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
            if boundary && at > start {
                let part = &word[start..at];
                start = at;
                return Some(part);
            }
        }
        if start < word.len() {
            let part = &word[start..];
            start = word.len();
            return Some(part);
        }
        None
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
        assert!((jaccard(&TokenSet::default(), &TokenSet::default()) - 1.0).abs() < 1e-9);
        assert_eq!(a.len(), 4);
    }
}
