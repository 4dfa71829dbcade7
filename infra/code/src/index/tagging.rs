//! One file's tags: its parse read through its language's tags query, with what the
//! query alone cannot say decided here: which bare identifiers are calls (not local
//! variables, see `locals`), which identifiers passed as values are functions (not the
//! function's own variables), a component's code blocks parsed where they stand and its
//! template's uses (see `embedded`, `template`).

use super::languages::Tags;
use super::locals::{self, Locals};
use super::{Role, Tag, embedded, template};
use std::collections::{HashMap, HashSet};
use streaming_iterator::StreamingIterator;
use tree_sitter::{Parser, QueryCursor};

/// A component's tags: its code blocks parsed alone, where they stand in the file.
/// The parser reads whole files again afterwards.
pub(super) fn tag_blocks(parser: &mut Parser, tags: &Tags, text: &str) -> Vec<Tag> {
    let ranges = embedded::parse_ranges(text, &embedded::code_blocks(text));
    if ranges.is_empty() || parser.set_included_ranges(&ranges).is_err() {
        return Vec::new();
    }
    let tagged = tag_file(parser, tags, text);
    // An empty list is the whole document again; it cannot be refused.
    let _ = parser.set_included_ranges(&[]);
    tagged
}

/// A use on its line for each name a component's template uses.
pub(super) fn template_tags(path: &str, text: &str) -> Vec<Tag> {
    let mut line = 1;
    let mut counted = 0;
    template::uses(path, text)
        .into_iter()
        .map(|(at, name)| {
            line += text[counted..at].matches('\n').count() as u32;
            counted = at;
            Tag {
                name: name.into(),
                start: line,
                end: line,
                role: Role::Use,
            }
        })
        .collect()
}

pub(super) fn tag_file(parser: &mut Parser, tags: &Tags, text: &str) -> Vec<Tag> {
    let mut out = Vec::new();
    if parser.set_language(&tags.language).is_err() {
        return out;
    }
    let Some(tree) = parser.parse(text, None) else {
        return out;
    };
    let names = tags.query.capture_names();
    let mut seen = HashSet::new();
    // Bare identifiers that may be calls, told from local variables once every local
    // definition of the file is known (see `locals`).
    let mut locals = Locals::default();
    let mut bare = Vec::new();
    // Identifiers passed as values, counted once the file's variables are known: each
    // name to the functions (their bytes) that bind it.
    let mut variables: HashMap<&str, Vec<std::ops::Range<usize>>> = HashMap::new();
    let mut passed = Vec::new();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(&tags.query, tree.root_node(), text.as_bytes());
    while let Some(found) = matches.next() {
        let mut name = None;
        let mut role: Option<(&str, tree_sitter::Node)> = None;
        for capture in found.captures {
            let capture_name = names[capture.index as usize];
            if capture_name == "name" {
                name = capture.node.utf8_text(text.as_bytes()).ok();
            } else if capture_name == "local.variable" {
                if let (Ok(variable), Some(scope)) = (
                    capture.node.utf8_text(text.as_bytes()),
                    function_around(capture.node),
                ) {
                    variables.entry(variable).or_default().push(scope);
                }
            } else if capture_name == "local.definition" {
                if let Ok(local) = capture.node.utf8_text(text.as_bytes()) {
                    locals.define(capture.node, local);
                }
            } else if capture_name.starts_with("definition.")
                || capture_name.starts_with("declaration.")
                || capture_name.starts_with("reference.")
            {
                role = Some((capture_name, capture.node));
            }
        }
        let (Some(name), Some((role, node))) = (name, role) else {
            continue;
        };
        match role {
            "reference.bare" => bare.push((name, node)),
            "reference.passed" => passed.push((name, node)),
            "reference.qualified" => {
                let method = parley_grammars::after_qualifier(name);
                push_tag(&mut out, &mut seen, method, "reference.call", node);
            }
            _ => push_tag(&mut out, &mut seen, name, role, node),
        }
    }
    for (name, node) in bare {
        if !locals::names_a_method(node) && !locals.is_local(node, name) {
            push_tag(&mut out, &mut seen, name, "reference.call", node);
        }
    }
    // A function's variable or parameter passed (in that function) is no use of a
    // function, but a function held in a variable (`const save = () => …`) is one.
    let functions: HashSet<Box<str>> = out
        .iter()
        .filter(|t| t.role == Role::Definition)
        .map(|t| t.name.clone())
        .collect();
    for (name, node) in passed {
        let at = node.start_byte();
        let variable = variables
            .get(name)
            .is_some_and(|scopes| scopes.iter().any(|scope| scope.contains(&at)));
        if !variable || functions.contains(name) {
            push_tag(&mut out, &mut seen, name, "reference.passed", node);
        }
    }
    out
}

/// Function nodes of the grammars whose tags capture variables (`@local.variable`).
const FUNCTIONS: &[&str] = &[
    // JavaScript, TypeScript; Go's `function_declaration` too.
    "function_declaration",
    "generator_function_declaration",
    "function_expression",
    "generator_function",
    "arrow_function",
    "method_definition",
    // Python's, C's and C++'s `function_definition`; Python's `lambda`.
    "function_definition",
    "lambda",
    // Go; C#'s `method_declaration` too.
    "method_declaration",
    "func_literal",
    // Rust.
    "function_item",
    "closure_expression",
    // C++ and C#.
    "lambda_expression",
    "constructor_declaration",
    "local_function_statement",
];

/// The bytes of the innermost function around `node` (a variable's or a parameter's:
/// where it can be passed). None at a module's top level, whose names are its imports
/// (`const { listUsers } = require('./handlers')`) and its functions as often as values.
fn function_around(node: tree_sitter::Node) -> Option<std::ops::Range<usize>> {
    let mut at = node.parent();
    while let Some(parent) = at {
        if FUNCTIONS.contains(&parent.kind()) {
            return Some(parent.byte_range());
        }
        at = parent.parent();
    }
    None
}

fn push_tag(
    out: &mut Vec<Tag>,
    seen: &mut HashSet<(u32, u32, Role, Box<str>)>,
    name: &str,
    role: &str,
    node: tree_sitter::Node,
) {
    // A Ruby method's `?`, `!` or `=` (`valid?`, `save!`, `name=`) is not part of the
    // name as the word index, the changed lines and a question spell it, nor is the `:`
    // of the symbol that names a method defined at run time (`attr_reader :total`).
    let name = name
        .trim()
        .trim_start_matches(':')
        .trim_end_matches(['?', '!', '=']);
    if name.is_empty() {
        return;
    }
    // A node that takes its line's end with it (a C macro's definition ends after its
    // newline) ends on that line, not at the start of the next.
    let end = node.end_position();
    let last_row = if end.column == 0 && end.row > node.start_position().row {
        end.row - 1
    } else {
        end.row
    };
    let tag = Tag {
        name: name.into(),
        start: node.start_position().row as u32 + 1,
        end: last_row as u32 + 1,
        role: Role::of_capture(role),
    };
    // Several patterns can tag one node (Rust's method is also a function): one is
    // enough, or the nearest three definitions of a name could be one shown twice. A
    // member read and the call around it are kept both: the call says it is called.
    if seen.insert((tag.start, tag.end, tag.role, tag.name.clone())) {
        out.push(tag);
    }
}
