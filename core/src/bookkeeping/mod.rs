//! Bookkeeping jobs: record what the App is installed on, follow review threads of
//! Parley's findings (resolved or reopened, or their first comment deleted:
//! [`deleted`]), conclude the gate on a merge queue's
//! commits ([`merge_queue`]), note closed PRs, and (on a schedule) ask
//! GitHub for the webhook deliveries Parley failed to take ([`crate::redelivery`]).

mod deleted;

use crate::job::{BookkeepingEvent, BookkeepingJob, RepoRef};
use crate::ports::github::RepoScope;
use crate::ports::{FindingState, Installation, JobError, StoreError};
use crate::review::{lifecycle, merge_queue, regate, resolution};
use crate::services::Services;
use crate::tenancy::Tenant;
use time::OffsetDateTime;

pub async fn record(services: &Services, job: &BookkeepingJob) -> Result<(), JobError> {
    let store = services.store.as_ref();
    match &job.event {
        BookkeepingEvent::Installation {
            action,
            installation_id,
            account,
            account_id,
            repositories_added,
            repository_ids_added,
            repositories_removed,
            repository_ids_removed,
        } => {
            if action == "deleted" {
                // Everything kept about the installation's repositories goes with it:
                // the repositories its record lists and the ones the event names. The
                // record is deleted last, so a retried job still knows what to purge.
                let recorded = store
                    .installation(*installation_id)
                    .await
                    .map_err(transient)?;
                let (mut repos, mut ids) = recorded
                    .map(|i| (i.repositories, i.repository_ids))
                    .unwrap_or_default();
                repos.extend(repositories_added.iter().cloned());
                ids.extend(repository_ids_added);
                let mut keys: Vec<String> = repos
                    .iter()
                    .filter_map(|full| full.split_once('/'))
                    .map(|(owner, name)| Tenant::name_keyed(owner, name).repo)
                    .chain(ids.iter().map(|id| Tenant::of(*id, 0, "", "").repo))
                    .collect();
                keys.sort_unstable();
                keys.dedup();
                purge(services, &keys).await?;
                // Learnings written before ids were kept sit under the login.
                let mut learnings = store
                    .purge_memory(&Tenant::name_keyed(account, "").org)
                    .await
                    .map_err(transient)?;
                if *account_id != 0 {
                    learnings += store
                        .purge_memory(&Tenant::of(0, *account_id, account, "").org)
                        .await
                        .map_err(transient)?;
                }
                store
                    .delete_installation(*installation_id)
                    .await
                    .map_err(transient)?;
                tracing::info!(
                    installation_id,
                    account,
                    repositories = repos.len(),
                    org_learnings = learnings,
                    "installation removed; what it stored is purged"
                );
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
                repository_ids: Vec::new(),
                suspended: false,
                updated_at: OffsetDateTime::now_utc(),
            });
            apply(
                &mut installation,
                action,
                (repositories_added, repository_ids_added),
                (repositories_removed, repository_ids_removed),
            );
            store
                .put_installation(&installation)
                .await
                .map_err(transient)?;
            // A repository taken out of the installation takes what Parley kept about it,
            // under its id and under the name older records were keyed by.
            let keys: Vec<String> = repositories_removed
                .iter()
                .filter_map(|full| full.split_once('/'))
                .map(|(owner, name)| Tenant::name_keyed(owner, name).repo)
                .chain(
                    repository_ids_removed
                        .iter()
                        .map(|id| Tenant::of(*id, 0, "", "").repo),
                )
                .collect();
            purge(services, &keys).await?;
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
            comment_ids,
            actor,
        } => {
            thread_changed(
                services,
                job.installation_id,
                repo,
                *number,
                *resolved,
                comment_ids,
                actor,
            )
            .await?;
        }
        BookkeepingEvent::FindingCommentDeleted {
            repo,
            number,
            comment_id,
            actor,
        } => {
            deleted::finding_comment_deleted(
                services,
                job.installation_id,
                repo,
                *number,
                *comment_id,
                actor,
            )
            .await?;
        }
        BookkeepingEvent::MergeGroup {
            repo,
            number,
            group_head,
            verify,
        } => {
            let Some(installation) = job.installation_id else {
                tracing::warn!(repo = %repo.full_name(), number, "a merge group without an installation; no check can be made");
                return Ok(());
            };
            let scope = RepoScope::for_repo(installation, repo);
            let group = merge_queue::Group {
                number: *number,
                group_head,
                verify: *verify,
            };
            merge_queue::conclude(services, &scope, &group).await?;
        }
        BookkeepingEvent::PullRequestClosed {
            repo,
            number,
            merged,
        } => {
            pull_request_closed(services, job.installation_id, repo, *number, *merged).await?;
        }
        BookkeepingEvent::RedeliverFailed => {
            let sweep = crate::redelivery::sweep(
                services.github.as_ref(),
                store,
                OffsetDateTime::now_utc(),
            )
            .await?;
            crate::metrics::webhooks_swept(sweep.redelivered.len(), sweep.given_up.len());
            tracing::info!(
                listed = sweep.listed,
                redelivered = sweep.redelivered.len(),
                given_up = sweep.given_up.len(),
                refused = sweep.refused.len(),
                complete = sweep.complete,
                held = sweep.held,
                unavailable = sweep.unavailable,
                "webhook deliveries swept"
            );
        }
    }
    Ok(())
}

