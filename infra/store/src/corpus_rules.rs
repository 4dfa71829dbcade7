//! The corpus store's rules, defined once for both adapters: how an upsert merges into
//! what is stored, what one document may hold, and what "newest first" means.
//!
//! Both adapters read the stored document, apply [`merge`] and write the result back
//! under a guard (a conditional write on a version in DynamoDB, a transaction in SQLite),
//! so a document upserted on a laptop ends up exactly as it would in AWS.

use parley_core::ports::{Corpus, Document, Occurrence, StoreError};
use parley_core::retrieval::TermCounts;
use std::cmp::Ordering;

/// Text beyond this many bytes is cut (at a character boundary). A hunk or finding of
/// 32 KiB is already far more than a prompt quotes or a model embeds (the embedding job
/// reads the first 16 000 characters), and it keeps a DynamoDB item (400 KB at most)
/// small enough that a page of `documents` holds many of them.
pub const MAX_TEXT_BYTES: usize = 32 * 1024;

/// Occurrences kept per document, newest first: a hunk that recurs in every PR (a
/// license header, a generated block) must not grow its item without bound.
pub const MAX_OCCURRENCES: usize = 100;

/// The largest document accepted, as its JSON encoding plus the vector. Attributes, paths
/// and titles are not capped one by one; this catches any of them being absurd, with a
/// clear error, well before DynamoDB's 400 KB would refuse the item with a vaguer one.
pub const MAX_DOCUMENT_BYTES: usize = 300_000;

/// `incoming` upserted over `stored`: occurrences merged (one per PR and path, the first
/// seen kept), text, attributes and the descriptive fields replaced, the vector kept
/// unless `incoming` brings one or the text changed, `created_at` the earliest and
/// `updated_at` the latest of the two.
pub fn merge(stored: Document, incoming: &Document) -> Document {
    let text_changed = stored.text != incoming.text;
    let mut occurrences = stored.occurrences;
    for occurrence in &incoming.occurrences {
        let seen = occurrences
            .iter()
            .any(|o| o.pr == occurrence.pr && o.path == occurrence.path);
        if !seen {
            occurrences.push(occurrence.clone());
        }
    }
    let vector = match (&incoming.vector, stored.vector) {
        (Some(new), _) => Some(new.clone()),
        (None, _) if text_changed => None,
        (None, kept) => kept,
    };
    Document {
        repo: stored.repo,
        corpus: stored.corpus,
        key: stored.key,
        text: incoming.text.clone(),
        path: incoming.path.clone().or(stored.path),
        language: incoming.language.clone().or(stored.language),
        function_context: incoming
            .function_context
            .clone()
            .or(stored.function_context),
        attributes: incoming.attributes.clone(),
        occurrences,
        vector,
        // Counted again from the merged text when the store writes it.
        terms: None,
        created_at: stored.created_at.min(incoming.created_at),
        updated_at: stored.updated_at.max(incoming.updated_at),
    }
}

/// Term counts larger than this are not kept (the text is tokenised at query time
/// instead), so they never outweigh the text they describe. Code of 32 KiB has a few
/// thousand distinct terms (~5 bytes each, ~15 KB); only text built of nothing but
/// distinct short words goes past it.
pub const MAX_TERMS_BYTES: usize = 32 * 1024;

/// `doc` as the store writes it: within the limits ([`capped`]) and with the term counts
/// of its (possibly cut) text, which lexical search reads instead of tokenising the text
/// on every query.
pub fn prepared(doc: Document) -> Result<Document, StoreError> {
    let mut doc = capped(doc)?;
    let counts = TermCounts::of(&doc.text);
    doc.terms = (counts.stored_len() <= MAX_TERMS_BYTES).then_some(counts);
    if doc.terms.is_none() {
        tracing::debug!(repo = %doc.repo, key = %doc.key, "term counts too large to keep; the text is tokenised at query time");
    }
    Ok(doc)
}

