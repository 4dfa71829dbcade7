//! Every operation against GitHub's documented example for it, served at the documented
//! method and path: a wrong URL or verb gets the fake's 404, a model that cannot read the
//! example fails the decode.

use crate::support::*;
use axum::http::Method;
use parley_core::ports::github::*;
use serde_json::json;
use time::macros::datetime;

const PR: &str = "/repos/octo-org/hello-world/pulls/42";

#[tokio::test]
async fn get_pull_request() {
    let fake = FakeGitHub::with_token().await;
    fake.serve_example("pulls__get.200.default");
    let pr = client(&fake).get_pull_request(&repo(), 42).await.unwrap();
    assert_eq!(pr.number, 1347);
    assert_eq!(pr.title, "Amazing new feature");
    assert_eq!(pr.head.ref_name, "new-topic");
    assert_eq!(pr.head.sha, "6dcb09b5b57875f334f61aebed695e2e4193db5e");
    assert_eq!(pr.base.ref_name, "master");
    assert_eq!(
        pr.head.repo.as_ref().unwrap().full_name,
        "octocat/Hello-World"
    );
    assert_eq!(pr.user.as_ref().unwrap().login, "octocat");
    assert_eq!(pr.requested_reviewers[0].login, "other_user");
    assert_eq!(pr.labels[0].name, "bug");
    assert_eq!(pr.author_association.as_deref(), Some("OWNER"));
    assert!(!pr.draft);
}

#[tokio::test]
async fn list_pull_request_files() {
    let fake = FakeGitHub::with_token().await;
    fake.serve_example("pulls__list-files.200.default");
    let files = client(&fake)
        .list_pull_request_files(&repo(), 42, PageLimit::items(300))
        .await
        .unwrap();
    assert!(!files.truncated);
    let file = &files.items[0];
    assert_eq!(file.filename, "file1.txt");
    assert_eq!(file.status, FileStatus::Added);
    assert_eq!(
        (file.additions, file.deletions, file.changes),
        (103, 21, 124)
    );
    assert!(
        file.patch
            .as_deref()
            .unwrap()
            .starts_with("@@ -132,7 +132,7 @@")
    );
    let request = &fake.requests_to(Method::GET, &format!("{PR}/files"))[0];
    assert!(
        request
            .query_pairs()
            .contains(&("per_page".into(), "100".into()))
    );
}

#[tokio::test]
async fn compare_commits() {
    // The corpus holds no compare example; this body follows the documented schema
    // (`commit-comparison`), trimmed to the fields Parley reads plus some it ignores.
    let fake = FakeGitHub::with_token().await;
    let body = json!({
        "url": "https://api.github.com/repos/octo-org/hello-world/compare/aaa...bbb",
        "html_url": "https://github.com/octo-org/hello-world/compare/aaa...bbb",
        "status": "ahead", "ahead_by": 2, "behind_by": 0, "total_commits": 2,
        "base_commit": {"sha": "aaa", "commit": {"message": "base"}},
        "merge_base_commit": {"sha": "aaa", "commit": {"message": "base", "author": null}},
        "commits": [
            {"sha": "c1", "commit": {"message": "first"}, "author": null},
            {"sha": "bbb", "commit": {"message": "second"}, "parents": []}
        ],
        "files": [example("pulls__list-files.200.default").body[0].clone()]
    });
    fake.on(
        Method::GET,
        "/repos/octo-org/hello-world/compare/aaa...bbb",
        Canned::json(200, &body),
    );
    let comparison = client(&fake)
        .compare_commits(&repo(), "aaa", "bbb")
        .await
        .unwrap();
    assert_eq!(comparison.status, "ahead");
    assert_eq!(comparison.total_commits, 2);
    assert_eq!(comparison.commits[1].sha, "bbb");
    assert_eq!(
        comparison.commits[0].commit.as_ref().unwrap().message,
        "first"
    );
    assert_eq!(comparison.merge_base_commit.unwrap().sha, "aaa");
    assert_eq!(comparison.files[0].filename, "file1.txt");
}

