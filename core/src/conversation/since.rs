//! What became of the commented code since a thread began.
//!
//! The most common reply to a finding is "fixed, have another look", written after a
//! push. GitHub then marks the thread outdated: its comment has no line in the head's
//! file, only the line it had on the commit it was made on, and the diff hunk it shows
//! is the code as it was. Answering from that alone, Parley would judge the old code
//! and hold its ground on a fixed finding, or concede to a claim it never checked. So
//! for an outdated thread the answer is given what changed at the commented lines since
//! (one compare of that commit with the head), and the code around where those lines
//! stand now (the file may have been renamed, the lines moved).
//!
//! A question in the PR's conversation that names a finding (one listed only in the
//! summary has no thread) is followed the same way from the commit it was found on.
//!
//! After a rebase the compare is diffed from a merge base and says nothing of those lines,
//! so the file is read at both commits instead.
//!
//! This is context only: whether a concession lifts a blocking finding is still decided
//! by [`crate::review::resolution`], which weighs the same compare on its own. Fail open:
//! a compare or files GitHub will not give leave the answer with the hunk, as before.

use super::snapshot::PrSnapshot;
use crate::ports::Finding;
use crate::ports::github::{ChangedFile, Comparison, DiffSide, FileStatus, GitHub, ReviewComment};
use crate::review::rebased::{self, Became};
use crate::review::{diff, resolution};

/// Old lines of the change shown around the commented ones, on each side.
const AROUND: u32 = 6;

/// Characters of that change at the most: a thread on a long range, rewritten, still
/// leaves the rest of the prompt its room.
const MAX_DIFF_CHARS: usize = 4000;

/// The commented code, followed from the comment's commit to the PR's head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Since {
    /// The commit the thread's comment was made on (or the named finding found on).
    pub from: String,
    /// The file's name at the head (another one when the PR renamed it).
    pub path: String,
    /// The commented line's place at the head; `None` when the change removed it or it
    /// cannot be told.
    pub line: Option<u32>,
    pub change: Change,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The commented lines are as they were (moved, perhaps, or in a renamed file).
    Unchanged,
    /// The change at and around the commented lines, as a diff (old side: the comment's
    /// commit).
    Changed(String),
    /// The file is gone from the head.
    Removed,
    /// The file changed but GitHub sent no patch to tell where (too large, binary); or,
    /// after a rebase, the lines are nowhere in the head's copy.
    Unknown,
}

/// Lines of a file on a commit of the PR's, older than its head: what an outdated thread's
/// comment, or a finding a question names, was about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor<'a> {
    pub path: &'a str,
    pub start: u32,
    pub end: u32,
    pub commit: &'a str,
}

impl<'a> Anchor<'a> {
    /// An outdated thread's root on the head's side of the diff; `None` for a current
    /// thread (its line is the head's), a comment on a removed line (numbered in the base,
    /// not a commit of the PR's), or one made on `head` itself.
    pub fn outdated(root: &'a ReviewComment, head: &str) -> Option<Self> {
        let end = outdated_line(root, head)?;
        Some(Anchor {
            path: &root.path,
            start: root.original_start_line.unwrap_or(end).min(end),
            end,
            commit: &root.original_commit_id,
        })
    }

    /// Where `finding` was found; `None` when that was `head` (its lines are the head's).
    pub fn finding(finding: &'a Finding, head: &str) -> Option<Self> {
        (!finding.head_sha.is_empty() && finding.head_sha != head).then(|| Anchor {
            path: &finding.path,
            start: finding.start_line.unwrap_or(finding.line).min(finding.line),
            end: finding.line,
            commit: &finding.head_sha,
        })
    }
}

