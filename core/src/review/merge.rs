//! From every pass's raw findings to one list worth posting.
//!
//! - A finding whose line is not on the right side of the PR's diff cannot be an inline
//!   comment (GitHub would refuse the whole review); it is kept for the summary instead.
//! - Passes overlap (a SQL injection is both a security and a correctness problem), so
//!   findings on the same path, overlapping lines and with similar titles are merged: the
//!   higher severity, the best-supported body, and more confidence when independent
//!   passes agree. Two findings of one pass in different categories are two problems,
//!   though, unless one title says no more than the other.
//! - A finding already posted on this PR is dropped, so a re-review after a push does
//!   not repeat itself: the same fingerprint, or the same code at the same path with a
//!   similar title (a model rarely words a problem twice alike; see [`site`]). Each
//!   earlier finding is found again by one finding at most, the most alike.

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
    /// The code at its lines, as the PR's diff has them (empty off the diff): what
    /// [`site`] hashes with the path, kept so that an earlier finding whose file has
    /// another name now is known again by its code.
    pub code: String,
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
            code: String::new(),
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
/// findings already on the PR, and `moved_away` the ids of those whose code is no longer
/// where they were posted (see [`still_at`]): such a finding said again at another path,
/// on the same code, is known as the earlier one rather than posted twice.
pub fn merge(
    results: &[PassResult],
    patches: &HashMap<String, Patch>,
    earlier: &[Finding],
    moved_away: &HashSet<&str>,
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
    let found_again = found_again(&merged.candidates, earlier, moved_away);
    for (mut candidate, posted) in std::mem::take(&mut merged.candidates)
        .into_iter()
        .zip(found_again)
    {
        match posted {
            // Found again: under the earlier finding's fingerprint, which is what the
            // lifecycle of earlier findings ("found again") and the store know it by.
            Some(posted) => {
                candidate.fingerprint = earlier[posted].fingerprint.clone();
                merged.repeated.push(candidate);
            }
            None => merged.candidates.push(candidate),
        }
    }
    merged.already_posted = merged.repeated.len();
    merged
}

/// For each candidate, the earlier finding it says again, if any. One earlier finding is
/// said again by one candidate at most, the one most like it: two problems a review finds
/// on the same code are two findings, even where both titles share words with the one
/// posted before (it is not both of them), and the other one is new.
fn found_again(
    candidates: &[Candidate],
    earlier: &[Finding],
    moved_away: &HashSet<&str>,
) -> Vec<Option<usize>> {
    let mut pairs: Vec<(Match, usize, usize)> = candidates
        .iter()
        .enumerate()
        .flat_map(|(c, candidate)| {
            earlier.iter().enumerate().filter_map(move |(e, finding)| {
                let moved = moved_away.contains(finding.id.as_str());
                Some((posted_as(finding, candidate, moved)?, c, e))
            })
        })
        .collect();
    // Best first; the sort is stable, so equal matches go in the candidates' order.
    pairs.sort_by_key(|(surety, _, _)| std::cmp::Reverse(*surety));
    let mut assigned = vec![None; candidates.len()];
    let mut taken = vec![false; earlier.len()];
    for (_, c, e) in pairs {
        if assigned[c].is_none() && !taken[e] {
            assigned[c] = Some(e);
            taken[e] = true;
        }
    }
    assigned
}

/// How surely a candidate is an earlier finding said again; a larger one is surer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Match {
    /// The same code at the same path (wherever the lines moved to since) with a similar
    /// title; surer in the same category (titles share the code's words whatever the
    /// problem: "SQL … injection", "SQL … timeout").
    Site {
        same_category: bool,
        likeness: Likeness,
    },
    /// The same fingerprint: same path, title and code.
    Fingerprint,
}

