//! What the fake model is scripted by and answers with: the phrases that pick out each
//! of Parley's prompts, and replies in the shapes Parley asks for.

use crate::fake_llm::FakeLlm;
use serde_json::{Value, json};

/// Phrases unique to each specialist's system prompt, to script the fake LLM by.
pub const SECURITY: &str = "the security specialist";
pub const CORRECTNESS: &str = "the correctness specialist";
pub const TESTS: &str = "the testing specialist";
pub const STYLE: &str = "the maintainability specialist";
pub const GUIDELINES: &str = "the guideline-compliance specialist";
/// A phrase unique to the conversation's system prompt, to script a reply in a thread by.
pub const CONVERSATION: &str = "holding a conversation on a GitHub pull request";
/// A phrase unique to the judge pass's system prompt.
pub const JUDGE: &str = "final judge of an automated code review";
/// In the question whether a push fixed earlier findings.
pub const FIX_CHECK: &str = "You check whether new commits fixed problems";

/// The JSON a conversation turn asks the model for.
pub fn answer(reply: &str, resolution: Option<&str>) -> String {
    json!({ "reply": reply, "resolution": resolution }).to_string()
}

/// Script `llm` so that every specialist pass finds nothing (the judge and any
/// conversation keep their own scripts).
pub fn passes_find_nothing(llm: &FakeLlm) {
    for specialist in [SECURITY, CORRECTNESS, TESTS, STYLE, GUIDELINES] {
        llm.answer(specialist, r#"{"findings": []}"#);
    }
}

/// One finding as a specialist would report it.
pub fn finding(path: &str, line: u32, severity: &str, confidence: u8, title: &str) -> Value {
    json!({
        "path": path, "line": line, "side": "RIGHT", "severity": severity,
        "category": "bug", "confidence": confidence, "title": title,
        "body": format!("Details about {title}."),
    })
}

/// The patch of an added file of `lines` lines named after `name` (about 12 tokens a
/// line): what a test of the token budget fills it with.
pub fn added_lines(name: &str, lines: usize) -> String {
    let body: Vec<String> = (0..lines)
        .map(|i| format!("+let {name}_{i} = compute_{name}_value({i}, true);"))
        .collect();
    format!("@@ -0,0 +1,{lines} @@\n{}", body.join("\n"))
}

/// A pass's reply carrying `findings`.
pub fn reply(findings: &[Value]) -> String {
    json!({ "findings": findings }).to_string()
}

/// Script `llm` so that the correctness pass finds one blocking (high) finding on
/// `src/db.rs:3`: what [`crate::expect::reviewed_once_with_one_blocking_finding`] expects
/// to see posted once.
pub fn one_blocking_finding(llm: &FakeLlm) {
    llm.answer(
        CORRECTNESS,
        &reply(&[finding(
            "src/db.rs",
            3,
            "high",
            95,
            "SQL built by string formatting",
        )]),
    );
}
