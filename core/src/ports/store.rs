//! The store port: everything that must outlive one process.
//!
//! Lambdas are stateless and SQS delivers at least once, so every "do this only once"
//! decision is a conditional write here: delivery dedup, claimed replies, turn counters.
//! The methods are deliberately few and typed; each adapter maps them onto its own
//! conditional-write primitive (DynamoDB condition expressions, SQLite transactions).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use time::OffsetDateTime;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The backend could not be reached or refused the call (throttling, network, I/O).
    #[error("store backend unavailable: {0}")]
    Unavailable(String),
    /// A record in the store could not be decoded into its type.
    #[error("corrupt record {key}: {reason}")]
    Corrupt { key: String, reason: String },
    #[error("store misconfigured: {0}")]
    Config(String),
}

/// Outcome of an idempotency claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// This caller now owns the key until it expires.
    Won,
    /// Someone else holds an unexpired claim on the key.
    AlreadyClaimed,
}

/// A GitHub App installation, recorded from `installation` / `installation_repositories`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installation {
    pub id: u64,
    /// Login of the user or organisation the App is installed on.
    pub account: String,
    /// `owner/name` of the repositories the installation covers, when GitHub listed them.
    pub repositories: Vec<String>,
    /// Their GitHub ids, what their records are keyed by (absent from records written
    /// before ids were kept).
    #[serde(default)]
    pub repository_ids: Vec<u64>,
    pub suspended: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Nit,
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    /// The lowercase name `.parley.yml`, prompts and comments use (serde's, too).
    pub fn name(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
            Severity::Nit => "nit",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingState {
    Open,
    Resolved,
    WontFix,
}

/// One review finding, as posted inline on a pull request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The repository's store key (`crate::tenancy`).
    pub repo: String,
    pub pr: u64,
    /// Stable id, also carried in the comment's hidden marker.
    pub id: String,
    /// path + normalised title + code context: survives line shifts across pushes.
    pub fingerprint: String,
    /// path + code context (see [`crate::review::merge::site`]): the same problem
    /// worded differently by a later review is found here. Empty for findings off the
    /// diff and those stored before it existed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub site: String,
    pub severity: Severity,
    pub category: String,
    /// 0-100.
    pub confidence: u8,
    pub path: String,
    pub start_line: Option<u32>,
    pub line: u32,
    pub title: String,
    pub body: String,
    pub head_sha: String,
    pub review_id: Option<u64>,
    /// The GitHub review comment id the finding got, once posted.
    pub comment_id: Option<u64>,
    pub state: FindingState,
    /// Who last changed the state and when, for disputes and learning.
    pub state_changed_by: Option<String>,
    #[serde(with = "time::serde::rfc3339::option", default)]
    pub state_changed_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// How the finding ended, once that is known (see [`crate::learning::outcomes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<FindingOutcome>,
    /// The judge's case against a blocking finding it could not drop
    /// ([`crate::review::merge::Candidate::doubt`]): later checks still name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doubt: Option<String>,
}

#[cfg(test)]
impl Finding {
    /// An open high finding on line 3 of `path` in PR 1 of `o/r`, confidence 90, not yet
    /// posted: what the tests start from, changing the fields they are about.
    pub(crate) fn sample(path: &str, title: &str) -> Self {
        Finding {
            repo: "o/r".into(),
            pr: 1,
            id: format!("f-{title}"),
            fingerprint: format!("fp-{title}"),
            site: String::new(),
            severity: Severity::High,
            category: "bug".into(),
            confidence: 90,
            path: path.into(),
            start_line: None,
            line: 3,
            title: title.into(),
            body: String::new(),
            head_sha: "abc".into(),
            review_id: None,
            comment_id: None,
            state: FindingState::Open,
            state_changed_by: None,
            state_changed_at: None,
            created_at: OffsetDateTime::UNIX_EPOCH,
            outcome: None,
            doubt: None,
        }
    }
}

