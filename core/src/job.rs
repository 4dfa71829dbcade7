//! Typed jobs: what the webhook hands to the workers.
//!
//! A job carries everything the worker needs from the payload and nothing else, so the
//! queue message stays small (GitHub payloads run to 30 kB; SQS messages cap at 256 kB)
//! and the worker never re-parses a webhook.

use crate::ports::{Corpus, OutgoingMessage, QueueName};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The repository an event concerns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoRef {
    pub id: u64,
    pub owner: String,
    pub name: String,
    /// The owner account's id: what organisation-wide learnings are keyed by. Absent
    /// (0) in jobs queued before it was carried.
    #[serde(default)]
    pub owner_id: u64,
}

impl RepoRef {
    /// `owner/name`.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    /// Where this repository's records live in the store.
    pub fn tenant(&self) -> crate::tenancy::Tenant {
        crate::tenancy::Tenant::of(self.id, self.owner_id, &self.owner, &self.name)
    }
}

/// Who wrote something.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    pub login: String,
    /// GitHub's account type: `User`, `Bot`, `Organization`.
    pub kind: String,
}

impl Actor {
    /// Bots never get answers (no bot-to-bot loops).
    pub fn is_bot(&self) -> bool {
        self.kind.eq_ignore_ascii_case("bot") || self.login.ends_with("[bot]")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Job {
    Review(ReviewJob),
    Conversation(ConversationJob),
    Bookkeeping(BookkeepingJob),
    Embed(EmbedJob),
}

impl Job {
    pub fn delivery_id(&self) -> &str {
        match self {
            Job::Review(j) => &j.delivery_id,
            Job::Conversation(j) => &j.delivery_id,
            Job::Bookkeeping(j) => &j.delivery_id,
            Job::Embed(j) => &j.delivery_id,
        }
    }

    /// Which queue the job goes to. Bookkeeping rides the conversation queue: it is light,
    /// and the learning work that consumes it lives beside the conversations.
    /// The job as a message on its queue, in its group; `dedup_id` says which sends of it
    /// are one (a webhook delivery, a comment's request).
    pub fn message(&self, dedup_id: String) -> Result<OutgoingMessage, serde_json::Error> {
        Ok(OutgoingMessage {
            queue: self.queue(),
            group_id: self.group_id(),
            dedup_id,
            body: serde_json::to_string(self)?,
        })
    }

    pub fn queue(&self) -> QueueName {
        match self {
            Job::Review(_) => QueueName::Review,
            Job::Conversation(_) | Job::Bookkeeping(_) => QueueName::Conversation,
            Job::Embed(_) => QueueName::Embedding,
        }
    }

    /// FIFO message group: `owner/repo#number` serialises work on one PR; installation
    /// events group by installation; embedding jobs group by repository, so one
    /// repository's documents are embedded one job at a time (no two jobs racing to embed
    /// the same hunk, a bounded request rate per repository) while repositories run in
    /// parallel.
    pub fn group_id(&self) -> String {
        match self {
            Job::Review(j) => format!("{}#{}", j.repo.full_name(), j.number),
            Job::Conversation(j) => format!("{}#{}", j.repo.full_name(), j.number),
            Job::Bookkeeping(j) => match &j.event {
                BookkeepingEvent::Installation {
                    installation_id, ..
                } => {
                    format!("installation#{installation_id}")
                }
                BookkeepingEvent::ReviewThread { repo, number, .. }
                | BookkeepingEvent::FindingCommentDeleted { repo, number, .. }
                | BookkeepingEvent::MergeGroup { repo, number, .. }
                | BookkeepingEvent::PullRequestClosed { repo, number, .. } => {
                    format!("{}#{}", repo.full_name(), number)
                }
                // One group: sweeps run one at a time.
                BookkeepingEvent::RedeliverFailed => "redelivery".to_string(),
            },
            Job::Embed(j) => j.repo.clone(),
        }
    }

    /// The job's kind, as log lines and metrics name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Job::Review(_) => "review",
            Job::Conversation(_) => "conversation",
            Job::Bookkeeping(_) => "bookkeeping",
            Job::Embed(_) => "embed",
        }
    }

