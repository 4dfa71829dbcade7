//! The GitHub port: everything Parley reads from or writes to GitHub.
//!
//! Workers depend on this trait, never on an HTTP client, so tests can put a fake behind it
//! and the domain stays free of I/O. The adapter (`parley-github`) authenticates as the App,
//! caches installation tokens, paginates and retries; none of that leaks in here.
//!
//! The models mirror GitHub's JSON field names so the adapter deserialises straight into
//! them, but they carry only the fields Parley uses. Every field GitHub may omit or send as
//! `null` is an `Option` or defaults, so a new or missing field never fails a decode.

use crate::job::{Actor, RepoRef};
use async_trait::async_trait;
use serde::{Deserialize, Deserializer, Serialize};
use std::time::Duration;
use time::OffsetDateTime;

// --- errors ------------------------------------------------------------------------------

/// What went wrong talking to GitHub, split by what the caller can do about it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GitHubError {
    /// 404: the thing is absent or the App cannot see it (GitHub does not tell which).
    /// A deleted parent comment lands here.
    #[error("not found: {0}")]
    NotFound(String),
    /// 410: the thing existed and was removed (or the feature is disabled on the repo).
    #[error("gone: {0}")]
    Gone(String),
    /// 422: GitHub understood the request and refused it, e.g. an inline comment on a line
    /// that is not part of the diff. `errors` carries GitHub's details verbatim.
    #[error("unprocessable: {message}{}", describe_details(.errors))]
    Unprocessable {
        message: String,
        errors: Vec<ApiErrorDetail>,
    },
    /// Primary or secondary rate limit, still in force after the client's wait budget.
    /// `retry_after` is GitHub's own estimate, when it gave one: use it to delay a requeue.
    #[error("rate limited by GitHub{}", describe_retry_after(.retry_after))]
    RateLimited { retry_after: Option<Duration> },
    /// 401 even with a freshly minted token: wrong App id or key, or a clock far off.
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// 403 that is not a rate limit: the App lacks a permission or the repo blocks it.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// Any other 4xx (400, 409, …): the request itself was wrong for GitHub.
    #[error("rejected with {status}: {message}")]
    Rejected { status: u16, message: String },
    /// 5xx after the retries the request was allowed, or at once for a write that a retry
    /// could duplicate. For such a write the caller must look on GitHub (the hidden marker)
    /// before posting again: the first attempt may have gone through.
    #[error("GitHub server error {status}: {message}")]
    Server { status: u16, message: String },
    /// The connection failed or timed out, after the retries the request was allowed.
    #[error("network error: {0}")]
    Network(String),
    /// Credentials or settings are missing or malformed. Retrying cannot help.
    #[error("GitHub client misconfigured: {0}")]
    Config(String),
    /// The caller asked for something that cannot be expressed as a request (an empty
    /// repository name, a `..` path segment). A bug on our side, never GitHub's.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// GitHub answered 2xx with a body that does not fit the model.
    #[error("could not decode GitHub's response: {0}")]
    Decode(String),
}

impl GitHubError {
    /// What failed, in words fit for a public check run or comment; the `Display` text
    /// (GitHub's message, URLs of a GitHub Enterprise host) goes to the logs only.
    pub fn public_reason(&self) -> &'static str {
        match self {
            GitHubError::NotFound(_) | GitHubError::Gone(_) => {
                "something Parley needed on GitHub was not found"
            }
            GitHubError::Unprocessable { .. } | GitHubError::Rejected { .. } => {
                "GitHub refused one of Parley's requests"
            }
            GitHubError::RateLimited { .. } => "GitHub rate-limited Parley",
            GitHubError::Unauthorized(_) | GitHubError::Forbidden(_) => {
                "GitHub refused Parley's access (check the App's permissions)"
            }
            GitHubError::Server { .. } => "GitHub had a server error",
            GitHubError::Network(_) => "GitHub could not be reached",
            GitHubError::Config(_) | GitHubError::InvalidRequest(_) => {
                "Parley's GitHub settings are incomplete"
            }
            GitHubError::Decode(_) => "GitHub's answer could not be read",
        }
    }

    /// Worth retrying later (requeue with a delay): the failure was GitHub's load or the
    /// network, not the request.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            GitHubError::RateLimited { .. } | GitHubError::Server { .. } | GitHubError::Network(_)
        )
    }

    /// Parley's credentials or settings are at fault, not the request: fixing them and
    /// redriving the job helps.
    pub fn is_config(&self) -> bool {
        matches!(self, GitHubError::Config(_) | GitHubError::Unauthorized(_))
    }

    /// The target no longer exists: 404 or 410. Callers treat both as "absent".
    pub fn is_absent(&self) -> bool {
        matches!(self, GitHubError::NotFound(_) | GitHubError::Gone(_))
    }
}

