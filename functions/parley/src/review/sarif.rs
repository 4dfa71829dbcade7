//! A review as SARIF 2.1.0 for `github/codeql-action/upload-sarif`: the subset GitHub's
//! "SARIF support for code scanning" reads, with every property it marks required.
//!
//! Built with `serde_json`: a few dozen fields do not justify a typed SARIF crate and its
//! builder dependencies.

use super::Report;
use super::render::findings;
use parley_core::ports::Severity;
use parley_core::review::inputs::LISTING_CUT_OFF;
use parley_core::review::merge::Candidate;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// One run, one rule per category, one result per finding with a stable fingerprint (so a
/// re-run updates alerts instead of duplicating them); what the run did not do, as the
/// invocation's notifications.
pub fn log(report: &Report) -> Value {
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "Parley",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules(report),
            }},
            "invocations": [invocation(report)],
            "results": findings(report).map(|(c, _)| result(c)).collect::<Vec<_>>(),
        }],
    })
}

fn result(c: &Candidate) -> Value {
    let region = match c.start_line {
        Some(start) => json!({ "startLine": start.max(1), "endLine": c.line.max(1) }),
        None => json!({ "startLine": c.line.max(1) }),
    };
    json!({
        "ruleId": rule_id(&c.category),
        "level": level(c.severity),
        "message": { "text": message(c) },
        "locations": [{
            "physicalLocation": {
                "artifactLocation": { "uri": c.path, "uriBaseId": "%SRCROOT%" },
                "region": region,
            }
        }],
        "partialFingerprints": { "parleyFingerprint/v1": c.fingerprint },
        "properties": {
            "severity": c.severity.name(),
            "confidence": c.confidence,
            "passes": c.passes,
        },
    })
}

/// Code scanning's default gate fails on `error`: critical and high findings, which are
/// the ones Parley's own merge gate blocks on by default.
fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Critical | Severity::High => "error",
        Severity::Medium => "warning",
        Severity::Low | Severity::Nit => "note",
    }
}

/// A rule for each category reported. Code scanning reads a security score from the
/// rule, not the result, so a security rule carries the highest severity this run
/// reported under it (an upload's rules replace the last upload's).
fn rules(report: &Report) -> Vec<Value> {
    let mut highest: BTreeMap<String, Severity> = BTreeMap::new();
    for (c, _) in findings(report) {
        let seen = highest.entry(rule_id(&c.category)).or_insert(c.severity);
        *seen = (*seen).max(c.severity);
    }
    highest
        .into_iter()
        .map(|(id, severity)| rule(&id, severity))
        .collect()
}

fn rule(id: &str, highest: Severity) -> Value {
    let category = id.trim_start_matches(RULE_PREFIX);
    let security = category.split('-').any(|word| word == "security");
    let mut tags = vec!["parley", category];
    let mut properties = json!({});
    if security {
        tags.push("security");
        properties["security-severity"] = json!(security_severity(highest));
    }
    properties["tags"] = json!(tags);
    json!({
        "id": id,
        "name": id,
        "shortDescription": { "text": format!("Parley: {category} finding") },
        "fullDescription": { "text": format!(
            "A {category} problem that Parley's LLM review reported in the change or in code the change touches. The alert's message says what is wrong and why."
        )},
        "help": {
            "text": HELP,
            "markdown": HELP,
        },
        "defaultConfiguration": { "level": "warning" },
        "properties": properties,
    })
}

const RULE_PREFIX: &str = "parley/";

const HELP: &str = "Parley reviews a change with a language model that reads the change and the code around it. \
A finding can be wrong: dismiss the alert when it is, and teach Parley the repository's rule on a pull request \
(`@parley remember …`, by a maintainer) so that later reviews know it.";

/// The category as the model wrote it, made into an id code scanning filters by: the
/// model's words are untrusted, so only letters, digits and dashes, and not many.
fn rule_id(category: &str) -> String {
    const MOST: usize = 48;
    let slug: String = category
        .to_ascii_lowercase()
        .chars()
        .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '-' })
        .take(MOST)
        .collect();
    let slug = slug.trim_matches('-');
    format!(
        "{RULE_PREFIX}{}",
        if slug.is_empty() { "finding" } else { slug }
    )
}

/// A result's text: the title, the body, and the judge's doubt when it has one.
fn message(c: &Candidate) -> String {
    let mut text = format!("{}\n\n{}", c.title, c.body.trim());
    if let Some(note) = c.doubt_note() {
        text.push_str(&format!("\n\n{note}"));
    }
    text
}

/// Code scanning's severity score (0-10), which it shows as critical, high, medium, low.
fn security_severity(severity: Severity) -> &'static str {
    match severity {
        Severity::Critical => "9.5",
        Severity::High => "8.0",
        Severity::Medium => "5.5",
        Severity::Low => "3.0",
        Severity::Nit => "1.0",
    }
}

