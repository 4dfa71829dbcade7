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
//! (with its id) moves them under the id ([`adopt_name_keyed`]); a marker under the new
//! key makes that a one-time cost. Nothing can tell whose records a name held before: if
//! the name changed hands before the upgrade, the new holder adopts them, which is what
//! keying by name did anyway; after the upgrade it can no longer happen.

use crate::job::{BookkeepingEvent, Job, RepoRef};
use crate::ports::{CorpusStore, JobError, Store, StoreError};
use crate::services::Services;

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

/// The counter that says a repository's (or an organisation's) name-keyed records were
/// moved. Under the partition's own `#` prefix, so purging the repository takes it too.
const ADOPTED: &str = "adopted-name-keyed";

fn marker_scope(partition: &str) -> String {
    format!("{partition}#tenancy")
}

/// Before a job touches the store: make sure what its repository's name holds from
/// before ids were keys has moved under the id. A store failure fails the job (retried).
pub async fn settle(services: &Services, job: &Job) -> Result<(), JobError> {
    let repo = match job {
        Job::Review(job) => &job.repo,
        Job::Conversation(job) => &job.repo,
        Job::Bookkeeping(job) => match &job.event {
            BookkeepingEvent::ReviewThread { repo, .. }
            | BookkeepingEvent::PullRequestClosed { repo, .. } => repo,
            BookkeepingEvent::Installation { .. } => return Ok(()),
        },
        // Embedding jobs carry the key their review wrote documents under.
        Job::Embed(_) => return Ok(()),
    };
    adopt_name_keyed(services.store.as_ref(), services.corpus.as_ref(), repo)
        .await
        .map_err(|err| JobError::Transient(format!("moving name-keyed records: {err}")))
}

/// Move what was stored under `repo`'s name (and its owner's login) to its ids, once.
///
/// Idempotent and safe to run twice at once (a review and a reply arriving together):
/// records are copied only where the id-keyed one does not exist yet, so nothing written
/// under the id is overwritten, and the name-keyed ones are deleted after. A store error
/// fails the job (retried), since going on would read a repository with no history.
pub async fn adopt_name_keyed(
    store: &dyn Store,
    corpus: &dyn CorpusStore,
    repo: &RepoRef,
) -> Result<(), StoreError> {
    let tenant = repo.tenant();
    let by_name = Tenant::name_keyed(&repo.owner, &repo.name);
    if repo.id != 0 && store.counter(&marker_scope(&tenant.repo), ADOPTED).await? == 0 {
        let moved = store.rekey_repository(&by_name.repo, &tenant.repo).await?
            + corpus.rekey_documents(&by_name.repo, &tenant.repo).await?;
        store
            .add_to_counter(&marker_scope(&tenant.repo), ADOPTED, 1)
            .await?;
        tracing::info!(repo = %by_name.repo, key = %tenant.repo, moved, "name-keyed records moved under the repository's id");
    }
    if repo.owner_id != 0 && store.counter(&marker_scope(&tenant.org), ADOPTED).await? == 0 {
        let moved = store.rekey_memory(&by_name.org, &tenant.org).await?;
        store
            .add_to_counter(&marker_scope(&tenant.org), ADOPTED, 1)
            .await?;
        tracing::info!(owner = %repo.owner, key = %tenant.org, moved, "name-keyed organisation learnings moved under the owner's id");
    }
    Ok(())
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