/// A prefix's `/` are path separators (a base branch `release/1.0` stays two segments,
/// not `%2F`), and a prefix nothing matches is an empty list.
#[tokio::test]
async fn matching_refs_by_prefix() {
    // The corpus holds no git-ref example; this follows the documented `git-ref` schema.
    let fake = FakeGitHub::with_token().await;
    let prefix = "heads/gh-readonly-queue/release/1.0/pr-42-";
    let path = format!("/repos/octo-org/hello-world/git/matching-refs/{prefix}");
    let name = "refs/heads/gh-readonly-queue/release/1.0/pr-42-aaa";
    fake.on(
        Method::GET,
        &path,
        Canned::json(
            200,
            &json!([{
                "ref": name, "node_id": "MDM6UmVm",
                "url": "https://api.github.com/repos/octo-org/hello-world/git/refs/heads/x",
                "object": {"type": "commit", "sha": "bbb", "url": "https://api.github.com/x"}
            }]),
        ),
    );
    let refs = client(&fake)
        .list_matching_refs(&repo(), prefix)
        .await
        .unwrap();
    assert_eq!(refs.len(), 1);
    assert_eq!(
        (refs[0].name.as_str(), refs[0].object.sha.as_str()),
        (name, "bbb")
    );
    assert_eq!(fake.requests_to(Method::GET, &path).len(), 1);

    let none = "/repos/octo-org/hello-world/git/matching-refs/heads/nothing";
    fake.on(Method::GET, none, Canned::json(200, &json!([])));
    let refs = client(&fake)
        .list_matching_refs(&repo(), "heads/nothing")
        .await
        .unwrap();
    assert!(refs.is_empty());
}

/// A branch's required checks come from its protection summary and from its rulesets'
/// rules (other kinds of rule passed over); a branch name's `/` stay path separators, and a
/// server without rulesets (404) has none. The corpus holds neither shape; these follow
/// the documented `branch-with-protection` and `repository-rule-detailed` schemas.
#[tokio::test]
async fn required_checks_from_protection_and_rulesets() {
    let fake = FakeGitHub::with_token().await;
    let branch = "/repos/octo-org/hello-world/branches/release/1.0";
    let rules = "/repos/octo-org/hello-world/rules/branches/release/1.0";
    fake.on(
        Method::GET,
        branch,
        Canned::json(
            200,
            &json!({"name": "release/1.0", "protected": true, "protection": {"enabled": true,
                "required_status_checks": {"enforcement_level": "everyone",
                    "contexts": ["Parley review"],
                    "checks": [{"context": "Parley review", "app_id": null}]}}}),
        ),
    );
    fake.on(
        Method::GET,
        rules,
        Canned::json(
            200,
            &json!([
                {"type": "pull_request", "ruleset_id": 3, "parameters": {"required_approving_review_count": 1}},
                {"type": "required_status_checks", "ruleset_id": 4, "parameters": {
                    "strict_required_status_checks_policy": true,
                    "required_status_checks": [{"context": "Parley review", "integration_id": 77}]}}
            ]),
        ),
    );
    // The next time, as a server from before rulesets answers.
    fake.on(
        Method::GET,
        rules,
        Canned::json(404, &json!({"message": "Not Found"})),
    );
    let found = client(&fake)
        .required_checks(&repo(), "release/1.0")
        .await
        .unwrap();
    assert_eq!(
        found,
        vec![
            RequiredCheck {
                context: "Parley review".into(),
                app_id: None,
                by: RequiredBy::BranchProtection
            },
            RequiredCheck {
                context: "Parley review".into(),
                app_id: Some(77),
                by: RequiredBy::Ruleset { id: 4 }
            },
        ]
    );
    let found = client(&fake)
        .required_checks(&repo(), "release/1.0")
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    let missing = client(&fake).required_checks(&repo(), "gone").await;
    assert!(
        matches!(missing, Err(GitHubError::NotFound(_))),
        "{missing:?}"
    );
}

#[tokio::test]
async fn request_reviewers() {
    let fake = FakeGitHub::with_token().await;
    fake.serve_example("pulls__request-reviewers.201.default");
    let request = ReviewerRequest {
        reviewers: vec!["alice".into()],
        team_reviewers: vec![],
    };
    let pr = client(&fake)
        .request_reviewers(&repo(), 42, &request)
        .await
        .unwrap();
    assert_eq!(pr.number, 1347);
    let sent = fake.requests_to(Method::POST, &format!("{PR}/requested_reviewers"))[0].json();
    assert_eq!(sent, json!({"reviewers": ["alice"]}));
}

