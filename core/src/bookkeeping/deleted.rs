//! Someone deleted the comment Parley posted a finding in.
//!
//! GitHub lets anyone with write access delete another's comment. The finding's text goes
//! with it, and nothing left on the PR leads back to the finding (where replies keep its
//! thread, the thread now starts at a reply, which is no finding's), while the store still
//! counts it for the merge gate. A check that keeps failing on a comment nobody can see
//! any more is what a team that deleted a noisy comment least expects, and a deletion
//! that silently lifted a blocking finding would be a way past the gate for anyone GitHub
//! lets delete. So a deletion is weighed as a dismissal by the
//! one who deleted ([`resolution::decide`], the rule every resolution follows):
//!
//! - it lifts: the finding is dismissed (won't fix), a rejection for learning where that
//!   person has `gate.resolveBy` ([`crate::learning::outcomes::record_from`]), and the
//!   gate is judged again;
//! - it does not (the PR's author before the code at the finding's lines changed, someone
//!   below `gate.resolveBy`): the finding stays open and blocking, and the PR is told so,
//!   and how it can still be lifted, in one note per PR that later deletions join. From
//!   then on it is a finding without a thread, as one posted only in a review's summary:
//!   the check lists it with no link, a full review closes it by the same rules
//!   ([`crate::review::lifecycle`]).
//!
//! Either way the finding forgets the deleted comment, so nothing links to it or tries to
//! resolve its thread. A deleted reply, or a comment that was not a finding's, changes
//! nothing.

use super::{finding_posted_as, note_not_yet_posted, pull_and_settings, transient};
use crate::job::RepoRef;
use crate::learning::outcomes::{self, Signal};
use crate::markers::{self, ReplyMarker};
use crate::ports::github::RepoScope;
use crate::ports::{Finding, FindingState, JobError, Store, StoreError, Verdict};
use crate::review::{lifecycle, regate, resolution};
use crate::services::Services;
use time::OffsetDateTime;

/// How often a finding is read again when someone else wrote it meanwhile.
const ATTEMPTS: usize = 3;

/// The comment `comment_id` on PR `number` was deleted by `actor`. Store and transient
/// GitHub trouble fail the job, for the queue to try again (what was done is not done
/// twice); the note to the PR is best effort.
pub(super) async fn finding_comment_deleted(
    services: &Services,
    installation_id: Option<u64>,
    repo: &RepoRef,
    number: u64,
    comment_id: u64,
    actor: &str,
) -> Result<(), JobError> {
    let full_name = repo.full_name();
    let store = services.store.as_ref();
    let Some(finding) = finding_posted_as(store, repo, comment_id).await? else {
        tracing::info!(repo = %full_name, number, comment_id, actor, "a deleted review comment that was no finding's: nothing to do");
        return Ok(());
    };
    let Some(installation) = installation_id else {
        // Nothing to weigh the deletion with: the finding stays as it is (fail closed).
        tracing::warn!(repo = %full_name, number, finding = %finding.id, "a finding's comment was deleted, but the event names no installation; the finding stays as it was");
        return forget_comment(store, &finding).await.map_err(transient);
    };
    // Dismissed by this deletion already: a retry of a job that died before it was done.
    let resumed = finding.state == FindingState::WontFix
        && finding.state_changed_by.as_deref() == Some(actor);
    if finding.state != FindingState::Open && !resumed {
        tracing::info!(repo = %full_name, number, finding = %finding.id, state = ?finding.state, actor, "the comment of a closed finding was deleted; nothing changes for the gate");
        return forget_comment(store, &finding).await.map_err(transient);
    }
    let scope = RepoScope::for_repo(installation, repo);
    let (pr, config) = pull_and_settings(services, &scope, number).await?;
    let gate = &config.config.gate;
    let dismissed = if resumed {
        finding
    } else {
        let author = pr.user.as_ref().map(|u| u.login.as_str());
        let github = services.github.as_ref();
        let decision =
            resolution::decide(github, &scope, gate, &finding, actor, author, &pr.head.sha).await?;
        if !decision.lifts() {
            tracing::info!(repo = %full_name, number, finding = %finding.id, actor, ?decision, "a blocking finding's comment was deleted by someone whose deletion does not lift it: it stays open");
            explain(
                services, &scope, number, comment_id, &finding, actor, &decision,
            )
            .await;
            return forget_comment(store, &finding).await.map_err(transient);
        }
        let dismissed = Finding {
            state: FindingState::WontFix,
            state_changed_by: Some(actor.to_string()),
            state_changed_at: Some(OffsetDateTime::now_utc()),
            ..finding.clone()
        };
        // Conditional: a review may have written the finding since it was read.
        lifecycle::store_state(
            store,
            Some(&finding),
            &dismissed,
            lifecycle::Precedence::Newest,
        )
        .await
        .map_err(transient)?;
        tracing::info!(repo = %full_name, number, finding = %finding.id, actor, "a finding's comment was deleted: the finding is dismissed");
        dismissed
    };
    // Its comment is forgotten last: until then a retry finds the finding by it and
    // finishes what is below (neither counts twice).
    let deleted = Signal::new(Verdict::Rejected, "deleted", Some(actor));
    outcomes::record_from(
        services.github.as_ref(),
        store,
        services.corpus.as_ref(),
        &scope,
        gate,
        number,
        &dismissed.id,
        actor,
        deleted,
    )
    .await;
    regate::finding_changed(services, &scope, number).await;
    forget_comment(store, &dismissed).await.map_err(transient)
}

