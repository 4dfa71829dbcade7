//! The corpus store contract: what every `CorpusStore` adapter must do, run
//! on SQLite (a temp file) and on DynamoDB (moto, via `AWS_ENDPOINT_URL`; those tests
//! fail, never skip, when it is unset).

use crate::common;

use common::{at, document, occurrence};
use parley_core::ports::{Corpus, CorpusStore, Document, Occurrence, QuantizedVector, StoreError};
use parley_core::retrieval::TermCounts;
use parley_store::corpus_rules::{MAX_DOCUMENT_BYTES, MAX_TEXT_BYTES};
use std::sync::Arc;

const REPO: &str = "octo-org/corpus";

crate::common::on_both_adapters!(
    corpus;
    check_insert_and_read_back,
    check_upsert_merges_occurrences_without_duplicates,
    check_set_vector_and_what_an_upsert_does_to_it,
    check_documents_newest_first_with_limit_per_corpus,
    check_repositories_are_isolated,
    check_limits_cap_text_and_refuse_absurd_documents,
    check_concurrent_upserts_keep_every_occurrence,
    check_documents_reads_past_a_page,
    check_purge_takes_a_repositorys_documents,
    check_rekey_moves_a_repositorys_documents,
);

/// `doc` as a read returns it: with the term counts the store computed from its text.
fn as_stored(doc: &Document) -> Document {
    Document {
        terms: Some(TermCounts::of(&doc.text)),
        ..doc.clone()
    }
}

fn vector(model: &str, seed: f32) -> QuantizedVector {
    let raw: Vec<f32> = (0..64).map(|i| ((i as f32) * 0.37 + seed).sin()).collect();
    QuantizedVector::quantize(model, &raw)
}

async fn check_insert_and_read_back(corpus: Arc<dyn CorpusStore>) {
    let doc = document(
        REPO,
        Corpus::Code,
        "aa11",
        "fn parse_header() {}",
        at(0, 123),
    );
    assert!(corpus.upsert_document(&doc).await.unwrap(), "new document");
    assert_eq!(
        corpus.document(REPO, Corpus::Code, "aa11").await.unwrap(),
        Some(as_stored(&doc))
    );
    assert_eq!(
        corpus
            .document(REPO, Corpus::Finding, "aa11")
            .await
            .unwrap(),
        None,
        "same key, other corpus"
    );
    assert_eq!(
        corpus.document(REPO, Corpus::Code, "bb22").await.unwrap(),
        None
    );

    let bare = Document::new(REPO, Corpus::Thread, "4242", "who owns this?", at(1, 0));
    assert!(corpus.upsert_document(&bare).await.unwrap());
    assert_eq!(
        corpus.document(REPO, Corpus::Thread, "4242").await.unwrap(),
        Some(as_stored(&bare))
    );
}

async fn check_upsert_merges_occurrences_without_duplicates(corpus: Arc<dyn CorpusStore>) {
    let first = document(REPO, Corpus::Code, "k", "text", at(0, 0));
    assert!(corpus.upsert_document(&first).await.unwrap());

    let mut again = document(REPO, Corpus::Code, "k", "text", at(5, 0));
    again.created_at = at(5, 0);
    again.occurrences = vec![
        // Same PR and path seen again (another review of PR 1): no second occurrence.
        occurrence(1, "src/parse.rs", 99, 4),
        occurrence(2, "src/parse.rs", 12, 5),
        occurrence(2, "src/lex.rs", 40, 5),
    ];
    again.attributes = [("outcome".to_string(), "accepted".to_string())]
        .into_iter()
        .collect();
    assert!(!corpus.upsert_document(&again).await.unwrap(), "not new");

    let stored = corpus
        .document(REPO, Corpus::Code, "k")
        .await
        .unwrap()
        .unwrap();
    let seen: Vec<(u64, &str, u32)> = stored
        .occurrences
        .iter()
        .map(|o| (o.pr, o.path.as_str(), o.start_line))
        .collect();
    assert_eq!(
        seen,
        [
            (1, "src/parse.rs", 10),
            (2, "src/lex.rs", 40),
            (2, "src/parse.rs", 12)
        ]
    );
    assert_eq!(stored.attributes, again.attributes, "attributes replaced");
    assert_eq!(stored.created_at, at(0, 0), "first seen kept");
    assert_eq!(stored.updated_at, at(5, 0), "last seen");

    // The same upsert once more changes nothing.
    corpus.upsert_document(&again).await.unwrap();
    assert_eq!(
        corpus.document(REPO, Corpus::Code, "k").await.unwrap(),
        Some(stored)
    );
}

