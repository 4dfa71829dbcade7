//! What a learning is: the record a team's "@parley remember …" becomes.

use crate::ports::Severity;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

/// What a learning asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LearningKind {
    /// A fact or convention for reviews and answers to take into account.
    Remember,
    /// Findings of this kind are not wanted: dropped before publishing.
    Dismiss,
    /// Be stricter or more lenient about a category: its confidence threshold moves.
    Adjust,
}

impl LearningKind {
    pub fn name(self) -> &'static str {
        match self {
            LearningKind::Remember => "remember",
            LearningKind::Dismiss => "dismiss",
            LearningKind::Adjust => "adjust",
        }
    }
}

/// Where a learning applies. Repository and organisation learnings live in their own
/// partitions; PR and thread learnings in their repository's.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "level", rename_all = "snake_case")]
pub enum Scope {
    /// One review thread (its root comment) of one PR.
    Thread {
        pr: u64,
        root: u64,
    },
    Pr {
        pr: u64,
    },
    Repo,
    Org,
}

impl Scope {
    pub fn name(&self) -> String {
        match self {
            Scope::Thread { pr, .. } => format!("thread on #{pr}"),
            Scope::Pr { pr } => format!("PR #{pr}"),
            Scope::Repo => "repo".to_string(),
            Scope::Org => "org".to_string(),
        }
    }

    /// Whether a learning of this scope applies to PR `pr` (and, for a thread learning,
    /// to the thread rooted at `root` when one is in play).
    pub fn covers(&self, pr: u64, root: Option<u64>) -> bool {
        match self {
            Scope::Repo | Scope::Org => true,
            Scope::Pr { pr: own } => *own == pr,
            Scope::Thread {
                pr: own,
                root: own_root,
            } => *own == pr && root == Some(*own_root),
        }
    }
}

/// Who taught a learning, as far as the merge gate is concerned: the one thing that
/// decides whether it may loosen what Parley reports. Recorded when the learning is added
/// (the permission lookup is the teaching turn's), never re-read from the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Authority {
    /// Held the repository's `gate.resolveBy` permission: may make Parley more lenient.
    Maintainer,
    /// The PR's author without `resolveBy`: may make Parley stricter or add context.
    PrAuthor,
    /// Anyone else allowed to talk to Parley, without `resolveBy`.
    Participant,
}

impl Authority {
    /// How prompts name who said it.
    pub fn label(self) -> &'static str {
        match self {
            Authority::Maintainer => "a maintainer",
            Authority::PrAuthor => "this PR's author",
            Authority::Participant => "a participant",
        }
    }

    pub fn may_loosen(self) -> bool {
        self == Authority::Maintainer
    }
}

/// Stricter or more lenient.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Stricter,
    Lenient,
}

/// What a learning is about, structured so it can be applied without a model: the
/// category and severity of findings it concerns, and the paths. Extracted once, when the
/// learning is added (an LLM call, with a deterministic fallback).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hints {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Findings at or below this severity (a dismissal of "nits" is not one of criticals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_severity: Option<Severity>,
    /// Globs; empty means every path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Words a finding's title or body must contain for a dismissal to match it (any of
    /// them), e.g. `unwrap`; empty means the category and paths decide alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// `llm` or `rules`: who extracted these.
    #[serde(default)]
    pub source: String,
}

/// Someone's soft deletion of a learning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forgotten {
    pub by: String,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Learning {
    /// Short and typable: `L-3f9a`.
    pub id: String,
    /// `owner/name` the learning was taught in.
    pub repo: String,
    pub scope: Scope,
    pub kind: LearningKind,
    pub text: String,
    pub hints: Hints,
    pub author: String,
    /// Who the author was when they taught it. Records written before this was kept have
    /// none: see [`Learning::authority`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authority: Option<Authority>,
    pub source_url: String,
    /// The comment it came from: one learning per comment, whatever redelivers it.
    pub source_comment_id: u64,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forgotten: Option<Forgotten>,
    /// Reviews whose prompts or filters it took part in.
    #[serde(default)]
    pub times_applied: u64,
    /// Findings it dropped.
    #[serde(default)]
    pub findings_suppressed: u64,
}

