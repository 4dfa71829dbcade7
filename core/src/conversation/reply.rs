//! Answering in a thread or on the PR: the model's answer posted, a dispute's outcome applied,
//! the thread remembered for retrieval, and the config warnings footer.

use super::answer::{self, Destination};
use super::snapshot::PrSnapshot;
use super::thread::Conversation;
use super::trigger::Trigger;
use super::{ConversationHandler, Failed, Outcome, Resolution, context, dispute, gates};
use crate::llm::MeteredLlm;
use crate::markers::{self, ReplyMarker};
use crate::ports::FindingState;

impl ConversationHandler {
    /// Read the context, ask the model, post the answer, settle a dispute.
    pub(super) async fn reply(
        &self,
        snap: &PrSnapshot,
        llm: &MeteredLlm,
        trigger: &Trigger,
        conversation: &Conversation,
        destination: &Destination,
    ) -> Result<Outcome, Failed> {
        let sources = context::Sources {
            github: self.github(),
            store: self.store(),
            guidelines: &self.guidelines,
            recall: crate::retrieval::Recall::of(&self.services),
            code: self.services.code.as_deref(),
        };
        let conversation = &self.permitted_history(snap, conversation).await;
        let ctx = context::assemble(&sources, snap, trigger, conversation)
            .await
            .map_err(Failed::BeforePosting)?;
        let budget_chars = snap.config.config.mention.context_budget_chars as usize;
        let model_answer = answer::ask(llm, &ctx, budget_chars, snap.config.config.review.tools)
            .await
            .map_err(|err| Failed::BeforePosting(err.into()))?;

        // The model read the thread and the code: what it wrote pings no one (only the
        // escalation below names people, and Parley chose them).
        let said = crate::sanitize::model_text(&model_answer.reply, &snap.silenced);
        // A resolution means something only when a finding is in play.
        let resolution = model_answer.resolution.filter(|_| ctx.finding.is_some());
        let mut extras = Vec::new();
        if resolution == Some(Resolution::Escalate) {
            let path = ctx.finding.as_ref().map(|f| f.finding.path.as_str());
            extras.push(dispute::escalate(self.github(), snap, trigger, path).await);
        }
        // A team that leaves fixes to people (`review.resolveFixed: false`) is told so
        // rather than having the model resolve one.
        let resolution = match resolution {
            Some(Resolution::Fixed) if !snap.config.config.review.resolve_fixed => {
                extras.push(FIXES_LEFT_TO_PEOPLE.to_string());
                None
            }
            other => other,
        };
        // A concession (or a fix the model confirms) lifts a blocking finding only for
        // someone entitled to lift it (the PR's author after changing the code, or
        // `gate.resolveBy`): otherwise the author could talk the model round and turn the
        // required check green.
        let lifts = match (resolution, &ctx.finding) {
            (Some(r), Some(in_play)) if dispute::would_lift(r) => {
                let decision = dispute::weigh_concession(self.github(), snap, in_play, trigger)
                    .await
                    .map_err(|err| Failed::BeforePosting(err.into()))?;
                extras.extend(decision.explain(&in_play.finding));
                decision.lifts()
            }
            _ => true,
        };
        extras.extend(config_footer(snap));
        if ctx.retrieved.used() {
            extras.push(ctx.retrieved.context_used(&snap.silenced));
        }
        let mut marker = ReplyMarker::new(markers::kind::REPLY, trigger.id);
        marker.finding = ctx.finding.as_ref().map(|f| f.finding.id.clone());
        marker.resolution = resolution.map(|r| r.as_str().to_string());
        let body = answer::compose(
            &said,
            &extras,
            destination,
            markers::kind::REPLY,
            &marker,
            &snap.silenced,
        );
        let posted = answer::post_answer(self.github(), snap, destination, &body)
            .await
            .map_err(Failed::Posting)?;
        let reply_id = posted.id;
        snap.mark_answered(trigger.id);
        gates::record_answered(self.store(), snap, trigger.id, reply_id).await;
        match posted.in_thread {
            Some(reply) => {
                self.remember_thread(snap, trigger, conversation, reply)
                    .await
            }
            None => {
                let by = posted.by.as_deref().unwrap_or("parley");
                self.remember_exchange(snap, trigger, by, &said).await
            }
        }

        if let (Some(resolution), Some(in_play)) = (resolution, &ctx.finding) {
            // The finding's thread: the one asked in, else (a question in the PR's
            // conversation naming it) its own, if it has one.
            let thread = conversation
                .root
                .as_ref()
                .map(|root| root.id)
                .or(in_play.finding.comment_id);
            let state = dispute::settle(
                self.github(),
                self.store(),
                snap,
                in_play,
                resolution,
                lifts,
                &trigger.author.login,
                thread,
            )
            .await;
            // The model agreed the finding was wrong: a rejection, whoever it lifts it for.
            // Recording it also rewrites the finding's retrieval document; any other
            // change of state (a conceded finding held again) is written there directly.
            if resolution == Resolution::Concede {
                self.record_concession(snap, &in_play.finding.id, trigger)
                    .await;
            } else if resolution == Resolution::Fixed && state == FindingState::Resolved {
                self.record_fixed(snap, &in_play.finding.id, trigger).await;
            } else if state != in_play.finding.state {
                let mut changed = in_play.finding.clone();
                changed.state = state;
                crate::retrieval::remember::outcome(self.services.corpus.as_ref(), &changed).await;
            }
            if state != in_play.finding.state {
                crate::review::regate::finding_changed(&self.services, &snap.scope, snap.number)
                    .await;
            }
        }
        Ok(Outcome::Answered {
            comment_id: trigger.id,
            reply_id,
        })
    }