/// What changed at `anchor`'s lines since its commit, up to the PR's head; `None` where
/// neither the compare (a 5xx after the client's retries) nor, after a rebase or a
/// force-push, the file at both commits tells.
pub async fn since(github: &dyn GitHub, snap: &PrSnapshot, anchor: Anchor<'_>) -> Option<Since> {
    let pr = snap.pull()?;
    let Anchor {
        path,
        start,
        end,
        commit: from,
    } = anchor;
    let comparison = match resolution::since(github, &snap.scope, from, &pr.head.sha).await {
        Ok(Some(comparison)) => comparison,
        Ok(None) => return rebased(github, snap, anchor, &pr.head.sha).await,
        Err(why) => {
            tracing::info!(repo = %snap.scope.full_name(), pr = snap.number, %why, "could not compare an outdated thread's commit with the head; answering from its hunk");
            return None;
        }
    };
    let (path, line, change) = follow(&comparison, path, start, end)?;
    Some(Since {
        from: from.to_string(),
        path,
        line,
        change,
    })
}

/// After a rebase (or a force-push) the compare says nothing of the anchor's lines: its
/// file is read at both commits and its lines looked for in the head's copy, as the gate
/// does ([`resolution::gone_from_the_head`]). Found: unchanged, at the line they stand at
/// now; not found: changed, shown by the code beside them where that is found
/// ([`Became::Rewritten`]), else with no diff (the model reads the file). `None` where either copy cannot be
/// read.
async fn rebased(
    github: &dyn GitHub,
    snap: &PrSnapshot,
    anchor: Anchor<'_>,
    head: &str,
) -> Option<Since> {
    let (Some(then), Some(now)) =
        rebased::texts(github, &snap.scope, anchor.path, anchor.commit, head)
            .await
            .ok()?
    else {
        return None;
    };
    let (line, change) = match rebased::became(&then, &now, anchor.start, anchor.end) {
        Became::Stands(line) => (line, Change::Unchanged),
        Became::Rewritten { diff, line } => (
            line,
            Change::Changed(crate::sanitize::truncate(&diff, MAX_DIFF_CHARS)),
        ),
        Became::Unrecognisable => (None, Change::Unknown),
    };
    Some(Since {
        from: anchor.commit.to_string(),
        path: anchor.path.to_string(),
        line,
        change,
    })
}

/// Where lines `start..=end` of the file that was `path` stand after `comparison` (what
/// changed since), and what became of them; `None` when a compare cut at GitHub's most
/// files does not list it (it may have changed all the same).
fn follow(
    comparison: &Comparison,
    path: &str,
    start: u32,
    end: u32,
) -> Option<(String, Option<u32>, Change)> {
    let Some(file) = resolution::file_of(&comparison.files, path) else {
        return (!comparison.may_be_cut())
            .then(|| (path.to_string(), Some(end), Change::Unchanged));
    };
    Some(changed(file, path, start, end))
}

/// What became of lines `start..=end` of the file that was `path`, changed as `file`.
fn changed(file: &ChangedFile, path: &str, start: u32, end: u32) -> (String, Option<u32>, Change) {
    if file.status == FileStatus::Removed {
        return (path.to_string(), None, Change::Removed);
    }
    let now = file.filename.clone();
    let Some(patch) = file.patch.as_deref() else {
        // A rename and nothing else comes with no patch and no line changed.
        return if file.status == FileStatus::Renamed && file.changes == 0 {
            (now, Some(end), Change::Unchanged)
        } else {
            (now, None, Change::Unknown)
        };
    };
    let Ok(patch) = diff::parse_hunks(patch) else {
        return (now, None, Change::Unknown);
    };
    if !resolution::touches(&patch, start, end) {
        return (now, patch.follow(end), Change::Unchanged);
    }
    let (shown, line) = patch.near(start, end, AROUND);
    let shown = crate::sanitize::truncate(&shown, MAX_DIFF_CHARS);
    (now, line, Change::Changed(shown))
}

