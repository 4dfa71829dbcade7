//! Read-only tools a review pass may call on the snapshot, where the provider takes tool
//! calls: the model asks for the file, definition or caller the static context did not
//! include, as a reviewer would open it.
//!
//! How a pass or an answer uses them, and answers in the same turn, is
//! [`super::explore`]; this module is the tools themselves.
//!
//! Everything here is bounded: calls per pass and per review, bytes per pass, wall time
//! per pass (`review.context.tools.*`). Paths are confined to the snapshot (no absolute
//! paths, no `..`; the snapshot itself holds no links). Each result is code someone else
//! wrote, fenced as data.

use crate::config::ToolBounds;
use crate::context::render_piece;
use crate::ports::code::{Codebase, Span};
use crate::ports::llm::{ToolCall, ToolResult, ToolSpec};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU32, Ordering};

pub const READ_FILE: &str = "read_file";
pub const SEARCH: &str = "search";
pub const FIND_DEFINITION: &str = "find_definition";
pub const FIND_REFERENCES: &str = "find_references";
pub const LIST_DIR: &str = "list_dir";

/// Lines `read_file` returns when no range is given, and at most.
const DEFAULT_READ_LINES: u32 = 200;
const MAX_READ_LINES: u32 = 400;
const MAX_SEARCH_HITS: usize = 40;
const MAX_DEFINITIONS: usize = 5;
const MAX_REFERENCES: usize = 30;
const MAX_DIR_ENTRIES: usize = 200;
/// A definition longer than this is shown up to here (the model can read the rest).
const MAX_DEFINITION_LINES: u32 = 120;

/// The tools, as every provider takes them.
pub fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: READ_FILE,
            description: "Read lines of a file in the repository at the reviewed head. Lines are numbered from 1; without a range, the first 200 lines.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path from the repository root, e.g. src/app.rs"},
                    "start_line": {"type": "integer", "minimum": 1},
                    "end_line": {"type": "integer", "minimum": 1}
                },
                "required": ["path"]
            }),
        },
        ToolSpec {
            name: SEARCH,
            description: "Search the repository for lines matching a regular expression, optionally only in files matching a glob (e.g. src/**/*.rs).",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string"},
                    "path_glob": {"type": "string"}
                },
                "required": ["pattern"]
            }),
        },
        symbol_tool(
            FIND_DEFINITION,
            "Show where a function, method or type is defined in the repository, with its code. Give from_path, the file that uses it, to have the definition that file imports first.",
            (
                "from_path",
                "The file that uses the symbol, e.g. src/app.rs",
            ),
        ),
        symbol_tool(
            FIND_REFERENCES,
            "List the functions and types whose code refers to a symbol (its callers and users), as path:start-end. Give defined_in, the file that defines it, to have the files that import it from there first.",
            (
                "defined_in",
                "The file that defines the symbol, e.g. src/store.rs",
            ),
        ),
        ToolSpec {
            name: LIST_DIR,
            description: "List the files and directories directly under a directory of the repository (empty path: the root).",
            input_schema: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}}
            }),
        },
    ]
}

/// A tool asked about a symbol, and the file (`path`, what it is) that ranks its answer.
fn symbol_tool(
    name: &'static str,
    description: &'static str,
    (path, what): (&str, &str),
) -> ToolSpec {
    let mut properties = serde_json::Map::new();
    properties.insert("symbol".into(), json!({"type": "string"}));
    properties.insert(path.into(), json!({"type": "string", "description": what}));
    ToolSpec {
        name,
        description,
        input_schema: json!({"type": "object", "properties": properties, "required": ["symbol"]}),
    }
}

