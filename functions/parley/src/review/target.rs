//! What `parley review` was asked to review: a PR by URL or `owner/repo#N`.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRef {
    pub owner: String,
    pub name: String,
    pub number: u64,
    /// `https://HOST` when the PR was given by URL: the server it lives on (github.com or a
    /// GitHub Enterprise Server), which decides where to read it and post to.
    pub origin: Option<String>,
}

impl PullRef {
    /// The REST API of the server the URL names: `https://api.github.com` for github.com,
    /// `ORIGIN/api/v3` for GitHub Enterprise Server. `None` for `OWNER/REPO#N`.
    pub fn api_url(&self) -> Option<String> {
        let origin = self.origin.as_deref()?;
        let host = origin.split_once("://").map_or(origin, |(_, host)| host);
        Some(if is_dotcom(host) {
            "https://api.github.com".to_string()
        } else {
            format!("{origin}/api/v3")
        })
    }

    /// Whether `api_url` (`GITHUB_API_URL`) is the API of the server the URL names.
    /// `true` for `OWNER/REPO#N`, which names no server.
    pub fn served_by(&self, api_url: &str) -> bool {
        let Some(origin) = self.origin.as_deref() else {
            return true;
        };
        let host = |url: &str| {
            let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
            rest.split('/')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase()
        };
        let (pr_host, api_host) = (host(origin), host(api_url));
        if is_dotcom(&pr_host) {
            api_host == "api.github.com"
        } else {
            api_host == pr_host
        }
    }
}

fn is_dotcom(host: &str) -> bool {
    host.eq_ignore_ascii_case("github.com") || host.eq_ignore_ascii_case("www.github.com")
}

impl fmt::Display for PullRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}#{}", self.owner, self.name, self.number)
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "{0:?} is not a pull request: give its URL (https://github.com/OWNER/REPO/pull/N) or OWNER/REPO#N"
)]
pub struct BadReference(pub String);

/// `https://HOST/OWNER/REPO/pull/N[/files…]` (any host: GitHub Enterprise too) or
/// `OWNER/REPO#N`.
pub fn parse(text: &str) -> Result<PullRef, BadReference> {
    let bad = || BadReference(text.to_string());
    let trimmed = text.trim();
    let mut origin = None;
    let (repo, number) = if let Some((scheme, rest)) = trimmed
        .strip_prefix("https://")
        .map(|rest| ("https", rest))
        .or_else(|| trimmed.strip_prefix("http://").map(|rest| ("http", rest)))
    {
        let mut parts = rest.split('/');
        let host = parts.next().filter(|h| !h.is_empty()).ok_or_else(bad)?;
        origin = Some(format!("{scheme}://{host}"));
        let owner = parts.next().ok_or_else(bad)?;
        let name = parts.next().ok_or_else(bad)?;
        if parts.next() != Some("pull") {
            return Err(bad());
        }
        let number = parts.next().ok_or_else(bad)?;
        (
            format!("{owner}/{name}"),
            number
                .split(['?', '#'])
                .next()
                .unwrap_or_default()
                .to_string(),
        )
    } else {
        let (repo, number) = trimmed.split_once('#').ok_or_else(bad)?;
        (repo.to_string(), number.to_string())
    };
    let (owner, name) = repo.split_once('/').ok_or_else(bad)?;
    let valid = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if !valid(owner) || !valid(name) {
        return Err(bad());
    }
    let number: u64 = number.parse().map_err(|_| bad())?;
    if number == 0 {
        return Err(bad());
    }
    Ok(PullRef {
        owner: owner.to_string(),
        name: name.to_string(),
        number,
        origin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_short_references() {
        for text in [
            "https://github.com/octo-org/hello-world/pull/42",
            "https://github.com/octo-org/hello-world/pull/42/files",
            "https://github.com/octo-org/hello-world/pull/42#discussion_r1",
            "octo-org/hello-world#42",
            " octo-org/hello-world#42\n",
        ] {
            let parsed = parse(text).expect(text);
            assert_eq!(
                (parsed.owner.as_str(), parsed.name.as_str(), parsed.number),
                ("octo-org", "hello-world", 42),
                "{text}"
            );
        }
        assert_eq!(
            parse("https://ghe.example.com/a/b.c/pull/7").map(|p| p.to_string()),
            Ok("a/b.c#7".to_string())
        );
    }

    #[test]
    fn the_url_names_the_server_to_talk_to() {
        let dotcom = parse("https://github.com/o/r/pull/1").unwrap();
        assert_eq!(dotcom.api_url().as_deref(), Some("https://api.github.com"));
        assert!(dotcom.served_by("https://api.github.com"));
        assert!(!dotcom.served_by("https://ghe.example.com/api/v3"));
        let ghes = parse("https://ghe.example.com/o/r/pull/1").unwrap();
        assert_eq!(
            ghes.api_url().as_deref(),
            Some("https://ghe.example.com/api/v3")
        );
        assert!(ghes.served_by("https://GHE.example.com/api/v3"));
        assert!(!ghes.served_by("https://api.github.com"));
        let local = parse("http://127.0.0.1:8080/o/r/pull/1").unwrap();
        assert!(local.served_by("http://127.0.0.1:8080"));
        assert!(!local.served_by("http://127.0.0.1:9090"));
        let short = parse("o/r#1").unwrap();
        assert_eq!(short.api_url(), None);
        assert!(short.served_by("https://ghe.example.com/api/v3"));
    }

    #[test]
    fn anything_else_is_refused_with_the_expected_forms() {
        for text in [
            "",
            "42",
            "octo-org#42",
            "octo-org/hello-world",
            "octo-org/hello-world#x",
            "octo-org/hello-world#0",
            "https://github.com/octo-org/hello-world/issues/42",
            "https://github.com/octo-org/hello-world",
            "octo org/hello#1",
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.to_string().contains("OWNER/REPO#N"), "{text}: {err}");
        }
    }
}