/// `doc` within the limits: text cut to [`MAX_TEXT_BYTES`], the newest
/// [`MAX_OCCURRENCES`] occurrences in time order, and refused when still larger than
/// [`MAX_DOCUMENT_BYTES`].
pub fn capped(mut doc: Document) -> Result<Document, StoreError> {
    if doc.text.len() > MAX_TEXT_BYTES {
        let cut = (0..=MAX_TEXT_BYTES)
            .rev()
            .find(|i| doc.text.is_char_boundary(*i))
            .unwrap_or(0);
        tracing::debug!(repo = %doc.repo, key = %doc.key, bytes = doc.text.len(), "document text cut to the store's limit");
        doc.text.truncate(cut);
    }
    doc.occurrences.sort_by(oldest_occurrence_first);
    if doc.occurrences.len() > MAX_OCCURRENCES {
        let drop = doc.occurrences.len() - MAX_OCCURRENCES;
        doc.occurrences.drain(..drop);
    }
    let size = serde_json::to_vec(&doc)
        .map(|json| json.len())
        .map_err(|e| StoreError::Config(format!("encoding document {}: {e}", doc.key)))?;
    if size > MAX_DOCUMENT_BYTES {
        return Err(StoreError::Config(format!(
            "document {} of {} is {size} bytes after capping its text and occurrences; \
             the corpus store takes at most {MAX_DOCUMENT_BYTES} (are its attributes, path or \
             titles unreasonably long?)",
            doc.key, doc.repo
        )));
    }
    Ok(doc)
}

fn oldest_occurrence_first(a: &Occurrence, b: &Occurrence) -> Ordering {
    (a.created_at, a.pr, &a.path).cmp(&(b.created_at, b.pr, &b.path))
}

/// `updated_at` in nanoseconds since the epoch, the sort key of "newest first" in both
/// adapters. Before 1970 counts as 0; after 2262 as the end of `i64` (neither occurs).
pub fn updated_nanos(doc: &Document) -> i64 {
    let nanos = doc.updated_at.unix_timestamp_nanos().max(0);
    i64::try_from(nanos).unwrap_or(i64::MAX)
}

/// Newest first, by `updated_at` and then by key (descending, as the DynamoDB index
/// sorts), so ties come back in the same order from both adapters.
pub fn newest_first(documents: &mut [Document]) {
    documents.sort_by(|a, b| (b.updated_at, &b.key).cmp(&(a.updated_at, &a.key)));
}

/// Stored term counts read back. Unreadable ones (written by a newer format, or damaged)
/// are not an error: lexical search tokenises the text instead, which gives the same
/// scores, so the document stays usable.
pub fn term_counts(bytes: &[u8], location: &str) -> Option<TermCounts> {
    let counts = TermCounts::from_bytes(bytes);
    if counts.is_none() {
        tracing::warn!(
            location,
            bytes = bytes.len(),
            "unreadable term counts; lexical search tokenises the text"
        );
    }
    counts
}

/// A vector for a document no longer stored (expired, or pruned between the embedding
/// job's read and its write) is dropped: the document's next upsert is embedded again.
pub fn no_document_for_vector(repo: &str, corpus: Corpus, key: &str) {
    tracing::debug!(
        repo,
        corpus = corpus.as_str(),
        key,
        "no document to attach a vector to"
    );
}

/// Vector values as stored bytes (two's complement, one byte each) and back.
pub fn vector_bytes(values: &[i8]) -> Vec<u8> {
    values
        .iter()
        .map(|v| u8::from_ne_bytes(v.to_ne_bytes()))
        .collect()
}

