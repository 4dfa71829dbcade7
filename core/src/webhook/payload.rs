//! The slices of GitHub's webhook payloads that Parley reads.
//!
//! Hand-written rather than a generated crate (octocrab's models, github-webhook-types)
//! because we need a dozen fields from six events, and every extra required field is one
//! more way a real payload fails to parse. Optional where GitHub omits or nulls them.
//!
//! Strings borrow from the request body ([`Text`]) and everything else in a payload is
//! skipped, not built: a `pull_request` payload is ~30 kB of which Parley reads a few
//! hundred bytes, and building it as a `serde_json::Value` (hundreds of small maps and
//! strings) was most of the webhook's time.

use serde::de::{Deserializer, IgnoredAny, Visitor};
use serde::{Deserialize, de};
use std::borrow::Cow;
use std::fmt;

/// A JSON string: borrowed from the body, owned only when it had escapes to decode.
///
/// A newtype rather than `Cow<str>` with `#[serde(borrow)]` because serde borrows a bare
/// `Cow` field but not one inside an `Option`, and most of these strings are optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text<'a>(pub Cow<'a, str>);

impl Text<'_> {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0.into_owned()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;

        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;

            // Same wording as `String`'s visitor, so type errors read as they always did.
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }

        deserializer.deserialize_str(TextVisitor)
    }
}

#[derive(Debug, Deserialize)]
pub struct User<'a> {
    /// 0 where a payload leaves it out (it never does for real accounts).
    #[serde(default)]
    pub id: u64,
    #[serde(borrow)]
    pub login: Text<'a>,
    #[serde(rename = "type", default, borrow)]
    pub kind: Option<Text<'a>>,
}

#[derive(Debug, Deserialize)]
pub struct Repository<'a> {
    pub id: u64,
    #[serde(borrow)]
    pub name: Text<'a>,
    #[serde(borrow)]
    pub full_name: Option<Text<'a>>,
    #[serde(borrow)]
    pub owner: User<'a>,
}

#[derive(Debug, Deserialize)]
pub struct InstallationRef {
    pub id: u64,
}

/// Fields every event may carry.
#[derive(Debug, Deserialize)]
pub struct Envelope<'a> {
    #[serde(borrow)]
    pub action: Option<Text<'a>>,
    #[serde(borrow)]
    pub sender: Option<User<'a>>,
    pub installation: Option<InstallationRef>,
}

#[derive(Debug, Deserialize)]
pub struct GitRef<'a> {
    #[serde(borrow)]
    pub sha: Text<'a>,
    #[serde(rename = "ref", borrow)]
    pub name: Text<'a>,
}

#[derive(Debug, Deserialize)]
pub struct PullRequest<'a> {
    pub number: u64,
    #[serde(default)]
    pub draft: bool,
    #[serde(default)]
    pub merged: Option<bool>,
    #[serde(borrow)]
    pub title: Text<'a>,
    #[serde(borrow)]
    pub user: User<'a>,
    #[serde(borrow)]
    pub head: GitRef<'a>,
    #[serde(borrow)]
    pub base: GitRef<'a>,
}

#[derive(Debug, Deserialize)]
pub struct PullRequestEvent<'a> {
    #[serde(borrow)]
    pub pull_request: PullRequest<'a>,
    #[serde(borrow)]
    pub repository: Repository<'a>,
    #[serde(borrow)]
    pub before: Option<Text<'a>>,
    /// The label added or taken off (`labeled`, `unlabeled`).
    #[serde(default, borrow)]
    pub label: Option<Label<'a>>,
}

/// What an `edited` comment was before: only the body matters.
#[derive(Debug, Deserialize)]
pub struct EditedEvent<'a> {
    #[serde(default, borrow)]
    pub changes: Option<Changes<'a>>,
}

#[derive(Debug, Deserialize)]
pub struct Changes<'a> {
    #[serde(default, borrow)]
    pub body: Option<Change<'a>>,
    /// A pull request's base branch changed (`pull_request.edited`); the new base is in
    /// the pull request.
    #[serde(default, borrow)]
    pub base: Option<BaseChange<'a>>,
}

