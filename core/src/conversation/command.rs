//! Carrying out a parsed command: teaching, forgetting, dismissing, asking for a review,
//! pausing reviews ([`super::pause`]).

use super::answer::Destination;
use super::snapshot::PrSnapshot;
use super::thread::Conversation;
use super::trigger::Trigger;
use super::{
    Command, ConversationError, ConversationHandler, Outcome, Taught, gates, is_teaching, notes,
    reports, review_request, skipped, teach,
};
use crate::llm::MeteredLlm;
use crate::review::{pause, resolution};

impl ConversationHandler {
    /// A command instead of a question: queue a review (for those allowed, within the
    /// hourly allowance) or dismiss a finding. Every path answers the comment once and
    /// records it, so neither a redelivery nor the sweep runs it again.
    #[allow(clippy::too_many_arguments)] // one call site; each part is a different thing
    pub(super) async fn command(
        &self,
        snap: &PrSnapshot,
        llm: &MeteredLlm,
        trigger: &Trigger,
        conversation: &Conversation,
        destination: &Destination,
        command: Command,
        owner: &str,
    ) -> Result<Outcome, ConversationError> {
        let github = self.github();
        if is_teaching(&command) {
            let turn = teach::Turn {
                github,
                store: self.store(),
                corpus: self.services.corpus.as_ref(),
                llm,
                permissions: &self.permissions,
                snap,
                trigger,
                conversation,
                budget: &self.services.budget,
            };
            let (text, taught) = match command {
                Command::Learn(learn) => teach::learn(&turn, learn).await?,
                Command::Forget(what) => teach::forget(&turn, what).await?,
                Command::Learnings => reports::learnings(&turn).await?,
                Command::Stats => reports::stats(&turn).await?,
                Command::Configuration => {
                    let store = self.store();
                    let memory = crate::learning::memory::load(store, &snap.repo, &snap.org)
                        .await
                        .ok();
                    let paused = snap.pull().is_some()
                        && pause::is_paused(store, &snap.repo, snap.number)
                            .await
                            .unwrap_or(false);
                    let gate = match snap.pull() {
                        Some(pr) => Some(
                            reports::merge_gate(
                                github,
                                &self.services.identity,
                                snap,
                                &pr.base.ref_name,
                            )
                            .await,
                        ),
                        None => None,
                    };
                    (
                        reports::configuration(snap, memory.as_ref(), paused, gate.as_deref()),
                        Taught::Reported("configuration"),
                    )
                }
                _ => (reports::help(&snap.handles), Taught::Reported("help")),
            };
            let reply = notes::answer_command(github, snap, trigger, destination, &text).await?;
            gates::record_answered(self.store(), snap, trigger.id, reply).await;
            return Ok(Outcome::Taught(taught));
        }
        let Some(pr) = snap.pull() else {
            // Nothing to review or dismiss on a plain issue: say so (once: the reply claim
            // and the note's reply marker guard it).
            let reply =
                notes::reviews_need_a_pull_request(github, snap, trigger, destination).await?;
            gates::record_answered(self.store(), snap, trigger.id, reply).await;
            return Ok(Outcome::ReviewNotPossible(command));
        };
        let answered = |reply: u64| gates::record_answered(self.store(), snap, trigger.id, reply);
        if let Command::DismissFinding { finding } = &command {
            return self.dismiss(snap, pr, trigger, destination, finding).await;
        }
        if matches!(command, Command::Pause | Command::Resume) {
            let pausing = command == Command::Pause;
            return self
                .pause_or_resume(snap, pr, trigger, destination, pausing, owner)
                .await;
        }
        let Some(review) = command.trigger() else {
            return Ok(skipped(snap, trigger, "not a review command"));
        };
        // Reviews are paid for: asking needs `mention.minPermission`, the PR's author
        // included (talking to Parley about one's own PR does not).
        if let Err(why) = self
            .permissions
            .at_least(
                github,
                snap,
                &trigger.author.login,
                resolution::permission(snap.config.config.mention.min_permission),
            )
            .await?
        {
            let text = refused(
                &trigger.author.login,
                "reviews on request need",
                snap.config.config.mention.min_permission,
                "mention.minPermission",
                &why,
            );
            let reply = notes::answer_command(github, snap, trigger, destination, &text).await?;
            answered(reply).await;
            return Ok(Outcome::CommandRefused(why));
        }
        match gates::take_manual_review(self.store(), snap).await? {
            gates::ManualReviews::Allowed => {}
            gates::ManualReviews::Capped { first_of_window } => {
                let reply = if first_of_window {
                    let per_hour = snap.config.config.review.manual_reviews_per_hour;
                    let text = if per_hour == 0 {
                        "Reviews on request are turned off here (`review.manualReviewsPerHour: 0`); pushes are still reviewed.".to_string()
                    } else {
                        format!(
                            "This pull request has had its {per_hour} reviews on request for this hour (`review.manualReviewsPerHour`); ask again after the top of the hour. Pushes are still reviewed."
                        )
                    };
                    notes::answer_command(github, snap, trigger, destination, &text).await?
                } else {
                    0
                };
                answered(reply).await;
                return Ok(Outcome::ReviewCapped);
            }
        }
        review_request::request_review(
            self.services.queue.as_ref(),
            snap,
            pr,
            trigger,
            review,
            owner,
        )
        .await?;
        gates::acknowledge(github, snap, trigger).await;
        answered(0).await;
        Ok(Outcome::ReviewRequested(command))
    }

