//! What a new review says about the PR's earlier findings.
//!
//! Two holes in the merge gate close here:
//!
//! - A finding listed only in a review summary (off the diff, over the inline cap, or
//!   after GitHub refused the inline comments) has no thread to resolve, so nothing could
//!   ever close it and it blocked the gate forever. A *full, complete* review that looked
//!   at its file and no longer finds it closes it. An incremental or partial review
//!   proves nothing about code it did not see, so it closes nothing. Nor does the
//!   model's silence alone close a blocking one while its code is as it was
//!   ([`hold_unchanged_blocking`]): a model may miss a problem on one run and find it on
//!   the next, and the code it reads is the PR author's, which may argue with it.
//! - A finding someone resolved without changing the code (a resolution that counted:
//!   someone with `gate.resolveBy`) that a later review finds again, with the same
//!   fingerprint and so the same code, is open again: the problem is still there.
//!   Concessions (`WontFix`) stay: Parley agreed, and saying it again would be noise.
//!
//! [`after_review`] is pure; [`write_back`] stores what changed once the review is
//! posted, without undoing what people decided meanwhile.

use crate::config::GateConfig;
use crate::ports::github::{GitHub, GitHubError, RepoScope};
use crate::ports::{Finding, FindingState, Store, StoreError};
use crate::review::merge::Candidate;
use crate::review::resolution;
use std::collections::HashSet;
use time::OffsetDateTime;

/// Who the store records as having changed a finding's state here.
pub const CLOSED_BY: &str = "parley (not found again by a full review)";
pub const REOPENED_BY: &str = "parley (found again by a later review)";

/// What a review does to earlier findings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    /// Open summary-only findings the full review no longer finds: now resolved.
    pub closed: Vec<Finding>,
    /// Resolved blocking findings found again: open again.
    pub reopened: Vec<Finding>,
    /// Blocking summary-only findings the full review did not find again, whose code has
    /// not changed since: they stay open (see [`hold_unchanged_blocking`]).
    pub held: Vec<Finding>,
    /// Open findings the code changed at, which the review judged fixed: now resolved
    /// (see [`super::fixed`]).
    pub fixed: Vec<Finding>,
}

impl Changes {
    pub fn all(&self) -> impl Iterator<Item = &Finding> {
        self.closed
            .iter()
            .chain(self.reopened.iter())
            .chain(self.fixed.iter())
    }

    /// Whether the review changes any earlier finding's state.
    pub fn any(&self) -> bool {
        self.all().next().is_some()
    }

    /// The ids of what changes, for the review's marker ([`ChangedIds`]).
    pub fn ids(&self) -> ChangedIds {
        let ids = |findings: &[Finding]| findings.iter().map(|f| f.id.clone()).collect();
        ChangedIds {
            closed: ids(&self.closed),
            reopened: ids(&self.reopened),
            fixed: ids(&self.fixed),
        }
    }

    /// Add what the review judged fixed, except findings it closes already and those its
    /// passes reported again (`found`, by fingerprint): a fix the same review still finds
    /// is no fix.
    pub fn with_fixed(mut self, fixed: Vec<Finding>, found: &HashSet<&str>) -> Self {
        let closed: HashSet<&str> = self.closed.iter().map(|f| f.id.as_str()).collect();
        let fixed: Vec<Finding> = fixed
            .into_iter()
            .filter(|f| !closed.contains(f.id.as_str()) && !found.contains(f.fingerprint.as_str()))
            .collect();
        self.fixed = fixed;
        self
    }
}

/// Which earlier findings a posted review changes, by id, carried in its summary's
/// marker: a worker that dies after posting and before storing the changes leaves the
/// queue's retry only what GitHub holds, and without this the retry would conclude the
/// gate as if the review had closed and fixed nothing, while its summary says otherwise.
/// The marker is trusted only on Parley's own review, so no one else can write it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ChangedIds {
    pub closed: Vec<String>,
    pub reopened: Vec<String>,
    pub fixed: Vec<String>,
}

impl ChangedIds {
    pub fn is_empty(&self) -> bool {
        self.closed.is_empty() && self.reopened.is_empty() && self.fixed.is_empty()
    }

