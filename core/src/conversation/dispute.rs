//! When a reply argues with a finding, the model settles it: `concede`, `maintain` or
//! `escalate`. The outcome is stored on the finding (state, who, when) for learning and
//! re-reviews; a concession resolves the thread when `dispute.resolveThreadOnConcede` is on,
//! and an escalation asks `dispute.humanReviewers` for a review, or, when the team named
//! no one, the code owners of the finding's file (see [`crate::repo::codeowners`]).

use super::answer::Resolution;
use super::context::FindingInPlay;
use super::snapshot::PrSnapshot;
use super::trigger::Trigger;
use crate::ports::github::{GitHub, GitHubError, ReviewerRequest};
use crate::ports::{FindingState, Store};
use crate::review::lifecycle;
use crate::review::resolution::{self, Decision};
use time::OffsetDateTime;

/// The state a finding takes after a dispute: conceded findings will not be fixed, fixed
/// ones are resolved; the others stay open (for the humans, in an escalation).
pub fn state_after(resolution: Resolution) -> FindingState {
    match resolution {
        Resolution::Concede => FindingState::WontFix,
        Resolution::Fixed => FindingState::Resolved,
        Resolution::Maintain | Resolution::Escalate => FindingState::Open,
    }
}

/// Whether `resolution` would take the finding out of the gate, so that who asked must be
/// weighed first ([`weigh_concession`]): a fix the model confirms lifts no more than
/// the asker's own resolving of the thread would.
pub fn would_lift(resolution: Resolution) -> bool {
    state_after(resolution) != FindingState::Open
}

/// Before posting an escalation: ask the configured humans for a review (else the code
/// owners of `path`, the finding's file), and say so in the reply. Returns the sentence
/// to add. Never fails the answer: if GitHub refuses the request, the reply says so
/// instead.
pub async fn escalate(
    github: &dyn GitHub,
    snap: &PrSnapshot,
    trigger: &Trigger,
    path: Option<&str>,
) -> String {
    let author = snap.author().unwrap_or("");
    // Written as people write them in comments (`@carol`, `@octo-org/security`); GitHub
    // refuses to request a review from the PR's author.
    let usable = |r: &String| {
        let r = r.trim().trim_start_matches('@').to_string();
        (!r.is_empty() && !r.eq_ignore_ascii_case(author)).then_some(r)
    };
    let configured: Vec<String> = snap
        .config
        .config
        .dispute
        .human_reviewers
        .iter()
        .filter_map(usable)
        .collect();
    let (reviewers, whose) = if configured.is_empty() {
        let Ok(owners) = code_owners(github, snap, path).await else {
            return "This needs a human decision, but GitHub would not give the repository's \
                    `CODEOWNERS` to find who owns the file; please ask a maintainer."
                .to_string();
        };
        let owners: Vec<String> = owners.iter().filter_map(usable).collect();
        (owners, path.map(|p| format!(" (code owners of `{p}`)")))
    } else {
        (configured, None)
    };
    if reviewers.is_empty() {
        return "This needs a human decision, but no reviewers are configured \
                (`dispute.humanReviewers` in `.parley.yml`, or a `CODEOWNERS` entry for \
                the file); please ask a maintainer."
            .to_string();
    }
    let named = reviewers
        .iter()
        .map(|r| format!("@{r}"))
        .collect::<Vec<_>>()
        .join(", ")
        + whose.as_deref().unwrap_or("");
    // `org/team` is a team, which GitHub asks for by its slug alone.
    let (teams, users): (Vec<&String>, Vec<&String>) =
        reviewers.iter().partition(|r| r.contains('/'));
    let request = ReviewerRequest {
        reviewers: users.into_iter().cloned().collect(),
        team_reviewers: teams
            .into_iter()
            .filter_map(|team| team.split_once('/').map(|(_, slug)| slug.to_string()))
            .collect(),
    };
    match github
        .request_reviewers(&snap.scope, snap.number, &request)
        .await
    {
        Ok(_) => format!("I have asked {named} to review this and decide."),
        Err(err) => {
            tracing::warn!(repo = %snap.repo, pr = snap.number, comment = trigger.id, error = %err, "could not request reviewers for an escalation");
            format!("I could not request a review from {named}; please ask them directly.")
        }
    }
}

/// The code owners of `path` by the default branch's `CODEOWNERS`: people by login, and
/// teams of the repository's own organisation (GitHub asks for a team there by its slug,
/// and refuses any other). `Err` when GitHub would not give the file.
async fn code_owners(
    github: &dyn GitHub,
    snap: &PrSnapshot,
    path: Option<&str>,
) -> Result<Vec<String>, GitHubError> {
    let (Some(path), Some(pr)) = (path, snap.pull()) else {
        return Ok(Vec::new());
    };
    let branch = crate::repo::default_branch(pr);
    let read = crate::repo::codeowners::read(github, &snap.scope, &branch).await;
    let owners = match read {
        Ok(Some(owners)) => owners,
        Ok(None) => return Ok(Vec::new()),
        Err(err) => {
            tracing::warn!(repo = %snap.repo, error = %err, "could not read CODEOWNERS for an escalation");
            return Err(err);
        }
    };
    Ok(owners
        .owners_of(path)
        .iter()
        .filter(|owner| {
            owner
                .split_once('/')
                .is_none_or(|(org, _)| org.eq_ignore_ascii_case(&snap.scope.owner))
        })
        .cloned()
        .collect())
}

