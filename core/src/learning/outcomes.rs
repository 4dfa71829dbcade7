//! Recording how each finding ended, and learning from it.
//!
//! | verdict | signals |
//! |---|---|
//! | accepted | its thread resolved by a person (a resolution that counts), the code at its lines changed in a later push, a 👍 on it |
//! | rejected | Parley conceded a dispute about it, a `won't fix`, a 👎, resolved without a code change after the PR's author disagreed in the thread |
//! | ignored | the PR merged or closed with it still open and nobody replied |
//!
//! **Who counts.** Statistics tune the confidence threshold and rejections feed the
//! false-positive patterns that drop findings in every later review, so a person's word
//! (a reaction, a concession won, a `won't fix`, a dismissal) counts only from someone
//! who could have decided about the finding: at least `gate.resolveBy` on the
//! repository ([`Deciders`]). Otherwise the author of a PR, or any passer-by on a public
//! repository, could teach Parley to stop reporting what they do not want to hear.
//! Bots never count; nor does a thread its PR's author argued in and then resolved
//! unchanged, unless the one resolving has `gate.resolveBy` (see the bookkeeping job).
//! What people do to the code (a push that changes the finding's lines) and a
//! resolution that lifts the finding count as before.
//!
//! The first decisive signal sets the outcome; a later one of another verdict replaces it
//! (the statistics take the old one back). Reactions are read when the PR closes (a
//! bounded listing per finding), since GitHub sends no webhook for them. Every rejection
//! also feeds the repository's false-positive patterns ([`super::patterns`]).
//!
//! **Exactly once.** An outcome touches three records: the finding, the statistics and
//! (for a rejection) a pattern, and no store can change them in one step. So each of the
//! counting records remembers, in the same versioned write that changes its counts, which
//! findings' outcomes it has counted (bounded: [`super::stats::COUNTED_KEEP`] and
//! [`PATTERN_COUNTED_KEEP`]); counting the same outcome again then changes nothing. The
//! finding is written first, its outcome marked `counted: false`, and marked `counted`
//! once both records have it: a crash anywhere in between leaves a finding that says
//! there is counting to finish, and the retry (or the next look at the finding, as the
//! PR closes) finishes it without counting anything twice. The alternatives were weaker:
//! a claim key per outcome cannot be taken in the same write as the counts (a crash
//! between the two loses or doubles the count), and counting first, then writing the
//! finding, still needs the counts to know the finding was counted.
//!
//! The finding itself is written conditionally
//! ([`Findings::put_finding_if`](crate::ports::Findings::put_finding_if)): a signal that
//! arrives while another job changed the finding reads it again and decides on what is
//! there, rather than overwriting it.

use super::memory::{self, STATS_KEY};
use super::patterns::Pattern;
use super::stats::RepoStats;
use crate::config::GateConfig;
use crate::ports::github::{
    GitHub, GitHubError, PageLimit, Permission, Reaction, ReactionContent, RepoScope,
};
use crate::ports::{
    CorpusStore, Finding, FindingOutcome, FindingState, Store, StoreError, Verdict,
};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use time::OffsetDateTime;

/// Reactions read per finding when its PR closes.
const REACTIONS: PageLimit = PageLimit::items(100);
/// Findings whose reactions are read when a PR closes: a bounded cost per PR.
const MAX_FINDINGS_READ_AT_CLOSE: usize = 50;
/// Distinct people whose permission one job looks up: a PR with 50 findings and a crowd
/// of reactors costs at most this many calls (each person once). Beyond it, people not
/// yet known do not count (fail closed: an unknown permission is no permission).
pub const MAX_PERMISSION_LOOKUPS: usize = 30;
/// Rejections a pattern remembers having counted (see the module's "Exactly once").
pub const PATTERN_COUNTED_KEEP: usize = 200;
/// Attempts of a conditional write of a finding before giving up (each loss means another
/// job changed the finding).
const ATTEMPTS: usize = 5;

/// A signal about one finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    pub verdict: Verdict,
    pub signal: &'static str,
    /// Who gave it (for patterns: rejections by different people weigh more).
    pub by: Vec<String>,
}

impl Signal {
    pub fn new(verdict: Verdict, signal: &'static str, by: Option<&str>) -> Self {
        Signal {
            verdict,
            signal,
            by: by.map(|b| vec![b.to_string()]).unwrap_or_default(),
        }
    }
}

