//! Printing a review: coloured for a terminal, Markdown, JSON, or SARIF for code scanning.

use super::Report;
use console::{Style, style};
use parley_core::ports::Severity;
use parley_core::review::inputs::{LISTING_CUT_OFF, why_nothing_read};
use parley_core::review::merge::Candidate;
use parley_core::review::specialists::{not_needed_line, nothing_to_look_at};
use serde_json::{Value, json};
use std::borrow::Cow;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Coloured text (plain when stdout is not a terminal or NO_COLOR is set).
    Terminal,
    Markdown,
    Json,
    /// SARIF 2.1.0, for `github/codeql-action/upload-sarif`.
    Sarif,
    /// GitHub Actions workflow commands: annotations on the PR's changed files (no code
    /// scanning needed); the Markdown report goes to the step summary when Actions names one.
    Github,
}

pub fn render(report: &Report, format: Format) -> String {
    match format {
        Format::Terminal => terminal(report),
        Format::Markdown => markdown(report),
        Format::Json => serde_json::to_string_pretty(&json_value(report)).unwrap_or_default(),
        Format::Sarif => {
            serde_json::to_string_pretty(&super::sarif::log(report)).unwrap_or_default()
        }
        Format::Github => super::annotations::render(report),
    }
}

pub(super) fn findings(report: &Report) -> impl Iterator<Item = (&Candidate, bool)> {
    report
        .inline
        .iter()
        .map(|c| (c, true))
        .chain(report.in_summary.iter().map(|c| (c, false)))
}

fn lines(c: &Candidate) -> String {
    match c.start_line {
        Some(start) if start != c.line => format!("{}-{}", start, c.line),
        _ => c.line.to_string(),
    }
}

fn headline(report: &Report) -> String {
    match report.inline.len() + report.in_summary.len() {
        0 if report.passes_ok.is_empty() && report.passes_failed.is_empty() => {
            if let Some(why) = nothing_to_look_at(&report.passes_not_needed) {
                return format!("Nothing to review: {why}.\n");
            }
            let why = why_nothing_read(&report.not_reviewed, report.listing_truncated);
            let see = if report.not_reviewed.is_empty() {
                ""
            } else {
                " (see \"Not reviewed\")"
            };
            format!("Nothing to review: {why}{see}.\n")
        }
        0 => "No findings.\n".to_string(),
        1 => "1 finding.\n".to_string(),
        n => format!("{n} findings.\n"),
    }
}

fn terminal(report: &Report) -> String {
    let colour = |s: Severity| match s {
        Severity::Critical => Style::new().red().bold(),
        Severity::High => Style::new().red(),
        Severity::Medium => Style::new().yellow(),
        Severity::Low => Style::new().cyan(),
        Severity::Nit => Style::new().dim(),
    };
    let mut out = format!(
        "{} {}\n",
        style("Parley review of").bold(),
        style(shown(&report.subject)).bold()
    );
    out.push_str(&headline(report));
    for text in &report.overview {
        out.push_str(&format!(
            "{} {}\n",
            style("What this change does:").bold(),
            shown(text)
        ));
    }
    for (c, _) in findings(report) {
        out.push_str(&format!(
            "\n{} {}:{}  {}  {}\n",
            colour(c.severity).apply_to(format!("[{}]", c.severity.name())),
            style(shown(&c.path)).underlined(),
            lines(c),
            style(&c.title).bold(),
            style(format!("({}, confidence {})", c.category, c.confidence)).dim()
        ));
        for line in c.body.lines() {
            out.push_str(&format!("    {line}\n"));
        }
        if let Some(note) = c.doubt_note() {
            out.push_str(&format!("    {}\n", style(note).yellow()));
        }
        if let Some(suggestion) = &c.suggestion {
            out.push_str(&format!("    {}\n", style("suggested:").green()));
            for line in suggestion.lines() {
                out.push_str(&format!("    {}\n", style(format!("+ {line}")).green()));
            }
        }
    }
    out.push_str(&footer(report, false));
    out
}

