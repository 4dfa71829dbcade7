//! What a review finds, before anything is posted.
//!
//! The worker and `parley review` in a terminal run exactly this: specialist passes,
//! merge, sanitising, learned dismissals and patterns, the judge, the thresholds. Only
//! where the change comes from (GitHub or a local git range) and what happens to the
//! result (a posted review with a check, or printed findings) differ, and those stay with
//! the callers.

use crate::concurrently::join2;
use crate::config::RepoConfig;
use crate::learning::apply::{Applied, Suppressed};
use crate::learning::memory::RepoMemory;
use crate::llm::MeteredLlm;
use crate::mention::Handles;
use crate::ports::github::{ChangedFile, FileStatus};
use crate::ports::{Finding, Store};
use crate::repo::Guideline;
use crate::retrieval::{Recall, Retrieved, Source, queries};
use crate::review::diff::Patch;
use crate::review::error::ReviewError;
use crate::review::filter::{self, Filtered};
use crate::review::findings::PassResult;
use crate::review::inputs::{self, ReviewInputs};
use crate::review::learned::{self, JudgeStatus};
use crate::review::linked_issues::Linked;
use crate::review::merge::{self, Merged};
use crate::review::pull_files::PullFiles;
use crate::review::specialists::{self, NotNeeded, PassProgress};
pub use crate::review::summary::Framing;
use crate::review::{grounding, prompts, summary};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// The change under review and what surrounds it.
pub struct Subject<'a> {
    /// `owner/name` (for a local change: the origin remote's, else the directory name),
    /// as prompts and people read it.
    pub repo: &'a str,
    /// Where the repository's records (learnings, history) and its organisation's
    /// learnings are kept.
    pub tenant: &'a crate::tenancy::Tenant,
    /// The repository at the head, or why it could not be read (the review then goes on
    /// from the diff alone, and says so).
    pub code: Result<&'a dyn crate::ports::code::Codebase, String>,
    /// The PR number; 0 for a local change, which has no PR-scoped learnings.
    pub number: u64,
    pub title: &'a str,
    pub description: &'a str,
    pub base_sha: &'a str,
    pub head_sha: &'a str,
    /// Only the commits since the last reviewed head (the worker's `synchronize`).
    pub incremental: bool,
    /// The files this review covers.
    pub files: Vec<ChangedFile>,
    /// The file listing stopped short (GitHub's cap): the review is partial.
    pub truncated: bool,
    /// Every file the PR changes (as far as GitHub lists them), with its hunks: where
    /// inline comments may go.
    pub pull: &'a PullFiles,
    pub guidelines: &'a [Guideline],
    /// The issues the PR's description says it resolves
    /// ([`crate::review::linked_issues`]): what it is for.
    pub issues: &'a Linked,
    /// What the default branch's `.gitattributes` marks generated or vendored: left out
    /// of review.
    pub attributes: &'a crate::repo::Attributes,
    /// Findings already on the PR: not reported twice, and named to the model.
    pub earlier: &'a [Finding],
    /// Where related code, past findings and threads are searched; `None` reviews without
    /// them (`parley review` in a terminal has no corpus).
    pub recall: Option<Recall<'a>>,
}

/// The findings of one review and everything its summary reports.
pub struct Analysis {
    pub inputs: ReviewInputs,
    pub results: Vec<PassResult>,
    pub merged: Merged,
    pub suppressed: Vec<Suppressed>,
    pub judge: JudgeStatus,
    pub filtered: Filtered,
    pub applied: Applied,
    pub memory: RepoMemory,
    /// What retrieval put in the prompts (empty when it was off or found nothing).
    pub retrieved: Retrieved,
    /// The summary's "Context used" section; empty when nothing was used.
    pub context_used: String,
    /// Passes left out because the change gave them nothing to look at.
    pub not_needed: Vec<NotNeeded>,
    /// What the summary says of the issues the PR says it resolves.
    pub linked_issues: Option<String>,
}

