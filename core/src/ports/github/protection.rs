//! What a branch requires before a merge: its required status checks, and who must set
//! each. Parley's merge gate is only as strong as the rule that requires it: a check
//! required from any source is passed by a workflow job, or a commit status, of the same
//! name.

use serde::Deserialize;

/// One status check a branch requires, and where the requirement comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequiredCheck {
    pub context: String,
    /// The App that must set it; `None` when any source may.
    pub app_id: Option<u64>,
    pub by: RequiredBy,
}

/// Where a required check is asked for: classic branch protection, or a ruleset (of the
/// repository or its organisation) that applies to the branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequiredBy {
    BranchProtection,
    Ruleset { id: u64 },
}

/// The most branches [`crate::ports::GitHub::list_branches`] reads: ten pages, far more
/// than the release branches a pattern is for; a repository with more is matched on these.
pub const MAX_BRANCHES_LISTED: usize = 1_000;

/// One branch of a listing (`GET /repos/{o}/{r}/branches`): its name is all it is read for.
#[derive(Debug, Clone, Deserialize)]
pub struct ListedBranch {
    pub name: String,
}

/// A branch as `GET /repos/{o}/{r}/branches/{branch}` gives it: its protection summary,
/// which readers of the repository see (the full protection needs administration access).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Branch {
    #[serde(default)]
    pub protection: Option<BranchProtection>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct BranchProtection {
    #[serde(default)]
    pub enabled: bool,
    #[serde(default)]
    pub required_status_checks: Option<StatusChecks>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct StatusChecks {
    /// `off` when the branch requires none.
    #[serde(default)]
    pub enforcement_level: Option<String>,
    /// The names alone (older servers give only these: any source may set them).
    #[serde(default)]
    pub contexts: Vec<String>,
    #[serde(default)]
    pub checks: Vec<CheckSource>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CheckSource {
    pub context: String,
    /// `null` (or `-1`) when any source may set it.
    #[serde(default)]
    pub app_id: Option<i64>,
}

/// One rule of `GET /repos/{o}/{r}/rules/branches/{branch}`: every active rule of every
/// ruleset that applies to the branch, whatever kind; Parley reads the status checks.
#[derive(Debug, Clone, Deserialize)]
pub struct BranchRule {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub parameters: Option<RuleParameters>,
    #[serde(default)]
    pub ruleset_id: u64,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct RuleParameters {
    #[serde(default)]
    pub required_status_checks: Vec<RuleCheck>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RuleCheck {
    pub context: String,
    /// Absent when any source may set it.
    #[serde(default)]
    pub integration_id: Option<i64>,
}

/// The checks `branch` and `rules` require, each with its source.
pub fn required_checks(branch: &Branch, rules: &[BranchRule]) -> Vec<RequiredCheck> {
    let app = |id: Option<i64>| {
        id.and_then(|id| u64::try_from(id).ok())
            .filter(|id| *id > 0)
    };
    let mut required = Vec::new();
    if let Some(checks) = branch
        .protection
        .as_ref()
        .filter(|p| p.enabled)
        .and_then(|p| p.required_status_checks.as_ref())
        .filter(|c| c.enforcement_level.as_deref() != Some("off"))
    {
        for check in &checks.checks {
            required.push(RequiredCheck {
                context: check.context.clone(),
                app_id: app(check.app_id),
                by: RequiredBy::BranchProtection,
            });
        }
        // A name only in `contexts` has no source named.
        for context in &checks.contexts {
            if !checks.checks.iter().any(|c| &c.context == context) {
                required.push(RequiredCheck {
                    context: context.clone(),
                    app_id: None,
                    by: RequiredBy::BranchProtection,
                });
            }
        }
    }
    for rule in rules.iter().filter(|r| r.kind == "required_status_checks") {
        for check in rule
            .parameters
            .iter()
            .flat_map(|p| &p.required_status_checks)
        {
            required.push(RequiredCheck {
                context: check.context.clone(),
                app_id: app(check.integration_id),
                by: RequiredBy::Ruleset {
                    id: rule.ruleset_id,
                },
            });
        }
    }
    required
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn protection_and_rulesets_name_their_checks_and_sources() {
        let branch: Branch = serde_json::from_value(json!({
            "name": "main", "protected": true,
            "protection": {"enabled": true, "required_status_checks": {
                "enforcement_level": "non_admins",
                "contexts": ["Parley review", "ci/legacy"],
                "checks": [{"context": "Parley review", "app_id": 42}]
            }},
            "protection_url": "https://api.github.com/repos/o/r/branches/main/protection"
        }))
        .unwrap();
        let rules: Vec<BranchRule> = serde_json::from_value(json!([
            {"type": "deletion", "ruleset_source_type": "Repository", "ruleset_source": "o/r", "ruleset_id": 7},
            {"type": "required_status_checks", "ruleset_source_type": "Organization",
             "ruleset_source": "o", "ruleset_id": 9, "parameters": {
                "strict_required_status_checks_policy": false,
                "required_status_checks": [
                    {"context": "Parley review"},
                    {"context": "build", "integration_id": 15368}
                ]}}
        ]))
        .unwrap();
        let found = required_checks(&branch, &rules);
        let seen: Vec<(&str, Option<u64>, &RequiredBy)> = found
            .iter()
            .map(|c| (c.context.as_str(), c.app_id, &c.by))
            .collect();
        assert_eq!(
            seen,
            vec![
                ("Parley review", Some(42), &RequiredBy::BranchProtection),
                ("ci/legacy", None, &RequiredBy::BranchProtection),
                ("Parley review", None, &RequiredBy::Ruleset { id: 9 }),
                ("build", Some(15368), &RequiredBy::Ruleset { id: 9 }),
            ]
        );
    }

    #[test]
    fn unprotected_or_switched_off_requires_nothing() {
        let off: Branch = serde_json::from_value(json!({"protection": {"enabled": true,
            "required_status_checks": {"enforcement_level": "off", "contexts": ["x"], "checks": []}}}))
        .unwrap();
        let unprotected: Branch =
            serde_json::from_value(json!({"name": "main", "protected": false})).unwrap();
        let any: Branch = serde_json::from_value(json!({"protection": {"enabled": true,
            "required_status_checks": {"contexts": [], "checks": [{"context": "x", "app_id": -1}]}}}))
        .unwrap();
        assert!(required_checks(&off, &[]).is_empty());
        assert!(required_checks(&unprotected, &[]).is_empty());
        assert_eq!(required_checks(&any, &[])[0].app_id, None);
    }
}