/// The tools over one snapshot, shared by a review's passes and its judge (the
/// per-review call count is theirs together).
pub struct Toolbox<'a> {
    code: &'a dyn Codebase,
    bounds: ToolBounds,
    review_calls: AtomicU32,
    /// Calls of the review's allowance the passes may not spend, kept for the judge,
    /// which reads last: without them, five passes that read a lot would leave it
    /// nothing to check a finding with before it drops or keeps it.
    held_back: AtomicU32,
    /// The file the reading starts from (a thread's commented file): what ranks a
    /// symbol's definitions and references when the model names no file.
    asked_from: Option<String>,
    /// Its line (a thread's commented line), whose spelling of a symbol may say more
    /// than the file (see [`Codebase::definitions_near_line`]).
    asked_line: Option<u32>,
}

/// What one pass has spent.
#[derive(Debug, Default)]
pub(super) struct PassSpend {
    pub(super) calls: u32,
    pub(super) bytes: usize,
}

impl<'a> Toolbox<'a> {
    pub fn new(code: &'a dyn Codebase, bounds: ToolBounds) -> Self {
        Toolbox {
            code,
            bounds,
            review_calls: AtomicU32::new(0),
            held_back: AtomicU32::new(0),
            asked_from: None,
            asked_line: None,
        }
    }

    /// Rank `find_definition` and `find_references` as `path` reaches a symbol when the
    /// model gives no file of its own: in a thread about a finding in `pay.py`,
    /// `find_definition("validate")` is the `validate` `pay.py` imports, not the first
    /// homonym in path order.
    pub fn asked_from(mut self, path: Option<&str>) -> Self {
        self.asked_from = path.map(str::to_string);
        self
    }

    /// The line of [`Toolbox::asked_from`]'s file the question is about: a Go thread on
    /// `inv := New()` is about its own package's `New`, whatever else the file imports.
    pub fn on_line(mut self, line: Option<u32>) -> Self {
        self.asked_line = line;
        self
    }

    /// The definitions of `symbol` nearest `from`, on the asking line where the model
    /// named no file (`asked`).
    fn definitions_from(&self, symbol: &str, from: &str, asked: bool, most: usize) -> Vec<Span> {
        match self.asked_line.filter(|_| asked) {
            Some(line) => self.code.definitions_near_line(symbol, from, line, most),
            None => self.code.definitions_near(symbol, from, most),
        }
    }

    /// Keep a share of the review's calls for each of `last` readers that come after
    /// `readers_before` others (the judges of a review's parts after every part's
    /// passes): a fair share of the allowance each, at most what one pass may make.
    /// Those before them reach the review's limit that much sooner.
    pub(crate) fn keeping_shares_for_last(self, readers_before: usize, last: usize) -> Self {
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let per_review = self.bounds.max_calls_per_review;
        let share = per_review
            .div_ceil(count(readers_before).saturating_add(count(last)).max(1))
            .min(self.bounds.max_calls_per_pass);
        let kept = share.saturating_mul(count(last)).min(per_review);
        self.held_back.store(kept, Ordering::SeqCst);
        self
    }

    /// The last reader's turn: what was kept for it may now be spent.
    pub(crate) fn release_what_was_kept(&self) {
        self.held_back.store(0, Ordering::SeqCst);
    }

    pub(super) fn bounds(&self) -> &ToolBounds {
        &self.bounds
    }

    /// Tool calls answered so far in this review.
    pub fn calls(&self) -> u32 {
        self.review_calls.load(Ordering::SeqCst)
    }