    /// The review's changes again, over the findings as they are stored now: each only
    /// while its finding is still in the state the review judged (open, or resolved for
    /// one it reopens) and nobody changed it after the review was `posted` (a thread
    /// resolved again since), so what people decided since, and what was stored before
    /// the worker died, stands. [`write_back`] then stores them as after a review.
    pub fn replay(
        &self,
        stored: &[Finding],
        posted: Option<OffsetDateTime>,
        now: OffsetDateTime,
    ) -> Changes {
        let untouched_since = |f: &Finding| match (f.state_changed_at, posted) {
            (Some(changed), Some(posted)) => changed <= posted,
            _ => true,
        };
        let again = |ids: &[String], from: FindingState, to: FindingState, by: &str| {
            stored
                .iter()
                .filter(|f| f.state == from && ids.contains(&f.id) && untouched_since(f))
                .map(|f| with_state(f, to, by, now))
                .collect()
        };
        use FindingState::{Open, Resolved};
        Changes {
            closed: again(&self.closed, Open, Resolved, CLOSED_BY),
            reopened: again(&self.reopened, Resolved, Open, REOPENED_BY),
            held: Vec::new(),
            fixed: again(&self.fixed, Open, Resolved, super::fixed::FIXED_BY),
        }
    }

    /// The fixed findings whose fix is stored, by this replay or before the worker died:
    /// their outcome and threads are settled again ([`super::fixed::settle`] does
    /// nothing twice).
    pub fn fixed_as_stored(&self, stored: &[Finding]) -> Vec<Finding> {
        stored
            .iter()
            .filter(|f| {
                f.state == FindingState::Resolved
                    && f.state_changed_by.as_deref() == Some(super::fixed::FIXED_BY)
                    && self.fixed.contains(&f.id)
            })
            .cloned()
            .collect()
    }
}

/// What the review saw, for [`after_review`].
pub struct Seen<'a> {
    /// Fingerprints of every finding the passes reported, posted or not (below the
    /// threshold, already on the PR): "found again" means any of these.
    pub found: HashSet<&'a str>,
    /// Findings the merge dropped as already posted on the PR.
    pub repeated: &'a [Candidate],
    /// A full (not incremental) review with every pass and every file in: only such a
    /// review's silence about a finding means something.
    pub complete_full_review: bool,
    /// Paths this review sent to the passes.
    pub reviewed_paths: HashSet<&'a str>,
    /// Paths the PR changes at all: a finding on a path the PR no longer touches is gone.
    pub pr_paths: HashSet<&'a str>,
}

pub fn after_review(
    earlier: &[Finding],
    seen: &Seen<'_>,
    gate: &GateConfig,
    now: OffsetDateTime,
) -> Changes {
    let repeated: HashSet<&str> = seen
        .repeated
        .iter()
        .map(|c| c.fingerprint.as_str())
        .collect();
    let mut changes = Changes::default();
    for finding in earlier {
        let fingerprint = finding.fingerprint.as_str();
        match finding.state {
            FindingState::Resolved
                if gate.block_on.contains(&finding.severity) && repeated.contains(fingerprint) =>
            {
                changes
                    .reopened
                    .push(with_state(finding, FindingState::Open, REOPENED_BY, now));
            }
            FindingState::Open
                if seen.complete_full_review
                    && finding.comment_id.is_none()
                    && !seen.found.contains(fingerprint)
                    && (seen.reviewed_paths.contains(finding.path.as_str())
                        || !seen.pr_paths.contains(finding.path.as_str())) =>
            {
                changes
                    .closed
                    .push(with_state(finding, FindingState::Resolved, CLOSED_BY, now));
            }
            _ => {}
        }
    }
    changes
}

