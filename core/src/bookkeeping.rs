//! Bookkeeping jobs: record what the App is installed on, and (for the learning work to
//! come) note resolved threads and closed PRs.

use crate::job::{BookkeepingEvent, BookkeepingJob};
use crate::ports::{Installation, JobError, Store, StoreError};
use time::OffsetDateTime;

pub async fn record(store: &dyn Store, job: &BookkeepingJob) -> Result<(), JobError> {
    match &job.event {
        BookkeepingEvent::Installation {
            action,
            installation_id,
            account,
            repositories_added,
            repositories_removed,
        } => {
            if action == "deleted" {
                store
                    .delete_installation(*installation_id)
                    .await
                    .map_err(transient)?;
                tracing::info!(installation_id, account, "installation removed");
                return Ok(());
            }
            let existing = store
                .installation(*installation_id)
                .await
                .map_err(transient)?;
            let mut installation = existing.unwrap_or_else(|| Installation {
                id: *installation_id,
                account: account.clone(),
                repositories: Vec::new(),
                suspended: false,
                updated_at: OffsetDateTime::now_utc(),
            });
            apply(
                &mut installation,
                action,
                repositories_added,
                repositories_removed,
            );
            store
                .put_installation(&installation)
                .await
                .map_err(transient)?;
            tracing::info!(
                installation_id,
                account,
                action,
                repositories = installation.repositories.len(),
                "installation recorded"
            );
        }
        BookkeepingEvent::ReviewThread {
            repo,
            number,
            resolved,
            ..
        } => {
            tracing::info!(repo = %repo.full_name(), number, resolved, "review thread state changed (kept for learning)");
        }
        BookkeepingEvent::PullRequestClosed {
            repo,
            number,
            merged,
        } => {
            tracing::info!(repo = %repo.full_name(), number, merged, "pull request closed (kept for learning)");
        }
    }
    Ok(())
}

/// Fold one installation event into the stored record.
fn apply(installation: &mut Installation, action: &str, added: &[String], removed: &[String]) {
    match action {
        "suspend" => installation.suspended = true,
        "unsuspend" => installation.suspended = false,
        _ => {}
    }
    for repo in added {
        if !installation.repositories.contains(repo) {
            installation.repositories.push(repo.clone());
        }
    }
    installation
        .repositories
        .retain(|repo| !removed.contains(repo));
    installation.repositories.sort();
    installation.updated_at = OffsetDateTime::now_utc();
}

fn transient(err: StoreError) -> JobError {
    JobError::Transient(err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repositories_are_added_and_removed() {
        let mut inst = Installation {
            id: 1,
            account: "octo".into(),
            repositories: vec!["octo/a".into()],
            suspended: false,
            updated_at: OffsetDateTime::UNIX_EPOCH,
        };
        apply(&mut inst, "added", &["octo/b".into(), "octo/a".into()], &[]);
        assert_eq!(inst.repositories, vec!["octo/a", "octo/b"]);
        apply(&mut inst, "removed", &[], &["octo/a".into()]);
        assert_eq!(inst.repositories, vec!["octo/b"]);
        apply(&mut inst, "suspend", &[], &[]);
        assert!(inst.suspended);
    }
}