/// Review `subject`. Errors only when every pass failed; a failed judge, unreadable
/// memory or a single failed pass leave a review that says so.
pub async fn analyse(
    store: &dyn Store,
    llm: &MeteredLlm,
    config: &RepoConfig,
    subject: &Subject<'_>,
    silenced: &Handles,
    progress: &dyn PassProgress,
) -> Result<Analysis, ReviewError> {
    let inputs = inputs::select(
        subject.files.clone(),
        subject.truncated,
        &config.review,
        subject.attributes,
    );

    // What the repository taught Parley and what it learned from earlier findings (the
    // threshold in force, the learnings for the prompts, what to suppress), and what it
    // remembers of earlier PRs, read at once: one retrieval for every pass and the judge.
    let (memory, retrieved) = join2(
        learned::load(store, &subject.tenant.repo, &subject.tenant.org),
        related(config, subject, &inputs),
    )
    .await;
    let mut context_used = if retrieved.used() {
        retrieved.context_used(silenced)
    } else {
        String::new()
    };
    // Deleted files are not reviewed (nothing is left to comment on), but what they
    // defined may still be called: their patches, parsed with the PR's, go to the code
    // reader.
    let deleted: Vec<(&str, &Patch)> = subject
        .files
        .iter()
        .filter(|f| f.status == FileStatus::Removed)
        .filter_map(|f| Some((f.filename.as_str(), subject.pull.patches.get(&f.filename)?)))
        .collect();
    // A diff too large for one budget is read in parts, each with the code around its
    // own files (what the deletions leave still in use goes with the first).
    let parts = inputs.split();
    let code_contexts: Vec<crate::context::CodeContext> = parts
        .iter()
        .enumerate()
        .map(|(i, files)| match &subject.code {
            Ok(code) => crate::context::assemble(
                *code,
                files,
                if i == 0 { &deleted } else { &[] },
                config.review.context_max_tokens as usize,
            ),
            Err(_) => crate::context::CodeContext::default(),
        })
        .collect();
    // A change that only deletes files is reviewed when code still uses what it deleted.
    let to_review = !inputs.files.is_empty() || code_contexts.iter().any(|c| c.still_used > 0);
    if to_review {
        context_used.push_str(&code_read(&subject.code, &code_contexts));
    }
    let base = crate::learning::apply::Base::for_config(config, &memory.stats);
    let base_threshold = base.threshold;
    let path_refs: Vec<&str> = subject.pull.paths.iter().map(String::as_str).collect();
    let applied = crate::learning::apply::for_review(&memory, subject.number, &path_refs, base);
    // Maintainers' learnings are part of the prefix every pass and the judge share;
    // anyone else's (a PR's author, a participant) go to the passes only, after it: the
    // judge only ever drops findings, and only a maintainer's word may make it.
    let (maintainers, others): (Vec<_>, Vec<_>) = applied
        .relevant
        .iter()
        .cloned()
        .partition(|l| l.authority().may_loosen());
    let memory_lines = crate::learning::apply::prompt_lines(&maintainers, false);
    let passes_only = crate::learning::apply::prompt_section(
        &crate::learning::apply::prompt_lines(&others, false),
    );
    let earlier_lines: Vec<String> = subject
        .earlier
        .iter()
        .map(|f| format!("{}:{} {}", f.path, f.line, f.title))
        .collect();

    let reviewed: Vec<&str> = inputs.files.iter().map(|f| f.path.as_str()).collect();
    let chosen = specialists::select(&config.review, !subject.guidelines.is_empty(), &reviewed);
    let deleted_paths: Vec<&str> = deleted.iter().map(|(path, _)| *path).collect();
    // Each part's passes share one message: the part's diff, and everything else the
    // same for all parts (so that a part's passes and its judge share a cached prefix).
    let shared: Vec<String> = parts
        .iter()
        .enumerate()
        .map(|(i, files)| {
            let not_shown = in_other_parts(&parts, i, &inputs.not_reviewed);
            prompts::user_message(&prompts::ReviewContext {
                repo: subject.repo,
                title: subject.title,
                description: subject.description,
                range: format!(
                    "{}..{}",
                    summary::short(subject.base_sha),
                    summary::short(subject.head_sha)
                ),
                part: (parts.len() > 1).then_some((i + 1, parts.len())),
                whole_pr: subject.incremental.then(|| subject.pull.paths.clone()),
                guidelines: subject.guidelines,
                memory: &memory_lines,
                earlier: &earlier_lines,
                related: &retrieved.prompt,
                code: &code_contexts[i].rendered,
                files,
                not_shown: &not_shown,
                deleted: &deleted_paths,
                language: config.language.as_ref(),
                issues: &subject.issues.read,
            })
        })
        .collect();
    // One tool allowance for the review, however many parts: every part's passes read
    // within it, a share kept for each part's judge.
    let toolbox = match &subject.code {
        Ok(code) if config.review.tools.enabled => {
            // A change to one file asks from it; several, from none of them.
            let asking = match subject.pull.paths.as_slice() {
                [one] => Some(one.as_str()),
                _ => None,
            };
            let toolbox =
                crate::context::tools::Toolbox::new(*code, config.review.tools).asked_from(asking);
            Some(if config.review.judge {
                toolbox.keeping_shares_for_last(chosen.run.len() * parts.len(), parts.len())
            } else {
                toolbox
            })
        }
        _ => None,
    };
    let results = if !to_review {
        Vec::new()
    } else {
        let inputs: Vec<specialists::PartInput<'_>> = shared
            .iter()
            .map(|message| specialists::PartInput {
                message,
                tools: toolbox.as_ref(),
            })
            .collect();
        specialists::run_all(
            llm,
            &chosen.run,
            &inputs,
            &passes_only,
            config
                .review
                .overview
                .then(|| crate::review::overview::writer(&chosen.run))
                .flatten(),
            Duration::from_secs(u64::from(config.review.pass_timeout_secs)),
            progress,
        )
        .await
    };
    if let Some(first) = all_failed(&results) {
        return Err(ReviewError::AllPassesFailed(first.clone()));
    }

    let mut merged = merge::merge(
        &results,
        &subject.pull.patches,
        subject.earlier,
        &moved_away(subject.earlier, subject.pull),
    );
    // The model read the PR (user text): what it wrote is posted only once cleaned of
    // markers, hidden text and mentions of Parley.
    for candidate in &mut merged.candidates {
        sanitize_candidate(candidate, silenced);
    }
    // Code the review could not have seen first, then dismissals and false-positive
    // patterns (no model), then the judge.
    let (grounded, ungrounded) = grounding::ground(
        merged.candidates.clone(),
        &subject.pull.patches,
        subject.code.as_ref().ok().copied(),
    );
    let (kept, mut suppressed) =
        crate::learning::apply::suppress(grounded, &applied, &memory, &config.gate);
    suppressed.extend(ungrounded);
    let (kept, judge, judge_read) = if config.review.judge {
        if let Some(toolbox) = &toolbox {
            toolbox.release_what_was_kept();
        }
        // Each part's findings are judged with that part's diff (its passes' cached
        // prefix), the parts' judges side by side.
        let past_findings = retrieved.section(&[Source::Finding]);
        let judges = by_part(kept, &inputs, &results)
            .into_iter()
            .zip(&shared)
            .map(|(kept, shared)| {
                learned::judge(
                    llm,
                    kept,
                    subject.guidelines,
                    &applied,
                    &memory,
                    &subject.pull.patches,
                    learned::JudgeText {
                        past_findings: &past_findings,
                        shared,
                        tools: toolbox.as_ref(),
                    },
                )
            })
            .collect();
        let mut judged = learned::Judged::together(crate::concurrently::join_all(judges).await);
        // The judge read user text too: its reasons are posted only once cleaned.
        for doubt in judged.kept.iter_mut().filter_map(|c| c.doubt.as_mut()) {
            *doubt = crate::sanitize::model_text(doubt, silenced);
        }
        suppressed.extend(judged.dropped);
        (judged.kept, judged.status, judged.read)
    } else {
        (kept, JudgeStatus::Off, Vec::new())
    };
    context_used.push_str(&tools_read(
        &results,
        &judge_read,
        toolbox.as_ref(),
        parts.len() > 1,
    ));
    let filtered = filter::apply_with(
        kept,
        base_threshold,
        |c| applied.thresholds.for_candidate(c),
        filter::Inline {
            max: config.review.max_inline_comments,
            min_severity: config.review.inline_min_severity,
            blocking: &config.gate.block_on,
        },
    );
    Ok(Analysis {
        inputs,
        results,
        merged,
        suppressed,
        judge,
        filtered,
        applied,
        memory,
        retrieved,
        context_used,
        not_needed: if to_review {
            chosen.not_needed
        } else {
            Vec::new()
        },
        linked_issues: if to_review {
            subject.issues.said()
        } else {
            None
        },
    })
}