/// Keep open the blocking findings in `changes.closed` whose file the PR still changes
/// (renamed or not) and whose lines have not changed since the finding was posted: for a
/// finding the gate blocks on, a review not finding it again is the model's word, which
/// the resolution rules do not take from the PR's author either ([`resolution`]). Someone
/// entitled lifts such a finding with `@parley dismiss f_…`; a change to its code lets
/// the next full review close it. A transient GitHub error is the caller's (the job is
/// retried). One compare per commit the findings were found on, however many it holds.
pub async fn hold_unchanged_blocking(
    github: &dyn GitHub,
    scope: &RepoScope,
    gate: &GateConfig,
    head_sha: &str,
    pr_paths: &HashSet<&str>,
    compares: &mut resolution::Compares,
    mut changes: Changes,
) -> Result<Changes, GitHubError> {
    let mut closed = Vec::with_capacity(changes.closed.len());
    for finding in std::mem::take(&mut changes.closed) {
        let unchanged = gate.block_on.contains(&finding.severity)
            && unchanged_in_pr(github, scope, head_sha, pr_paths, compares, &finding).await?;
        if unchanged {
            tracing::info!(repo = %scope.full_name(), finding = %finding.id, "not found again, but its code is unchanged; it stays open");
            changes.held.push(finding);
        } else {
            closed.push(finding);
        }
    }
    changes.closed = closed;
    Ok(changes)
}

/// Whether the PR still changes `finding`'s file (under its path, or the name a rename
/// since gave it) and the code at its lines is as it was when found
/// ([`resolution::changed_in`]), comparing each commit with the head once: `compares`
/// keeps what GitHub answered.
async fn unchanged_in_pr(
    github: &dyn GitHub,
    scope: &RepoScope,
    head_sha: &str,
    pr_paths: &HashSet<&str>,
    compares: &mut resolution::Compares,
    finding: &Finding,
) -> Result<bool, GitHubError> {
    if finding.head_sha == head_sha {
        return Ok(pr_paths.contains(finding.path.as_str()));
    }
    let Some(comparison) = compares
        .since(github, scope, &finding.head_sha, head_sha)
        .await?
    else {
        // Rebased (or the commit is gone): the head's file says whether its code is.
        return Ok(pr_paths.contains(finding.path.as_str())
            && !resolution::gone_from_the_head(github, scope, finding, head_sha).await?);
    };
    let now_at = resolution::file_of(&comparison.files, &finding.path)
        .map_or(finding.path.as_str(), |file| file.filename.as_str());
    Ok(pr_paths.contains(now_at) && !resolution::changed_in(Some(comparison), finding))
}

/// Attempts of one finding's conditional write before giving up.
const ATTEMPTS: usize = 5;

/// Whose change a state write is, which decides what happens when the finding changed
/// since the writer read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precedence {
    /// A person's action, now (a dispute settled, a thread resolved, a won't fix): it is
    /// the newest decision and applies over whatever changed meanwhile.
    Newest,
    /// A review's judgment from findings read before its passes: it applies only while
    /// the finding's state is still the one the review judged.
    WhileUnchanged,
}

/// Store the review's changes to earlier findings. The review read `earlier` before its
/// passes, minutes ago; the conversation worker runs on another queue and may have
/// resolved, conceded, dismissed or recorded an outcome on one of them since. So each
/// write is conditional on the finding being as the review read it, and on a lost
/// condition the finding is read again and only the review's own change (its state, and
/// who changed it) is applied, and only while the state is still the one the review
/// judged: a person's later decision wins over the review's older view. Returns how many
/// findings were changed.
pub async fn write_back(
    store: &dyn Store,
    earlier: &[Finding],
    changes: &Changes,
) -> Result<usize, StoreError> {
    let mut written = 0;
    for changed in changes.all() {
        let Some(read) = earlier.iter().find(|f| f.id == changed.id) else {
            continue;
        };
        if store_state(store, Some(read), changed, Precedence::WhileUnchanged).await? {
            written += 1;
        }
    }
    Ok(written)
}

