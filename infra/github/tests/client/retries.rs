//! Retry paths: server errors, network failures, rate limits, and writes that must not
//! be repeated.

use crate::support::*;
use axum::http::Method;
use parley_core::ports::github::{GitHub, GitHubError, ReactionContent};
use parley_github::{GitHubClient, RetryPolicy};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PR: &str = "/repos/octo-org/hello-world/pulls/42";
const ISSUE_COMMENTS: &str = "/repos/octo-org/hello-world/issues/42/comments";

fn server_error(status: u16) -> Canned {
    Canned::json(status, &json!({"message": "Server Error"}))
}

fn pr_ok() -> Canned {
    Canned::of(&example("pulls__get.200.default"))
}

fn secondary_limit() -> Canned {
    Canned::json(
        403,
        &json!({
            "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
            "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
        }),
    )
}

#[tokio::test]
async fn server_error_then_success() {
    let fake = FakeGitHub::with_token().await;
    fake.on(Method::GET, PR, server_error(500));
    fake.on(Method::GET, PR, pr_ok());
    let pr = client(&fake).get_pull_request(&repo(), 42).await.unwrap();
    assert_eq!(pr.number, 1347);
    assert_eq!(fake.requests_to(Method::GET, PR).len(), 2);
}

#[tokio::test]
async fn server_errors_stop_after_max_attempts() {
    let fake = FakeGitHub::with_token().await;
    fake.on(Method::GET, PR, server_error(502));
    let err = client(&fake)
        .get_pull_request(&repo(), 42)
        .await
        .unwrap_err();
    assert!(
        matches!(err, GitHubError::Server { status: 502, .. }),
        "{err:?}"
    );
    assert_eq!(
        fake.requests_to(Method::GET, PR).len(),
        fast_retry().max_attempts as usize
    );
}

#[tokio::test]
async fn server_errors_stop_when_the_time_budget_is_spent() {
    let fake = FakeGitHub::with_token().await;
    fake.on(Method::GET, PR, server_error(503));
    let mut config = config_for(&fake.base_url);
    config.retry = RetryPolicy {
        max_attempts: 10,
        base_delay: Duration::from_millis(200),
        max_delay: Duration::from_millis(200),
        max_elapsed: Duration::from_millis(50),
        ..fast_retry()
    };
    let err = GitHubClient::new(config)
        .unwrap()
        .get_pull_request(&repo(), 42)
        .await
        .unwrap_err();
    assert!(matches!(err, GitHubError::Server { status: 503, .. }));
    // The first backoff (100-200 ms) already exceeds the 50 ms budget.
    assert_eq!(fake.requests_to(Method::GET, PR).len(), 1);
}

#[tokio::test]
async fn rate_limited_429_honours_retry_after() {
    let fake = FakeGitHub::with_token().await;
    fake.on(
        Method::GET,
        PR,
        Canned::json(429, &json!({"message": "Too Many Requests"})).header("retry-after", "1"),
    );
    fake.on(Method::GET, PR, pr_ok());
    let started = Instant::now();
    client(&fake).get_pull_request(&repo(), 42).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited {:?}",
        started.elapsed()
    );
    assert_eq!(fake.requests_to(Method::GET, PR).len(), 2);
}

#[tokio::test]
async fn secondary_rate_limit_403_is_waited_out() {
    let fake = FakeGitHub::with_token().await;
    fake.on(
        Method::GET,
        PR,
        secondary_limit().header("retry-after", "1"),
    );
    fake.on(Method::GET, PR, pr_ok());
    let started = Instant::now();
    client(&fake).get_pull_request(&repo(), 42).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(fake.requests_to(Method::GET, PR).len(), 2);
}

#[tokio::test]
async fn primary_rate_limit_403_waits_until_reset() {
    let fake = FakeGitHub::with_token().await;
    let reset = time::OffsetDateTime::now_utc().unix_timestamp() + 2;
    fake.on(
        Method::GET,
        PR,
        Canned::json(
            403,
            &json!({"message": "API rate limit exceeded for installation ID 99."}),
        )
        .header("x-ratelimit-remaining", "0")
        .header("x-ratelimit-reset", &reset.to_string()),
    );
    fake.on(Method::GET, PR, pr_ok());
    let started = Instant::now();
    client(&fake).get_pull_request(&repo(), 42).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "waited {:?}",
        started.elapsed()
    );
    assert_eq!(fake.requests_to(Method::GET, PR).len(), 2);
}

