//! Following GitHub's `Link: <…>; rel="next"` headers, within the caller's cap.
//!
//! GitHub paginates by opaque links (some listings use cursors, not page numbers), so the
//! next URL is taken from the header rather than computed. It is only followed when it
//! points at the configured API origin: the installation token goes with the request, and
//! must never be sent to another host.

use parley_core::ports::github::GitHubError;
use reqwest::Url;
use reqwest::header::HeaderMap;

/// The `rel="next"` target of a `Link` header, if any.
pub(crate) fn next_link(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(reqwest::header::LINK)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(next_in_link_value)
}

/// Scans `<url>; param; param, <url>; …` by angle brackets rather than splitting on commas,
/// because a URL may itself contain a comma.
fn next_in_link_value(value: &str) -> Option<String> {
    let mut rest = value;
    while let Some(open) = rest.find('<') {
        let after_open = &rest[open + 1..];
        let close = after_open.find('>')?;
        let target = &after_open[..close];
        let after_target = &after_open[close + 1..];
        let params_end = after_target.find('<').unwrap_or(after_target.len());
        let params = &after_target[..params_end];
        if params.split(';').any(is_rel_next) {
            return Some(target.to_owned());
        }
        rest = &after_target[params_end..];
    }
    None
}

/// `rel="next"`, `rel=next`, or a space-separated list containing `next`.
fn is_rel_next(param: &str) -> bool {
    let Some((name, value)) = param.split_once('=') else {
        return false;
    };
    name.trim().eq_ignore_ascii_case("rel")
        && value
            .trim()
            .trim_matches(|c| c == '"' || c == ',')
            .split_whitespace()
            .any(|rel| rel.eq_ignore_ascii_case("next"))
}

/// Parses `link` and checks it stays on `api`'s scheme, host and port.
pub(crate) fn same_origin_link(api: &Url, link: &str) -> Result<Url, GitHubError> {
    let url = Url::parse(link)
        .map_err(|err| GitHubError::Decode(format!("bad pagination link {link}: {err}")))?;
    if url.origin() == api.origin() {
        Ok(url)
    } else {
        Err(GitHubError::Config(format!(
            "GitHub returned a pagination link to {}, outside the configured API origin {}; \
             set GITHUB_API_URL to the address GitHub reports for itself",
            url.origin().ascii_serialization(),
            api.origin().ascii_serialization()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn link(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(reqwest::header::LINK, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn finds_next_among_other_relations() {
        // Verbatim from octokit/fixtures paginate-issues, page 2.
        let value = r#"<https://api.github.com/repositories/1000/issues?per_page=3&page=1>; rel="prev", <https://api.github.com/repositories/1000/issues?per_page=3&page=3>; rel="next", <https://api.github.com/repositories/1000/issues?per_page=3&page=5>; rel="last", <https://api.github.com/repositories/1000/issues?per_page=3&page=1>; rel="first""#;
        assert_eq!(
            next_link(&link(value)).as_deref(),
            Some("https://api.github.com/repositories/1000/issues?per_page=3&page=3")
        );
    }

    #[test]
    fn last_page_has_no_next() {
        let value = r#"<https://api.github.com/repositories/1000/issues?per_page=3&page=4>; rel="prev", <https://api.github.com/repositories/1000/issues?per_page=3&page=1>; rel="first""#;
        assert_eq!(next_link(&link(value)), None);
        assert_eq!(next_link(&HeaderMap::new()), None);
    }

    #[test]
    fn tolerates_commas_in_urls_and_unquoted_rel() {
        let value = "<https://x.test/a?labels=a,b&page=2>; rel=next";
        assert_eq!(
            next_link(&link(value)).as_deref(),
            Some("https://x.test/a?labels=a,b&page=2")
        );
    }

    #[test]
    fn refuses_links_to_other_origins() {
        let api = Url::parse("https://ghe.example.com/api/v3").unwrap();
        assert!(same_origin_link(&api, "https://ghe.example.com/api/v3/x?page=2").is_ok());
        let err = same_origin_link(&api, "https://evil.example.com/api/v3/x?page=2").unwrap_err();
        assert!(matches!(err, GitHubError::Config(_)));
        assert!(same_origin_link(&api, "http://ghe.example.com/api/v3/x").is_err());
    }
}