#[tokio::test]
async fn list_reviews() {
    let fake = FakeGitHub::with_token().await;
    fake.serve_example("pulls__list-reviews.200.default");
    let reviews = client(&fake)
        .list_reviews(&repo(), 42, PageLimit::pages(1))
        .await
        .unwrap();
    assert_eq!(reviews.items[0].id, 80);
    assert_eq!(reviews.items[0].state, "APPROVED");
    assert_eq!(
        reviews.items[0].submitted_at,
        Some(datetime!(2019-11-17 17:43:43 UTC))
    );
}

#[tokio::test]
async fn create_review_sends_line_based_comments() {
    let fake = FakeGitHub::with_token().await;
    fake.serve_example("pulls__create-review.200.default");
    let review = NewReview {
        commit_id: Some("ecdd80bb57125d7ba9641ffaa4d7d2c19d3f3091".into()),
        body: "Summary".into(),
        event: ReviewEvent::Comment,
        comments: vec![
            NewReviewComment {
                path: "src/lib.rs".into(),
                body: "one line".into(),
                line: 12,
                side: Some(DiffSide::Right),
                start_line: None,
                start_side: None,
            },
            NewReviewComment {
                path: "src/main.rs".into(),
                body: "a range".into(),
                line: 20,
                side: Some(DiffSide::Right),
                start_line: Some(17),
                start_side: Some(DiffSide::Right),
            },
        ],
    };
    let created = client(&fake)
        .create_review(&repo(), 42, &review)
        .await
        .unwrap();
    assert_eq!(created.id, 80);
    assert_eq!(created.state, "CHANGES_REQUESTED");
    assert_eq!(
        created.commit_id.as_deref(),
        Some("ecdd80bb57125d7ba9641ffaa4d7d2c19d3f3091")
    );

    let sent = fake.requests_to(Method::POST, &format!("{PR}/reviews"))[0].json();
    assert_eq!(
        sent,
        json!({
            "commit_id": "ecdd80bb57125d7ba9641ffaa4d7d2c19d3f3091",
            "body": "Summary",
            "event": "COMMENT",
            "comments": [
                {"path": "src/lib.rs", "body": "one line", "line": 12, "side": "RIGHT"},
                {"path": "src/main.rs", "body": "a range", "line": 20, "side": "RIGHT",
                 "start_line": 17, "start_side": "RIGHT"}
            ]
        })
    );
}

#[tokio::test]
async fn list_review_comments_for_review() {
    let fake = FakeGitHub::with_token().await;
    fake.serve_example("pulls__list-comments-for-review.200.default");
    let comments = client(&fake)
        .list_review_comments_for_review(&repo(), 42, 80, PageLimit::items(100))
        .await
        .unwrap();
    let comment = &comments.items[0];
    assert_eq!(comment.id, 10);
    assert_eq!(comment.in_reply_to_id, Some(8));
    assert_eq!(comment.body, "Great stuff!");
    assert_eq!(comment.line, None, "this example omits line fields");
}

#[tokio::test]
async fn list_review_comments_oldest_first_since() {
    let fake = FakeGitHub::with_token().await;
    fake.serve_example("pulls__list-review-comments.200.default");
    let since = datetime!(2024-01-02 03:04:05 UTC);
    let comments = client(&fake)
        .list_review_comments(&repo(), 42, Some(since), PageLimit::items(100))
        .await
        .unwrap();
    let comment = &comments.items[0];
    assert_eq!(comment.id, 10);
    assert_eq!(comment.path, "file1.txt");
    assert_eq!((comment.start_line, comment.line), (Some(1), Some(2)));
    assert_eq!(comment.side, Some(DiffSide::Right));
    assert_eq!(comment.pull_request_review_id, Some(42));
    assert_eq!(comment.user.as_ref().unwrap().login, "octocat");
    assert_eq!(comment.created_at, datetime!(2011-04-14 16:00:49 UTC));

    let query = fake.requests_to(Method::GET, &format!("{PR}/comments"))[0].query_pairs();
    for pair in [
        ("sort", "created"),
        ("direction", "asc"),
        ("since", "2024-01-02T03:04:05Z"),
        ("per_page", "100"),
    ] {
        assert!(
            query.contains(&(pair.0.into(), pair.1.into())),
            "{pair:?} missing from {query:?}"
        );
    }
}