/// Whether (and how surely) `candidate` is `earlier` said again. `moved`: `earlier`'s code
/// is no longer at its path, so the candidate's code is also weighed as if it stood there
/// (a file renamed, or code moved into another, keeps its code, not its path).
fn posted_as(earlier: &Finding, candidate: &Candidate, moved: bool) -> Option<Match> {
    if earlier.fingerprint == candidate.fingerprint {
        return Some(Match::Fingerprint);
    }
    if candidate.site.is_empty() {
        return None;
    }
    let moved = moved && candidate.path != earlier.path;
    if moved && fingerprint(&earlier.path, &candidate.title, &candidate.code) == earlier.fingerprint
    {
        return Some(Match::Fingerprint);
    }
    let same_site = earlier.site == candidate.site
        || (moved && earlier.site == site(&earlier.path, &candidate.code));
    if !same_site {
        return None;
    }
    let likeness = Likeness::of(&earlier.title, &candidate.title);
    likeness.similar().then(|| Match::Site {
        same_category: earlier.category.eq_ignore_ascii_case(&candidate.category),
        likeness,
    })
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
    // GitHub applies a suggestion over exactly the lines its comment is on. Where the
    // range had to be cut to its last line, applying it would write over one line what
    // was meant for several; and one that leaves its lines as they are offers a button
    // that changes nothing. The finding stands either way.
    let narrowed = raw.start_line.is_some_and(|start| start < raw.line) && start_line.is_none();
    let suggestion = raw
        .suggestion
        .clone()
        .filter(|s| !s.trim().is_empty())
        .filter(|_| !narrowed)
        .filter(|s| !(on_diff && s.trim_end_matches('\n') == code));
    Candidate {
        path: raw.path.clone(),
        line: raw.line,
        start_line: if on_diff { start_line } else { raw.start_line },
        severity: raw.severity,
        category: raw.category.trim().to_string(),
        confidence: raw.confidence.min(100),
        title: raw.title.trim().to_string(),
        body: raw.body.trim().to_string(),
        suggestion,
        passes: vec![pass.to_string()],
        fingerprint: fingerprint(&raw.path, &raw.title, &code),
        site: site(&raw.path, &code),
        code,
        on_diff,
        doubt: None,
    }
}

/// Whether `finding`'s code (the lines its [`site`] hashed, however far they moved) is
/// still in `patch`, its file's diff now; `true` where it has no site to look for. One
/// that is not was moved into another file, or removed.
pub fn still_at(finding: &Finding, patch: &Patch) -> bool {
    let right: Vec<(u32, &str)> = patch
        .lines()
        .filter_map(|l| Some((l.new?, l.text.as_str())))
        .collect();
    site_among(finding, &right)
}

/// Whether `finding`'s code is anywhere in `text`, a whole file; `true` where it has no
/// site to look for.
pub fn still_in_text(finding: &Finding, text: &str) -> bool {
    let lines: Vec<(u32, &str)> = (1..).zip(text.lines()).collect();
    site_among(finding, &lines)
}

/// Where `block` (lines of code, white space folded and blank lines dropped as a site folds
/// them) first stands whole and in order in `text`: the line number of its last line there.
/// `None` when it is nowhere, or has nothing to look for.
pub fn block_at(block: &[&str], text: &str) -> Option<u32> {
    block_span(block, text).map(|(_, last)| last)
}

/// Where `block` first stands in `text`: the numbers of its first and last lines there.
pub fn block_span(block: &[&str], text: &str) -> Option<(u32, u32)> {
    let wanted: Vec<String> = block
        .iter()
        .map(|line| folded(line))
        .filter(|l| !l.is_empty())
        .collect();
    if wanted.is_empty() {
        return None;
    }
    let lines: Vec<(u32, String)> = (1..)
        .zip(text.lines())
        .map(|(number, line)| (number, folded(line)))
        .filter(|(_, l)| !l.is_empty())
        .collect();
    lines
        .windows(wanted.len())
        .find(|run| run.iter().map(|(_, l)| l).eq(wanted.iter()))
        .and_then(|run| Some((run.first()?.0, run.last()?.0)))
}

