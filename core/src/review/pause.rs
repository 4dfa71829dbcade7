//! `@parley pause` on a PR: its pushes are not reviewed until `@parley resume`, for a
//! PR whose author iterates in many small pushes and wants one review at the end, not one
//! per push.
//!
//! A paused head is not reviewed at all, so its check is what a review owed and not given
//! gets ([`super::gate`]'s `not_in_full`): `neutral` by default, held (`action_required`)
//! where `gate.incomplete: hold` asks for a complete review of every head, open blocking
//! findings failing it either way. Pausing therefore lets no code past a gate that
//! waits for reviews, and lifts no finding. Manual reviews (`@parley review`) still run;
//! `resume` reviews what came while paused (since the last review, as a push would).
//! The note is the store's, keyed by the PR, and lapses after [`PAUSED_FOR`]: a PR
//! forgotten while paused is reviewed again some day.

use crate::ports::{Claim, Store, StoreError};
use std::time::Duration;

/// How long a pause lasts when nobody resumes.
pub const PAUSED_FOR: Duration = Duration::from_secs(30 * 24 * 3600);

/// Who holds the note: one owner, so that pausing again extends it.
const PAUSED_BY: &str = "pause";

/// What the check of a paused head says was not done, and why, naming the command that
/// resumes in the installation's own handle.
pub fn reason(parley: &crate::mention::Handles) -> String {
    format!(
        "automatic reviews of this pull request are paused ({} resumes them)",
        parley.command("resume")
    )
}

/// Pause automatic reviews of PR `number`; `false` when they were paused already.
pub async fn pause(store: &dyn Store, repo: &str, number: u64) -> Result<bool, StoreError> {
    let newly = !is_paused(store, repo, number).await?;
    store
        .claim_as(&key(repo, number), PAUSED_BY, PAUSED_FOR)
        .await
        .map(|claim| claim == Claim::Won && newly)
}

/// Resume automatic reviews of PR `number`; `false` when they were not paused.
pub async fn resume(store: &dyn Store, repo: &str, number: u64) -> Result<bool, StoreError> {
    if !is_paused(store, repo, number).await? {
        return Ok(false);
    }
    store.release(&key(repo, number)).await.map(|()| true)
}

/// Whether automatic reviews of PR `number` are paused.
pub async fn is_paused(store: &dyn Store, repo: &str, number: u64) -> Result<bool, StoreError> {
    store.is_claimed(&key(repo, number)).await
}

fn key(repo: &str, number: u64) -> String {
    format!("paused#{repo}#{number}")
}