/// The ids of earlier findings whose code is no longer where they were posted: the PR no
/// longer changes their file (renamed since), or its diff no longer has their code (moved
/// into another file, or removed). A finding said again on that code elsewhere is then
/// known as the earlier one ([`merge::merge`]) rather than posted twice. None while
/// GitHub's listing stopped short: a path past its cap is not known to be gone; nor a
/// finding in a file GitHub sent no patch for.
fn moved_away<'e>(earlier: &'e [Finding], pull: &PullFiles) -> HashSet<&'e str> {
    if pull.truncated {
        return HashSet::new();
    }
    let changed: HashSet<&str> = pull.paths.iter().map(String::as_str).collect();
    earlier
        .iter()
        .filter(|finding| {
            !changed.contains(finding.path.as_str())
                || pull
                    .patches
                    .get(&finding.path)
                    .is_some_and(|patch| !merge::still_at(finding, patch))
        })
        .map(|finding| finding.id.as_str())
        .collect()
}

/// Related code from earlier PRs, past findings on it and review threads, for the changed
/// code under review (this PR's own documents left out). It fills the room the patch
/// token budget (`review.maxPatchTokens`, four characters a token) leaves after the diff,
/// up to `retrieval.budgetChars`. Learnings and guideline files are not searched here:
/// the passes are shown them whole already.
async fn related(config: &RepoConfig, subject: &Subject<'_>, inputs: &ReviewInputs) -> Retrieved {
    let (Some(recall), false) = (subject.recall, inputs.files.is_empty()) else {
        return Retrieved::default();
    };
    let room_tokens =
        (config.review.max_patch_tokens as usize).saturating_sub(inputs.largest_part_tokens());
    let Some(settings) = queries::settings(&config.retrieval, room_tokens.saturating_mul(4)) else {
        return Retrieved::default();
    };
    let reviewed: HashSet<&str> = inputs.files.iter().map(|f| f.path.as_str()).collect();
    let files: Vec<ChangedFile> = subject
        .files
        .iter()
        .filter(|f| reviewed.contains(f.filename.as_str()))
        .cloned()
        .collect();
    let pr = (subject.number > 0).then_some(subject.number);
    let query = queries::for_review(&files, &config.review.skip_paths, pr);
    recall
        .retrieve(&subject.tenant.repo, &query, Vec::new(), &settings)
        .await
}

