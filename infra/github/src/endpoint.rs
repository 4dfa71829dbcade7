//! Building request URLs from the configured base.
//!
//! Path parts (owner, repository, file path, refs) come from webhooks and users, so they are
//! added as percent-encoded segments, never formatted into a string: a name with `/`, `?`
//! or `#` cannot change which endpoint is called. `.` and `..` segments are refused, since
//! URL normalisation would silently drop or climb over them.

use parley_core::ports::github::{GitHubError, RepoScope};
use reqwest::Url;

#[derive(Debug, Clone)]
pub(crate) struct ApiBase {
    rest: Url,
    graphql: Url,
}

impl ApiBase {
    pub(crate) fn parse(api_url: &str) -> Result<Self, GitHubError> {
        let rest = Url::parse(api_url.trim_end_matches('/'))
            .map_err(|err| GitHubError::Config(format!("bad GitHub API URL {api_url}: {err}")))?;
        if rest.cannot_be_a_base() || !matches!(rest.scheme(), "http" | "https") {
            return Err(GitHubError::Config(format!(
                "GitHub API URL must be an http(s) URL: {api_url}"
            )));
        }
        let graphql = graphql_url(&rest)?;
        Ok(ApiBase { rest, graphql })
    }

    pub(crate) fn rest(&self) -> &Url {
        &self.rest
    }

    pub(crate) fn graphql(&self) -> &Url {
        &self.graphql
    }

    /// `base/segment/segment/…`, each segment percent-encoded.
    pub(crate) fn url<S: AsRef<str>>(&self, segments: &[S]) -> Result<Url, GitHubError> {
        let mut url = self.rest.clone();
        {
            let mut path = url
                .path_segments_mut()
                .map_err(|()| GitHubError::Config("GitHub API URL cannot take a path".into()))?;
            path.pop_if_empty();
            for segment in segments {
                let segment = segment.as_ref();
                check_segment(segment)?;
                path.push(segment);
            }
        }
        Ok(url)
    }

    /// `base/repos/{owner}/{repo}/…`.
    pub(crate) fn repo_url(&self, repo: &RepoScope, rest: &[&str]) -> Result<Url, GitHubError> {
        let mut segments = vec!["repos", repo.owner.as_str(), repo.name.as_str()];
        segments.extend_from_slice(rest);
        self.url(&segments)
    }
}

fn check_segment(segment: &str) -> Result<(), GitHubError> {
    if segment.is_empty() || segment == "." || segment == ".." {
        Err(GitHubError::InvalidRequest(format!(
            "URL path segment {segment:?} is empty or relative"
        )))
    } else {
        Ok(())
    }
}

/// GitHub.com serves GraphQL at `/graphql` beside the REST root; GitHub Enterprise Server
/// serves REST at `/api/v3` and GraphQL at `/api/graphql`.
fn graphql_url(rest: &Url) -> Result<Url, GitHubError> {
    let mut url = rest.clone();
    let path = rest.path().trim_end_matches('/');
    let graphql_path = match path.strip_suffix("/api/v3") {
        Some(prefix) => format!("{prefix}/api/graphql"),
        None => format!("{path}/graphql"),
    };
    url.set_path(&graphql_path);
    if url.cannot_be_a_base() {
        return Err(GitHubError::Config(format!(
            "cannot derive a GraphQL URL from {rest}"
        )));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graphql_next_to_rest() {
        let cases = [
            ("https://api.github.com", "https://api.github.com/graphql"),
            ("https://api.github.com/", "https://api.github.com/graphql"),
            (
                "https://ghe.example.com/api/v3",
                "https://ghe.example.com/api/graphql",
            ),
            (
                "https://ghe.example.com/api/v3/",
                "https://ghe.example.com/api/graphql",
            ),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080/graphql"),
        ];
        for (rest, graphql) in cases {
            assert_eq!(ApiBase::parse(rest).unwrap().graphql().as_str(), graphql);
        }
    }

    #[test]
    fn segments_are_encoded_and_relative_ones_refused() {
        let base = ApiBase::parse("https://ghe.example.com/api/v3").unwrap();
        let repo = RepoScope::new(1, "octo", "hello world");
        let url = base.repo_url(&repo, &["contents", "a?b#c"]).unwrap();
        assert_eq!(
            url.as_str(),
            "https://ghe.example.com/api/v3/repos/octo/hello%20world/contents/a%3Fb%23c"
        );
        let slashed = base
            .repo_url(&repo, &["compare", "main...feature/x"])
            .unwrap();
        assert!(slashed.path().ends_with("/compare/main...feature%2Fx"));
        let climbing = RepoScope::new(1, "..", "x");
        assert!(matches!(
            base.repo_url(&climbing, &["pulls"]),
            Err(GitHubError::InvalidRequest(_))
        ));
        assert!(
            base.repo_url(&RepoScope::new(1, "o", ""), &["pulls"])
                .is_err()
        );
    }
}
