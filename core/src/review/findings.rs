//! What a specialist pass returns: a JSON list of findings, parsed and checked with the
//! structured-output helper so a malformed reply gets one corrective retry and then fails
//! only that pass.

use crate::llm::JsonOutput;
use crate::ports::Severity;
use serde::Deserialize;

/// The top level is an object because OpenAI's JSON mode can only produce objects.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
pub struct PassOutput {
    pub findings: Vec<RawFinding>,
    /// What the change does, from the one pass asked for it (see
    /// [`crate::review::overview`]); any other pass's is not read. Anything but text there
    /// (an object, a list) is dropped rather than failing the pass: its findings matter
    /// more than its prose.
    #[serde(default, deserialize_with = "text_or_nothing")]
    #[schemars(with = "Option<String>")]
    pub overview: Option<String>,
}

fn text_or_nothing<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(text) => Some(text),
        _ => None,
    })
}

/// One finding as the model reports it.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
pub struct RawFinding {
    pub path: String,
    pub line: u32,
    #[serde(default)]
    pub start_line: Option<u32>,
    /// `RIGHT` (the new code) unless the model says `LEFT`; Parley comments on the right
    /// side only, so a left-side finding goes to the summary.
    #[serde(default)]
    pub side: Option<String>,
    pub severity: Severity,
    pub category: String,
    pub confidence: u8,
    pub title: String,
    pub body: String,
    /// Replacement text for the lines `start_line..=line`, shown as a suggestion block.
    #[serde(default)]
    pub suggestion: Option<String>,
}

impl RawFinding {
    pub fn on_right_side(&self) -> bool {
        self.side
            .as_deref()
            .is_none_or(|side| side.eq_ignore_ascii_case("right"))
    }
}

/// Described by example rather than JSON Schema: shorter in every prompt, and the
/// validator below catches what the example cannot say.
const SHAPE: &str = r#"{"findings": [
  {"path": "src/lib.rs", "line": 42, "start_line": 40, "side": "RIGHT",
   "severity": "critical|high|medium|low|nit", "category": "security",
   "confidence": 0-100, "title": "One-line summary",
   "body": "Why it is a problem and how to fix it (Markdown).",
   "suggestion": "optional replacement code for lines start_line..line"}
]}
Use {"findings": []} when there is nothing worth reporting. `line` and `start_line` are
line numbers in the NEW file, as shown in the left column of the diff; omit start_line for
a single line."#;

/// The example finding's words in [`SHAPE`], which a real finding never has.
const EXAMPLE_TITLE: &str = "One-line summary";
const EXAMPLE_BODY: &str = "Why it is a problem and how to fix it (Markdown).";

/// The expected output of every specialist pass.
pub fn pass_output() -> JsonOutput<PassOutput> {
    JsonOutput::described(SHAPE)
        .constrained("review_findings")
        .with_validator(validate)
}

fn validate(output: &PassOutput) -> Result<(), String> {
    for (index, finding) in output.findings.iter().enumerate() {
        let at = |problem: &str| format!("findings[{index}]: {problem}");
        if finding.path.trim().is_empty() {
            return Err(at("path is empty"));
        }
        if finding.line == 0 {
            return Err(at("line must be a 1-based line number"));
        }
        if finding
            .start_line
            .is_some_and(|start| start == 0 || start > finding.line)
        {
            return Err(at("start_line must be between 1 and line"));
        }
        if finding.confidence > 100 {
            return Err(at("confidence must be between 0 and 100"));
        }
        if finding.title.trim().is_empty() {
            return Err(at("title is empty"));
        }
        // A small model held to the schema by a grammar sometimes fills it with the
        // example's own words: a "critical" finding on nothing.
        if finding.title.trim() == EXAMPLE_TITLE || finding.body.trim() == EXAMPLE_BODY {
            return Err(at(
                "repeats the example's placeholder text; report what this change gets \
                 wrong, or no findings",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_examples_placeholder_is_not_a_finding() {
        assert!(SHAPE.contains(EXAMPLE_TITLE) && SHAPE.contains(EXAMPLE_BODY));
        let output = pass_output();
        let finding = |title: &str, body: &str| {
            format!(
                r#"{{"findings":[{{"path":"src/db.rs","line":3,"severity":"critical","category":"security","confidence":85,"title":"{title}","body":"{body}"}}]}}"#
            )
        };
        for (title, body) in [
            (EXAMPLE_TITLE, "SQL built from input."),
            ("SQL injection", EXAMPLE_BODY),
        ] {
            let error = output.parse(&finding(title, body)).unwrap_err();
            assert!(error.to_string().contains("placeholder"), "{error}");
        }
        assert!(output.parse(&finding("SQL injection", "Bind it.")).is_ok());
    }

    #[test]
    fn an_overview_that_is_not_text_is_dropped_and_the_findings_kept() {
        let output = pass_output();
        let with = |overview: &str| {
            format!(
                r#"{{"findings":[{{"path":"a.rs","line":3,"severity":"high","category":"bug","confidence":90,"title":"t","body":"b"}}],"overview":{overview}}}"#
            )
        };
        let text = output.parse(&with(r#""Adds a cache.""#)).expect("text");
        assert_eq!(text.overview.as_deref(), Some("Adds a cache."));
        for odd in [r#"{"summary": "x"}"#, r#"["a", "b"]"#, "42", "null"] {
            let parsed = output.parse(&with(odd)).expect(odd);
            assert_eq!(parsed.overview, None, "{odd}");
            assert_eq!(parsed.findings.len(), 1, "{odd}");
        }
        let none = output.parse(r#"{"findings": []}"#).expect("absent");
        assert_eq!(none.overview, None);
    }

    #[test]
    fn parses_a_finding_and_rejects_bad_numbers() {
        let output = pass_output();
        let good = r#"{"findings":[{"path":"a.rs","line":3,"severity":"high","category":"bug","confidence":90,"title":"t","body":"b"}]}"#;
        let parsed = output.parse(good).unwrap();
        assert_eq!(parsed.findings[0].severity, Severity::High);
        assert!(parsed.findings[0].on_right_side());

        let bad = r#"{"findings":[{"path":"a.rs","line":3,"start_line":5,"severity":"high","category":"bug","confidence":90,"title":"t","body":"b"}]}"#;
        assert!(output.parse(bad).is_err());
        let bad_severity = r#"{"findings":[{"path":"a.rs","line":3,"severity":"urgent","category":"bug","confidence":90,"title":"t","body":"b"}]}"#;
        assert!(output.parse(bad_severity).is_err());
    }
}

/// How one specialist pass went: what the merge, the summary and the terminal read of it.
#[derive(Debug)]
pub struct PassResult {
    pub specialist: &'static str,
    /// The part of the diff it read (0 unless the diff was read in parts).
    pub part: usize,
    pub outcome: Result<Vec<RawFinding>, crate::ports::llm::LlmError>,
    pub elapsed: std::time::Duration,
    /// The tool calls the pass made to read code (`read_file(src/app.rs:10-40)`).
    pub tools_read: Vec<String>,
    /// The overview it wrote, where it was the pass asked for one.
    pub overview: Option<String>,
}