#[tokio::test]
async fn get_review_comment() {
    let fake = FakeGitHub::with_token().await;
    fake.serve_example("pulls__get-review-comment.200.default");
    let comment = client(&fake).get_review_comment(&repo(), 7).await.unwrap();
    assert_eq!((comment.id, comment.in_reply_to_id), (10, Some(8)));
    assert!(comment.diff_hunk.starts_with("@@ -16,33 +16,40 @@"));
}

#[tokio::test]
async fn create_review_comment() {
    let fake = FakeGitHub::with_token().await;
    fake.serve_example("pulls__create-review-comment.201.example-for-a-multi-line-comment");
    let comment = NewReviewComment {
        path: "file1.txt".into(),
        body: "Great stuff!".into(),
        line: 2,
        side: Some(DiffSide::Right),
        start_line: Some(1),
        start_side: Some(DiffSide::Right),
    };
    let created = client(&fake)
        .create_review_comment(&repo(), 42, "6dcb09b5", &comment)
        .await
        .unwrap();
    assert_eq!(created.id, 10);
    let sent = fake.requests_to(Method::POST, &format!("{PR}/comments"))[0].json();
    assert_eq!(
        sent,
        json!({"commit_id": "6dcb09b5", "path": "file1.txt", "body": "Great stuff!",
               "line": 2, "side": "RIGHT", "start_line": 1, "start_side": "RIGHT"})
    );
}

#[tokio::test]
async fn reply_to_review_comment() {
    let fake = FakeGitHub::with_token().await;
    fake.serve_example("pulls__create-reply-for-review-comment.201.default");
    let reply = client(&fake)
        .reply_to_review_comment(&repo(), 42, 7, "Thanks!")
        .await
        .unwrap();
    assert_eq!(reply.in_reply_to_id, Some(426899381));
    let sent = fake.requests_to(Method::POST, &format!("{PR}/comments/7/replies"))[0].json();
    assert_eq!(sent, json!({"body": "Thanks!"}));
}

#[tokio::test]
async fn update_review_comment() {
    let fake = FakeGitHub::with_token().await;
    fake.serve_example("pulls__update-review-comment.200.default");
    let updated = client(&fake)
        .update_review_comment(&repo(), 7, "edited")
        .await
        .unwrap();
    assert_eq!(updated.id, 10);
    let path = "/repos/octo-org/hello-world/pulls/comments/7";
    assert_eq!(
        fake.requests_to(Method::PATCH, path)[0].json(),
        json!({"body": "edited"})
    );
}

/// An issue by number: a PR's number gives the PR as an issue (`pull_request` set), which
/// a review must tell from an issue; a deleted one is `NotFound`.
#[tokio::test]
async fn get_issue_tells_an_issue_from_a_pr() {
    let fake = FakeGitHub::with_token().await;
    let example = fake.serve_example("issues__get.200.default");
    let github = client(&fake);
    let issue = github.get_issue(&repo(), 42).await.unwrap();
    assert_eq!(
        (issue.number, issue.title.as_str(), issue.state.as_str()),
        (1347, "Found a bug", "open")
    );
    assert_eq!(
        issue.body.as_deref(),
        Some("I'm having a problem with this.")
    );
    assert!(issue.is_pull_request, "the documented example is a PR's");

    let mut plain = example.body.clone();
    plain.as_object_mut().unwrap().remove("pull_request");
    plain["body"] = json!(null);
    fake.on(
        Method::GET,
        "/repos/octo-org/hello-world/issues/43",
        Canned::json(200, &plain),
    );
    let issue = github.get_issue(&repo(), 43).await.unwrap();
    assert!(!issue.is_pull_request);
    assert_eq!(issue.body, None);

    fake.on(
        Method::GET,
        "/repos/octo-org/hello-world/issues/44",
        Canned::json(404, &json!({"message": "Not Found"})),
    );
    let err = github.get_issue(&repo(), 44).await.unwrap_err();
    assert!(matches!(err, GitHubError::NotFound(_)), "{err:?}");
}

