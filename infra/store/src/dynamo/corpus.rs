//! The corpus store on DynamoDB: the Snippets table.
//!
//! Item: `pk` = repo, `sk` = `<corpus>#<key>`, the document's fields as attributes, the
//! int8 vector as one binary attribute (`vector`, one byte per dimension: 1 KB for 1024
//! dimensions, against ~10 KB as a list of numbers) with `vector_model` and
//! `vector_scale`, the text's term counts for lexical search as another (`terms`), a
//! `version` for optimistic concurrency, and the `newest` attribute the [`NEWEST_INDEX`]
//! LSI sorts by.
//!
//! Newest first in one query: the LSI shares the table's partition key, so `documents`
//! is a single descending Query on the index with `begins_with(newest, "<corpus>#")`,
//! paginated until `limit`. An LSI (not a GSI) because it reads strongly consistently
//! and costs no second partition scheme. Its limit: one repository's documents (its
//! "item collection") may total 10 GB, about two million documents of 5 KB.

use super::items::{Item, conditional, decode, encode, n, number, s, unavailable};
use super::tables::{NEWEST_ATTRIBUTE, NEWEST_INDEX};
use super::{DynamoStore, item_location};
use crate::corpus_rules;
use async_trait::async_trait;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use parley_core::ports::{Corpus, CorpusStore, Document, QuantizedVector, StoreError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const VERSION: &str = "version";
const VECTOR: &str = "vector";
const VECTOR_MODEL: &str = "vector_model";
const VECTOR_SCALE: &str = "vector_scale";
/// The document's term counts for lexical search, one binary attribute.
const TERMS: &str = "terms";
/// Attempts of the read-merge-write loop before an upsert gives up as contended. A lost
/// attempt means another writer's attempt won, so with this many attempts up to ten
/// writers of one document at once all get through; more than two is already rare (the
/// same hunk in several PRs reviewed in the same second).
const UPSERT_ATTEMPTS: u32 = 10;
/// Pause after a lost attempt, times the attempt number, plus up to as much again.
const UPSERT_BACKOFF: Duration = Duration::from_millis(10);
/// Items asked for per page of `documents`: DynamoDB returns at most 1 MB a page anyway.
const PAGE: usize = 500;

#[async_trait]
impl CorpusStore for DynamoStore {
    async fn upsert_document(&self, doc: &Document) -> Result<bool, StoreError> {
        let sk = sort_key(doc.corpus, &doc.key);
        for attempt in 1..=UPSERT_ATTEMPTS {
            let stored = self
                .get(
                    &self.tables.snippets,
                    &[("pk", &doc.repo), ("sk", &sk)],
                    "upsert_document",
                )
                .await?;
            let (merged, version) = match stored {
                Some(item) => {
                    let location = format!("{}/{}/{sk}", self.tables.snippets, doc.repo);
                    let version: u64 = number(&item, VERSION, &location)?.unwrap_or(0);
                    (
                        corpus_rules::merge(decode_document(item, &location)?, doc),
                        Some(version),
                    )
                }
                None => (doc.clone(), None),
            };
            let merged = corpus_rules::prepared(merged)?;
            let mut item = encode_document(&merged, &sk)?;
            item.insert(VERSION.into(), n(version.map_or(1, |v| v + 1)));
            let request = self
                .client
                .put_item()
                .table_name(&self.tables.snippets)
                .set_item(Some(item));
            let request = match version {
                None => request.condition_expression("attribute_not_exists(pk)"),
                Some(version) => request
                    .condition_expression("#ver = :expected")
                    .expression_attribute_names("#ver", VERSION)
                    .expression_attribute_values(":expected", n(version)),
            };
            if conditional(request.send().await, "upsert_document")?.is_some() {
                return Ok(version.is_none());
            }
            tracing::debug!(repo = %doc.repo, key = %doc.key, attempt, "document changed under an upsert; merging again");
            tokio::time::sleep(backoff(attempt)).await;
        }
        Err(StoreError::Unavailable(format!(
            "dynamodb upsert_document: {} of {} kept changing over {UPSERT_ATTEMPTS} attempts",
            doc.key, doc.repo
        )))
    }

    async fn set_vector(
        &self,
        repo: &str,
        corpus: Corpus,
        key: &str,
        vector: &QuantizedVector,
    ) -> Result<(), StoreError> {
        let sk = sort_key(corpus, key);
        // The version moves too, so an upsert that read the document before this write
        // merges again and keeps the vector.
        let result = self
            .client
            .update_item()
            .table_name(&self.tables.snippets)
            .key("pk", s(repo))
            .key("sk", s(&sk))
            .update_expression("SET #vec = :vec, #model = :model, #scale = :scale ADD #ver :one")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_names("#vec", VECTOR)
            .expression_attribute_names("#model", VECTOR_MODEL)
            .expression_attribute_names("#scale", VECTOR_SCALE)
            .expression_attribute_names("#ver", VERSION)
            .expression_attribute_values(
                ":vec",
                AttributeValue::B(Blob::new(corpus_rules::vector_bytes(&vector.values))),
            )
            .expression_attribute_values(":model", s(&vector.model))
            .expression_attribute_values(":scale", n(vector.scale))
            .expression_attribute_values(":one", n(1))
            .send()
            .await;
        if conditional(result, "set_vector")?.is_none() {
            corpus_rules::no_document_for_vector(repo, corpus, key);
        }
        Ok(())
    }

    async fn document(
        &self,
        repo: &str,
        corpus: Corpus,
        key: &str,
    ) -> Result<Option<Document>, StoreError> {
        let sk = sort_key(corpus, key);
        let item = self
            .get(
                &self.tables.snippets,
                &[("pk", repo), ("sk", &sk)],
                "document",
            )
            .await?;
        let location = format!("{}/{repo}/{sk}", self.tables.snippets);
        item.map(|item| decode_document(item, &location))
            .transpose()
    }

    async fn documents(
        &self,
        repo: &str,
        corpus: Corpus,
        limit: usize,
    ) -> Result<Vec<Document>, StoreError> {
        let mut documents = Vec::new();
        let mut start: Option<Item> = None;
        while documents.len() < limit {
            let page = (limit - documents.len()).min(PAGE);
            let output = self
                .client
                .query()
                .table_name(&self.tables.snippets)
                .index_name(NEWEST_INDEX)
                .consistent_read(true)
                .scan_index_forward(false)
                .key_condition_expression("pk = :pk AND begins_with(#newest, :corpus)")
                .expression_attribute_names("#newest", NEWEST_ATTRIBUTE)
                .expression_attribute_values(":pk", s(repo))
                .expression_attribute_values(":corpus", s(&format!("{}#", corpus.as_str())))
                .limit(i32::try_from(page).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| unavailable("documents", &e))?;
            for item in output.items.unwrap_or_default() {
                let location = item_location(&self.tables.snippets, repo, &item);
                documents.push(decode_document(item, &location)?);
            }
            match output.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => break,
            }
        }
        documents.truncate(limit);
        Ok(documents)
    }

    async fn purge_documents(&self, repo: &str) -> Result<u64, StoreError> {
        let found = self
            .query_partition(&self.tables.snippets, repo, "", "purge_documents")
            .await?;
        self.delete_keys(&self.tables.snippets, found, "purge_documents")
            .await
    }

    async fn rekey_documents(&self, from: &str, to: &str) -> Result<u64, StoreError> {
        self.rekey_snippets(from, to).await
    }
}

