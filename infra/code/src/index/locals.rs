//! Which bare identifiers are local variables, for a grammar whose calls can be written
//! without parentheses or a receiver (Ruby's `current_user`, `admin?`): there a name on
//! its own is a method call unless a local variable of that name was defined before it,
//! in its own scope or, from inside a block, in the scopes around it. This is what
//! `tree-sitter-tags` does with a grammar's `locals.scm`; that crate brings a highlighting
//! stack this index has no other use for, and the rule takes a page.
//!
//! The tags query captures the candidates (`@reference.bare`) and what defines a local
//! (`@local.definition`); both are read here against the tree's scopes.

use std::collections::HashMap;
use tree_sitter::Node;

/// Scopes that see no locals from outside: a method body, a class or module body, the
/// file.
const CLOSED: &[&str] = &[
    "method",
    "singleton_method",
    "class",
    "module",
    "singleton_class",
    "program",
];

/// Scopes that also see the locals of the scopes around them: blocks and lambdas.
const OPEN: &[&str] = &["block", "do_block", "lambda"];

/// The local definitions of one tree, by scope.
#[derive(Default)]
pub(super) struct Locals {
    /// Scope node id to the names defined in it, with where each definition starts.
    by_scope: HashMap<usize, Vec<(Box<str>, usize)>>,
}

impl Locals {
    /// `node` defines the local `name` from where it stands to the end of its scope.
    pub(super) fn define(&mut self, node: Node, name: &str) {
        if let Some(scope) = scope_of(node) {
            self.by_scope
                .entry(scope.id())
                .or_default()
                .push((name.into(), node.start_byte()));
        }
    }

    /// Whether the identifier `node`, spelled `name`, is a local variable there rather
    /// than a call: defined at or before it in its scope, or in a scope around it that a
    /// block sees.
    pub(super) fn is_local(&self, node: Node, name: &str) -> bool {
        let at = node.start_byte();
        let mut inner = node;
        while let Some(scope) = scope_of(inner) {
            let defined = self.by_scope.get(&scope.id()).is_some_and(|defs| {
                defs.iter()
                    .any(|(local, start)| &**local == name && *start <= at)
            });
            if defined {
                return true;
            }
            if !OPEN.contains(&scope.kind()) {
                return false;
            }
            inner = scope;
        }
        false
    }
}

/// Whether a bare identifier stands where a method is named, not used: a definition's
/// name, an `alias` or `undef`, or the method of a call (which the query tags as a call).
pub(super) fn names_a_method(node: Node) -> bool {
    let Some(parent) = node.parent() else {
        return false;
    };
    match parent.kind() {
        "alias" | "undef" | "setter" => true,
        "method" | "singleton_method" => parent.child_by_field_name("name") == Some(node),
        "call" => parent.child_by_field_name("method") == Some(node),
        _ => false,
    }
}

/// The scope `node` stands in: the nearest block, lambda, method, class, module or the
/// file around it.
fn scope_of(node: Node) -> Option<Node> {
    let mut at = node.parent();
    while let Some(parent) = at {
        if CLOSED.contains(&parent.kind()) || OPEN.contains(&parent.kind()) {
            return Some(parent);
        }
        at = parent.parent();
    }
    None
}