/// The base a PR was moved from. Its commit tells what the head's review read (the PR's
/// changes against it); an edit without it is still a move.
#[derive(Debug, Deserialize)]
pub struct BaseChange<'a> {
    #[serde(default, borrow)]
    pub sha: Option<Change<'a>>,
}

#[derive(Debug, Deserialize)]
pub struct Change<'a> {
    #[serde(borrow)]
    pub from: Text<'a>,
}

#[derive(Debug, Deserialize)]
pub struct Label<'a> {
    #[serde(borrow)]
    pub name: Text<'a>,
}

#[derive(Debug, Deserialize)]
pub struct Issue<'a> {
    pub number: u64,
    #[serde(default, borrow)]
    pub title: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub body: Option<Text<'a>>,
    /// Present (an object of links) only when the issue is a pull request; only its
    /// presence matters, so its contents are skipped.
    pub pull_request: Option<IgnoredAny>,
}

#[derive(Debug, Deserialize)]
pub struct IssueComment<'a> {
    pub id: u64,
    #[serde(borrow)]
    pub user: User<'a>,
    #[serde(default, borrow)]
    pub body: Option<Text<'a>>,
    #[serde(borrow)]
    pub html_url: Text<'a>,
    #[serde(borrow)]
    pub created_at: Text<'a>,
}

#[derive(Debug, Deserialize)]
pub struct IssueCommentEvent<'a> {
    #[serde(borrow)]
    pub issue: Issue<'a>,
    #[serde(borrow)]
    pub comment: IssueComment<'a>,
    #[serde(borrow)]
    pub repository: Repository<'a>,
}

#[derive(Debug, Deserialize)]
pub struct PullRequestNumber {
    pub number: u64,
}

#[derive(Debug, Deserialize)]
pub struct ReviewComment<'a> {
    pub id: u64,
    #[serde(borrow)]
    pub user: User<'a>,
    #[serde(default, borrow)]
    pub body: Option<Text<'a>>,
    #[serde(borrow)]
    pub html_url: Text<'a>,
    #[serde(borrow)]
    pub created_at: Text<'a>,
    pub in_reply_to_id: Option<u64>,
    #[serde(borrow)]
    pub path: Text<'a>,
    pub line: Option<u64>,
    pub start_line: Option<u64>,
    #[serde(borrow)]
    pub side: Option<Text<'a>>,
    #[serde(borrow)]
    pub diff_hunk: Option<Text<'a>>,
    #[serde(borrow)]
    pub commit_id: Option<Text<'a>>,
    pub pull_request_review_id: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub struct ReviewCommentEvent<'a> {
    #[serde(borrow)]
    pub comment: ReviewComment<'a>,
    pub pull_request: PullRequestNumber,
    #[serde(borrow)]
    pub repository: Repository<'a>,
}

#[derive(Debug, Deserialize)]
pub struct Review<'a> {
    pub id: u64,
    #[serde(borrow)]
    pub user: User<'a>,
    #[serde(default, borrow)]
    pub body: Option<Text<'a>>,
    #[serde(borrow)]
    pub html_url: Text<'a>,
    #[serde(borrow)]
    pub submitted_at: Option<Text<'a>>,
}

#[derive(Debug, Deserialize)]
pub struct ReviewEvent<'a> {
    #[serde(borrow)]
    pub review: Review<'a>,
    pub pull_request: PullRequestNumber,
    #[serde(borrow)]
    pub repository: Repository<'a>,
}

/// `check_run` or `check_suite` (`rerequested`): the check someone asked to run again, or
/// "Re-run all checks" on the App's suite of a commit. One envelope, since the two events
/// differ only in the name of the key that holds the check.
#[derive(Debug, Deserialize)]
pub struct CheckEvent<'a> {
    #[serde(rename = "check_run", alias = "check_suite", borrow)]
    pub check: Check<'a>,
    #[serde(borrow)]
    pub repository: Repository<'a>,
    /// `check_run` `requested_action`: the button pressed.
    #[serde(default, borrow)]
    pub requested_action: Option<RequestedAction<'a>>,
}