/// Whether some run of `lines` (numbered, in order) as long as `finding`'s hashes to its
/// site.
fn site_among(finding: &Finding, right: &[(u32, &str)]) -> bool {
    if finding.site.is_empty() {
        return true;
    }
    let span = finding
        .line
        .saturating_sub(finding.start_line.unwrap_or(finding.line));
    (0..right.len()).any(|first| {
        let end = right[first].0.saturating_add(span);
        let code: Vec<&str> = right[first..]
            .iter()
            .take_while(|(n, _)| *n <= end)
            .map(|(_, text)| *text)
            .collect();
        site(&finding.path, &code.join("\n")) == finding.site
    })
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

/// The words of a normalised title ([`normalise_title`]), as likeness counts them: in a
/// script written without spaces, pairs of characters ([`crate::scripts`]), or a later
/// review's rewording of an earlier finding would share no word with it and be posted
/// twice.
pub fn title_words(normalised: &str) -> Vec<String> {
    let mut words = Vec::new();
    for token in normalised.split(' ').filter(|t| !t.is_empty()) {
        crate::scripts::for_each_part(token, |part| words.push(part.to_string()));
    }
    words
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
    if !overlap {
        return false;
    }
    let likeness = Likeness::of(&a.title, &b.title);
    // Two findings a pass reports on the same lines are two problems when their
    // categories differ ("SQL injection", security; "SQL query lacks a timeout",
    // reliability), unless one title says no more than the other; in one category, words
    // in common are the same problem said twice.
    let same_pass = b.passes.iter().any(|p| a.passes.contains(p));
    let same_category = a.category.eq_ignore_ascii_case(&b.category);
    if same_pass && !same_category {
        likeness.contained
    } else {
        likeness.similar()
    }
}

/// Whether `b` is the problem `a` is, found at another place: one category, titles alike
/// enough that a reader takes them for one kind of mistake (one's words all in the other's,
/// or most of both shared), on other lines or in another file. Stricter than
/// [`same_finding`]'s likeness, which the same lines already narrow down.
pub(crate) fn same_problem_elsewhere(a: &Candidate, b: &Candidate) -> bool {
    let same_place = a.path == b.path
        && a.start_line.unwrap_or(a.line) <= b.line
        && b.start_line.unwrap_or(b.line) <= a.line;
    let likeness = Likeness::of(&a.title, &b.title);
    !same_place
        && a.category.eq_ignore_ascii_case(&b.category)
        && (likeness.contained || likeness.overlap >= 600)
}

/// How alike two titles are by their significant words ([`title_words`] of three bytes or
/// more: three letters, or one character of a script written without spaces).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Likeness {
    /// One title's words are all in the other's.
    contained: bool,
    /// Shared words per thousand words of both (Jaccard).
    overlap: u32,
}

impl Likeness {
    fn of(a: &str, b: &str) -> Self {
        // Three bytes or more: short Latin words are noise; one CJK character is not.
        let words = |t: &str| -> HashSet<String> {
            title_words(&normalise_title(t))
                .into_iter()
                .filter(|w| w.len() >= 3)
                .collect()
        };
        let (a, b) = (words(a), words(b));
        if a.is_empty() || b.is_empty() {
            return Likeness {
                contained: false,
                overlap: 0,
            };
        }
        let shared = a.intersection(&b).count();
        let union = a.union(&b).count();
        Likeness {
            contained: shared == a.len().min(b.len()),
            overlap: u32::try_from(shared * 1000 / union).unwrap_or(1000),
        }
    }