pub fn vector_values(bytes: &[u8]) -> Vec<i8> {
    bytes
        .iter()
        .map(|b| i8::from_ne_bytes(b.to_ne_bytes()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_core::ports::QuantizedVector;
    use time::macros::datetime;

    fn occurrence(pr: u64, path: &str) -> Occurrence {
        Occurrence {
            pr,
            pr_title: format!("PR {pr}"),
            path: path.into(),
            start_line: 1,
            line_count: 3,
            created_at: datetime!(2024-01-01 00:00 UTC) + time::Duration::days(pr as i64),
        }
    }

    fn doc(text: &str, occurrences: Vec<Occurrence>) -> Document {
        Document {
            path: Some("src/a.rs".into()),
            language: Some("rust".into()),
            occurrences,
            ..Document::new(
                "o/r",
                Corpus::Code,
                "k",
                text,
                datetime!(2024-01-01 00:00 UTC),
            )
        }
    }

    #[test]
    fn a_changed_text_drops_the_vector_an_unchanged_one_keeps_it() {
        let mut stored = doc("same", vec![]);
        stored.vector = Some(QuantizedVector::quantize("m", &[1.0, 0.0]));
        assert!(merge(stored.clone(), &doc("same", vec![])).vector.is_some());
        assert!(
            merge(stored.clone(), &doc("changed", vec![]))
                .vector
                .is_none()
        );
        let mut with_new = doc("changed", vec![]);
        with_new.vector = Some(QuantizedVector::quantize("m2", &[0.0, 1.0]));
        assert_eq!(merge(stored, &with_new).vector.unwrap().model, "m2");
    }

    #[test]
    fn text_is_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_TEXT_BYTES); // two bytes each
        let capped = capped(doc(&long, vec![])).unwrap();
        assert!(capped.text.len() <= MAX_TEXT_BYTES);
        assert_eq!(capped.text.len(), MAX_TEXT_BYTES);
        let odd = format!("a{}", "é".repeat(MAX_TEXT_BYTES));
        let capped = super::capped(doc(&odd, vec![])).unwrap();
        assert_eq!(capped.text.len(), MAX_TEXT_BYTES - 1);
    }

    #[test]
    fn only_the_newest_occurrences_are_kept() {
        let many: Vec<Occurrence> = (1..=150).rev().map(|pr| occurrence(pr, "a")).collect();
        let capped = capped(doc("t", many)).unwrap();
        let prs: Vec<u64> = capped.occurrences.iter().map(|o| o.pr).collect();
        assert_eq!(prs, (51..=150).collect::<Vec<_>>());
    }

    #[test]
    fn absurd_attributes_are_refused_with_a_reason() {
        let mut huge = doc("t", vec![]);
        huge.attributes
            .insert("blob".into(), "x".repeat(MAX_DOCUMENT_BYTES));
        let err = capped(huge).unwrap_err();
        assert!(
            matches!(&err, StoreError::Config(m) if m.contains("at most")),
            "{err}"
        );
    }

    #[test]
    fn counts_are_kept_unless_they_would_bloat_the_item() {
        let small = prepared(doc("fn retry_after(header: Header)", vec![])).unwrap();
        assert_eq!(
            small.terms,
            Some(TermCounts::of("fn retry_after(header: Header)"))
        );

        // 32 KiB of distinct three-letter words: ~8,000 distinct terms, 40 KB of counts.
        let letters = |i: usize| {
            let c = |n: usize| char::from(b'a' + u8::try_from(n % 26).unwrap_or(0));
            format!("{}{}{} ", c(i / 676), c(i / 26), c(i))
        };
        let words: String = (0..MAX_TEXT_BYTES / 4).map(letters).collect();
        assert!(TermCounts::of(&words).stored_len() > MAX_TERMS_BYTES);
        let large = prepared(doc(&words, vec![])).unwrap();
        assert_eq!(large.terms, None, "tokenised at query time instead");
        assert_eq!(large.text, words, "the text itself is kept");
    }

    #[test]
    fn vector_bytes_round_trip() {
        let values = vec![-128, -1, 0, 1, 127];
        assert_eq!(vector_values(&vector_bytes(&values)), values);
        assert_eq!(vector_bytes(&[-1]), vec![255]);
    }
}
