//! A branch's protection summary and the rules of its rulesets, in the shapes GitHub
//! documents for `GET /repos/{o}/{r}/branches/{branch}` (`branch-with-protection`) and
//! `GET /repos/{o}/{r}/rules/branches/{branch}` (`repository-rule-detailed`); the corpus
//! holds no example of either.

use super::state::State;
use serde_json::{Value, json};

/// A check a branch requires: by its branch protection (`ruleset: None`) or by a ruleset,
/// from one App (`app_id`) or any source (`None`).
pub(super) struct Required {
    pub(super) repo: String,
    pub(super) branch: String,
    pub(super) ruleset: Option<u64>,
    pub(super) context: String,
    pub(super) app_id: Option<u64>,
}

/// The repository's branches (`GET /repos/{o}/{r}/branches`, `short-branch`): `main`
/// and every branch a rule was set on, in name order, as GitHub lists them.
pub(super) fn listing(s: &State, repo: &str) -> Value {
    let mut names: Vec<&str> = (s.required_checks.iter())
        .filter(|r| r.repo == repo)
        .map(|r| r.branch.as_str())
        .chain(["main"])
        .collect();
    names.sort_unstable();
    names.dedup();
    let listed: Vec<Value> = names
        .into_iter()
        .map(|name| {
            let protected = required(s, repo, name, None).next().is_some();
            json!({
                "name": name,
                "commit": {
                    "sha": "7fd1a60b01f91b314f59955a4e4d4e80d8edf11d",
                    "url": format!("https://api.github.com/repos/{repo}/commits/7fd1a60b01f91b314f59955a4e4d4e80d8edf11d"),
                },
                "protected": protected,
            })
        })
        .collect();
    Value::Array(listed)
}

pub(super) fn branch(s: &State, repo: &str, name: &str) -> Value {
    let checks: Vec<Value> = required(s, repo, name, None)
        .map(|(context, app_id)| json!({ "context": context, "app_id": app_id }))
        .collect();
    let contexts: Vec<Value> = checks.iter().map(|c| c["context"].clone()).collect();
    let protected = !checks.is_empty();
    let mut found = json!({
        "name": name,
        "commit": { "sha": "7fd1a60b01f91b314f59955a4e4d4e80d8edf11d" },
        "protected": protected,
        "protection_url": format!("https://api.github.com/repos/{repo}/branches/{name}/protection"),
    });
    if protected {
        found["protection"] = json!({
            "enabled": true,
            "required_status_checks": {
                "enforcement_level": "non_admins",
                "contexts": contexts,
                "checks": checks,
            }
        });
    }
    found
}

pub(super) fn rules(s: &State, repo: &str, name: &str) -> Value {
    let mut rulesets: Vec<u64> = (s.required_checks.iter())
        .filter(|r| r.repo == repo && r.branch == name)
        .filter_map(|r| r.ruleset)
        .collect();
    rulesets.dedup();
    // Another kind of rule beside them, which Parley must pass over.
    let mut rules = vec![json!({
        "type": "non_fast_forward", "ruleset_source_type": "Repository",
        "ruleset_source": repo, "ruleset_id": 1
    })];
    for id in rulesets {
        let checks: Vec<Value> = required(s, repo, name, Some(id))
            .map(|(context, app_id)| match app_id {
                Some(app) => json!({ "context": context, "integration_id": app }),
                None => json!({ "context": context }),
            })
            .collect();
        rules.push(json!({
            "type": "required_status_checks",
            "ruleset_source_type": "Repository",
            "ruleset_source": repo,
            "ruleset_id": id,
            "parameters": {
                "strict_required_status_checks_policy": false,
                "required_status_checks": checks,
            }
        }));
    }
    Value::Array(rules)
}

fn required<'a>(
    s: &'a State,
    repo: &'a str,
    name: &'a str,
    ruleset: Option<u64>,
) -> impl Iterator<Item = (&'a str, Option<u64>)> + 'a {
    s.required_checks
        .iter()
        .filter(move |r| r.repo == repo && r.branch == name && r.ruleset == ruleset)
        .map(|r| (r.context.as_str(), r.app_id))
}
