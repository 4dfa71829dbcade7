//! Definitions and references of a snapshot, by tree-sitter, in the manner of a tags
//! file or Aider's repository map: each grammar's own `tags.scm` query says what a
//! definition (function, method, class, interface, module) and a reference (a call, a
//! type used) is, with its name. Built once per snapshot; every question after is a map
//! look-up. Files in languages without a grammar here are kept for their text only.

use crate::snapshot::Snapshot;
use parley_core::ports::code::{Codebase, Span};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use streaming_iterator::StreamingIterator;
use tree_sitter::{Language, Parser, Query, QueryCursor};

#[derive(Debug, Clone)]
struct Def {
    name: String,
    /// Shared by every tag of the file: a large repository has hundreds of thousands.
    path: Arc<str>,
    start: u32,
    end: u32,
}

#[derive(Debug, Clone)]
struct Ref {
    name: String,
    path: Arc<str>,
    line: u32,
}

/// A snapshot and its tags.
pub struct CodeIndex {
    snapshot: Snapshot,
    defs: Vec<Def>,
    defs_by_name: HashMap<String, Vec<usize>>,
    defs_by_path: HashMap<Arc<str>, Vec<usize>>,
    refs: Vec<Ref>,
    refs_by_name: HashMap<String, Vec<usize>>,
    refs_by_path: HashMap<Arc<str>, Vec<usize>>,
}

/// One language: its grammar and its tags query, compiled once.
struct Tags {
    language: Language,
    query: Query,
}

fn tags(extension: &str) -> Option<Tags> {
    let (language, query): (Language, String) = match extension {
        "rs" => (
            tree_sitter_rust::LANGUAGE.into(),
            tree_sitter_rust::TAGS_QUERY.into(),
        ),
        "py" => (
            tree_sitter_python::LANGUAGE.into(),
            tree_sitter_python::TAGS_QUERY.into(),
        ),
        "js" | "jsx" | "mjs" | "cjs" => (
            tree_sitter_javascript::LANGUAGE.into(),
            tree_sitter_javascript::TAGS_QUERY.into(),
        ),
        // TypeScript's tags add to JavaScript's (its grammar is a superset).
        "ts" | "mts" | "cts" => (
            tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            format!(
                "{}\n{}",
                tree_sitter_javascript::TAGS_QUERY,
                tree_sitter_typescript::TAGS_QUERY
            ),
        ),
        "tsx" => (
            tree_sitter_typescript::LANGUAGE_TSX.into(),
            format!(
                "{}\n{}",
                tree_sitter_javascript::TAGS_QUERY,
                tree_sitter_typescript::TAGS_QUERY
            ),
        ),
        "go" => (
            tree_sitter_go::LANGUAGE.into(),
            tree_sitter_go::TAGS_QUERY.into(),
        ),
        "java" => (
            tree_sitter_java::LANGUAGE.into(),
            tree_sitter_java::TAGS_QUERY.into(),
        ),
        _ => return None,
    };
    match Query::new(&language, &query) {
        Ok(query) => Some(Tags { language, query }),
        Err(err) => {
            tracing::warn!(extension, error = %err, "tags query does not compile; text only");
            None
        }
    }
}

/// A definition or a reference found in one file.
struct Tag {
    name: String,
    start: u32,
    end: u32,
    definition: bool,
}

/// Tag files of `files` until none is left, taking the next one from `next`; each with
/// its position. One parser and one compiled query per language per thread.
fn tag_files(
    files: &[(&String, &String)],
    next: &std::sync::atomic::AtomicUsize,
) -> Vec<(usize, Vec<Tag>)> {
    let mut languages: HashMap<String, Option<Tags>> = HashMap::new();
    let mut parser = Parser::new();
    let mut out = Vec::new();
    loop {
        let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let Some((path, text)) = files.get(at) else {
            return out;
        };
        let Some(extension) = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()) else {
            continue;
        };
        let tags = languages
            .entry(extension.clone())
            .or_insert_with(|| tags(&extension));
        if let Some(tags) = tags.as_ref() {
            out.push((at, tag_file(&mut parser, tags, text)));
        }
    }
}

