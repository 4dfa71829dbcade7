//! Commands that teach Parley: remember / dismiss / adjust, won't fix, forget. Each
//! returns the text of the one reply the command gets; the caller posts it and records
//! the comment as answered. Asking what it knows (learnings, stats, configuration, help)
//! is [`super::reports`].
//!
//! **Who may teach.** A learning for the repository needs `write` on it; one for the
//! whole organisation applies to every repository of the owner, so it needs an active
//! admin of the owning organisation (or, for a user account, that user), read from
//! GitHub's organisation membership: admin on one repository is not enough. PR- and
//! thread-scoped ones need only the right to talk to Parley, which the comment already
//! passed, as long as they make Parley stricter or add context.
//!
//! **Only authority loosens.** Whatever the scope, a learning that lowers what Parley
//! reports ("don't flag …", "be more lenient with …") needs the repository's
//! `gate.resolveBy` permission: the same people who may lift a blocking finding. Every
//! learning records who taught it ([`Authority`]), so prompts can say so and reviews can
//! refuse a loosening that slipped in before this rule. Forgetting one's own learning is
//! always allowed; forgetting someone else's takes `resolveBy` as well as what adding it
//! needed.

use super::error::ConversationError;
use super::gates::Permissions;
use super::snapshot::PrSnapshot;
use super::thread::Conversation;
use super::trigger::Trigger;
use crate::commands::{self, Forget, Learn, ScopeWord};
use crate::config::PermissionLevel;
use crate::learning::memory;
use crate::learning::outcomes::{self, Signal};
use crate::learning::record::{
    Authority, Direction, Forgotten, Learning, LearningKind, Scope, canonical_id, partition,
};
use crate::ports::github::{GitHub, GitHubError, Permission};
use crate::ports::llm::Llm;
use crate::ports::{FindingState, Store, Verdict};
use time::OffsetDateTime;

/// What a teaching command needs from the turn.
pub struct Turn<'a> {
    pub github: &'a dyn GitHub,
    pub store: &'a dyn Store,
    /// Where a finding's retrieval document is updated when its outcome changes.
    pub corpus: &'a dyn crate::ports::CorpusStore,
    pub llm: &'a dyn Llm,
    pub permissions: &'a Permissions,
    pub snap: &'a PrSnapshot,
    pub trigger: &'a Trigger,
    pub conversation: &'a Conversation,
    /// The budget's default, for `stats`.
    pub budget: &'a crate::budget::BudgetPolicy,
}

/// What a teaching command did, for the log and the tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taught {
    Added { id: String, new: bool },
    Refused(String),
    Forgotten(String),
    Reported(&'static str),
}

