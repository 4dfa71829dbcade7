//! The retrieval paths end to end inside core: documents built by the chunker and the
//! document helpers, ranked, fused and rendered; and the fail-open paths of [`retrieve`].

use super::chunk::{ChunkOptions, chunk_changed_files};
use super::documents::{PrRef, code_documents, finding_document};
use super::*;
use crate::learning::record::{Hints, Learning, LearningKind, Scope};
use crate::ports::github::{ChangedFile, FileStatus};
use crate::ports::{
    EmbeddingError, Embeddings, Finding, FindingOutcome, FindingState, QuantizedVector, Severity,
    Verdict,
};
use crate::repo::Guideline;
use async_trait::async_trait;
use time::macros::datetime;

const NOW: OffsetDateTime = datetime!(2026-05-01 12:00 UTC);
const REPO: &str = "o/r";

fn changed(path: &str, patch: &str) -> ChangedFile {
    ChangedFile::listed(path, FileStatus::Modified, Some(patch))
}

/// PR 1 changed `parse_config`; PR 3 changed the HTTP client; PR 2 (the one under
/// review) also has a stored hunk from an earlier push.
fn stored_code() -> Vec<Document> {
    let pr1 = chunk_changed_files(
        &[changed(
            "src/config.rs",
            "@@ -10,2 +10,5 @@ fn parse_config(text: &str) -> Result<Config, ConfigError> {\n let raw = text.trim();\n+    let value: serde_yaml::Value = serde_yaml::from_str(raw)?;\n+    let retries = value[\"retries\"].as_u64().unwrap_or(3);\n+    validate_retries(retries)?;\n }\n",
        )],
        &ChunkOptions::default(),
    );
    let pr3 = chunk_changed_files(
        &[changed(
            "web/client.ts",
            "@@ -1,1 +1,4 @@ export async function fetchUser(id: string) {\n const url = base;\n+  const response = await fetch(`${url}/users/${id}`);\n+  if (!response.ok) throw new HttpError(response.status);\n+  return response.json();\n",
        )],
        &ChunkOptions::default(),
    );
    let pr2 = chunk_changed_files(
        &[changed(
            "src/config.rs",
            "@@ -10,1 +10,4 @@ fn parse_config(text: &str) -> Result<Config, ConfigError> {\n let raw = text.trim();\n+    let retries = read_retries(raw)?;\n+    let timeout = read_timeout(raw)?;\n+    validate_retries(retries)?;\n",
        )],
        &ChunkOptions::default(),
    );
    let at = |days: i64| NOW - time::Duration::days(days);
    let pr = |number, title| PrRef {
        repo: REPO,
        number,
        title,
    };
    let mut docs = code_documents(pr(1, "Read retries from the config"), &pr1.chunks, at(30));
    docs.extend(code_documents(
        pr(3, "Typed HTTP errors"),
        &pr3.chunks,
        at(5),
    ));
    docs.extend(code_documents(pr(2, "Config timeouts"), &pr2.chunks, at(0)));
    docs
}

fn past_finding() -> Document {
    let finding = Finding {
        repo: REPO.into(),
        id: "f_aaaaaaaaaaaa".into(),
        fingerprint: "fp".into(),
        severity: Severity::Medium,
        category: "correctness".into(),
        confidence: 80,
        line: 12,
        body: "A config with retries: 0 disables retrying silently.".into(),
        comment_id: Some(9),
        state: FindingState::Resolved,
        created_at: datetime!(2026-04-01 0:00 UTC),
        outcome: Some(FindingOutcome {
            verdict: Verdict::Accepted,
            signal: "code_changed".into(),
            by: None,
            at: datetime!(2026-04-02 0:00 UTC),
            also_by: Vec::new(),
            replaces: None,
            counted: true,
        }),
        ..Finding::sample(
            "src/config.rs",
            "Retries of 0 are accepted by validate_retries",
        )
    };
    finding_document(&finding, "Read retries from the config", NOW)
}

/// Retrieval for [`review_query`] in [`REPO`], with the default settings.
async fn for_review(
    store: &dyn CorpusStore,
    embedder: Option<&dyn Embedder>,
    in_memory: Vec<Candidate>,
) -> Retrieved {
    retrieve(
        store,
        embedder,
        REPO,
        &review_query(),
        in_memory,
        &Settings::default(),
    )
    .await
}

