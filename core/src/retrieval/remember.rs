//! Writing the corpora down as work passes: a published review's hunks and findings, a
//! finding's outcome when it changes, a review thread once Parley has answered in it.
//!
//! Retrieval is an extra, so every function here fails open: a store or queue error is
//! logged at `warn` and the caller's job goes on exactly as it would have without it.
//! Every write is an upsert by key (content hash, finding id, root comment id), so a
//! retried job or a review of the next push writes the same documents again harmlessly.
//! With `retrieval.enabled: false` nothing is written (and nothing embedded).
//!
//! **Fork PRs wait for their merge.** What the corpora hold is shown to every later review
//! as the repository's history. A PR from a fork is written by someone who may not write
//! to the repository; until a maintainer merges it, its hunks, title and threads are a
//! stranger's words, and storing them would let anyone seed what later reviews are told.
//! So a fork PR's review and threads are not remembered ([`admissible`]); when it is
//! merged, the bookkeeping of `pull_request.closed` remembers it then ([`merged`]).

use super::chunk::{ChunkOptions, chunk_changed_files};
use super::documents::{
    Exchange, PrRef, code_documents, exchange_document, finding_document, thread_document,
};
use crate::concurrently::join_all;
use crate::config::RepoConfig;
use crate::config::RetrievalConfig;
use crate::embedding;
use crate::ports::github::{ChangedFile, PullRequest, ReviewComment};
use crate::ports::{Corpus, CorpusStore, Document, Finding};
use crate::services::Services;
use std::collections::BTreeMap;
use time::OffsetDateTime;

/// Upserts in flight at once: a review's hundred hunks cost a few round trips of wall
/// time rather than a hundred, without a burst a small table's capacity would throttle.
const CONCURRENT_WRITES: usize = 8;

/// Whether `pr`'s code and words may enter the repository's corpora now: a PR from a fork
/// (or whose head repository is gone) only once merged.
pub fn admissible(pr: &PullRequest) -> bool {
    pr.merged || !from_fork(pr)
}

/// Whether the PR's head lives in another repository than its base. A deleted head
/// repository counts as a fork: nothing says it was the base.
pub fn from_fork(pr: &PullRequest) -> bool {
    match (&pr.head.repo, &pr.base.repo) {
        (Some(head), Some(base)) => {
            let same_id = head.id != 0 && head.id == base.id;
            !(same_id || head.full_name.eq_ignore_ascii_case(&base.full_name))
        }
        (None, _) => true,
        (Some(_), None) => false,
    }
}

/// A fork PR was merged: its hunks and findings become the repository's history now, as
/// a branch PR's did when it was reviewed. One listing of the PR's files; fails open.
pub async fn merged(
    services: &Services,
    scope: &crate::ports::github::RepoScope,
    repo: &str,
    pr: &PullRequest,
) -> Remembered {
    let config = services.config.for_pull(scope, pr).await;
    if config.unread.is_some() {
        // The team may have turned retrieval off: without its settings, nothing is kept.
        tracing::warn!(
            repo,
            number = pr.number,
            "the repository's settings could not be read; the merged PR is not remembered"
        );
        return Remembered::default();
    }
    if !config.config.retrieval.enabled || !from_fork(pr) {
        return Remembered::default();
    }
    let files = match crate::review::pull_files::PullFiles::fetch(
        services.github.as_ref(),
        scope,
        pr.number,
    )
    .await
    {
        Ok(listing) => listing.files,
        Err(err) => {
            tracing::warn!(repo, pr = pr.number, error = %err, "could not list the merged fork PR's files; it is not remembered for retrieval");
            return Remembered::default();
        }
    };
    let findings = match services.store.findings_for_pr(repo, pr.number).await {
        Ok(findings) => findings,
        Err(err) => {
            tracing::warn!(repo, pr = pr.number, error = %err, "could not read the merged fork PR's findings; remembering its code only");
            Vec::new()
        }
    };
    let pr_ref = PrRef {
        repo,
        number: pr.number,
        title: &pr.title,
    };
    review(services, &config.config, pr_ref, &files, &findings).await
}

/// What [`review`] wrote, for the log and the tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Remembered {
    pub code: usize,
    pub findings: usize,
    /// Documents the store refused (logged).
    pub failed: usize,
    /// Embedding jobs enqueued.
    pub jobs: usize,
}