/// Whether a finding was worth posting, as people's actions said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Accepted,
    Rejected,
    /// The PR closed with the finding open and nobody said anything.
    Ignored,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingOutcome {
    pub verdict: Verdict,
    /// What said so: `thread_resolved`, `code_changed`, `fixed`, `thumbs_up`, `conceded`,
    /// `wont_fix`, `deleted` (its comment, by someone entitled), `thumbs_down`,
    /// `resolved_after_dispute`, `closed_unanswered`.
    pub signal: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Everyone else who gave the signal (several people's 👎), so that counting it again
    /// after a crash feeds the same people into the false-positive pattern.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_by: Vec<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The verdict the statistics counted for this finding before this one, which they
    /// take back when they count this one. Kept on the finding because a retry after a
    /// crash sees only the new outcome (see [`crate::learning::outcomes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<Verdict>,
    /// Whether the statistics and patterns have counted this outcome. Written `false`
    /// with the outcome and `true` once they have, so a retry knows there is counting
    /// left to finish. Records from before this field were counted when written.
    #[serde(default = "counted_before_the_flag")]
    pub counted: bool,
}

fn counted_before_the_flag() -> bool {
    true
}

impl Finding {
    /// A short digest of what people decided about the finding (its state, who changed it
    /// and when, its outcome): what a conditional write ([`Findings::put_finding_if`])
    /// compares. The review and the conversation worker run on different queues, so
    /// either may change a finding the other read a moment ago; comparing these fields
    /// (not the whole record) lets a writer that only adds its own fields (a comment id)
    /// tell a real conflict from none. Both adapters compute it the same way.
    pub fn decision_token(&self) -> String {
        use sha2::{Digest, Sha256};
        let decided = serde_json::to_value(self)
            .ok()
            .map(|value| {
                ["state", "state_changed_by", "state_changed_at", "outcome"]
                    .map(|field| value.get(field).cloned().unwrap_or_default())
            })
            .map(|fields| serde_json::Value::from(fields.to_vec()).to_string())
            .unwrap_or_default();
        hex::encode(&Sha256::digest(decided.as_bytes())[..12])
    }
}

/// One record of what Parley learned about a repository or organisation (a learning, a
/// false-positive pattern, the acceptance statistics), as the store keeps it: opaque JSON
/// under a partition (`owner/name` or `org:<login>`) and a sort key (`learning#L-3f9a`,
/// `pattern#…`, `stats`), with a version for optimistic concurrency. The typed records
/// and what they mean live in [`crate::learning`]; the store only keeps them, so both
/// adapters stay small and one contract suite holds them.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryItem {
    pub sort_key: String,
    /// 1 for a record written once, +1 for each replacement.
    pub version: u64,
    pub record: serde_json::Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Claimed and in progress (or died; the queue will retry it).
    Running,
    /// The review was posted.
    Published,
    /// A newer head SHA arrived first; nothing was posted for this one.
    Superseded,
    /// Parley could not do its job (LLM down, GitHub errors after retries).
    Failed,
}

/// One review of one head SHA of a PR: how re-reviews know what was already covered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewRun {
    /// `owner/name`.
    pub repo: String,
    pub pr: u64,
    pub head_sha: String,
    /// Start of the reviewed range: the previous reviewed head for an incremental review,
    /// the PR base for a full one.
    pub base_sha: String,
    /// What asked for it: `opened`, `synchronize`, `manual`, `manual_full`, ….
    pub trigger: String,
    pub state: RunState,
    pub check_run_id: Option<u64>,
    pub review_id: Option<u64>,
    pub review_url: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option", default)]
    pub finished_at: Option<OffsetDateTime>,
    /// Who let the head through without a complete review (`gate.incomplete: hold`, see
    /// [`crate::review::let_through`]); a record of an earlier version has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub let_through_by: Option<String>,
    /// For a retargeted head's review ([`crate::review::runs::retarget_key`]): the base
    /// commit the PR was moved from, kept so that "Re-run" after a failure reviews what
    /// the move brings as the first attempt would have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_from: Option<String>,
}

/// Everything Parley keeps between invocations: the focused stores below, together.
/// Each adapter implements every one of them and a contract suite of its own holds each
/// to its promises; a handler holds the whole as `dyn Store`, since a job touches most of
/// them, while code that needs one part can take just that trait.
///
/// Keys passed as `&str` are opaque to the store; callers build them with the helpers in
/// [`keys`] so the same key always means the same thing in both adapters.
pub trait Store:
    Claims + Counters + ReviewRuns + Installations + Findings + Memory + Tenancy
{
}

impl<T> Store for T where
    T: Claims + Counters + ReviewRuns + Installations + Findings + Memory + Tenancy + ?Sized
{
}

/// Idempotency: "do this only once", across processes and retries.
#[async_trait]
pub trait Claims: Send + Sync {
    /// Claim `key` for `ttl`. Exactly one of several concurrent callers wins; an expired
    /// claim counts as absent (TTL deletion in DynamoDB is lazy, so expiry is checked on
    /// every read and write, never trusted to have happened).
    async fn claim(&self, key: &str, ttl: Duration) -> Result<Claim, StoreError>;

