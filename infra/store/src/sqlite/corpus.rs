//! The corpus store on SQLite: `store_documents` in the same file as the rest.
//!
//! An upsert reads the stored document, merges with [`corpus_rules::merge`] and writes the
//! result inside one immediate transaction, so two connections upserting the same
//! document (a second `parley serve`, an operator command) cannot lose an occurrence.

use super::{SqliteStore, decode, encode, immediate, unavailable};
use crate::corpus_rules;
use async_trait::async_trait;
use parley_core::ports::{Corpus, CorpusStore, Document, QuantizedVector, StoreError};
use parley_core::retrieval::TermCounts;
use rusqlite::{Connection, OptionalExtension, Row, params};

/// The stored columns of one document, before decoding.
struct StoredRow {
    key: String,
    record: String,
    vector_model: Option<String>,
    vector_scale: Option<f64>,
    vector: Option<Vec<u8>>,
    terms: Option<Vec<u8>>,
}

const COLUMNS: &str = "key, record, vector_model, vector_scale, vector, terms";

#[async_trait]
impl CorpusStore for SqliteStore {
    async fn upsert_document(&self, doc: &Document) -> Result<bool, StoreError> {
        let incoming = doc.clone();
        self.run("upsert_document", move |conn| {
            let tx = immediate(conn).map_err(|e| unavailable("upsert_document", &e))?;
            let stored = select_one(&tx, &incoming.repo, incoming.corpus, &incoming.key)?;
            let is_new = stored.is_none();
            let merged = match stored {
                Some(stored) => corpus_rules::merge(stored, &incoming),
                None => incoming,
            };
            let merged = corpus_rules::prepared(merged)?;
            write(&tx, &merged)?;
            tx.commit()
                .map_err(|e| unavailable("upsert_document", &e))?;
            Ok(is_new)
        })
        .await
    }

    async fn set_vector(
        &self,
        repo: &str,
        corpus: Corpus,
        key: &str,
        vector: &QuantizedVector,
    ) -> Result<(), StoreError> {
        let (repo, key, vector) = (repo.to_owned(), key.to_owned(), vector.clone());
        self.run("set_vector", move |conn| {
            let changed = conn
                .execute(
                    "UPDATE store_documents SET vector_model = ?4, vector_scale = ?5, vector = ?6
                     WHERE repo = ?1 AND corpus = ?2 AND key = ?3",
                    params![
                        repo,
                        corpus.as_str(),
                        key,
                        vector.model,
                        f64::from(vector.scale),
                        corpus_rules::vector_bytes(&vector.values),
                    ],
                )
                .map_err(|e| unavailable("set_vector", &e))?;
            if changed == 0 {
                corpus_rules::no_document_for_vector(&repo, corpus, &key);
            }
            Ok(())
        })
        .await
    }

    async fn document(
        &self,
        repo: &str,
        corpus: Corpus,
        key: &str,
    ) -> Result<Option<Document>, StoreError> {
        let (repo, key) = (repo.to_owned(), key.to_owned());
        self.run("document", move |conn| {
            select_one(conn, &repo, corpus, &key)
        })
        .await
    }