/// Delete what Parley stored under each of the repository keys `repos`: findings, runs,
/// counters, learnings, statistics and patterns, and the retrieval corpora. A store
/// failure is transient: the queue retries the job, and purging again is harmless.
async fn purge(services: &Services, repos: &[String]) -> Result<(), JobError> {
    for repo in repos {
        let records = services
            .store
            .purge_repository(repo)
            .await
            .map_err(transient)?;
        let documents = services
            .corpus
            .purge_documents(repo)
            .await
            .map_err(transient)?;
        tracing::info!(repo, records, documents, "repository purged");
    }
    Ok(())
}

/// A review thread was resolved or unresolved. When its root is one of Parley's findings,
/// the finding follows it (resolved → `Resolved`, unresolved → `Open`, with who and when)
/// and the merge gate is judged again, since open blocking findings keep the gate at
/// `failure`: resolving the thread is how a developer says "fixed". Threads that are not
/// Parley's are only logged. A store failure is transient (the queue retries the job); a
/// failure to judge the gate again is only logged (the next push judges it anyway).
async fn thread_changed(
    services: &Services,
    installation_id: Option<u64>,
    repo: &RepoRef,
    number: u64,
    resolved: bool,
    comment_ids: &[u64],
    actor: &str,
) -> Result<(), JobError> {
    let full_name = repo.full_name();
    let Some(&root) = comment_ids.first() else {
        tracing::info!(repo = %full_name, number, resolved, "review thread without comments; nothing to follow");
        return Ok(());
    };
    let store = services.store.as_ref();
    let Some(mut finding) = finding_posted_as(store, repo, root).await? else {
        tracing::info!(repo = %full_name, number, resolved, root, "review thread is not on a Parley finding (kept for learning)");
        return Ok(());
    };
    let Some(state) = state_after_thread(finding.state, resolved) else {
        tracing::info!(repo = %full_name, number, finding = %finding.id, state = ?finding.state, resolved, "finding already in step with its thread");
        return Ok(());
    };
    let Some(installation) = installation_id else {
        // Without an installation Parley can neither weigh the resolution nor judge the
        // gate; a blocking finding stays as it is (fail closed), the next review judges.
        tracing::warn!(repo = %full_name, number, "thread event names no installation; the finding is left as it is");
        return Ok(());
    };
    let scope = RepoScope::for_repo(installation, repo);
    // Weighing a resolution and reading its outcome both need the PR: read it once.
    let pr = if state == FindingState::Resolved {
        Some(
            services
                .github
                .get_pull_request(&scope, number)
                .await
                .map_err(JobError::from)?,
        )
    } else {
        None
    };
    if let Some(pr) = &pr {
        let decision = weigh_resolution(services, &scope, pr, &finding, actor).await?;
        if !decision.lifts() {
            tracing::info!(repo = %full_name, number, finding = %finding.id, actor, ?decision, "thread resolved, but the resolution does not lift this blocking finding");
            explain_in_thread(services, &scope, number, root, &finding, &decision).await;
            return Ok(());
        }
    }
    let read = finding.clone();
    finding.state = state;
    finding.state_changed_by = Some(actor.to_string());
    finding.state_changed_at = Some(OffsetDateTime::now_utc());
    // Conditional: a review on the other queue may have written the finding since it was
    // read (an outcome from a code change); the thread's state is applied over that.
    lifecycle::store_state(store, Some(&read), &finding, lifecycle::Precedence::Newest)
        .await
        .map_err(transient)?;
    tracing::info!(repo = %full_name, number, finding = %finding.id, state = ?finding.state, actor, "finding follows its review thread");
    if let Some(pr) = pr.as_ref().filter(|_| !is_bot_login(actor))
        && let Some(signal) = resolution_signal(services, &scope, pr, root, &finding, actor).await
        && let Err(err) = crate::learning::outcomes::record(
            store,
            services.corpus.as_ref(),
            &mut finding,
            &signal,
        )
        .await
    {
        tracing::warn!(repo = %full_name, finding = %finding.id, error = %err, "could not record the finding's outcome");
    }
    regate::finding_changed(services, &scope, number).await;
    Ok(())
}

