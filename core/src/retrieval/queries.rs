//! What a review and a question ask retrieval, and how much room they give it.
//!
//! Retrieval fills the room a prompt's own context leaves, never more than
//! `retrieval.budgetChars`: a review's diff and a conversation's thread come first, and a
//! big diff or a long thread leaves less (or no) room for history.

use super::chunk::{ChunkOptions, chunk_changed_files};
use super::language::language_of;
use super::{Query, Settings, Trigger};
use crate::config::RetrievalConfig;
use crate::ports::github::ChangedFile;
use std::collections::BTreeMap;

/// Below this much room nothing useful fits (one hunk with its heading is ~500
/// characters), so retrieval is not run at all: no store read, no embedding call.
pub const MIN_ROOM_CHARS: usize = 500;

/// The changed code searched for a review, at most: BM25 scores every query term against
/// every candidate, and the embedding model reads a few thousand tokens at most; the
/// largest hunks, which say most about the change, go first.
pub const MAX_QUERY_CHARS: usize = 4000;

/// Retrieval's settings for a prompt with `room_chars` to spare, or `None` when
/// retrieval is off or the room is too small to be worth a search.
pub fn settings(config: &RetrievalConfig, room_chars: usize) -> Option<Settings> {
    let budget = (config.budget_chars as usize).min(room_chars);
    (config.enabled && budget >= MIN_ROOM_CHARS).then(|| Settings {
        budget_chars: budget,
        ..Settings::default()
    })
}

/// A review's query: the added lines of the change's hunks (largest first, whole lines,
/// up to [`MAX_QUERY_CHARS`]), their paths and function contexts, and the language most
/// of the change is in. `pr` (the PR under review) is left out of the results.
pub fn for_review(files: &[ChangedFile], skip_paths: &[String], pr: Option<u64>) -> Query {
    let options = ChunkOptions {
        skip_paths: skip_paths.to_vec(),
        min_changed_lines: 1,
        ..ChunkOptions::default()
    };
    let chunks = chunk_changed_files(files, &options).chunks;
    let mut text = String::new();
    let mut paths: Vec<String> = Vec::new();
    let mut functions: Vec<String> = Vec::new();
    let mut languages: BTreeMap<&str, usize> = BTreeMap::new();
    for chunk in &chunks {
        for line in &chunk.added_lines {
            if text.len() + line.len() + 1 > MAX_QUERY_CHARS {
                break;
            }
            text.push_str(line);
            text.push('\n');
        }
        push_new(&mut paths, &chunk.path);
        if let Some(function) = &chunk.function_context {
            push_new(&mut functions, function);
        }
        if let Some(language) = chunk.language {
            *languages.entry(language).or_default() += chunk.changed_lines();
        }
    }
    let language = languages
        .into_iter()
        .max_by_key(|(name, lines)| (*lines, std::cmp::Reverse(*name)))
        .map(|(name, _)| name.to_string());
    Query {
        trigger: Trigger::Review,
        text,
        language,
        paths,
        functions,
        pr,
    }
}

/// What a question is about besides its own words.
#[derive(Debug, Clone, Default)]
pub struct QuestionContext<'a> {
    /// The finding under discussion: its title and body.
    pub finding: Option<&'a str>,
    /// The thread so far, newest last.
    pub history: &'a [String],
    /// The commented file, and the `@@` header of the hunk commented on.
    pub path: Option<&'a str>,
    pub diff_hunk: Option<&'a str>,
}

/// A question's query: the question, the finding in play and the newest turns (up to
/// [`MAX_QUERY_CHARS`] in all), the commented path and its function context. `pr` (the
/// PR the question is on) is left out of the results: its thread is in the prompt.
pub fn for_question(question: &str, about: &QuestionContext<'_>, pr: Option<u64>) -> Query {
    let mut text = String::from(question.trim());
    let newest_first = about.history.iter().rev().map(String::as_str);
    for part in about.finding.into_iter().chain(newest_first) {
        if text.len() + part.len() + 1 > MAX_QUERY_CHARS {
            break;
        }
        text.push('\n');
        text.push_str(part.trim());
    }
    let function = about
        .diff_hunk
        .and_then(|hunk| hunk.lines().next())
        .and_then(hunk_section);
    Query {
        trigger: Trigger::Question,
        text,
        language: about.path.and_then(language_of).map(str::to_string),
        paths: about.path.map(str::to_string).into_iter().collect(),
        functions: function.into_iter().collect(),
        pr,
    }
}