fn tag_file(parser: &mut Parser, tags: &Tags, text: &str) -> Vec<Tag> {
    let mut out = Vec::new();
    if parser.set_language(&tags.language).is_err() {
        return out;
    }
    let Some(tree) = parser.parse(text, None) else {
        return out;
    };
    let names = tags.query.capture_names();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(&tags.query, tree.root_node(), text.as_bytes());
    while let Some(found) = matches.next() {
        let mut name = None;
        let mut role: Option<(&str, tree_sitter::Node)> = None;
        for capture in found.captures {
            let capture_name = names[capture.index as usize];
            if capture_name == "name" {
                name = capture.node.utf8_text(text.as_bytes()).ok();
            } else if capture_name.starts_with("definition.")
                || capture_name.starts_with("reference.")
            {
                role = Some((capture_name, capture.node));
            }
        }
        let (Some(name), Some((role, node))) = (name, role) else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() {
            continue;
        }
        out.push(Tag {
            name: name.to_string(),
            start: node.start_position().row as u32 + 1,
            end: node.end_position().row as u32 + 1,
            definition: role.starts_with("definition."),
        });
    }
    out
}

impl CodeIndex {
    /// Parse and tag every file of a language with tags, on all cores: the files are
    /// independent, and parsing is most of a review's wait for its context. The result
    /// is the same as tagging them one by one in path order.
    pub fn build(snapshot: Snapshot) -> CodeIndex {
        let files: Vec<(&String, &String)> = snapshot.files.iter().collect();
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 8);
        // Each thread takes the next file not yet taken: file sizes vary by orders of
        // magnitude, so fixed shares would leave one core with the big ones.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut tagged: Vec<(usize, Vec<Tag>)> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| scope.spawn(|| tag_files(&files, &next)))
                .collect();
            workers
                .into_iter()
                .flat_map(|worker| worker.join().unwrap_or_default())
                .collect()
        });
        tagged.sort_by_key(|(at, _)| *at);
        let mut index = CodeIndex {
            snapshot: Snapshot::default(),
            defs: Vec::new(),
            defs_by_name: HashMap::new(),
            defs_by_path: HashMap::new(),
            refs: Vec::new(),
            refs_by_name: HashMap::new(),
            refs_by_path: HashMap::new(),
        };
        for (at, tags) in tagged {
            let path: Arc<str> = Arc::from(files[at].0.as_str());
            for tag in tags {
                index.add(&path, tag);
            }
        }
        index.snapshot = snapshot;
        index
    }

    fn add(&mut self, path: &Arc<str>, tag: Tag) {
        if tag.definition {
            let at = self.defs.len();
            self.defs_by_name
                .entry(tag.name.clone())
                .or_default()
                .push(at);
            self.defs_by_path.entry(path.clone()).or_default().push(at);
            self.defs.push(Def {
                name: tag.name,
                path: path.clone(),
                start: tag.start,
                end: tag.end,
            });
        } else {
            let at = self.refs.len();
            self.refs_by_name
                .entry(tag.name.clone())
                .or_default()
                .push(at);
            self.refs_by_path.entry(path.clone()).or_default().push(at);
            self.refs.push(Ref {
                name: tag.name,
                path: path.clone(),
                line: tag.start,
            });
        }
    }

    pub fn definition_count(&self) -> usize {
        self.defs.len()
    }

    pub fn reference_count(&self) -> usize {
        self.refs.len()
    }

    fn span(def: &Def) -> Span {
        Span {
            path: def.path.to_string(),
            start: def.start,
            end: def.end,
            name: Some(def.name.clone()),
        }
    }
}

impl Codebase for CodeIndex {
    fn enclosing(&self, path: &str, line: u32) -> Option<Span> {
        self.defs_by_path
            .get(path)?
            .iter()
            .map(|&i| &self.defs[i])
            .filter(|d| d.start <= line && line <= d.end)
            .min_by_key(|d| d.end - d.start)
            .map(Self::span)
    }

    fn definitions(&self, name: &str) -> Vec<Span> {
        self.defs_by_name
            .get(name)
            .map(|all| all.iter().map(|&i| Self::span(&self.defs[i])).collect())
            .unwrap_or_default()
    }