#[tokio::test]
async fn issue_comments_list_get_create_update() {
    let fake = FakeGitHub::with_token().await;
    fake.serve_example("issues__list-comments.200.default");
    fake.serve_example("issues__get-comment.200.default");
    fake.serve_example("issues__create-comment.201.default");
    fake.serve_example("issues__update-comment.200.default");
    let github = client(&fake);
    let scope = repo();

    let listed = github
        .list_issue_comments(&scope, 42, None, PageLimit::items(50))
        .await
        .unwrap();
    let first = &listed.items[0];
    assert_eq!((first.id, first.body.as_str()), (1, "Me too"));
    assert_eq!(first.author_association.as_deref(), Some("COLLABORATOR"));
    let list_request = &fake.requests_to(
        Method::GET,
        "/repos/octo-org/hello-world/issues/42/comments",
    )[0];
    assert!(
        list_request
            .query_pairs()
            .contains(&("per_page".into(), "50".into()))
    );

    let got = github.get_issue_comment(&scope, 7).await.unwrap();
    assert_eq!(got.user.unwrap().to_actor().login, "octocat");

    let created = github
        .create_issue_comment(&scope, 42, "Me too")
        .await
        .unwrap();
    assert_eq!(created.id, 1);
    let sent = fake.requests_to(
        Method::POST,
        "/repos/octo-org/hello-world/issues/42/comments",
    )[0]
    .json();
    assert_eq!(sent, json!({"body": "Me too"}));

    let updated = github
        .update_issue_comment(&scope, 7, "Me too!")
        .await
        .unwrap();
    assert_eq!(updated.id, 1);
    let sent = fake.requests_to(
        Method::PATCH,
        "/repos/octo-org/hello-world/issues/comments/7",
    )[0]
    .json();
    assert_eq!(sent, json!({"body": "Me too!"}));
}

fn serve_content(fake: &FakeGitHub, name: &str, path: &str) {
    let example = example(name);
    let url = fill(&example.path).replace("{path}", path);
    fake.on(example.method.clone(), &url, Canned::of(&example));
}

#[tokio::test]
async fn file_contents_are_base64_decoded() {
    let fake = FakeGitHub::with_token().await;
    serve_content(
        &fake,
        "repos__get-content.200.response-if-content-is-a-file",
        "docs/README.md",
    );
    serve_content(
        &fake,
        "repos__get-content.200.response-if-content-is-a-file-github-object",
        "other/README.md",
    );
    let github = client(&fake);
    let file = github
        .get_file_contents(&repo(), "docs/README.md", "main")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(file.sha, "3d21ec53a331a6f037a91c368710b99387d012c1");
    assert_eq!(file.path, "README.md");
    // GitHub's example content is not valid UTF-8 near its start (a slip in the docs), but
    // its tail decodes to readable text.
    let text = String::from_utf8_lossy(&file.bytes);
    assert!(text.starts_with("# Yoga Bo"));
    assert!(text.contains("A web app that leads you through a yoga session."));
    assert!(
        file.text().is_none(),
        "invalid UTF-8 is not offered as text"
    );

    let request = &fake.requests_to(
        Method::GET,
        "/repos/octo-org/hello-world/contents/docs/README.md",
    )[0];
    assert_eq!(
        request.query_pairs(),
        vec![("ref".to_owned(), "main".to_owned())]
    );

    let object_form = github
        .get_file_contents(&repo(), "other/README.md", "main")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(object_form.bytes, file.bytes);
}

#[tokio::test]
async fn file_contents_absent_or_not_a_file_is_none() {
    let fake = FakeGitHub::with_token().await;
    for (name, path) in [
        (
            "repos__get-content.200.response-if-content-is-a-directory",
            "dir",
        ),
        (
            "repos__get-content.200.response-if-content-is-a-directory-github-object",
            "dir-object",
        ),
        (
            "repos__get-content.200.response-if-content-is-a-symlink",
            "link",
        ),
        (
            "repos__get-content.200.response-if-content-is-a-submodule",
            "sub",
        ),
    ] {
        serve_content(&fake, name, path);
    }
    // A recorded real directory listing, too.
    let recorded_listing = recorded("get-content")[0]["response"].clone();
    fake.on(
        Method::GET,
        "/repos/octo-org/hello-world/contents/recorded",
        Canned::json(200, &recorded_listing),
    );
    let github = client(&fake);
    for path in [
        "dir",
        "dir-object",
        "link",
        "sub",
        "recorded",
        "missing/CLAUDE.md",
    ] {
        let found = github
            .get_file_contents(&repo(), path, "main")
            .await
            .unwrap();
        assert!(found.is_none(), "{path} should be absent, got {found:?}");
    }
    // Each path was actually asked for (a 404 from a wrong URL would also read as None).
    for path in ["dir", "dir-object", "link", "sub", "recorded"] {
        let url = format!("/repos/octo-org/hello-world/contents/{path}");
        assert_eq!(fake.requests_to(Method::GET, &url).len(), 1, "{url}");
    }
}

