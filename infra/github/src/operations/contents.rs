//! Files at a ref (guideline files and `.parley.yml`, always read from the base branch),
//! the tarball a review reads the code from, and the branches under a prefix.

use super::pulls::auth;
use crate::client::GitHubClient;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use parley_core::ports::github::{FileContent, GitHubError, Reference, RepoScope};
use serde::Deserialize;
use serde::de::IgnoredAny;

/// The contents endpoint answers an array for a directory and an object otherwise.
#[derive(Deserialize)]
#[serde(untagged)]
enum ContentsWire {
    Directory(Vec<IgnoredAny>),
    Entry(EntryWire),
}

#[derive(Deserialize)]
struct EntryWire {
    /// `file`, `dir`, `symlink` or `submodule`.
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    path: String,
    #[serde(default)]
    sha: String,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    encoding: Option<String>,
}

/// The repository at `sha` as a gzipped tarball. GitHub answers with a redirect to
/// codeload, which the HTTP client follows (dropping the token on the way, as it should
/// for another host).
pub(crate) async fn tarball(
    client: &GitHubClient,
    repo: &RepoScope,
    sha: &str,
    max_bytes: u64,
) -> Result<Vec<u8>, GitHubError> {
    let url = client.base.repo_url(repo, &["tarball", sha])?;
    let reply = client
        .send(&crate::request::Call {
            method: reqwest::Method::GET,
            url,
            auth: auth(repo),
            body: None,
            replay: crate::retry::Replay::Safe,
        })
        .await?;
    if reply.body.len() as u64 > max_bytes {
        return Err(GitHubError::InvalidRequest(format!(
            "the repository archive is {} bytes, over the {max_bytes} allowed",
            reply.body.len()
        )));
    }
    Ok(reply.body)
}

pub(crate) async fn get_file(
    client: &GitHubClient,
    repo: &RepoScope,
    path: &str,
    git_ref: &str,
) -> Result<Option<FileContent>, GitHubError> {
    let mut segments = vec!["contents"];
    segments.extend(path.trim_start_matches('/').split('/'));
    let mut url = client.base.repo_url(repo, &segments)?;
    if !git_ref.is_empty() {
        url.query_pairs_mut().append_pair("ref", git_ref);
    }
    let wire: ContentsWire = match client.get_json(auth(repo), url).await {
        Ok(wire) => wire,
        Err(GitHubError::NotFound(_)) => return Ok(None),
        Err(err) => return Err(err),
    };
    let entry = match wire {
        ContentsWire::Entry(entry) if entry.kind == "file" => entry,
        ContentsWire::Entry(entry) => {
            tracing::debug!(path, kind = %entry.kind, "not a file; treating as absent");
            return Ok(None);
        }
        ContentsWire::Directory(entries) => {
            tracing::debug!(
                path,
                entries = entries.len(),
                "a directory; treating as absent"
            );
            return Ok(None);
        }
    };
    let bytes = match (entry.encoding.as_deref(), entry.content.as_deref()) {
        (Some("base64"), Some(content)) => decode_base64(content)
            .map_err(|err| GitHubError::Decode(format!("contents of {path}: {err}")))?,
        (encoding, _) => {
            // GitHub sends `encoding: none` and no content for files over 1 MB.
            return Err(GitHubError::Decode(format!(
                "contents of {path} came without base64 content (encoding {encoding:?}); \
                 files over 1 MB are not served by this endpoint"
            )));
        }
    };
    Ok(Some(FileContent {
        path: if entry.path.is_empty() {
            path.to_owned()
        } else {
            entry.path
        },
        sha: entry.sha,
        bytes,
    }))
}

/// GitHub wraps base64 at 60 columns with `\n`. The examples in GitHub's own OpenAPI
/// description carry the two characters `\` `n` instead (an escaping slip); backslash is
/// never base64, so dropping that pair too is safe and accepts both.
pub(crate) fn decode_base64(content: &str) -> Result<Vec<u8>, base64::DecodeError> {
    let compact: String = content
        .replace("\\n", "")
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    STANDARD.decode(compact)
}

/// `GET /repos/{o}/{r}/git/matching-refs/{prefix}`: each `/` of the prefix is a path
/// separator (a branch named `release/1.0` stays two segments), so the prefix is pushed
/// segment by segment rather than escaped as one.
pub(crate) async fn matching_refs(
    client: &GitHubClient,
    repo: &RepoScope,
    prefix: &str,
) -> Result<Vec<Reference>, GitHubError> {
    let mut path = vec!["git", "matching-refs"];
    path.extend(prefix.split('/'));
    let url = client.base.repo_url(repo, &path)?;
    client.get_json(auth(repo), url).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_wrapped_base64() {
        assert_eq!(
            decode_base64("aGVs\nbG8g\nd29y\nbGQ=\n").unwrap(),
            b"hello world"
        );
        assert_eq!(
            decode_base64("aGVs\\nbG8g\\nd29ybGQ=\\n").unwrap(),
            b"hello world"
        );
        assert!(decode_base64("not base64!").is_err());
    }
}