fn review_query() -> Query {
    Query {
        trigger: Trigger::Review,
        text: "+    let retries = value[\"retries\"].as_u64().unwrap_or(5);\n+    validate_retries(retries)?;".into(),
        language: Some("rust".into()),
        paths: vec!["src/config.rs".into()],
        functions: vec!["parse_config".into()],
        pr: Some(2),
    }
}

fn candidates(docs: Vec<Document>) -> Vec<Candidate> {
    docs.into_iter().map(Candidate::from).collect()
}

/// PR 2's review query ranked over the stored code and PR 1's finding, lexical only.
fn review_of_pr2() -> Retrieved {
    let mut docs = stored_code();
    docs.push(past_finding());
    rank(
        &candidates(docs),
        &review_query(),
        None,
        &Settings::default(),
        NOW,
        Provenance::default(),
    )
}

#[test]
fn a_review_sees_the_earlier_hunk_of_the_same_function_and_how_its_finding_ended() {
    let retrieved = review_of_pr2();
    let prompt = &retrieved.prompt;
    assert!(
        prompt.contains("### Code from PR #1 — `src/config.rs` lines 10-14, in `fn parse_config(text: &str) -> Result<Config, ConfigError> {`\n<snippet>\nPR #1 title: Read retries from the config\n"),
        "{prompt}"
    );
    assert!(prompt.contains("serde_yaml::from_str(raw)?;"));
    assert!(
        prompt.contains("Past finding — `src/config.rs` line 12, PR #1: medium correctness, accepted (code changed)"),
        "{prompt}"
    );
    // PR 2's own hunk is left out, not cited.
    assert!(!prompt.contains("read_timeout"), "{prompt}");
    let p = &retrieved.provenance;
    assert_eq!(p.sources[&Source::Code].same_pr, 1);
    assert_eq!(p.sources[&Source::Code].candidates, 2);
    // The first two items are PR 1's hunk and finding; the TypeScript hunk, if it matched
    // at all, ranks below them.
    let first: Vec<Option<u64>> = p.included.iter().take(2).map(|c| c.pr).collect();
    assert_eq!(first, [Some(1), Some(1)]);
    assert_eq!(p.vector, VectorUse::NotConfigured);
    assert!(p.summary().contains("code "), "{}", p.summary());
}

#[test]
fn the_judge_gets_the_past_findings_of_the_same_retrieval_alone() {
    let retrieved = review_of_pr2();
    assert!(retrieved.used());
    let findings = retrieved.section(&[Source::Finding]);
    assert!(
        findings.contains("Past finding — `src/config.rs` line 12"),
        "{findings}"
    );
    assert!(!findings.contains("<snippet>"), "{findings}");
    assert!(findings.starts_with("\n## Related context"), "{findings}");
    // The blocks are the prompt's own, in its order.
    let all = retrieved.section(&Source::ALL);
    assert_eq!(all, retrieved.prompt);
    assert_eq!(retrieved.provenance.used_chars, all.chars().count());
    assert_eq!(retrieved.section(&[Source::Thread]), "");

    let nothing = rank(
        &[],
        &review_query(),
        None,
        &Settings::default(),
        NOW,
        Provenance::default(),
    );
    assert!(!nothing.used());
    assert_eq!(nothing.section(&[Source::Finding]), "");
}

