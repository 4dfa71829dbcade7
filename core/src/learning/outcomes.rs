//! Recording how each finding ended, and learning from it.
//!
//! | verdict | signals |
//! |---|---|
//! | accepted | its thread resolved by a person (a resolution that counts), the code at its lines changed in a later push, a 👍 on it |
//! | rejected | Parley conceded a dispute about it, a `won't fix`, a 👎, resolved without a code change after the PR's author disagreed in the thread |
//! | ignored | the PR merged or closed with it still open and nobody replied |
//!
//! The first decisive signal sets the outcome; a later one of another verdict replaces it
//! (the statistics take the old one back). Reactions are read when the PR closes (a
//! bounded listing per finding), since GitHub sends no webhook for them. Every rejection
//! also feeds the repository's false-positive patterns ([`super::patterns`]).

use super::memory;
use super::patterns::Pattern;
use crate::ports::github::{GitHub, PageLimit, ReactionContent, RepoScope};
use crate::ports::{
    CorpusStore, Finding, FindingOutcome, FindingState, Store, StoreError, Verdict,
};
use crate::review::summary::severity_name;
use time::OffsetDateTime;

/// Reactions read per finding when its PR closes.
const REACTIONS: PageLimit = PageLimit::items(100);
/// Findings whose reactions are read when a PR closes: a bounded cost per PR.
const MAX_FINDINGS_READ_AT_CLOSE: usize = 50;

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

/// Record `signal` on `finding` (stored), its statistics and patterns, and on its
/// retrieval document (when it has one), so later reviews see how it ended. Returns
/// whether anything changed (the same verdict again changes nothing).
pub async fn record(
    store: &dyn Store,
    corpus: &dyn CorpusStore,
    finding: &mut Finding,
    signal: &Signal,
) -> Result<bool, StoreError> {
    let previous = finding.outcome.as_ref().map(|o| o.verdict);
    if previous == Some(signal.verdict) {
        return Ok(false);
    }
    let now = OffsetDateTime::now_utc();
    finding.outcome = Some(FindingOutcome {
        verdict: signal.verdict,
        signal: signal.signal.to_string(),
        by: signal.by.first().cloned(),
        also_by: signal.by.iter().skip(1).cloned().collect(),
        at: now,
        replaces: previous,
        counted: true,
    });
    store.put_finding(finding).await?;
    let (category, severity, confidence) = (
        finding.category.clone(),
        severity_name(finding.severity),
        finding.confidence,
    );
    let verdict = signal.verdict;
    memory::update_stats(store, &finding.repo, |stats| {
        if let Some(old) = previous {
            stats.count(&category, severity, confidence, old, -1);
        }
        stats.count(&category, severity, confidence, verdict, 1);
    })
    .await?;
    if verdict == Verdict::Rejected {
        let key = Pattern::key_for(&finding.category, &finding.path, &finding.title);
        let rejected = finding.clone();
        let people = signal.by.clone();
        memory::update_pattern(store, &finding.repo, &key, |current| {
            let mut pattern = current.unwrap_or_else(|| Pattern::new(&rejected, now));
            if people.is_empty() {
                pattern.reject(&rejected, None, now);
            }
            for person in &people {
                pattern.reject(&rejected, Some(person), now);
            }
            pattern
        })
        .await?;
    }
    tracing::info!(repo = %finding.repo, pr = finding.pr, finding = %finding.id, ?verdict, signal = signal.signal, "finding outcome recorded");
    crate::retrieval::remember::outcome(corpus, finding).await;
    Ok(true)
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
/// majority; a tie decides nothing), and an open finding nobody reacted to or replied to is
/// ignored. Bounded: at most [`MAX_FINDINGS_READ_AT_CLOSE`] findings' reactions are read.
pub async fn at_close(
    github: &dyn GitHub,
    store: &dyn Store,
    corpus: &dyn CorpusStore,
    scope: &RepoScope,
    repo: &str,
    pr: u64,
    replied_to: &(dyn Fn(u64) -> bool + Sync),
) -> Result<usize, StoreError> {
    let mut findings = store.findings_for_pr(repo, pr).await?;
    let mut recorded = 0;
    let mut read = 0;
    for finding in findings.iter_mut().filter(|f| f.outcome.is_none()) {
        let mut signal = None;
        if let Some(comment_id) = finding.comment_id
            && read < MAX_FINDINGS_READ_AT_CLOSE
        {
            read += 1;
            match github
                .list_review_comment_reactions(scope, comment_id, REACTIONS)
                .await
            {
                Ok(listing) => signal = from_reactions(&listing.items),
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
    Ok(recorded)
}

/// The verdict 👍 / 👎 give, by majority, with the people who gave it.
fn from_reactions(reactions: &[crate::ports::github::Reaction]) -> Option<Signal> {
    let people = |content: ReactionContent| -> Vec<String> {
        reactions
            .iter()
            .filter(|r| r.content == content)
            .filter(|r| r.user.as_ref().is_none_or(|u| !u.to_actor().is_bot()))
            .filter_map(|r| r.user.as_ref().map(|u| u.login.clone()))
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
    use crate::ports::github::{Reaction, User};

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
        let down = from_reactions(&[
            reaction(ThumbsDown, "amy"),
            reaction(ThumbsDown, "bob"),
            reaction(ThumbsUp, "cat"),
        ])
        .expect("decided");
        assert_eq!(down.verdict, Verdict::Rejected);
        assert_eq!(down.by, vec!["amy", "bob"]);
        assert_eq!(
            from_reactions(&[reaction(ThumbsUp, "a"), reaction(ThumbsDown, "b")]),
            None
        );
        assert_eq!(from_reactions(&[reaction(Eyes, "a")]), None);
        assert_eq!(
            from_reactions(&[reaction(ThumbsDown, "parley[bot]")]),
            None,
            "bots do not vote"
        );
    }
}