impl Analysis {
    /// The review's summary: the worker posts it, `parley review --post` too.
    pub fn summary<'a>(&'a self, framing: Framing<'a>) -> summary::Summary<'a> {
        summary::Summary {
            framing,
            files_reviewed: self.inputs.files.iter().map(|f| f.path.as_str()).collect(),
            not_reviewed: &self.inputs.not_reviewed,
            listing_truncated: self.inputs.listing_truncated,
            partial: self.partial(),
            passes_ok: self.passes_ok(),
            passes_failed: self.passes_failed(),
            parts: self.inputs.parts(),
            passes_not_needed: &self.not_needed,
            linked_issues: self.linked_issues.as_deref(),
            filtered: &self.filtered,
            duplicates: self.merged.duplicates,
            already_posted: self.merged.already_posted,
            fixed_earlier: Vec::new(),
            changed: Default::default(),
            held_earlier: 0,
            context_used: &self.context_used,
            overview: crate::review::overview::collect(&self.results),
            learning: summary::LearningReport {
                thresholds: &self.applied.thresholds,
                applied: self
                    .applied
                    .relevant
                    .iter()
                    .map(|l| l.id.as_str())
                    .collect(),
                suppressed: &self.suppressed,
                doubted: self
                    .filtered
                    .reported()
                    .filter(|c| c.doubt.is_some())
                    .collect(),
                judge: &self.judge,
            },
        }
    }

    /// Whether the review saw less than it should have: a pass failed, or files it
    /// should have read went unread ([`ReviewInputs::incomplete`]). The gate then says
    /// `neutral` for "nothing blocking", and `parley review --fail-on-partial` fails.
    ///
    /// [`ReviewInputs::incomplete`]: crate::review::inputs::ReviewInputs::incomplete
    pub fn partial(&self) -> bool {
        self.results.iter().any(|r| r.outcome.is_err()) || self.inputs.incomplete()
    }