    /// Loose on purpose: different passes, and one model from one review to the next,
    /// phrase the same problem differently, and the same lines of the same file already
    /// narrow it down.
    fn similar(self) -> bool {
        self.contained || self.overlap >= 300
    }
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
            part: 0,
            outcome: Ok(findings),
            elapsed: Duration::ZERO,
            tools_read: Vec::new(),
            overview: None,
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
        let merged = merge(&results, &patches(), &[], &HashSet::new());
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
    fn a_suggestion_stands_only_where_applying_it_changes_its_own_lines() {
        let suggesting = |start_line: Option<u32>, line: u32, text: &str| {
            let finding = RawFinding {
                start_line,
                suggestion: Some(text.into()),
                ..raw(line, "SQL injection", Severity::High, 90)
            };
            let merged = merge(
                &[pass("security", vec![finding])],
                &patches(),
                &[],
                &HashSet::new(),
            );
            merged.candidates[0].suggestion.clone()
        };
        let fix = "let q = query(\"?\", id);\nrun(q);";
        assert_eq!(suggesting(Some(2), 3, fix).as_deref(), Some(fix));
        // Line 1 is context, not added: still a line the comment can take.
        assert!(suggesting(Some(1), 3, fix).is_some());
        // What is there already.
        assert_eq!(
            suggesting(Some(2), 3, "let q = format!(\"{}\", id);\nrun(q);\n"),
            None
        );
        assert_eq!(suggesting(None, 3, "run(q);"), None);
        // A range the comment cannot take (line 0 is on no hunk): the comment goes on
        // line 3 alone, where two lines of replacement would double line 2.
        let cut = RawFinding {
            start_line: Some(0),
            suggestion: Some(fix.into()),
            ..raw(3, "SQL injection", Severity::High, 90)
        };
        let merged = merge(
            &[pass("security", vec![cut])],
            &patches(),
            &[],
            &HashSet::new(),
        );
        assert_eq!(merged.candidates[0].start_line, None);
        assert_eq!(
            merged.candidates[0].suggestion, None,
            "the finding stays, its suggestion goes"
        );
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
        let first = merge(&results, &patches(), &[], &HashSet::new());
        let again = merge(
            &results,
            &patches(),
            &[posted(&first.candidates[0])],
            &HashSet::new(),
        );
        assert!(again.candidates.is_empty());
        assert_eq!(again.already_posted, 1);
        assert_eq!(again.repeated.len(), 1);
        assert_eq!(
            again.repeated[0].fingerprint,
            first.candidates[0].fingerprint
        );
    }

    #[test]
    fn one_pass_reporting_two_problems_on_the_same_lines_keeps_both() {
        let in_category = |category: &str, raw: RawFinding| RawFinding {
            category: category.into(),
            ..raw
        };
        let correctness = || {
            pass(
                "correctness",
                vec![
                    in_category(
                        "security",
                        raw(2, "SQL injection in query", Severity::High, 80),
                    ),
                    in_category(
                        "reliability",
                        raw(2, "SQL query lacks a timeout", Severity::Medium, 80),
                    ),
                    // Says no more than the first: the pass said it twice.
                    in_category("bug", raw(3, "SQL injection", Severity::High, 70)),
                    // The same category in other words: said twice too.
                    in_category(
                        "security",
                        raw(2, "Possible SQL injection via format!", Severity::High, 75),
                    ),
                ],
            )
        };
        let merged = merge(&[correctness()], &patches(), &[], &HashSet::new());
        let titles: Vec<&str> = merged.candidates.iter().map(|c| c.title.as_str()).collect();
        assert_eq!(
            titles,
            ["SQL injection in query", "SQL query lacks a timeout"]
        );
        assert_eq!(merged.duplicates, 2);
        // Another pass wording the timeout its own way is the same finding.
        let results = [
            correctness(),
            pass(
                "performance",
                vec![raw(3, "No timeout on the query", Severity::Low, 60)],
            ),
        ];
        let merged = merge(&results, &patches(), &[], &HashSet::new());
        assert_eq!(merged.candidates.len(), 2);
        assert_eq!(merged.candidates[1].passes, ["correctness", "performance"]);
    }