    /// Give up a claim, so a retry after a failed side effect can claim it again.
    async fn release(&self, key: &str) -> Result<(), StoreError>;

    /// Whether an unexpired claim on `key` exists.
    async fn is_claimed(&self, key: &str) -> Result<bool, StoreError>;

    /// Claim `key` on behalf of `owner`. Like [`Claims::claim`], except that the same
    /// owner claiming again wins (and extends the claim): a queue retry of the very job
    /// that holds a claim resumes its work instead of being locked out by itself.
    async fn claim_as(&self, key: &str, owner: &str, ttl: Duration) -> Result<Claim, StoreError>;
}

/// Atomic counters: turns per PR (with a ceiling), usage and cost (without).
#[async_trait]
pub trait Counters: Send + Sync {
    /// Atomically add one to `counter` under `scope` unless it has reached `ceiling`.
    /// Returns the new value, or `None` when the ceiling was already reached: two callers
    /// racing for the last unit cannot both get it.
    async fn increment_within(
        &self,
        scope: &str,
        counter: &str,
        ceiling: u64,
    ) -> Result<Option<u64>, StoreError>;

    /// Current value of a counter (0 when never incremented).
    async fn counter(&self, scope: &str, counter: &str) -> Result<u64, StoreError>;

    /// Atomically add `delta` to `counter` (no ceiling), returning the new value: usage
    /// accounting such as tokens and cost per PR.
    async fn add_to_counter(
        &self,
        scope: &str,
        counter: &str,
        delta: u64,
    ) -> Result<u64, StoreError>;

    /// Atomically add each `(counter, delta)` under `scope`, as one write where the
    /// store can: a job's usage (calls, tokens, cost, cache) goes to three scopes, and one
    /// write per scope rather than per counter is what it costs on DynamoDB. The counters
    /// read back through [`Counters::counter`] and [`Counters::counters`] as any other;
    /// they are for adding up, not for [`Counters::increment_within`]'s ceilings.
    async fn add_to_counters(&self, scope: &str, deltas: &[(&str, u64)]) -> Result<(), StoreError> {
        for (counter, delta) in deltas {
            self.add_to_counter(scope, counter, *delta).await?;
        }
        Ok(())
    }

    /// The values of `names` under `scope`, in that order (0 for one never added to), in
    /// one read where the store can.
    async fn counters(&self, scope: &str, names: &[&str]) -> Result<Vec<u64>, StoreError> {
        let mut values = Vec::with_capacity(names.len());
        for name in names {
            values.push(self.counter(scope, name).await?);
        }
        Ok(values)
    }
}

/// One record per review of a head: what re-reviews know was already covered.
#[async_trait]
pub trait ReviewRuns: Send + Sync {
    /// Insert or replace the record of a run (keyed by repo, PR and head SHA), except that
    /// a let-through already recorded on it is kept when `run` has none: a worker writes
    /// back the copy it read when it started, and someone may have let the head through
    /// since (see [`ReviewRuns::let_run_through`]).
    async fn put_review_run(&self, run: &ReviewRun) -> Result<(), StoreError>;
    /// Record that `who` let `run`'s head through (the run named by its repo, PR and key),
    /// changing nothing else of the run as stored, in one step: a whole-record write of
    /// this copy would put back a state a worker has changed since (a queue retry
    /// starting). The first let-through stands. `false` when there is no such run.
    async fn let_run_through(&self, run: &ReviewRun, who: &str) -> Result<bool, StoreError>;
    async fn review_run(
        &self,
        repo: &str,
        pr: u64,
        head_sha: &str,
    ) -> Result<Option<ReviewRun>, StoreError>;
    /// Every run of a PR, oldest first (by `started_at`).
    async fn review_runs(&self, repo: &str, pr: u64) -> Result<Vec<ReviewRun>, StoreError>;
}

/// The App's installations, as GitHub last described them.
#[async_trait]
pub trait Installations: Send + Sync {
    async fn put_installation(&self, installation: &Installation) -> Result<(), StoreError>;
    async fn installation(&self, id: u64) -> Result<Option<Installation>, StoreError>;
    async fn delete_installation(&self, id: u64) -> Result<(), StoreError>;
}

