//! A document's lexical statistics, computed once when it is stored.
//!
//! BM25 needs, per document, only its length in tokens and how often each query term
//! occurs in it. Tokenising every candidate's text on every query made that most of a
//! retrieval's time (a Lambda keeps no index between jobs, so nothing is reused), while
//! a document's text changes only when it is upserted. So the corpus store keeps, beside
//! the text, its distinct terms with their counts, and a query only looks those up: a few
//! dozen integer probes per document instead of a pass over every byte. A document
//! stored before this existed, or whose counts cannot be read, is tokenised from its text
//! instead, with the same result.
//!
//! Terms are 32-bit ids ([`term_id`]) rather than the tokenizer's 64-bit hashes, to keep
//! the stored counts smaller than the text they describe (about 5 bytes a distinct term;
//! a typical hunk has ~75). The cost is rare false matches: with ~100 distinct query
//! terms and ~100,000 distinct terms in a repository's candidates, about one query in
//! 400 has some document in which one unrelated term counts as a query term, adding one
//! term's weight to that document's BM25 score. Near-duplicate removal keeps the full
//! 64-bit hashes.

use super::tokens::for_each_term;

/// Distinct terms with their counts (sorted by id) and the total token count.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TermCounts {
    length: u32,
    terms: Vec<(u32, u32)>,
}

/// A token's identity for lexical search: its 64-bit hash folded to 32 bits (both
/// halves, since FNV-1a mixes its low bits least).
pub fn term_id(hash: u64) -> u32 {
    ((hash >> 32) as u32) ^ (hash as u32)
}

/// Call `emit` with the [`term_id`] of each token of `text`.
pub fn for_each_term_id(text: &str, mut emit: impl FnMut(u32)) {
    for_each_term(text, |hash| emit(term_id(hash)));
}

/// The first byte of the stored form; another layout would take another number.
const FORMAT: u8 = 1;
/// The format byte and the length (u32).
const HEADER: usize = 1 + 4;

impl TermCounts {
    pub fn of(text: &str) -> Self {
        let mut ids = Vec::new();
        for_each_term_id(text, |id| ids.push(id));
        let length = u32::try_from(ids.len()).unwrap_or(u32::MAX);
        ids.sort_unstable();
        let mut terms: Vec<(u32, u32)> = Vec::new();
        for id in ids {
            match terms.last_mut() {
                Some((last, count)) if *last == id => *count = count.saturating_add(1),
                _ => terms.push((id, 1)),
            }
        }
        TermCounts { length, terms }
    }

    /// Tokens in the document, repeats included (BM25's document length).
    pub fn length(&self) -> u32 {
        self.length
    }

    /// `(term id, count)` of each distinct term, by id.
    pub fn terms(&self) -> &[(u32, u32)] {
        &self.terms
    }

    /// The size of [`to_bytes`](Self::to_bytes), without building it.
    pub fn stored_len(&self) -> usize {
        HEADER
            + self
                .terms
                .iter()
                .map(|&(_, count)| 4 + varint_len(count))
                .sum::<usize>()
    }

    /// The stored form: a format byte, the length (u32 little-endian), then per distinct
    /// term its id (u32 little-endian) and its count (LEB128: one byte below 128).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.stored_len());
        bytes.push(FORMAT);
        bytes.extend_from_slice(&self.length.to_le_bytes());
        for &(id, count) in &self.terms {
            bytes.extend_from_slice(&id.to_le_bytes());
            let mut rest = count;
            while rest >= 0x80 {
                bytes.push((rest as u8 & 0x7f) | 0x80);
                rest >>= 7;
            }
            bytes.push(rest as u8);
        }
        bytes
    }

    /// Read the stored form back; `None` for anything [`to_bytes`](Self::to_bytes) cannot
    /// have written (another format, a cut or padded blob, ids out of order, zero or
    /// overlong counts, more counted than the length), and the caller tokenises the
    /// text instead.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let (&format, rest) = bytes.split_first()?;
        if format != FORMAT {
            return None;
        }
        let (length, mut rest) = rest.split_at_checked(4)?;
        let length = u32::from_le_bytes(length.try_into().ok()?);
        let mut terms: Vec<(u32, u32)> = Vec::new();
        let mut total = 0u64;
        while !rest.is_empty() {
            let (id, after) = rest.split_at_checked(4)?;
            let id = u32::from_le_bytes(id.try_into().ok()?);
            let (count, after) = read_varint(after)?;
            if count == 0 || terms.last().is_some_and(|(last, _)| *last >= id) {
                return None;
            }
            total += u64::from(count);
            terms.push((id, count));
            rest = after;
        }
        (total == u64::from(length)).then_some(TermCounts { length, terms })
    }
}