    /// `owner/name` and the PR (or issue) number the job concerns; installation events
    /// concern neither.
    pub fn subject(&self) -> (Option<String>, Option<u64>) {
        match self {
            Job::Review(j) => (Some(j.repo.full_name()), Some(j.number)),
            Job::Conversation(j) => (Some(j.repo.full_name()), Some(j.number)),
            Job::Bookkeeping(j) => match &j.event {
                BookkeepingEvent::Installation { .. } | BookkeepingEvent::RedeliverFailed => {
                    (None, None)
                }
                BookkeepingEvent::ReviewThread { repo, number, .. }
                | BookkeepingEvent::FindingCommentDeleted { repo, number, .. }
                | BookkeepingEvent::MergeGroup { repo, number, .. }
                | BookkeepingEvent::PullRequestClosed { repo, number, .. } => {
                    (Some(repo.full_name()), Some(*number))
                }
            },
            Job::Embed(j) => (Some(j.repo.clone()), None),
        }
    }

    /// Short description for log lines.
    pub fn describe(&self) -> String {
        match self {
            Job::Review(j) => format!(
                "review {}#{} ({:?} @ {})",
                j.repo.full_name(),
                j.number,
                j.trigger,
                j.head_sha
            ),
            Job::Conversation(j) => format!(
                "conversation {}#{} ({:?} comment {} by {})",
                j.repo.full_name(),
                j.number,
                j.surface,
                j.comment.id,
                j.comment.author.login
            ),
            Job::Bookkeeping(j) => format!("bookkeeping {:?}", j.event),
            Job::Embed(j) => format!("embed {} ({} documents)", j.repo, j.document_count()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewTrigger {
    Opened,
    Reopened,
    ReadyForReview,
    /// New commits were pushed; `before` in the job says what was there.
    Synchronize,
    /// A label was taken off the PR (`label` in the job names it): the head is reviewed
    /// if that label was holding automatic reviews off (`review.skipLabels`).
    Unlabeled,
    /// `@parley review` (incremental) from a comment.
    ManualIncremental,
    /// `@parley full review`.
    ManualFull,
    /// "Re-run" pressed on the head's **Parley review** check (`check_run` or
    /// `check_suite` `rerequested`): see [`crate::review::rerun`]. The job's `author` is
    /// whoever pressed it, and its title empty: the worker reads the PR.
    Rerequested,
    /// "Let it through" pressed on a held **Parley review** check (`check_run`
    /// `requested_action`, `gate.incomplete: hold`): see [`crate::review::let_through`].
    /// Reviews nothing; the job's `author` is whoever pressed it.
    LetThrough,
    /// The PR was moved to another base branch (`pull_request.edited`): its diff is
    /// another, so the head is reviewed against the new base; see
    /// [`crate::review::retarget`].
    Retargeted,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewJob {
    pub delivery_id: String,
    pub installation_id: Option<u64>,
    pub repo: RepoRef,
    pub number: u64,
    pub trigger: ReviewTrigger,
    pub head_sha: String,
    pub base_sha: String,
    pub base_ref: String,
    /// Head before a `synchronize` push, when GitHub sent it.
    pub before_sha: Option<String>,
    pub author: Actor,
    pub title: String,
    /// Set for `@parley review` / `@parley full review`: the comment that asked.
    #[serde(default)]
    pub request: Option<ReviewRequest>,
    /// For [`ReviewTrigger::Unlabeled`]: the label taken off.
    #[serde(default)]
    pub label: Option<String>,
    /// For [`ReviewTrigger::Rerequested`] on a manual review's check: that run's key
    /// (see `review::runs::manual_key`). `None` for the gate's check. For a
    /// [`ReviewTrigger::ManualFull`] job that answers no request: the run it is (a
    /// retargeted head's full review, see `review::runs::retarget_key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_of: Option<String>,
    /// For [`ReviewTrigger::Retargeted`] and the full review it starts: the base commit
    /// the PR was moved from (GitHub's `changes.base.sha.from`), against which the head
    /// was reviewed. What reads the same against the new base is not reviewed again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_from: Option<String>,
}

/// The comment behind a manual review request, so the review can answer it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewRequest {
    pub comment_id: u64,
    pub surface: Surface,
    pub author: Actor,
    pub html_url: String,
}

/// Where a comment was written; decides where the answer goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    /// Top-level comment on a PR or an issue.
    IssueComment,
    /// Inline comment on a diff line, or a reply in such a thread.
    ReviewComment,
    /// The body of a submitted review.
    ReviewBody,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    pub id: u64,
    pub author: Actor,
    pub body: String,
    pub html_url: String,
    pub created_at: String,
}

/// Inline position of a review comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InlinePosition {
    pub path: String,
    pub line: Option<u64>,
    pub start_line: Option<u64>,
    pub side: Option<String>,
    pub diff_hunk: Option<String>,
    pub commit_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationJob {
    pub delivery_id: String,
    pub installation_id: Option<u64>,
    pub repo: RepoRef,
    /// PR or issue number.
    pub number: u64,
    pub is_pull_request: bool,
    pub surface: Surface,
    pub comment: Comment,
    /// Set for a reply in a review-comment thread: the comment it answers.
    pub in_reply_to_id: Option<u64>,
    pub position: Option<InlinePosition>,
    /// Review id for `ReviewBody` and for review comments that belong to a review.
    pub review_id: Option<u64>,
    /// The webhook saw a mention of the bot (false when it could not tell because the
    /// bot's handle was not configured; the worker then decides).
    pub mentions_bot: bool,
    /// Title and description of the issue or PR, for top-level comments: a plain issue
    /// has no other source of context, and this saves the worker a call. The description
    /// is capped by the webhook so the queue message stays small.
    #[serde(default)]
    pub topic: Option<Topic>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topic {
    pub title: String,
    pub body: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BookkeepingJob {
    pub delivery_id: String,
    pub installation_id: Option<u64>,
    pub event: BookkeepingEvent,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum BookkeepingEvent {
    /// `installation` and `installation_repositories`: record what the App is installed on.
    Installation {
        action: String,
        installation_id: u64,
        account: String,
        /// The account's id (0 in jobs queued before it was carried): the key of its
        /// organisation-wide learnings.
        #[serde(default)]
        account_id: u64,
        repositories_added: Vec<String>,
        /// The added (or, for `created` and `deleted`, listed) repositories' ids (empty
        /// in jobs queued before they were carried).
        #[serde(default)]
        repository_ids_added: Vec<u64>,
        repositories_removed: Vec<String>,
        /// The removed repositories' ids, in the order of `repositories_removed` (empty
        /// in jobs queued before they were carried).
        #[serde(default)]
        repository_ids_removed: Vec<u64>,
    },
    /// A review thread was resolved or unresolved (feeds learning later).
    ReviewThread {
        repo: RepoRef,
        number: u64,
        resolved: bool,
        /// Ids of the thread's comments, root first.
        comment_ids: Vec<u64>,
        actor: String,
    },
    /// `actor` deleted review comment `comment_id`, the first of its thread and one of
    /// Parley's (see [`crate::bookkeeping`]): the finding posted there lost its thread.
    FindingCommentDeleted {
        repo: RepoRef,
        number: u64,
        comment_id: u64,
        actor: String,
    },
    /// GitHub's merge queue asks for the required checks on the commit it made to test
    /// PR `number` (`merge_group.checks_requested`): the base with the PRs queued ahead
    /// and this PR merged in, `group_head` (see [`crate::review::merge_queue`]); or
    /// "Re-run" was pressed on Parley's check there.
    MergeGroup {
        repo: RepoRef,
        number: u64,
        group_head: String,
        /// Judge it only if Parley's own check for the PR is on the commit already: the
        /// PR was read from a branch name alone ("Re-run all checks" on a suite), which
        /// anyone who may push can give any commit.
        #[serde(default)]
        verify: bool,
    },
    /// A PR was closed, merged or not (feeds acceptance statistics later).
    PullRequestClosed {
        repo: RepoRef,
        number: u64,
        merged: bool,
    },
    /// Scheduled, not from a webhook: ask GitHub to deliver again the events Parley failed
    /// to take (see [`crate::redelivery`]).
    RedeliverFailed,
}

/// Embed stored documents. Enqueued after a review is published, by
/// [`crate::embedding::enqueue_for`]; the documents themselves are already in the corpus
/// store, so the message carries only their keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedJob {
    /// Derived from the repository and the keys, so enqueueing the same work twice
    /// (a retried publish) is one message within the queue's dedup window.
    pub delivery_id: String,
    /// `owner/name`.
    pub repo: String,
    /// Document keys to embed, by corpus.
    pub keys: BTreeMap<Corpus, Vec<String>>,
}

impl EmbedJob {
    pub fn document_count(&self) -> usize {
        self.keys.values().map(Vec::len).sum()
    }
}