fn describe_details(errors: &[ApiErrorDetail]) -> String {
    if errors.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = errors.iter().map(ApiErrorDetail::to_string).collect();
    format!(" ({})", parts.join("; "))
}

fn describe_retry_after(retry_after: &Option<Duration>) -> String {
    match retry_after {
        Some(wait) => format!(", retry after {} s", wait.as_secs()),
        None => String::new(),
    }
}

/// One entry of the `errors` array in a GitHub error body.
///
/// GitHub sends either objects (`{"resource","field","code","message"}`) or bare strings
/// (`"Pull request review thread line must be part of the diff"`); both end up here, a bare
/// string as `message`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ApiErrorDetail {
    pub resource: Option<String>,
    pub field: Option<String>,
    pub code: Option<String>,
    pub message: Option<String>,
}

impl std::fmt::Display for ApiErrorDetail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<&str> = [&self.resource, &self.field, &self.code, &self.message]
            .into_iter()
            .filter_map(|part| part.as_deref())
            .collect();
        f.write_str(&parts.join(" "))
    }
}

impl<'de> Deserialize<'de> for ApiErrorDetail {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Text(String),
            Object {
                #[serde(default)]
                resource: Option<String>,
                #[serde(default)]
                field: Option<String>,
                #[serde(default)]
                code: Option<String>,
                #[serde(default)]
                message: Option<String>,
            },
            // Anything else (a number, a nested array) is kept as its JSON text so no detail
            // GitHub sends is lost or fails the decode of the whole error.
            Other(serde_json::Value),
        }
        Ok(match Wire::deserialize(deserializer)? {
            Wire::Text(message) => ApiErrorDetail {
                message: Some(message),
                ..Default::default()
            },
            Wire::Object {
                resource,
                field,
                code,
                message,
            } => ApiErrorDetail {
                resource,
                field,
                code,
                message,
            },
            Wire::Other(value) => ApiErrorDetail {
                message: Some(value.to_string()),
                ..Default::default()
            },
        })
    }
}

// --- scoping and paging ------------------------------------------------------------------

/// A repository as seen through one App installation. Every repository call carries one,
/// so a token for one tenant can never be used on another's repository.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RepoScope {
    pub installation_id: u64,
    pub owner: String,
    pub name: String,
    /// GitHub's ids of the repository and its owner, 0 when unknown (a scope typed by
    /// hand): what the store keys the repository's records by ([`RepoScope::tenant`]).
    pub repo_id: u64,
    pub owner_id: u64,
}

impl RepoScope {
    pub fn new(installation_id: u64, owner: impl Into<String>, name: impl Into<String>) -> Self {
        RepoScope {
            installation_id,
            owner: owner.into(),
            name: name.into(),
            repo_id: 0,
            owner_id: 0,
        }
    }

    /// The same scope with GitHub's ids, once they are known.
    pub fn with_ids(mut self, repo_id: u64, owner_id: u64) -> Self {
        self.repo_id = repo_id;
        self.owner_id = owner_id;
        self
    }

    /// From the repository a job names and the installation the webhook came through.
    pub fn for_repo(installation_id: u64, repo: &RepoRef) -> Self {
        RepoScope::new(installation_id, repo.owner.clone(), repo.name.clone())
            .with_ids(repo.id, repo.owner_id)
    }

    /// Where this repository's records live in the store.
    pub fn tenant(&self) -> crate::tenancy::Tenant {
        crate::tenancy::Tenant::of(self.repo_id, self.owner_id, &self.owner, &self.name)
    }

    /// `owner/name`.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }
}