/// A PR closed: the outcomes of its findings that are still undecided, from 👍 / 👎 on
/// them by people with `gate.resolveBy`, or "ignored" for those still open that nobody
/// answered. Store trouble retries the job (and a redelivery counts nothing twice: see
/// [`crate::learning::outcomes`]); GitHub trouble reading reactions leaves those findings
/// undecided (logged).
async fn pull_request_closed(
    services: &Services,
    installation_id: Option<u64>,
    repo: &RepoRef,
    number: u64,
    merged: bool,
) -> Result<(), JobError> {
    let full_name = repo.full_name();
    let Some(installation) = installation_id else {
        tracing::warn!(repo = %full_name, number, "PR closed without an installation; outcomes not collected");
        return Ok(());
    };
    let scope = RepoScope::for_repo(installation, repo);
    // Whose reactions count (`gate.resolveBy`) is the repository's setting.
    let (_, config) = pull_and_settings(services, &scope, number).await?;
    // Which findings someone replied to: a listing of the PR's inline comments.
    let replied: std::collections::HashSet<u64> = match services
        .github
        .list_review_comments(
            &scope,
            number,
            None,
            crate::ports::github::PageLimit::pages(10),
        )
        .await
    {
        Ok(listing) => listing
            .items
            .iter()
            .filter(|c| c.user.as_ref().is_none_or(|u| !u.to_actor().is_bot()))
            .filter_map(|c| c.in_reply_to_id)
            .collect(),
        Err(err) if err.is_transient() => return Err(JobError::Transient(err.to_string())),
        Err(err) => {
            tracing::warn!(repo = %full_name, number, error = %err, "could not list the PR's comments; outcomes from reactions only");
            return Ok(());
        }
    };
    let recorded = crate::learning::outcomes::at_close(
        services.github.as_ref(),
        services.store.as_ref(),
        services.corpus.as_ref(),
        &scope,
        &config.config.gate,
        &repo.tenant().repo,
        number,
        &|comment| replied.contains(&comment),
    )
    .await
    .map_err(transient)?;
    tracing::info!(repo = %full_name, number, merged, recorded, "pull request closed; finding outcomes collected");
    if merged {
        remember_merged_fork(services, &scope, &repo.tenant().repo, number).await;
    }
    Ok(())
}

/// A merged PR from a fork enters the retrieval corpora now (see
/// [`crate::retrieval::remember`]); a branch PR is there since its review. An extra: a
/// failure is logged and the job goes on.
async fn remember_merged_fork(services: &Services, scope: &RepoScope, repo: &str, number: u64) {
    match services.github.get_pull_request(scope, number).await {
        Ok(pr) if crate::retrieval::remember::from_fork(&pr) => {
            let remembered = crate::retrieval::remember::merged(services, scope, repo, &pr).await;
            tracing::info!(
                repo,
                number,
                code = remembered.code,
                findings = remembered.findings,
                "merged fork PR remembered for retrieval"
            );
        }
        Ok(_) => {}
        Err(err) => {
            tracing::warn!(repo, number, error = %err, "could not read the merged PR; a fork PR's code is not remembered");
        }
    }
}

/// PR `number` and the settings that weigh what people do on it, read from its default
/// branch (whose word counts is its `gate.resolveBy`). Settings GitHub would not give
/// fail the job, for the queue to try again, rather than weigh by the defaults.
async fn pull_and_settings(
    services: &Services,
    scope: &RepoScope,
    number: u64,
) -> Result<
    (
        crate::ports::github::PullRequest,
        std::sync::Arc<crate::repo::LoadedConfig>,
    ),
    JobError,
