//! From every pass's raw findings to one list worth posting.
//!
//! - A finding whose line is not on the right side of the PR's diff cannot be an inline
//!   comment (GitHub would refuse the whole review); it is kept for the summary instead.
//! - Passes overlap (a SQL injection is both a security and a correctness problem), so
//!   findings on the same path, overlapping lines and with similar titles are merged: the
//!   higher severity, the best-supported body, and more confidence when independent passes
//!   agree.
//! - A finding already posted on this PR is dropped, so a re-review after a push does
//!   not repeat itself: the same fingerprint, or the same code at the same path with a
//!   similar title (a model rarely words a problem twice alike; see [`site`]).

use crate::ports::{Finding, Severity};
use crate::review::diff::Patch;
use crate::review::findings::PassResult;
use crate::review::findings::RawFinding;
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap, HashSet};

/// How many lines apart two findings may be and still count as overlapping: models are
/// often one line off about where a problem "is".
const LINE_SLACK: u32 = 2;

/// Confidence added per extra independent pass that reported the same finding.
const AGREEMENT_BONUS: u8 = 10;

/// A finding after merging, ready for filtering and publishing.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub path: String,
    pub line: u32,
    pub start_line: Option<u32>,
    pub severity: Severity,
    pub category: String,
    pub confidence: u8,
    pub title: String,
    pub body: String,
    pub suggestion: Option<String>,
    /// Specialists that reported it.
    pub passes: Vec<String>,
    pub fingerprint: String,
    /// Where it sits (see [`site`]); empty when its lines are not in the PR's diff.
    pub site: String,
    /// On the right side of the PR's diff: may be posted inline.
    pub on_diff: bool,
    /// Why the judge would have taken this finding out of the merge gate, which it may
    /// not do (see [`crate::review::learned::judge`]): posted with the finding, so that
    /// whoever may lift it sees the judge's case.
    pub doubt: Option<String>,
}

impl Candidate {
    /// The judge's doubt as a reader sees it beside the finding, wherever it is shown.
    pub fn doubt_note(&self) -> Option<String> {
        self.doubt.as_ref().map(|why| {
            format!(
                "The judge doubts this finding: {}. It is kept: at a severity the merge gate blocks on (`gate.blockOn`), only a code change or someone entitled to lift it takes it out.",
                why.trim_end_matches('.')
            )
        })
    }
}