/// Who may move what Parley learns in one job: people with at least `gate.resolveBy` on
/// the repository, the same people who may lift a blocking finding without a code
/// change. Looked up once per person per job (GitHub's collaborator permission), at most
/// [`MAX_PERMISSION_LOOKUPS`] people, so the cost of a PR closing does not grow with its
/// crowd. A job is short; a person's permission changing during one does not matter.
pub struct Deciders<'a> {
    github: &'a dyn GitHub,
    scope: &'a RepoScope,
    needs: Permission,
    known: HashMap<String, bool>,
    lookups: usize,
}

impl<'a> Deciders<'a> {
    pub fn new(github: &'a dyn GitHub, scope: &'a RepoScope, gate: &GateConfig) -> Self {
        Deciders {
            github,
            scope,
            needs: crate::review::resolution::permission(gate.resolve_by),
            known: HashMap::new(),
            lookups: 0,
        }
    }

    /// Whether `login` could have decided about a finding. Bots never. A transient
    /// GitHub failure is the caller's to handle (nothing is known); any other failure
    /// reads as "no" (fail closed).
    pub async fn decides(&mut self, login: &str) -> Result<bool, GitHubError> {
        if login.is_empty() || login.to_ascii_lowercase().ends_with("[bot]") {
            return Ok(false);
        }
        let key = login.to_ascii_lowercase();
        if let Some(known) = self.known.get(&key) {
            return Ok(*known);
        }
        if self.lookups >= MAX_PERMISSION_LOOKUPS {
            tracing::info!(repo = %self.scope.full_name(), login, "permission lookups of this job used up; not counting this person");
            self.known.insert(key, false);
            return Ok(false);
        }
        self.lookups += 1;
        let level = match self
            .github
            .get_collaborator_permission(self.scope, login)
            .await
        {
            Ok(found) => found.level(),
            Err(err) if err.is_absent() => Permission::None,
            Err(err) if err.is_transient() => return Err(err),
            Err(err) => {
                tracing::warn!(repo = %self.scope.full_name(), login, error = %err, "permission lookup failed; not counting this person");
                Permission::None
            }
        };
        let decides = level >= self.needs;
        self.known.insert(key, decides);
        Ok(decides)
    }

    /// How many permission lookups this job made.
    pub fn lookups(&self) -> usize {
        self.lookups
    }
}

/// Record `signal` on `finding` (stored), its statistics and patterns, and on its
/// retrieval document (when it has one), so later reviews see how it ended. Returns
/// whether anything changed: the same verdict again changes nothing, except that counting
/// a crash left unfinished is finished. The caller has checked that the signal counts
/// (see [`Deciders`]).
pub async fn record(
    store: &dyn Store,
    corpus: &dyn CorpusStore,
    finding: &mut Finding,
    signal: &Signal,
) -> Result<bool, StoreError> {
    let mut lost = 0;
    loop {
        if let Some(current) = &finding.outcome
            && current.verdict == signal.verdict
        {
            if current.counted {
                return Ok(false);
            }
            // Said before, but the counting was cut short: finish it.
            break;
        }
        let read = finding.clone();
        finding.outcome = Some(outcome_of(
            signal,
            read.outcome.as_ref(),
            OffsetDateTime::now_utc(),
        ));
        if store.put_finding_if(finding, Some(&read)).await? {
            break;
        }
        // Another job changed the finding since it was read: decide on what is there.
        lost += 1;
        match read_again(store, &read).await? {
            Some(fresh) if lost < ATTEMPTS => *finding = fresh,
            Some(_) => {
                return Err(StoreError::Unavailable(format!(
                    "finding {} kept changing while its outcome was recorded",
                    read.id
                )));
            }
            None => {
                tracing::warn!(repo = %read.repo, pr = read.pr, finding = %read.id, "finding gone; outcome not recorded");
                return Ok(false);
            }
        }
    }
    finish(store, corpus, finding).await?;
    Ok(true)
}

/// The outcome `signal` gives, replacing `previous`.
fn outcome_of(
    signal: &Signal,
    previous: Option<&FindingOutcome>,
    at: OffsetDateTime,
) -> FindingOutcome {
    // What the statistics hold for the finding now: the previous outcome once counted,
    // else what that one replaced (its counting never happened or never finished; the
    // statistics' own memory says which, and wins).
    let replaces = previous.and_then(|p| {
        if p.counted {
            Some(p.verdict)
        } else {
            p.replaces
        }
    });
    FindingOutcome {
        verdict: signal.verdict,
        signal: signal.signal.to_string(),
        by: signal.by.first().cloned(),
        also_by: signal.by.iter().skip(1).cloned().collect(),
        at,
        replaces,
        counted: false,
    }
}