/// Whether conceding `in_play` to the trigger's author lifts it (see
/// [`crate::review::resolution`]).
pub async fn weigh_concession(
    github: &dyn GitHub,
    snap: &PrSnapshot,
    in_play: &FindingInPlay,
    trigger: &Trigger,
) -> Result<Decision, GitHubError> {
    let Some(pr) = snap.pull() else {
        return Ok(Decision::Lifts);
    };
    resolution::decide(
        github,
        &snap.scope,
        &snap.config.config.gate,
        &in_play.finding,
        &trigger.author.login,
        snap.author(),
        &pr.head.sha,
    )
    .await
}

/// Parley conceded `finding` to `who`: the model agreed the finding was wrong. That is a
/// rejection for the statistics and false-positive patterns only when `who` could have
/// decided about it (`gate.resolveBy`, see [`crate::learning::outcomes`]): anyone who
/// may talk to Parley can argue with it, and a PR's author who talks the model round
/// must not teach it to stop reporting such findings for everyone. The concession stays
/// a reply in the thread either way. Best effort, like the settlement.
pub async fn record_concession(
    github: &dyn GitHub,
    store: &dyn Store,
    corpus: &dyn crate::ports::CorpusStore,
    snap: &PrSnapshot,
    finding: &str,
    who: &str,
) -> bool {
    crate::learning::outcomes::record_from(
        github,
        store,
        corpus,
        &snap.scope,
        &snap.config.config.gate,
        snap.number,
        finding,
        who,
        crate::learning::outcomes::Signal::new(
            crate::ports::Verdict::Rejected,
            "conceded",
            Some(who),
        ),
    )
    .await
}

/// After the reply is posted: record the outcome on the finding, and resolve the thread on
/// a concession that `lifts` the finding (one that does not leaves it open, thread and
/// all). Returns the finding's state now. Failures are logged: the reply (and its marker,
/// which carries the resolution) is already on GitHub.
#[allow(clippy::too_many_arguments)] // one call site; each part is a different thing
pub async fn settle(
    github: &dyn GitHub,
    store: &dyn Store,
    snap: &PrSnapshot,
    in_play: &FindingInPlay,
    resolution: Resolution,
    lifts: bool,
    who: &str,
    root_comment_id: Option<u64>,
) -> FindingState {
    let mut finding = in_play.finding.clone();
    let state = if lifts {
        state_after(resolution)
    } else {
        finding.state
    };
    if state != finding.state || !in_play.stored {
        finding.state = state;
        finding.state_changed_by = Some(who.to_string());
        finding.state_changed_at = Some(OffsetDateTime::now_utc());
        // The turn read the finding before the model answered; a review may have
        // written it since: conditional, this (newer) decision applied over that.
        let read = in_play.stored.then_some(&in_play.finding);
        if let Err(err) =
            lifecycle::store_state(store, read, &finding, lifecycle::Precedence::Newest).await
        {
            tracing::warn!(repo = %snap.repo, finding = %finding.id, error = %err, "could not store the dispute's outcome");
        }
    }
    tracing::info!(repo = %snap.repo, pr = snap.number, finding = %finding.id, resolution = resolution.as_str(), lifts, stored_before = in_play.stored, "dispute settled");
    // A fixed finding's thread is resolved as a push's fix resolves it; a concession's
    // as the team chose.
    let resolve_thread = match resolution {
        Resolution::Fixed => true,
        Resolution::Concede => snap.config.config.dispute.resolve_thread_on_concede,
        Resolution::Maintain | Resolution::Escalate => false,
    };
    let Some(root_comment_id) = root_comment_id.filter(|_| lifts && resolve_thread) else {
        return state;
    };
    let thread = match github
        .find_review_thread(&snap.scope, snap.number, root_comment_id)
        .await
    {
        Ok(Some(thread)) => thread,
        Ok(None) => {
            tracing::warn!(repo = %snap.repo, pr = snap.number, root_comment_id, "no review thread found to resolve");
            return state;
        }
        Err(err) => {
            tracing::warn!(repo = %snap.repo, pr = snap.number, error = %err, "could not look up the review thread");
            return state;
        }
    };
    if thread.is_resolved {
        return state;
    }
    if let Err(err) = github.resolve_review_thread(&snap.scope, &thread.id).await {
        tracing::warn!(repo = %snap.repo, pr = snap.number, error = %err, "could not resolve the review thread");
    }
    state
}
