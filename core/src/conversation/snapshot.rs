//! One job's view of a pull request (or a plain issue): fetched once, shared by the
//! triggering comment and every comment the sweep picks up, so a job never asks GitHub the
//! same thing twice.

use super::error::ConversationError;
use crate::job::{RepoRef, Topic};
use crate::mention::Handles;
use crate::ports::github::{
    GitHub, GitHubError, IssueComment, Listing, PageLimit, PullRequest, RepoScope, Review,
    ReviewComment,
};
use crate::repo::LoadedConfig;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use time::OffsetDateTime;

/// GitHub's largest page: the oldest comments of a PR, where the roots of its finding
/// threads are. On most PRs this is every comment and the only call a listing makes.
pub const LISTING: PageLimit = PageLimit::items(100);

/// When the first page is not all: the newest comments, read with GitHub's `since`
/// (updated at or after) from [`RECENT_WINDOW`] before the comment being answered. The
/// "already answered" check, the pending-work sweep and a thread's latest turns all live
/// there; reading only the oldest page on a PR with hundreds of comments would miss
/// Parley's own reply (and post twice) and every recent question (and lose them).
pub const RECENT: PageLimit = PageLimit::pages(10);

/// How far back [`RECENT`] reads before the comment being answered.
pub const RECENT_WINDOW: time::Duration = time::Duration::days(14);

/// The PR's inline comments: the oldest page, and the newest ones when there are more.
pub async fn list_review_comments(
    github: &dyn GitHub,
    scope: &RepoScope,
    number: u64,
    around: Option<OffsetDateTime>,
) -> Result<Listing<ReviewComment>, GitHubError> {
    let first = github
        .list_review_comments(scope, number, None, LISTING)
        .await?;
    if !first.truncated {
        return Ok(first);
    }
    let recent = github
        .list_review_comments(scope, number, Some(recent_since(around)), RECENT)
        .await?;
    Ok(merge_listings(first, recent, |c| c.id))
}

/// The PR's (or issue's) top-level comments: the oldest page, and the newest ones when
/// there are more.
pub async fn list_issue_comments(
    github: &dyn GitHub,
    scope: &RepoScope,
    number: u64,
    around: Option<OffsetDateTime>,
) -> Result<Listing<IssueComment>, GitHubError> {
    let first = github
        .list_issue_comments(scope, number, None, LISTING)
        .await?;
    if !first.truncated {
        return Ok(first);
    }
    let recent = github
        .list_issue_comments(scope, number, Some(recent_since(around)), RECENT)
        .await?;
    Ok(merge_listings(first, recent, |c| c.id))
}

fn recent_since(around: Option<OffsetDateTime>) -> OffsetDateTime {
    around.unwrap_or_else(OffsetDateTime::now_utc) - RECENT_WINDOW
}

/// Both listings, each comment once, in id (creation) order. Still `truncated` when the
/// newest listing was cut too: then comments between the two were not read.
fn merge_listings<T>(first: Listing<T>, recent: Listing<T>, id: impl Fn(&T) -> u64) -> Listing<T> {
    let truncated = recent.truncated;
    let mut by_id: std::collections::BTreeMap<u64, T> = std::collections::BTreeMap::new();
    for item in first.items.into_iter().chain(recent.items) {
        by_id.insert(id(&item), item);
    }
    Listing {
        items: by_id.into_values().collect(),
        truncated,
    }
}

/// The ref that means "the repository's default branch" without knowing its name: the
/// contents API reads the default branch when no `ref` is given, and the adapter omits an
/// empty one. A plain issue's job carries no branch, and learning the name would cost a
/// call per job.
pub const DEFAULT_BRANCH: &str = "";

/// What the comments are written on.
#[derive(Debug, Clone)]
pub enum Subject {
    Pull(Box<PullRequest>),
    /// A plain issue. The job's copy of its title and description is all Parley reads
    /// about it: there is no diff, base branch or author to fetch, and the `GitHub` port
    /// has no issue lookup, so nothing is asked of GitHub for it.
    Issue(Option<Topic>),
}

