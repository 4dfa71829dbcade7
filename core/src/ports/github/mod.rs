//! The GitHub port: everything Parley reads from or writes to GitHub.
//!
//! Workers depend on this trait, never on an HTTP client, so tests can put a fake behind it
//! and the domain stays free of I/O. The adapter (`parley-github`) authenticates as the App,
//! caches installation tokens, paginates and retries; none of that leaks in here.
//!
//! The models mirror GitHub's JSON field names so the adapter deserialises straight into
//! them, but they carry only the fields Parley uses. Every field GitHub may omit or send as
//! `null` is an `Option` or defaults, so a new or missing field never fails a decode.
//!
//! The models are split by what they describe (errors, paging, people, pulls, reviews,
//! comments, contents, checks, branch protection, reactions); the port itself is below.

mod checks;
mod comments;
mod contents;
mod deliveries;
mod errors;
mod paging;
mod people;
mod protection;
mod pulls;
mod reactions;
mod reviews;

pub use checks::*;
pub use comments::*;
pub use contents::*;
pub use deliveries::*;
pub use errors::*;
pub use paging::*;
pub use people::*;
pub use protection::*;
pub use pulls::*;
pub use reactions::*;
pub use reviews::*;

use async_trait::async_trait;
use serde::{Deserialize, Deserializer};
use time::OffsetDateTime;

// --- the port --

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

    /// The App's installation on `owner/name` (`GET /repos/{owner}/{repo}/installation`,
    /// as the App): how `parley review` run by hand finds the installation a webhook would
    /// have named. A 404 means the App is not installed there.
    async fn repo_installation(&self, owner: &str, name: &str)
    -> Result<Installation, GitHubError>;

    /// One page of the App's webhook deliveries, newest first (`GET /app/hook/deliveries`,
    /// as the App), from `cursor` (`None`: the newest page).
    async fn list_webhook_deliveries(
        &self,
        cursor: Option<&str>,
    ) -> Result<DeliveryPage, GitHubError>;

    /// Ask GitHub to send delivery `id` again (`POST /app/hook/deliveries/{id}/attempts`,
    /// as the App). Repeating it is harmless: the webhook takes an event once by its guid.
    async fn redeliver_webhook_delivery(&self, id: u64) -> Result<(), GitHubError>;

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

    // --- issues ---

    /// An issue of the repository (a PR number gives the PR as an issue).
    async fn get_issue(&self, repo: &RepoScope, number: u64) -> Result<Issue, GitHubError>;

    /// The issues linked to PR `number` by hand, not by a keyword in its description
    /// (GraphQL only), the first ten.
    async fn issues_linked_by_hand(
        &self,
        repo: &RepoScope,
        number: u64,
    ) -> Result<Vec<IssueReference>, GitHubError>;

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

    /// The branches and tags whose names start with `prefix` (`heads/…` or `tags/…`;
    /// `GET /repos/{owner}/{repo}/git/matching-refs/{prefix}`, one unpaged list); none is
    /// an empty list, not an error.
    async fn list_matching_refs(
        &self,
        repo: &RepoScope,
        prefix: &str,
    ) -> Result<Vec<Reference>, GitHubError>;

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

    // --- the repository and its rules ---

    /// The repository (`GET /repos/{owner}/{repo}`): its default branch, which
    /// `parley doctor` reads the merge rules of.
    async fn get_repository(&self, repo: &RepoScope) -> Result<RepoSummary, GitHubError>;

    /// The status checks `branch` requires before a merge, each with who must set it: from
    /// branch protection (`GET /repos/{owner}/{repo}/branches/{branch}`, whose summary any
    /// reader sees) and from every ruleset that applies to it, the organisation's too
    /// (`GET /repos/{owner}/{repo}/rules/branches/{branch}`; a server without rulesets
    /// answers 404, read as none). A branch that does not exist is
    /// [`GitHubError::NotFound`].
    async fn required_checks(
        &self,
        repo: &RepoScope,
        branch: &str,
    ) -> Result<Vec<RequiredCheck>, GitHubError>;

    /// The names of the repository's branches (`GET /repos/{owner}/{repo}/branches`), at
    /// most [`MAX_BRANCHES_LISTED`]: what `review.baseBranches`' patterns (`release/*`)
    /// are matched against when `parley doctor` reads their rules.
    async fn list_branches(&self, repo: &RepoScope) -> Result<Vec<String>, GitHubError>;

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