async fn check_set_vector_and_what_an_upsert_does_to_it(corpus: Arc<dyn CorpusStore>) {
    let doc = document(
        REPO,
        Corpus::Finding,
        "f_1",
        "SQL built by concatenation",
        at(0, 0),
    );
    corpus.upsert_document(&doc).await.unwrap();
    let v1 = vector("amazon.titan-embed-text-v2:0", 0.0);
    corpus
        .set_vector(REPO, Corpus::Finding, "f_1", &v1)
        .await
        .unwrap();
    let stored = corpus
        .document(REPO, Corpus::Finding, "f_1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.vector.as_ref(), Some(&v1), "vector stored exactly");
    assert_eq!(
        stored.updated_at, doc.updated_at,
        "embedding does not reorder"
    );

    // A text upsert (same text, a new occurrence, no vector) keeps the vector.
    let mut seen_again = document(
        REPO,
        Corpus::Finding,
        "f_1",
        "SQL built by concatenation",
        at(1, 0),
    );
    seen_again.occurrences = vec![occurrence(2, "src/db.rs", 3, 1)];
    corpus.upsert_document(&seen_again).await.unwrap();
    let stored = corpus
        .document(REPO, Corpus::Finding, "f_1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.vector.as_ref(),
        Some(&v1),
        "vector survives a text upsert"
    );
    assert_eq!(stored.occurrences.len(), 2);

    // An upsert that brings a vector replaces it.
    let v2 = vector("text-embedding-3-small", 1.5);
    let mut with_vector = seen_again.clone();
    with_vector.vector = Some(v2.clone());
    corpus.upsert_document(&with_vector).await.unwrap();
    let stored = corpus
        .document(REPO, Corpus::Finding, "f_1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.vector.as_ref(), Some(&v2));

    // Changed text: the old vector no longer describes it.
    let reworded = document(
        REPO,
        Corpus::Finding,
        "f_1",
        "SQL injection in find_user",
        at(2, 0),
    );
    corpus.upsert_document(&reworded).await.unwrap();
    let stored = corpus
        .document(REPO, Corpus::Finding, "f_1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.vector, None);
    assert_eq!(stored.text, "SQL injection in find_user");
    assert_eq!(
        stored.terms,
        Some(TermCounts::of("SQL injection in find_user")),
        "the term counts follow the text"
    );

    // No document, no half document.
    corpus
        .set_vector(REPO, Corpus::Finding, "f_missing", &v1)
        .await
        .expect("a missing document is not an error");
    assert_eq!(
        corpus
            .document(REPO, Corpus::Finding, "f_missing")
            .await
            .unwrap(),
        None
    );
}

async fn check_documents_newest_first_with_limit_per_corpus(corpus: Arc<dyn CorpusStore>) {
    // Inserted out of order; two share an instant (key decides, descending).
    for (key, day, nanos) in [
        ("c3", 3, 0),
        ("c1", 1, 0),
        ("c5", 5, 0),
        ("c2b", 2, 7),
        ("c2a", 2, 7),
        ("c4", 4, 999_999_999),
    ] {
        let doc = document(
            REPO,
            Corpus::Code,
            key,
            &format!("code {key}"),
            at(day, nanos),
        );
        corpus.upsert_document(&doc).await.unwrap();
    }
    for (key, day) in [("f1", 9), ("f2", 0)] {
        let doc = document(REPO, Corpus::Finding, key, "finding", at(day, 0));
        corpus.upsert_document(&doc).await.unwrap();
    }
    let keys = |docs: Vec<Document>| docs.into_iter().map(|d| d.key).collect::<Vec<_>>();

    assert_eq!(
        keys(corpus.documents(REPO, Corpus::Code, 100).await.unwrap()),
        ["c5", "c4", "c3", "c2b", "c2a", "c1"]
    );
    assert_eq!(
        keys(corpus.documents(REPO, Corpus::Code, 3).await.unwrap()),
        ["c5", "c4", "c3"]
    );
    assert_eq!(
        keys(corpus.documents(REPO, Corpus::Finding, 10).await.unwrap()),
        ["f1", "f2"]
    );
    assert!(
        corpus
            .documents(REPO, Corpus::Thread, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        corpus
            .documents(REPO, Corpus::Code, 0)
            .await
            .unwrap()
            .is_empty()
    );

    // Seeing c1 again makes it the newest; its vector comes back with it.
    corpus
        .set_vector(REPO, Corpus::Code, "c1", &vector("m", 0.3))
        .await
        .unwrap();
    let mut again = document(REPO, Corpus::Code, "c1", "code c1", at(6, 0));
    again.occurrences = vec![occurrence(6, "src/parse.rs", 1, 6)];
    corpus.upsert_document(&again).await.unwrap();
    let newest = corpus.documents(REPO, Corpus::Code, 1).await.unwrap();
    assert_eq!(newest.len(), 1);
    assert_eq!(newest[0].key, "c1");
    assert_eq!(newest[0].vector, Some(vector("m", 0.3)));
    assert_eq!(newest[0].occurrences.len(), 2);
}

async fn check_repositories_are_isolated(corpus: Arc<dyn CorpusStore>) {
    let other = "octo-org/other";
    let mine = document(REPO, Corpus::Code, "same", "mine", at(0, 0));
    let theirs = document(other, Corpus::Code, "same", "theirs", at(1, 0));
    corpus.upsert_document(&mine).await.unwrap();
    assert!(
        corpus.upsert_document(&theirs).await.unwrap(),
        "same key in another repository is a new document"
    );
    corpus
        .set_vector(other, Corpus::Code, "same", &vector("m", 2.0))
        .await
        .unwrap();

    let stored = corpus
        .document(REPO, Corpus::Code, "same")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.text, "mine");
    assert_eq!(stored.vector, None);
    let listed = corpus.documents(other, Corpus::Code, 10).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].text, "theirs");
    assert!(listed[0].vector.is_some());
    assert!(
        corpus
            .documents("octo-org/nobody", Corpus::Code, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn check_limits_cap_text_and_refuse_absurd_documents(corpus: Arc<dyn CorpusStore>) {
    let long = "x".repeat(MAX_TEXT_BYTES * 3);
    let doc = document(REPO, Corpus::Code, "long", &long, at(0, 0));
    corpus.upsert_document(&doc).await.unwrap();
    let stored = corpus
        .document(REPO, Corpus::Code, "long")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.text.len(), MAX_TEXT_BYTES);
    assert!(long.starts_with(&stored.text));
    assert_eq!(
        stored.terms,
        Some(TermCounts::of(&stored.text)),
        "counted from the text as cut"
    );

    let many: Vec<Occurrence> = (1..=130)
        .map(|pr| occurrence(pr, "src/parse.rs", 1, pr as i64))
        .collect();
    let doc = Document {
        occurrences: many,
        ..document(REPO, Corpus::Code, "busy", "license header", at(0, 0))
    };
    corpus.upsert_document(&doc).await.unwrap();
    let stored = corpus
        .document(REPO, Corpus::Code, "busy")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.occurrences.len(), 100);
    assert_eq!(
        stored.occurrences.first().map(|o| o.pr),
        Some(31),
        "newest kept"
    );

    let mut absurd = document(REPO, Corpus::Finding, "absurd", "t", at(0, 0));
    absurd
        .attributes
        .insert("dump".into(), "y".repeat(MAX_DOCUMENT_BYTES));
    let err = corpus.upsert_document(&absurd).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Config(m) if m.contains("absurd")),
        "{err}"
    );
    assert_eq!(
        corpus
            .document(REPO, Corpus::Finding, "absurd")
            .await
            .unwrap(),
        None,
        "nothing stored"
    );
}