#[tokio::test]
async fn a_wait_beyond_the_budget_fails_at_once_with_github_estimate() {
    let fake = FakeGitHub::with_token().await;
    fake.on(
        Method::GET,
        PR,
        Canned::json(429, &json!({"message": "Too Many Requests"})).header("retry-after", "120"),
    );
    let started = Instant::now();
    let err = client(&fake)
        .get_pull_request(&repo(), 42)
        .await
        .unwrap_err();
    assert!(
        matches!(err, GitHubError::RateLimited { retry_after: Some(wait) } if wait == Duration::from_secs(120)),
        "{err:?}"
    );
    assert!(err.is_transient());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "must not sleep when the wait cannot fit"
    );
    assert_eq!(fake.requests_to(Method::GET, PR).len(), 1);
}

#[tokio::test]
async fn a_secondary_limit_without_headers_exceeds_a_small_budget() {
    // GitHub's advice without headers is a minute; the test budget is 5 s.
    let fake = FakeGitHub::with_token().await;
    fake.on(Method::GET, PR, secondary_limit());
    let err = client(&fake)
        .get_pull_request(&repo(), 42)
        .await
        .unwrap_err();
    assert!(
        matches!(err, GitHubError::RateLimited { retry_after: Some(wait) } if wait == Duration::from_secs(60)),
        "{err:?}"
    );
    assert_eq!(fake.requests_to(Method::GET, PR).len(), 1);
}

#[tokio::test]
async fn repeated_rate_limits_stop_at_max_attempts() {
    let fake = FakeGitHub::with_token().await;
    fake.on(
        Method::GET,
        PR,
        Canned::json(429, &json!({"message": "Too Many Requests"})).header("retry-after", "0"),
    );
    let err = client(&fake)
        .get_pull_request(&repo(), 42)
        .await
        .unwrap_err();
    assert!(matches!(err, GitHubError::RateLimited { .. }), "{err:?}");
    assert_eq!(
        fake.requests_to(Method::GET, PR).len(),
        fast_retry().max_attempts as usize
    );
}

#[tokio::test]
async fn a_plain_403_is_forbidden_and_not_retried() {
    let fake = FakeGitHub::with_token().await;
    fake.on(
        Method::GET,
        PR,
        Canned::json(
            403,
            &json!({"message": "Resource not accessible by integration"}),
        )
        .header("x-ratelimit-remaining", "4999"),
    );
    let err = client(&fake)
        .get_pull_request(&repo(), 42)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GitHubError::Forbidden(m) if m.contains("not accessible")),
        "{err:?}"
    );
    assert_eq!(fake.requests_to(Method::GET, PR).len(), 1);
}

#[tokio::test]
async fn creating_writes_are_not_retried_on_server_errors() {
    let fake = FakeGitHub::with_token().await;
    let reply_path = "/repos/octo-org/hello-world/pulls/42/comments/7/replies";
    fake.on(Method::POST, ISSUE_COMMENTS, server_error(500));
    fake.on(
        Method::POST,
        ISSUE_COMMENTS,
        Canned::of(&example("issues__create-comment.201.default")),
    );
    fake.on(Method::POST, reply_path, server_error(502));
    fake.on(
        Method::POST,
        reply_path,
        Canned::of(&example(
            "pulls__create-reply-for-review-comment.201.default",
        )),
    );
    let github = client(&fake);

    let err = github
        .create_issue_comment(&repo(), 42, "hello")
        .await
        .unwrap_err();
    assert!(
        matches!(err, GitHubError::Server { status: 500, .. }),
        "{err:?}"
    );
    assert_eq!(fake.requests_to(Method::POST, ISSUE_COMMENTS).len(), 1);

    let err = github
        .reply_to_review_comment(&repo(), 42, 7, "hello")
        .await
        .unwrap_err();
    assert!(
        matches!(err, GitHubError::Server { status: 502, .. }),
        "{err:?}"
    );
    assert_eq!(fake.requests_to(Method::POST, reply_path).len(), 1);
}