pub fn markdown(report: &Report) -> String {
    let mut out = format!("## Parley review of {}\n\n", shown(&report.subject));
    if report.inline.len() + report.in_summary.len() == 0 {
        out.push_str(&headline(report));
    }
    let overview = parley_core::review::overview::render(&report.overview);
    if !overview.is_empty() {
        out.push_str(overview.trim_start());
        out.push_str("\n\n");
    }
    for (c, _) in findings(report) {
        out.push_str(&format!(
            "### **{}** `{}:{}` {}\n\n*{}, confidence {}*\n\n{}\n\n",
            c.severity.name(),
            shown(&c.path),
            lines(c),
            c.title,
            c.category,
            c.confidence,
            c.body.trim()
        ));
        if let Some(note) = c.doubt_note() {
            out.push_str(&format!("> {note}\n\n"));
        }
        if let Some(suggestion) = &c.suggestion {
            out.push_str(&format!(
                "```suggestion\n{}\n```\n\n",
                suggestion.trim_end()
            ));
        }
    }
    out.push_str(&footer(report, true));
    out
}

/// What was not reviewed, failed passes, suppressed findings, cost: never silent.
fn footer(report: &Report, markdown: bool) -> String {
    let bullet = if markdown { "- " } else { "  " };
    let mut out = String::new();
    if !report.not_reviewed.is_empty() || report.listing_truncated {
        out.push_str(&format!(
            "\nNot reviewed ({}):\n",
            report.not_reviewed.len()
        ));
        for file in &report.not_reviewed {
            out.push_str(&format!(
                "{bullet}{}: {}\n",
                shown(&file.path),
                shown(&file.why.to_string())
            ));
        }
        if report.listing_truncated {
            out.push_str(&format!("{bullet}{LISTING_CUT_OFF}\n"));
        }
    }
    if !report.passes_failed.is_empty() {
        out.push_str("\nPasses that failed (their findings are missing):\n");
        for (pass, reason) in &report.passes_failed {
            out.push_str(&format!("{bullet}{pass}: {}\n", shown(reason)));
        }
    }
    if let Some(line) = not_needed_line(&report.passes_not_needed) {
        out.push_str(&format!("\nPasses not needed: {line}\n"));
    }
    if report.parts > 1 {
        out.push_str(&format!(
            "\nRead in {} parts, each by every pass: the diff is larger than review.maxPatchTokens.\n",
            report.parts
        ));
    }
    if !report.context_used.is_empty() {
        out.push_str("\nContext used (earlier reviews in the local store):\n");
        for item in &report.context_used {
            out.push_str(&format!("{bullet}{}\n", shown(item)));
        }
    }
    if report.below_threshold > 0 {
        out.push_str(&format!(
            "\n{} below the confidence threshold ({}).\n",
            report.below_threshold, report.min_confidence
        ));
    }
    if !report.suppressed.is_empty() {
        out.push_str(&format!(
            "\nSuppressed ({}: by a learning, the judge, or for naming code the review could not see):\n",
            report.suppressed.len()
        ));
        for s in &report.suppressed {
            let c = &s.candidate;
            out.push_str(&format!(
                "{bullet}{}:{} {} ({}): {}\n",
                shown(&c.path),
                lines(c),
                shown(&c.title),
                c.severity.name(),
                shown(&s.why)
            ));
        }
    }
    out.push_str(&format!(
        "\n{} LLM calls, {}{}.\n",
        report.usage.calls,
        report.usage.usage.describe(),
        report
            .usage
            .cost_usd()
            .map(|usd| format!(", about ${usd:.4}"))
            .unwrap_or_default()
    ));
    if let Some(url) = &report.posted {
        out.push_str(&format!("Posted: {url}\n"));
    }
    out
}

