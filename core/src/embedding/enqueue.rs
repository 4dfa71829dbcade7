//! Asking for documents to be embedded: the one call the review publish step makes.

use crate::config::RetrievalConfig;
use crate::job::{EmbedJob, Job};
use crate::ports::Corpus;
use crate::services::Services;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// Keys per job: a job's message stays a few kilobytes (an SQS message may hold 256 KB)
/// and one job's work (a few embedding calls) fits well inside a worker's timeout.
pub const MAX_KEYS_PER_JOB: usize = 200;

/// Enqueue the embedding of `keys` (documents already in the corpus store) for `repo`,
/// unless retrieval or an embeddings provider is off. Returns how many jobs were sent.
///
/// Fail open: a queue error is logged and the documents simply stay without vectors
/// (lexical search still finds them; a later enqueue of the same keys embeds them), so
/// the caller never fails a review because of it. The repository's settings are read by
/// the caller, which holds them already; the job trusts the decision made here.
pub async fn enqueue_for(
    services: &Services,
    retrieval: &RetrievalConfig,
    repo: &str,
    keys: BTreeMap<Corpus, Vec<String>>,
) -> usize {
    if services.embedder.is_none() {
        tracing::debug!(repo, "no embeddings provider: nothing to embed");
        return 0;
    }
    let jobs = jobs_for(retrieval, repo, keys);
    let mut sent = 0;
    for job in jobs {
        let count = job.document_count();
        let message = match Job::Embed(job.clone()).message(job.delivery_id.clone()) {
            Ok(message) => message,
            Err(err) => {
                tracing::warn!(repo, error = %err, "could not encode an embedding job; skipped");
                continue;
            }
        };
        match services.queue.send(message).await {
            Ok(()) => {
                sent += 1;
                tracing::info!(repo, documents = count, delivery_id = %job.delivery_id, "embedding job enqueued");
            }
            Err(err) => {
                tracing::warn!(repo, documents = count, error = %err, "could not enqueue an embedding job; those documents stay lexical-only for now");
            }
        }
    }
    sent
}

/// The jobs `keys` make under `retrieval`: none when retrieval is off, no code documents
/// when hunk embedding is off, keys deduplicated and sorted (so the same work always gets
/// the same delivery id), at most [`MAX_KEYS_PER_JOB`] keys each.
pub(crate) fn jobs_for(
    retrieval: &RetrievalConfig,
    repo: &str,
    keys: BTreeMap<Corpus, Vec<String>>,
) -> Vec<EmbedJob> {
    if !retrieval.enabled {
        return Vec::new();
    }
    let wanted: Vec<(Corpus, String)> = keys
        .into_iter()
        .filter(|(corpus, _)| retrieval.hunk_embedding || *corpus != Corpus::Code)
        .flat_map(|(corpus, keys)| {
            keys.into_iter()
                .map(|k| k.trim().to_string())
                .filter(|k| !k.is_empty())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .map(move |k| (corpus, k))
        })
        .collect();
    wanted
        .chunks(MAX_KEYS_PER_JOB)
        .map(|chunk| {
            let mut keys: BTreeMap<Corpus, Vec<String>> = BTreeMap::new();
            for (corpus, key) in chunk {
                keys.entry(*corpus).or_default().push(key.clone());
            }
            EmbedJob {
                delivery_id: delivery_id(repo, &keys),
                repo: repo.to_string(),
                keys,
            }
        })
        .collect()
}

/// `embed-` and 32 hex digits of SHA-256 over the repository and the keys.
fn delivery_id(repo: &str, keys: &BTreeMap<Corpus, Vec<String>>) -> String {
    let mut hash = Sha256::new();
    hash.update(repo.as_bytes());
    for (corpus, keys) in keys {
        for key in keys {
            hash.update(b"\n");
            hash.update(corpus.as_str().as_bytes());
            hash.update(b":");
            hash.update(key.as_bytes());
        }
    }
    let digest = hex::encode(hash.finalize());
    format!("embed-{}", &digest[..32])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::QueueName;

    fn keys(code: &[&str], findings: &[&str]) -> BTreeMap<Corpus, Vec<String>> {
        let mut map = BTreeMap::new();
        map.insert(Corpus::Code, code.iter().map(|k| k.to_string()).collect());
        map.insert(
            Corpus::Finding,
            findings.iter().map(|k| k.to_string()).collect(),
        );
        map
    }

    #[test]
    fn retrieval_off_enqueues_nothing() {
        let off = RetrievalConfig {
            enabled: false,
            ..RetrievalConfig::default()
        };
        assert!(jobs_for(&off, "o/r", keys(&["a"], &["f_1"])).is_empty());
    }

    #[test]
    fn hunk_embedding_off_keeps_findings_only() {
        let no_hunks = RetrievalConfig {
            hunk_embedding: false,
            ..RetrievalConfig::default()
        };
        let jobs = jobs_for(&no_hunks, "o/r", keys(&["a", "b"], &["f_1"]));
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].keys.len(), 1);
        assert_eq!(jobs[0].keys[&Corpus::Finding], vec!["f_1"]);
        assert!(jobs_for(&no_hunks, "o/r", keys(&["a"], &[])).is_empty());
    }

    #[test]
    fn same_work_same_id_whatever_the_order_or_duplicates() {
        let config = RetrievalConfig::default();
        let a = jobs_for(&config, "o/r", keys(&["b", "a", "a", " "], &["f_1"]));
        let b = jobs_for(&config, "o/r", keys(&["a", "b"], &["f_1"]));
        assert_eq!(a, b);
        assert_eq!(a[0].keys[&Corpus::Code], vec!["a", "b"]);
        assert!(a[0].delivery_id.starts_with("embed-"));
        assert_eq!(a[0].delivery_id.len(), "embed-".len() + 32);
        let other_repo = jobs_for(&config, "o/other", keys(&["a", "b"], &["f_1"]));
        assert_ne!(a[0].delivery_id, other_repo[0].delivery_id);
    }

    #[test]
    fn many_keys_are_split_into_bounded_jobs() {
        let code: Vec<String> = (0..450).map(|i| format!("{i:064}")).collect();
        let code: Vec<&str> = code.iter().map(String::as_str).collect();
        let jobs = jobs_for(&RetrievalConfig::default(), "o/r", keys(&code, &["f_1"]));
        let sizes: Vec<usize> = jobs.iter().map(EmbedJob::document_count).collect();
        assert_eq!(sizes, vec![200, 200, 51]);
        let ids: BTreeSet<&str> = jobs.iter().map(|j| j.delivery_id.as_str()).collect();
        assert_eq!(ids.len(), 3);
        // The message stays small: well under SQS's 256 KB.
        let body = serde_json::to_string(&Job::Embed(jobs[0].clone())).unwrap();
        assert!(body.len() < 20_000, "{}", body.len());
        let back: Job = serde_json::from_str(&body).unwrap();
        assert_eq!(back, Job::Embed(jobs[0].clone()));
        assert_eq!(back.queue(), QueueName::Embedding);
        assert_eq!(back.group_id(), "o/r");
    }
}