#[test]
fn a_question_draws_on_learnings_and_guidelines_passed_in_memory() {
    let learning = Learning {
        id: "L-3f9a".into(),
        repo: REPO.into(),
        scope: Scope::Repo,
        kind: LearningKind::Remember,
        text: "Retries are capped at 5 by validate_retries; 0 means the default.".into(),
        hints: Hints::default(),
        author: "alice".into(),
        source_url: String::new(),
        source_comment_id: 1,
        created_at: datetime!(2025-01-01 0:00 UTC),
        forgotten: None,
        times_applied: 0,
        authority: None,
        findings_suppressed: 0,
    };
    let guideline = Guideline {
        path: "CLAUDE.md".into(),
        text:
            "# Style\nUse rustfmt.\n# Config\nEvery config value is validated where it is parsed."
                .into(),
    };
    let mut in_memory = vec![Candidate::learning(&learning)];
    in_memory.extend(Candidate::guideline_sections(&guideline));
    let query = Query {
        trigger: Trigger::Question,
        text: "Why are retries validated here instead of where the config is parsed?".into(),
        language: None,
        paths: Vec::new(),
        functions: Vec::new(),
        pr: Some(2),
    };
    let retrieved = rank(
        &in_memory,
        &query,
        None,
        &Settings::default(),
        NOW,
        Provenance::default(),
    );
    let keys: Vec<&str> = retrieved
        .provenance
        .included
        .iter()
        .map(|c| c.key.as_str())
        .collect();
    assert_eq!(keys, ["L-3f9a", "CLAUDE.md#2"], "{}", retrieved.prompt);
    assert!(
        retrieved
            .prompt
            .contains("### Learning L-3f9a (repo)\n<learning>\nRetries are capped")
    );
    assert!(
        retrieved
            .prompt
            .contains("### Guideline `CLAUDE.md` section 2\n<guideline>\n# Config")
    );
}

fn unit(values: &[f32]) -> Vec<f32> {
    let n = values.iter().map(|v| v * v).sum::<f32>().sqrt();
    values.iter().map(|v| v / n).collect()
}

#[test]
fn vector_search_finds_what_shares_no_word_with_the_query() {
    let mut docs = stored_code();
    // Give the TypeScript hunk (no word in common with the query) the vector nearest to
    // the query's, and PR 1's hunk a distant one.
    for doc in &mut docs {
        let v = if doc.path.as_deref() == Some("web/client.ts") {
            unit(&[0.9, 0.1, 0.0, 0.1])
        } else {
            unit(&[0.0, 0.2, 1.0, 0.0])
        };
        doc.vector = Some(QuantizedVector::quantize("m", &v));
    }
    // A vector of another model is ignored even if it is identical to the query.
    docs[0].vector = Some(QuantizedVector::quantize(
        "other",
        &unit(&[1.0, 0.0, 0.0, 0.0]),
    ));
    let query_vector = unit(&[1.0, 0.0, 0.0, 0.0]);
    let query = Query {
        text: "zzz-unmatched words only".into(),
        language: None,
        paths: Vec::new(),
        functions: Vec::new(),
        ..review_query()
    };
    let retrieved = rank(
        &candidates(docs),
        &query,
        Some(QueryVector {
            model: "m",
            values: &query_vector,
        }),
        &Settings::default(),
        NOW,
        Provenance::default(),
    );
    let p = &retrieved.provenance;
    assert_eq!(p.sources[&Source::Code].lexical_hits, 0);
    assert_eq!(p.sources[&Source::Code].vector_hits, 1, "{p:?}");
    assert_eq!(p.included.len(), 1);
    assert_eq!(p.included[0].path.as_deref(), Some("web/client.ts"));
}

/// A store that answers `documents` from a list, or fails every call.
struct ListStore {
    documents: Vec<Document>,
    fail: bool,
}

#[async_trait]
impl CorpusStore for ListStore {
    async fn upsert_document(&self, _: &Document) -> Result<bool, StoreError> {
        Err(StoreError::Config("read-only test store".into()))
    }

    async fn set_vector(
        &self,
        _: &str,
        _: Corpus,
        _: &str,
        _: &QuantizedVector,
    ) -> Result<(), StoreError> {
        Err(StoreError::Config("read-only test store".into()))
    }

    async fn document(&self, _: &str, _: Corpus, _: &str) -> Result<Option<Document>, StoreError> {
        Err(StoreError::Config("read-only test store".into()))
    }

    async fn documents(
        &self,
        repo: &str,
        corpus: Corpus,
        limit: usize,
    ) -> Result<Vec<Document>, StoreError> {
        if self.fail {
            return Err(StoreError::Unavailable("throttled".into()));
        }
        Ok(self
            .documents
            .iter()
            .filter(|d| d.repo == repo && d.corpus == corpus)
            .take(limit)
            .cloned()
            .collect())
    }

