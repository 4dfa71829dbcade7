//! The review's summary body: what was found, what was reviewed and what was not, what
//! was filtered, and what it cost. A reader must be able to tell from it alone how much
//! of the PR Parley actually looked at.

use crate::config::ConfigWarning;
use crate::llm::UsageTally;
use crate::markers;
use crate::ports::Severity;
use crate::review::filter::Filtered;
use crate::review::inputs::NotReviewed;
use crate::review::merge::Candidate;
use serde::{Deserialize, Serialize};

/// The hidden marker on a review summary: which head it covers, so a redelivered job (or
/// a worker that died after posting) finds the review on GitHub and does not post again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewMarker {
    pub head_sha: String,
    pub base_sha: String,
    pub trigger: String,
    /// The `@parley full review` comment a re-review of an already reviewed head answers:
    /// that head then carries two reviews, and each run must find only its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<u64>,
    /// Some passes failed or files were left out, so "nothing blocking" meant "not known":
    /// the gate concluded `neutral`, not `success`. Kept here so a later re-evaluation of
    /// the gate ([`crate::review::regate`]) reaches the same judgment without a store field.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// The earlier findings the review changes, so that the retry of a worker that died
    /// before storing them still does ([`crate::review::lifecycle::ChangedIds`]).
    #[serde(
        default,
        skip_serializing_if = "crate::review::lifecycle::ChangedIds::is_empty"
    )]
    pub changed: crate::review::lifecycle::ChangedIds,
}

/// What learning did to this review: the threshold in force and where it came from, the
/// learnings applied, the findings suppressed and by what, and the judge pass.
pub struct LearningReport<'a> {
    pub thresholds: &'a crate::learning::apply::Thresholds,
    pub applied: Vec<&'a str>,
    pub suppressed: &'a [crate::learning::apply::Suppressed],
    pub judge: &'a crate::review::learned::JudgeStatus,
    /// Reported findings the judge doubts (see [`Candidate::doubt`]).
    pub doubted: Vec<&'a Candidate>,
}

