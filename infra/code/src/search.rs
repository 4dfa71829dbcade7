//! The `search` and `list_dir` tools over a snapshot held in memory.
//!
//! Matching is ripgrep's: `grep-regex` builds the matcher (a line-oriented regex, so a
//! pattern cannot match across lines or blow up on a long file) and `grep-searcher` runs
//! it over each file's bytes. The snapshot is already in memory, so there is no walking
//! of directories (and no `ignore` crate): the files were filtered when the snapshot was
//! taken. Paths are matched with `globset`, as ripgrep's `-g` does.

use crate::snapshot::Snapshot;
use globset::GlobBuilder;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::SearcherBuilder;
use grep_searcher::sinks::UTF8;
use parley_core::ports::code::SearchHit;
use std::collections::BTreeSet;

/// The longest pattern accepted: a model's regex is untrusted input.
const MAX_PATTERN: usize = 500;
/// Cap on the compiled regex, so a pathological pattern is refused, not run.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

pub fn search(
    snapshot: &Snapshot,
    pattern: &str,
    path_glob: Option<&str>,
    max_hits: usize,
) -> Result<Vec<SearchHit>, String> {
    if pattern.len() > MAX_PATTERN {
        return Err(format!(
            "the pattern is longer than {MAX_PATTERN} characters"
        ));
    }
    let matcher = RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build(pattern)
        .map_err(|e| format!("not a valid regular expression: {e}"))?;
    let glob = match path_glob {
        Some(glob) => Some(
            GlobBuilder::new(glob.trim())
                .literal_separator(false)
                .build()
                .map_err(|e| format!("not a valid glob: {e}"))?
                .compile_matcher(),
        ),
        None => None,
    };
    let mut searcher = SearcherBuilder::new().line_number(true).build();
    let mut hits = Vec::new();
    for (path, text) in &snapshot.files {
        if hits.len() >= max_hits {
            break;
        }
        if glob.as_ref().is_some_and(|g| !g.is_match(path)) {
            continue;
        }
        let result = searcher.search_slice(
            &matcher,
            text.as_bytes(),
            UTF8(|line, content| {
                hits.push(SearchHit {
                    path: path.clone(),
                    line: u32::try_from(line).unwrap_or(u32::MAX),
                    text: content.trim_end().to_string(),
                });
                Ok(hits.len() < max_hits)
            }),
        );
        if let Err(err) = result {
            tracing::debug!(path, error = %err, "search skipped a file");
        }
    }
    Ok(hits)
}

pub fn list_dir(snapshot: &Snapshot, dir: &str) -> Option<Vec<String>> {
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{}/", dir.trim_end_matches('/'))
    };
    let mut entries = BTreeSet::new();
    for path in snapshot.files.keys() {
        let Some(rest) = path.strip_prefix(&prefix) else {
            continue;
        };
        match rest.split_once('/') {
            Some((sub, _)) => entries.insert(format!("{sub}/")),
            None => entries.insert(rest.to_string()),
        };
    }
    (!entries.is_empty()).then(|| entries.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> Snapshot {
        let mut s = Snapshot::default();
        s.files.insert(
            "src/app.rs".into(),
            "fn main() {\n    let user = find(id);\n    if user.is_none() { return; }\n}\n".into(),
        );
        s.files.insert(
            "src/db/users.rs".into(),
            "pub fn find(id: u64) -> Option<User> {\n    None\n}\n".into(),
        );
        s.files.insert("README.md".into(), "find things\n".into());
        s
    }

    #[test]
    fn search_finds_lines_in_the_files_the_glob_names() {
        let hits = search(&snapshot(), r"find\(", Some("src/**/*.rs"), 10).unwrap();
        let found: Vec<(String, u32)> = hits.iter().map(|h| (h.path.clone(), h.line)).collect();
        assert_eq!(
            found,
            vec![("src/app.rs".into(), 2), ("src/db/users.rs".into(), 1)]
        );
        assert_eq!(
            search(&snapshot(), "find", None, 2).unwrap().len(),
            2,
            "capped"
        );
        assert!(search(&snapshot(), "(unclosed", None, 10).is_err());
        assert!(search(&snapshot(), "x", Some("[bad"), 10).is_err());
    }

    #[test]
    fn list_dir_shows_files_and_subdirectories() {
        let s = snapshot();
        assert_eq!(list_dir(&s, "").unwrap(), vec!["README.md", "src/"]);
        assert_eq!(list_dir(&s, "src").unwrap(), vec!["app.rs", "db/"]);
        assert_eq!(list_dir(&s, "nope"), None);
    }
}