/// Store `changed`'s state (and who changed it, when) over the finding as the writer
/// `read` it (`None`: it was not stored then), with a conditional write. On a lost
/// condition the finding is read again and only the state change is applied to it as it
/// is now, keeping everything else another job wrote meanwhile (an outcome, a comment
/// id), as `precedence` allows. Every state change goes through here, so no writer
/// undoes another's work by writing back a stale copy. Returns whether it was written.
pub async fn store_state(
    store: &dyn Store,
    read: Option<&Finding>,
    changed: &Finding,
    precedence: Precedence,
) -> Result<bool, StoreError> {
    let mut read = read.cloned();
    let mut next = changed.clone();
    for _ in 0..ATTEMPTS {
        if store.put_finding_if(&next, read.as_ref()).await? {
            return Ok(true);
        }
        let fresh = store
            .findings_for_pr(&changed.repo, changed.pr)
            .await?
            .into_iter()
            .find(|f| f.id == changed.id);
        let Some(fresh) = fresh else {
            // Gone (never there, for an insert that lost to a delete): insert again.
            read = None;
            continue;
        };
        if precedence == Precedence::WhileUnchanged
            && read.as_ref().is_none_or(|r| r.state != fresh.state)
        {
            tracing::info!(repo = %changed.repo, pr = changed.pr, finding = %changed.id, now = ?fresh.state, "finding changed while the review ran; the later decision stands");
            return Ok(false);
        }
        next = Finding {
            state: changed.state,
            state_changed_by: changed.state_changed_by.clone(),
            state_changed_at: changed.state_changed_at,
            ..fresh.clone()
        };
        read = Some(fresh);
    }
    Err(StoreError::Unavailable(format!(
        "finding {} kept changing while its state was stored",
        changed.id
    )))
}