async fn check_concurrent_upserts_keep_every_occurrence(corpus: Arc<dyn CorpusStore>) {
    let racers = 8u64;
    let mut tasks = Vec::new();
    for pr in 1..=racers {
        let corpus = corpus.clone();
        tasks.push(tokio::spawn(async move {
            let mut doc = document(REPO, Corpus::Code, "hot", "shared hunk", at(pr as i64, 0));
            doc.occurrences = vec![occurrence(pr, "src/hot.rs", 1, pr as i64)];
            corpus.upsert_document(&doc).await
        }));
    }
    let mut new = 0;
    for task in tasks {
        new += usize::from(task.await.unwrap().unwrap());
    }
    assert_eq!(new, 1, "exactly one upsert created the document");
    let stored = corpus
        .document(REPO, Corpus::Code, "hot")
        .await
        .unwrap()
        .unwrap();
    let mut prs: Vec<u64> = stored.occurrences.iter().map(|o| o.pr).collect();
    prs.sort_unstable();
    assert_eq!(prs, (1..=racers).collect::<Vec<_>>());
    assert_eq!(stored.updated_at, at(racers as i64, 0));
}

/// 40 documents of 30 KB: 1.2 MB, more than DynamoDB returns in one page.
async fn check_documents_reads_past_a_page(corpus: Arc<dyn CorpusStore>) {
    let text = "z".repeat(30_000);
    for i in 0..40 {
        let doc = document(REPO, Corpus::Code, &format!("big{i:02}"), &text, at(i, 0));
        corpus.upsert_document(&doc).await.unwrap();
    }
    let docs = corpus.documents(REPO, Corpus::Code, 40).await.unwrap();
    let keys: Vec<String> = docs.iter().map(|d| d.key.clone()).collect();
    let want: Vec<String> = (0..40).rev().map(|i| format!("big{i:02}")).collect();
    assert_eq!(keys, want);
    assert_eq!(
        corpus
            .documents(REPO, Corpus::Code, 35)
            .await
            .unwrap()
            .len(),
        35
    );
}

