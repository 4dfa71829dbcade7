//! Which grammar and tags query read a file, by its name: one slot each, compiled the
//! first time a file of that language is parsed.

use crate::words::Style;
use parley_grammars::{Grammar, javascript_tags_query};
use std::sync::OnceLock;
use tree_sitter::{Language, Query};

/// The grammars with tags, one slot each.
#[derive(Clone, Copy)]
pub(super) enum Lang {
    Rust,
    Python,
    JavaScript,
    TypeScript,
    Tsx,
    Go,
    Java,
    Ruby,
    CSharp,
    C,
    Cpp,
    Php,
    /// A Vue, Svelte or Astro component, or an HTML page: its `<script>` blocks and
    /// Astro's frontmatter (see [`super::embedded`]).
    Component,
}

impl Lang {
    pub(super) fn style(self) -> Style {
        match self {
            Lang::Rust => Style::Keywords,
            Lang::Python => Style::KeywordsAndConstants,
            Lang::Go => Style::Go,
            Lang::JavaScript | Lang::TypeScript | Lang::Tsx | Lang::Java | Lang::Component => {
                Style::Declarations
            }
            Lang::Ruby => Style::Ruby,
            Lang::CSharp => Style::CSharp,
            Lang::C | Lang::Cpp => Style::C,
            Lang::Php => Style::Php,
        }
    }
}

pub(super) fn language_of(path: &str) -> Option<Lang> {
    let (_, extension) = path.rsplit_once('.')?;
    Some(match extension.to_ascii_lowercase().as_str() {
        "rs" => Lang::Rust,
        "py" => Lang::Python,
        "js" | "jsx" | "mjs" | "cjs" => Lang::JavaScript,
        "ts" | "mts" | "cts" => Lang::TypeScript,
        "tsx" => Lang::Tsx,
        "go" => Lang::Go,
        "java" => Lang::Java,
        "rb" | "rake" | "gemspec" | "ru" => Lang::Ruby,
        "cs" => Lang::CSharp,
        "c" => Lang::C,
        // A header may be C or C++; C++'s grammar reads C's too (but for C++'s keywords
        // used as names, `new`, `class`), and C++ headers are often `.h`.
        "h" | "cc" | "cpp" | "cxx" | "c++" | "hh" | "hpp" | "hxx" | "h++" | "ipp" | "tpp"
        | "inl" => Lang::Cpp,
        "php" | "phtml" => Lang::Php,
        "vue" | "svelte" | "astro" | "html" | "htm" => Lang::Component,
        _ => return None,
    })
}

/// Each language's grammar and compiled tags query, compiled the first time a file of
/// it is parsed (compiling a query takes milliseconds; most repositories use one or two
/// of the languages).
#[derive(Default)]
pub(super) struct Languages([OnceLock<Option<Tags>>; 13]);

impl Languages {
    pub(super) fn get(&self, lang: Lang) -> Option<&Tags> {
        self.0[lang as usize].get_or_init(|| tags(lang)).as_ref()
    }
}

/// One language: its grammar and its tags query.
pub(super) struct Tags {
    pub(super) language: Language,
    pub(super) query: Query,
}

fn tags(lang: Lang) -> Option<Tags> {
    let (grammar, query) = match lang {
        Lang::Rust => (Grammar::Rust, Grammar::Rust.tags_query()),
        Lang::Python => (Grammar::Python, Grammar::Python.tags_query()),
        // JavaScript (JSX included) is read with the TSX grammar, a superset of it: one
        // grammar's parse tables fewer in every worker. TypeScript keeps its own: read as
        // TSX, a generic arrow function (`<T>(x: T) => x`) opens a JSX element and hides
        // every definition after it.
        Lang::JavaScript => (Grammar::Tsx, javascript_tags_query()),
        Lang::TypeScript => (Grammar::TypeScript, Grammar::TypeScript.tags_query()),
        Lang::Tsx => (Grammar::Tsx, Grammar::Tsx.tags_query()),
        Lang::Go => (Grammar::Go, Grammar::Go.tags_query()),
        Lang::Java => (Grammar::Java, Grammar::Java.tags_query()),
        Lang::Ruby => (Grammar::Ruby, Grammar::Ruby.tags_query()),
        Lang::CSharp => (Grammar::CSharp, Grammar::CSharp.tags_query()),
        Lang::C => (Grammar::C, Grammar::C.tags_query()),
        Lang::Cpp => (Grammar::Cpp, Grammar::Cpp.tags_query()),
        Lang::Php => (Grammar::Php, Grammar::Php.tags_query()),
        Lang::Component => (Grammar::TypeScript, Grammar::TypeScript.tags_query()),
    };
    let language = match grammar.language() {
        Ok(language) => language,
        Err(err) => {
            tracing::warn!(error = %err, "grammar does not load; text only");
            return None;
        }
    };
    match Query::new(&language, &query) {
        Ok(query) => Some(Tags { language, query }),
        Err(err) => {
            tracing::warn!(error = %err, "tags query does not compile; text only");
            None
        }
    }
}