/// The line (numbered in its own commit) of a comment GitHub no longer places in the
/// head's diff, when that commit is one to compare with `head`.
fn outdated_line(root: &ReviewComment, head: &str) -> Option<u32> {
    let outdated = root.line.is_none()
        && root.side != Some(DiffSide::Left)
        && !root.original_commit_id.is_empty()
        && root.original_commit_id != head;
    outdated.then_some(root.original_line).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comment(line: Option<u32>, side: DiffSide, commit: &str) -> ReviewComment {
        let mut c: ReviewComment = serde_json::from_value(serde_json::json!({
            "id": 1, "path": "src/db.rs", "original_line": 12,
            "created_at": "2026-11-01T00:00:00Z", "updated_at": "2026-11-01T00:00:00Z",
        }))
        .unwrap();
        c.line = line;
        c.side = Some(side);
        c.original_commit_id = commit.into();
        c
    }

    #[test]
    fn only_an_outdated_comment_on_the_heads_side_is_followed() {
        let at = |c: &ReviewComment| outdated_line(c, "head");
        assert_eq!(at(&comment(None, DiffSide::Right, "old")), Some(12));
        assert_eq!(
            at(&comment(Some(12), DiffSide::Right, "old")),
            None,
            "GitHub still places it: its line is the head's"
        );
        assert_eq!(
            at(&comment(None, DiffSide::Left, "old")),
            None,
            "a removed line is numbered in the base"
        );
        assert_eq!(at(&comment(None, DiffSide::Right, "head")), None);
        assert_eq!(at(&comment(None, DiffSide::Right, "")), None);
    }

    fn listed(name: &str, status: &str, patch: Option<&str>, changes: u64) -> ChangedFile {
        serde_json::from_value(serde_json::json!({
            "filename": name, "status": status, "patch": patch, "changes": changes,
            "previous_filename": "src/db.rs",
        }))
        .unwrap()
    }

    #[test]
    fn the_commented_lines_are_followed_to_the_head() {
        let moved = "@@ -1,1 +1,3 @@\n a\n+b\n+c";
        let rewritten = "@@ -11,3 +11,3 @@\n x\n-y\n+Y\n z";
        let cases = [
            (vec![], ("src/db.rs", Some(12), Change::Unchanged)),
            (
                vec![listed("src/other.rs", "modified", Some(moved), 2)],
                ("src/db.rs", Some(12), Change::Unchanged),
            ),
            (
                vec![listed("src/db.rs", "modified", Some(moved), 2)],
                ("src/db.rs", Some(14), Change::Unchanged),
            ),
            (
                vec![listed("src/db.rs", "modified", Some(rewritten), 2)],
                (
                    "src/db.rs",
                    Some(12),
                    Change::Changed(" x\n-y\n+Y\n z\n".into()),
                ),
            ),
            (
                vec![listed("src/db.rs", "removed", None, 9)],
                ("src/db.rs", None, Change::Removed),
            ),
            (
                vec![listed("lib/db.rs", "renamed", None, 0)],
                ("lib/db.rs", Some(12), Change::Unchanged),
            ),
            (
                vec![listed("lib/db.rs", "renamed", None, 40)],
                ("lib/db.rs", None, Change::Unknown),
            ),
            (
                vec![listed("src/db.rs", "modified", Some("@@ garbled"), 1)],
                ("src/db.rs", None, Change::Unknown),
            ),
        ];
        for (files, (path, line, change)) in cases {
            assert_eq!(
                follow(&compared(files.clone()), "src/db.rs", 12, 12),
                Some((path.to_string(), line, change)),
                "{files:?}"
            );
        }
        // GitHub's compare stops at 300 files: one it does not list may have changed.
        let many = (0..Comparison::MAX_FILES)
            .map(|i| listed(&format!("gen/{i}.rs"), "added", Some(moved), 2))
            .collect();
        assert_eq!(follow(&compared(many), "src/db.rs", 12, 12), None);
    }

    fn compared(files: Vec<ChangedFile>) -> Comparison {
        Comparison {
            files,
            ..serde_json::from_value(serde_json::json!({ "status": "ahead" })).unwrap()
        }
    }
}