/// Count the finding's stored outcome in the statistics and (a rejection) its pattern,
/// each at most once, then mark it counted.
async fn finish(
    store: &dyn Store,
    corpus: &dyn CorpusStore,
    finding: &mut Finding,
) -> Result<(), StoreError> {
    let Some(outcome) = finding.outcome.clone() else {
        return Ok(());
    };
    let key = counted_key(finding);
    let (category, severity, confidence, doubted) = (
        finding.category.clone(),
        finding.severity.name(),
        finding.confidence,
        finding.doubt.is_some(),
    );
    memory::update::<RepoStats>(store, &finding.repo, STATS_KEY, |current| {
        let mut stats = current.unwrap_or_default();
        stats
            .count_outcome(
                &key,
                &category,
                severity,
                confidence,
                doubted,
                outcome.verdict,
                outcome.replaces,
            )
            .then_some(stats)
    })
    .await?;
    if outcome.verdict == Verdict::Rejected {
        let pattern_key = Pattern::key_for(&finding.category, &finding.path, &finding.title);
        let people: Vec<String> = outcome
            .by
            .iter()
            .chain(outcome.also_by.iter())
            .cloned()
            .collect();
        let rejected = finding.clone();
        memory::update::<CountedPattern>(store, &finding.repo, &pattern_key, |current| {
            let mut current = current.unwrap_or_else(|| CountedPattern {
                pattern: Pattern::new(&rejected, outcome.at),
                counted: Vec::new(),
            });
            if current.counted.contains(&key) {
                return None;
            }
            if people.is_empty() {
                current.pattern.reject(&rejected, None, outcome.at);
            }
            for person in &people {
                current.pattern.reject(&rejected, Some(person), outcome.at);
            }
            current.counted.push(key.clone());
            if current.counted.len() > PATTERN_COUNTED_KEEP {
                let excess = current.counted.len() - PATTERN_COUNTED_KEEP;
                current.counted.drain(..excess);
            }
            Some(current)
        })
        .await?;
    }
    mark_counted(store, finding, &outcome).await?;
    tracing::info!(repo = %finding.repo, pr = finding.pr, finding = %finding.id, verdict = ?outcome.verdict, signal = %outcome.signal, "finding outcome recorded");
    crate::retrieval::remember::outcome(corpus, finding).await;
    Ok(())
}

/// Mark the finding's outcome counted, unless another job replaced it meanwhile (that
/// outcome's own counting takes this one back).
async fn mark_counted(
    store: &dyn Store,
    finding: &mut Finding,
    outcome: &FindingOutcome,
) -> Result<(), StoreError> {
    for _ in 0..ATTEMPTS {
        let read = finding.clone();
        let still_ours = read
            .outcome
            .as_ref()
            .is_some_and(|o| !o.counted && o.verdict == outcome.verdict && o.at == outcome.at);
        if !still_ours {
            return Ok(());
        }
        if let Some(o) = finding.outcome.as_mut() {
            o.counted = true;
        }
        if store.put_finding_if(finding, Some(&read)).await? {
            return Ok(());
        }
        match read_again(store, &read).await? {
            Some(fresh) => *finding = fresh,
            None => return Ok(()),
        }
    }
    // Left unmarked: the next look at the finding finishes nothing twice (the counts
    // remember), it only costs a read.
    Ok(())
}

/// The stored version of `finding`, if it is still there.
async fn read_again(store: &dyn Store, finding: &Finding) -> Result<Option<Finding>, StoreError> {
    Ok(store
        .findings_for_pr(&finding.repo, finding.pr)
        .await?
        .into_iter()
        .find(|f| f.id == finding.id))
}

/// How the counting records name a finding: ids are unique within a repository's PR.
fn counted_key(finding: &Finding) -> String {
    format!("{}/{}", finding.pr, finding.id)
}

/// A pattern as stored, with the rejections it has counted. The pattern's own type
/// belongs to the patterns module; the memory of what was counted is this module's, and
/// unknown fields are ignored where patterns are read for reviews.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CountedPattern {
    #[serde(flatten)]
    pattern: Pattern,
    /// `<pr>/<finding id>` of the rejections counted, oldest first.
    #[serde(
        default,
        rename = "counted_findings",
        skip_serializing_if = "Vec::is_empty"
    )]
    counted: Vec<String>,
}