    /// The passes that read everything they were given: in a review read in parts, a
    /// pass that failed on one part is not among them.
    pub fn passes_ok(&self) -> Vec<&'static str> {
        let failed = |name: &str| {
            self.results
                .iter()
                .any(|r| r.specialist == name && r.outcome.is_err())
        };
        let mut ok: Vec<&'static str> = Vec::new();
        for result in &self.results {
            if !ok.contains(&result.specialist) && !failed(result.specialist) {
                ok.push(result.specialist);
            }
        }
        ok
    }

    /// `(specialist, reason)` for each failed pass, in public words (never the provider's
    /// raw message); in a review read in parts, once a pass, naming the parts it failed on.
    pub fn passes_failed(&self) -> Vec<(&'static str, String)> {
        let parts = self.inputs.parts();
        let mut failed: Vec<(&'static str, String, Vec<usize>)> = Vec::new();
        for result in &self.results {
            let Err(err) = &result.outcome else { continue };
            match failed
                .iter_mut()
                .find(|(name, _, _)| *name == result.specialist)
            {
                Some((_, _, on)) => on.push(result.part + 1),
                None => failed.push((
                    result.specialist,
                    err.public_reason().to_string(),
                    vec![result.part + 1],
                )),
            }
        }
        failed
            .into_iter()
            .map(|(name, reason, on)| {
                if parts == 1 {
                    return (name, reason);
                }
                let on: Vec<String> = on.iter().map(usize::to_string).collect();
                (
                    name,
                    format!("{reason}, on part {} of {parts}", on.join(", ")),
                )
            })
            .collect()
    }
}

/// What a part's passes are told of the files they do not see: the other parts' files
/// (reviewed by passes of their own) first, then the files no part reads.
fn in_other_parts(
    parts: &[Vec<inputs::InputFile>],
    this: usize,
    not_reviewed: &[inputs::NotReviewed],
) -> Vec<inputs::NotReviewed> {
    let elsewhere = parts
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != this)
        .flat_map(|(_, files)| files)
        .map(|file| inputs::NotReviewed {
            path: file.path.clone(),
            why: inputs::LeftOut::InAnotherPart,
        });
    elsewhere.chain(not_reviewed.iter().cloned()).collect()
}

/// The findings of each part, for that part's judge: a finding on a file of a part is
/// that part's; one elsewhere (a caller in an unchanged file) the part whose pass
/// reported it; else the first.
fn by_part(
    candidates: Vec<merge::Candidate>,
    inputs: &ReviewInputs,
    results: &[PassResult],
) -> Vec<Vec<merge::Candidate>> {
    let mut parts = vec![Vec::new(); inputs.parts()];
    let part_of_file: HashMap<&str, usize> = inputs
        .files
        .iter()
        .zip(&inputs.part_of)
        .map(|(file, part)| (file.path.as_str(), *part))
        .collect();
    for candidate in candidates {
        let reported_in = || {
            results.iter().find_map(|r| {
                let findings = r.outcome.as_ref().ok()?;
                findings
                    .iter()
                    .any(|f| f.path == candidate.path && f.line == candidate.line)
                    .then_some(r.part)
            })
        };
        let part = part_of_file
            .get(candidate.path.as_str())
            .copied()
            .or_else(reported_in)
            .filter(|part| *part < parts.len())
            .unwrap_or(0);
        parts[part].push(candidate);
    }
    parts
}

/// The summary's lines on what the passes read through tool calls, collapsed.
fn tools_read(
    results: &[PassResult],
    judge: &[String],
    toolbox: Option<&crate::context::tools::Toolbox<'_>>,
    in_parts: bool,
) -> String {
    let calls = toolbox.map_or(0, |t| t.calls());
    if calls == 0 {
        return String::new();
    }
    let mut out =
        format!("\n<details><summary>Code read with tools: {calls} call(s)</summary>\n\n");
    let passes = results.iter().map(|r| {
        let reader = if in_parts {
            format!("{} (part {})", r.specialist, r.part + 1)
        } else {
            r.specialist.to_string()
        };
        (reader, &r.tools_read[..])
    });
    for (reader, read) in passes.chain([("judge".to_string(), judge)]) {
        if read.is_empty() {
            continue;
        }
        let calls: Vec<String> = read
            .iter()
            .map(|c| format!("`{}`", c.replace('`', "'")))
            .collect();
        out.push_str(&format!("- {reader}: {}\n", calls.join(", ")));
    }
    out.push_str("\n</details>\n");
    out
}