impl Learning {
    pub fn is_active(&self) -> bool {
        self.forgotten.is_none()
    }

    /// Who taught it. Older records did not say: repository and organisation learnings
    /// always needed write or an organisation admin, so they count as a maintainer's; PR
    /// and thread learnings needed nothing, so they count as a participant's (they may
    /// still make Parley stricter, never more lenient).
    pub fn authority(&self) -> Authority {
        self.authority.unwrap_or(match self.scope {
            Scope::Repo | Scope::Org => Authority::Maintainer,
            Scope::Pr { .. } | Scope::Thread { .. } => Authority::Participant,
        })
    }

    /// Whether this learning may lower what Parley reports (dismiss, or "more lenient").
    pub fn loosens(&self) -> bool {
        self.kind == LearningKind::Dismiss
            || (self.kind == LearningKind::Adjust
                && self.hints.direction == Some(Direction::Lenient))
    }
}

/// The store partition of learnings in `scope`: the repository's, or for an organisation
/// learning the organisation's (shared by all its repositories).
/// The memory partition a learning lives in: its repository's key, or for an
/// organisation-wide one the organisation's (`org`, from [`crate::tenancy::Tenant`]).
pub fn partition(repo: &str, org: &str, scope: &Scope) -> String {
    match scope {
        Scope::Org => org.to_string(),
        _ => repo.to_string(),
    }
}

/// An organisation's partition as it was keyed by login, before ids (see
/// [`crate::tenancy`]).
pub fn org_partition(owner: &str) -> String {
    format!("org:{}", owner.to_ascii_lowercase())
}

pub const LEARNING_PREFIX: &str = "learning#";

pub fn sort_key(id: &str) -> String {
    format!("{LEARNING_PREFIX}{id}")
}

/// The id of the learning taught by comment `comment_id`: four hex digits of a hash of
/// the repository and comment (typable), six on the rare clash with another comment's.
pub fn learning_id(repo: &str, comment_id: u64, long: bool) -> String {
    let mut hasher = Sha256::new();
    hasher.update(repo.as_bytes());
    hasher.update(comment_id.to_be_bytes());
    let digest = hex::encode(hasher.finalize());
    let len = if long { 6 } else { 4 };
    format!("L-{}", &digest[..len])
}

/// `L-3F9A`, ` l-3f9a ` → `L-3f9a`.
pub fn canonical_id(text: &str) -> Option<String> {
    let text = text.trim().trim_matches('`');
    let (prefix, hex) = text.split_at_checked(2)?;
    if !prefix.eq_ignore_ascii_case("L-")
        || !(4..=8).contains(&hex.len())
        || !hex.chars().all(|c| c.is_ascii_hexdigit())
    {
        return None;
    }
    Some(format!("L-{}", hex.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_short_stable_and_canonical() {
        let id = learning_id("o/r", 42, false);
        assert_eq!(id.len(), 6);
        assert_eq!(id, learning_id("o/r", 42, false));
        assert_ne!(id, learning_id("o/r", 43, false));
        assert_eq!(learning_id("o/r", 42, true).len(), 8);
        assert!(learning_id("o/r", 42, true).starts_with(&id));
        assert_eq!(canonical_id(" `l-3F9A` ").as_deref(), Some("L-3f9a"));
        assert_eq!(canonical_id("L-3f9"), None);
        assert_eq!(canonical_id("X-3f9a"), None);
        assert_eq!(canonical_id("L-zzzz"), None);
        assert_eq!(canonical_id("é"), None);
    }

    #[test]
    fn scopes_cover_their_pr_and_thread() {
        assert!(Scope::Repo.covers(1, None));
        assert!(Scope::Pr { pr: 1 }.covers(1, Some(9)));
        assert!(!Scope::Pr { pr: 1 }.covers(2, None));
        let thread = Scope::Thread { pr: 1, root: 9 };
        assert!(thread.covers(1, Some(9)));
        assert!(!thread.covers(1, None));
        assert!(!thread.covers(1, Some(8)));
    }
}