#[tokio::test]
async fn collaborator_permission() {
    let fake = FakeGitHub::with_token().await;
    fake.serve_example(
        "repos__get-collaborator-permission-level.200.response-if-user-has-admin-permissions",
    );
    let permission = client(&fake)
        .get_collaborator_permission(&repo(), "hubot")
        .await
        .unwrap();
    assert_eq!(permission.permission, Permission::Admin);
    assert_eq!(permission.level(), Permission::Admin);
    assert!(permission.level() >= Permission::Write);
}

/// An active admin, a pending invitation, not a member (404), and an App without
/// "Members: read" (403), read from the organisation that owns the repository.
#[tokio::test]
async fn org_membership() {
    let fake = FakeGitHub::with_token().await;
    let path = |user: &str| format!("/orgs/octo-org/memberships/{user}");
    let membership = |state: &str, role: &str| {
        json!({
            "url": "https://api.github.com/orgs/octo-org/memberships/someone",
            "state": state,
            "role": role,
            "organization_url": "https://api.github.com/orgs/octo-org",
            "organization": { "login": "octo-org", "id": 1 },
            "user": { "login": "someone", "id": 2, "type": "User" }
        })
    };
    fake.on(
        Method::GET,
        &path("ada"),
        Canned::json(200, &membership("active", "admin")),
    );
    fake.on(
        Method::GET,
        &path("bob"),
        Canned::json(200, &membership("pending", "admin")),
    );
    fake.on(
        Method::GET,
        &path("eve"),
        Canned::json(404, &json!({"message": "Not Found"})),
    );
    fake.on(
        Method::GET,
        &path("hidden"),
        Canned::json(
            403,
            &json!({"message": "Resource not accessible by integration"}),
        ),
    );
    let github = client(&fake);
    let ada = github.get_org_membership(&repo(), "ada").await.unwrap();
    assert!(ada.is_some_and(|m| m.is_active_admin()));
    let bob = github.get_org_membership(&repo(), "bob").await.unwrap();
    assert!(
        bob.is_some_and(|m| !m.is_active_admin()),
        "pending is not yet admin"
    );
    assert_eq!(
        github.get_org_membership(&repo(), "eve").await.unwrap(),
        None
    );
    let err = github
        .get_org_membership(&repo(), "hidden")
        .await
        .unwrap_err();
    assert!(matches!(err, GitHubError::Forbidden(_)), "{err:?}");
    assert_eq!(fake.requests_to(Method::GET, &path("ada")).len(), 1);
}

#[tokio::test]
async fn check_runs_create_and_update() {
    let fake = FakeGitHub::with_token().await;
    let github = client(&fake);
    let runs = "/repos/octo-org/hello-world/check-runs";
    let new_run = NewCheckRun {
        name: "Parley review".into(),
        head_sha: "ce587453ced02b1526dfb4cb910479d431683101".into(),
        external_id: Some("run-1".into()),
        started_at: Some(datetime!(2018-05-04 01:14:52 UTC)),
        state: CheckRunUpdate {
            status: Some(CheckStatus::InProgress),
            ..CheckRunUpdate::default()
        },
    };

    fake.on(
        Method::POST,
        runs,
        Canned::of(&example(
            "checks__create.201.example-of-in-progress-conclusion",
        )),
    );
    let run = github.create_check_run(&repo(), &new_run).await.unwrap();
    assert_eq!(
        (run.id, run.status, run.conclusion),
        (4, CheckStatus::InProgress, None)
    );
    assert_eq!(run.external_id.as_deref(), Some("42"));
    assert_eq!(
        fake.requests_to(Method::POST, runs)[0].json(),
        json!({"name": "Parley review", "head_sha": "ce587453ced02b1526dfb4cb910479d431683101",
               "status": "in_progress", "external_id": "run-1",
               "started_at": "2018-05-04T01:14:52Z"})
    );

    let fake = FakeGitHub::with_token().await;
    let github = client(&fake);
    fake.serve_example("checks__create.201.example-of-completed-conclusion");
    let run = github.create_check_run(&repo(), &new_run).await.unwrap();
    assert_eq!(run.conclusion, Some(CheckConclusion::Neutral));

    fake.serve_example("checks__update.200.default");
    let update = CheckRunUpdate {
        status: Some(CheckStatus::Completed),
        conclusion: Some(CheckConclusion::Neutral),
        output: Some(CheckRunOutput {
            title: "Parley review".into(),
            summary: "Could not run: LLM unavailable".into(),
            text: None,
        }),
        ..CheckRunUpdate::default()
    };
    let run = github.update_check_run(&repo(), 4, &update).await.unwrap();
    assert_eq!(
        (run.status, run.conclusion),
        (CheckStatus::Completed, Some(CheckConclusion::Neutral))
    );
    assert_eq!(
        fake.requests_to(Method::PATCH, &format!("{runs}/4"))[0].json(),
        json!({"status": "completed", "conclusion": "neutral",
               "output": {"title": "Parley review", "summary": "Could not run: LLM unavailable"}})
    );
}