    async fn rekey_documents(&self, _from: &str, _to: &str) -> Result<u64, StoreError> {
        Err(StoreError::Config("read-only test store".into()))
    }

    async fn purge_documents(&self, _repo: &str) -> Result<u64, StoreError> {
        Err(StoreError::Unavailable(
            "a read-only list in these tests".into(),
        ))
    }
}

/// An embedder with one canned answer.
struct CannedEmbedder {
    answer: fn() -> Result<Embeddings, EmbeddingError>,
}

#[async_trait]
impl Embedder for CannedEmbedder {
    async fn embed(&self, _: &[String]) -> Result<Embeddings, EmbeddingError> {
        (self.answer)()
    }

    fn model(&self) -> &str {
        "m"
    }

    fn dimensions(&self) -> usize {
        4
    }
}

#[tokio::test]
async fn a_store_that_cannot_be_read_costs_context_not_the_job() {
    let store = ListStore {
        documents: stored_code(),
        fail: true,
    };
    let learning_only = vec![Candidate::learning(&Learning {
        id: "L-1".into(),
        repo: REPO.into(),
        scope: Scope::Repo,
        kind: LearningKind::Remember,
        text: "validate_retries is the single place retries are checked".into(),
        hints: Hints::default(),
        author: "a".into(),
        source_url: String::new(),
        source_comment_id: 1,
        created_at: NOW,
        forgotten: None,
        times_applied: 0,
        authority: None,
        findings_suppressed: 0,
    })];
    let retrieved = for_review(&store, None, learning_only).await;
    let p = &retrieved.provenance;
    for source in [Source::Code, Source::Finding, Source::Thread] {
        assert_eq!(
            p.sources[&source].store_error.as_deref(),
            Some("store backend unavailable: throttled")
        );
    }
    let keys: Vec<&str> = p.included.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(keys, ["L-1"], "the in-memory corpora still count");
    let section = retrieved.context_used(&Handles::new("parley", &[]));
    assert!(
        section.contains("code 0 of 0 (could not be read"),
        "{section}"
    );

    let nothing = for_review(&store, None, Vec::new()).await;
    assert_eq!(nothing.prompt, "");
    assert!(nothing.provenance.included.is_empty());
}

#[tokio::test]
async fn an_embedder_that_fails_or_answers_garbage_leaves_lexical_search() {
    let store = ListStore {
        documents: stored_code(),
        fail: false,
    };
    let lexical_only = for_review(&store, None, Vec::new()).await;
    assert!(!lexical_only.provenance.included.is_empty());

    let answers: [fn() -> Result<Embeddings, EmbeddingError>; 4] = [
        || Err(EmbeddingError::Unavailable("503".into())),
        || {
            Ok(Embeddings {
                vectors: vec![vec![1.0, 0.0]],
                input_tokens: 3,
            })
        },
        || {
            Ok(Embeddings {
                vectors: Vec::new(),
                input_tokens: 0,
            })
        },
        || {
            Ok(Embeddings {
                vectors: vec![vec![f32::NAN, 0.0, 0.0, 0.0]],
                input_tokens: 3,
            })
        },
    ];
    for answer in answers {
        let embedder = CannedEmbedder { answer };
        let retrieved = for_review(&store, Some(&embedder), Vec::new()).await;
        assert!(
            matches!(retrieved.provenance.vector, VectorUse::Failed { .. }),
            "{:?}",
            retrieved.provenance.vector
        );
        assert_eq!(retrieved.prompt, lexical_only.prompt);
        let keys = |r: &Retrieved| -> Vec<String> {
            r.provenance
                .included
                .iter()
                .map(|c| c.key.clone())
                .collect()
        };
        assert_eq!(keys(&retrieved), keys(&lexical_only));
    }

    let embedder = CannedEmbedder {
        answer: || {
            Ok(Embeddings {
                vectors: vec![vec![1.0, 0.0, 0.0, 0.0]],
                input_tokens: 7,
            })
        },
    };
    let used = for_review(&store, Some(&embedder), Vec::new()).await;
    assert_eq!(
        used.provenance.vector,
        VectorUse::Used { model: "m".into() }
    );
    assert_eq!(used.provenance.embedding_tokens, 7);
}