// --- term counts as stored: adapter-level, so each backend's own raw write ----------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_term_counts_missing_or_unreadable_fall_back_to_the_text() {
    let fixture = common::sqlite();
    check_term_counts_missing_or_unreadable(&fixture).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dynamodb_term_counts_missing_or_unreadable_fall_back_to_the_text() {
    let fixture = common::dynamo().await;
    check_term_counts_missing_or_unreadable(&fixture).await;
}

/// A document written before counts were kept, or whose counts were damaged, still
/// reads whole (lexical search then tokenises its text); the next upsert counts again.
async fn check_term_counts_missing_or_unreadable(fixture: &common::Fixture) {
    let corpus = &fixture.corpus;
    let doc = document(
        REPO,
        Corpus::Code,
        "cc33",
        "fn retry_after(header) {}",
        at(0, 0),
    );
    corpus.upsert_document(&doc).await.unwrap();
    let read = || async {
        corpus
            .document(REPO, Corpus::Code, "cc33")
            .await
            .expect("the document still reads")
            .expect("the document exists")
    };
    assert_eq!(read().await, as_stored(&doc));

    let expected_without = Document {
        terms: None,
        ..doc.clone()
    };
    for raw in [Some(vec![9, 9, 9]), Some(Vec::new()), None] {
        fixture
            .vandal
            .set_document_terms(REPO, ("code", "cc33"), raw.clone())
            .await;
        assert_eq!(read().await, expected_without, "{raw:?}");
        let newest = corpus.documents(REPO, Corpus::Code, 10).await.unwrap();
        assert_eq!(newest, std::slice::from_ref(&expected_without), "{raw:?}");
    }

    corpus.upsert_document(&doc).await.unwrap();
    assert_eq!(read().await, as_stored(&doc), "counted again");
}

/// Purging a repository takes every corpus of it and nothing of another.
async fn check_purge_takes_a_repositorys_documents(corpus: Arc<dyn CorpusStore>) {
    let other = "octo-org/corpus-2";
    for (key, kind) in [
        ("a", Corpus::Code),
        ("b", Corpus::Finding),
        ("c", Corpus::Thread),
    ] {
        corpus
            .upsert_document(&document(REPO, kind, key, "mine", at(0, 0)))
            .await
            .unwrap();
    }
    corpus
        .upsert_document(&document(other, Corpus::Code, "a", "theirs", at(0, 0)))
        .await
        .unwrap();
    assert_eq!(corpus.purge_documents(REPO).await.unwrap(), 3);
    for kind in [Corpus::Code, Corpus::Finding, Corpus::Thread] {
        assert!(corpus.documents(REPO, kind, 10).await.unwrap().is_empty());
    }
    assert_eq!(
        corpus
            .documents(other, Corpus::Code, 10)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(corpus.purge_documents(REPO).await.unwrap(), 0);
}

/// Moving a repository's documents to its id keeps them whole (text, vectors, newest
/// order), names the new key in each, and leaves other repositories alone.
async fn check_rekey_moves_a_repositorys_documents(corpus: Arc<dyn CorpusStore>) {
    let other = "octo-org/corpus-2";
    for (key, kind, minute) in [
        ("a", Corpus::Code, 0),
        ("b", Corpus::Code, 1),
        ("c", Corpus::Thread, 0),
    ] {
        corpus
            .upsert_document(&document(REPO, kind, key, "mine", at(0, minute)))
            .await
            .unwrap();
    }
    corpus
        .upsert_document(&document(other, Corpus::Code, "a", "theirs", at(0, 0)))
        .await
        .unwrap();
    assert_eq!(corpus.rekey_documents(REPO, "repo:9").await.unwrap(), 3);
    assert!(
        corpus
            .documents(REPO, Corpus::Code, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let code = corpus.documents("repo:9", Corpus::Code, 10).await.unwrap();
    assert_eq!(
        code.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(),
        ["b", "a"],
        "newest first, as before"
    );
    assert!(code.iter().all(|d| d.repo == "repo:9" && d.text == "mine"));
    assert!(
        corpus
            .document("repo:9", Corpus::Thread, "c")
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        corpus
            .documents(other, Corpus::Code, 10)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(corpus.rekey_documents(REPO, "repo:9").await.unwrap(), 0);
}