/// Store `finding` without its comment, as it is stored now (someone may have changed
/// its state meanwhile, which stands).
async fn forget_comment(store: &dyn Store, finding: &Finding) -> Result<(), StoreError> {
    let mut read = finding.clone();
    for _ in 0..ATTEMPTS {
        if read.comment_id.is_none() {
            return Ok(());
        }
        let without = Finding {
            comment_id: None,
            ..read.clone()
        };
        if store.put_finding_if(&without, Some(&read)).await? {
            return Ok(());
        }
        match store
            .findings_for_pr(&finding.repo, finding.pr)
            .await?
            .into_iter()
            .find(|f| f.id == finding.id)
        {
            Some(fresh) => read = fresh,
            None => return Ok(()),
        }
    }
    Err(StoreError::Unavailable(format!(
        "finding {} kept changing while its deleted comment was forgotten",
        finding.id
    )))
}

/// Tell the PR, once per finding, that its deleted comment still counts for the gate,
/// why, and how it can be lifted: in one note per PR, which each later such deletion
/// joins. Best effort: the gate is right either way.
async fn explain(
    services: &Services,
    scope: &RepoScope,
    number: u64,
    comment_id: u64,
    finding: &Finding,
    actor: &str,
    decision: &resolution::Decision,
) {
    let Some(why) = decision.explain(finding) else {
        return;
    };
    let key = format!("deleted-note#{}#{}", scope.tenant().repo, finding.id);
    if !note_not_yet_posted(services, &key).await {
        return;
    }
    let github = services.github.as_ref();
    let handles = services.identity.handles(github, false).await;
    let dismiss = match &handles {
        Ok(handles) => handles.command(&format!("dismiss {}", finding.id)),
        Err(err) => {
            tracing::warn!(error = %err, "could not learn Parley's handle; the note names the default");
            format!("`@parley dismiss {}`", finding.id)
        }
    };
    let text = note(finding, actor, &why, &dismiss);
    let earlier = match &handles {
        Ok(handles) => earlier_note(services, scope, number, handles).await,
        Err(_) => None,
    };
    let posted = match earlier {
        // One note a PR: an author who deletes ten comments is answered once, not ten
        // times.
        Some((id, body, mut marker)) if body.len() + text.len() < NOTE_CHARS => {
            marker.deleted.push(finding.id.clone());
            let body = format!("{}\n\n---\n\n{text}", body.trim_end());
            let body = markers::append(&body, markers::kind::NOTE, &marker);
            github.update_issue_comment(scope, id, &body).await
        }
        _ => {
            let marker = ReplyMarker {
                finding: Some(finding.id.clone()),
                deleted: vec![finding.id.clone()],
                ..ReplyMarker::new(markers::kind::NOTE, comment_id)
            };
            let body = markers::append(&text, markers::kind::NOTE, &marker);
            github.create_issue_comment(scope, number, &body).await
        }
    };
    if let Err(err) = posted {
        tracing::warn!(repo = %scope.full_name(), number, finding = %finding.id, error = %err, "could not say that a deleted finding still counts");
    }
}

/// How long the one note may grow before the next deletion starts another: well inside
/// the 65,536 characters GitHub takes in a comment.
const NOTE_CHARS: usize = 60_000;

/// Parley's latest note on PR `number` about deleted findings: its id, its text without
/// the marker, and the marker. Only Parley's own comment counts ([`markers::trusted`]);
/// `None` when there is none or the comments could not be listed (a new note is posted).
async fn earlier_note(
    services: &Services,
    scope: &RepoScope,
    number: u64,
    handles: &crate::mention::Handles,
) -> Option<(u64, String, ReplyMarker)> {
    let limit = crate::ports::github::PageLimit::pages(10);
    let listing = match services
        .github
        .list_issue_comments(scope, number, None, limit)
        .await
    {
        Ok(listing) => listing,
        Err(err) => {
            tracing::warn!(repo = %scope.full_name(), number, error = %err, "could not list the PR's comments; a deleted finding gets a note of its own");
            return None;
        }
    };
    listing.items.iter().rev().find_map(|c| {
        let kind = markers::kind::NOTE;
        let marker = markers::trusted::<ReplyMarker>(c.user.as_ref(), handles, &c.body, kind)?;
        (!marker.deleted.is_empty()).then(|| (c.id, markers::strip(&c.body), marker))
    })
}

/// What the PR is told: who deleted which finding, that it still counts and why, and
/// what lifts it now that it has no thread. The title was cleaned when the review stored
/// it, as the check's list of open findings shows it.
fn note(finding: &Finding, actor: &str, why: &str, dismiss: &str) -> String {
    format!(
        "@{actor} deleted the comment of `{id}` ({severity}: {title}, `{path}:{line}`). {why}\n\n\
         It stays open and is listed in the **Parley review** check. With no thread to \
         resolve any more, {dismiss} lifts it (once its code has changed, when the PR's \
         author asks), as does a full review that no longer finds it once its code changed.",
        id = finding.id,
        severity = finding.severity.name(),
        title = finding.title,
        path = finding.path,
        line = finding.line,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_names_the_finding_who_deleted_it_and_what_lifts_it() {
        let finding = Finding::sample("src/db.rs", "SQL built from input");
        let why = resolution::Decision::NeedsCodeChange
            .explain(&finding)
            .unwrap_or_default();
        let text = note(&finding, "alice", &why, "`@acme dismiss f_1`");
        for said in [
            "@alice deleted the comment of `",
            "src/db.rs:3",
            "has not changed since it was posted",
            "`@acme dismiss f_1` lifts it",
        ] {
            assert!(text.contains(said), "{said}: {text}");
        }
    }
}
