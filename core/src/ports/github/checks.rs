//! Check runs: the merge gate Parley reports.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Queued,
    InProgress,
    Completed,
    Waiting,
    Requested,
    Pending,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckConclusion {
    Success,
    Failure,
    Neutral,
    Cancelled,
    Skipped,
    TimedOut,
    ActionRequired,
    Stale,
}

/// The text a check run shows. GitHub caps `summary` and `text` at 65 535 characters each
/// and answers 422 beyond that.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckRunOutput {
    pub title: String,
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl CheckRunOutput {
    /// Summary and text cut to what GitHub takes of each (in bytes, see
    /// [`crate::body_limit::fit_check`]): a longer one is refused whole, and the check it
    /// concludes would stay in progress.
    pub fn fitted(self) -> Self {
        let fit = |text: String| match crate::body_limit::fit_check(&text) {
            std::borrow::Cow::Borrowed(_) => text,
            std::borrow::Cow::Owned(cut) => cut,
        };
        CheckRunOutput {
            title: self.title,
            summary: fit(self.summary),
            text: self.text.map(fit),
        }
    }
}

/// A check run to create: which check on which commit, and the state it starts in (in
/// progress, or completed at once), the same fields an update sets later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewCheckRun {
    pub name: String,
    pub head_sha: String,
    /// Our own id for the run (e.g. the review run key), echoed back by GitHub.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    pub started_at: Option<OffsetDateTime>,
    #[serde(flatten)]
    pub state: CheckRunUpdate,
}

/// Fields to change on a check run; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CheckRunUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<CheckStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conclusion: Option<CheckConclusion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details_url: Option<String>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    pub completed_at: Option<OffsetDateTime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<CheckRunOutput>,
    /// Buttons GitHub shows on the check (three at most); pressing one sends the App
    /// `check_run.requested_action` with its identifier and who pressed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<CheckRunAction>>,
}

/// A button on a check run. GitHub refuses (422) a label over 20 characters, a
/// description over 40 or an identifier over 20.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckRunAction {
    pub label: String,
    pub description: String,
    pub identifier: String,
}

impl CheckRunUpdate {
    /// Done at `at` with its verdict: how every run Parley starts ends.
    pub fn completed(
        conclusion: CheckConclusion,
        output: CheckRunOutput,
        at: OffsetDateTime,
    ) -> Self {
        CheckRunUpdate {
            status: Some(CheckStatus::Completed),
            conclusion: Some(conclusion),
            details_url: None,
            completed_at: Some(at),
            output: Some(output.fitted()),
            actions: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckRun {
    pub id: u64,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub head_sha: String,
    pub status: CheckStatus,
    #[serde(default)]
    pub conclusion: Option<CheckConclusion>,
    #[serde(default)]
    pub html_url: Option<String>,
    #[serde(default)]
    pub details_url: Option<String>,
    #[serde(default)]
    pub external_id: Option<String>,
    /// The App that made it: any App (or a workflow's token) may name a check
    /// "Parley review" and give it any external id.
    #[serde(default)]
    pub app: Option<CheckApp>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckApp {
    #[serde(default)]
    pub slug: Option<String>,
}
