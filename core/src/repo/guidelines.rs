//! Guideline files (CLAUDE.md, AGENTS.md, …) from the base ref: the repository's own words
//! on how code there should be written, for the review and conversation prompts.

use crate::config::PathInstruction;
use crate::ports::github::{GitHub, RepoScope};

/// Names looked for at the root and in each directory a change touches.
pub const GUIDELINE_FILES: [&str; 3] = ["CLAUDE.md", ".claude/CLAUDE.md", "AGENTS.md"];

/// Directories deeper than this are not searched, and at most this many directories are:
/// a PR touching 500 folders must not cost 1 500 contents calls.
const MAX_DIRECTORIES: usize = 8;

/// Per-file cap; guideline files are meant to be short, and the prompt budget is shared.
const MAX_CHARS: usize = 12_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guideline {
    pub path: String,
    pub text: String,
}

impl Guideline {
    /// A guideline file's text as prompts take it: cleaned of hidden text and capped.
    pub fn from_text(path: String, text: &str) -> Self {
        Guideline {
            path,
            text: crate::sanitize::truncate(&crate::sanitize::user_text(text), MAX_CHARS),
        }
    }
}

/// Where `review.instructions` are said to come from, in prompts and in tests.
pub const INSTRUCTIONS_SOURCE: &str = ".parley.yml (review.instructions)";

/// The entries of `review.instructions` whose globs match one of `touched`, as one more
/// guideline, each under its globs; `None` when none applies. Not cut like a file: the
/// config's caps bound it.
pub fn instructions_for(instructions: &[PathInstruction], touched: &[String]) -> Option<Guideline> {
    let mut text = String::new();
    for entry in instructions {
        if entry.applies_to_any(touched.iter().map(String::as_str)) {
            let globs: Vec<String> = entry
                .paths
                .iter()
                .map(|g| format!("`{}`", crate::sanitize::inline_name(g)))
                .collect();
            text.push_str(&format!(
                "For files matching {}:\n{}\n\n",
                globs.join(", "),
                crate::sanitize::user_text(&entry.text)
            ));
        }
    }
    (!text.is_empty()).then(|| Guideline {
        path: INSTRUCTIONS_SOURCE.to_string(),
        text: text.trim_end().to_string(),
    })
}

/// The candidate paths for `touched` files: the root files, then each touched directory's
/// own, nearest the root first, deduplicated and bounded.
pub fn guideline_paths(touched: &[String]) -> Vec<String> {
    let dirs = super::touched_directories(touched, MAX_DIRECTORIES);
    let mut paths: Vec<String> = GUIDELINE_FILES.iter().map(|f| f.to_string()).collect();
    for dir in dirs {
        for name in ["CLAUDE.md", "AGENTS.md"] {
            paths.push(format!("{dir}/{name}"));
        }
    }
    paths
}

/// Read whichever guideline files exist at `base_ref`. Failures are logged and skipped:
/// guidelines improve an answer but never block one. The first failure that says GitHub
/// is in trouble (a 5xx, a timeout, a rate limit) skips the files not read yet: read one
/// after another, up to 19 of them, each could otherwise cost a full request timeout and
/// together outlast the worker's own.
pub async fn load_guidelines(
    github: &dyn GitHub,
    scope: &RepoScope,
    base_ref: &str,
    touched: &[String],
) -> Vec<Guideline> {
    let mut found = Vec::new();
    for path in guideline_paths(touched) {
        match github.get_file_contents(scope, &path, base_ref).await {
            Ok(Some(file)) => {
                if let Some(text) = file.text() {
                    found.push(Guideline::from_text(path, text));
                }
            }
            Ok(None) => {}
            Err(err) if err.is_transient() => {
                tracing::warn!(repo = %scope.full_name(), path, error = %err, "could not read a guideline file; going on without it and the rest");
                break;
            }
            Err(err) => {
                tracing::warn!(repo = %scope.full_name(), path, error = %err, "could not read a guideline file; going on without it");
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_then_touched_directories() {
        let paths = guideline_paths(&[
            "src/api/handler.rs".into(),
            "src/lib.rs".into(),
            "README.md".into(),
        ]);
        assert_eq!(
            paths,
            vec![
                "CLAUDE.md",
                ".claude/CLAUDE.md",
                "AGENTS.md",
                "src/CLAUDE.md",
                "src/AGENTS.md",
                "src/api/CLAUDE.md",
                "src/api/AGENTS.md",
            ]
        );
    }

    #[test]
    fn instructions_apply_to_the_files_their_globs_match() {
        let (config, warnings) = crate::config::parse(
            "review:\n  instructions:\n    - {paths: 'migrations/**', text: 'Every migration must be reversible.'}\n    - {paths: ['**/*.sql', 'db/**'], text: \"Name the index.\\u200b\"}\n",
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let entries = &config.review.instructions;
        let touched =
            |paths: &[&str]| -> Vec<String> { paths.iter().map(|p| p.to_string()).collect() };

        assert_eq!(instructions_for(entries, &touched(&["src/main.rs"])), None);
        let one =
            instructions_for(entries, &touched(&["src/main.rs", "migrations/1_up.rb"])).unwrap();
        assert_eq!(one.path, INSTRUCTIONS_SOURCE);
        assert_eq!(
            one.text,
            "For files matching `migrations/**`:\nEvery migration must be reversible."
        );
        let both =
            instructions_for(entries, &touched(&["migrations/2.sql", "migrations/3.sql"])).unwrap();
        assert!(
            both.text.contains("`**/*.sql`, `db/**`:\nName the index."),
            "{}",
            both.text
        );
        assert!(!both.text.contains('\u{200b}'), "cleaned like user text");
        assert_eq!(instructions_for(entries, &[]), None);
        assert_eq!(instructions_for(&[], &touched(&["migrations/2.sql"])), None);
    }

    #[test]
    fn directory_count_is_bounded() {
        let touched: Vec<String> = (0..50).map(|i| format!("d{i}/f.rs")).collect();
        assert_eq!(guideline_paths(&touched).len(), 3 + 2 * MAX_DIRECTORIES);
    }
}