/// Untrusted text as a person reads it: a file name, a server's error or a stored
/// citation can carry control characters, which a terminal would obey (escape sequences
/// that retitle it, write the clipboard, or hide a line behind `\r`). They are written
/// out (`\u{1b}`) instead. What a model wrote was cleaned before (see
/// `parley_core::sanitize::model_text`).
fn shown(text: &str) -> Cow<'_, str> {
    let hidden = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| {
                if hidden(c) {
                    c.escape_unicode().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

fn json_value(report: &Report) -> Value {
    json!({
        "subject": report.subject,
        "repo": report.repo,
        "pr": report.pr,
        "base": report.base,
        "head": report.head,
        "findings": findings(report).map(|(c, inline)| json!({
            "path": c.path,
            "line": c.line,
            "start_line": c.start_line,
            "severity": c.severity.name(),
            "category": c.category,
            "confidence": c.confidence,
            "title": c.title,
            "body": c.body,
            "suggestion": c.suggestion,
            "doubt": c.doubt,
            "passes": c.passes,
            "on_diff": inline,
            "fingerprint": c.fingerprint,
        })).collect::<Vec<_>>(),
        "files_reviewed": report.files_reviewed,
        "not_reviewed": report.not_reviewed.iter().map(|n| json!({"path": n.path, "reason": n.why.to_string()})).collect::<Vec<_>>(),
        "listing_truncated": report.listing_truncated,
        "partial": report.partial,
        "passes": {
            "ok": report.passes_ok,
            "failed": report.passes_failed.iter().map(|(p, r)| json!({"pass": p, "reason": r})).collect::<Vec<_>>(),
            "not_needed": report.passes_not_needed.iter().map(|n| json!({"pass": n.specialist, "reason": n.why})).collect::<Vec<_>>(),
        },
        "parts": report.parts,
        "below_threshold": report.below_threshold,
        "min_confidence": report.min_confidence,
        "suppressed": report.suppressed.len(),
        "suppressed_findings": report.suppressed.iter().map(|s| json!({
            "path": s.candidate.path,
            "line": s.candidate.line,
            "severity": s.candidate.severity.name(),
            "title": s.candidate.title,
            "by": s.by,
            "reason": s.why,
        })).collect::<Vec<_>>(),
        "usage": {
            "calls": report.usage.calls,
            "input_tokens": report.usage.usage.input_tokens,
            "output_tokens": report.usage.usage.output_tokens,
            "tokens_estimated": report.usage.usage.estimated,
            "cost_usd": report.usage.cost_usd(),
        },
        "posted": report.posted,
        "context_used": report.context_used,
        "overview": report.overview,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_core::learning::apply::Suppressed;
    use parley_core::llm::usage::UsageTally;
    use parley_core::review::inputs::{LeftOut, NotReviewed};

    /// A file name and a failed pass's reason with escape sequences in them: printed as
    /// text, in the terminal and in Markdown, never as escapes a terminal would obey.
    #[test]
    fn control_characters_in_untrusted_text_are_written_out() {
        console::set_colors_enabled(false);
        let hostile = "src/\x1b]52;c;cm0gLXJm\x07evil\r.rs";
        let finding = super::super::sample_finding(hostile, Severity::High, "bug");
        let report = Report {
            subject: "local/\x1b[2Jrepo".into(),
            repo: "local/repo".into(),
            pr: None,
            base: "b".into(),
            head: "h".into(),
            inline: vec![finding.clone()],
            in_summary: Vec::new(),
            files_reviewed: Vec::new(),
            not_reviewed: vec![NotReviewed {
                path: hostile.into(),
                why: LeftOut::Unreadable("binary \x1b[8mhidden".into()),
            }],
            listing_truncated: false,
            partial: true,
            passes_ok: Vec::new(),
            passes_failed: vec![("security", "server said \x1b[31mno".into())],
            parts: 1,
            passes_not_needed: Vec::new(),
            below_threshold: 0,
            min_confidence: 75,
            suppressed: vec![Suppressed {
                candidate: Candidate {
                    title: "hidden\u{1b}[8m".into(),
                    ..finding.clone()
                },
                by: "L-1".into(),
                why: "dismissed by L-1: we allow \u{1b}[2J this".into(),
            }],
            usage: UsageTally::default(),
            posted: None,
            context_used: Vec::new(),
            overview: Vec::new(),
        };
        for out in [terminal(&report), markdown(&report)] {
            assert!(
                !out.chars()
                    .any(|c| c.is_control() && c != '\n' && c != '\t'),
                "{out:?}"
            );
            assert!(
                out.contains("src/\\u{1b}]52;c;cm0gLXJm\\u{7}evil\\u{d}.rs"),
                "{out}"
            );
            assert!(out.contains("server said \\u{1b}[31mno"), "{out}");
            assert!(out.contains("\\u{1b}[8mhidden"), "{out}");
            assert!(
                out.contains("hidden\\u{1b}[8m (high): dismissed by L-1: we allow \\u{1b}[2J this"),
                "{out}"
            );
            assert!(out.contains("local/\\u{1b}[2Jrepo"), "{out}");
        }
    }
}