/// `remember …`, `don't flag …`, `be stricter about …`.
pub async fn learn(turn: &Turn<'_>, learn: Learn) -> Result<(String, Taught), ConversationError> {
    let snap = turn.snap;
    let scope = match scope(turn, learn.scope) {
        Ok(scope) => scope,
        Err(why) => return Ok((why.clone(), Taught::Refused(why))),
    };
    if let Some(why) = may_teach(turn, &scope).await? {
        let text = format!("Sorry @{}, {why}", turn.trigger.author.login);
        return Ok((text, Taught::Refused(why)));
    }
    let kind = match learn.kind {
        commands::LearningKind::Remember => LearningKind::Remember,
        commands::LearningKind::Dismiss => LearningKind::Dismiss,
        commands::LearningKind::Adjust => LearningKind::Adjust,
    };
    let direction = learn.direction.map(|d| match d {
        commands::Direction::Stricter => Direction::Stricter,
        commands::Direction::Lenient => Direction::Lenient,
    });
    let authority = authority(turn).await?;
    let loosens = kind == LearningKind::Dismiss || direction == Some(Direction::Lenient);
    if loosens && !authority.may_loosen() {
        let why = format!(
            "making Parley report less (`don't flag …`, `be more lenient …`) needs {} permission on this repository, the same as lifting a blocking finding; you may make it stricter (`be stricter about …`) or add context (`remember …`)",
            turn.snap.config.config.gate.resolve_by.name()
        );
        let mut text = format!(
            "I did not add that as a learning, @{}: {why}.",
            turn.trigger.author.login
        );
        // `won't fix: …` in a finding's thread still speaks about that one finding, which
        // the resolution rules weigh on their own.
        if kind == LearningKind::Dismiss
            && matches!(scope, Scope::Pr { .. })
            && let Some(marker) = &turn.conversation.finding
        {
            text.push_str(&wont_fix(turn, &marker.id).await?);
        }
        return Ok((text, Taught::Refused(why)));
    }
    let hints = crate::learning::hints::extract(
        turn.llm,
        kind,
        &learn.text,
        &learn.paths,
        learn.category.as_deref(),
        direction,
    )
    .await;
    let learning = Learning {
        id: String::new(),
        repo: snap.repo.clone(),
        scope: scope.clone(),
        kind,
        text: crate::sanitize::user_text(&learn.text),
        hints,
        author: turn.trigger.author.login.clone(),
        authority: Some(authority),
        source_url: turn.trigger.html_url.clone(),
        source_comment_id: turn.trigger.id,
        created_at: OffsetDateTime::now_utc(),
        forgotten: None,
        times_applied: 0,
        findings_suppressed: 0,
    };
    let (learning, new) = memory::add_learning(turn.store, &snap.org, learning).await?;
    tracing::info!(repo = %snap.repo, learning = %learning.id, kind = kind.name(), scope = %scope.name(), new, "learning added");
    // `won't fix: …` in a finding's thread also settles that finding.
    let mut extra = String::new();
    if kind == LearningKind::Dismiss
        && matches!(scope, Scope::Pr { .. })
        && let Some(marker) = &turn.conversation.finding
    {
        extra = wont_fix(turn, &marker.id).await?;
    }
    let text = format!(
        "Learning added `{}` ({}): {} — undo with {}{}",
        learning.id,
        learning.scope.name(),
        summary_of(&learning),
        snap.handles.command(&format!("forget {}", learning.id)),
        extra
    );
    Ok((
        text,
        Taught::Added {
            id: learning.id,
            new,
        },
    ))
}

/// Settle a `won't fix` on the finding in play. The resolution rules come first
/// ([`crate::review::resolution::decide`]): when they refuse (the PR's author on a
/// blocking finding whose code has not changed, someone without `gate.resolveBy`), the
/// reply says why and nothing is recorded, since a rejection feeds the statistics and
/// false-positive patterns every later review applies. When they accept, the finding is
/// closed, and the rejection counts only from someone with `gate.resolveBy` (see
/// [`outcomes`]: a PR's author may close a non-blocking finding on their own PR, but not
/// teach Parley that such findings are wrong).
async fn wont_fix(turn: &Turn<'_>, finding_id: &str) -> Result<String, ConversationError> {
    let snap = turn.snap;
    let mut findings = turn.store.findings_for_pr(&snap.repo, snap.number).await?;
    let Some(finding) = findings.iter_mut().find(|f| f.id == finding_id) else {
        return Ok(String::new());
    };
    let Some(pr) = snap.pull() else {
        return Ok(String::new());
    };
    let login = &turn.trigger.author.login;
    let decision = crate::review::resolution::decide(
        turn.github,
        &snap.scope,
        &snap.config.config.gate,
        finding,
        login,
        snap.author(),
        &pr.head.sha,
    )
    .await?;
    if let Some(why) = decision.explain(finding) {
        return Ok(format!("\n\n{why}"));
    }
    let closed = finding.state == FindingState::Open;
    if closed {
        let read = finding.clone();
        finding.state = FindingState::WontFix;
        finding.state_changed_by = Some(login.clone());
        finding.state_changed_at = Some(OffsetDateTime::now_utc());
        // Conditional (a review may write the finding meanwhile); if this merged into a
        // newer version, recording the outcome below reads that one again.
        crate::review::lifecycle::store_state(
            turn.store,
            Some(&read),
            finding,
            crate::review::lifecycle::Precedence::Newest,
        )
        .await?;
    }
    let mut deciders = outcomes::Deciders::new(turn.github, &snap.scope, &snap.config.config.gate);
    let counts = deciders.decides(login).await?;
    if counts {
        let signal = Signal::new(Verdict::Rejected, "wont_fix", Some(login));
        outcomes::record(turn.store, turn.corpus, finding, &signal).await?;
    } else {
        tracing::info!(repo = %snap.repo, pr = snap.number, finding = %finding.id, login, "won't fix from someone without gate.resolveBy: not counted as a rejection");
    }
    let mut text = String::new();
    if closed {
        text.push_str(&format!(
            "\n\nThe finding `{}` is marked won't fix.",
            finding.id
        ));
    }
    if !counts {
        text.push_str(
            "\n\nIt is not counted as a false positive in Parley's statistics: that takes \
             someone with the repository's `gate.resolveBy` permission.",
        );
    }
    Ok(text)
}