> {
    let pr = services
        .github
        .get_pull_request(scope, number)
        .await
        .map_err(JobError::from)?;
    let config = services.config.for_pull(scope, &pr).await;
    config.settled().map_err(JobError::from)?;
    Ok((pr, config))
}

/// Whether `actor` resolving the finding's thread lifts it (see [`resolution`]). GitHub
/// trouble that a retry can fix fails the job; anything else fails closed.
async fn weigh_resolution(
    services: &Services,
    scope: &RepoScope,
    pr: &crate::ports::github::PullRequest,
    finding: &crate::ports::Finding,
    actor: &str,
) -> Result<resolution::Decision, JobError> {
    let github = services.github.as_ref();
    let config = services.config.for_pull(scope, pr).await;
    config.settled().map_err(JobError::from)?;
    resolution::decide(
        github,
        scope,
        &config.config.gate,
        finding,
        actor,
        pr.user.as_ref().map(|u| u.login.as_str()),
        &pr.head.sha,
    )
    .await
    .map_err(JobError::from)
}

/// Say in the finding's thread why its resolution did not count, once per finding and
/// reason (a claim guards redeliveries). Best effort: the gate is right either way.
async fn explain_in_thread(
    services: &Services,
    scope: &RepoScope,
    number: u64,
    root: u64,
    finding: &crate::ports::Finding,
    decision: &resolution::Decision,
) {
    let Some(text) = decision.explain(finding) else {
        return;
    };
    let key = format!(
        "resolution-note#{}#{}#{:?}",
        scope.tenant().repo,
        finding.id,
        std::mem::discriminant(decision)
    );
    if !note_not_yet_posted(services, &key).await {
        return;
    }
    let marker = crate::markers::ReplyMarker {
        finding: Some(finding.id.clone()),
        ..crate::markers::ReplyMarker::new(crate::markers::kind::NOTE, root)
    };
    let body = crate::markers::append(&text, crate::markers::kind::NOTE, &marker);
    if let Err(err) = services
        .github
        .reply_to_review_comment(scope, number, root, &body)
        .await
    {
        tracing::warn!(repo = %scope.full_name(), number, finding = %finding.id, error = %err, "could not explain why the resolution does not count");
    }
}

fn is_bot_login(login: &str) -> bool {
    login.ends_with("[bot]")
}

/// A person resolved a finding's thread: accepted, unless the code at its lines did not
/// change and the PR's author had argued with it in the thread (then it was waved off:
/// rejected). Best effort: when GitHub cannot tell, a resolution counts as accepted.
///
/// The rejection counts only when the one who resolved it has `gate.resolveBy` (`None`
/// otherwise): GitHub lets a PR's author resolve threads on their own PR, and arguing
/// with a non-blocking finding then resolving it unchanged must not teach Parley that
/// such findings are wrong (see [`crate::learning::outcomes`]).
async fn resolution_signal(
    services: &Services,
    scope: &RepoScope,
    pr: &crate::ports::github::PullRequest,
    root: u64,
    finding: &crate::ports::Finding,
    actor: &str,
) -> Option<crate::learning::outcomes::Signal> {
    use crate::learning::outcomes::Signal;
    use crate::ports::Verdict;
    let accepted = Signal::new(Verdict::Accepted, "thread_resolved", Some(actor));
    let github = services.github.as_ref();
    let number = pr.number;
    if resolution::code_changed(github, scope, finding, &pr.head.sha)
        .await
        .unwrap_or(true)
    {
        return Some(accepted);
    }
    let author = pr
        .user
        .as_ref()
        .map(|u| u.login.clone())
        .unwrap_or_default();
    let disputed = match github
        .list_review_comments(
            scope,
            number,
            None,
            crate::ports::github::PageLimit::pages(10),
        )
        .await
    {
        Ok(listing) => listing.items.iter().any(|c| {
            c.in_reply_to_id == Some(root)
                && c.user
                    .as_ref()
                    .is_some_and(|u| u.login.eq_ignore_ascii_case(&author))
        }),
        Err(_) => false,
    };
    if !disputed {
        return Some(accepted);
    }
    let loaded = services.config.for_pull(scope, pr).await;
    // Whose word counts is the repository's setting: without it, no signal.
    let Ok(config) = loaded.settled() else {
        tracing::warn!(repo = %scope.full_name(), finding = %finding.id, "the repository's settings could not be read; the resolution teaches nothing");
        return None;
    };
    let mut deciders = crate::learning::outcomes::Deciders::new(github, scope, &config.config.gate);
    match deciders.decides(actor).await {
        Ok(true) => Some(Signal::new(
            Verdict::Rejected,
            "resolved_after_dispute",
            Some(&author),
        )),
        Ok(false) => {
            tracing::info!(repo = %scope.full_name(), number, finding = %finding.id, actor, "resolved unchanged after a dispute by someone without gate.resolveBy: no outcome");
            None
        }
        Err(err) => {
            tracing::warn!(repo = %scope.full_name(), number, finding = %finding.id, actor, error = %err, "could not read the resolver's permission; no outcome");
            None
        }
    }
}

