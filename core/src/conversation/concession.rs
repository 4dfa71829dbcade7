//! A concession (or a fix confirmed in the thread) Parley posted: the finding it lifts,
//! recorded once, and found again after a crash between posting and recording.

use super::snapshot::PrSnapshot;
use super::trigger::Trigger;
use super::{ConversationHandler, Resolution, context, dispute};
use crate::learning::outcomes::{self, Signal};
use crate::markers;
use crate::ports::{FindingState, Verdict};

impl ConversationHandler {
    /// Apply a concession or confirmed fix Parley already posted (its reply marker says
    /// `concede` or `fixed`) whose effect on the finding was never recorded: the job died
    /// after the post. Best effort, like the settlement it stands in for.
    pub(super) async fn settle_posted_concession(&self, snap: &PrSnapshot, trigger: &Trigger) {
        let Some((finding_id, resolution)) = self.posted_concession(snap, trigger).await else {
            return;
        };
        let store = self.store();
        let Ok(findings) = store.findings_for_pr(&snap.repo, snap.number).await else {
            return;
        };
        let Some(finding) = findings.into_iter().find(|f| f.id == finding_id) else {
            return;
        };
        // A fix is settled once the finding is resolved (an earlier acceptance, the push
        // that changed its lines, keeps its outcome); a concession once it is recorded.
        let settled_before = match resolution {
            Resolution::Fixed => finding.state == FindingState::Resolved,
            _ => finding
                .outcome
                .as_ref()
                .is_some_and(|o| o.signal == "conceded"),
        };
        if settled_before {
            return;
        }
        tracing::info!(repo = %snap.repo, pr = snap.number, finding = %finding.id, resolution = resolution.as_str(), "a posted concession was never recorded; settling it now");
        let in_play = context::FindingInPlay {
            finding,
            stored: true,
        };
        let lifts = match dispute::weigh_concession(self.github(), snap, &in_play, trigger).await {
            Ok(decision) => decision.lifts(),
            Err(err) => {
                tracing::warn!(repo = %snap.repo, error = %err, "could not weigh the posted concession; the retry will");
                return;
            }
        };
        let root = in_play.finding.comment_id;
        let state = dispute::settle(
            self.github(),
            store,
            snap,
            &in_play,
            resolution,
            lifts,
            &trigger.author.login,
            root,
        )
        .await;
        if resolution == Resolution::Fixed {
            if state == FindingState::Resolved {
                self.record_fixed(snap, &in_play.finding.id, trigger).await;
            }
        } else {
            self.record_concession(snap, &in_play.finding.id, trigger)
                .await;
        }
        if state != in_play.finding.state {
            crate::review::regate::finding_changed(&self.services, &snap.scope, snap.number).await;
        }
    }

    /// Parley conceded `finding` to the trigger's author: a rejection when they could
    /// have decided about it (see [`dispute::record_concession`]).
    pub(super) async fn record_concession(
        &self,
        snap: &PrSnapshot,
        finding: &str,
        trigger: &Trigger,
    ) {
        dispute::record_concession(
            self.github(),
            self.store(),
            self.services.corpus.as_ref(),
            snap,
            finding,
            &trigger.author.login,
        )
        .await;
    }

    /// Parley found `finding` fixed at the trigger's author's word, and it lifted: the
    /// finding was right, an acceptance as a push's fix is (see
    /// [`crate::review::fixed::settle`]).
    pub(super) async fn record_fixed(&self, snap: &PrSnapshot, finding: &str, trigger: &Trigger) {
        let signal = Signal::new(Verdict::Accepted, "fixed", Some(&trigger.author.login));
        outcomes::record_by_id(
            self.store(),
            self.services.corpus.as_ref(),
            &snap.repo,
            snap.number,
            finding,
            signal,
        )
        .await;
    }

    /// The finding a reply of Parley's to `trigger` conceded or found fixed, if one did,
    /// and which.
    pub(super) async fn posted_concession(
        &self,
        snap: &PrSnapshot,
        trigger: &Trigger,
    ) -> Option<(String, Resolution)> {
        let conceded = |user: Option<&crate::ports::github::User>, body: &str| {
            let marker = markers::trusted::<markers::ReplyMarker>(
                user,
                &snap.handles,
                body,
                markers::kind::REPLY,
            )
            .filter(|m| m.reply_to == trigger.id)?;
            let resolution = match marker.resolution.as_deref() {
                Some("concede") => Resolution::Concede,
                Some("fixed") => Resolution::Fixed,
                _ => return None,
            };
            Some((marker.finding?, resolution))
        };
        if let Ok(listing) = snap.review_comments(self.github()).await
            && let Some(found) = listing
                .items
                .iter()
                .find_map(|c| conceded(c.user.as_ref(), &c.body))
        {
            return Some(found);
        }
        let listing = snap.issue_comments(self.github()).await.ok()?;
        listing
            .items
            .iter()
            .find_map(|c| conceded(c.user.as_ref(), &c.body))
    }
}
