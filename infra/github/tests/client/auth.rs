//! App JWT, installation tokens, caching and refresh.

use crate::support::*;
use axum::http::Method;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use parley_core::ports::github::GitHub;
use serde_json::Value;
use time::OffsetDateTime;

#[tokio::test]
async fn app_jwt_has_github_claims_and_verifies_with_the_public_key() {
    let fake = FakeGitHub::start().await;
    fake.serve_example("apps__get-authenticated.200.default");
    let started = OffsetDateTime::now_utc().unix_timestamp();

    let app = client(&fake).get_app().await.unwrap();
    assert_eq!(app.slug.as_deref(), Some("octoapp"));
    assert_eq!(app.bot_login().as_deref(), Some("octoapp[bot]"));

    let request = &fake.requests_to(Method::GET, "/app")[0];
    let jwt = request.bearer();
    let header = jsonwebtoken::decode_header(jwt).unwrap();
    assert_eq!(header.alg, Algorithm::RS256);

    let key = DecodingKey::from_rsa_pem(test_key().public_pem.as_bytes()).unwrap();
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_required_spec_claims(&["iat", "exp", "iss"]);
    validation.leeway = 0;
    let claims: Value = jsonwebtoken::decode(jwt, &key, &validation).unwrap().claims;
    let iat = claims["iat"].as_i64().unwrap();
    let exp = claims["exp"].as_i64().unwrap();
    assert_eq!(claims["iss"], Value::from(APP_ID.to_string()));
    assert!(
        (started - 65..=started - 55).contains(&iat),
        "iat {iat} not ~60 s back from {started}"
    );
    assert!(exp > started + 60, "exp {exp} already close to now");
    assert!(exp - started < 600, "exp must be under 10 minutes ahead");
}

#[tokio::test]
async fn every_call_carries_user_agent_accept_and_api_version() {
    let fake = FakeGitHub::with_token().await;
    fake.serve_example("pulls__get.200.default");
    client(&fake).get_pull_request(&repo(), 42).await.unwrap();

    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "token + pull request");
    for request in requests {
        assert_eq!(
            request.header("accept"),
            Some("application/vnd.github+json")
        );
        assert_eq!(request.header("x-github-api-version"), Some("2022-11-28"));
        assert!(request.header("user-agent").unwrap().starts_with("parley/"));
    }
}

#[tokio::test]
async fn token_is_minted_with_the_jwt_and_used_on_repository_calls() {
    let fake = FakeGitHub::with_token().await;
    fake.serve_example("pulls__get.200.default");
    client(&fake).get_pull_request(&repo(), 42).await.unwrap();

    let mint = &fake.requests_to(Method::POST, TOKEN_PATH)[0];
    assert_eq!(
        mint.bearer().split('.').count(),
        3,
        "minting uses the App JWT"
    );
    let call = &fake.requests_to(Method::GET, "/repos/octo-org/hello-world/pulls/42")[0];
    assert_eq!(call.bearer(), TOKEN);
}

#[tokio::test]
async fn one_token_serves_two_calls() {
    let fake = FakeGitHub::with_token().await;
    fake.serve_example("pulls__get.200.default");
    let github = client(&fake);
    github.get_pull_request(&repo(), 42).await.unwrap();
    github.get_pull_request(&repo(), 42).await.unwrap();
    assert_eq!(fake.token_requests(), 1);
}

#[tokio::test]
async fn concurrent_calls_share_one_mint() {
    let fake = FakeGitHub::start().await;
    fake.on(
        Method::POST,
        TOKEN_PATH,
        token_response(TOKEN, 60).delayed(std::time::Duration::from_millis(200)),
    );
    fake.serve_example("pulls__get.200.default");
    let github = client(&fake);
    let scope = repo();
    let (a, b) = tokio::join!(
        github.get_pull_request(&scope, 42),
        github.get_pull_request(&scope, 42)
    );
    a.unwrap();
    b.unwrap();
    assert_eq!(fake.token_requests(), 1);
}

#[tokio::test]
async fn token_inside_the_refresh_margin_is_not_reused() {
    let fake = FakeGitHub::start().await;
    // Four minutes left: inside the five-minute margin, so each call mints anew.
    fake.on(Method::POST, TOKEN_PATH, token_response(TOKEN, 4));
    fake.serve_example("pulls__get.200.default");
    let github = client(&fake);
    github.get_pull_request(&repo(), 42).await.unwrap();
    github.get_pull_request(&repo(), 42).await.unwrap();
    assert_eq!(fake.token_requests(), 2);
}