    /// `@parley dismiss f_…`: lift a finding of this PR, if the one asking may (see
    /// [`resolution`]), then judge the gate again.
    pub(super) async fn dismiss(
        &self,
        snap: &PrSnapshot,
        pr: &crate::ports::github::PullRequest,
        trigger: &Trigger,
        destination: &Destination,
        id: &str,
    ) -> Result<Outcome, ConversationError> {
        let github = self.github();
        let store = self.store();
        let findings = store.findings_for_pr(&snap.repo, snap.number).await?;
        let (text, lifted) = match findings.into_iter().find(|f| f.id == id) {
            None => (
                format!("There is no finding `{id}` on this pull request."),
                false,
            ),
            Some(f) if f.state != crate::ports::FindingState::Open => (
                format!(
                    "`{id}` ({}) is not open any more; nothing to dismiss.",
                    f.title
                ),
                false,
            ),
            Some(mut f) => {
                let decision = resolution::decide(
                    github,
                    &snap.scope,
                    &snap.config.config.gate,
                    &f,
                    &trigger.author.login,
                    snap.author(),
                    &pr.head.sha,
                )
                .await?;
                match decision.explain(&f) {
                    Some(why) => (format!("I cannot dismiss it for you: {why}"), false),
                    None => {
                        let read = f.clone();
                        f.state = crate::ports::FindingState::WontFix;
                        f.state_changed_by = Some(trigger.author.login.clone());
                        f.state_changed_at = Some(time::OffsetDateTime::now_utc());
                        // Conditional: a review may have written the finding since it
                        // was read (see `lifecycle::store_state`).
                        crate::review::lifecycle::store_state(
                            store,
                            Some(&read),
                            &f,
                            crate::review::lifecycle::Precedence::Newest,
                        )
                        .await?;
                        tracing::info!(repo = %snap.repo, pr = snap.number, finding = %f.id, by = %trigger.author.login, "finding dismissed by command");
                        // A rejection only from someone with `gate.resolveBy` (see
                        // `learning::outcomes`).
                        crate::learning::outcomes::record_from(
                            github,
                            store,
                            self.services.corpus.as_ref(),
                            &snap.scope,
                            &snap.config.config.gate,
                            snap.number,
                            &f.id,
                            &trigger.author.login,
                            crate::learning::outcomes::Signal::new(
                                crate::ports::Verdict::Rejected,
                                "wont_fix",
                                Some(&trigger.author.login),
                            ),
                        )
                        .await;
                        (
                            format!(
                                "Dismissed `{id}` ({}): it no longer counts for this pull request's merge gate.",
                                f.title
                            ),
                            true,
                        )
                    }
                }
            }
        };
        let reply = notes::answer_command(github, snap, trigger, destination, &text).await?;
        gates::record_answered(store, snap, trigger.id, reply).await;
        if lifted {
            crate::review::regate::finding_changed(&self.services, &snap.scope, snap.number).await;
        }
        Ok(Outcome::Dismissed {
            finding: id.to_string(),
            lifted,
        })
    }
}

/// What someone below the permission a command needs is told: `what_needs` is the
/// command's own words ("reviews on request need"), `setting` the key that sets the level.
pub(super) fn refused(
    login: &str,
    what_needs: &str,
    needs: crate::config::PermissionLevel,
    setting: &str,
    why: &str,
) -> String {
    format!(
        "Sorry @{login}, {what_needs} {} permission on this repository (`{setting}`); {why}.",
        permission_name(needs),
    )
}

fn permission_name(level: crate::config::PermissionLevel) -> String {
    format!("{level:?}").to_ascii_lowercase()
}