/// `attempt` × [`UPSERT_BACKOFF`] plus a jitter from the clock's nanoseconds, so writers
/// that collided do not collide again in lock-step (no RNG needed for that).
fn backoff(attempt: u32) -> Duration {
    let base = UPSERT_BACKOFF.saturating_mul(attempt);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let jitter_ms = u64::from(nanos) % (u64::try_from(base.as_millis()).unwrap_or(1).max(1));
    base + Duration::from_millis(jitter_ms)
}

fn sort_key(corpus: Corpus, key: &str) -> String {
    format!("{}#{key}", corpus.as_str())
}

/// `<corpus>#<20-digit nanoseconds>#<key>`: fixed width, so string order is time order.
fn newest_key(doc: &Document) -> String {
    format!(
        "{}#{:020}#{}",
        doc.corpus.as_str(),
        corpus_rules::updated_nanos(doc),
        doc.key
    )
}

fn encode_document(doc: &Document, sk: &str) -> Result<Item, StoreError> {
    let newest = newest_key(doc);
    let without_vector = Document {
        vector: None,
        ..doc.clone()
    };
    let mut item = encode(
        &without_vector,
        &[("pk", &doc.repo), ("sk", sk), (NEWEST_ATTRIBUTE, &newest)],
        "document",
    )?;
    if let Some(vector) = &doc.vector {
        item.insert(
            VECTOR.into(),
            AttributeValue::B(Blob::new(corpus_rules::vector_bytes(&vector.values))),
        );
        item.insert(VECTOR_MODEL.into(), s(&vector.model));
        item.insert(VECTOR_SCALE.into(), n(vector.scale));
    }
    if let Some(terms) = &doc.terms {
        item.insert(TERMS.into(), AttributeValue::B(Blob::new(terms.to_bytes())));
    }
    Ok(item)
}

fn decode_document(mut item: Item, location: &str) -> Result<Document, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt {
        key: location.to_owned(),
        reason,
    };
    let scale: Option<f32> = number(&item, VECTOR_SCALE, location)?;
    let bytes = item.remove(VECTOR);
    let model = item.remove(VECTOR_MODEL);
    item.remove(VECTOR_SCALE);
    let terms = match item.remove(TERMS) {
        None => None,
        Some(AttributeValue::B(bytes)) => corpus_rules::term_counts(bytes.as_ref(), location),
        Some(_) => corpus_rules::term_counts(&[], location),
    };
    let vector = match (bytes, model, scale) {
        (None, None, None) => None,
        (Some(AttributeValue::B(bytes)), Some(AttributeValue::S(model)), Some(scale)) => {
            Some(QuantizedVector {
                model,
                scale,
                values: corpus_rules::vector_values(bytes.as_ref()),
            })
        }
        (bytes, model, scale) => {
            return Err(corrupt(format!(
                "vector attributes are incomplete or mistyped (vector {}, model {}, scale {})",
                bytes.is_some(),
                model.is_some(),
                scale.is_some()
            )));
        }
    };
    let mut doc: Document = decode(item, location)?;
    doc.vector = vector;
    doc.terms = terms;
    Ok(doc)
}