#[tokio::test]
async fn creating_writes_are_retried_when_github_certainly_did_not_act() {
    let fake = FakeGitHub::start().await;
    fake.on(Method::POST, TOKEN_PATH, token_response("ghs_revoked", 60));
    fake.on(Method::POST, TOKEN_PATH, token_response("ghs_fresh", 60));
    fake.on(
        Method::POST,
        ISSUE_COMMENTS,
        Canned::json(429, &json!({"message": "Too Many Requests"})).header("retry-after", "0"),
    );
    fake.on(
        Method::POST,
        ISSUE_COMMENTS,
        Canned::json(401, &json!({"message": "Bad credentials"})),
    );
    fake.on(
        Method::POST,
        ISSUE_COMMENTS,
        Canned::of(&example("issues__create-comment.201.default")),
    );
    let created = client(&fake)
        .create_issue_comment(&repo(), 42, "hello")
        .await
        .unwrap();
    assert_eq!(created.id, 1);
    let posts = fake.requests_to(Method::POST, ISSUE_COMMENTS);
    assert_eq!(posts.len(), 3);
    assert!(
        posts.iter().all(|p| p.json() == json!({"body": "hello"})),
        "same body each time"
    );
}

#[tokio::test]
async fn idempotent_writes_are_retried_on_server_errors() {
    let fake = FakeGitHub::with_token().await;
    let comment = "/repos/octo-org/hello-world/issues/comments/7";
    let reactions = "/repos/octo-org/hello-world/issues/comments/7/reactions";
    fake.on(Method::PATCH, comment, server_error(500));
    fake.on(
        Method::PATCH,
        comment,
        Canned::of(&example("issues__update-comment.200.default")),
    );
    fake.on(Method::POST, reactions, server_error(503));
    fake.on(
        Method::POST,
        reactions,
        Canned::of(&example("reactions__create-for-issue-comment.200.default")),
    );
    let github = client(&fake);
    github
        .update_issue_comment(&repo(), 7, "edited")
        .await
        .unwrap();
    assert_eq!(fake.requests_to(Method::PATCH, comment).len(), 2);
    github
        .add_issue_comment_reaction(&repo(), 7, ReactionContent::Eyes)
        .await
        .unwrap();
    assert_eq!(fake.requests_to(Method::POST, reactions).len(), 2);
}

/// A server that mints tokens normally but drops every other connection after reading the
/// request head, as a crashing proxy would. Counts the dropped requests.
async fn dropping_server() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}", listener.local_addr().unwrap());
    let dropped = Arc::new(AtomicUsize::new(0));
    let counter = dropped.clone();
    let token_body = serde_json::to_vec(&json!({
        "token": TOKEN,
        "expires_at": (time::OffsetDateTime::now_utc() + time::Duration::hours(1))
            .format(&time::format_description::well_known::Rfc3339).unwrap()
    }))
    .unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let counter = counter.clone();
            let token_body = token_body.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                if head.starts_with(format!("POST {TOKEN_PATH} ").as_bytes()) {
                    let response = format!(
                        "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        token_body.len()
                    );
                    socket.write_all(response.as_bytes()).await.ok();
                    socket.write_all(&token_body).await.ok();
                } else {
                    counter.fetch_add(1, Ordering::SeqCst);
                }
                // Dropping the socket closes the connection without an answer.
            });
        }
    });
    (base_url, dropped)
}

#[tokio::test]
async fn network_failures_are_retried_for_reads_but_not_for_creating_writes() {
    let (base_url, dropped) = dropping_server().await;
    let github = GitHubClient::new(config_for(&base_url)).unwrap();

    let err = github.get_pull_request(&repo(), 42).await.unwrap_err();
    assert!(matches!(err, GitHubError::Network(_)), "{err:?}");
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        fast_retry().max_attempts as usize
    );

    dropped.store(0, Ordering::SeqCst);
    let err = github
        .create_issue_comment(&repo(), 42, "hello")
        .await
        .unwrap_err();
    assert!(matches!(err, GitHubError::Network(_)), "{err:?}");
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "a sent write is not repeated"
    );
}