/// How much of a paginated listing to fetch. Both bounds always apply, so no listing is
/// ever unbounded: a PR with 3 000 review comments costs at most what the caller allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLimit {
    pub max_items: usize,
    pub max_pages: usize,
}

impl PageLimit {
    /// GitHub's largest page; asking for more per page is silently capped by GitHub.
    pub const MAX_PER_PAGE: usize = 100;

    /// At most `max_items` items. Pages are requested `min(max_items, 100)` at a time, so
    /// GitHub normally needs `ceil(max_items / 100)` of them; should it return short pages,
    /// paging goes on, but never past `max_items` pages (each page must add an item, an
    /// empty page ends the listing).
    pub const fn items(max_items: usize) -> Self {
        PageLimit {
            max_items,
            max_pages: max_items,
        }
    }

    /// At most `max_pages` full pages of 100.
    pub const fn pages(max_pages: usize) -> Self {
        PageLimit {
            max_items: max_pages.saturating_mul(Self::MAX_PER_PAGE),
            max_pages,
        }
    }

    /// Items requested per page: never more than the caller wants in total.
    pub fn per_page(&self) -> usize {
        self.max_items.clamp(1, Self::MAX_PER_PAGE)
    }
}

/// A listing cut at its [`PageLimit`]. `truncated` says GitHub had more, so a caller can
/// report "N files not reviewed" instead of silently working on part of the data.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing<T> {
    pub items: Vec<T>,
    pub truncated: bool,
}

// --- people and apps ---------------------------------------------------------------------

/// A GitHub account as it appears on comments, PRs and reviews.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct User {
    pub login: String,
    #[serde(default)]
    pub id: u64,
    /// `User`, `Bot` or `Organization`.
    #[serde(rename = "type", default)]
    pub kind: String,
}

impl User {
    /// The domain's view of an author, for gates such as "never answer a bot".
    pub fn to_actor(&self) -> Actor {
        Actor {
            login: self.login.clone(),
            kind: self.kind.clone(),
        }
    }
}

/// The GitHub App Parley runs as (`GET /app`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct App {
    pub id: u64,
    /// URL name of the App; the bot account is `<slug>[bot]`.
    #[serde(default)]
    pub slug: Option<String>,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub html_url: String,
    #[serde(default)]
    pub owner: Option<User>,
}

impl App {
    /// The login the App's comments are authored by, used to recognise its own comments.
    pub fn bot_login(&self) -> Option<String> {
        self.slug.as_ref().map(|slug| format!("{slug}[bot]"))
    }
}

/// Repository access levels, ordered so `level >= Permission::Write` reads as intended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Permission {
    None,
    Read,
    Triage,
    Write,
    Maintain,
    Admin,
}

impl Permission {
    /// A built-in level by name; anything else is `None`, because an access gate must
    /// fail closed on a value it does not understand.
    pub fn from_name(name: &str) -> Permission {
        match name {
            "admin" => Permission::Admin,
            "maintain" => Permission::Maintain,
            "write" => Permission::Write,
            "triage" => Permission::Triage,
            "read" => Permission::Read,
            _ => Permission::None,
        }
    }
}

impl<'de> Deserialize<'de> for Permission {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = Option::<String>::deserialize(deserializer)?;
        Ok(name.map_or(Permission::None, |name| Permission::from_name(&name)))
    }
}

/// `GET /orgs/{org}/memberships/{username}`: someone's membership of an organisation.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct OrgMembership {
    /// `active`, or `pending` for an invitation not yet accepted.
    pub state: String,
    /// `admin`, `member` or `billing_manager`.
    pub role: String,
}

impl OrgMembership {
    /// An owner of the organisation, and not only invited to be one.
    pub fn is_active_admin(&self) -> bool {
        self.state == "active" && self.role == "admin"
    }
}

/// `GET /repos/{owner}/{repo}/collaborators/{username}/permission`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CollaboratorPermission {
    /// GitHub's legacy level: only `admin`, `write`, `read` or `none` (maintain shows as
    /// write, triage as read).
    pub permission: Permission,
    /// The finer role (`maintain`, `triage`, or a custom role's name), when GitHub sent it.
    #[serde(default)]
    pub role_name: Option<String>,
    #[serde(default)]
    pub user: Option<User>,
}