/// The state a finding takes when its thread is resolved or unresolved, or `None` when it
/// is already in step. Resolving leaves a conceded (`WontFix`) finding as it is: Parley
/// resolves the thread itself on a concession, and the concession says more. Unresolving
/// reopens any finding: someone thinks it still stands.
fn state_after_thread(current: FindingState, resolved: bool) -> Option<FindingState> {
    match (current, resolved) {
        (FindingState::Open, true) => Some(FindingState::Resolved),
        (FindingState::Resolved | FindingState::WontFix, false) => Some(FindingState::Open),
        _ => None,
    }
}

/// Fold one installation event into the stored record.
/// Names and ids, added and removed.
type Repos<'a> = (&'a [String], &'a [u64]);

fn apply(installation: &mut Installation, action: &str, added: Repos<'_>, removed: Repos<'_>) {
    match action {
        "suspend" => installation.suspended = true,
        "unsuspend" => installation.suspended = false,
        _ => {}
    }
    for repo in added.0 {
        if !installation.repositories.contains(repo) {
            installation.repositories.push(repo.clone());
        }
    }
    installation
        .repositories
        .retain(|repo| !removed.0.contains(repo));
    installation.repositories.sort();
    installation.repository_ids.extend(added.1);
    installation
        .repository_ids
        .retain(|id| !removed.1.contains(id));
    installation.repository_ids.sort_unstable();
    installation.repository_ids.dedup();
    installation.updated_at = OffsetDateTime::now_utc();
}

/// Claim the note `key` (for 30 days): `true` for the one job that posts it, `false` for
/// redeliveries and retries, and (logged) when the store fails: a note is best effort,
/// posting it twice is worse than not at all.
async fn note_not_yet_posted(services: &Services, key: &str) -> bool {
    let month = std::time::Duration::from_secs(30 * 24 * 3600);
    match services.store.claim(key, month).await {
        Ok(crate::ports::Claim::Won) => true,
        Ok(crate::ports::Claim::AlreadyClaimed) => false,
        Err(err) => {
            tracing::warn!(key, error = %err, "could not claim the note; not posting it");
            false
        }
    }
}

/// The finding Parley posted as review comment `comment`, if it posted one there.
async fn finding_posted_as(
    store: &dyn crate::ports::Store,
    repo: &RepoRef,
    comment: u64,
) -> Result<Option<crate::ports::Finding>, JobError> {
    store
        .finding_by_comment(&repo.tenant().repo, comment)
        .await
        .map_err(transient)
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
            repository_ids: vec![1],
            suspended: false,
            updated_at: OffsetDateTime::UNIX_EPOCH,
        };
        apply(
            &mut inst,
            "added",
            (&["octo/b".into(), "octo/a".into()], &[2, 1]),
            (&[], &[]),
        );
        assert_eq!(inst.repositories, vec!["octo/a", "octo/b"]);
        assert_eq!(inst.repository_ids, vec![1, 2]);
        apply(&mut inst, "removed", (&[], &[]), (&["octo/a".into()], &[1]));
        assert_eq!(inst.repositories, vec!["octo/b"]);
        assert_eq!(inst.repository_ids, vec![2]);
        apply(&mut inst, "suspend", (&[], &[]), (&[], &[]));
        assert!(inst.suspended);
    }

    #[test]
    fn findings_follow_their_threads() {
        use FindingState::*;
        assert_eq!(state_after_thread(Open, true), Some(Resolved));
        assert_eq!(state_after_thread(Resolved, false), Some(Open));
        assert_eq!(state_after_thread(WontFix, false), Some(Open));
        assert_eq!(state_after_thread(WontFix, true), None);
        assert_eq!(state_after_thread(Resolved, true), None);
        assert_eq!(state_after_thread(Open, false), None);
    }
}
