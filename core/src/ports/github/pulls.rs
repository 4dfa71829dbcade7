//! Pull requests, their files, comparisons and commits.

use super::null_as_default;
use super::people::User;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequest {
    pub number: u64,
    #[serde(default)]
    pub id: u64,
    #[serde(default)]
    pub node_id: String,
    #[serde(default)]
    pub title: String,
    /// The description; GitHub sends `null` for an empty one.
    #[serde(default, deserialize_with = "null_as_default")]
    pub body: String,
    /// `open` or `closed`.
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub draft: bool,
    #[serde(default)]
    pub merged: bool,
    #[serde(default)]
    pub user: Option<User>,
    pub head: BranchRef,
    pub base: BranchRef,
    #[serde(default)]
    pub html_url: String,
    /// `OWNER`, `MEMBER`, `COLLABORATOR`, `CONTRIBUTOR`, `FIRST_TIME_CONTRIBUTOR`, `NONE`, …
    #[serde(default)]
    pub author_association: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub requested_reviewers: Vec<User>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub labels: Vec<Label>,
    #[serde(default)]
    pub additions: Option<u64>,
    #[serde(default)]
    pub deletions: Option<u64>,
    #[serde(default)]
    pub changed_files: Option<u64>,
    #[serde(default)]
    pub commits: Option<u64>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub created_at: Option<OffsetDateTime>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub updated_at: Option<OffsetDateTime>,
}

/// One side of a PR: the branch and the commit it pointed at.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct BranchRef {
    #[serde(rename = "ref")]
    pub ref_name: String,
    pub sha: String,
    #[serde(default)]
    pub label: String,
    /// `None` when the head fork was deleted.
    #[serde(default)]
    pub repo: Option<RepoSummary>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RepoSummary {
    #[serde(default)]
    pub id: u64,
    pub full_name: String,
    /// The owner account (its id keys organisation-wide learnings).
    #[serde(default)]
    pub owner: Option<AccountSummary>,
    #[serde(default)]
    pub fork: bool,
    #[serde(default)]
    pub default_branch: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AccountSummary {
    #[serde(default)]
    pub id: u64,
    pub login: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Label {
    pub name: String,
}

/// A file changed by a PR or a comparison.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ChangedFile {
    pub filename: String,
    pub status: FileStatus,
    #[serde(default)]
    pub additions: u64,
    #[serde(default)]
    pub deletions: u64,
    #[serde(default)]
    pub changes: u64,
    /// The unified diff of the file. Absent for binary files and for diffs GitHub deems too
    /// large: such a file cannot be reviewed from its patch.
    #[serde(default)]
    pub patch: Option<String>,
    #[serde(default)]
    pub previous_filename: Option<String>,
    #[serde(default)]
    pub sha: Option<String>,
}

#[cfg(test)]
impl ChangedFile {
    /// A file as GitHub lists it, its line counts taken from `patch`.
    pub(crate) fn listed(name: &str, status: FileStatus, patch: Option<&str>) -> ChangedFile {
        let count = |sign: char| {
            patch.map_or(0, |p| {
                p.lines()
                    .filter(|l| {
                        l.starts_with(sign) && !l.starts_with("+++") && !l.starts_with("---")
                    })
                    .count() as u64
            })
        };
        let (additions, deletions) = (count('+'), count('-'));
        ChangedFile {
            filename: name.into(),
            status,
            additions,
            deletions,
            changes: additions + deletions,
            patch: patch.map(String::from),
            previous_filename: None,
            sha: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    Added,
    Removed,
    Modified,
    Renamed,
    Copied,
    Changed,
    Unchanged,
    /// A status GitHub added after this was written.
    #[serde(other)]
    Unknown,
}

/// `GET /repos/{owner}/{repo}/compare/{base}...{head}`: what an incremental review covers.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Comparison {
    /// `ahead`, `behind`, `identical` or `diverged`. After a force-push the old head is no
    /// longer an ancestor (`diverged`), and the commits between say nothing of the PR.
    pub status: String,
    #[serde(default)]
    pub ahead_by: u64,
    #[serde(default)]
    pub behind_by: u64,
    #[serde(default)]
    pub total_commits: u64,
    #[serde(default)]
    pub html_url: String,
    #[serde(default)]
    pub merge_base_commit: Option<CommitSummary>,
    /// At most 250 commits; `total_commits` says how many there are.
    #[serde(default, deserialize_with = "null_as_default")]
    pub commits: Vec<CommitSummary>,
    /// At most 300 files (GitHub's limit for this endpoint).
    #[serde(default, deserialize_with = "null_as_default")]
    pub files: Vec<ChangedFile>,
}

impl Comparison {
    /// The most files GitHub's compare lists; it stops there and says nothing.
    pub const MAX_FILES: usize = 300;

    /// Whether `files` may be short of the change: a file missing from a full list may
    /// have changed all the same.
    pub fn may_be_cut(&self) -> bool {
        self.files.len() >= Self::MAX_FILES
    }

    /// Whether the head descends from the base, so that `files` are the change from one
    /// to the other. After a rebase or a force-push they have `diverged`, and GitHub
    /// diffs the head from their merge base instead: the old side's lines are then the
    /// merge base's, not the base commit's, and say nothing of code found there.
    pub fn descends(&self) -> bool {
        matches!(self.status.as_str(), "ahead" | "identical")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CommitSummary {
    pub sha: String,
    #[serde(default)]
    pub commit: Option<CommitDetail>,
    /// Two or more for a merge commit: one that brings the base branch in brings changes
    /// that are not the PR's.
    #[serde(default, deserialize_with = "null_as_default")]
    pub parents: Vec<CommitRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CommitRef {
    pub sha: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CommitDetail {
    #[serde(default)]
    pub message: String,
}

/// Who to ask for a review (logins and team slugs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReviewerRequest {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reviewers: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub team_reviewers: Vec<String>,
}
