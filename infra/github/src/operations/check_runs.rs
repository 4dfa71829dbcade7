//! The merge gate's check run.

use super::pulls::auth;
use crate::client::GitHubClient;
use crate::retry::Replay;
use parley_core::ports::github::{CheckRun, CheckRunUpdate, GitHubError, NewCheckRun, RepoScope};
use reqwest::Method;

/// Creates a run: not replayed once GitHub may have it, as a second run with the same name
/// would sit beside the first on the PR.
pub(crate) async fn create(
    client: &GitHubClient,
    repo: &RepoScope,
    check_run: &NewCheckRun,
) -> Result<CheckRun, GitHubError> {
    let url = client.base.repo_url(repo, &["check-runs"])?;
    client
        .send_json(
            Method::POST,
            auth(repo),
            url,
            check_run,
            Replay::NotAfterSend,
        )
        .await
}

/// An update sets the same fields each time, so it is replayed.
pub(crate) async fn update(
    client: &GitHubClient,
    repo: &RepoScope,
    check_run_id: u64,
    update: &CheckRunUpdate,
) -> Result<CheckRun, GitHubError> {
    let check_run_id = check_run_id.to_string();
    let url = client.base.repo_url(repo, &["check-runs", &check_run_id])?;
    client
        .send_json(Method::PATCH, auth(repo), url, update, Replay::Safe)
        .await
}

#[derive(serde::Deserialize)]
struct CheckRunList {
    #[serde(default)]
    check_runs: Vec<CheckRun>,
}

/// The runs named `name` on `head_sha`: one page of 100, GitHub's newest first.
pub(crate) async fn list_for_ref(
    client: &GitHubClient,
    repo: &RepoScope,
    head_sha: &str,
    name: &str,
) -> Result<Vec<CheckRun>, GitHubError> {
    let mut url = client
        .base
        .repo_url(repo, &["commits", head_sha, "check-runs"])?;
    url.query_pairs_mut()
        .append_pair("check_name", name)
        .append_pair("per_page", "100");
    let list: CheckRunList = client.get_json(auth(repo), url).await?;
    Ok(list.check_runs)
}
