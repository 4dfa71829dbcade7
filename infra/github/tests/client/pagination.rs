//! `Link` pagination over the recorded octokit/fixtures `paginate-issues` exchange: five
//! pages of three (the last holds one), linked by GitHub's real `Link` headers.

use crate::support::*;
use axum::http::Method;
use parley_core::ports::github::{GitHub, GitHubError, PageLimit};
use serde_json::Value;

const FIRST_PAGE: &str = "/repos/octo-org/hello-world/issues/42/comments";

/// Serves the recorded pages. The first page answers at our endpoint; the others at the
/// paths its links name. Links are rewritten to the fake's origin unless `keep_origin`.
fn serve_recorded_pages(fake: &FakeGitHub, keep_origin: bool) {
    for (index, exchange) in recorded("paginate-issues").iter().enumerate() {
        let mut canned = Canned::json(200, &exchange["response"]);
        if let Some(link) = exchange["headers"]["link"].as_str() {
            let link = if keep_origin {
                link.to_owned()
            } else {
                link.replace("https://api.github.com", &fake.base_url)
            };
            canned = canned.header("link", &link);
        }
        if index == 0 {
            fake.on(Method::GET, FIRST_PAGE, canned);
        } else {
            let recorded_path = exchange["path"].as_str().unwrap();
            let (path, query) = recorded_path.split_once('?').unwrap();
            fake.on_query(Method::GET, path, Some(query), canned);
        }
    }
}

fn ids(items: &[parley_core::ports::github::IssueComment]) -> Vec<u64> {
    items.iter().map(|item| item.id).collect()
}

#[tokio::test]
async fn follows_every_link_to_the_last_page() {
    let fake = FakeGitHub::with_token().await;
    serve_recorded_pages(&fake, false);
    let listing = client(&fake)
        .list_issue_comments(&repo(), 42, None, PageLimit::items(100))
        .await
        .unwrap();
    assert_eq!(ids(&listing.items), (1000..=1012).collect::<Vec<_>>());
    assert!(!listing.truncated);
    let pages: Vec<Value> = recorded("paginate-issues");
    assert_eq!(
        fake.requests().len() - 1,
        pages.len(),
        "every page once, plus the token"
    );
}

#[tokio::test]
async fn stops_at_the_item_cap_mid_listing() {
    let fake = FakeGitHub::with_token().await;
    serve_recorded_pages(&fake, false);
    let listing = client(&fake)
        .list_issue_comments(&repo(), 42, None, PageLimit::items(7))
        .await
        .unwrap();
    assert_eq!(ids(&listing.items), (1000..1007).collect::<Vec<_>>());
    assert!(listing.truncated);
    // Three pages of three hold the first seven; the fourth is never fetched.
    let fetched: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.method == Method::GET)
        .collect();
    assert_eq!(fetched.len(), 3);
    assert_eq!(fetched[0].query.as_deref(), Some("per_page=7"));
    assert_eq!(fetched[2].query.as_deref(), Some("per_page=3&page=3"));
}

#[tokio::test]
async fn stops_at_the_page_cap() {
    let fake = FakeGitHub::with_token().await;
    serve_recorded_pages(&fake, false);
    let listing = client(&fake)
        .list_issue_comments(&repo(), 42, None, PageLimit::pages(2))
        .await
        .unwrap();
    assert_eq!(ids(&listing.items), (1000..1006).collect::<Vec<_>>());
    assert!(listing.truncated);
    assert_eq!(fake.requests().len(), 1 + 2);
}

#[tokio::test]
async fn exactly_filling_the_cap_on_the_last_page_is_not_truncated() {
    let fake = FakeGitHub::with_token().await;
    serve_recorded_pages(&fake, false);
    let listing = client(&fake)
        .list_issue_comments(&repo(), 42, None, PageLimit::items(13))
        .await
        .unwrap();
    assert_eq!(listing.items.len(), 13);
    assert!(!listing.truncated);
}

#[tokio::test]
async fn a_zero_cap_sends_nothing() {
    let fake = FakeGitHub::with_token().await;
    serve_recorded_pages(&fake, false);
    let listing = client(&fake)
        .list_issue_comments(&repo(), 42, None, PageLimit::items(0))
        .await
        .unwrap();
    assert!(listing.items.is_empty());
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn links_to_another_origin_are_not_followed() {
    // The recorded links point at https://api.github.com, not at this fake: following them
    // would send the installation token to a host other than GITHUB_API_URL.
    let fake = FakeGitHub::with_token().await;
    serve_recorded_pages(&fake, true);
    let err = client(&fake)
        .list_issue_comments(&repo(), 42, None, PageLimit::items(100))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GitHubError::Config(m) if m.contains("https://api.github.com")),
        "{err:?}"
    );
    assert_eq!(fake.requests().len(), 1 + 1, "token and first page only");
}
