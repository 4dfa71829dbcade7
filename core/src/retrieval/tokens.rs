//! Words of code and prose, as lexical search and near-duplicate removal see them.
//!
//! Code names its ideas in identifiers: `parseHunkHeader` and `parse_hunk_header` are the
//! same words to a person asking "where do we parse hunk headers?". Each identifier is
//! therefore one token as written (lower-cased, so an exact name matches exactly) plus
//! its camelCase / snake_case parts when it has more than one. One-letter words and bare
//! numbers carry no meaning across documents and are left out.
//! A word in a script written without spaces (Chinese, Japanese, Thai) is usually a whole
//! phrase: it counts whole and as its pairs of characters ([`crate::scripts`]).

/// Call `emit` with each token of `text`, in order. This is the readable definition of a
/// token, kept as the oracle the tests hold [`for_each_term`] to: lexical search and
/// near-duplicate removal use that one, which yields the same tokens as hashes and is
/// several times faster, so this is not built outside tests.
#[cfg(test)]
pub fn for_each_token(text: &str, mut emit: impl FnMut(&str)) {
    let mut lower = String::new();
    for_each_word(text, |word, ascii| {
        if ascii {
            ascii_word(word, &mut lower, &mut emit);
        } else {
            unicode_word(word, &mut lower, &mut emit);
        }
    });
}

/// Call `emit` with [`term_hash`] of each token of `text`: the same multiset as
/// `for_each_token` (the string tokenizer the tests compare against), though an
/// identifier's parts may come before the whole.
///
/// Lexical search runs this over every candidate on every query (a Lambda keeps no index
/// between jobs), which made tokenising most of a retrieval's time. ASCII text (nearly
/// all code) is therefore scanned in one pass that finds words, cuts identifiers into
/// parts and hashes them as it goes, lower-casing byte by byte: no string is built or
/// compared, and the caller's lookups are of integers. Text with non-ASCII characters is
/// split into words first; their ASCII words take the same scanner, the others the
/// string path, hashed after.
pub fn for_each_term(text: &str, mut emit: impl FnMut(u64)) {
    if text.is_ascii() {
        return ascii_terms(text.as_bytes(), &mut emit);
    }
    let mut lower = String::new();
    for_each_word(text, |word, ascii| {
        if ascii {
            ascii_terms(word.as_bytes(), &mut emit);
        } else {
            unicode_word(word, &mut lower, &mut |token| emit(term_hash(token)));
        }
    });
}

/// A token's identity for search: 64-bit FNV-1a of its (lower-cased) bytes. Two
/// different tokens sharing a hash would count as one word; at the few hundred thousand
/// distinct words of a repository the chance of any such pair is ~1e-9, and a collision
/// someone crafted could only make their own text look related to a query that
/// retrieval then shows as context, never change a finding or a merge gate.
pub fn term_hash(token: &str) -> u64 {
    token.bytes().fold(FNV_OFFSET, fnv_step)
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

#[inline]
fn fnv_step(hash: u64, byte: u8) -> u64 {
    (hash ^ u64::from(byte)).wrapping_mul(FNV_PRIME)
}

/// Call `word` with each run of word characters in `text` and whether it is all ASCII.
/// ASCII is scanned byte by byte through a table; only non-ASCII characters are decoded.
fn for_each_word(text: &str, mut word: impl FnMut(&str, bool)) {
    let bytes = text.as_bytes();
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
        word(&text[start..at], ascii);
    }
}

