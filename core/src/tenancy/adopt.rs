//! Moving a repository's and an organisation's name-keyed records under their ids, once,
//! before the first job that names them by id touches the store.

use super::Tenant;
use crate::job::{BookkeepingEvent, Job, RepoRef};
use crate::ports::{CorpusStore, JobError, Store, StoreError};
use crate::services::Services;

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
            | BookkeepingEvent::FindingCommentDeleted { repo, .. }
            | BookkeepingEvent::MergeGroup { repo, .. }
            | BookkeepingEvent::PullRequestClosed { repo, .. } => repo,
            BookkeepingEvent::Installation { .. } | BookkeepingEvent::RedeliverFailed => {
                return Ok(());
            }
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