/// The trailing text of a `@@ -a,b +c,d @@ fn x()` header, when there is any.
fn hunk_section(header: &str) -> Option<String> {
    let rest = header.strip_prefix("@@")?;
    let (_, section) = rest.split_once("@@")?;
    let section = section.trim();
    (!section.is_empty()).then(|| section.to_string())
}

fn push_new(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|known| known == item) {
        list.push(item.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::github::FileStatus;

    fn file(name: &str, patch: &str) -> ChangedFile {
        ChangedFile::listed(name, FileStatus::Modified, Some(patch))
    }

    #[test]
    fn a_review_searches_its_added_code_paths_and_functions() {
        let files = [
            file(
                "src/parse.rs",
                "@@ -10,2 +10,4 @@ fn parse_header(line: &str)\n let a = 1;\n+let b = split(line);\n+let c = b.len();\n let d = 2;",
            ),
            file("Cargo.lock", "@@ -1 +1,2 @@\n a\n+b = \"1\""),
            file("web/app.py", "@@ -1 +1,2 @@\n x = 1\n+y = 2"),
        ];
        let query = for_review(&files, &[], Some(7));
        assert_eq!(query.trigger, Trigger::Review);
        assert_eq!(
            query.text,
            "let b = split(line);\nlet c = b.len();\ny = 2\n"
        );
        assert_eq!(query.paths, ["src/parse.rs", "web/app.py"]);
        assert_eq!(query.functions, ["fn parse_header(line: &str)"]);
        assert_eq!(query.language.as_deref(), Some("rust"));
        assert_eq!(query.pr, Some(7));

        let skipped = for_review(&files, &["src/**".to_string()], None);
        assert_eq!(skipped.paths, ["web/app.py"]);
        assert_eq!(skipped.language.as_deref(), Some("python"));
    }

    #[test]
    fn a_review_query_is_bounded() {
        let added: String = (0..400)
            .map(|i| format!("+let value_{i} = compute({i});\n"))
            .collect();
        let patch = format!("@@ -1,0 +1,400 @@\n{added}");
        let query = for_review(&[file("src/big.rs", &patch)], &[], None);
        assert!(query.text.len() <= MAX_QUERY_CHARS, "{}", query.text.len());
        assert!(query.text.starts_with("let value_0 = compute(0);\n"));
        assert!(query.text.ends_with(");\n"), "whole lines only");
    }

    #[test]
    fn a_question_searches_its_words_the_finding_and_the_newest_turns() {
        let history = ["old turn".to_string(), "newest turn".to_string()];
        let about = QuestionContext {
            finding: Some("SQL built by string formatting"),
            history: &history,
            path: Some("src/db.rs"),
            diff_hunk: Some("@@ -1,3 +1,6 @@ pub fn find(id: &str)\n+x"),
        };
        let query = for_question(" Is this really injectable? ", &about, Some(3));
        assert_eq!(query.trigger, Trigger::Question);
        assert_eq!(
            query.text,
            "Is this really injectable?\nSQL built by string formatting\nnewest turn\nold turn"
        );
        assert_eq!(query.paths, ["src/db.rs"]);
        assert_eq!(query.functions, ["pub fn find(id: &str)"]);
        assert_eq!(query.language.as_deref(), Some("rust"));
        assert_eq!(query.pr, Some(3));

        let bare = for_question("why?", &QuestionContext::default(), None);
        assert_eq!(bare.text, "why?");
        assert!(bare.paths.is_empty() && bare.functions.is_empty());
        assert_eq!(bare.language, None);
    }

    #[test]
    fn the_budget_is_the_smaller_of_the_setting_and_the_room() {
        let config = RetrievalConfig::default();
        assert_eq!(
            settings(&config, 100_000).map(|s| s.budget_chars),
            Some(6000)
        );
        assert_eq!(settings(&config, 2000).map(|s| s.budget_chars), Some(2000));
        assert_eq!(settings(&config, MIN_ROOM_CHARS - 1), None);
        let off = RetrievalConfig {
            enabled: false,
            ..RetrievalConfig::default()
        };
        assert_eq!(settings(&off, 100_000), None);
    }
}