    /// Remember the inline thread just answered for retrieval (later questions and reviews
    /// on other PRs may find it): the turns the answer was based on, the question and the
    /// answer. The history is the permitted one, so a turn kept out of this prompt is kept
    /// out of every later one too. Fail open, like all of retrieval.
    pub(super) async fn remember_thread(
        &self,
        snap: &PrSnapshot,
        trigger: &Trigger,
        conversation: &Conversation,
        reply: crate::ports::github::ReviewComment,
    ) {
        let Some(pr_ref) = rememberable(snap) else {
            return;
        };
        let listing = match snap.review_comments(self.github()).await {
            Ok(listing) => listing,
            Err(err) => {
                tracing::warn!(repo = %snap.repo, pr = snap.number, error = %err, "could not list the thread to remember it");
                return;
            }
        };
        let mut wanted: std::collections::HashSet<u64> =
            conversation.history.iter().map(|said| said.id).collect();
        wanted.insert(trigger.id);
        let mut comments: Vec<crate::ports::github::ReviewComment> = listing
            .items
            .iter()
            .filter(|c| wanted.contains(&c.id))
            .cloned()
            .collect();
        comments.extend(conversation.root.iter().cloned());
        comments.push(reply);
        crate::retrieval::remember::thread(
            &self.services,
            &snap.config.config.retrieval,
            pr_ref,
            &comments,
        )
        .await;
    }

    /// Remember a question answered in the PR's conversation (not in an inline thread),
    /// with the answer, for retrieval: the asker passed the gates of who may talk to
    /// Parley, as a remembered thread's turns did. Nothing on an issue that is not a PR.
    async fn remember_exchange(
        &self,
        snap: &PrSnapshot,
        trigger: &Trigger,
        answerer: &str,
        answer: &str,
    ) {
        let Some(pr_ref) = rememberable(snap) else {
            return;
        };
        let exchange = crate::retrieval::documents::Exchange {
            id: trigger.id,
            asker: &trigger.author.login,
            question: &trigger.body,
            answerer,
            answer,
            asked_at: trigger
                .created_at
                .unwrap_or_else(time::OffsetDateTime::now_utc),
        };
        crate::retrieval::remember::exchange(
            &self.services,
            &snap.config.config.retrieval,
            pr_ref,
            exchange,
        )
        .await;
    }
}

/// Said under an answer that found the finding fixed where `review.resolveFixed` is off.
const FIXES_LEFT_TO_PEOPLE: &str = "This repository leaves fixes to people \
    (`review.resolveFixed: false`), so I have not resolved the finding: resolve the thread \
    once you are satisfied.";

/// The PR whose words may enter the repository's corpora now (a fork's only once
/// merged); `None` on an issue, or a fork PR still open.
fn rememberable(snap: &PrSnapshot) -> Option<crate::retrieval::documents::PrRef<'_>> {
    let pr = snap.pull()?;
    crate::retrieval::remember::admissible(pr).then_some(crate::retrieval::documents::PrRef {
        repo: &snap.repo,
        number: snap.number,
        title: &pr.title,
    })
}

/// `.parley.yml` problems with the keys this worker reads, for the reply's footer: a bad
/// value falls back to its default, and the people talking to Parley should know which
/// key was ignored and what is in force instead.
pub(super) fn config_footer(snap: &PrSnapshot) -> Option<String> {
    let config = &snap.config.config;
    let relevant: Vec<String> = snap
        .config
        .warnings
        .iter()
        .filter(|w| {
            w.key.starts_with("mention")
                || w.key.starts_with("dispute")
                || w.key == crate::config::FILE_NAME
        })
        .map(|w| {
            // The reader words every rejection "…; using the default": say which.
            let why = w.message.trim_end_matches("; using the default");
            match default_in_force(&w.key, config) {
                Some(value) => format!("`{}`: {why}; using the default `{value}`", w.key),
                None => w.to_string(),
            }
        })
        .collect();
    (!relevant.is_empty()).then(|| {
        format!(
            "<sub>Configuration problem in `.parley.yml`: {}.</sub>",
            relevant.join("; ")
        )
    })
}

/// The value in force for a rejected key this worker reads (its default, since the
/// configured value was rejected). `None` for keys without a single value (unknown keys,
/// the whole file).
pub(super) fn default_in_force(key: &str, config: &crate::config::RepoConfig) -> Option<String> {
    let list = |items: &[String]| {
        if items.is_empty() {
            "[]".to_string()
        } else {
            format!("[{}]", items.join(", "))
        }
    };
    let mention = &config.mention;
    Some(match key {
        "mention.allowedUsers" => list(&mention.allowed_users),
        "mention.minPermission" => format!("{:?}", mention.min_permission).to_ascii_lowercase(),
        "mention.claudeAlias" => mention.claude_alias.to_string(),
        "mention.conversation.replyWithoutMention" => mention.reply_without_mention.to_string(),
        "mention.conversation.maxTurnsPerPr" => mention.max_turns_per_pr.to_string(),
        "mention.conversation.contextBudgetChars" => mention.context_budget_chars.to_string(),
        "dispute.humanReviewers" => list(&config.dispute.human_reviewers),
        "dispute.resolveThreadOnConcede" => config.dispute.resolve_thread_on_concede.to_string(),
        _ => return None,
    })
}