pub struct PrSnapshot {
    pub scope: RepoScope,
    pub repo_ref: RepoRef,
    /// The repository's store key (its id: see [`crate::tenancy`]); `scope` has its name.
    pub repo: String,
    /// Its organisation's memory partition, where organisation-wide learnings live.
    pub org: String,
    /// The PR or issue number (they share one sequence per repository).
    pub number: u64,
    pub subject: Subject,
    pub config: Arc<LoadedConfig>,
    /// The handles that summon Parley here (slug, global aliases, `claude` if opted in).
    pub handles: Handles,
    /// What outgoing text must never mention: the summoning handles plus `@claude`
    /// always, so a reply cannot wake another bot that answers to it.
    pub silenced: Handles,
    review_comments: Mutex<Option<Arc<Listing<ReviewComment>>>>,
    issue_comments: Mutex<Option<Arc<Listing<IssueComment>>>>,
    /// The PR's reviews (one page), for the sweep's review bodies. Empty on a plain issue
    /// and when listing them failed: the sweep then goes on without them, and nothing else
    /// reads them, so they are never fetched again later in the job.
    reviews: Mutex<Arc<Vec<Review>>>,
    /// Comments answered during this job, which the listings (read before) cannot show.
    answered: Mutex<HashSet<u64>>,
}

impl PrSnapshot {
    pub fn new(
        scope: RepoScope,
        repo_ref: RepoRef,
        number: u64,
        subject: Subject,
        config: Arc<LoadedConfig>,
        handles: Handles,
        silenced: Handles,
    ) -> Self {
        let tenant = scope.tenant();
        PrSnapshot {
            repo: tenant.repo,
            org: tenant.org,
            number,
            scope,
            repo_ref,
            subject,
            config,
            handles,
            silenced,
            review_comments: Mutex::new(None),
            issue_comments: Mutex::new(None),
            reviews: Mutex::new(Arc::new(Vec::new())),
            answered: Mutex::new(HashSet::new()),
        }
    }

    /// The pull request, unless the comments are on a plain issue.
    pub fn pull(&self) -> Option<&PullRequest> {
        match &self.subject {
            Subject::Pull(pr) => Some(pr),
            Subject::Issue(_) => None,
        }
    }

    /// The PR author's login, when GitHub still knows the account. `None` on a plain
    /// issue: the job does not carry the issue's author, and telling would cost a call.
    pub fn author(&self) -> Option<&str> {
        self.pull()
            .and_then(|pr| pr.user.as_ref())
            .map(|u| u.login.as_str())
    }

    /// The PR's inline comments (see [`list_review_comments`]), listed once per job.
    pub async fn review_comments(
        &self,
        github: &dyn GitHub,
    ) -> Result<Arc<Listing<ReviewComment>>, ConversationError> {
        if let Some(listing) = lock(&self.review_comments).clone() {
            return Ok(listing);
        }
        let listing = Arc::new(list_review_comments(github, &self.scope, self.number, None).await?);
        *lock(&self.review_comments) = Some(listing.clone());
        Ok(listing)
    }

    /// The PR's top-level comments (see [`list_issue_comments`]), listed once per job.
    pub async fn issue_comments(
        &self,
        github: &dyn GitHub,
    ) -> Result<Arc<Listing<IssueComment>>, ConversationError> {
        if let Some(listing) = lock(&self.issue_comments).clone() {
            return Ok(listing);
        }
        let listing = Arc::new(list_issue_comments(github, &self.scope, self.number, None).await?);
        *lock(&self.issue_comments) = Some(listing.clone());
        Ok(listing)
    }

    /// Pre-load a listing fetched concurrently with the PR.
    pub fn preload_review_comments(&self, listing: Listing<ReviewComment>) {
        *lock(&self.review_comments) = Some(Arc::new(listing));
    }

    pub fn preload_issue_comments(&self, listing: Listing<IssueComment>) {
        *lock(&self.issue_comments) = Some(Arc::new(listing));
    }

    pub fn preload_reviews(&self, listing: Listing<Review>) {
        *lock(&self.reviews) = Arc::new(listing.items);
    }

    /// The reviews listed with the PR (none on a plain issue or after a failed listing).
    pub fn reviews(&self) -> Arc<Vec<Review>> {
        lock(&self.reviews).clone()
    }

    pub fn mark_answered(&self, comment_id: u64) {
        lock(&self.answered).insert(comment_id);
    }

    pub fn was_answered(&self, comment_id: u64) -> bool {
        lock(&self.answered).contains(&comment_id)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