/// Review findings, by PR and by the comment each was posted as.
#[async_trait]
pub trait Findings: Send + Sync {
    /// Insert or replace a finding (keyed by repo, PR and finding id).
    async fn put_finding(&self, finding: &Finding) -> Result<(), StoreError>;
    /// Write `finding` only if the stored one is still as the writer read it: `read` is
    /// the finding as read (compared by [`Finding::decision_token`]: state, who changed
    /// it, outcome), `None` to insert only when there is no such finding yet. `false`
    /// when the condition failed: someone decided something meanwhile, and the caller
    /// reads again and merges only its own fields. A review reads the PR's findings
    /// minutes before it writes them back; without this it would undo a thread resolved,
    /// a concession or an outcome recorded by the conversation worker in between.
    async fn put_finding_if(
        &self,
        finding: &Finding,
        read: Option<&Finding>,
    ) -> Result<bool, StoreError>;
    /// Look a finding up by the GitHub comment it was posted as: how a reply in a thread
    /// finds what it is talking about.
    async fn finding_by_comment(
        &self,
        repo: &str,
        comment_id: u64,
    ) -> Result<Option<Finding>, StoreError>;
    /// All findings on one PR, oldest first.
    async fn findings_for_pr(&self, repo: &str, pr: u64) -> Result<Vec<Finding>, StoreError>;
}

/// What Parley learned (learnings, false-positive patterns, statistics), one partition
/// per repository or organisation, each record versioned.
#[async_trait]
pub trait Memory: Send + Sync {
    /// Every record of one partition, in sort-key order: one read for everything Parley
    /// learned about a repository (or an organisation).
    async fn memory(&self, partition: &str) -> Result<Vec<MemoryItem>, StoreError>;

    /// Write `record` at (`partition`, `sort_key`) only if the stored version is
    /// `expected` (0: no record yet); the record then has version `expected + 1`.
    /// `false` when another writer got there first: the caller reads again and retries,
    /// or (for an insert) learns the record exists. Two writers can never both win.
    async fn put_memory(
        &self,
        partition: &str,
        sort_key: &str,
        record: &serde_json::Value,
        expected: u64,
    ) -> Result<bool, StoreError>;
}

/// A repository's or an organisation's records as a whole: deleted when the App loses
/// access, moved when their key changes.
#[async_trait]
pub trait Tenancy: Send + Sync {
    /// Delete everything kept about repository `repo`: its findings, review runs, per-PR
    /// counters (`repo#N`), usage counters (`usage#repo#…`) and its memory partition
    /// (learnings, patterns, statistics). What an App stored about a repository must not
    /// outlive its access to it, nor pass to whoever later holds the name. Idempotent;
    /// returns how many records went. Claims (delivery ids, answered comments) carry no
    /// content and expire on their own.
    async fn purge_repository(&self, repo: &str) -> Result<u64, StoreError>;

    /// Delete one memory partition whole: an organisation's learnings, when the App is
    /// uninstalled from the organisation. Idempotent; returns how many records went.
    async fn purge_memory(&self, partition: &str) -> Result<u64, StoreError>;

    /// Move everything kept under repository key `from` to `to` (what
    /// [`Tenancy::purge_repository`] would delete): findings, review runs, counters and
    /// the memory partition, with each record's own `repo` field rewritten. A record that
    /// already exists under `to` is kept as it is (it is newer) and the `from` one
    /// dropped. Idempotent; returns how many records moved. How records keyed by name
    /// come to be keyed by id: see `crate::tenancy`.
    async fn rekey_repository(&self, from: &str, to: &str) -> Result<u64, StoreError>;

    /// Move one memory partition (an organisation's learnings) from `from` to `to`, on
    /// the same terms as [`Tenancy::rekey_repository`].
    async fn rekey_memory(&self, from: &str, to: &str) -> Result<u64, StoreError>;
}

/// Key builders, so adapters and callers agree on what a key means.
pub mod keys {
    /// Delivery dedup: one GitHub delivery is enqueued at most once.
    pub fn delivery(delivery_id: &str) -> String {
        format!("delivery#{delivery_id}")
    }

    /// Scope for per-PR state (turn counters, review runs): `owner/name#number`.
    pub fn pr_scope(repo: &str, number: u64) -> String {
        format!("{repo}#{number}")
    }

    /// The prefixes of every counter scope that belongs to `repo`: its PRs'
    /// ([`pr_scope`]) and its monthly usage (`crate::llm::usage::month_scope`). What a
    /// purge of the repository deletes.
    pub fn repo_scope_prefixes(repo: &str) -> [String; 2] {
        [format!("{repo}#"), format!("usage#{repo}#")]
    }
}