impl CollaboratorPermission {
    /// The most precise level known: `role_name` when it names a built-in role (it tells
    /// maintain from write, triage from read), the legacy `permission` otherwise. Custom
    /// roles fall back to `permission`, which GitHub maps to their base level.
    pub fn level(&self) -> Permission {
        match self.role_name.as_deref().map(Permission::from_name) {
            Some(Permission::None) | None => self.permission,
            Some(role) => role,
        }
    }
}

// --- pull requests -----------------------------------------------------------------------

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
    /// longer an ancestor (`diverged`), and an incremental review must fall back to full.
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

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CommitSummary {
    pub sha: String,
    #[serde(default)]
    pub commit: Option<CommitDetail>,
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

// --- reviews and review comments ---------------------------------------------------------

/// Which side of a diff a line number refers to: `Right` is the new file, `Left` the old.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum DiffSide {
    Left,
    Right,
}

/// An inline comment on a PR's diff, or a reply in such a thread.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ReviewComment {
    pub id: u64,
    #[serde(default)]
    pub node_id: String,
    #[serde(default)]
    pub pull_request_review_id: Option<u64>,
    /// Set on replies: the comment this one answers (GitHub points replies at the root).
    #[serde(default)]
    pub in_reply_to_id: Option<u64>,
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub diff_hunk: String,
    /// Line in the current diff; `None` when the comment is outdated.
    #[serde(default)]
    pub line: Option<u32>,
    #[serde(default)]
    pub original_line: Option<u32>,
    #[serde(default)]
    pub start_line: Option<u32>,
    #[serde(default)]
    pub original_start_line: Option<u32>,
    #[serde(default)]
    pub side: Option<DiffSide>,
    #[serde(default)]
    pub start_side: Option<DiffSide>,
    #[serde(default)]
    pub commit_id: String,
    #[serde(default)]
    pub original_commit_id: String,
    /// `None` for comments by deleted accounts.
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub body: String,
    #[serde(default)]
    pub html_url: String,
    #[serde(default)]
    pub author_association: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// A submitted (or pending) review.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Review {
    pub id: u64,
    #[serde(default)]
    pub node_id: String,
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub body: String,
    /// `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`, `DISMISSED` or `PENDING`.
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub html_url: String,
    #[serde(default)]
    pub commit_id: Option<String>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub submitted_at: Option<OffsetDateTime>,
}

/// A review to create in one call: summary body plus inline comments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewReview {
    /// The head SHA the review was computed for. Set it: GitHub then rejects the review if
    /// the lines no longer exist instead of placing comments on a newer commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit_id: Option<String>,
    pub body: String,
    pub event: ReviewEvent,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub comments: Vec<NewReviewComment>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReviewEvent {
    Comment,
    Approve,
    RequestChanges,
}

/// An inline comment addressed by file line (not the deprecated diff `position`).
/// A multi-line comment sets `start_line` (and `start_side`) below `line`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewReviewComment {
    pub path: String,
    pub body: String,
    pub line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side: Option<DiffSide>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_side: Option<DiffSide>,
}

/// A review thread as GraphQL sees it; its `id` is what `resolveReviewThread` takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewThread {
    pub id: String,
    pub is_resolved: bool,
}

// --- issue comments ----------------------------------------------------------------------

/// A top-level comment on a PR or issue.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IssueComment {
    pub id: u64,
    #[serde(default)]
    pub node_id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub body: String,
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default)]
    pub html_url: String,
    #[serde(default)]
    pub author_association: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

// --- contents ----------------------------------------------------------------------------

/// A file read at a ref, already base64-decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileContent {
    pub path: String,
    /// Blob SHA: a cheap cache key for parsed config or guidelines.
    pub sha: String,
    pub bytes: Vec<u8>,
}

impl FileContent {
    /// The content as text, or `None` when it is not UTF-8 (a binary file under a
    /// guideline's name should be skipped, not fed to a prompt as mojibake).
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}

// --- check runs --------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Queued,
    InProgress,
    Completed,
    Waiting,
    Requested,
    Pending,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckConclusion {
    Success,
    Failure,
    Neutral,
    Cancelled,
    Skipped,
    TimedOut,
    ActionRequired,
    Stale,
}