#[tokio::test]
async fn check_runs_listed_by_name_on_a_commit() {
    let fake = FakeGitHub::with_token().await;
    let github = client(&fake);
    let sha = "ce587453ced02b1526dfb4cb910479d431683101";
    let path = format!("/repos/octo-org/hello-world/commits/{sha}/check-runs");
    // GitHub's list wraps the runs; each is shaped as the create example.
    let run = example("checks__create.201.example-of-in-progress-conclusion").body;
    fake.on(
        Method::GET,
        &path,
        Canned::json(200, &json!({ "total_count": 1, "check_runs": [run] })),
    );
    let runs = github
        .list_check_runs(&repo(), sha, "Parley review")
        .await
        .unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (runs[0].id, runs[0].status, runs[0].external_id.as_deref()),
        (4, CheckStatus::InProgress, Some("42"))
    );
    let query = fake.requests_to(Method::GET, &path)[0].query_pairs();
    assert!(
        query.contains(&("check_name".into(), "Parley review".into())),
        "{query:?}"
    );
}

#[tokio::test]
async fn reactions_on_both_comment_kinds_new_or_existing() {
    for (issue_example, review_example) in [
        (
            "reactions__create-for-issue-comment.201.default",
            "reactions__create-for-pull-request-review-comment.201.default",
        ),
        (
            "reactions__create-for-issue-comment.200.default",
            "reactions__create-for-pull-request-review-comment.200.default",
        ),
    ] {
        let fake = FakeGitHub::with_token().await;
        fake.serve_example(issue_example);
        fake.serve_example(review_example);
        let github = client(&fake);
        let on_issue = github
            .add_issue_comment_reaction(&repo(), 7, ReactionContent::Eyes)
            .await
            .unwrap();
        assert_eq!((on_issue.id, on_issue.content), (1, ReactionContent::Heart));
        let on_review = github
            .add_review_comment_reaction(&repo(), 7, ReactionContent::ThumbsUp)
            .await
            .unwrap();
        assert_eq!(on_review.id, 1);

        let issue_path = "/repos/octo-org/hello-world/issues/comments/7/reactions";
        let review_path = "/repos/octo-org/hello-world/pulls/comments/7/reactions";
        assert_eq!(
            fake.requests_to(Method::POST, issue_path)[0].json(),
            json!({"content": "eyes"})
        );
        assert_eq!(
            fake.requests_to(Method::POST, review_path)[0].json(),
            json!({"content": "+1"})
        );
    }
}

#[tokio::test]
async fn get_app_uses_the_jwt_not_a_token() {
    let fake = FakeGitHub::with_token().await;
    fake.serve_example("apps__get-authenticated.200.default");
    let app = client(&fake).get_app().await.unwrap();
    assert_eq!((app.id, app.name.as_str()), (1, "Octocat App"));
    assert_eq!(app.owner.unwrap().login, "octocat");
    assert_eq!(fake.token_requests(), 0);
}

/// GraphQL threads page: `threads` are `(thread id, resolved, root comment id)`.
fn threads_page(threads: &[(&str, bool, &str)], next: Option<&str>) -> serde_json::Value {
    let nodes: Vec<_> = threads
        .iter()
        .map(|(id, resolved, root)| {
            json!({"id": id, "isResolved": resolved,
                   "comments": {"nodes": [{"fullDatabaseId": root}]}})
        })
        .collect();
    json!({"data": {"repository": {"pullRequest": {"reviewThreads": {
        "pageInfo": {"hasNextPage": next.is_some(), "endCursor": next},
        "nodes": nodes
    }}}}})
}