    #[test]
    fn an_earlier_finding_is_found_again_once_by_the_most_alike() {
        let first = one(2, "SQL injection and no query timeout", &patches(), &[]);
        let earlier = [posted(&first.candidates[0])];
        // Both share words with the earlier title, but with each other too few to be
        // merged: two problems, of which only one was posted before. The other comes
        // first, so the pairing is by likeness, not by order.
        let again = merge(
            &[
                pass(
                    "performance",
                    vec![raw(2, "Query timeout missing", Severity::Medium, 80)],
                ),
                pass(
                    "security",
                    vec![raw(2, "SQL injection", Severity::High, 90)],
                ),
            ],
            &patches(),
            &earlier,
            &HashSet::new(),
        );
        assert_eq!(again.already_posted, 1);
        assert_eq!(again.repeated[0].title, "SQL injection");
        assert_eq!(again.repeated[0].fingerprint, earlier[0].fingerprint);
        let new: Vec<&str> = again.candidates.iter().map(|c| c.title.as_str()).collect();
        assert_eq!(new, ["Query timeout missing"]);
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
            &HashSet::new(),
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
    #[test]
    fn a_finding_whose_file_was_renamed_is_known_again_at_the_new_name() {
        let first = one(2, "SQL injection in query", &patches(), &[]);
        let earlier = [posted(&first.candidates[0])];
        // `src/db.rs` renamed to `src/store.rs`, its code as it was.
        let renamed = HashMap::from([(
            "src/store.rs".to_string(),
            patches().remove("src/db.rs").unwrap(),
        )]);
        let at_new_name = |title: &str, moved_away: &HashSet<&str>| {
            let finding = RawFinding {
                path: "src/store.rs".into(),
                ..raw(2, title, Severity::High, 90)
            };
            merge(
                &[pass("security", vec![finding])],
                &renamed,
                &earlier,
                moved_away,
            )
        };
        let gone = HashSet::from([earlier[0].id.as_str()]);
        for title in [
            "SQL injection in query",
            "Query built with format!: SQL injection",
        ] {
            let again = at_new_name(title, &gone);
            assert!(
                again.candidates.is_empty(),
                "{title}: {:#?}",
                again.candidates
            );
            assert_eq!(again.repeated[0].fingerprint, earlier[0].fingerprint);
        }
        // Another problem on that code is new.
        assert_eq!(
            at_new_name("Unbounded result set", &gone).candidates.len(),
            1
        );
        // While the code is still at `src/db.rs`, the same code elsewhere is another place.
        let elsewhere = at_new_name("SQL injection in query", &HashSet::new());
        assert_eq!(elsewhere.candidates.len(), 1);
        assert_eq!(elsewhere.already_posted, 0);
    }

    #[test]
    fn a_findings_code_is_found_in_a_whole_file_wherever_it_moved() {
        let finding = Finding {
            site: site("src/db.rs", "let q = format!(\"{}\", id);\nrun(q);"),
            start_line: Some(2),
            line: 3,
            ..Finding::sample("src/db.rs", "SQL injection")
        };
        let moved = "use x;\n\nfn main() {\n    let q = format!(\"{}\", id);\n    run(q);\n}\n";
        assert!(still_in_text(&finding, moved), "indented and lower down");
        assert!(!still_in_text(&finding, "let q = bind(id);\nrun(q);\n"));
        assert!(
            still_in_text(&Finding::sample("src/db.rs", "no site"), ""),
            "nothing to look for"
        );
        let block = ["    let q = format!(\"{}\", id);", "", "run(q);"];
        assert!(
            block_at(&block, moved).is_some(),
            "blank lines and indentation fold away"
        );
        assert!(
            block_at(&block, "run(q);\nlet q = format!(\"{}\", id);\n").is_none(),
            "in order"
        );
        assert_eq!(
            block_at(&["  ", ""], "anything"),
            None,
            "nothing to look for"
        );
    }

    #[test]
    fn titles_in_scripts_without_spaces_are_compared_by_their_characters() {
        // A review written in Japanese (`language: ja`): the later push words the same
        // problem differently, with no space anywhere for words to split at.
        let first = one(2, "クエリのSQLインジェクション", &patches(), &[]);
        let earlier = [posted(&first.candidates[0])];
        let again = one(
            2,
            "SQLインジェクションの脆弱性があるクエリ",
            &patches(),
            &earlier,
        );
        assert_eq!(again.already_posted, 1, "{:#?}", again.candidates);
        let other = one(2, "結果セットに上限がない", &patches(), &earlier);
        assert_eq!(other.candidates.len(), 1, "another problem is new");
        assert_eq!(
            title_words(&normalise_title("unwrapの使用、パニック")),
            ["unwrap", "の使", "使用", "パニ", "ニッ", "ック"]
        );
        assert_eq!(title_words("a 式"), ["a", "式"]);
    }
}