    async fn documents(
        &self,
        repo: &str,
        corpus: Corpus,
        limit: usize,
    ) -> Result<Vec<Document>, StoreError> {
        let repo = repo.to_owned();
        // A limit beyond i64 cannot be reached by a table anyway.
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.run("documents", move |conn| {
            let mut statement = conn
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM store_documents WHERE repo = ?1 AND corpus = ?2
                     ORDER BY updated_ns DESC, key DESC LIMIT ?3"
                ))
                .map_err(|e| unavailable("documents", &e))?;
            let rows = statement
                .query_map(params![repo, corpus.as_str(), limit], stored_row)
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .map_err(|e| unavailable("documents", &e))?;
            rows.into_iter()
                .map(|row| decode_row(row, &repo, corpus))
                .collect()
        })
        .await
    }

    async fn purge_documents(&self, repo: &str) -> Result<u64, StoreError> {
        let repo = repo.to_owned();
        self.run("purge_documents", move |conn| {
            let deleted = conn
                .execute("DELETE FROM store_documents WHERE repo = ?1", params![repo])
                .map_err(|e| unavailable("purge_documents", &e))?;
            Ok(deleted as u64)
        })
        .await
    }

    async fn rekey_documents(&self, from: &str, to: &str) -> Result<u64, StoreError> {
        let (from, to) = (from.to_owned(), to.to_owned());
        self.run("rekey_documents", move |conn| {
            let failed = |e: rusqlite::Error| unavailable("rekey_documents", &e);
            let tx = conn.unchecked_transaction().map_err(failed)?;
            let moved = tx
                .execute(
                    "UPDATE OR IGNORE store_documents SET repo = ?2, \
                     record = json_set(record, '$.repo', ?2) WHERE repo = ?1",
                    params![from, to],
                )
                .map_err(failed)?;
            tx.execute("DELETE FROM store_documents WHERE repo = ?1", params![from])
                .map_err(failed)?;
            tx.commit().map_err(failed)?;
            Ok(moved as u64)
        })
        .await
    }
}

fn select_one(
    conn: &Connection,
    repo: &str,
    corpus: Corpus,
    key: &str,
) -> Result<Option<Document>, StoreError> {
    let row = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM store_documents WHERE repo = ?1 AND corpus = ?2 AND key = ?3"
        ))
        .and_then(|mut statement| {
            statement
                .query_row(params![repo, corpus.as_str(), key], stored_row)
                .optional()
        })
        .map_err(|e| unavailable("document", &e))?;
    row.map(|row| decode_row(row, repo, corpus)).transpose()
}

/// Insert or replace the whole row: the caller has merged already, under the
/// transaction that makes read and write one step.
fn write(conn: &Connection, doc: &Document) -> Result<(), StoreError> {
    let record = encode(
        &Document {
            vector: None,
            ..doc.clone()
        },
        "document",
    )?;
    let (model, scale, bytes) = match &doc.vector {
        Some(v) => (
            Some(v.model.clone()),
            Some(f64::from(v.scale)),
            Some(corpus_rules::vector_bytes(&v.values)),
        ),
        None => (None, None, None),
    };
    conn.execute(
        "INSERT OR REPLACE INTO store_documents
         (repo, corpus, key, updated_ns, record, vector_model, vector_scale, vector, terms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            doc.repo,
            doc.corpus.as_str(),
            doc.key,
            corpus_rules::updated_nanos(doc),
            record,
            model,
            scale,
            bytes,
            doc.terms.as_ref().map(TermCounts::to_bytes),
        ],
    )
    .map_err(|e| unavailable("upsert_document", &e))?;
    Ok(())
}

fn stored_row(row: &Row<'_>) -> rusqlite::Result<StoredRow> {
    Ok(StoredRow {
        key: row.get(0)?,
        record: row.get(1)?,
        vector_model: row.get(2)?,
        vector_scale: row.get(3)?,
        vector: row.get(4)?,
        terms: row.get(5)?,
    })
}

fn decode_row(row: StoredRow, repo: &str, corpus: Corpus) -> Result<Document, StoreError> {
    let location = format!("store_documents/{repo}/{}/{}", corpus.as_str(), row.key);
    let mut doc: Document = decode(&row.record, location.clone())?;
    doc.terms = row
        .terms
        .and_then(|bytes| corpus_rules::term_counts(&bytes, &location));
    doc.vector = match (row.vector_model, row.vector_scale, row.vector) {
        (None, None, None) => None,
        (Some(model), Some(scale), Some(bytes)) => Some(QuantizedVector {
            model,
            scale: scale as f32,
            values: corpus_rules::vector_values(&bytes),
        }),
        _ => {
            return Err(StoreError::Corrupt {
                key: location,
                reason: "vector model, scale and values are not all set".into(),
            });
        }
    };
    Ok(doc)
}
