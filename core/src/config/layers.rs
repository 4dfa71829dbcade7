//! An organisation's defaults under each repository's own `.parley.yml`.
//!
//! A team with many repositories writes its settings once, in `.parley.yml` on the
//! default branch of the organisation's (or account's) `.github` repository, GitHub's
//! home for what an organisation shares across its repositories. Each repository's file
//! is read over it: a key the repository sets wins, whole (a list is replaced, not
//! appended to); a key it does not set, or sets to a value Parley rejects, keeps the
//! organisation's; a key neither sets keeps Parley's default. Both files come from
//! default branches, never from a pull request: whoever may push to the `.github`
//! repository's sets the defaults, the gate's included, of every repository that does not
//! set its own (the README says to protect that branch accordingly).

use super::{ConfigWarning, RepoConfig, parse_over};
use std::collections::BTreeSet;

/// The repository that holds an organisation's shared settings: `{owner}/.github`.
pub const ORG_REPO: &str = ".github";

/// A repository's configuration read over its organisation's.
#[derive(Debug, Clone, PartialEq)]
pub struct Layered {
    pub config: RepoConfig,
    /// Both files' warnings, the organisation's saying where they come from.
    pub warnings: Vec<ConfigWarning>,
    /// The keys the organisation's file set and the repository's did not: where
    /// `@parley configuration` says they came from.
    pub from_org: BTreeSet<String>,
    /// What the repository's file was read over: the organisation's settings on Parley's
    /// defaults (the defaults alone without an organisation file). Another version of
    /// the repository's file, a PR's, is read over the same to say what it would change.
    pub under: RepoConfig,
}

/// Read the repository's `repo` text over the organisation's `org` text (from `label`,
/// `owner/.github`). Never fails, as [`super::parse`] does not.
pub fn parse_layered(org: &str, label: &str, repo: &str) -> Layered {
    let (org_config, org_warnings) = super::parse(org);
    let (mut config, mut warnings) = parse_over(repo, &org_config);
    let from_org: BTreeSet<String> = org_config
        .explicit
        .difference(&config.explicit)
        .cloned()
        .collect();
    config.explicit.extend(org_config.explicit.iter().cloned());
    let org_warnings = org_warnings.into_iter().map(|warning| ConfigWarning {
        message: format!("{} (in {label}'s `.parley.yml`)", warning.message),
        ..warning
    });
    warnings.splice(0..0, org_warnings);
    Layered {
        config,
        warnings,
        from_org,
        under: org_config,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::Severity;

    const ORG: &str =
        "review:\n  minConfidence: 90\n  skipPaths: ['docs/**']\ngate:\n  blockOn: [critical]\n";

    #[test]
    fn the_repository_wins_key_by_key_over_the_organisation() {
        let repo = "gate:\n  blockOn: [critical, high]\nreview:\n  maxInlineComments: 5\n";
        let layered = parse_layered(ORG, "acme/.github", repo);
        let c = &layered.config;
        assert_eq!(c.review.min_confidence, 90, "the organisation's");
        assert_eq!(c.review.skip_paths, vec!["docs/**".to_string()]);
        assert_eq!(c.review.max_inline_comments, 5, "the repository's");
        assert_eq!(
            c.gate.block_on,
            vec![Severity::Critical, Severity::High],
            "a list is replaced whole"
        );
        assert_eq!(c.review.judge, RepoConfig::default().review.judge);
        let from_org: Vec<&str> = layered.from_org.iter().map(String::as_str).collect();
        assert_eq!(from_org, ["review.minConfidence", "review.skipPaths"]);
        for key in [
            "review.minConfidence",
            "gate.blockOn",
            "review.maxInlineComments",
        ] {
            assert!(c.explicit.contains(key), "{key} was set by someone");
        }
        assert!(layered.warnings.is_empty(), "{:?}", layered.warnings);
    }

    /// A value the repository gets wrong falls back to the organisation's, not Parley's;
    /// the organisation's own mistakes are reported as its.
    #[test]
    fn a_rejected_value_falls_back_to_the_organisations() {
        let org = "review:\n  minConfidence: 90\n  maxParts: 99\n";
        let layered = parse_layered(org, "acme/.github", "review:\n  minConfidence: 300\n");
        assert_eq!(layered.config.review.min_confidence, 90);
        assert_eq!(
            layered.config.review.max_parts,
            RepoConfig::default().review.max_parts
        );
        let said: Vec<String> = layered.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].contains("review.maxParts") && said[0].contains("acme/.github"),
            "{said:?}"
        );
        assert!(
            said[1].contains("review.minConfidence") && !said[1].contains("acme/.github"),
            "{said:?}"
        );
    }

    #[test]
    fn without_an_organisation_file_it_is_the_repositorys_alone() {
        let repo = "review:\n  minConfidence: 60\n";
        let layered = parse_layered("", "acme/.github", repo);
        assert_eq!(layered.config, super::super::parse(repo).0);
        assert!(layered.from_org.is_empty());
        assert_eq!(layered.under, RepoConfig::default());
        let broken = parse_layered("review: [", "acme/.github", repo);
        assert_eq!(broken.config.review.min_confidence, 60);
        assert!(broken.warnings[0].to_string().contains("acme/.github"));
    }
}
