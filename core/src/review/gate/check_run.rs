//! The "Parley review" check runs on GitHub: their names, starting one `in_progress`,
//! concluding it (or creating it completed), and the button a held check carries. What a
//! check concludes is decided in the parent module.

use crate::ports::github::{
    CheckConclusion, CheckRunAction, CheckRunOutput, CheckRunUpdate, CheckStatus, GitHub,
    GitHubError, NewCheckRun, RepoScope,
};
use crate::review::summary::short;
use time::OffsetDateTime;

/// The check a team requires: only automatic reviews report under it.
pub const CHECK_NAME: &str = "Parley review";

/// The check of every manual review (`@parley review`, `@parley full review`). A name of
/// its own: GitHub's branch protection reads the newest check of a name, so a manual
/// (`neutral`) review under [`CHECK_NAME`] would lift the automatic review's `failure`, or
/// satisfy the required check before the automatic review ran at all.
pub const MANUAL_CHECK_NAME: &str = "Parley review (manual)";

/// The check name for the run `run_key` (see [`crate::review::runs::manual_key`]).
pub fn check_name(run_key: &str) -> &'static str {
    if crate::review::runs::is_manual_key(run_key) {
        MANUAL_CHECK_NAME
    } else {
        CHECK_NAME
    }
}

/// The identifier of a held check's button that lets its head through without a complete
/// review (see [`crate::review::let_through`]).
pub const LET_THROUGH: &str = "let-through";

/// The button a held check carries.
pub(super) fn let_through_action() -> CheckRunAction {
    CheckRunAction {
        label: "Let it through".to_string(),
        description: "Pass without a complete review".to_string(),
        identifier: LET_THROUGH.to_string(),
    }
}

/// Start the check run, `in_progress`. A failure is logged and the review goes on without
/// a gate (fail open: the review itself is worth more than its check).
pub async fn start(
    github: &dyn GitHub,
    scope: &RepoScope,
    name: &str,
    head_sha: &str,
    external_id: &str,
) -> Option<u64> {
    let run = NewCheckRun {
        name: name.to_string(),
        head_sha: head_sha.to_string(),
        external_id: Some(external_id.to_string()),
        started_at: Some(OffsetDateTime::now_utc()),
        state: CheckRunUpdate {
            status: Some(CheckStatus::InProgress),
            output: Some(CheckRunOutput {
                title: "Reviewing".to_string(),
                summary: format!("Parley is reviewing `{}`.", short(head_sha)),
                text: None,
            }),
            ..CheckRunUpdate::default()
        },
    };
    // An attempt that died right after creating its check left it in progress under this
    // run's key: take it over rather than leave it beside a new one forever.
    if let Some(id) = in_progress(github, scope, &run).await {
        tracing::info!(repo = %scope.full_name(), check_run_id = id, "taking over the check run an earlier attempt left in progress");
        return Some(id);
    }
    match github.create_check_run(scope, &run).await {
        Ok(run) => Some(run.id),
        Err(err) => {
            // A 5xx or an answer that never came: the run may exist all the same. Unfound,
            // it would stay "in progress" beside the completed one created at the end.
            if matches!(err, GitHubError::Server { .. } | GitHubError::Network(_))
                && let Some(id) = in_progress(github, scope, &run).await
            {
                tracing::info!(repo = %scope.full_name(), check_run_id = id, error = %err, "the check run was created despite the error; using it");
                return Some(id);
            }
            tracing::warn!(repo = %scope.full_name(), error = %err, "could not create the check run; reviewing without a gate");
            None
        }
    }
}

/// `run`'s check still in progress on its head, by its external id: left by an attempt
/// that died, or created although GitHub's answer said otherwise. Best effort.
async fn in_progress(github: &dyn GitHub, scope: &RepoScope, run: &NewCheckRun) -> Option<u64> {
    let external_id = run.external_id.as_deref();
    match github
        .list_check_runs(scope, &run.head_sha, &run.name)
        .await
    {
        Ok(runs) => runs
            .into_iter()
            .find(|run| {
                run.external_id.as_deref() == external_id && run.status != CheckStatus::Completed
            })
            .map(|run| run.id),
        Err(err) => {
            tracing::warn!(repo = %scope.full_name(), error = %err, "could not list check runs");
            None
        }
    }
}

/// Create a completed "Parley review" check on `head_sha` in one call: how a re-evaluated
/// gate changes its conclusion, since GitHub never reopens a completed check run and
/// branch protection reads the newest check of a name. One call, so a failure leaves the
/// previous check standing rather than a half-made one.
pub async fn publish(
    github: &dyn GitHub,
    scope: &RepoScope,
    head_sha: &str,
    external_id: &str,
    conclusion: CheckConclusion,
    output: CheckRunOutput,
) -> Result<u64, GitHubError> {
    let check = Check {
        id: None,
        name: CHECK_NAME,
        head_sha,
        external_id,
    };
    complete(github, scope, &check, conclusion, output).await
}

/// The check run a run concludes: the one it started, or (when starting failed) one to
/// create completed, so a run never ends without a check.
pub struct Check<'a> {
    pub id: Option<u64>,
    pub name: &'a str,
    pub head_sha: &'a str,
    pub external_id: &'a str,
}

/// Conclude `check`: complete the started one, or create it completed when it was never
/// created (GitHub was down at the start). Returns the check run's id. An error is the
/// caller's to handle: a run is only recorded as done once its check is concluded, so a
/// failure here is retried by the queue instead of leaving a check "in progress" forever.
pub async fn complete(
    github: &dyn GitHub,
    scope: &RepoScope,
    check: &Check<'_>,
    conclusion: CheckConclusion,
    output: CheckRunOutput,
) -> Result<u64, GitHubError> {
    let now = OffsetDateTime::now_utc();
    let mut state = CheckRunUpdate::completed(conclusion, output, now);
    if conclusion == CheckConclusion::ActionRequired && check.name == CHECK_NAME {
        state.actions = Some(vec![let_through_action()]);
        crate::metrics::gate_held();
    }
    if let Some(id) = check.id {
        github.update_check_run(scope, id, &state).await?;
        return Ok(id);
    }
    let run = NewCheckRun {
        name: check.name.to_string(),
        head_sha: check.head_sha.to_string(),
        external_id: Some(check.external_id.to_string()),
        started_at: Some(now),
        state,
    };
    Ok(github.create_check_run(scope, &run).await?.id)
}

/// Complete the check run, best effort: for a superseded run, whose head nobody merges.
pub async fn finish(
    github: &dyn GitHub,
    scope: &RepoScope,
    check_run_id: Option<u64>,
    conclusion: CheckConclusion,
    output: CheckRunOutput,
) {
    let Some(id) = check_run_id else { return };
    let update = CheckRunUpdate::completed(conclusion, output, OffsetDateTime::now_utc());
    if let Err(err) = github.update_check_run(scope, id, &update).await {
        tracing::warn!(repo = %scope.full_name(), check_run_id = id, error = %err, "could not complete the check run");
    }
}