#[tokio::test]
async fn find_review_thread_pages_until_the_root_comment() {
    let fake = FakeGitHub::with_token().await;
    fake.graphql_answers(&threads_page(&[("PRRT_a", false, "1")], Some("cursor1")));
    fake.graphql_answers(&threads_page(
        &[("PRRT_b", true, "2"), ("PRRT_c", false, "3000000000")],
        None,
    ));
    let thread = client(&fake)
        .find_review_thread(&repo(), 42, 3_000_000_000)
        .await
        .unwrap();
    assert_eq!(
        thread,
        Some(ReviewThread {
            id: "PRRT_c".into(),
            is_resolved: false
        })
    );

    let requests = fake.requests_to(Method::POST, "/graphql");
    assert_eq!(requests.len(), 2);
    let first = requests[0].json();
    assert!(first["query"].as_str().unwrap().contains("reviewThreads"));
    assert_eq!(
        first["variables"],
        json!({"owner": "octo-org", "name": "hello-world", "number": 42, "after": null})
    );
    assert_eq!(requests[1].json()["variables"]["after"], "cursor1");
    assert_eq!(requests[0].bearer(), TOKEN);
}

#[tokio::test]
async fn find_review_thread_absent_is_none() {
    let fake = FakeGitHub::with_token().await;
    fake.graphql_answers(&threads_page(&[("PRRT_a", false, "1")], None));
    let thread = client(&fake)
        .find_review_thread(&repo(), 42, 99)
        .await
        .unwrap();
    assert_eq!(thread, None);
}

#[tokio::test]
async fn resolve_review_thread() {
    let fake = FakeGitHub::with_token().await;
    fake.graphql_answers(
        &json!({"data": {"resolveReviewThread": {"thread": {"id": "PRRT_c", "isResolved": true}}}}),
    );
    let thread = client(&fake)
        .resolve_review_thread(&repo(), "PRRT_c")
        .await
        .unwrap();
    assert!(thread.is_resolved);
    let sent = fake.requests_to(Method::POST, "/graphql")[0].json();
    assert!(
        sent["query"]
            .as_str()
            .unwrap()
            .contains("resolveReviewThread")
    );
    assert_eq!(sent["variables"], json!({"threadId": "PRRT_c"}));
}

/// Only links made by hand are asked for (a keyword's are read from the description), and
/// each comes with its repository, which the caller holds to the PR's own.
#[tokio::test]
async fn issues_linked_by_hand_come_with_their_repository() {
    let fake = FakeGitHub::with_token().await;
    fake.graphql_answers(
        &json!({"data": {"repository": {"pullRequest": {"closingIssuesReferences": {
            "nodes": [
                {"number": 12, "repository": {"nameWithOwner": "octo-org/hello-world"}},
                null,
                {"number": 3, "repository": {"nameWithOwner": "someone/else"}}
            ]
        }}}}}),
    );
    let linked = client(&fake)
        .issues_linked_by_hand(&repo(), 42)
        .await
        .unwrap();
    assert_eq!(
        linked,
        vec![
            IssueReference {
                repository: "octo-org/hello-world".into(),
                number: 12
            },
            IssueReference {
                repository: "someone/else".into(),
                number: 3
            },
        ]
    );
    let sent = fake.requests_to(Method::POST, "/graphql")[0].json();
    let query = sent["query"].as_str().unwrap();
    assert!(query.contains("closingIssuesReferences(first: 10, userLinkedOnly: true)"));
    assert_eq!(
        sent["variables"],
        json!({"owner": "octo-org", "name": "hello-world", "number": 42})
    );
}

/// A PR GraphQL does not find is GitHub's 404, as REST would say it.
#[tokio::test]
async fn issues_linked_by_hand_of_a_missing_pr_is_not_found() {
    let fake = FakeGitHub::with_token().await;
    fake.graphql_answers(&json!({"data": {"repository": {"pullRequest": null}}}));
    let err = client(&fake)
        .issues_linked_by_hand(&repo(), 42)
        .await
        .unwrap_err();
    assert!(matches!(err, GitHubError::NotFound(_)), "{err:?}");
}
