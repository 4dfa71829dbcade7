//! The [`GitHub`] port, implemented by mapping each method onto its operation.

use crate::client::GitHubClient;
use crate::operations::{
    self, app, check_runs, contents, issue_comments, linked_issues, permissions, protection, pulls,
    reactions, review_comments, review_threads, reviews,
};
use async_trait::async_trait;
use parley_core::ports::github::{
    App, ChangedFile, CheckRun, CheckRunUpdate, CollaboratorPermission, Comparison, DeliveryPage,
    FileContent, GitHub, GitHubError, Installation, Issue, IssueComment, IssueReference, Listing,
    NewCheckRun, NewReview, NewReviewComment, OrgMembership, PageLimit, PullRequest, Reaction,
    ReactionContent, Reference, RepoScope, RepoSummary, RequiredCheck, Review, ReviewComment,
    ReviewThread, ReviewerRequest,
};
use time::OffsetDateTime;

#[async_trait]
impl GitHub for GitHubClient {
    async fn get_app(&self) -> Result<App, GitHubError> {
        app::get(self).await
    }

    async fn repo_installation(
        &self,
        owner: &str,
        name: &str,
    ) -> Result<Installation, GitHubError> {
        app::repo_installation(self, owner, name).await
    }

    async fn list_webhook_deliveries(
        &self,
        cursor: Option<&str>,
    ) -> Result<DeliveryPage, GitHubError> {
        app::list_deliveries(self, cursor).await
    }

    async fn redeliver_webhook_delivery(&self, id: u64) -> Result<(), GitHubError> {
        app::redeliver(self, id).await
    }

    async fn get_pull_request(
        &self,
        repo: &RepoScope,
        number: u64,
    ) -> Result<PullRequest, GitHubError> {
        operations::get_at(self, repo, &["pulls", &number.to_string()]).await
    }

    async fn list_pull_request_files(
        &self,
        repo: &RepoScope,
        number: u64,
        limit: PageLimit,
    ) -> Result<Listing<ChangedFile>, GitHubError> {
        pulls::list_files(self, repo, number, limit).await
    }

    async fn compare_commits(
        &self,
        repo: &RepoScope,
        base: &str,
        head: &str,
    ) -> Result<Comparison, GitHubError> {
        pulls::compare(self, repo, base, head).await
    }

    async fn request_reviewers(
        &self,
        repo: &RepoScope,
        number: u64,
        request: &ReviewerRequest,
    ) -> Result<PullRequest, GitHubError> {
        pulls::request_reviewers(self, repo, number, request).await
    }

    async fn list_reviews(
        &self,
        repo: &RepoScope,
        number: u64,
        limit: PageLimit,
    ) -> Result<Listing<Review>, GitHubError> {
        reviews::list(self, repo, number, limit).await
    }

    async fn create_review(
        &self,
        repo: &RepoScope,
        number: u64,
        review: &NewReview,
    ) -> Result<Review, GitHubError> {
        reviews::create(self, repo, number, review).await
    }

    async fn list_review_comments_for_review(
        &self,
        repo: &RepoScope,
        number: u64,
        review_id: u64,
        limit: PageLimit,
    ) -> Result<Listing<ReviewComment>, GitHubError> {
        reviews::list_comments(self, repo, number, review_id, limit).await
    }

    async fn list_review_comments(
        &self,
        repo: &RepoScope,
        number: u64,
        since: Option<OffsetDateTime>,
        limit: PageLimit,
    ) -> Result<Listing<ReviewComment>, GitHubError> {
        crate::operations::list_comments(self, repo, ("pulls", number), since, limit).await
    }

    async fn get_review_comment(
        &self,
        repo: &RepoScope,
        comment_id: u64,
    ) -> Result<ReviewComment, GitHubError> {
        operations::get_at(self, repo, &["pulls", "comments", &comment_id.to_string()]).await
    }

    async fn create_review_comment(
        &self,
        repo: &RepoScope,
        number: u64,
        commit_id: &str,
        comment: &NewReviewComment,
    ) -> Result<ReviewComment, GitHubError> {
        review_comments::create(self, repo, number, commit_id, comment).await
    }

    async fn reply_to_review_comment(
        &self,
        repo: &RepoScope,
        number: u64,
        comment_id: u64,
        body: &str,
    ) -> Result<ReviewComment, GitHubError> {
        review_comments::reply(self, repo, number, comment_id, body).await
    }

    async fn update_review_comment(
        &self,
        repo: &RepoScope,
        comment_id: u64,
        body: &str,
    ) -> Result<ReviewComment, GitHubError> {
        crate::operations::edit_comment(self, repo, "pulls", comment_id, body).await
    }

    async fn find_review_thread(
        &self,
        repo: &RepoScope,
        number: u64,
        root_comment_id: u64,
    ) -> Result<Option<ReviewThread>, GitHubError> {
        review_threads::find(self, repo, number, root_comment_id).await
    }

