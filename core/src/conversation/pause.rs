//! `@parley pause` and `@parley resume` on a PR (what a pause does to reviews and to the
//! gate: [`crate::review::pause`]).
//!
//! Pausing leaves pushes unreviewed, which is a way of not reporting what they bring, so
//! it needs `gate.resolveBy`, the permission that lifts a finding: a fork PR's author
//! cannot pause the reviews of their own PR. Resuming asks for a review, so it needs what
//! asking for one needs (`mention.minPermission`). Each answers the comment once.

use super::answer::Destination;
use super::snapshot::PrSnapshot;
use super::trigger::Trigger;
use super::{ConversationError, ConversationHandler, Outcome, gates, notes, review_request};
use crate::config::Incomplete;
use crate::ports::github::PullRequest;
use crate::review::{pause, resolution};

impl ConversationHandler {
    pub(super) async fn pause_or_resume(
        &self,
        snap: &PrSnapshot,
        pr: &PullRequest,
        trigger: &Trigger,
        destination: &Destination,
        pausing: bool,
        owner: &str,
    ) -> Result<Outcome, ConversationError> {
        let (github, store) = (self.github(), self.store());
        let config = &snap.config.config;
        let (needs, setting) = match pausing {
            true => (config.gate.resolve_by, "gate.resolveBy"),
            false => (config.mention.min_permission, "mention.minPermission"),
        };
        let login = &trigger.author.login;
        let allowed = self
            .permissions
            .at_least(github, snap, login, resolution::permission(needs))
            .await?;
        let (text, outcome) = match allowed {
            Err(why) => {
                let what_needs = match pausing {
                    true => "pausing reviews here needs",
                    false => "resuming reviews here needs",
                };
                let text = super::command::refused(login, what_needs, needs, setting, &why);
                (text, Outcome::CommandRefused(why))
            }
            Ok(()) if pausing => {
                let changed = pause::pause(store, &snap.repo, snap.number).await?;
                let resume = snap.handles.command("resume");
                let text = paused(changed, &resume, config.gate.incomplete);
                tracing::info!(repo = %snap.repo, pr = snap.number, by = %login, changed, "automatic reviews paused");
                (
                    text,
                    Outcome::Paused {
                        paused: true,
                        changed,
                    },
                )
            }
            Ok(()) => {
                let changed = pause::resume(store, &snap.repo, snap.number).await?;
                if changed {
                    let queue = self.services.queue.as_ref();
                    review_request::resume_review(queue, snap, pr, trigger, owner).await?;
                }
                let text = resumed(changed);
                let outcome = Outcome::Paused {
                    paused: false,
                    changed,
                };
                (text, outcome)
            }
        };
        let reply = notes::answer_command(github, snap, trigger, destination, &text).await?;
        gates::record_answered(store, snap, trigger.id, reply).await;
        Ok(outcome)
    }
}

/// What a pause tells the PR: what stops, what still runs, what the check says meanwhile.
fn paused(changed: bool, resume: &str, incomplete: Incomplete) -> String {
    if !changed {
        return format!(
            "Automatic reviews of this pull request are paused already; {resume} resumes them."
        );
    }
    let check = match incomplete {
        Incomplete::Pass => "says it was not reviewed (`neutral`)",
        Incomplete::Hold => {
            "waits for a review (`gate.incomplete: hold`), or for someone to let it through"
        }
    };
    format!(
        "Paused: pushes to this pull request are not reviewed until {resume}, which reviews what came meanwhile. \
         Until then the **Parley review** check of each new commit {check}; findings already open still count. \
         Reviews on request still run."
    )
}

fn resumed(changed: bool) -> String {
    if changed {
        "Resumed: pushes are reviewed again, starting now with what came while reviews were paused."
            .to_string()
    } else {
        "Automatic reviews of this pull request are not paused; nothing to resume.".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_says_what_the_check_does_meanwhile() {
        let text = paused(true, "`@acme resume`", Incomplete::Hold);
        assert!(text.contains("until `@acme resume`"), "{text}");
        assert!(text.contains("waits for a review"), "{text}");
        assert!(paused(true, "r", Incomplete::Pass).contains("`neutral`"));
        assert!(paused(false, "r", Incomplete::Pass).contains("paused already"));
    }
}
