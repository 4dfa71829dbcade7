//! The operations Parley needs, grouped by GitHub API area. Each is a free function over
//! the client; `port.rs` maps the trait onto them.
//!
//! Every write names its [`Replay`](crate::retry::Replay) class where it is made, so the
//! "no duplicate comments" rule can be checked operation by operation.

pub(crate) mod app;
pub(crate) mod check_runs;
pub(crate) mod contents;
pub(crate) mod issue_comments;
pub(crate) mod permissions;
pub(crate) mod pulls;
pub(crate) mod reactions;
pub(crate) mod review_comments;
pub(crate) mod review_threads;
pub(crate) mod reviews;

use parley_core::ports::github::GitHubError;
use reqwest::Url;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Adds GitHub's `since` filter (ISO 8601) when given.
pub(crate) fn with_since(mut url: Url, since: Option<OffsetDateTime>) -> Result<Url, GitHubError> {
    if let Some(since) = since {
        let formatted = since
            .format(&Rfc3339)
            .map_err(|err| GitHubError::InvalidRequest(format!("bad since timestamp: {err}")))?;
        url.query_pairs_mut().append_pair("since", &formatted);
    }
    Ok(url)
}