    async fn resolve_review_thread(
        &self,
        repo: &RepoScope,
        thread_id: &str,
    ) -> Result<ReviewThread, GitHubError> {
        review_threads::resolve(self, repo, thread_id).await
    }

    async fn list_issue_comments(
        &self,
        repo: &RepoScope,
        number: u64,
        since: Option<OffsetDateTime>,
        limit: PageLimit,
    ) -> Result<Listing<IssueComment>, GitHubError> {
        crate::operations::list_comments(self, repo, ("issues", number), since, limit).await
    }

    async fn get_issue(&self, repo: &RepoScope, number: u64) -> Result<Issue, GitHubError> {
        operations::get_at(self, repo, &["issues", &number.to_string()]).await
    }

    async fn issues_linked_by_hand(
        &self,
        repo: &RepoScope,
        number: u64,
    ) -> Result<Vec<IssueReference>, GitHubError> {
        linked_issues::by_hand(self, repo, number).await
    }

    async fn get_issue_comment(
        &self,
        repo: &RepoScope,
        comment_id: u64,
    ) -> Result<IssueComment, GitHubError> {
        operations::get_at(self, repo, &["issues", "comments", &comment_id.to_string()]).await
    }

    async fn create_issue_comment(
        &self,
        repo: &RepoScope,
        number: u64,
        body: &str,
    ) -> Result<IssueComment, GitHubError> {
        issue_comments::create(self, repo, number, body).await
    }

    async fn update_issue_comment(
        &self,
        repo: &RepoScope,
        comment_id: u64,
        body: &str,
    ) -> Result<IssueComment, GitHubError> {
        crate::operations::edit_comment(self, repo, "issues", comment_id, body).await
    }

    async fn get_file_contents(
        &self,
        repo: &RepoScope,
        path: &str,
        git_ref: &str,
    ) -> Result<Option<FileContent>, GitHubError> {
        contents::get_file(self, repo, path, git_ref).await
    }

    async fn download_tarball(
        &self,
        repo: &RepoScope,
        sha: &str,
        max_bytes: u64,
    ) -> Result<Vec<u8>, GitHubError> {
        contents::tarball(self, repo, sha, max_bytes).await
    }

    async fn list_matching_refs(
        &self,
        repo: &RepoScope,
        prefix: &str,
    ) -> Result<Vec<Reference>, GitHubError> {
        contents::matching_refs(self, repo, prefix).await
    }

    async fn get_repository(&self, repo: &RepoScope) -> Result<RepoSummary, GitHubError> {
        protection::repository(self, repo).await
    }

    async fn required_checks(
        &self,
        repo: &RepoScope,
        branch: &str,
    ) -> Result<Vec<RequiredCheck>, GitHubError> {
        protection::checks(self, repo, branch).await
    }

    async fn list_branches(&self, repo: &RepoScope) -> Result<Vec<String>, GitHubError> {
        protection::branches(self, repo).await
    }

    async fn get_collaborator_permission(
        &self,
        repo: &RepoScope,
        username: &str,
    ) -> Result<CollaboratorPermission, GitHubError> {
        permissions::collaborator(self, repo, username).await
    }

    async fn get_org_membership(
        &self,
        repo: &RepoScope,
        username: &str,
    ) -> Result<Option<OrgMembership>, GitHubError> {
        permissions::org_membership(self, repo, username).await
    }

    async fn create_check_run(
        &self,
        repo: &RepoScope,
        check_run: &NewCheckRun,
    ) -> Result<CheckRun, GitHubError> {
        check_runs::create(self, repo, check_run).await
    }

    async fn update_check_run(
        &self,
        repo: &RepoScope,
        check_run_id: u64,
        update: &CheckRunUpdate,
    ) -> Result<CheckRun, GitHubError> {
        check_runs::update(self, repo, check_run_id, update).await
    }

    async fn add_issue_comment_reaction(
        &self,
        repo: &RepoScope,
        comment_id: u64,
        content: ReactionContent,
    ) -> Result<Reaction, GitHubError> {
        reactions::on_issue_comment(self, repo, comment_id, content).await
    }

    async fn add_review_comment_reaction(
        &self,
        repo: &RepoScope,
        comment_id: u64,
        content: ReactionContent,
    ) -> Result<Reaction, GitHubError> {
        reactions::on_review_comment(self, repo, comment_id, content).await
    }

    async fn list_check_runs(
        &self,
        repo: &RepoScope,
        head_sha: &str,
        name: &str,
    ) -> Result<Vec<CheckRun>, GitHubError> {
        check_runs::list_for_ref(self, repo, head_sha, name).await
    }

    async fn list_review_comment_reactions(
        &self,
        repo: &RepoScope,
        comment_id: u64,
        limit: PageLimit,
    ) -> Result<Listing<Reaction>, GitHubError> {
        reactions::list_on_review_comment(self, repo, comment_id, limit).await
    }
}