    fn callers(&self, name: &str) -> Vec<Span> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for &i in self.refs_by_name.get(name).into_iter().flatten() {
            let reference = &self.refs[i];
            if let Some(span) = self.enclosing(&reference.path, reference.line)
                && span.name.as_deref() != Some(name)
                && seen.insert((span.path.clone(), span.start))
            {
                out.push(span);
            }
        }
        out
    }

    fn names_used(&self, path: &str, start: u32, end: u32) -> Vec<String> {
        let mut names = BTreeSet::new();
        for &i in self.refs_by_path.get(path).into_iter().flatten() {
            let reference = &self.refs[i];
            if start <= reference.line && reference.line <= end {
                names.insert(reference.name.clone());
            }
        }
        names.into_iter().collect()
    }

    fn text(&self, span: &Span) -> Option<String> {
        let text = self.snapshot.files.get(&span.path)?;
        let lines: Vec<&str> = text
            .lines()
            .skip(span.start.saturating_sub(1) as usize)
            .take(span.lines() as usize)
            .collect();
        Some(lines.join("\n"))
    }

    fn files(&self) -> usize {
        self.snapshot.files.len()
    }

    fn line_count(&self, path: &str) -> Option<u32> {
        let text = self.snapshot.files.get(path)?;
        Some(u32::try_from(text.lines().count()).unwrap_or(u32::MAX))
    }

    fn list_dir(&self, dir: &str) -> Option<Vec<String>> {
        crate::search::list_dir(&self.snapshot, dir)
    }

    fn search(
        &self,
        pattern: &str,
        path_glob: Option<&str>,
        max_hits: usize,
    ) -> Result<Vec<parley_core::ports::code::SearchHit>, String> {
        crate::search::search(&self.snapshot, pattern, path_glob, max_hits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(files: &[(&str, &str)]) -> CodeIndex {
        let mut snapshot = Snapshot::default();
        for (path, text) in files {
            snapshot.files.insert(path.to_string(), text.to_string());
        }
        CodeIndex::build(snapshot)
    }

    /// Each language: the enclosing function of a line, a callee's definition in another
    /// file, and its callers.
    #[test]
    fn definitions_callers_and_names_in_every_language() {
        let cases: [(&str, &str, &str, u32); 6] = [
            (
                "src/lib.rs",
                "fn helper(x: i32) -> i32 {\n    x + 1\n}\n",
                "fn main() {\n    let y = helper(2);\n}\n",
                2,
            ),
            (
                "lib.py",
                "def helper(x):\n    return x + 1\n",
                "def main():\n    y = helper(2)\n",
                2,
            ),
            (
                "lib.js",
                "function helper(x) {\n  return x + 1;\n}\n",
                "function main() {\n  const y = helper(2);\n}\n",
                2,
            ),
            (
                "lib.ts",
                "function helper(x: number): number {\n  return x + 1;\n}\n",
                "function main(): void {\n  const y = helper(2);\n}\n",
                2,
            ),
            (
                "lib.go",
                "package lib\n\nfunc helper(x int) int {\n\treturn x + 1\n}\n",
                "package lib\n\nfunc main() {\n\ty := helper(2)\n\t_ = y\n}\n",
                4,
            ),
            (
                "Lib.java",
                "class Lib {\n  static int helper(int x) {\n    return x + 1;\n  }\n}\n",
                "class Main {\n  void main() {\n    int y = Lib.helper(2);\n  }\n}\n",
                3,
            ),
        ];
        for (path, helper, main, call_line) in cases {
            let caller_path = format!("caller_{path}").replace("src/", "");
            let index = index(&[(path, helper), (&caller_path, main)]);
            let defs = index.definitions("helper");
            assert_eq!(defs.len(), 1, "{path}: {defs:?}");
            assert_eq!(defs[0].path, path);
            let used = index.names_used(&caller_path, call_line, call_line);
            assert!(used.contains(&"helper".to_string()), "{path}: {used:?}");
            let callers = index.callers("helper");
            assert_eq!(callers.len(), 1, "{path}: {callers:?}");
            assert_eq!(callers[0].name.as_deref(), Some("main"), "{path}");
            let enclosing = index.enclosing(&caller_path, call_line).expect("enclosing");
            assert_eq!(enclosing.name.as_deref(), Some("main"), "{path}");
            let text = index.text(&defs[0]).expect("text");
            assert!(text.contains("helper"), "{path}: {text}");
        }
    }

    #[test]
    fn other_languages_are_kept_for_their_text_only() {
        let index = index(&[("notes.md", "# helper\n")]);
        assert_eq!(index.definition_count(), 0);
        assert_eq!(index.files(), 1);
    }
}