/// `forget L-3f9a` / `forget "…"`: a soft delete, kept for the record.
pub async fn forget(turn: &Turn<'_>, what: Forget) -> Result<(String, Taught), ConversationError> {
    let snap = turn.snap;
    let memory = memory::load(turn.store, &snap.repo, &snap.org).await?;
    // Text finds only what is in force here: another PR's learnings are not this PR's to
    // take back by accident (by id, a maintainer may still name one).
    let here = snap.pull().map(|pr| pr.number);
    let found: Vec<&Learning> = match &what {
        Forget::Id(id) => {
            let id = canonical_id(id).unwrap_or_else(|| id.clone());
            memory.active().filter(|l| l.id == id).collect()
        }
        Forget::Text(text) => {
            let needle = text.trim().to_lowercase();
            memory
                .active()
                .filter(|l| match (&l.scope, here) {
                    (Scope::Repo | Scope::Org, _) => true,
                    (Scope::Pr { pr } | Scope::Thread { pr, .. }, Some(here)) => *pr == here,
                    _ => false,
                })
                .filter(|l| !needle.is_empty() && l.text.to_lowercase().contains(&needle))
                .collect()
        }
    };
    let learning = match found.as_slice() {
        [one] => (*one).clone(),
        [] => {
            let why = format!(
                "no active learning matches that; {} lists them",
                turn.snap.handles.command("learnings")
            );
            return Ok((
                format!("I found nothing to forget: {why}."),
                Taught::Refused(why),
            ));
        }
        many => {
            let ids: Vec<String> = many.iter().map(|l| format!("`{}`", l.id)).collect();
            let why = format!(
                "several learnings match ({}); forget one by its id",
                ids.join(", ")
            );
            return Ok((format!("Which one? {why}."), Taught::Refused(why)));
        }
    };
    let is_author = learning
        .author
        .eq_ignore_ascii_case(&turn.trigger.author.login);
    if !is_author {
        if let Some(why) = may_teach(turn, &learning.scope).await? {
            let text = format!("Sorry @{}, {why}", turn.trigger.author.login);
            return Ok((text, Taught::Refused(why)));
        }
        if !authority(turn).await?.may_loosen() {
            let why = format!(
                "taking back someone else's learning needs {} permission on this repository (or being its author, @{})",
                turn.snap.config.config.gate.resolve_by.name(),
                learning.author
            );
            let text = format!("Sorry @{}, {why}.", turn.trigger.author.login);
            return Ok((text, Taught::Refused(why)));
        }
    }
    let part = partition(&learning.repo, &snap.org, &learning.scope);
    let who = turn.trigger.author.login.clone();
    memory::update_learning(turn.store, &part, &learning.id, |l| {
        if l.forgotten.is_none() {
            l.forgotten = Some(Forgotten {
                by: who.clone(),
                at: OffsetDateTime::now_utc(),
            });
        }
    })
    .await?;
    tracing::info!(repo = %snap.repo, learning = %learning.id, by = %who, "learning forgotten");
    Ok((
        format!(
            "Forgot `{}` ({}): {}",
            learning.id,
            learning.scope.name(),
            summary_of(&learning)
        ),
        Taught::Forgotten(learning.id),
    ))
}

