//! Typed errors callers act on.

use crate::support::*;
use axum::http::Method;
use parley_core::ports::github::*;
use serde_json::json;

const REVIEWS: &str = "/repos/octo-org/hello-world/pulls/42/reviews";

fn a_review() -> NewReview {
    NewReview {
        commit_id: None,
        body: "Summary".into(),
        event: ReviewEvent::Comment,
        comments: vec![NewReviewComment {
            path: "src/lib.rs".into(),
            body: "finding".into(),
            line: 999,
            side: Some(DiffSide::Right),
            start_line: None,
            start_side: None,
        }],
    }
}

#[tokio::test]
async fn deleted_comment_is_not_found() {
    let fake = FakeGitHub::with_token().await;
    let err = client(&fake)
        .get_review_comment(&repo(), 7)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GitHubError::NotFound(m) if m.contains("/pulls/comments/7") && m.contains("Not Found")),
        "{err:?}"
    );
    assert!(err.is_absent() && !err.is_transient());
    assert_eq!(
        fake.requests_to(Method::GET, "/repos/octo-org/hello-world/pulls/comments/7")
            .len(),
        1
    );
}

#[tokio::test]
async fn gone_is_gone() {
    let fake = FakeGitHub::with_token().await;
    fake.on(
        Method::GET,
        "/repos/octo-org/hello-world/issues/comments/7",
        Canned::json(
            410,
            &json!({"message": "Issues are disabled for this repo"}),
        ),
    );
    let err = client(&fake)
        .get_issue_comment(&repo(), 7)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GitHubError::Gone(m) if m.contains("disabled")),
        "{err:?}"
    );
    assert!(err.is_absent());
}

#[tokio::test]
async fn recorded_validation_failure_is_unprocessable_with_details() {
    let fake = FakeGitHub::with_token().await;
    let exchange = &recorded("errors")[0];
    assert_eq!(exchange["status"], 422);
    fake.on(
        Method::POST,
        REVIEWS,
        Canned::json(422, &exchange["response"]),
    );
    let err = client(&fake)
        .create_review(&repo(), 42, &a_review())
        .await
        .unwrap_err();
    match err {
        GitHubError::Unprocessable { message, errors } => {
            assert!(message.contains("Validation Failed"), "{message}");
            assert_eq!(errors[0].resource.as_deref(), Some("Label"));
            assert_eq!(errors[0].field.as_deref(), Some("color"));
            assert_eq!(errors[0].code.as_deref(), Some("invalid"));
        }
        other => panic!("expected Unprocessable, got {other:?}"),
    }
    assert_eq!(
        fake.requests_to(Method::POST, REVIEWS).len(),
        1,
        "422 is never retried"
    );
}

#[tokio::test]
async fn line_outside_the_diff_is_unprocessable_with_githubs_words() {
    // The shape GitHub answers for an inline comment on a line not in the diff: `errors`
    // as bare strings.
    let fake = FakeGitHub::with_token().await;
    fake.on(
        Method::POST,
        REVIEWS,
        Canned::json(
            422,
            &json!({
                "message": "Unprocessable Entity",
                "errors": ["Pull request review thread line must be part of the diff"],
                "documentation_url": "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request",
                "status": "422"
            }),
        ),
    );
    let err = client(&fake)
        .create_review(&repo(), 42, &a_review())
        .await
        .unwrap_err();
    let text = err.to_string();
    match err {
        GitHubError::Unprocessable { errors, .. } => assert_eq!(
            errors[0].message.as_deref(),
            Some("Pull request review thread line must be part of the diff")
        ),
        other => panic!("expected Unprocessable, got {other:?}"),
    }
    assert!(text.contains("must be part of the diff"), "{text}");
}

#[tokio::test]
async fn other_client_errors_are_rejected_with_their_status() {
    let fake = FakeGitHub::with_token().await;
    fake.on(
        Method::GET,
        "/repos/octo-org/hello-world/pulls/42",
        Canned::json(409, &json!({"message": "Conflict"})),
    );
    let err = client(&fake)
        .get_pull_request(&repo(), 42)
        .await
        .unwrap_err();
    assert!(
        matches!(err, GitHubError::Rejected { status: 409, .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_body_that_does_not_fit_is_a_decode_error() {
    let fake = FakeGitHub::with_token().await;
    fake.on(
        Method::GET,
        "/repos/octo-org/hello-world/pulls/42",
        Canned::json(200, &json!({"number": "forty-two"})),
    );
    let err = client(&fake)
        .get_pull_request(&repo(), 42)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GitHubError::Decode(m) if m.contains("/pulls/42")),
        "{err:?}"
    );
}

#[tokio::test]
async fn graphql_errors_are_typed() {
    let fake = FakeGitHub::with_token().await;
    fake.graphql_answers(&json!({"data": null, "errors": [{
        "type": "NOT_FOUND", "path": ["resolveReviewThread"],
        "message": "Could not resolve to a node with the global id of 'PRRT_x'"
    }]}));
    fake.graphql_answers(&json!({"errors": [{"message": "Field 'fullDatabaseId' doesn't exist on type 'PullRequestReviewComment'"}]}));
    let github = client(&fake);
    let err = github
        .resolve_review_thread(&repo(), "PRRT_x")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GitHubError::NotFound(m) if m.contains("PRRT_x")),
        "{err:?}"
    );
    let err = github.find_review_thread(&repo(), 42, 1).await.unwrap_err();
    assert!(
        matches!(&err, GitHubError::Unprocessable { message, .. } if message.contains("fullDatabaseId")),
        "{err:?}"
    );
}

#[tokio::test]
async fn names_that_would_change_the_endpoint_are_refused_before_sending() {
    let fake = FakeGitHub::with_token().await;
    let sneaky = RepoScope::new(INSTALLATION_ID, "octo-org", "..");
    let err = client(&fake)
        .get_pull_request(&sneaky, 42)
        .await
        .unwrap_err();
    assert!(matches!(err, GitHubError::InvalidRequest(_)), "{err:?}");
    let err = client(&fake)
        .get_file_contents(&repo(), "docs/../../secrets", "main")
        .await
        .unwrap_err();
    assert!(matches!(err, GitHubError::InvalidRequest(_)), "{err:?}");
    assert!(fake.requests().is_empty());
}
