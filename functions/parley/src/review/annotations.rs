//! `--format github`: GitHub Actions workflow commands, one line a finding, which Actions
//! shows as annotations on the PR's changed files. Unlike SARIF they need no code
//! scanning (a paid feature for private repositories), only a step that runs Parley.
//!
//! A finding's title and body are written by a model that read the PR: untrusted text.
//! Every value is escaped the way the runner unescapes it, so it stays inside its own
//! command's line and cannot start a command of its own (`::add-mask::`,
//! `::stop-commands::`, …).

use super::Report;
use parley_core::ports::Severity;
use parley_core::review::inputs::LISTING_CUT_OFF;

/// Annotations Actions shows per step of each level; past them it drops the rest
/// without a word (actions/toolkit, "problem matchers": 10 errors, 10 warnings and 10
/// notices a step).
const SHOWN_PER_LEVEL: usize = 10;

/// One annotation before the per-level cap.
struct Note {
    level: &'static str,
    properties: Vec<(&'static str, String)>,
    message: String,
    /// What the log shows instead once the level's annotations are used up.
    plain: String,
}

pub fn render(report: &Report) -> String {
    within_the_caps(&notes(report))
}

/// The commands, at most [`SHOWN_PER_LEVEL`] of a level: past that, one command counting
/// the rest and the rest as plain log lines, so none is dropped without a word.
fn within_the_caps(notes: &[Note]) -> String {
    let mut out = String::new();
    let mut overflow = String::new();
    for level in ["error", "warning", "notice"] {
        let of_level: Vec<&Note> = notes.iter().filter(|n| n.level == level).collect();
        let shown = if of_level.len() > SHOWN_PER_LEVEL {
            SHOWN_PER_LEVEL - 1
        } else {
            of_level.len()
        };
        for note in &of_level[..shown] {
            out.push_str(&command(level, &note.properties, &note.message));
        }
        let rest = &of_level[shown..];
        if !rest.is_empty() {
            out.push_str(&command(
                level,
                &[("title", format!("{} more from Parley", rest.len()))],
                "GitHub shows 10 annotations of a kind a step: the rest are in the step summary and in this step's log.",
            ));
            for note in rest {
                overflow.push_str(&format!("{level}: {}\n", note.plain));
            }
        }
    }
    out + &overflow
}

/// Failed passes first (what is missing matters most), then the findings, most severe
/// first (they take the annotations there are), then the files left out.
fn notes(report: &Report) -> Vec<Note> {
    let mut notes: Vec<Note> = report
        .passes_failed
        .iter()
        .map(|(pass, reason)| {
            let message = format!("The {pass} pass failed ({reason}); its findings are missing.");
            Note {
                level: "warning",
                properties: vec![("title", "Parley review is partial".to_string())],
                plain: one_line(&message),
                message,
            }
        })
        .collect();
    let mut findings: Vec<_> = report.inline.iter().chain(&report.in_summary).collect();
    findings.sort_by_key(|c| std::cmp::Reverse(c.severity));
    notes.extend(findings.into_iter().map(|c| {
        let start = c.start_line.unwrap_or(c.line).max(1);
        let title = format!("Parley [{}] {}", c.severity.name(), c.title);
        let mut message = c.body.trim().to_string();
        if let Some(note) = c.doubt_note() {
            message.push_str("\n\n");
            message.push_str(&note);
        }
        if let Some(suggestion) = &c.suggestion {
            message.push_str("\n\nSuggested:\n");
            message.push_str(suggestion.trim_end());
        }
        Note {
            level: match c.severity {
                Severity::Critical | Severity::High => "error",
                Severity::Medium => "warning",
                Severity::Low | Severity::Nit => "notice",
            },
            plain: one_line(&format!("{}:{} {title}", c.path, c.line)),
            properties: vec![
                ("file", c.path.clone()),
                ("line", start.to_string()),
                ("endLine", c.line.max(1).to_string()),
                ("title", title),
            ],
            message,
        }
    }));
    notes.extend(report.not_reviewed.iter().map(|file| Note {
        level: if file.why.leaves_review_partial() {
            "warning"
        } else {
            "notice"
        },
        properties: vec![
            ("file", file.path.clone()),
            ("title", "Parley did not review this file".to_string()),
        ],
        message: file.why.to_string(),
        plain: one_line(&format!("{}: not reviewed: {}", file.path, file.why)),
    }));
    if report.listing_truncated {
        let message = LISTING_CUT_OFF;
        notes.push(Note {
            level: "warning",
            properties: vec![("title", "Parley review is partial".to_string())],
            message: message.to_string(),
            plain: message.to_string(),
        });
    }
    notes
}

/// A log line that cannot start a workflow command: no line breaks, and it starts with
/// the level the caller puts first.
fn one_line(text: &str) -> String {
    text.split(['\r', '\n']).collect::<Vec<_>>().join(" ")
}

/// `::level key=value,…::message` and a newline.
fn command(level: &str, properties: &[(&str, String)], message: &str) -> String {
    let properties: Vec<String> = properties
        .iter()
        .map(|(key, value)| format!("{key}={}", escape_property(value)))
        .collect();
    format!(
        "::{level} {}::{}\n",
        properties.join(","),
        escape_data(message)
    )
}

/// The runner's own escaping of a command's message (`%`, CR, LF).
fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A property value also escapes the separators `:` and `,`.
fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text from the model cannot leave its command's line, so it cannot issue a command
    /// of its own; the runner's unescaping gives back what was written.
    #[test]
    fn untrusted_text_stays_inside_its_command() {
        let hostile = "fine\n::add-mask::ghp_secret\r\n::error file=x::100% sure, no: really";
        let line = command("error", &[("title", hostile.to_string())], hostile);
        assert_eq!(line.matches('\n').count(), 1, "{line}");
        assert!(line.starts_with("::error title="), "{line}");
        // As the runner reads it: the properties end at the first `::`.
        let (properties, message) = line
            .trim_end()
            .trim_start_matches("::error ")
            .split_once("::")
            .unwrap_or_default();
        assert_eq!(unescape(message), hostile);
        let title = properties.trim_start_matches("title=");
        assert!(!title.contains(',') && !title.contains(':'), "{title}");
        assert_eq!(unescape(title), hostile);
    }

