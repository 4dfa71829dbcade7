//! A finding must point at code the review could see. A model that names a file the
//! PR does not change and the repository does not hold (`src/lib.rs` copied from the
//! prompt's example, a path from another project) is not reviewing this code, and at a
//! blocking severity its finding would fail the merge gate of a PR it says nothing true
//! about. Such findings are kept out of the review and listed with the suppressed ones,
//! saying why.
//!
//! A file the PR changes grounds a finding on a line its diff shows, or on any line the
//! head's snapshot of it has: a line past the file's end (line 900 of a 40-line file) is
//! a line the model made up, however real the file. Any other file grounds a finding when
//! the head's snapshot holds it and has the line named: the code context and the tools
//! read only from that snapshot, so a file outside it is one the model never saw. Without
//! a snapshot (it could not be read, or a local diff has none) only the changed files do,
//! on any line.

use super::diff::Patch;
use super::merge::Candidate;
use crate::learning::apply::Suppressed;
use crate::ports::code::Codebase;
use std::collections::HashMap;

/// What [`Suppressed::by`] says for these.
pub const BY: &str = "grounding";

/// `candidates` split into those on code the review could see and those suppressed.
pub fn ground(
    candidates: Vec<Candidate>,
    changed: &HashMap<String, Patch>,
    code: Option<&dyn Codebase>,
) -> (Vec<Candidate>, Vec<Suppressed>) {
    let mut kept = Vec::with_capacity(candidates.len());
    let mut suppressed = Vec::new();
    for candidate in candidates {
        match unseen(&candidate, changed, code) {
            None => kept.push(candidate),
            Some(why) => suppressed.push(Suppressed {
                candidate,
                by: BY.to_string(),
                why,
            }),
        }
    }
    (kept, suppressed)
}

/// Why the review could not have seen the code `candidate` names; `None` when it could.
fn unseen(
    candidate: &Candidate,
    changed: &HashMap<String, Patch>,
    code: Option<&dyn Codebase>,
) -> Option<String> {
    let path = &candidate.path;
    if let Some(patch) = changed.get(path) {
        return match code.and_then(|code| code.line_count(path)) {
            Some(lines)
                if candidate.line > lines && !patch.right_lines().contains(&candidate.line) =>
            {
                Some(past_the_end(path, lines, candidate.line))
            }
            _ => None,
        };
    }
    match code.map(|code| code.line_count(path)) {
        Some(Some(lines)) if candidate.line <= lines => None,
        Some(Some(lines)) => Some(past_the_end(path, lines, candidate.line)),
        Some(None) => Some(format!(
            "`{path}` is neither changed by this PR nor a file of the repository"
        )),
        None => Some(format!(
            "`{path}` is not changed by this PR, and the review could not read the \
             repository to see it"
        )),
    }
}

fn past_the_end(path: &str, lines: u32, line: u32) -> String {
    format!("`{path}` has {lines} lines, not {line}: the finding names code that is not there")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::tools::tests::OneFile;

    fn at(path: &str, line: u32) -> Candidate {
        Candidate {
            line,
            ..Candidate::sample(path, crate::ports::Severity::Critical, "security", "t")
        }
    }

    /// The repository holds `a.rs` of 1,000 lines.
    #[test]
    fn a_finding_stands_on_a_changed_file_or_on_a_line_the_snapshot_holds() {
        let changed: HashMap<String, Patch> = [("src/db.rs".to_string(), Patch::default())].into();
        let candidates = vec![
            at("src/db.rs", 9000),
            at("a.rs", 1000),
            at("a.rs", 1001),
            at("src/lib.rs", 42),
        ];
        let (kept, suppressed) = ground(candidates.clone(), &changed, Some(&OneFile));
        let kept: Vec<_> = kept.iter().map(|c| (c.path.as_str(), c.line)).collect();
        // The snapshot does not hold `src/db.rs` (over its caps, say): its lines are
        // unknown, and a changed file's finding stands.
        assert_eq!(kept, [("src/db.rs", 9000), ("a.rs", 1000)]);
        let why: Vec<_> = suppressed.iter().map(|s| s.why.as_str()).collect();
        assert_eq!(
            why,
            [
                "`a.rs` has 1000 lines, not 1001: the finding names code that is not there",
                "`src/lib.rs` is neither changed by this PR nor a file of the repository",
            ]
        );
        assert!(suppressed.iter().all(|s| s.by == BY));

        // Without the repository, only the changed files.
        let (kept, suppressed) = ground(candidates, &changed, None);
        assert_eq!(kept.len(), 1);
        assert_eq!(suppressed.len(), 3);
    }

    /// `a.rs` is changed: its diff's lines and the snapshot's lines ground a finding,
    /// a line past both does not.
    #[test]
    fn a_finding_on_a_changed_file_stands_only_on_a_line_it_has() {
        let patch =
            crate::review::diff::parse_hunks("@@ -990,1 +1000,3 @@\n a\n+b\n+c").expect("a hunk");
        let changed: HashMap<String, Patch> = [("a.rs".to_string(), patch)].into();
        let candidates = vec![at("a.rs", 1000), at("a.rs", 1002), at("a.rs", 1003)];
        let (kept, suppressed) = ground(candidates, &changed, Some(&OneFile));
        let kept: Vec<_> = kept.iter().map(|c| c.line).collect();
        // 1002 is past the snapshot's 1,000 lines but on the diff: the diff is the head.
        assert_eq!(kept, [1000, 1002]);
        assert_eq!(
            suppressed[0].why,
            "`a.rs` has 1000 lines, not 1003: the finding names code that is not there"
        );
    }
}