/// `ascii_word`'s tokens, as hashes, of every word of ASCII `text` in one pass.
///
/// A word's leading underscores are skipped and its trailing ones dropped (a run of
/// underscores is only a cut when a letter or digit follows). A part is emitted at each
/// cut (`_`, or a lower-case letter or digit followed by an upper-case letter); the whole
/// word's hash equals its first part's until the first cut, so a second hash is kept only
/// from there; with no cut the word is its one part.
fn ascii_terms(text: &[u8], emit: &mut impl FnMut(u64)) {
    let alphanumeric = |at: usize| text.get(at).is_some_and(u8::is_ascii_alphanumeric);
    let keep = |len: usize, digits: bool| len >= 2 && !digits;
    let mut at = 0;
    while at < text.len() {
        while at < text.len() && !alphanumeric(at) {
            at += 1;
        }
        if at >= text.len() {
            break;
        }
        // A word from here (leading underscores were skipped with the separators).
        let start = at;
        let (mut part, mut part_start, mut part_digits) = (FNV_OFFSET, at, true);
        let (mut whole, mut whole_digits) = (FNV_OFFSET, true);
        let (mut cut, mut previous_lower) = (false, false);
        let end = loop {
            let byte = text[at];
            if previous_lower && byte.is_ascii_uppercase() {
                if keep(at - part_start, part_digits) {
                    emit(part);
                }
                if !cut {
                    (whole, cut) = (part, true);
                }
                (part, part_start, part_digits) = (FNV_OFFSET, at, true);
            }
            let lower = byte.to_ascii_lowercase();
            let digit = byte.is_ascii_digit();
            part = fnv_step(part, lower);
            if cut {
                whole = fnv_step(whole, lower);
            }
            part_digits &= digit;
            whole_digits &= digit;
            previous_lower = byte.is_ascii_lowercase() || digit;
            at += 1;
            if alphanumeric(at) {
                continue;
            }
            let underscores = at;
            while text.get(at) == Some(&b'_') {
                at += 1;
            }
            if at == underscores || !alphanumeric(at) {
                break underscores; // trailing underscores are not part of the word
            }
            if keep(underscores - part_start, part_digits) {
                emit(part);
            }
            if !cut {
                (whole, cut) = (part, true);
            }
            for _ in underscores..at {
                whole = fnv_step(whole, b'_');
            }
            whole_digits = false;
            (part, part_start, part_digits) = (FNV_OFFSET, at, true);
            previous_lower = false;
        };
        if keep(end - part_start, part_digits) {
            emit(part);
        }
        if cut && keep(end - start, whole_digits) {
            emit(whole);
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
#[cfg(test)]
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

#[cfg(test)]
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
    // A sentence in Chinese or Japanese is one "word": its pairs of characters are what a
    // question in other words can share with it ([`crate::scripts`]).
    if crate::scripts::has_unspaced(word) {
        crate::scripts::for_each_part(word, |part| {
            if part != word && keep(part) {
                emit(lowercase(part, lower));
            }
        });
    }
}

/// The tokens of `text`, in order.
#[cfg(test)]
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
    for_each_term(text, |t| hashes.push(t));
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
    fn a_sentence_without_spaces_is_read_by_its_pairs_of_characters() {
        assert_eq!(
            tokens("このクエリは安全"),
            [
                "このクエリは安全",
                "この",
                "のク",
                "クエ",
                "エリ",
                "リは",
                "は安",
                "安全"
            ]
        );
        // A question in other words shares the phrase's pairs with the thread.
        let thread: Vec<String> = tokens("SQLインジェクションの恐れ");
        let question = tokens("インジェクションは本当？");
        assert!(question.iter().filter(|t| thread.contains(t)).count() >= 6);
        assert_eq!(
            tokens("式"),
            Vec::<String>::new(),
            "one character is no word"
        );
    }

    /// `for_each_term`'s hashes, sorted, against the hashes of `for_each_token`'s strings.
    fn same_terms(text: &str) -> Result<(), String> {
        let mut expected: Vec<u64> = tokens(text).iter().map(|t| term_hash(t)).collect();
        let mut hashed = Vec::new();
        for_each_term(text, |t| hashed.push(t));
        expected.sort_unstable();
        hashed.sort_unstable();
        if expected == hashed {
            Ok(())
        } else {
            Err(format!("{text:?}: tokens {:?}", tokens(text)))
        }
    }

    #[test]
    fn hashed_terms_are_the_tokens() {
        for text in [
            "fn parseHunkHeader(x: u32) -> parse_hunk_header",
            "a = 42 + _ + __init__ + ___",
            "HTTPServer getHTTP2Response x2Y a_b_c __a__b__ 2fa mp3 v8_engine",
            "_a_ __ a1B2 1_2 x__init__ AB_cd fooBAR_baz9Qux 12 ab_ _ab aB",
            "ends_with_",
            "Größe ÜBER straßeName fooΩbar naïve_café",
            "SQLインジェクションの恐れ unwrapの使用 安全 式",
            "",
        ] {
            assert_eq!(same_terms(text), Ok(()));
        }
        // Every diff of the shared corpus, as real code and prose.
        let corpus =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpora/diffs");
        let mut folders = vec![corpus.clone()];
        let mut seen = 0;
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).expect("the shared diff corpus exists") {
                let path = entry.expect("a directory entry").path();
                if path.is_dir() {
                    folders.push(path);
                } else if let Ok(text) = std::fs::read_to_string(&path) {
                    assert_eq!(same_terms(&text), Ok(()), "{}", path.display());
                    seen += 1;
                }
            }
        }
        assert!(seen >= 30, "read {seen} files of {}", corpus.display());
    }

    proptest::proptest! {
        #[test]
        fn hashed_terms_are_the_tokens_of_any_text(text in "[a-zA-Z0-9_ .:(){}ßÜΩé\\-]{0,80}") {
            proptest::prop_assert_eq!(same_terms(&text), Ok(()));
        }
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