#[derive(Debug, Deserialize)]
pub struct RequestedAction<'a> {
    #[serde(borrow)]
    pub identifier: Text<'a>,
}

/// A check run or a check suite: what it is on, and which PRs GitHub names for it.
#[derive(Debug, Deserialize)]
pub struct Check<'a> {
    pub id: u64,
    /// A run's name; a suite has none.
    #[serde(default, borrow)]
    pub name: Option<Text<'a>>,
    #[serde(borrow)]
    pub head_sha: Text<'a>,
    /// What the App that made a run put there; GitHub sends `""` or `null` for none.
    #[serde(default, borrow)]
    pub external_id: Option<Text<'a>>,
    /// The PRs whose head branch is in this repository (none for a fork's).
    #[serde(default)]
    pub pull_requests: Vec<PullRequestNumber>,
    /// A suite's branch. GitHub names no PR on the merge queue's commits; their branch
    /// does.
    #[serde(default, borrow)]
    pub head_branch: Option<Text<'a>>,
    /// A run's suite, which names the run's branch.
    #[serde(default, borrow)]
    pub check_suite: Option<CheckSuite<'a>>,
}

impl Check<'_> {
    /// The branch the checked commit was pushed to, when GitHub names it.
    pub fn branch(&self) -> Option<&str> {
        let suite = self
            .check_suite
            .as_ref()
            .and_then(|s| s.head_branch.as_ref());
        self.head_branch.as_ref().or(suite).map(Text::as_str)
    }
}

#[derive(Debug, Deserialize)]
pub struct CheckSuite<'a> {
    #[serde(default, borrow)]
    pub head_branch: Option<Text<'a>>,
}

#[derive(Debug, Deserialize)]
pub struct ThreadComment {
    pub id: u64,
}

#[derive(Debug, Deserialize)]
pub struct Thread {
    #[serde(default)]
    pub comments: Vec<ThreadComment>,
}

/// `merge_group`: the commit GitHub's merge queue made to test a queued PR.
#[derive(Debug, Deserialize)]
pub struct MergeGroupEvent<'a> {
    #[serde(borrow)]
    pub merge_group: MergeGroup<'a>,
    #[serde(borrow)]
    pub repository: Repository<'a>,
}

#[derive(Debug, Deserialize)]
pub struct MergeGroup<'a> {
    /// The commit the required checks are asked for.
    #[serde(borrow)]
    pub head_sha: Text<'a>,
    /// `refs/heads/gh-readonly-queue/{base}/pr-{number}-{head sha}`: the PR it tests.
    #[serde(borrow)]
    pub head_ref: Text<'a>,
}

#[derive(Debug, Deserialize)]
pub struct ReviewThreadEvent<'a> {
    pub thread: Thread,
    pub pull_request: PullRequestNumber,
    #[serde(borrow)]
    pub repository: Repository<'a>,
}

#[derive(Debug, Deserialize)]
pub struct RepositoryName<'a> {
    #[serde(default)]
    pub id: u64,
    #[serde(borrow)]
    pub full_name: Text<'a>,
}

#[derive(Debug, Deserialize)]
pub struct InstallationDetail<'a> {
    pub id: u64,
    #[serde(borrow)]
    pub account: User<'a>,
}

#[derive(Debug, Deserialize)]
pub struct InstallationEvent<'a> {
    #[serde(borrow)]
    pub installation: InstallationDetail<'a>,
    #[serde(default, borrow)]
    pub repositories: Option<Vec<RepositoryName<'a>>>,
    #[serde(default, borrow)]
    pub repositories_added: Vec<RepositoryName<'a>>,
    #[serde(default, borrow)]
    pub repositories_removed: Vec<RepositoryName<'a>>,
}
