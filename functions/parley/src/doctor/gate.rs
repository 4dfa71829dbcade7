//! The doctor's "merge gate" row: whether the rules of the branches the repository
//! reviews make "Parley review" a gate only Parley can pass (see
//! [`parley_core::review::gate::protection`]). A check required from any source is
//! passed by a workflow job of that name, and the rules are the repository admins' to
//! set, not Parley's.

use super::{Check, Target, ok, skip, warn};
use parley_core::ports::github::{App, GitHub, RepoScope};
use parley_core::review::gate;
use parley_core::review::skip::reviews_base;

/// Branches a `review.baseBranches` pattern matches whose rules are read: a release
/// branch or two a team keeps; a repository with a branch per release for years gets
/// the last ten by name and a count of the rest.
const MAX_MATCHED_BRANCHES: usize = 10;

/// Read for the default branch, each branch `review.baseBranches` names, and the
/// branches its patterns (`release/*`) match among the repository's (listed); one not
/// sound makes the row a WARN.
pub(super) async fn merge_gate(target: &Target<'_>, app: Option<&App>) -> Check {
    const NAME: &str = "merge gate";
    let (repo, scope, github) = match target.installed(NAME) {
        Ok((repo, scope, github, _)) => (repo, scope, github),
        Err(row) => return row,
    };
    let Some(app) = app else {
        return skip(NAME, "needs a working GitHub App first");
    };
    let default = match github.get_repository(&scope).await {
        Ok(found) => found.default_branch.unwrap_or_else(|| "main".to_string()),
        Err(err) => {
            return warn(NAME, gate::protection::not_known(repo, err.public_reason()));
        }
    };
    let bases = match target.config().await {
        Some(loaded) => loaded.config.review.base_branches.clone(),
        None => Vec::new(),
    };
    let (mut branches, patterns) = gated_branches(&default, &bases);
    let mut said = Vec::new();
    if !patterns.is_empty() {
        match matched_branches(github.as_ref(), &scope, &patterns, &branches).await {
            Ok(None) => said.push(format!(
                "No branch matches {} (review.baseBranches) yet.",
                quoted_list(&patterns)
            )),
            Ok(Some((matched, more))) => {
                if more > 0 {
                    said.push(format!(
                        "{more} more branches matching {} (review.baseBranches) are not read \
                         here: `@parley configuration` on a PR says its base branch's rules.",
                        quoted_list(&patterns)
                    ));
                }
                branches.extend(matched);
            }
            Err(reason) => said.push(format!(
                "Branches matching {} (review.baseBranches) are not read here (GitHub would \
                 not list the branches: {reason}): `@parley configuration` on a PR says its \
                 base branch's rules.",
                quoted_list(&patterns)
            )),
        }
    }
    let mut sound = true;
    let mut rules_said = Vec::new();
    for branch in &branches {
        match github.required_checks(&scope, branch).await {
            Ok(required) => {
                let rules = gate::protection::judge(&required, app.id);
                sound &= rules.is_sound();
                let slug = app.slug.as_deref().unwrap_or("this App");
                rules_said.push(rules.describe(branch, slug));
            }
            Err(err) => {
                sound = false;
                rules_said.push(gate::protection::not_known(
                    &format!("the rules of `{branch}`"),
                    err.public_reason(),
                ));
            }
        }
    }
    rules_said.extend(said);
    let said = rules_said.join(" ");
    match (branches.is_empty(), sound) {
        (true, _) => skip(NAME, said),
        (false, true) => ok(NAME, said),
        (false, false) => warn(NAME, said),
    }
}

/// The branches whose rules the doctor reads by name: the default branch unless
/// `review.baseBranches` leaves it out (its PRs are never reviewed, so no rule there is
/// Parley's concern), then each branch that list names outright; and apart, the list's
/// patterns (`release/*`), whose branches a listing finds.
fn gated_branches(default: &str, bases: &[String]) -> (Vec<String>, Vec<String>) {
    let (patterns, named): (Vec<&String>, Vec<&String>) = bases
        .iter()
        .partition(|base| base.contains(['*', '?', '[', '{']));
    let mut branches = Vec::new();
    if reviews_base(bases, default) {
        branches.push(default.to_string());
    }
    for branch in named {
        if !branches.contains(branch) {
            branches.push(branch.clone());
        }
    }
    (branches, patterns.into_iter().cloned().collect())
}

/// The repository's branches `patterns` match, not among `read` already, at most
/// [`MAX_MATCHED_BRANCHES`] (the last by name, numbers compared as numbers:
/// `release/10.0` after `release/9.0`), and how many more match; `None` where no
/// branch matches at all (one named too, `main` under `ma*`, is a match read already).
/// `Err` says why GitHub would not list them.
async fn matched_branches(
    github: &dyn GitHub,
    scope: &RepoScope,
    patterns: &[String],
    read: &[String],
) -> Result<Option<(Vec<String>, usize)>, String> {
    let listed = github
        .list_branches(scope)
        .await
        .map_err(|err| err.public_reason())?;
    let (mut matched, named): (Vec<String>, Vec<String>) = listed
        .into_iter()
        .filter(|branch| reviews_base(patterns, branch))
        .partition(|branch| !read.contains(branch));
    if matched.is_empty() && named.is_empty() {
        return Ok(None);
    }
    matched.sort_by_key(|branch| by_version(branch));
    let more = matched.len().saturating_sub(MAX_MATCHED_BRANCHES);
    Ok(Some((matched.split_off(more), more)))
}

/// A branch name as its numbers order it (`release/9.0` before `release/10.0`): its runs
/// of digits as numbers, the rest as text. A key of a few parts per name is all ten
/// release branches need; no crate is worth adding for it.
fn by_version(branch: &str) -> Vec<(String, u64)> {
    let mut key = Vec::new();
    let mut rest = branch;
    while !rest.is_empty() {
        let text_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (text, after) = rest.split_at(text_len);
        let digits_len = after
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after.len());
        let (digits, after) = after.split_at(digits_len);
        key.push((text.to_string(), digits.parse().unwrap_or(u64::MAX)));
        rest = after;
    }
    key
}

fn quoted_list(patterns: &[String]) -> String {
    let quoted: Vec<String> = patterns.iter().map(|p| format!("`{p}`")).collect();
    quoted.join(", ")
}
