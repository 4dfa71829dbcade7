//! `review.instructions`: a team's own words for the files that match some globs ("every
//! migration must be reversible" for `migrations/**`, "this client is generated: only its
//! template matters" for `api/gen/**`), written once in `.parley.yml` and reviewed like
//! code, rather than taught comment by comment.
//!
//! They come from the default branch, as every key does, so what they say carries the
//! authority of whoever may change it there; a PR's own `.parley.yml` never reaches them.
//! The text still reaches prompts as the repository's guidance, fenced like a guideline
//! file: it says what to look at, it cannot change who may lift a finding.

use serde_json::Value;

/// How many entries the key may hold: each one is read into every pass of a review that
/// touches its files.
pub const MAX_INSTRUCTIONS: usize = 20;
/// How long one entry's text may be, in characters: a paragraph, not a style guide (a
/// long one belongs in a guideline file, `AGENTS.md`, beside the code it is about).
pub const MAX_TEXT_CHARS: usize = 1_500;

/// What to keep in mind when reviewing (and answering about) files matching `paths`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathInstruction {
    /// Globs, as in `review.skipPaths`; one matching a changed file brings the text in.
    pub paths: Vec<String>,
    pub text: String,
}

impl PathInstruction {
    /// Whether one of the globs matches one of `paths` (the globs compiled once).
    pub fn applies_to_any<'p>(&self, paths: impl IntoIterator<Item = &'p str>) -> bool {
        let set = crate::review::inputs::glob_set(&self.paths);
        paths.into_iter().any(|path| set.is_match(path))
    }
}

/// The entries of `review.instructions`, or why the key is rejected as a whole (a
/// mistake in one entry leaves all of them out, and the warning names it: half a
/// team's instructions applied silently would be worse than none, said).
pub(super) fn parse(value: &Value) -> Result<Vec<PathInstruction>, String> {
    let entries = value
        .as_array()
        .ok_or("is not a list of {paths, text} entries")?;
    if entries.len() > MAX_INSTRUCTIONS {
        return Err(format!(
            "has {} entries, more than the {MAX_INSTRUCTIONS} allowed",
            entries.len()
        ));
    }
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| entry_of(entry).map_err(|why| format!("entry {}: {why}", i + 1)))
        .collect()
}

fn entry_of(entry: &Value) -> Result<PathInstruction, String> {
    let map = entry
        .as_object()
        .ok_or("is not a mapping with `paths` and `text`")?;
    if let Some(unknown) = map.keys().find(|k| !matches!(k.as_str(), "paths" | "text")) {
        return Err(format!("`{unknown}` is not `paths` or `text`"));
    }
    let paths: Vec<String> = match map.get("paths") {
        Some(Value::String(one)) => vec![one.trim().to_string()],
        Some(Value::Array(list)) => list
            .iter()
            .map(|g| g.as_str().map(|s| s.trim().to_string()))
            .collect::<Option<_>>()
            .ok_or("`paths` is not a list of globs")?,
        _ => return Err("`paths` (a glob or a list of globs) is missing".into()),
    };
    if paths.is_empty() || paths.iter().any(String::is_empty) {
        return Err("`paths` names no glob".into());
    }
    if let Some(bad) = paths.iter().find(|g| globset::Glob::new(g).is_err()) {
        return Err(format!("{bad:?} is not a valid glob"));
    }
    let text = map
        .get("text")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or("`text` is missing or empty")?;
    let chars = text.chars().count();
    if chars > MAX_TEXT_CHARS {
        return Err(format!(
            "`text` is {chars} characters, more than {MAX_TEXT_CHARS}"
        ));
    }
    Ok(PathInstruction {
        paths,
        text: text.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_take_one_glob_or_several() {
        let parsed = parse(&json!([
            {"paths": "migrations/**", "text": " Every migration must be reversible. "},
            {"paths": ["api/gen/**", "**/*.pb.go"], "text": "Generated."},
        ]))
        .unwrap();
        assert_eq!(parsed[0].paths, ["migrations/**"]);
        assert_eq!(parsed[0].text, "Every migration must be reversible.");
        assert!(parsed[1].applies_to_any(["src/a.rs", "x/y.pb.go"]));
        assert!(
            parsed[1].applies_to_any(["root.pb.go"]),
            "`**/` matches at the root too"
        );
        assert!(!parsed[1].applies_to_any(["api/other.rs", "migrations/1.sql"]));
    }

    #[test]
    fn a_mistake_in_one_entry_names_the_entry() {
        let cases = [
            (json!("migrations/**"), "is not a list"),
            (json!([{"paths": "a/**"}]), "entry 1: `text` is missing"),
            (json!([{"text": "x"}]), "entry 1: `paths`"),
            (json!([{"paths": [], "text": "x"}]), "names no glob"),
            (json!([{"paths": "a/[", "text": "x"}]), "not a valid glob"),
            (
                json!([{"paths": "a", "text": "x"}, {"paths": "b", "text": "y", "path": "c"}]),
                "entry 2: `path` is not",
            ),
            (json!([{"paths": [1], "text": "x"}]), "not a list of globs"),
            (
                json!([{"paths": "a", "text": "x".repeat(MAX_TEXT_CHARS + 1)}]),
                "more than 1500",
            ),
            (
                Value::Array(vec![
                    json!({"paths": "a", "text": "x"});
                    MAX_INSTRUCTIONS + 1
                ]),
                "21 entries",
            ),
        ];
        for (value, expected) in cases {
            let err = parse(&value).unwrap_err();
            assert!(err.contains(expected), "{value}: {err}");
        }
    }
}
