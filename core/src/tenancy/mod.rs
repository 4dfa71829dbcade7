//! Whose records are whose.
//!
//! A repository's findings, review runs, counters, learnings, statistics and retrieval
//! corpora are keyed by its GitHub id, and an organisation's learnings by the owner
//! account's id. Names change and are reused: a repository is renamed or transferred, a
//! deleted repository's name or a freed login is registered again by someone else. Keyed
//! by `owner/name`, a rename lost everything Parley knew about the repository (its open
//! blocking findings dropped out of the merge gate with it) and the next holder of the
//! name inherited the rest. Ids never change and are never reused.
//!
//! Names stay what people read: logs, prompts, links. Only the store sees the keys.
//!
//! Records written before this were keyed by name. The first job that names a repository
//! (with its id) moves them under the id ([`adopt::adopt_name_keyed`]); a marker under the new
//! key makes that a one-time cost. Nothing can tell whose records a name held before: if
//! the name changed hands before the upgrade, the new holder adopts them, which is what
//! keying by name did anyway; after the upgrade it can no longer happen.

pub mod adopt;

/// The store keys of one repository and of its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    /// The repository's partition: findings, runs, counters (`<repo>#…`), its own memory
    /// and its retrieval corpora.
    pub repo: String,
    /// The organisation's (or user's) memory partition: organisation-wide learnings.
    pub org: String,
}

impl Tenant {
    /// Keyed by ids where GitHub gave them; by name where it did not (a change reviewed
    /// from a local working tree, with no GitHub repository behind it).
    pub fn of(repo_id: u64, owner_id: u64, owner: &str, name: &str) -> Self {
        let by_name = Self::name_keyed(owner, name);
        Tenant {
            repo: if repo_id == 0 {
                by_name.repo
            } else {
                format!("repo:{repo_id}")
            },
            org: if owner_id == 0 {
                by_name.org
            } else {
                format!("owner:{owner_id}")
            },
        }
    }

    /// The keys records were written under before they were keyed by id.
    pub fn name_keyed(owner: &str, name: &str) -> Self {
        Tenant {
            repo: format!("{owner}/{name}"),
            org: crate::learning::record::org_partition(owner),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_key_the_records_and_names_only_stand_in_without_them() {
        let tenant = Tenant::of(42, 7, "Octo-Org", "hello");
        assert_eq!(tenant.repo, "repo:42");
        assert_eq!(tenant.org, "owner:7");
        let renamed = Tenant::of(42, 7, "someone-else", "goodbye");
        assert_eq!(renamed, tenant, "a rename or transfer keeps the keys");
        let local = Tenant::of(0, 0, "Octo-Org", "hello");
        assert_eq!(local.repo, "Octo-Org/hello");
        assert_eq!(local.org, "org:octo-org");
        assert_ne!(
            Tenant::of(43, 8, "Octo-Org", "hello"),
            tenant,
            "the next holder of a name gets none of the last one's records"
        );
    }
}
