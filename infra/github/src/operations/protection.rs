//! The repository and the rules of its branches: what `parley doctor` and
//! `@parley configuration` read to say whether the merge gate holds.

use super::{get_at, pulls::auth};
use crate::client::GitHubClient;
use parley_core::ports::github::{
    Branch, BranchRule, GitHubError, ListedBranch, MAX_BRANCHES_LISTED, PageLimit, RepoScope,
    RepoSummary, RequiredCheck, required_checks,
};

/// Rules on one branch: a few rulesets of a few rules each, in practice.
const MAX_RULES: usize = 300;

pub(crate) async fn repository(
    client: &GitHubClient,
    repo: &RepoScope,
) -> Result<RepoSummary, GitHubError> {
    get_at(client, repo, &[]).await
}

/// Branch protection's summary, then the rulesets' rules. A branch name's `/` are path
/// separators to GitHub (`release/1.0` is two segments), as in `matching-refs`.
pub(crate) async fn checks(
    client: &GitHubClient,
    repo: &RepoScope,
    branch: &str,
) -> Result<Vec<RequiredCheck>, GitHubError> {
    let segments = |first: &'static [&'static str]| {
        let mut path: Vec<&str> = first.to_vec();
        path.extend(branch.split('/'));
        path
    };
    let protected: Branch = get_at(client, repo, &segments(&["branches"])).await?;
    let url = client
        .base
        .repo_url(repo, &segments(&["rules", "branches"]))?;
    let rules: Vec<BranchRule> = match client
        .get_paged(auth(repo), url, PageLimit::items(MAX_RULES))
        .await
    {
        Ok(listing) => listing.items,
        // A GitHub Enterprise Server from before rulesets.
        Err(err) if err.is_absent() => Vec::new(),
        Err(err) => return Err(err),
    };
    Ok(required_checks(&protected, &rules))
}

/// The names of the repository's branches, for the patterns of `review.baseBranches`.
pub(crate) async fn branches(
    client: &GitHubClient,
    repo: &RepoScope,
) -> Result<Vec<String>, GitHubError> {
    let url = client.base.repo_url(repo, &["branches"])?;
    let listing = client
        .get_paged::<ListedBranch>(auth(repo), url, PageLimit::items(MAX_BRANCHES_LISTED))
        .await?;
    Ok(listing
        .items
        .into_iter()
        .map(|branch| branch.name)
        .collect())
}