/// The scope a learning gets: what was said, else the repository.
fn scope(turn: &Turn<'_>, said: Option<ScopeWord>) -> Result<Scope, String> {
    let pr = turn.snap.pull().map(|pr| pr.number);
    match said {
        None | Some(ScopeWord::Repo) => Ok(Scope::Repo),
        Some(ScopeWord::Org) => Ok(Scope::Org),
        Some(ScopeWord::Pr) => pr.map(|pr| Scope::Pr { pr }).ok_or_else(|| {
            "A learning for \"this PR\" needs a pull request; this is an issue.".to_string()
        }),
        Some(ScopeWord::Thread) => match (pr, &turn.conversation.root) {
            (Some(pr), Some(root)) => Ok(Scope::Thread { pr, root: root.id }),
            _ => Err(
                "A learning for \"this thread\" needs a review thread; say it in one.".to_string(),
            ),
        },
    }
}

/// Who the trigger's author is for the merge gate: a maintainer holds `gate.resolveBy`.
async fn authority(turn: &Turn<'_>) -> Result<Authority, ConversationError> {
    let login = &turn.trigger.author.login;
    let needed = crate::review::resolution::permission(turn.snap.config.config.gate.resolve_by);
    let may_resolve = turn
        .permissions
        .at_least(turn.github, turn.snap, login, needed)
        .await?
        .is_ok();
    Ok(if may_resolve {
        Authority::Maintainer
    } else if turn
        .snap
        .author()
        .is_some_and(|author| author.eq_ignore_ascii_case(login))
    {
        Authority::PrAuthor
    } else {
        Authority::Participant
    })
}

/// Why the trigger's author may not teach at `scope`, if they may not.
async fn may_teach(turn: &Turn<'_>, scope: &Scope) -> Result<Option<String>, ConversationError> {
    let (needed, what) = match scope {
        Scope::Thread { .. } | Scope::Pr { .. } => return Ok(None),
        Scope::Repo => (
            PermissionLevel::Write,
            "repository learnings need write permission",
        ),
        Scope::Org => return may_teach_org(turn).await,
    };
    let needed: Permission = crate::review::resolution::permission(needed);
    Ok(turn
        .permissions
        .at_least(turn.github, turn.snap, &turn.trigger.author.login, needed)
        .await?
        .err()
        .map(|has| {
            format!("{what}; {has}. A learning for this PR only (`… for this PR`) needs none.")
        }))
}

/// Why the author may not teach the whole organisation, if they may not: only the owning
/// account itself or an active admin of the owning organisation may.
async fn may_teach_org(turn: &Turn<'_>) -> Result<Option<String>, ConversationError> {
    let owner = &turn.snap.scope.owner;
    let login = &turn.trigger.author.login;
    if login.eq_ignore_ascii_case(owner) {
        return Ok(None);
    }
    let refused = |why: String| {
        Ok(Some(format!(
            "organisation-wide learnings apply to every repository of {owner}, so they need an \
             admin of {owner}; {why}. A learning for this repository (`… for this repo`) or \
             this PR (`… for this PR`) needs less."
        )))
    };
    match turn
        .github
        .get_org_membership(&turn.snap.scope, login)
        .await
    {
        Ok(Some(membership)) if membership.is_active_admin() => Ok(None),
        Ok(Some(membership)) => refused(format!(
            "@{login} is a {} there ({})",
            membership.role, membership.state
        )),
        Ok(None) => refused(format!("@{login} is not an admin of {owner}")),
        Err(GitHubError::Forbidden(_)) => refused(
            "Parley cannot see who that is: the App needs the organisation permission \
             \"Members: read\""
                .to_string(),
        ),
        Err(err) => Err(err.into()),
    }
}

/// The learning's text with its hints, in one line. Its mentions are quieted
/// ([`crate::sanitize::quiet_mentions`]): the teacher's comment notified whom it named
/// once, and every listing of the learning would notify them again.
pub(super) fn summary_of(learning: &Learning) -> String {
    let mut out = crate::sanitize::quiet_mentions(&learning.text);
    let mut hints = Vec::new();
    if let Some(category) = &learning.hints.category {
        hints.push(format!("category {category}"));
    }
    if !learning.hints.paths.is_empty() {
        hints.push(format!("paths {}", learning.hints.paths.join(", ")));
    }
    if let Some(direction) = learning.hints.direction {
        hints.push(match direction {
            Direction::Stricter => "stricter".to_string(),
            Direction::Lenient => "more lenient".to_string(),
        });
    }
    if !hints.is_empty() {
        out.push_str(&format!(" ({})", hints.join("; ")));
    }
    out
}
