//! Whether the merge gate holds on a branch: "Parley review" required there, and taken
//! only from Parley. GitHub's rules decide that, not Parley: a required check any source
//! may set is passed by a workflow job or a commit status of the same name, which anyone
//! who can push a workflow (or holds a token with `statuses: write`) can make, whatever
//! Parley concluded. Rules add up: a branch whose protection takes the check only from
//! Parley holds, even when a ruleset also asks for it from any source.

use super::{CHECK_NAME, MANUAL_CHECK_NAME};
use crate::ports::github::{RequiredBy, RequiredCheck};

/// What the branch's rules make of "Parley review".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holds {
    /// Required, and a rule takes it only from this App: nothing else passes it.
    Pinned(RequiredBy),
    /// Required, and a rule takes it only from another App: Parley's check never passes
    /// that rule (an App made again, say, under a new id).
    OtherApp { app_id: u64, by: RequiredBy },
    /// Required, but from any source.
    AnySource(RequiredBy),
    /// Not required: reviews hold no merge.
    NotRequired,
}

/// The gate's standing on one branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateRules {
    pub holds: Holds,
    /// Where "Parley review (manual)" is required, which only a review someone asks for
    /// sets: every PR would wait for someone to ask.
    pub manual: Option<RequiredBy>,
}

/// `required` (a branch's required checks) for the App `app_id`.
pub fn judge(required: &[RequiredCheck], app_id: u64) -> GateRules {
    let gate: Vec<&RequiredCheck> = required
        .iter()
        .filter(|c| c.context == CHECK_NAME)
        .collect();
    let other = gate
        .iter()
        .find_map(|c| c.app_id.filter(|id| *id != app_id).map(|id| (id, c)));
    let holds = if let Some((id, c)) = other {
        Holds::OtherApp {
            app_id: id,
            by: c.by.clone(),
        }
    } else if let Some(c) = gate.iter().find(|c| c.app_id == Some(app_id)) {
        Holds::Pinned(c.by.clone())
    } else if let Some(c) = gate.first() {
        Holds::AnySource(c.by.clone())
    } else {
        Holds::NotRequired
    };
    let manual = required
        .iter()
        .find(|c| c.context == MANUAL_CHECK_NAME)
        .map(|c| c.by.clone());
    GateRules { holds, manual }
}

impl GateRules {
    /// Whether the gate is what its documentation promises: required from Parley alone, and
    /// not waiting on manual reviews. Not required is a team's choice, not a fault.
    pub fn is_sound(&self) -> bool {
        !matches!(self.holds, Holds::OtherApp { .. } | Holds::AnySource(_)) && self.manual.is_none()
    }

    /// What the rules of `branch` make of the gate, and what to change, for the App whose
    /// handle is `app`.
    pub fn describe(&self, branch: &str, app: &str) -> String {
        let mut out = match &self.holds {
            Holds::Pinned(by) => format!(
                "`{CHECK_NAME}` is required on `{branch}` ({}) and only `{app}` can set it.",
                name(by)
            ),
            Holds::OtherApp { app_id, by } => format!(
                "`{CHECK_NAME}` is required on `{branch}` ({}) from another App (id {app_id}), so \
                 this App's check never passes it: choose `{app}` as its source ({}).",
                name(by),
                fix(by)
            ),
            Holds::AnySource(by) => format!(
                "`{CHECK_NAME}` is required on `{branch}` ({}) from any source: a workflow job or \
                 a commit status named `{CHECK_NAME}` passes it without Parley. Choose `{app}` \
                 as its source ({}).",
                name(by),
                fix(by)
            ),
            Holds::NotRequired => format!(
                "`{CHECK_NAME}` is not required on `{branch}`: reviews hold no merge. To make it \
                 the merge gate, require it in branch protection or a ruleset, with `{app}` as \
                 its source."
            ),
        };
        if let Some(by) = &self.manual {
            out.push_str(&format!(
                " `{MANUAL_CHECK_NAME}` is required too ({}): only a review someone asks for \
                 sets it, so every PR waits for one; require `{CHECK_NAME}` instead.",
                name(by)
            ));
        }
        out
    }
}

/// Said when GitHub would not give `what` (the repository, a branch's rules) for `reason`.
pub fn not_known(what: &str, reason: &str) -> String {
    format!(
        "GitHub would not give {what} ({reason}), so whether `{CHECK_NAME}` gates merges is not known."
    )
}

fn name(by: &RequiredBy) -> String {
    match by {
        RequiredBy::BranchProtection => "branch protection".to_string(),
        RequiredBy::Ruleset { id } => format!("ruleset {id}"),
    }
}

fn fix(by: &RequiredBy) -> &'static str {
    match by {
        RequiredBy::BranchProtection => {
            "the branch protection rule's required status checks, the check's source"
        }
        RequiredBy::Ruleset { .. } => {
            "the ruleset's required status checks, the check's source, or its `integration_id`"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARLEY: u64 = 42;

    fn check(context: &str, app_id: Option<u64>, by: RequiredBy) -> RequiredCheck {
        RequiredCheck {
            context: context.to_string(),
            app_id,
            by,
        }
    }

    #[test]
    fn a_gate_from_any_source_is_said_with_the_fix() {
        let classic = RequiredBy::BranchProtection;
        let ruleset = RequiredBy::Ruleset { id: 9 };
        let any = judge(&[check(CHECK_NAME, None, ruleset.clone())], PARLEY);
        assert_eq!(any.holds, Holds::AnySource(ruleset.clone()));
        assert!(!any.is_sound());
        let said = any.describe("main", "parley");
        assert!(
            said.contains("(ruleset 9) from any source")
                && said.contains("a workflow job or a commit status named `Parley review`")
                && said.contains("`integration_id`"),
            "{said}"
        );
        // Rules add up: protection that takes it from Parley alone holds.
        let both = [
            check(CHECK_NAME, None, ruleset.clone()),
            check(CHECK_NAME, Some(PARLEY), classic.clone()),
        ];
        assert_eq!(judge(&both, PARLEY).holds, Holds::Pinned(classic.clone()));
        assert!(judge(&both, PARLEY).is_sound());
        // Another App's rule is never passed by this one's check.
        let other = [
            check(CHECK_NAME, Some(PARLEY), classic.clone()),
            check(CHECK_NAME, Some(7), ruleset.clone()),
        ];
        assert_eq!(
            judge(&other, PARLEY).holds,
            Holds::OtherApp {
                app_id: 7,
                by: ruleset
            }
        );
        // Other checks are not the gate; not requiring it is a choice.
        let none = judge(&[check("ci", None, classic.clone())], PARLEY);
        assert_eq!(none.holds, Holds::NotRequired);
        assert!(none.is_sound());
        assert!(
            none.describe("main", "parley")
                .contains("reviews hold no merge")
        );
        let manual = judge(&[check(MANUAL_CHECK_NAME, Some(PARLEY), classic)], PARLEY);
        assert!(!manual.is_sound());
        assert!(
            manual
                .describe("main", "parley")
                .contains("every PR waits for one")
        );
    }
}