#[cfg(test)]
impl Candidate {
    /// A finding on line 3 of `path`, confidence 80, on the diff, fingerprinted by its
    /// title: what the tests start from, changing the field they are about.
    pub(crate) fn sample(path: &str, severity: Severity, category: &str, title: &str) -> Self {
        Candidate {
            path: path.into(),
            line: 3,
            start_line: None,
            severity,
            category: category.into(),
            confidence: 80,
            title: title.into(),
            body: String::new(),
            suggestion: None,
            passes: vec![],
            fingerprint: title.into(),
            site: String::new(),
            on_diff: true,
            doubt: None,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Merged {
    pub candidates: Vec<Candidate>,
    /// Findings folded into another one.
    pub duplicates: usize,
    /// Findings dropped because this PR already has them.
    pub already_posted: usize,
    /// Those dropped findings themselves: not posted again, but still what this run found,
    /// so the gate can weigh them (see `ReviewHandler::review_head`).
    pub repeated: Vec<Candidate>,
}

/// Merge the passes' findings. `patches` are the PR's patches by path (the whole PR, also
/// for an incremental review: GitHub places comments on the PR's diff); `earlier` are the
/// findings already on the PR.
pub fn merge(
    results: &[PassResult],
    patches: &HashMap<String, Patch>,
    earlier: &[Finding],
) -> Merged {
    let mut merged = Merged::default();
    for result in results {
        let Ok(findings) = &result.outcome else {
            continue;
        };
        for raw in findings {
            let candidate = candidate(result.specialist, raw, patches);
            match merged
                .candidates
                .iter_mut()
                .find(|existing| same_finding(existing, &candidate))
            {
                Some(existing) => {
                    absorb(existing, candidate);
                    merged.duplicates += 1;
                }
                None => merged.candidates.push(candidate),
            }
        }
    }
    for mut candidate in std::mem::take(&mut merged.candidates) {
        match earlier.iter().find(|f| posted_as(f, &candidate)) {
            // Found again: under the earlier finding's fingerprint, which is what the
            // lifecycle of earlier findings ("found again") and the store know it by.
            Some(posted) => {
                candidate.fingerprint = posted.fingerprint.clone();
                merged.repeated.push(candidate);
            }
            None => merged.candidates.push(candidate),
        }
    }
    merged.already_posted = merged.repeated.len();
    merged
}

/// Whether `candidate` is `earlier` said again: the same fingerprint, or the same code at
/// the same path (wherever the lines moved to since) with a similar title.
fn posted_as(earlier: &Finding, candidate: &Candidate) -> bool {
    earlier.fingerprint == candidate.fingerprint
        || (!candidate.site.is_empty()
            && earlier.site == candidate.site
            && similar_titles(&earlier.title, &candidate.title))
}

fn candidate(pass: &str, raw: &RawFinding, patches: &HashMap<String, Patch>) -> Candidate {
    let patch = patches.get(&raw.path);
    let right: BTreeSet<u32> = patch.map(Patch::right_lines).unwrap_or_default();
    let on_diff = raw.on_right_side() && right.contains(&raw.line);
    // A multi-line comment must lie within one hunk of the diff; otherwise comment on the
    // last line alone rather than lose the inline comment.
    let start_line = raw.start_line.filter(|start| {
        *start < raw.line
            && patch.is_some_and(|p| {
                p.hunks.iter().any(|h| {
                    let lines: BTreeSet<u32> = h.lines.iter().filter_map(|l| l.new).collect();
                    lines.contains(start) && lines.contains(&raw.line)
                })
            })
    });
    let code = patch
        .and_then(|p| code_at(p, start_line.unwrap_or(raw.line), raw.line))
        .unwrap_or_default();
    Candidate {
        path: raw.path.clone(),
        line: raw.line,
        start_line: if on_diff { start_line } else { raw.start_line },
        severity: raw.severity,
        category: raw.category.trim().to_string(),
        confidence: raw.confidence.min(100),
        title: raw.title.trim().to_string(),
        body: raw.body.trim().to_string(),
        suggestion: raw.suggestion.clone().filter(|s| !s.trim().is_empty()),
        passes: vec![pass.to_string()],
        fingerprint: fingerprint(&raw.path, &raw.title, &code),
        site: site(&raw.path, &code),
        on_diff,
        doubt: None,
    }
}

/// The new file's text of `start..=end`, from the patch.
fn code_at(patch: &Patch, start: u32, end: u32) -> Option<String> {
    let lines: Vec<&str> = patch
        .lines()
        .filter(|l| l.new.is_some_and(|n| n >= start && n <= end))
        .map(|l| l.text.as_str())
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// path + normalised title + the code the finding is on, hashed. Line numbers are left
/// out on purpose: after a push above the finding, the same problem on the same code
/// must produce the same fingerprint.
pub fn fingerprint(path: &str, title: &str, code: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(path.as_bytes());
    hasher.update([0]);
    hasher.update(normalise_title(title).as_bytes());
    hasher.update([0]);
    hasher.update(folded(code).as_bytes());
    hex::encode(&hasher.finalize()[..8])
}

/// Where a finding sits, whatever it says: its path and the code at its lines (white
/// space folded), hashed. Line numbers move with every push above them and a model words
/// the same problem differently from one review to the next; the code it points at stays.
/// Empty when there is no code to point at (lines outside the diff): such findings are
/// matched by fingerprint only.
pub fn site(path: &str, code: &str) -> String {
    let code = folded(code);
    if code.is_empty() {
        return String::new();
    }
    let mut hasher = Sha256::new();
    hasher.update(path.as_bytes());
    hasher.update([0]);
    hasher.update(code.as_bytes());
    hex::encode(&hasher.finalize()[..8])
}

/// Code with each line's white space folded and blank lines dropped.
fn folded(code: &str) -> String {
    code.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Lower case, letters only (numbers are often line numbers), single spaces.
pub fn normalise_title(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .map(|c| if c.is_alphabetic() { c } else { ' ' })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn same_finding(a: &Candidate, b: &Candidate) -> bool {
    if a.path != b.path {
        return false;
    }
    if a.fingerprint == b.fingerprint {
        return true;
    }
    let (a_start, b_start) = (
        a.start_line.unwrap_or(a.line),
        b.start_line.unwrap_or(b.line),
    );
    let overlap = a_start <= b.line.saturating_add(LINE_SLACK)
        && b_start <= a.line.saturating_add(LINE_SLACK);
    overlap && similar_titles(&a.title, &b.title)
}

/// Word overlap of the significant words (Jaccard ≥ 0.3), or one title's words all in
/// the other's. Loose on purpose: passes phrase the same problem differently, and
/// overlapping lines on the same file already narrow it down.
fn similar_titles(a: &str, b: &str) -> bool {
    let words = |t: &str| -> HashSet<String> {
        normalise_title(t)
            .split(' ')
            .filter(|w| w.len() >= 3)
            .map(String::from)
            .collect()
    };
    let (a, b) = (words(a), words(b));
    if a.is_empty() || b.is_empty() {
        return false;
    }
    let shared = a.intersection(&b).count();
    let union = a.union(&b).count();
    shared * 10 >= union * 3 || shared == a.len().min(b.len())
}

fn absorb(keep: &mut Candidate, other: Candidate) {
    let independent = !keep.passes.iter().any(|p| other.passes.contains(p));
    // The body of the more confident report (the longer one on a tie) explains it best.
    if (other.confidence, other.body.len()) > (keep.confidence, keep.body.len()) {
        keep.body = other.body;
        keep.title = other.title;
        keep.category = other.category;
        if other.suggestion.is_some() {
            keep.suggestion = other.suggestion;
        }
    } else if keep.suggestion.is_none() {
        keep.suggestion = other.suggestion;
    }
    keep.severity = keep.severity.max(other.severity);
    let best = keep.confidence.max(other.confidence);
    keep.confidence = if independent {
        best.saturating_add(AGREEMENT_BONUS).min(100)
    } else {
        best
    };
    keep.on_diff = keep.on_diff || other.on_diff;
    for pass in other.passes {
        if !keep.passes.contains(&pass) {
            keep.passes.push(pass);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::diff::parse_hunks;
    use std::time::Duration;

    fn raw(line: u32, title: &str, severity: Severity, confidence: u8) -> RawFinding {
        RawFinding {
            path: "src/db.rs".into(),
            line,
            start_line: None,
            side: None,
            severity,
            category: "x".into(),
            confidence,
            title: title.into(),
            body: format!("body of {title}"),
            suggestion: None,
        }
    }

    fn pass(name: &'static str, findings: Vec<RawFinding>) -> PassResult {
        PassResult {
            specialist: name,
            outcome: Ok(findings),
            elapsed: Duration::ZERO,
            tools_read: Vec::new(),
        }
    }

    fn patches() -> HashMap<String, Patch> {
        let patch =
            parse_hunks("@@ -1,2 +1,4 @@\n a\n+let q = format!(\"{}\", id);\n+run(q);\n b\n")
                .unwrap();
        HashMap::from([("src/db.rs".to_string(), patch)])
    }

    #[test]
    fn duplicates_across_passes_merge_up() {
        let results = [
            pass(
                "security",
                vec![raw(2, "SQL injection in query", Severity::Critical, 80)],
            ),
            pass(
                "correctness",
                vec![raw(
                    3,
                    "Query built by SQL string formatting: injection",
                    Severity::High,
                    85,
                )],
            ),
            pass("style", vec![raw(40, "Long function", Severity::Nit, 90)]),
        ];
        let merged = merge(&results, &patches(), &[]);
        assert_eq!(merged.duplicates, 1);
        assert_eq!(merged.candidates.len(), 2);
        let sql = &merged.candidates[0];
        assert_eq!(sql.severity, Severity::Critical);
        assert_eq!(sql.confidence, 95);
        assert_eq!(sql.passes, ["security", "correctness"]);
        assert!(sql.body.contains("formatting"));
        assert!(sql.on_diff);
        assert!(!merged.candidates[1].on_diff, "line 40 is off the diff");
    }

    #[test]
    fn fingerprint_ignores_line_numbers_and_drops_posted() {
        let a = fingerprint("a.rs", "Unchecked index at line 12", "  v[i]  ");
        assert_eq!(a, fingerprint("a.rs", "unchecked index at line 30", "v[i]"));
        assert_ne!(a, fingerprint("b.rs", "unchecked index", "v[i]"));
        let results = [pass(
            "security",
            vec![raw(2, "SQL injection", Severity::High, 90)],
        )];
        let first = merge(&results, &patches(), &[]);
        let again = merge(&results, &patches(), &[posted(&first.candidates[0])]);
        assert!(again.candidates.is_empty());
        assert_eq!(again.already_posted, 1);
        assert_eq!(again.repeated.len(), 1);
        assert_eq!(
            again.repeated[0].fingerprint,
            first.candidates[0].fingerprint
        );
    }

    /// The finding the store holds once `candidate` was posted.
    fn posted(candidate: &Candidate) -> Finding {
        Finding {
            fingerprint: candidate.fingerprint.clone(),
            site: candidate.site.clone(),
            line: candidate.line,
            ..Finding::sample(&candidate.path, &candidate.title)
        }
    }

    fn one(
        line: u32,
        title: &str,
        patches: &HashMap<String, Patch>,
        earlier: &[Finding],
    ) -> Merged {
        merge(
            &[pass("security", vec![raw(line, title, Severity::High, 90)])],
            patches,
            earlier,
        )
    }

    #[test]
    fn the_same_code_said_again_in_other_words_is_not_posted_again() {
        let first = one(2, "SQL injection in query", &patches(), &[]);
        let earlier = [posted(&first.candidates[0])];
        // A push inserted two lines above: the same code is now at line 4, and the model
        // words the problem differently.
        let moved = HashMap::from([(
            "src/db.rs".to_string(),
            parse_hunks(
                "@@ -1,2 +1,6 @@\n a\n+use x;\n+use y;\n+let q = format!(\"{}\", id);\n+run(q);\n b\n",
            )
            .unwrap(),
        )]);
        let again = one(
            4,
            "Query built with format!: SQL injection",
            &moved,
            &earlier,
        );
        assert!(again.candidates.is_empty(), "{:#?}", again.candidates);
        assert_eq!(again.already_posted, 1);
        assert_eq!(
            again.repeated[0].fingerprint, earlier[0].fingerprint,
            "known by the earlier finding's fingerprint"
        );
        // Another problem on that code is new.
        let other = one(4, "Unbounded result set", &moved, &earlier);
        assert_eq!(other.candidates.len(), 1);
        // Off the diff there is no code to go by: only the fingerprint matches.
        let off = one(40, "SQL injection in query", &patches(), &[]);
        assert!(off.candidates[0].site.is_empty());
        let earlier = [posted(&off.candidates[0])];
        assert_eq!(
            one(40, "SQL injection in the query", &patches(), &earlier).already_posted,
            0
        );
        assert_eq!(
            one(40, "SQL injection in query", &patches(), &earlier).already_posted,
            1
        );
    }
}