/// What the run did not do, and what it took out, as tool notifications (code scanning
/// lists them on the tool's status page), so an upload with no alerts does not read as
/// a clean review when a pass failed or files were left out. A suppressed finding is a
/// notification, never a result: code scanning ignores SARIF's `suppressions`, so a
/// result would open the very alert a learning or the judge took out.
fn invocation(report: &Report) -> Value {
    let mut notes: Vec<Value> = report
        .passes_failed
        .iter()
        .map(|(pass, reason)| {
            json!({
                "level": "error",
                "descriptor": { "id": "parley/pass-failed" },
                "message": { "text": format!("The {pass} pass failed ({reason}); its findings are missing.") },
            })
        })
        .collect();
    notes.extend(report.not_reviewed.iter().map(|file| {
        json!({
            // Left out for the budget, a file the review should have read; a skip
            // pattern or a binary, one it never could.
            "level": if file.why.leaves_review_partial() { "warning" } else { "note" },
            "descriptor": { "id": "parley/not-reviewed" },
            "message": { "text": format!("Not reviewed: {}: {}", file.path, file.why) },
            "locations": [{ "physicalLocation": { "artifactLocation": { "uri": file.path, "uriBaseId": "%SRCROOT%" } } }],
        })
    }));
    if report.listing_truncated {
        notes.push(json!({
            "level": "warning",
            "descriptor": { "id": "parley/not-reviewed" },
            "message": { "text": LISTING_CUT_OFF },
        }));
    }
    notes.extend(report.suppressed.iter().map(|s| {
        let c = &s.candidate;
        json!({
            "level": "note",
            "descriptor": { "id": "parley/suppressed" },
            "message": { "text": format!("Suppressed: {} ({}): {}", c.title, c.severity.name(), s.why) },
            "locations": [{ "physicalLocation": {
                "artifactLocation": { "uri": c.path, "uriBaseId": "%SRCROOT%" },
                "region": { "startLine": c.line.max(1) },
            }}],
        })
    }));
    json!({
        "executionSuccessful": true,
        "toolExecutionNotifications": notes,
        "properties": { "partial": report.partial },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::sample_finding;
    use parley_core::learning::apply::Suppressed;

    fn report(inline: Vec<Candidate>, suppressed: Vec<Suppressed>) -> Report {
        Report {
            inline,
            suppressed,
            ..Report::default()
        }
    }

    /// GitHub rejects or blanks a rule without these; the empty string does not count.
    #[test]
    fn every_rule_has_what_code_scanning_requires() {
        let log = log(&report(
            vec![sample_finding("src/a.rs", Severity::Medium, "Bug")],
            Vec::new(),
        ));
        let rule = &log["runs"][0]["tool"]["driver"]["rules"][0];
        assert_eq!(rule["id"], "parley/bug");
        for field in ["shortDescription", "fullDescription", "help"] {
            assert!(
                rule[field]["text"].as_str().is_some_and(|t| !t.is_empty()),
                "{field}: {rule}"
            );
        }
        assert_eq!(log["runs"][0]["results"][0]["ruleId"], "parley/bug");
    }

    /// Only a security rule is scored (a score makes code scanning treat the rule as a
    /// security one), and with the highest severity reported under it.
    #[test]
    fn a_security_rule_carries_its_highest_severity() {
        let log = log(&report(
            vec![
                sample_finding("src/a.rs", Severity::Medium, "security"),
                sample_finding("src/b.rs", Severity::Critical, "Security"),
                sample_finding("src/c.rs", Severity::High, "performance"),
            ],
            Vec::new(),
        ));
        let rules = log["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(rules.len(), 2, "{rules:?}");
        let security = rules
            .iter()
            .find(|r| r["id"] == "parley/security")
            .expect("security rule");
        assert_eq!(security["properties"]["security-severity"], "9.5");
        assert!(
            security["properties"]["tags"]
                .as_array()
                .is_some_and(|t| t.contains(&json!("security")))
        );
        let performance = rules
            .iter()
            .find(|r| r["id"] == "parley/performance")
            .expect("performance rule");
        assert!(performance["properties"]["security-severity"].is_null());
    }

    /// A category is the model's text: it becomes a short id of safe characters.
    #[test]
    fn a_category_becomes_a_short_safe_rule_id() {
        assert_eq!(rule_id("SQL injection!"), "parley/sql-injection");
        assert_eq!(rule_id("  "), "parley/finding");
        let long = rule_id(&"x".repeat(500));
        assert!(long.len() <= RULE_PREFIX.len() + 48, "{long}");
        assert_eq!(rule_id("\u{1b}[31m"), "parley/31m");
    }

    /// A finding a learning took out is told on the status page, never uploaded as a
    /// result: code scanning would open it as an alert.
    #[test]
    fn a_suppressed_finding_is_a_notification_not_an_alert() {
        let log = log(&report(
            Vec::new(),
            vec![Suppressed {
                candidate: sample_finding("src/a.rs", Severity::High, "bug"),
                by: "L-1".into(),
                why: "dismissed by L-1: we allow unwrap in tests".into(),
            }],
        ));
        let run = &log["runs"][0];
        assert_eq!(run["results"], json!([]));
        let note = &run["invocations"][0]["toolExecutionNotifications"][0];
        assert_eq!(note["level"], "note");
        assert_eq!(note["descriptor"]["id"], "parley/suppressed");
        assert_eq!(
            note["message"]["text"],
            "Suppressed: title (high): dismissed by L-1: we allow unwrap in tests"
        );
        assert_eq!(
            note["locations"][0]["physicalLocation"]["region"]["startLine"],
            3
        );
    }
}