    /// Answer one call, within what the pass and the review have left.
    pub(super) fn call(&self, call: &ToolCall, spend: &mut PassSpend) -> ToolResult {
        let refuse = |why: String| ToolResult {
            call_id: call.id.clone(),
            content: why,
            is_error: true,
        };
        if spend.calls >= self.bounds.max_calls_per_pass {
            return refuse("this pass has made all the tool calls it may; answer now".into());
        }
        let max = self
            .bounds
            .max_calls_per_review
            .saturating_sub(self.held_back.load(Ordering::SeqCst));
        if self
            .review_calls
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .is_err()
        {
            return refuse("this review has made all the tool calls it may; answer now".into());
        }
        spend.calls += 1;
        let left = (self.bounds.max_bytes_per_pass as usize).saturating_sub(spend.bytes);
        if left == 0 {
            return refuse("this pass has read all it may; answer now".into());
        }
        match self.run(&call.name, &call.input) {
            Ok(mut content) => {
                if content.len() > left {
                    let mut cut = left;
                    while !content.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    content.truncate(cut);
                    content.push_str("\n(cut: this pass has read all it may)\n</code>\n");
                }
                spend.bytes += content.len();
                ToolResult {
                    call_id: call.id.clone(),
                    content,
                    is_error: false,
                }
            }
            Err(why) => refuse(why),
        }
    }

    fn run(&self, name: &str, input: &Value) -> Result<String, String> {
        match name {
            READ_FILE => {
                let path = confine(text_arg(input, "path")?)?;
                let total = self
                    .code
                    .line_count(&path)
                    .ok_or_else(|| format!("no file {path} in the repository"))?;
                let start = number_arg(input, "start_line").unwrap_or(1).max(1);
                let end = number_arg(input, "end_line")
                    .unwrap_or(start + DEFAULT_READ_LINES - 1)
                    .min(start + MAX_READ_LINES - 1)
                    .min(total.max(1));
                if start > total.max(1) {
                    return Err(format!("{path} has {total} lines"));
                }
                let span = Span {
                    path: path.clone(),
                    start,
                    end: end.max(start),
                    name: None,
                };
                let text = self.code.text(&span).unwrap_or_default();
                Ok(render_piece(
                    &span,
                    &text,
                    &format!("{total} lines in the file"),
                    false,
                ))
            }
            SEARCH => {
                let pattern = text_arg(input, "pattern")?;
                let glob = input["path_glob"].as_str().filter(|g| !g.trim().is_empty());
                let hits = self.code.search(pattern, glob, MAX_SEARCH_HITS)?;
                if hits.is_empty() {
                    return Ok("no matches".into());
                }
                let mut out = String::from("<code>\n");
                for hit in &hits {
                    out.push_str(&format!(
                        "{}:{}: {}\n",
                        crate::sanitize::user_text(&hit.path),
                        hit.line,
                        crate::sanitize::fence_safe(&crate::sanitize::truncate(&hit.text, 200))
                    ));
                }
                if hits.len() >= MAX_SEARCH_HITS {
                    out.push_str("(more matches not shown: narrow the pattern or the glob)\n");
                }
                out.push_str("</code>\n");
                Ok(out)
            }
            FIND_DEFINITION => {
                let symbol = symbol_arg(input)?;
                // Ranked as the file that uses it reaches it: its own, the module it
                // imports it from, its directory's (a name such as `validate` is defined
                // in many places).
                let mut from = optional_path(input, "from_path")?;
                let asked = from.is_empty();
                if asked {
                    from = self.asked_from.clone().unwrap_or_default();
                }
                // Only as many as are shown: a lazy index parses no more files than that.
                let spans = self.definitions_from(symbol, &from, asked, MAX_DEFINITIONS);
                if spans.is_empty() {
                    return Ok(format!(
                        "no definition of {symbol} in the repository's own code"
                    ));
                }
                let mut out = String::new();
                for span in &spans {
                    let shown = Span {
                        end: span.end.min(span.start + MAX_DEFINITION_LINES - 1),
                        ..span.clone()
                    };
                    let text = self.code.text(&shown).unwrap_or_default();
                    out.push_str(&render_piece(
                        &shown,
                        &text,
                        &format!("definition of `{symbol}`"),
                        shown.end < span.end,
                    ));
                }
                Ok(out)
            }
            FIND_REFERENCES => {
                let symbol = symbol_arg(input)?;
                // Those that import it from where it is defined first: the calls of this
                // `validate`, not of a homonym's.
                let mut defined_in = optional_path(input, "defined_in")?;
                // Unsaid: the definition the asking file reaches (its import of it).
                if let (true, Some(asking)) = (defined_in.is_empty(), &self.asked_from) {
                    let nearest = self.definitions_from(symbol, asking, true, 1);
                    defined_in = nearest.first().map_or(asking.clone(), |s| s.path.clone());
                }
                let spans = self.code.callers_near(symbol, &defined_in, MAX_REFERENCES);
                if spans.is_empty() {
                    return Ok(format!("nothing in the repository refers to {symbol}"));
                }
                let mut out = String::from("<code>\n");
                for span in &spans {
                    out.push_str(&format!(
                        "{}:{}-{} {}\n",
                        crate::sanitize::user_text(&span.path),
                        span.start,
                        span.end,
                        crate::sanitize::user_text(span.name.as_deref().unwrap_or(""))
                    ));
                }
                out.push_str("</code>\n");
                Ok(out)
            }
            LIST_DIR => {
                let raw = input["path"].as_str().unwrap_or("");
                let dir = if raw.trim().trim_matches('/').is_empty() || raw.trim() == "." {
                    String::new()
                } else {
                    confine(raw)?
                };
                let entries = self
                    .code
                    .list_dir(&dir)
                    .ok_or_else(|| format!("no directory {dir} in the repository"))?;
                let mut out = String::from("<code>\n");
                for entry in entries.iter().take(MAX_DIR_ENTRIES) {
                    out.push_str(&crate::sanitize::user_text(entry));
                    out.push('\n');
                }
                out.push_str("</code>\n");
                Ok(out)
            }
            other => Err(format!(
                "there is no tool {}; the tools are read_file, search, find_definition, find_references and list_dir",
                crate::sanitize::truncate(other, 60)
            )),
        }
    }
}