    /// Thirteen errors: nine annotations, a tenth that counts the four others, and those
    /// four as plain log lines (one line each, whatever their titles hold).
    #[test]
    fn past_ten_of_a_level_the_rest_are_counted_and_logged() {
        let notes: Vec<Note> = (1..=13)
            .map(|i| Note {
                level: "error",
                properties: vec![("title", format!("finding {i}"))],
                message: "body".into(),
                plain: one_line(&format!("src/a.rs:{i} finding\n::add-mask::{i}")),
            })
            .chain(std::iter::once(Note {
                level: "notice",
                properties: vec![("title", "low".into())],
                message: "body".into(),
                plain: "low".into(),
            }))
            .collect();
        let out = within_the_caps(&notes);
        let lines: Vec<&str> = out.lines().collect();
        let errors: Vec<&&str> = lines.iter().filter(|l| l.starts_with("::error ")).collect();
        assert_eq!(errors.len(), 10, "{out}");
        assert!(errors[9].contains("title=4 more from Parley"), "{out}");
        assert_eq!(
            lines.iter().filter(|l| l.starts_with("::notice ")).count(),
            1
        );
        let logged: Vec<&&str> = lines.iter().filter(|l| !l.starts_with("::")).collect();
        assert_eq!(logged.len(), 4, "{out}");
        assert!(
            logged[0].starts_with("error: src/a.rs:10 finding ::add-mask::10"),
            "{out}"
        );
    }

    fn unescape(text: &str) -> String {
        text.replace("%0D", "\r")
            .replace("%0A", "\n")
            .replace("%3A", ":")
            .replace("%2C", ",")
            .replace("%25", "%")
    }
}