fn with_state(finding: &Finding, state: FindingState, by: &str, now: OffsetDateTime) -> Finding {
    let mut changed = finding.clone();
    changed.state = state;
    changed.state_changed_by = Some(by.to_string());
    changed.state_changed_at = Some(now);
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::Severity;

    fn finding(id: &str, state: FindingState, comment_id: Option<u64>) -> Finding {
        Finding {
            id: id.into(),
            fingerprint: format!("fp-{id}"),
            head_sha: "old".into(),
            review_id: Some(1),
            comment_id,
            state,
            ..Finding::sample("src/a.rs", "t")
        }
    }

    /// A fix the same review reports again is no fix, and a finding it closes is closed
    /// once.
    #[test]
    fn what_the_review_found_again_or_closed_is_not_also_fixed() {
        let changes = Changes {
            closed: vec![finding("f_closed", FindingState::Resolved, None)],
            ..Changes::default()
        };
        let fixed = ["f_closed", "f_found", "f_fixed"]
            .map(|id| finding(id, FindingState::Resolved, Some(1)))
            .to_vec();
        let found: HashSet<&str> = ["fp-f_found"].into();
        let changes = changes.with_fixed(fixed, &found);
        let ids: Vec<&str> = changes.fixed.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["f_fixed"]);
        assert_eq!(changes.all().count(), 2);
        assert!(changes.any());
        assert!(!Changes::default().any());
    }

    fn candidate(fingerprint: &str) -> Candidate {
        Candidate {
            confidence: 90,
            fingerprint: fingerprint.into(),
            ..Candidate::sample("src/a.rs", Severity::High, "bug", "t")
        }
    }

    fn seen<'a>(found: &[&'a str], repeated: &'a [Candidate], full: bool) -> Seen<'a> {
        Seen {
            found: found.iter().copied().collect(),
            repeated,
            complete_full_review: full,
            reviewed_paths: ["src/a.rs"].into(),
            pr_paths: ["src/a.rs"].into(),
        }
    }

    #[test]
    fn a_complete_full_review_closes_summary_only_findings_it_no_longer_finds() {
        let earlier = vec![
            finding("summary", FindingState::Open, None),
            finding("inline", FindingState::Open, Some(7)),
            finding("still", FindingState::Open, None),
        ];
        let now = OffsetDateTime::UNIX_EPOCH;
        let changes = after_review(
            &earlier,
            &seen(&["fp-still"], &[], true),
            &GateConfig::default(),
            now,
        );
        let closed: Vec<&str> = changes.closed.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(closed, vec!["summary"]);
        assert_eq!(changes.closed[0].state, FindingState::Resolved);
        assert_eq!(
            changes.closed[0].state_changed_by.as_deref(),
            Some(CLOSED_BY)
        );

        // An incremental or partial review proves nothing.
        let none = after_review(
            &earlier,
            &seen(&[], &[], false),
            &GateConfig::default(),
            now,
        );
        assert!(none.closed.is_empty());

        // A file the review did not look at (skipped, over budget) keeps its findings;
        // a file the PR no longer changes does not.
        let mut partial_paths = seen(&[], &[], true);
        partial_paths.reviewed_paths = HashSet::new();
        assert!(
            after_review(&earlier, &partial_paths, &GateConfig::default(), now)
                .closed
                .is_empty()
        );
        partial_paths.pr_paths = HashSet::new();
        assert_eq!(
            after_review(&earlier, &partial_paths, &GateConfig::default(), now)
                .closed
                .len(),
            2
        );
    }

    #[test]
    fn a_resolved_blocking_finding_found_again_is_open_again() {
        let mut low = finding("low", FindingState::Resolved, Some(9));
        low.severity = Severity::Low;
        let earlier = vec![
            finding("resolved", FindingState::Resolved, Some(7)),
            finding("conceded", FindingState::WontFix, Some(8)),
            low,
            finding("gone", FindingState::Resolved, Some(10)),
        ];
        let repeated = [
            candidate("fp-resolved"),
            candidate("fp-conceded"),
            candidate("fp-low"),
        ];
        let changes = after_review(
            &earlier,
            &seen(&[], &repeated, false),
            &GateConfig::default(),
            OffsetDateTime::UNIX_EPOCH,
        );
        let reopened: Vec<&str> = changes.reopened.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(reopened, vec!["resolved"]);
        assert_eq!(changes.reopened[0].state, FindingState::Open);
    }

    /// The retry of a review that died before storing its changes does them again from
    /// the marker's ids, except where the finding is no longer as the review judged it:
    /// a person decided since, or the change was stored before the worker died.
    #[test]
    fn changes_replayed_from_the_marker_apply_only_where_nothing_changed_since() {
        let now = OffsetDateTime::UNIX_EPOCH;
        let earlier = [
            finding("f_close", FindingState::Open, None),
            finding("f_reopen", FindingState::Resolved, Some(2)),
            finding("f_fix", FindingState::Open, Some(3)),
            finding("f_other", FindingState::Open, Some(4)),
        ];
        let planned = Changes {
            closed: vec![with_state(
                &earlier[0],
                FindingState::Resolved,
                CLOSED_BY,
                now,
            )],
            reopened: vec![with_state(
                &earlier[1],
                FindingState::Open,
                REOPENED_BY,
                now,
            )],
            held: Vec::new(),
            fixed: vec![with_state(
                &earlier[2],
                FindingState::Resolved,
                super::super::fixed::FIXED_BY,
                now,
            )],
        };
        let ids = planned.ids();
        let json = serde_json::to_string(&ids).expect("serialise");
        let read: ChangedIds = serde_json::from_str(&json).expect("parse");
        assert_eq!(read, ids);
        assert_eq!(planned.ids().closed, ["f_close"]);

        // Nothing stored yet: the same changes as the review's.
        assert_eq!(ids.replay(&earlier, None, now), planned);
        // Someone conceded the finding to close; the fix was stored before the crash.
        let mut since = earlier.clone();
        since[0].state = FindingState::WontFix;
        since[2] = planned.fixed[0].clone();
        let again = ids.replay(&since, None, now);
        assert!(again.closed.is_empty() && again.fixed.is_empty());
        assert_eq!(again.reopened, planned.reopened);
        let settled: Vec<String> = ids
            .fixed_as_stored(&since)
            .into_iter()
            .map(|f| f.id)
            .collect();
        assert_eq!(settled, ["f_fix"], "the stored fix is still settled");
        assert!(ChangedIds::default().replay(&earlier, None, now) == Changes::default());
        // The reopened finding resolved again by a person after the review was posted:
        // that later decision stands.
        let posted = now + time::Duration::minutes(1);
        let mut resolved_again = earlier.clone();
        resolved_again[1].state_changed_at = Some(posted + time::Duration::minutes(1));
        assert!(
            ids.replay(&resolved_again, Some(posted), now)
                .reopened
                .is_empty()
        );
        resolved_again[1].state_changed_at = Some(posted - time::Duration::minutes(1));
        assert_eq!(
            ids.replay(&resolved_again, Some(posted), now)
                .reopened
                .len(),
            1,
            "resolved before the review: reopened"
        );
        // A marker written before the ids were carried reads as no changes.
        let old: ChangedIds = serde_json::from_str("{}").expect("parse");
        assert!(old.is_empty());
    }
}