/// A path the model gave, as a key of the snapshot: relative, `/`-separated, with no
/// `..` and nothing absolute. Refused, it reads nothing.
pub fn confine(path: &str) -> Result<String, String> {
    let trimmed = path.trim();
    let refuse = || {
        Err(format!(
            "{} is not a path inside the repository: give it relative to the root, without ..",
            crate::sanitize::truncate(trimmed, 120)
        ))
    };
    if trimmed.is_empty()
        || trimmed.starts_with('/')
        || trimmed.starts_with('~')
        || trimmed.contains('\\')
        || trimmed.contains('\0')
        || trimmed.as_bytes().get(1) == Some(&b':')
    {
        return refuse();
    }
    let mut parts = Vec::new();
    for part in trimmed.trim_end_matches('/').split('/') {
        match part {
            "" | "." => {}
            ".." => return refuse(),
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        return refuse();
    }
    Ok(parts.join("/"))
}

fn text_arg<'v>(input: &'v Value, name: &str) -> Result<&'v str, String> {
    input[name]
        .as_str()
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| format!("{name} is required"))
}

fn number_arg(input: &Value, name: &str) -> Option<u32> {
    input[name]
        .as_u64()
        .or_else(|| input[name].as_str().and_then(|s| s.trim().parse().ok()))
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

/// An optional path argument, confined to the snapshot; empty when not given.
fn optional_path(input: &Value, name: &str) -> Result<String, String> {
    match input.get(name).and_then(Value::as_str) {
        Some(path) if !path.trim().is_empty() => confine(path),
        _ => Ok(String::new()),
    }
}

fn symbol_arg(input: &Value) -> Result<&str, String> {
    let symbol = text_arg(input, "symbol")?.trim();
    // `Type::method` and `obj.method` name the method.
    let last = symbol.rsplit([':', '.']).next().unwrap_or(symbol);
    if last.is_empty() || last.len() > 200 {
        return Err("give a function, method or type name".into());
    }
    Ok(last)
}

/// `read_file(src/app.rs:10-40)`, for the summary and the section headings.
pub(super) fn call_label(call: &ToolCall) -> String {
    let arg = |name: &str| call.input[name].as_str().unwrap_or("").trim().to_string();
    let detail = match call.name.as_str() {
        READ_FILE => {
            let mut path = arg("path");
            if let Some(start) = number_arg(&call.input, "start_line") {
                path.push_str(&format!(":{start}"));
                if let Some(end) = number_arg(&call.input, "end_line") {
                    path.push_str(&format!("-{end}"));
                }
            }
            path
        }
        SEARCH => match call.input["path_glob"].as_str() {
            Some(glob) => format!("{} in {glob}", arg("pattern")),
            None => arg("pattern"),
        },
        FIND_DEFINITION | FIND_REFERENCES => arg("symbol"),
        _ => arg("path"),
    };
    format!(
        "{}({})",
        crate::sanitize::truncate(&call.name, 40),
        crate::sanitize::user_text(&crate::sanitize::truncate(&detail, 120))
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ports::code::SearchHit;

    /// One file of 1,000 lines of 60 bytes.
    pub(crate) struct OneFile;

    impl Codebase for OneFile {
        fn enclosing(&self, _: &str, _: u32) -> Option<Span> {
            None
        }
        fn definitions(&self, _: &str) -> Vec<Span> {
            Vec::new()
        }
        fn callers(&self, _: &str) -> Vec<Span> {
            Vec::new()
        }
        fn names_used(&self, _: &str, _: u32, _: u32) -> Vec<String> {
            Vec::new()
        }
        fn text(&self, span: &Span) -> Option<String> {
            (span.path == "a.rs")
                .then(|| format!("{}\n", "x".repeat(59)).repeat(span.lines() as usize))
        }
        fn files(&self) -> usize {
            1
        }
        fn line_count(&self, path: &str) -> Option<u32> {
            (path == "a.rs").then_some(1000)
        }
        fn list_dir(&self, _: &str) -> Option<Vec<String>> {
            Some(vec!["a.rs".into()])
        }
        fn search(&self, _: &str, _: Option<&str>, _: usize) -> Result<Vec<SearchHit>, String> {
            Ok(Vec::new())
        }
    }

    pub(crate) fn bounds(per_pass: u32, per_review: u32, bytes: u32) -> ToolBounds {
        ToolBounds {
            enabled: true,
            max_calls_per_pass: per_pass,
            max_calls_per_review: per_review,
            max_bytes_per_pass: bytes,
            max_secs_per_pass: 60,
        }
    }

    /// What a model writes as arguments is not trusted: a missing or mistyped argument, a
    /// string where an object belongs (OpenAI arguments that were not JSON), an unknown
    /// tool, a line past the end: each an error result saying what to fix, nothing read.
    #[test]
    fn malformed_tool_calls_get_error_results() {
        let toolbox = Toolbox::new(&OneFile, bounds(20, 20, 100_000));
        let mut spend = PassSpend::default();
        for (name, input, says) in [
            (READ_FILE, json!({}), "path is required"),
            (READ_FILE, json!({"path": 7}), "path is required"),
            (READ_FILE, json!("{not json"), "path is required"),
            (READ_FILE, json!({"path": "b.rs"}), "no file b.rs"),
            (
                READ_FILE,
                json!({"path": "a.rs", "start_line": 5000}),
                "has 1000 lines",
            ),
            (SEARCH, json!({"pattern": ""}), "pattern is required"),
            (
                FIND_DEFINITION,
                json!({"symbol": "Type::"}),
                "give a function",
            ),
            (
                FIND_DEFINITION,
                json!({"symbol": "f", "from_path": "../x.rs"}),
                "not a path inside the repository",
            ),
            (
                FIND_REFERENCES,
                json!({"symbol": "f", "defined_in": "/etc/x"}),
                "not a path inside the repository",
            ),
            ("rm_rf", json!({"path": "a.rs"}), "there is no tool rm_rf"),
        ] {
            let call = ToolCall {
                id: "c".into(),
                name: name.into(),
                input,
            };
            let result = toolbox.call(&call, &mut spend);
            assert!(result.is_error, "{name}: {}", result.content);
            assert!(result.content.contains(says), "{name}: {}", result.content);
        }
        assert_eq!(spend.bytes, 0, "nothing was read");
    }

    #[test]
    fn paths_outside_the_snapshot_are_refused() {
        for bad in [
            "../etc/passwd",
            "src/../../x",
            "/etc/passwd",
            "C:\\Windows",
            "c:/x",
            "~/x",
            "src\\lib.rs",
            "",
            "./",
            "a\0b",
        ] {
            assert!(confine(bad).is_err(), "{bad:?}");
        }
        assert_eq!(confine("./src//lib.rs").as_deref(), Ok("src/lib.rs"));
        assert_eq!(confine("src/").as_deref(), Ok("src"));
    }

    /// The judge reads last: the passes reach the review's limit short of what is kept for
    /// it, and once released it may spend that share (and no more than the review's limit).
    #[test]
    fn a_share_is_kept_for_the_reader_that_comes_last() {
        let toolbox = Toolbox::new(&OneFile, bounds(8, 10, 100_000)).keeping_shares_for_last(4, 1);
        let read = |spend: &mut PassSpend| {
            let call = ToolCall {
                id: "c".into(),
                name: READ_FILE.into(),
                input: json!({"path": "a.rs", "end_line": 1}),
            };
            toolbox.call(&call, spend)
        };
        // Ten calls a review among four passes and the judge: two are the judge's.
        let mut passes: Vec<PassSpend> = (0..4).map(|_| PassSpend::default()).collect();
        let answered = (0..12)
            .filter(|i| !read(&mut passes[i % 4]).is_error)
            .count();
        assert_eq!(answered, 8);
        let refused = read(&mut passes[0]);
        assert!(
            refused.content.contains("this review has made all"),
            "{}",
            refused.content
        );

        toolbox.release_what_was_kept();
        let mut judge = PassSpend::default();
        assert!(!read(&mut judge).is_error);
        assert!(!read(&mut judge).is_error);
        assert!(read(&mut judge).is_error, "the review's limit still holds");
        assert_eq!(toolbox.calls(), 10);
    }

    /// A review read in three parts has one allowance, not one a part: its passes on
    /// every part together reach the review's limit short of a share for each part's
    /// judge.
    #[test]
    fn a_review_in_parts_shares_one_allowance() {
        let call = ToolCall {
            id: "c".into(),
            name: READ_FILE.into(),
            input: json!({"path": "a.rs", "end_line": 1}),
        };
        // Two passes on each of three parts, then three judges: 12 calls, 2 kept a judge.
        let toolbox = Toolbox::new(&OneFile, bounds(4, 12, 100_000)).keeping_shares_for_last(6, 3);
        let mut passes: Vec<PassSpend> = (0..6).map(|_| PassSpend::default()).collect();
        let answered = (0..24)
            .filter(|i| !toolbox.call(&call, &mut passes[i % 6]).is_error)
            .count();
        assert_eq!(answered, 6);
        toolbox.release_what_was_kept();
        let mut judges: Vec<PassSpend> = (0..3).map(|_| PassSpend::default()).collect();
        let answered = (0..12)
            .filter(|i| !toolbox.call(&call, &mut judges[i % 3]).is_error)
            .count();
        assert_eq!(answered, 6);
        assert_eq!(toolbox.calls(), 12, "the review's limit across its parts");
    }
}

#[cfg(test)]
mod asked_from {
    use super::tests::bounds;
    use super::*;
    use crate::ports::code::SearchHit;

    /// `validate` defined in `a/rules.rs` and `b/rules.rs`, each called beside it.
    struct Homonyms;

    fn span(path: &str) -> Span {
        Span {
            path: path.into(),
            start: 1,
            end: 2,
            name: Some("validate".into()),
        }
    }

    impl Codebase for Homonyms {
        fn enclosing(&self, _: &str, _: u32) -> Option<Span> {
            None
        }
        fn definitions(&self, _: &str) -> Vec<Span> {
            vec![span("a/rules.rs"), span("b/rules.rs")]
        }
        fn callers(&self, _: &str) -> Vec<Span> {
            vec![span("a/use.rs"), span("b/use.rs")]
        }
        /// Line 7 of any file uses `validate` as only `a/rules.rs` defines it.
        fn definitions_near_line(
            &self,
            name: &str,
            path: &str,
            line: u32,
            most: usize,
        ) -> Vec<Span> {
            if line == 7 {
                vec![span("a/rules.rs"), span("b/rules.rs")]
            } else {
                self.definitions_near(name, path, most)
            }
        }
        fn names_used(&self, _: &str, _: u32, _: u32) -> Vec<String> {
            Vec::new()
        }
        fn text(&self, _: &Span) -> Option<String> {
            Some("fn validate() {}\n".into())
        }
        fn files(&self) -> usize {
            4
        }
        fn line_count(&self, _: &str) -> Option<u32> {
            Some(2)
        }
        fn list_dir(&self, _: &str) -> Option<Vec<String>> {
            None
        }
        fn search(&self, _: &str, _: Option<&str>, _: usize) -> Result<Vec<SearchHit>, String> {
            Ok(Vec::new())
        }
    }

    /// Where the model names no file, a symbol is ranked as the asking file reaches it;
    /// a file it names still decides.
    #[test]
    fn a_symbol_is_ranked_from_the_asking_file_unless_the_model_names_one() {
        let first_path = |toolbox: &Toolbox, name: &str, input: Value| {
            let call = ToolCall {
                id: "c".into(),
                name: name.into(),
                input,
            };
            let result = toolbox.call(&call, &mut PassSpend::default());
            assert!(!result.is_error, "{}", result.content);
            let a = result.content.find("a/").unwrap_or(usize::MAX);
            let b = result.content.find("b/").unwrap_or(usize::MAX);
            if a < b { "a" } else { "b" }
        };
        let symbol = json!({"symbol": "validate"});
        let named =
            json!({"symbol": "validate", "from_path": "a/pay.rs", "defined_in": "a/rules.rs"});
        let plain = Toolbox::new(&Homonyms, bounds(20, 20, 100_000));
        let asked = Toolbox::new(&Homonyms, bounds(20, 20, 100_000)).asked_from(Some("b/pay.rs"));
        assert_eq!(first_path(&plain, FIND_DEFINITION, symbol.clone()), "a");
        assert_eq!(first_path(&asked, FIND_DEFINITION, symbol.clone()), "b");
        assert_eq!(first_path(&asked, FIND_DEFINITION, named.clone()), "a");
        assert_eq!(first_path(&plain, FIND_REFERENCES, symbol.clone()), "a");
        assert_eq!(first_path(&asked, FIND_REFERENCES, symbol), "b");
        assert_eq!(first_path(&asked, FIND_REFERENCES, named), "a");
        // The asking line decides where it spells the symbol its own way (line 7 here).
        let on = |line| {
            Toolbox::new(&Homonyms, bounds(20, 20, 100_000))
                .asked_from(Some("b/pay.rs"))
                .on_line(Some(line))
        };
        let symbol = json!({"symbol": "validate"});
        assert_eq!(first_path(&on(7), FIND_DEFINITION, symbol.clone()), "a");
        assert_eq!(first_path(&on(3), FIND_DEFINITION, symbol.clone()), "b");
        assert_eq!(first_path(&on(7), FIND_REFERENCES, symbol.clone()), "a");
        let named = json!({"symbol": "validate", "from_path": "b/pay.rs"});
        assert_eq!(
            first_path(&on(7), FIND_DEFINITION, named),
            "b",
            "a file named"
        );
    }
}