/// The text a check run shows. GitHub caps `summary` and `text` at 65 535 characters each
/// and answers 422 beyond that.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckRunOutput {
    pub title: String,
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewCheckRun {
    pub name: String,
    pub head_sha: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<CheckStatus>,
    /// Setting a conclusion completes the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conclusion: Option<CheckConclusion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details_url: Option<String>,
    /// Our own id for the run (e.g. the review run key), echoed back by GitHub.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    pub started_at: Option<OffsetDateTime>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    pub completed_at: Option<OffsetDateTime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<CheckRunOutput>,
}

/// Fields to change on a check run; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CheckRunUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<CheckStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conclusion: Option<CheckConclusion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details_url: Option<String>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    pub completed_at: Option<OffsetDateTime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<CheckRunOutput>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckRun {
    pub id: u64,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub head_sha: String,
    pub status: CheckStatus,
    #[serde(default)]
    pub conclusion: Option<CheckConclusion>,
    #[serde(default)]
    pub html_url: Option<String>,
    #[serde(default)]
    pub details_url: Option<String>,
    #[serde(default)]
    pub external_id: Option<String>,
}

// --- reactions ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReactionContent {
    #[serde(rename = "+1")]
    ThumbsUp,
    #[serde(rename = "-1")]
    ThumbsDown,
    Laugh,
    Confused,
    Heart,
    Hooray,
    Rocket,
    Eyes,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Reaction {
    pub id: u64,
    pub content: ReactionContent,
    #[serde(default)]
    pub user: Option<User>,
}

// --- the port ----------------------------------------------------------------------------

/// Every GitHub operation Parley performs. Repository calls are scoped by a [`RepoScope`]
/// (installation + repository); the adapter picks the installation's token.
///
/// Write semantics callers rely on: creating a comment, reply, review or check run is
/// attempted once when GitHub may have received it (a 5xx or a broken connection after the
/// request was sent), because a retry could post it twice. Such a failure comes back as
/// [`GitHubError::Server`] or [`GitHubError::Network`]; look for the hidden marker on GitHub
/// before trying again. Reads, edits, reactions, reviewer requests and thread resolution are
/// idempotent and retried.
#[async_trait]
pub trait GitHub: Send + Sync {
    // --- the App ---

    /// The App itself (`GET /app`), for the bot's slug and login.
    async fn get_app(&self) -> Result<App, GitHubError>;

    /// The id of the App's installation on `owner/name` (`GET /repos/{owner}/{repo}/installation`,
    /// as the App): how `parley review` run by hand finds the installation a webhook would
    /// have named. A 404 means the App is not installed there.
    async fn repo_installation(&self, owner: &str, name: &str) -> Result<u64, GitHubError>;

    // --- pull requests ---

    async fn get_pull_request(
        &self,
        repo: &RepoScope,
        number: u64,
    ) -> Result<PullRequest, GitHubError>;

    /// Changed files with their patches (GitHub lists at most 3 000 files per PR).
    async fn list_pull_request_files(
        &self,
        repo: &RepoScope,
        number: u64,
        limit: PageLimit,
    ) -> Result<Listing<ChangedFile>, GitHubError>;

    /// What changed between two commits (`base...head`): commits and files.
    async fn compare_commits(
        &self,
        repo: &RepoScope,
        base: &str,
        head: &str,
    ) -> Result<Comparison, GitHubError>;

    /// Ask people or teams for a review. Already-requested reviewers are not an error.
    async fn request_reviewers(
        &self,
        repo: &RepoScope,
        number: u64,
        request: &ReviewerRequest,
    ) -> Result<PullRequest, GitHubError>;

    // --- reviews ---

    async fn list_reviews(
        &self,
        repo: &RepoScope,
        number: u64,
        limit: PageLimit,
    ) -> Result<Listing<Review>, GitHubError>;

    /// One review with a body and inline comments. A 422 means GitHub refused it (often a
    /// line outside the diff); nothing was posted.
    async fn create_review(
        &self,
        repo: &RepoScope,
        number: u64,
        review: &NewReview,
    ) -> Result<Review, GitHubError>;