/// After a review is published: the PR's hunks (`files`: every file the PR changes, as
/// GitHub lists them, chunked with the repository's `review.skipPaths`) and the review's
/// findings, then one embedding request for all of them.
///
/// Every key stored is sent for embedding, not only new ones: the embedding job skips a
/// document that already has a vector of the configured model (one read), so a hunk
/// stored while no provider was configured, or whose job failed for good, gains its
/// vector with the next review of any PR that still contains it.
pub async fn review(
    services: &Services,
    config: &RepoConfig,
    pr: PrRef<'_>,
    files: &[ChangedFile],
    findings: &[Finding],
) -> Remembered {
    if !config.retrieval.enabled {
        return Remembered::default();
    }
    let now = OffsetDateTime::now_utc();
    let options = ChunkOptions {
        skip_paths: config.review.skip_paths.clone(),
        ..ChunkOptions::default()
    };
    let chunked = chunk_changed_files(files, &options);
    let mut documents = code_documents(pr, &chunked.chunks, now);
    documents.extend(findings.iter().map(|f| finding_document(f, pr.title, now)));
    let (keys, failed) = store_all(services.corpus.as_ref(), &documents).await;
    let count = |corpus| keys.get(&corpus).map_or(0, Vec::len);
    let (code, finding_count) = (count(Corpus::Code), count(Corpus::Finding));
    let jobs = embedding::enqueue_for(services, &config.retrieval, pr.repo, keys).await;
    tracing::info!(
        repo = pr.repo,
        pr = pr.number,
        code,
        findings = finding_count,
        failed,
        skipped_hunks = chunked.skipped.len(),
        jobs,
        "review remembered for retrieval"
    );
    Remembered {
        code,
        findings: finding_count,
        failed,
        jobs,
    }
}

/// A finding's outcome or state changed: its document, if it has one, is written again so
/// a later review or the judge sees how it ended. A finding never stored as a document
/// (published while retrieval was off) is left alone; that read is the whole cost then.
/// The text is unchanged, so the document keeps its vector.
pub async fn outcome(corpus: &dyn CorpusStore, finding: &Finding) {
    let stored = match corpus
        .document(&finding.repo, Corpus::Finding, &finding.id)
        .await
    {
        Ok(Some(stored)) => stored,
        Ok(None) => return,
        Err(err) => {
            tracing::warn!(repo = %finding.repo, finding = %finding.id, error = %err, "could not read the finding's retrieval document; its outcome is not shown to later reviews");
            return;
        }
    };
    let title = stored
        .occurrences
        .first()
        .map(|o| o.pr_title.clone())
        .unwrap_or_default();
    let document = finding_document(finding, &title, OffsetDateTime::now_utc());
    if let Err(err) = corpus.upsert_document(&document).await {
        tracing::warn!(repo = %finding.repo, finding = %finding.id, error = %err, "could not update the finding's retrieval document");
    }
}

/// A review-comment thread after Parley answered in it: `comments` are the turns the
/// answer was based on (root, permitted history, the question) and the answer itself.
/// Keyed by the root comment, so each answer rewrites the same document; its text changed,
/// so it is sent for embedding again.
pub async fn thread(
    services: &Services,
    retrieval: &RetrievalConfig,
    pr: PrRef<'_>,
    comments: &[ReviewComment],
) {
    if !retrieval.enabled {
        return;
    }
    let document = thread_document(pr, comments, OffsetDateTime::now_utc());
    remember_one(services, retrieval, pr, document, "review thread").await;
}

/// A question Parley answered in the PR's conversation, with its answer: later reviews
/// and answers find what was asked and said about this code as they find review threads.
/// The asker passed the gates of who may talk to Parley, so the question may steer a
/// later prompt as much as a permitted thread turn may.
pub async fn exchange(
    services: &Services,
    retrieval: &RetrievalConfig,
    pr: PrRef<'_>,
    exchange: Exchange<'_>,
) {
    if !retrieval.enabled {
        return;
    }
    let document = exchange_document(pr, exchange, OffsetDateTime::now_utc());
    remember_one(services, retrieval, pr, document, "answered question").await;
}

/// Store one conversation document and ask for its embedding; fails open.
async fn remember_one(
    services: &Services,
    retrieval: &RetrievalConfig,
    pr: PrRef<'_>,
    document: Option<Document>,
    what: &'static str,
) {
    let Some(document) = document else {
        return;
    };
    if let Err(err) = services.corpus.upsert_document(&document).await {
        tracing::warn!(repo = pr.repo, pr = pr.number, key = %document.key, error = %err, "could not remember the {what} for retrieval");
        return;
    }
    let keys = BTreeMap::from([(Corpus::Thread, vec![document.key.clone()])]);
    embedding::enqueue_for(services, retrieval, pr.repo, keys).await;
    tracing::debug!(repo = pr.repo, pr = pr.number, key = %document.key, "{what} remembered");
}

/// Upsert `documents`, a few at a time: the keys stored, by corpus, and how many failed.
async fn store_all(
    corpus: &dyn CorpusStore,
    documents: &[Document],
) -> (BTreeMap<Corpus, Vec<String>>, usize) {
    let mut keys: BTreeMap<Corpus, Vec<String>> = BTreeMap::new();
    let mut failed = 0;
    for batch in documents.chunks(CONCURRENT_WRITES) {
        let writes = batch
            .iter()
            .map(|doc| corpus.upsert_document(doc))
            .collect();
        for (doc, result) in batch.iter().zip(join_all(writes).await) {
            match result {
                Ok(_) => keys.entry(doc.corpus).or_default().push(doc.key.clone()),
                Err(err) => {
                    failed += 1;
                    tracing::warn!(repo = %doc.repo, corpus = doc.corpus.as_str(), key = %doc.key, error = %err, "could not store a retrieval document; going on without it");
                }
            }
        }
    }
    (keys, failed)
}