#[tokio::test]
async fn documented_token_response_parses() {
    // The example verbatim: its 2016 expiry makes it stale at once, so it is minted per call.
    let fake = FakeGitHub::start().await;
    fake.serve_example("apps__create-installation-access-token.201.default");
    fake.serve_example("pulls__get.200.default");
    let github = client(&fake);
    github.get_pull_request(&repo(), 42).await.unwrap();
    github.get_pull_request(&repo(), 42).await.unwrap();
    assert_eq!(fake.token_requests(), 2);
    let call = &fake.requests_to(Method::GET, "/repos/octo-org/hello-world/pulls/42")[0];
    assert_eq!(call.bearer(), TOKEN);
}

#[tokio::test]
async fn installations_get_their_own_tokens() {
    let fake = FakeGitHub::start().await;
    fake.on(Method::POST, TOKEN_PATH, token_response("ghs_for_99", 60));
    fake.on(
        Method::POST,
        "/app/installations/7/access_tokens",
        token_response("ghs_for_7", 60),
    );
    fake.serve_example("pulls__get.200.default");
    let github = client(&fake);
    github.get_pull_request(&repo(), 42).await.unwrap();
    let other = parley_core::ports::github::RepoScope::new(7, OWNER, REPO);
    github.get_pull_request(&other, 42).await.unwrap();

    let calls = fake.requests_to(Method::GET, "/repos/octo-org/hello-world/pulls/42");
    assert_eq!(calls[0].bearer(), "ghs_for_99");
    assert_eq!(calls[1].bearer(), "ghs_for_7");
}

#[tokio::test]
async fn a_401_drops_the_token_and_retries_once_with_a_new_one() {
    let fake = FakeGitHub::start().await;
    fake.on(Method::POST, TOKEN_PATH, token_response("ghs_revoked", 60));
    fake.on(Method::POST, TOKEN_PATH, token_response("ghs_fresh", 60));
    let pr_path = "/repos/octo-org/hello-world/pulls/42";
    fake.on(
        Method::GET,
        pr_path,
        Canned::json(401, &serde_json::json!({"message": "Bad credentials"})),
    );
    fake.on(
        Method::GET,
        pr_path,
        Canned::of(&example("pulls__get.200.default")),
    );

    let github = client(&fake);
    let pr = github.get_pull_request(&repo(), 42).await.unwrap();
    assert_eq!(pr.number, 1347);
    let calls = fake.requests_to(Method::GET, pr_path);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].bearer(), "ghs_revoked");
    assert_eq!(calls[1].bearer(), "ghs_fresh");
    assert_eq!(fake.token_requests(), 2);

    // The fresh token is the cached one now.
    github.get_pull_request(&repo(), 42).await.unwrap();
    assert_eq!(fake.token_requests(), 2);
}

#[tokio::test]
async fn a_second_401_is_unauthorized() {
    let fake = FakeGitHub::with_token().await;
    let pr_path = "/repos/octo-org/hello-world/pulls/42";
    fake.on(
        Method::GET,
        pr_path,
        Canned::json(401, &serde_json::json!({"message": "Bad credentials"})),
    );
    let err = client(&fake)
        .get_pull_request(&repo(), 42)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, parley_core::ports::github::GitHubError::Unauthorized(m) if m.contains("Bad credentials")),
        "{err:?}"
    );
    assert_eq!(fake.requests_to(Method::GET, pr_path).len(), 2);
    assert_eq!(fake.token_requests(), 2);
}

#[tokio::test]
async fn without_credentials_calls_fail_with_config_and_send_nothing() {
    let fake = FakeGitHub::with_token().await;
    let config = parley_github::GitHubConfig {
        api_url: fake.base_url.clone(),
        ..parley_github::GitHubConfig::default()
    };
    let github = parley_github::GitHubClient::new(config).unwrap();
    assert!(!github.has_credentials());
    let err = github.get_pull_request(&repo(), 42).await.unwrap_err();
    assert!(
        matches!(&err, parley_core::ports::github::GitHubError::Config(m) if m.contains("GITHUB_APP_ID")),
        "{err:?}"
    );
    assert!(matches!(
        github.get_app().await,
        Err(parley_core::ports::github::GitHubError::Config(_))
    ));
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn an_unusable_key_is_a_config_error_at_construction() {
    let garbage = "-----BEGIN RSA PRIVATE KEY-----\nbm90IGEga2V5\n-----END RSA PRIVATE KEY-----\n";
    let result = parley_github::GitHubClient::new(parley_github::GitHubConfig::new("1", garbage));
    assert!(matches!(
        result,
        Err(parley_core::ports::github::GitHubError::Config(_))
    ));
}