fn varint_len(value: u32) -> usize {
    match value {
        0..0x80 => 1,
        0x80..0x4000 => 2,
        0x4000..0x20_0000 => 3,
        0x20_0000..0x1000_0000 => 4,
        _ => 5,
    }
}

/// A LEB128 u32 and what follows it; `None` when cut, longer than five bytes, beyond
/// `u32`, or not in its shortest form (which `to_bytes` always writes).
fn read_varint(bytes: &[u8]) -> Option<(u32, &[u8])> {
    let mut value = 0u64;
    for (i, &byte) in bytes.iter().enumerate().take(5) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            let value = u32::try_from(value).ok()?;
            return (varint_len(value) == i + 1).then_some((value, &bytes[i + 1..]));
        }
    }
    None
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
                .find(|(id, _)| *id == term_id(term_hash(word)))
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
        // One term 200 times (a two-byte count) among ones counted once.
        let text = format!("let retries = config.max_retries; {}", "retry ".repeat(200));
        let counts = TermCounts::of(&text);
        let bytes = counts.to_bytes();
        assert_eq!(bytes.len(), counts.stored_len());
        assert_eq!(bytes.len(), HEADER + 5 * counts.terms().len() + 1);
        assert_eq!(TermCounts::from_bytes(&bytes), Some(counts.clone()));
        assert_eq!(
            TermCounts::from_bytes(&TermCounts::default().to_bytes()),
            Some(TermCounts::default())
        );

        let refused = |bytes: &[u8], why: &str| {
            assert_eq!(TermCounts::from_bytes(bytes), None, "{why}");
        };
        refused(&[], "empty");
        refused(&bytes[..bytes.len() - 1], "cut");
        refused(&[bytes.clone(), vec![0]].concat(), "padded");
        let mut other_format = bytes.clone();
        other_format[0] = 2;
        refused(&other_format, "another format");

        // Two one-byte-count terms, hand-written: ids 7 and 9, counts 1 and 2.
        let entry = |id: u32, count: &[u8]| [id.to_le_bytes().as_slice(), count].concat();
        let written = |length: u32, entries: &[Vec<u8>]| {
            [
                vec![FORMAT],
                length.to_le_bytes().to_vec(),
                entries.concat(),
            ]
            .concat()
        };
        assert_eq!(
            TermCounts::from_bytes(&written(3, &[entry(7, &[1]), entry(9, &[2])])),
            Some(TermCounts {
                length: 3,
                terms: vec![(7, 1), (9, 2)]
            })
        );
        refused(
            &written(3, &[entry(9, &[2]), entry(7, &[1])]),
            "out of order",
        );
        refused(
            &written(2, &[entry(7, &[1]), entry(7, &[1])]),
            "a repeated id",
        );
        refused(&written(0, &[entry(7, &[0])]), "a zero count");
        refused(
            &written(4, &[entry(7, &[1]), entry(9, &[2])]),
            "length disagrees",
        );
        refused(&written(1, &[entry(7, &[0x81, 0x00])]), "overlong count");
        refused(
            &written(1, &[entry(7, &[0xff, 0xff, 0xff, 0xff, 0x7f])]),
            "count beyond u32",
        );
        refused(&written(1, &[entry(7, &[0x80])]), "count cut");
    }

    #[test]
    fn varints_round_trip_at_every_width() {
        for value in [1, 127, 128, 16_383, 16_384, 2_097_151, 2_097_152, u32::MAX] {
            let counts = TermCounts {
                length: value,
                terms: vec![(1, value)],
            };
            let bytes = counts.to_bytes();
            assert_eq!(bytes.len(), HEADER + 4 + varint_len(value), "{value}");
            assert_eq!(TermCounts::from_bytes(&bytes), Some(counts), "{value}");
        }
    }
}