/// Record `signal`, given by `person`, on the stored finding with `id`, if that person
/// could have decided about it (see [`Deciders`]). Best effort for callers whose main job
/// is done: failures are logged. Returns whether it counted.
#[allow(clippy::too_many_arguments)] // one finding, one person, one signal, and where
pub async fn record_from(
    github: &dyn GitHub,
    store: &dyn Store,
    corpus: &dyn CorpusStore,
    scope: &RepoScope,
    gate: &GateConfig,
    pr: u64,
    id: &str,
    person: &str,
    signal: Signal,
) -> bool {
    let repo = scope.tenant().repo;
    match Deciders::new(github, scope, gate).decides(person).await {
        Ok(true) => {
            record_by_id(store, corpus, &repo, pr, id, signal).await;
            true
        }
        Ok(false) => {
            tracing::info!(%repo, pr, finding = id, person, signal = signal.signal, "not an outcome: the person does not have gate.resolveBy");
            false
        }
        Err(err) => {
            tracing::warn!(%repo, pr, finding = id, person, error = %err, "could not read the person's permission; outcome not recorded");
            false
        }
    }
}

/// Record `signal` on the stored finding with `id`, if there is one. Best effort for
/// callers whose main job is done: failures are logged.
pub async fn record_by_id(
    store: &dyn Store,
    corpus: &dyn CorpusStore,
    repo: &str,
    pr: u64,
    id: &str,
    signal: Signal,
) {
    let result = async {
        let mut findings = store.findings_for_pr(repo, pr).await?;
        match findings.iter_mut().find(|f| f.id == id) {
            Some(finding) => record(store, corpus, finding, &signal).await,
            None => Ok(false),
        }
    }
    .await;
    if let Err(err) = result {
        tracing::warn!(repo, pr, finding = id, error = %err, "could not record the finding's outcome");
    }
}

/// When a PR closes: 👍 / 👎 on each finding still without an outcome decide it (the
/// majority of the people who could have decided, see [`Deciders`]; a tie decides
/// nothing), and an open finding no such reaction decided and nobody replied to is
/// ignored. An outcome whose counting a crash cut short is finished. Bounded: at most
/// [`MAX_FINDINGS_READ_AT_CLOSE`] findings' reactions are read, and at most
/// [`MAX_PERMISSION_LOOKUPS`] people's permissions. A finding whose reactors' permissions
/// cannot be read now is left undecided.
#[allow(clippy::too_many_arguments)] // one call site; each part is a different thing
pub async fn at_close(
    github: &dyn GitHub,
    store: &dyn Store,
    corpus: &dyn CorpusStore,
    scope: &RepoScope,
    gate: &GateConfig,
    repo: &str,
    pr: u64,
    replied_to: &(dyn Fn(u64) -> bool + Sync),
) -> Result<usize, StoreError> {
    let mut findings = store.findings_for_pr(repo, pr).await?;
    let mut deciders = Deciders::new(github, scope, gate);
    let mut recorded = 0;
    let mut read = 0;
    for finding in findings.iter_mut() {
        match &finding.outcome {
            Some(outcome) if !outcome.counted => {
                finish(store, corpus, finding).await?;
                recorded += 1;
                continue;
            }
            Some(_) => continue,
            None => {}
        }
        let mut signal = None;
        if let Some(comment_id) = finding.comment_id
            && read < MAX_FINDINGS_READ_AT_CLOSE
        {
            read += 1;
            match github
                .list_review_comment_reactions(scope, comment_id, REACTIONS)
                .await
            {
                Ok(listing) => match deciding(&mut deciders, &listing.items).await {
                    Ok(allowed) => {
                        signal = from_reactions(&listing.items, &|login| {
                            allowed.contains(&login.to_ascii_lowercase())
                        });
                    }
                    Err(err) => {
                        tracing::warn!(repo, pr, finding = %finding.id, error = %err, "could not read the reactors' permissions; finding left undecided");
                        continue;
                    }
                },
                Err(err) => {
                    tracing::warn!(repo, pr, finding = %finding.id, error = %err, "could not read the finding's reactions");
                }
            }
        }
        if signal.is_none()
            && finding.state == FindingState::Open
            && !finding.comment_id.is_some_and(replied_to)
        {
            signal = Some(Signal::new(Verdict::Ignored, "closed_unanswered", None));
        }
        if let Some(signal) = signal
            && record(store, corpus, finding, &signal).await?
        {
            recorded += 1;
        }
    }
    tracing::info!(
        repo,
        pr,
        permission_lookups = deciders.lookups(),
        "reactions weighed"
    );
    Ok(recorded)
}

/// The people (lowercased logins) among those who gave 👍 or 👎 who could have decided.
async fn deciding(
    deciders: &mut Deciders<'_>,
    reactions: &[Reaction],
) -> Result<HashSet<String>, GitHubError> {
    let mut allowed = HashSet::new();
    for reaction in reactions {
        if !matches!(
            reaction.content,
            ReactionContent::ThumbsUp | ReactionContent::ThumbsDown
        ) {
            continue;
        }
        let Some(user) = reaction.user.as_ref().filter(|u| !u.to_actor().is_bot()) else {
            continue;
        };
        if deciders.decides(&user.login).await? {
            allowed.insert(user.login.to_ascii_lowercase());
        }
    }
    Ok(allowed)
}