    /// The inline comments a review posted, to learn the ids GitHub gave them.
    async fn list_review_comments_for_review(
        &self,
        repo: &RepoScope,
        number: u64,
        review_id: u64,
        limit: PageLimit,
    ) -> Result<Listing<ReviewComment>, GitHubError>;

    // --- review comments (inline) ---

    /// The PR's inline comments, oldest first; `since` keeps those updated at or after it.
    async fn list_review_comments(
        &self,
        repo: &RepoScope,
        number: u64,
        since: Option<OffsetDateTime>,
        limit: PageLimit,
    ) -> Result<Listing<ReviewComment>, GitHubError>;

    async fn get_review_comment(
        &self,
        repo: &RepoScope,
        comment_id: u64,
    ) -> Result<ReviewComment, GitHubError>;

    /// A single inline comment outside a review, on `commit_id`.
    async fn create_review_comment(
        &self,
        repo: &RepoScope,
        number: u64,
        commit_id: &str,
        comment: &NewReviewComment,
    ) -> Result<ReviewComment, GitHubError>;

    /// Answer in the thread of `comment_id` (GitHub attaches a reply to a reply to the
    /// thread's root).
    async fn reply_to_review_comment(
        &self,
        repo: &RepoScope,
        number: u64,
        comment_id: u64,
        body: &str,
    ) -> Result<ReviewComment, GitHubError>;

    async fn update_review_comment(
        &self,
        repo: &RepoScope,
        comment_id: u64,
        body: &str,
    ) -> Result<ReviewComment, GitHubError>;

    // --- review threads (GraphQL) ---

    /// The thread whose first comment has REST id `root_comment_id`, or `None` when no
    /// thread of the PR starts with it (within the first 1 000 threads).
    async fn find_review_thread(
        &self,
        repo: &RepoScope,
        number: u64,
        root_comment_id: u64,
    ) -> Result<Option<ReviewThread>, GitHubError>;

    /// Mark a thread resolved; resolving a resolved thread is a no-op.
    async fn resolve_review_thread(
        &self,
        repo: &RepoScope,
        thread_id: &str,
    ) -> Result<ReviewThread, GitHubError>;

    // --- issue comments (top level) ---

    /// The issue's or PR's comments, oldest first; `since` keeps those updated at or after it.
    async fn list_issue_comments(
        &self,
        repo: &RepoScope,
        number: u64,
        since: Option<OffsetDateTime>,
        limit: PageLimit,
    ) -> Result<Listing<IssueComment>, GitHubError>;

    async fn get_issue_comment(
        &self,
        repo: &RepoScope,
        comment_id: u64,
    ) -> Result<IssueComment, GitHubError>;

    async fn create_issue_comment(
        &self,
        repo: &RepoScope,
        number: u64,
        body: &str,
    ) -> Result<IssueComment, GitHubError>;

    async fn update_issue_comment(
        &self,
        repo: &RepoScope,
        comment_id: u64,
        body: &str,
    ) -> Result<IssueComment, GitHubError>;

    // --- contents and permissions ---

    /// The file at `path` on `git_ref` (branch, tag or SHA). `Ok(None)` when there is no
    /// file there: absent (404), or a directory, submodule or symlink pointing outside the
    /// repository. Guideline and config files are optional, so absence is not an error.
    async fn get_file_contents(
        &self,
        repo: &RepoScope,
        path: &str,
        git_ref: &str,
    ) -> Result<Option<FileContent>, GitHubError>;

    async fn get_collaborator_permission(
        &self,
        repo: &RepoScope,
        username: &str,
    ) -> Result<CollaboratorPermission, GitHubError>;

    /// `username`'s membership of the organisation that owns `repo` (read with `repo`'s
    /// installation). `None` when they are not a member, or when the owner is a user
    /// account. Needs the App's organisation permission "Members: read": without it
    /// GitHub answers 403, [`GitHubError::Forbidden`].
    async fn get_org_membership(
        &self,
        repo: &RepoScope,
        username: &str,
    ) -> Result<Option<OrgMembership>, GitHubError>;

    // --- check runs ---

    async fn create_check_run(
        &self,
        repo: &RepoScope,
        check_run: &NewCheckRun,
    ) -> Result<CheckRun, GitHubError>;

