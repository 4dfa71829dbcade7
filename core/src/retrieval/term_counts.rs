//! A document's lexical statistics, computed once when it is stored.
//!
//! BM25 needs, per document, only its length in tokens and how often each query term
//! occurs in it. Tokenising every candidate's text on every query made that most of a
//! retrieval's time (a Lambda keeps no index between jobs, so nothing is reused), while
//! a document's text changes only when it is upserted. So the corpus store keeps, beside
//! the text, its distinct terms (as [`term_hash`](super::tokens::term_hash)es) with their
//! counts, and a query only looks those up: a few dozen integer probes per document
//! instead of a pass over every byte. A document stored before this existed, or whose
//! counts cannot be read, is tokenised from its text instead, with the same result.

use super::tokens::for_each_term;

/// Distinct terms with their counts (sorted by hash) and the total token count.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TermCounts {
    length: u32,
    terms: Vec<(u64, u16)>,
}

/// The first byte of the stored form; another layout would take another number.
const FORMAT: u8 = 1;
const HEADER: usize = 1 + 4;
const ENTRY: usize = 8 + 2;

impl TermCounts {
    /// The counts of `text`'s tokens. A count beyond `u16::MAX` is kept at that (the store
    /// caps a text at 32 KiB, and a token with its separator takes at least 3 bytes, so
    /// no stored document comes near it).
    pub fn of(text: &str) -> Self {
        let mut hashes = Vec::new();
        for_each_term(text, |t| hashes.push(t));
        let length = u32::try_from(hashes.len()).unwrap_or(u32::MAX);
        hashes.sort_unstable();
        let mut terms: Vec<(u64, u16)> = Vec::new();
        for hash in hashes {
            match terms.last_mut() {
                Some((last, count)) if *last == hash => *count = count.saturating_add(1),
                _ => terms.push((hash, 1)),
            }
        }
        TermCounts { length, terms }
    }

    /// Tokens in the document, repeats included (BM25's document length).
    pub fn length(&self) -> u32 {
        self.length
    }

    /// `(term hash, count)` of each distinct term, by hash.
    pub fn terms(&self) -> &[(u64, u16)] {
        &self.terms
    }

    /// The size of [`to_bytes`](Self::to_bytes), without building it.
    pub fn stored_len(&self) -> usize {
        HEADER + ENTRY * self.terms.len()
    }

    /// The stored form: a format byte, the length (u32), then 10 bytes per distinct term
    /// (hash u64, count u16; little-endian). About half the size of a hunk's text.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.stored_len());
        bytes.push(FORMAT);
        bytes.extend_from_slice(&self.length.to_le_bytes());
        for (hash, count) in &self.terms {
            bytes.extend_from_slice(&hash.to_le_bytes());
            bytes.extend_from_slice(&count.to_le_bytes());
        }
        bytes
    }

    /// Read the stored form back; `None` for anything [`to_bytes`](Self::to_bytes) cannot
    /// have written (another format, a cut or padded blob, terms out of order, zero
    /// counts), and the caller tokenises the text instead.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let (&format, rest) = bytes.split_first()?;
        if format != FORMAT || rest.len() < 4 || (rest.len() - 4) % ENTRY != 0 {
            return None;
        }
        let (length, entries) = rest.split_at(4);
        let length = u32::from_le_bytes(length.try_into().ok()?);
        let mut terms = Vec::with_capacity(entries.len() / ENTRY);
        let mut total = 0u64;
        for entry in entries.chunks_exact(ENTRY) {
            let hash = u64::from_le_bytes(entry[..8].try_into().ok()?);
            let count = u16::from_le_bytes(entry[8..].try_into().ok()?);
            if count == 0 || terms.last().is_some_and(|(last, _)| *last >= hash) {
                return None;
            }
            total += u64::from(count);
            terms.push((hash, count));
        }
        // Counts may be capped, so they can only fall short of the length, never exceed it.
        (total <= u64::from(length)).then_some(TermCounts { length, terms })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieval::tokens::{term_hash, tokens};

    #[test]
    fn counts_are_the_tokens_of_the_text() {
        let text = "fn parse_header(header: &str) -> Header { parse(header) }";
        let counts = TermCounts::of(text);
        let all = tokens(text);
        assert_eq!(counts.length() as usize, all.len());
        let count = |word: &str| {
            counts
                .terms()
                .iter()
                .find(|(h, _)| *h == term_hash(word))
                .map_or(0, |(_, c)| *c)
        };
        // "header" alone twice, as a part of parse_header once, and "Header" lower-cased.
        assert_eq!(count("header"), 4);
        assert_eq!(count("parse"), 2);
        assert_eq!(count("parse_header"), 1);
        assert_eq!(count("str"), 1);
        assert_eq!(count("zebra"), 0);
        assert!(counts.terms().windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(TermCounts::of(""), TermCounts::default());
    }

    #[test]
    fn the_stored_form_round_trips_and_refuses_what_it_cannot_be() {
        let counts = TermCounts::of("let retries = config.max_retries; retry(retries)");
        let bytes = counts.to_bytes();
        assert_eq!(bytes.len(), HEADER + ENTRY * counts.terms().len());
        assert_eq!(bytes.len(), counts.stored_len());
        assert_eq!(TermCounts::from_bytes(&bytes), Some(counts.clone()));
        assert_eq!(
            TermCounts::from_bytes(&TermCounts::default().to_bytes()),
            Some(TermCounts::default())
        );

        assert_eq!(TermCounts::from_bytes(&[]), None);
        assert_eq!(
            TermCounts::from_bytes(&bytes[..bytes.len() - 1]),
            None,
            "cut"
        );
        let mut other_format = bytes.clone();
        other_format[0] = 2;
        assert_eq!(TermCounts::from_bytes(&other_format), None);
        let mut swapped = bytes.clone();
        let (a, b) = (HEADER, HEADER + ENTRY);
        let first: Vec<u8> = swapped[a..b].to_vec();
        let second: Vec<u8> = swapped[b..b + ENTRY].to_vec();
        swapped[a..b].copy_from_slice(&second);
        swapped[b..b + ENTRY].copy_from_slice(&first);
        assert_eq!(TermCounts::from_bytes(&swapped), None, "out of order");
        let mut zero = bytes.clone();
        zero[HEADER + 8..HEADER + ENTRY].copy_from_slice(&0u16.to_le_bytes());
        assert_eq!(TermCounts::from_bytes(&zero), None, "a zero count");
        let mut short = bytes;
        short[1..5].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(
            TermCounts::from_bytes(&short),
            None,
            "more counted than its length"
        );
    }
}