/// The verdict 👍 / 👎 give, by majority of the people `decides` accepts (never bots),
/// with the people who gave it.
fn from_reactions(reactions: &[Reaction], decides: &dyn Fn(&str) -> bool) -> Option<Signal> {
    let people = |content: ReactionContent| -> Vec<String> {
        reactions
            .iter()
            .filter(|r| r.content == content)
            .filter_map(|r| r.user.as_ref())
            .filter(|u| !u.to_actor().is_bot() && decides(&u.login))
            .map(|u| u.login.clone())
            .collect()
    };
    let (up, down) = (
        people(ReactionContent::ThumbsUp),
        people(ReactionContent::ThumbsDown),
    );
    match up.len().cmp(&down.len()) {
        std::cmp::Ordering::Greater => Some(Signal {
            verdict: Verdict::Accepted,
            signal: "thumbs_up",
            by: up,
        }),
        std::cmp::Ordering::Less => Some(Signal {
            verdict: Verdict::Rejected,
            signal: "thumbs_down",
            by: down,
        }),
        std::cmp::Ordering::Equal => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::github::User;

    fn reaction(content: ReactionContent, login: &str) -> Reaction {
        Reaction {
            id: 1,
            content,
            user: Some(User {
                login: login.into(),
                id: 1,
                kind: if login.ends_with("[bot]") {
                    "Bot"
                } else {
                    "User"
                }
                .into(),
            }),
        }
    }

    #[test]
    fn reactions_decide_by_majority_of_people() {
        use ReactionContent::*;
        let everyone = |_: &str| true;
        let down = from_reactions(
            &[
                reaction(ThumbsDown, "amy"),
                reaction(ThumbsDown, "bob"),
                reaction(ThumbsUp, "cat"),
            ],
            &everyone,
        )
        .expect("decided");
        assert_eq!(down.verdict, Verdict::Rejected);
        assert_eq!(down.by, vec!["amy", "bob"]);
        assert_eq!(
            from_reactions(
                &[reaction(ThumbsUp, "a"), reaction(ThumbsDown, "b")],
                &everyone
            ),
            None
        );
        assert_eq!(from_reactions(&[reaction(Eyes, "a")], &everyone), None);
        assert_eq!(
            from_reactions(&[reaction(ThumbsDown, "parley[bot]")], &everyone),
            None,
            "bots do not vote"
        );
    }

    #[test]
    fn only_people_who_could_decide_are_counted() {
        use ReactionContent::*;
        let maintainers = |login: &str| login == "maya";
        // Three strangers' 👎 against one maintainer's 👍: the maintainer decides.
        let up = from_reactions(
            &[
                reaction(ThumbsDown, "x1"),
                reaction(ThumbsDown, "x2"),
                reaction(ThumbsDown, "x3"),
                reaction(ThumbsUp, "maya"),
            ],
            &maintainers,
        )
        .expect("decided");
        assert_eq!(up.verdict, Verdict::Accepted);
        assert_eq!(up.by, vec!["maya"]);
        assert_eq!(
            from_reactions(&[reaction(ThumbsDown, "x1")], &maintainers),
            None,
            "strangers alone decide nothing"
        );
    }

    #[test]
    fn a_replacing_outcome_remembers_what_the_counts_hold() {
        let at = OffsetDateTime::UNIX_EPOCH;
        let signal = Signal::new(Verdict::Rejected, "wont_fix", Some("maya"));
        let counted = FindingOutcome {
            counted: true,
            ..outcome_of(&Signal::new(Verdict::Accepted, "thumbs_up", None), None, at)
        };
        assert_eq!(
            outcome_of(&signal, Some(&counted), at).replaces,
            Some(Verdict::Accepted)
        );
        // An outcome whose counting never finished: the counts still hold what it replaced.
        let unfinished = FindingOutcome {
            replaces: Some(Verdict::Ignored),
            ..outcome_of(&Signal::new(Verdict::Accepted, "thumbs_up", None), None, at)
        };
        assert_eq!(
            outcome_of(&signal, Some(&unfinished), at).replaces,
            Some(Verdict::Ignored)
        );
        let fresh = outcome_of(&signal, None, at);
        assert!(!fresh.counted);
        assert_eq!(fresh.by.as_deref(), Some("maya"));
    }
}