    async fn update_check_run(
        &self,
        repo: &RepoScope,
        check_run_id: u64,
        update: &CheckRunUpdate,
    ) -> Result<CheckRun, GitHubError>;

    /// The check runs named `name` on commit `head_sha` (GitHub's newest first, one page):
    /// how a retry finds the check an attempt created just before it died, instead of
    /// leaving that one "in progress" beside a new one.
    async fn list_check_runs(
        &self,
        repo: &RepoScope,
        head_sha: &str,
        name: &str,
    ) -> Result<Vec<CheckRun>, GitHubError>;

    // --- reactions ---

    /// React to a top-level comment. Reacting twice returns the existing reaction.
    async fn add_issue_comment_reaction(
        &self,
        repo: &RepoScope,
        comment_id: u64,
        content: ReactionContent,
    ) -> Result<Reaction, GitHubError>;

    /// React to an inline comment. Reacting twice returns the existing reaction.
    async fn add_review_comment_reaction(
        &self,
        repo: &RepoScope,
        comment_id: u64,
        content: ReactionContent,
    ) -> Result<Reaction, GitHubError>;

    /// The reactions on an inline comment (who reacted with what): how a 👍 or 👎 on a
    /// finding becomes its outcome.
    async fn list_review_comment_reactions(
        &self,
        repo: &RepoScope,
        comment_id: u64,
        limit: PageLimit,
    ) -> Result<Listing<Reaction>, GitHubError>;

    /// The repository at `sha` as GitHub's gzipped tarball
    /// (`GET /repos/{owner}/{repo}/tarball/{sha}`), refused with
    /// [`GitHubError::InvalidRequest`] when it is over `max_bytes`. What a review reads
    /// beyond the diff comes from it (see [`crate::ports::code`]). Adapters that cannot
    /// serve it say so; the review then goes on from the diff alone.
    async fn download_tarball(
        &self,
        repo: &RepoScope,
        sha: &str,
        max_bytes: u64,
    ) -> Result<Vec<u8>, GitHubError> {
        let _ = (repo, sha, max_bytes);
        Err(GitHubError::Config(
            "this GitHub adapter cannot download repository archives".into(),
        ))
    }
}

/// GitHub sends `null` for many empty strings and lists; treat it as the empty value so
/// callers never juggle `Option<String>` for a body.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_limit_never_unbounded() {
        let by_items = PageLimit::items(250);
        assert_eq!((by_items.max_items, by_items.max_pages), (250, 250));
        assert_eq!(by_items.per_page(), 100);
        assert_eq!(PageLimit::items(20).per_page(), 20);
        let by_pages = PageLimit::pages(2);
        assert_eq!((by_pages.max_items, by_pages.max_pages), (200, 2));
    }

    #[test]
    fn error_details_accept_objects_and_strings() {
        let details: Vec<ApiErrorDetail> = serde_json::from_str(
            r#"[{"resource":"Label","code":"invalid","field":"color"},
                "Pull request review thread line must be part of the diff", 7]"#,
        )
        .unwrap();
        assert_eq!(details[0].field.as_deref(), Some("color"));
        assert_eq!(
            details[1].message.as_deref(),
            Some("Pull request review thread line must be part of the diff")
        );
        assert_eq!(details[2].message.as_deref(), Some("7"));
    }

    #[test]
    fn unknown_permission_fails_closed() {
        let p: CollaboratorPermission =
            serde_json::from_str(r#"{"permission":"superuser","role_name":"custom-x"}"#).unwrap();
        assert_eq!(p.level(), Permission::None);
        let p: CollaboratorPermission =
            serde_json::from_str(r#"{"permission":"write","role_name":"maintain"}"#).unwrap();
        assert_eq!(p.level(), Permission::Maintain);
        assert!(Permission::Admin > Permission::Write && Permission::Triage < Permission::Write);
    }

    #[test]
    fn null_body_is_empty() {
        let c: IssueComment = serde_json::from_str(
            r#"{"id":1,"body":null,"user":null,"created_at":"2011-04-14T16:00:49Z",
                "updated_at":"2011-04-14T16:00:49Z","extra":{"ignored":true}}"#,
        )
        .unwrap();
        assert_eq!(c.body, "");
        assert!(c.user.is_none());
    }
}
