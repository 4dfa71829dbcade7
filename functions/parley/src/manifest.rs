//! The GitHub App manifest: one form post creates an App with exactly the permissions and
//! events Parley uses (docs/DEPLOY.md walks through the flow).
//!
//! The lists are the code's own: every event the webhook normaliser handles, every
//! permission an operation of the GitHub client needs. A test keeps them honest against
//! [`parley_core::webhook::normalise::HANDLED_EVENTS`].

use serde_json::{Value, json};

/// Permissions and what needs them: repository permissions, and `members`, the one
/// organisation permission.
pub const PERMISSIONS: [(&str, &str, &str); 7] = [
    (
        "pull_requests",
        "write",
        "read PRs and their files, post reviews, replies and reactions",
    ),
    (
        "issues",
        "write",
        "answer mentions in PR conversations and on issues; read the issues a PR says it resolves",
    ),
    (
        "contents",
        "read",
        "read .parley.yml, guideline files and compares",
    ),
    (
        "checks",
        "write",
        "the \"Parley review\" check run a team can require",
    ),
    (
        "merge_queues",
        "read",
        "the merge_group event: the \"Parley review\" check on a merge queue's commits",
    ),
    (
        "metadata",
        "read",
        "mandatory for every App; collaborator permissions",
    ),
    (
        "members",
        "read",
        "organisation permission: who is an organisation admin, for organisation-wide learnings",
    ),
];

/// Webhook events Parley acts on (`installation` and `installation_repositories` are
/// delivered to every App without subscribing).
pub const EVENTS: [&str; 8] = [
    "pull_request",
    "check_run",
    "check_suite",
    "merge_group",
    "issue_comment",
    "pull_request_review",
    "pull_request_review_comment",
    "pull_request_review_thread",
];

/// Where GitHub sends the browser after creating the App, with `?code=…&state=…`. Nothing
/// needs to answer there: the one-time code is read from the address bar and exchanged
/// by hand (docs/DEPLOY.md), so no server has to be running to receive it.
pub const DEFAULT_REDIRECT_URL: &str = "http://localhost/parley-app-created";

/// The manifest JSON. Without a URL the webhook is left inactive (set it after deploying).
pub fn render(url: Option<&str>, name: &str, redirect_url: &str) -> String {
    serde_json::to_string_pretty(&manifest(url, name, redirect_url)).unwrap_or_default()
}

pub fn manifest(url: Option<&str>, name: &str, redirect_url: &str) -> Value {
    let base = url.map(|u| {
        u.trim_end_matches('/')
            .trim_end_matches("/webhook")
            .to_string()
    });
    let permissions: serde_json::Map<String, Value> = PERMISSIONS
        .iter()
        .map(|(name, access, _)| (name.to_string(), Value::from(*access)))
        .collect();
    let mut manifest = json!({
        "name": name,
        "url": base.clone().unwrap_or_else(|| "https://github.com".into()),
        "description": "Reviews pull requests and talks about its findings.",
        "redirect_url": redirect_url,
        "public": false,
        "default_permissions": permissions,
        "default_events": EVENTS,
    });
    manifest["hook_attributes"] = match &base {
        Some(base) => json!({ "url": format!("{base}/webhook"), "active": true }),
        None => json!({ "url": "https://example.invalid/webhook", "active": false }),
    };
    manifest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_webhook_url_comes_from_the_deployment() {
        let m = manifest(
            Some("https://abc.execute-api.us-east-1.amazonaws.com/"),
            "Parley",
            DEFAULT_REDIRECT_URL,
        );
        assert_eq!(
            m["hook_attributes"]["url"],
            "https://abc.execute-api.us-east-1.amazonaws.com/webhook"
        );
        assert_eq!(m["hook_attributes"]["active"], true);
        let m = manifest(
            Some("https://x.example/webhook"),
            "Parley",
            "https://x.example/done",
        );
        assert_eq!(m["hook_attributes"]["url"], "https://x.example/webhook");
        assert_eq!(m["redirect_url"], "https://x.example/done");
        let m = manifest(None, "Parley", DEFAULT_REDIRECT_URL);
        assert_eq!(m["hook_attributes"]["active"], false);
        assert_eq!(m["redirect_url"], DEFAULT_REDIRECT_URL);
    }

    #[test]
    fn asks_for_exactly_the_events_the_webhook_handles() {
        let mut handled: Vec<&str> = parley_core::webhook::normalise::HANDLED_EVENTS
            .iter()
            .copied()
            .filter(|e| !e.starts_with("installation"))
            .collect();
        handled.sort_unstable();
        let mut asked: Vec<&str> = EVENTS.to_vec();
        asked.sort_unstable();
        assert_eq!(asked, handled);
        let m = manifest(None, "Parley", DEFAULT_REDIRECT_URL);
        assert_eq!(m["default_permissions"]["checks"], "write");
        assert_eq!(m["default_permissions"]["contents"], "read");
        assert_eq!(m["default_permissions"]["members"], "read");
        assert_eq!(m["default_permissions"]["merge_queues"], "read");
        assert_eq!(
            m["default_permissions"].as_object().map(|o| o.len()),
            Some(7)
        );
    }
}