impl LearningReport<'_> {
    fn render(&self) -> String {
        use crate::learning::stats::ThresholdSource;
        use crate::review::learned::JudgeStatus;
        let t = self.thresholds;
        let source = match t.source {
            ThresholdSource::Default => "the default".to_string(),
            ThresholdSource::File => "`review.minConfidence` in `.parley.yml`".to_string(),
            ThresholdSource::Tuned { decided } => {
                format!("tuned from {decided} accepted or rejected findings on this repository")
            }
        };
        let mut out = format!("- Confidence threshold: {} ({source})", t.base);
        let adjusted = t.describe_adjustments();
        if !adjusted.is_empty() {
            out.push_str(&format!("; adjusted by learnings: {}", adjusted.join(", ")));
        }
        out.push_str(".\n");
        if !self.applied.is_empty() {
            out.push_str(&format!(
                "- Learnings applied: {}\n",
                self.applied
                    .iter()
                    .map(|id| format!("`{id}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        match self.judge {
            JudgeStatus::Ran {
                dropped,
                rescored,
                doubted,
            } => {
                out.push_str(&format!(
                    "- Judge pass: {dropped} dropped, {rescored} re-scored"
                ));
                if *doubted > 0 {
                    out.push_str(&format!(", {doubted} doubted but kept"));
                }
                out.push_str(".\n");
            }
            JudgeStatus::Failed(why) => out.push_str(&format!(
                "- ⚠️ Judge pass did not run ({why}); the specialists' confidence stands.\n"
            )),
            JudgeStatus::Off | JudgeStatus::Idle => {}
        }
        // The judge may not take a blocking finding out of the gate; where it would have,
        // its case is said where a reader sees it, not folded away.
        if !self.doubted.is_empty() {
            out.push_str(
                "- The judge doubts these findings, but they are at a severity the merge gate blocks on, so they stand until the code changes or someone entitled to lift them resolves them:\n",
            );
            for c in &self.doubted {
                out.push_str(&format!(
                    "  - {} **{}** (`{}:{}`) — {}\n",
                    c.severity.name(),
                    c.title,
                    c.path,
                    c.line,
                    c.doubt.as_deref().unwrap_or_default()
                ));
            }
        }
        if !self.suppressed.is_empty() {
            out.push_str(&format!(
                "\n<details><summary>{} finding(s) suppressed</summary>\n\n",
                self.suppressed.len()
            ));
            for s in self.suppressed {
                out.push_str(&format!(
                    "- **{}** (`{}:{}`) — {}\n",
                    s.candidate.title, s.candidate.path, s.candidate.line, s.why
                ));
            }
            out.push_str("\n</details>\n");
        }
        out
    }
}

/// Why a review read only some of the PR's files, each whole: the others' changes were
/// reviewed before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Narrowed {
    /// After a force-push: the files whose changes differ from those reviewed at the
    /// last reviewed head.
    ForcePush,
    /// After the PR moved to another base branch: what the move brings into its diff.
    NewBase {
        /// Files whose changes read as they did against the base the PR left.
        reviewed_before: usize,
        /// Files the new base already holds as the head has them.
        already_on_base: usize,
    },
}

impl Narrowed {
    /// Said after the reviewed range, where the check names what was reviewed.
    pub fn after(&self) -> String {
        match self {
            Narrowed::ForcePush => " after a force-push".to_string(),
            Narrowed::NewBase {
                reviewed_before: 0,
                already_on_base: 0,
            } => " after a move to another base".to_string(),
            Narrowed::NewBase {
                reviewed_before,
                already_on_base,
            } => format!(
                " after a move to another base, not reading again {} whose changes read as against the old base and {} the new base already holds",
                files(*reviewed_before),
                files(*already_on_base)
            ),
        }
    }
}

fn files(n: usize) -> String {
    match n {
        1 => "1 file".to_string(),
        n => format!("{n} files"),
    }
}

/// What the summary says about the review beyond its findings: where it ran and what it
/// cost, which the caller knows.
pub struct Framing<'a> {
    /// Web root of the repository (`https://github.com/owner/name`), for links.
    pub repo_url: &'a str,
    pub head_sha: &'a str,
    pub base_sha: &'a str,
    pub incremental: bool,
    /// A review of some of the PR's files, each whole, the others' changes having been
    /// reviewed before.
    pub narrowed: Option<&'a Narrowed>,
    pub trigger: &'a str,
    /// Set for a full re-review of an already reviewed head (see [`ReviewMarker::request`]).
    pub rerun_of: Option<u64>,
    pub guidelines: &'a [crate::repo::Guideline],
    pub config_warnings: &'a [ConfigWarning],
    /// What the PR would change in the rules later reviews go by (see
    /// [`crate::review::rules_change`]), said above the findings.
    pub rules_changed: &'a [String],
    pub usage: &'a UsageTally,
    /// What the PR has cost so far, this run included (reviews and conversation turns).
    pub spent_on_pr: Option<crate::llm::usage::SpentOnPr>,
    /// The handles posted text must not mention (see [`crate::sanitize::model_text`]).
    pub silenced: &'a crate::mention::Handles,
}

/// Everything the summary reports.
pub struct Summary<'a> {
    pub framing: Framing<'a>,
    pub files_reviewed: Vec<&'a str>,
    pub not_reviewed: &'a [NotReviewed],
    pub listing_truncated: bool,
    /// Whether the review saw less than it should have (see
    /// [`crate::review::analyse::Analysis::partial`]). Nothing blocking then means "not
    /// known", and the gate says `neutral` rather than `success`.
    pub partial: bool,
    pub passes_ok: Vec<&'a str>,
    /// `(specialist, reason)`.
    pub passes_failed: Vec<(&'a str, String)>,
    /// How many parts the diff was read in (each by every pass); 1 when it fit one budget.
    pub parts: usize,
    /// Passes the change gave nothing to look at.
    pub passes_not_needed: &'a [crate::review::specialists::NotNeeded],
    /// What is said of the issues the PR says it resolves: those read, those GitHub
    /// would not give (see [`crate::review::linked_issues::Linked::said`]).
    pub linked_issues: Option<&'a str>,
    pub filtered: &'a Filtered,
    pub duplicates: usize,
    pub already_posted: usize,
    /// Earlier findings the change fixed, now resolved: one line each
    /// ([`fixed_lines`]).
    pub fixed_earlier: Vec<String>,
    /// Earlier findings this review closes (summary-only ones a full review no longer
    /// found), reopens (resolved ones found again) or resolves as fixed, by id; also
    /// carried in the marker ([`ReviewMarker::changed`]).
    pub changed: crate::review::lifecycle::ChangedIds,
    /// Earlier blocking summary-only findings not found again whose code is unchanged:
    /// still open.
    pub held_earlier: usize,
    /// Retrieval's collapsed "Context used" section; empty when nothing was used.
    pub context_used: &'a str,
    /// What the change does, a paragraph a part ([`crate::review::overview`]).
    pub overview: Vec<String>,
    pub learning: LearningReport<'a>,
}

impl Summary<'_> {
    /// The body for a review whose findings are inline, or, with `fallback`, for the
    /// summary-only review posted when GitHub refused the inline comments: every finding
    /// is then listed here with a link to its line, so none is lost.
    pub fn render(&self, fallback: bool) -> String {
        let mut out = String::from("## Parley review\n\n");
        out.push_str(&self.headline());
        if !self.framing.rules_changed.is_empty() {
            out.push_str(
                "\n\n> [!WARNING]\n> **This PR changes the rules Parley reviews by.** It is reviewed by the default branch's; once it is merged, later PRs are reviewed by these:\n",
            );
            for line in self.framing.rules_changed {
                out.push_str(&format!("> - {line}\n"));
            }
        }
        // Under the headline and any warning, above the findings.
        out.push_str(&crate::review::overview::render(&self.overview));
        if fallback && !self.filtered.inline.is_empty() {
            out.push_str(
                "\n\nGitHub did not accept these as inline comments, so they are listed here:\n\n",
            );
            for finding in &self.filtered.inline {
                out.push_str(&self.finding_with_body(finding));
            }
        }
        if !self.filtered.in_summary.is_empty() {
            out.push_str(
                "\n\n### Findings listed here only\n\nOff the diff, over `review.maxInlineComments`, under `review.inlineMinSeverity`, or the same problem as an inline finding that names them:\n\n",
            );
            for finding in &self.filtered.in_summary {
                out.push_str(&self.finding_with_body(finding));
            }
        }
        let mut reviewed = self.scope();
        reviewed.push_str(&self.filter_notes());
        reviewed.push_str(&self.learning.render());
        if !self.context_used.is_empty() {
            reviewed.push('\n');
            reviewed.push_str(self.context_used);
        }
        reviewed.push_str(&self.cost());
        if self.needs_attention() {
            out.push_str("\n\n### What was reviewed\n\n");
            out.push_str(&reviewed);
        } else {
            // Read when wanted, not on every review: a complete review has nothing in it
            // that anyone must act on, and its files and passes would otherwise push the
            // next review's findings out of sight.
            out.push_str(&format!(
                "\n\n<details><summary>What was reviewed: {}</summary>\n\n{reviewed}\n</details>\n",
                self.in_brief()
            ));
        }
        // Much of it is the model's words or quotes the repository's (the judge's reasons,
        // learnings, tool calls, file names): cleaned as a whole, as answers are, so no
        // section can carry a marker or wake a bot.
        let out = crate::sanitize::model_text(&out, self.framing.silenced);
        markers::append(
            &out,
            markers::kind::REVIEW,
            &ReviewMarker {
                head_sha: self.framing.head_sha.to_string(),
                base_sha: self.framing.base_sha.to_string(),
                trigger: self.framing.trigger.to_string(),
                request: self.framing.rerun_of,
                partial: self.partial,
                changed: self.changed.clone(),
            },
        )
    }

    /// Whether what was reviewed says something someone should see without asking: a
    /// pass that failed, a partial review, any file left out (over the budget, or skipped
    /// or marked generated on purpose: what was not looked at is never folded away),
    /// settings in `.parley.yml` that were rejected. Then it is shown open, as a section.
    fn needs_attention(&self) -> bool {
        self.partial
            || !self.passes_failed.is_empty()
            || !self.not_reviewed.is_empty()
            || self.listing_truncated
            || !self.framing.config_warnings.is_empty()
    }

    /// The collapsed section's title: how much was read, by how many passes.
    fn in_brief(&self) -> String {
        let files = self.files_reviewed.len();
        let passes = self.passes_ok.len();
        format!(
            "{files} file{}, {passes} specialist pass{}",
            if files == 1 { "" } else { "s" },
            if passes == 1 { "" } else { "es" }
        )
    }

    /// No pass ran: no changed file was left to read (and nothing still uses what the
    /// change deletes). "No findings" would then claim the change was checked.
    pub fn nothing_ran(&self) -> bool {
        self.passes_ok.is_empty() && self.passes_failed.is_empty()
    }

    fn headline(&self) -> String {
        let reported: Vec<&Candidate> = self.filtered.reported().collect();
        if reported.is_empty()
            && self.nothing_ran()
            && let Some(why) =
                crate::review::specialists::nothing_to_look_at(self.passes_not_needed)
        {
            return format!("Nothing to review: {why}.");
        }
        if reported.is_empty() && self.nothing_ran() {
            let why =
                crate::review::inputs::why_nothing_read(self.not_reviewed, self.listing_truncated);
            let see = if self.not_reviewed.is_empty() {
                ""
            } else {
                " (see **Not reviewed** below)"
            };
            return format!("Nothing to review: {why}{see}.");
        }
        if reported.is_empty() {
            return "No findings at or above the confidence threshold.".to_string();
        }
        let counts: Vec<String> = [
            Severity::Critical,
            Severity::High,
            Severity::Medium,
            Severity::Low,
            Severity::Nit,
        ]
        .into_iter()
        .filter_map(|severity| {
            let n = reported.iter().filter(|c| c.severity == severity).count();
            (n > 0).then(|| format!("{n} {}", severity.name()))
        })
        .collect();
        format!(
            "**{} finding{}**: {}.",
            reported.len(),
            if reported.len() == 1 { "" } else { "s" },
            counts.join(", ")
        )
    }

    fn finding_with_body(&self, finding: &Candidate) -> String {
        let mut out = format!(
            "- **[{}] {}** ({}, confidence {}%) — [{}]({})\n  {}\n",
            finding.severity.name().to_uppercase(),
            finding.title,
            finding.category,
            finding.confidence,
            location(finding),
            line_link(self.framing.repo_url, self.framing.head_sha, finding),
            finding.body.replace('\n', "\n  ")
        );
        if let Some(note) = finding.doubt_note() {
            out.push_str(&format!("  > {note}\n"));
        }
        out
    }

    fn scope(&self) -> String {
        let mut out = format!(
            "- {} review of `{}`…`{}`\n",
            if self.framing.incremental {
                "Incremental"
            } else {
                "Full"
            },
            short(self.framing.base_sha),
            short(self.framing.head_sha)
        );
        match self.framing.narrowed {
            Some(Narrowed::ForcePush) => out.push_str(&format!(
                "- After a force-push: the files whose changes differ from those reviewed at `{}`, each whole\n",
                short(self.framing.base_sha)
            )),
            Some(Narrowed::NewBase {
                reviewed_before: 0,
                already_on_base: 0,
            }) => out.push_str(
                "- After the move to another base: the files whose changes it brings, each whole\n",
            ),
            Some(Narrowed::NewBase {
                reviewed_before,
                already_on_base,
            }) => out.push_str(&format!(
                "- After the move to another base: the files whose changes it brings, each whole; not read again: {reviewed_before} whose changes read as they did against the old base, {already_on_base} the new base already holds as this head has them\n"
            )),
            None => {}
        }
        out.push_str(&format!(
            "- Files reviewed: {}\n",
            if self.files_reviewed.is_empty() && !self.nothing_ran() {
                "none changed; the code that still uses what the change deletes".to_string()
            } else if self.files_reviewed.is_empty() {
                "none".to_string()
            } else {
                self.files_reviewed
                    .iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ));
        if self.parts > 1 {
            out.push_str(&format!(
                "- Read in {} parts, each by every pass: the diff is larger than `review.maxPatchTokens`\n",
                self.parts
            ));
        }
        if self.nothing_ran() {
            out.push_str(if self.passes_not_needed.is_empty() {
                "- Specialists: none ran (no file to review)\n"
            } else {
                "- Specialists: none ran (none asked for has anything to look at)\n"
            });
        } else if self.passes_ok.is_empty() {
            // Read in parts, every pass failed on one of them (each said below).
            out.push_str("- Specialists: none read every part of the change\n");
        } else {
            out.push_str(&format!("- Specialists: {}\n", self.passes_ok.join(", ")));
        }
        for (pass, reason) in &self.passes_failed {
            out.push_str(&format!(
                "- ⚠️ The **{pass}** pass failed ({reason}); its area was not reviewed.\n"
            ));
        }
        if let Some(line) = crate::review::specialists::not_needed_line(self.passes_not_needed) {
            out.push_str(&format!(
                "- Not needed, the change gives them nothing to look at: {line}\n"
            ));
        }
        if let Some(line) = self.linked_issues {
            out.push_str(&format!("- {line}\n"));
        }
        if self.framing.guidelines.is_empty() {
            out.push_str("- Guideline files applied: none found on the base branch\n");
        } else {
            out.push_str(&format!(
                "- Guideline files applied (base branch): {}\n",
                self.framing
                    .guidelines
                    .iter()
                    .map(|g| format!("`{}`", g.path))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !self.not_reviewed.is_empty() || self.listing_truncated {
            out.push_str("\n**Not reviewed:**\n\n");
            for line in crate::review::inputs::left_out_lines(self.not_reviewed) {
                out.push_str(&format!("- {line}\n"));
            }
            if self.listing_truncated {
                out.push_str(&format!("- {}\n", crate::review::inputs::LISTING_CUT_OFF));
            }
        }
        for warning in self.framing.config_warnings {
            out.push_str(&format!("- ⚠️ `.parley.yml`: {warning}\n"));
        }
        out
    }

    fn filter_notes(&self) -> String {
        let mut out = String::new();
        let below = self.filtered.below_threshold.len();
        if below > 0 {
            out.push_str(&format!(
                "- {below} finding{} below the confidence threshold ({}) not shown; set `review.minConfidence: {}` to include {}.\n",
                if below == 1 { "" } else { "s" },
                self.filtered.min_confidence,
                self.filtered.threshold_to_include_all().unwrap_or(0),
                if below == 1 { "it" } else { "them" }
            ));
        }
        if self.duplicates > 0 {
            out.push_str(&format!(
                "- {} duplicate finding(s) across specialists merged.\n",
                self.duplicates
            ));
        }
        if self.already_posted > 0 {
            out.push_str(&format!(
                "- {} finding(s) already reported on this PR not repeated.\n",
                self.already_posted
            ));
        }
        if !self.fixed_earlier.is_empty() {
            out.push_str(&format!(
                "- ✅ {} earlier finding(s) fixed by the new commits, now resolved:\n",
                self.fixed_earlier.len()
            ));
            for line in &self.fixed_earlier {
                out.push_str(&format!("  - {line}\n"));
            }
        }
        if !self.changed.closed.is_empty() {
            out.push_str(&format!(
                "- {} earlier finding(s) listed only in a summary were not found again by this review of their whole file and are closed.\n",
                self.changed.closed.len()
            ));
        }
        if self.held_earlier > 0 {
            out.push_str(&format!(
                "- {} earlier blocking finding(s) listed only in a summary were not found again, but their code has not changed, so they stay open: push a fix, or someone entitled can {} them.\n",
                self.held_earlier,
                self.framing.silenced.command("dismiss")
            ));
        }
        if !self.changed.reopened.is_empty() {
            out.push_str(&format!(
                "- {} resolved finding(s) were found again unchanged and are open again.\n",
                self.changed.reopened.len()
            ));
        }
        out
    }

    fn cost(&self) -> String {
        let usage = self.framing.usage.usage;
        let dollars = match self.framing.usage.cost_usd() {
            Some(usd) => format!("≈ ${usd:.4}"),
            None => format!(
                "≥ ${:.4} (some models have no price)",
                self.framing.usage.priced_usd
            ),
        };
        let mut line = format!(
            "- Cost: {} LLM calls, {}, {dollars}",
            self.framing.usage.calls,
            usage.describe()
        );
        if usage.cache_read_tokens + usage.cache_write_tokens > 0 {
            line.push_str(&format!(
                " (prompt cache: {} tokens read, {} written; saved ≈ ${:.4})",
                usage.cache_read_tokens, usage.cache_write_tokens, self.framing.usage.saved_usd
            ));
        }
        if let Some(total) = self.framing.spent_on_pr {
            line.push_str(&format!(
                "; this PR so far: {} calls, ≈ ${:.4}",
                total.calls,
                total.cost_micro_usd as f64 / 1_000_000.0
            ));
        }
        line.push('\n');
        line
    }
}

fn location(finding: &Candidate) -> String {
    match finding.start_line {
        Some(start) => format!("{}:{}-{}", finding.path, start, finding.line),
        None => format!("{}:{}", finding.path, finding.line),
    }
}

/// A link to the finding's lines in the file at the reviewed head.
pub fn line_link(repo_url: &str, head_sha: &str, finding: &Candidate) -> String {
    let anchor = match finding.start_line {
        Some(start) => format!("L{start}-L{}", finding.line),
        None => format!("L{}", finding.line),
    };
    format!("{repo_url}/blob/{head_sha}/{}#{anchor}", finding.path)
}

/// The first few of `files`, for a line of a check run.
pub(crate) fn named_files(files: &[&str]) -> String {
    const NAMED: usize = 5;
    let mut named: Vec<String> = files.iter().take(NAMED).map(|f| format!("`{f}`")).collect();
    if files.len() > NAMED {
        named.push(format!("and {} more", files.len() - NAMED));
    }
    if named.is_empty() {
        "no file".to_string()
    } else {
        named.join(", ")
    }
}

pub fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

/// A fixed finding as the summary lists it: its id, where, and its title (model text
/// about the PR's code, cleaned as every posted title is).
pub fn fixed_lines(fixed: &[crate::ports::Finding]) -> Vec<String> {
    fixed
        .iter()
        .map(|f| {
            format!(
                "`{}` {}:{}: {}",
                f.id,
                crate::sanitize::inline_name(&f.path),
                f.line,
                crate::sanitize::inline_name(&f.title)
            )
        })
        .collect()
}