/// The summary's lines on the code read beyond the diff (by every part), collapsed like
/// retrieval's.
fn code_read(
    code: &Result<&dyn crate::ports::code::Codebase, String>,
    contexts: &[crate::context::CodeContext],
) -> String {
    let context = crate::context::CodeContext {
        used: contexts
            .iter()
            .flat_map(|c| c.used.iter().cloned())
            .collect(),
        left_out: contexts.iter().map(|c| c.left_out).sum(),
        ..crate::context::CodeContext::default()
    };
    match code {
        Err(why) => format!(
            "\n- Code context: reviewed from the diff alone: {}\n",
            crate::sanitize::truncate(why, 200)
        ),
        Ok(_) if context.used.is_empty() => String::new(),
        Ok(code) => {
            let mut out = format!(
                "\n<details><summary>Code read beyond the diff: {} piece(s) from {} files{}</summary>\n\n",
                context.used.len(),
                code.files(),
                if context.left_out > 0 {
                    format!(", {} left out for the budget", context.left_out)
                } else {
                    String::new()
                }
            );
            for line in &context.used {
                out.push_str(&format!("- `{}`\n", crate::sanitize::user_text(line)));
            }
            out.push_str("\n</details>\n");
            out
        }
    }
}

/// The first error when every pass failed (and there were passes).
fn all_failed(results: &[super::findings::PassResult]) -> Option<&crate::ports::llm::LlmError> {
    if results.is_empty() {
        return None;
    }
    let mut errors = results.iter().map(|r| r.outcome.as_ref().err());
    let first = errors.next().flatten()?;
    errors.all(|e| e.is_some()).then_some(first)
}

/// Clean a model-written finding for posting (see [`crate::sanitize::model_text`]).
fn sanitize_candidate(candidate: &mut super::merge::Candidate, silenced: &Handles) {
    candidate.title = crate::sanitize::model_text(&candidate.title, silenced);
    candidate.category = crate::sanitize::model_text(&candidate.category, silenced);
    candidate.body = crate::sanitize::model_text(&candidate.body, silenced);
    if let Some(suggestion) = &candidate.suggestion {
        candidate.suggestion = Some(crate::sanitize::model_code(suggestion, silenced));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::github::ChangedFile;

    #[test]
    fn a_finding_has_moved_away_only_when_github_listed_every_file() {
        let earlier = [
            Finding::sample("src/db.rs", "SQL injection"),
            Finding::sample("src/api.rs", "Unchecked id"),
        ];
        let files = vec![ChangedFile::listed(
            "src/api.rs",
            FileStatus::Modified,
            None,
        )];
        let whole = PullFiles::from_files(files.clone(), false);
        assert_eq!(
            moved_away(&earlier, &whole),
            HashSet::from(["f-SQL injection"]),
            "its file renamed away"
        );
        let cut = PullFiles::from_files(files, true);
        assert!(moved_away(&earlier, &cut).is_empty());
    }

    #[test]
    fn a_finding_whose_code_left_a_file_the_pr_still_changes_has_moved_away() {
        const FIRST: &str = "@@ -1,1 +1,3 @@\n a\n+let q = format!(\"{}\", id);\n+run(q);";
        let finding = |code: &str, title: &str| Finding {
            site: merge::site("src/db.rs", code),
            line: 2,
            ..Finding::sample("src/db.rs", title)
        };
        let earlier = [
            finding("let q = format!(\"{}\", id);", "SQL injection"),
            finding("a", "Unclear name"),
        ];
        let now = |patch: &str| {
            let file = ChangedFile::listed("src/db.rs", FileStatus::Modified, Some(patch));
            moved_away(&earlier, &PullFiles::from_files(vec![file], false))
        };
        assert!(now(FIRST).is_empty(), "as posted");
        assert!(
            now("@@ -1,1 +1,5 @@\n+x\n+y\n a\n+let q = format!(\"{}\", id);\n+run(q);").is_empty(),
            "lines moved down the file: still there"
        );
        assert_eq!(
            now("@@ -1,1 +1,2 @@\n a\n+run(other());"),
            HashSet::from(["f-SQL injection"]),
            "its code gone from the file's diff; the other finding's stays"
        );
    }
}
