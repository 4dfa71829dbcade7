//! The repository's code at the reviewed head, as reviews and answers read it.
//!
//! A diff shows three lines around each change; the bug is often one file away (the
//! definition a changed line calls, the caller that does or does not check for null).
//! A [`Codebase`] answers the questions a reviewer asks of a checkout: which function
//! encloses this line, where is this name defined, who calls it. Adapters build it from
//! a snapshot of the repository (GitHub's tarball, or a local working tree) and a code
//! index; the domain only asks.

use async_trait::async_trait;

/// A range of lines in one file (1-based, inclusive), and what is defined there.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Span {
    pub path: String,
    pub start: u32,
    pub end: u32,
    /// The name defined in the span, for a definition.
    pub name: Option<String>,
}

impl Span {
    pub fn lines(&self) -> u32 {
        self.end.saturating_sub(self.start) + 1
    }

    pub fn contains(&self, path: &str, line: u32) -> bool {
        self.path == path && self.start <= line && line <= self.end
    }
}

/// One snapshot's code, indexed.
pub trait Codebase: Send + Sync {
    /// The innermost definition (function, method, type) around `line` of `path`.
    fn enclosing(&self, path: &str, line: u32) -> Option<Span>;
    /// Where `name` is defined, in the repository's own code.
    fn definitions(&self, name: &str) -> Vec<Span>;
    /// At most `most` definitions of `name`, nearest `path` first (the same file, then
    /// the same directory, then the rest in path order): what a reader of `path` most
    /// likely means by the name. An index that reads files lazily overrides this to stop
    /// reading once it has `most`; the answer is the same.
    fn definitions_near(&self, name: &str, path: &str, most: usize) -> Vec<Span> {
        let mut definitions = self.definitions(name);
        definitions.sort_by_key(|span| nearness(&span.path, path));
        definitions.truncate(most);
        definitions
    }
    /// [`Codebase::definitions_near`] for `name` as `line` of `path` uses it: where the
    /// line's spelling says more than the file (a Go name called bare, `New()`, is its
    /// own package's or a dot-imported one's, never `assert.New`'s, which the file also
    /// imports).
    fn definitions_near_line(&self, name: &str, path: &str, _line: u32, most: usize) -> Vec<Span> {
        self.definitions_near(name, path, most)
    }
    /// [`Codebase::definitions_near_line`] without the guesses: a definition far from
    /// `path` (not in it, nor in its directory, nor where it imports the name from) only
    /// where at most [`FEW_DEFINING`] files define the name. Of `new` or `handle`
    /// defined in hundreds of files, the first far one in path order is not the one
    /// meant, and a reviewer shown it as the definition is misled. What the static
    /// context shows; a tool call that names the symbol gets every definition, nearest
    /// first (the model asked for it). This default knows no imports: the same file
    /// and directory are near.
    fn definitions_meant(&self, name: &str, path: &str, line: u32, most: usize) -> Vec<Span> {
        let mut near = self.definitions_near_line(name, path, line, usize::MAX);
        let files = (near.iter().map(|span| span.path.as_str()))
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        if files > FEW_DEFINING {
            near.retain(|span| nearness(&span.path, path) < 2);
        }
        near.truncate(most);
        near
    }
    /// The definitions whose bodies refer to `name` (its callers and users), and the
    /// lines around a use no definition encloses (a module's top level, an anonymous
    /// callback, a template), with no name.
    fn callers(&self, name: &str) -> Vec<Span>;
    /// At most `most` callers of `name`, nearest `path` first, like
    /// [`Codebase::definitions_near`].
    fn callers_near(&self, name: &str, path: &str, most: usize) -> Vec<Span> {
        let mut callers = self.callers(name);
        callers.sort_by_key(|span| nearness(&span.path, path));
        callers.truncate(most);
        callers
    }
    /// The names referred to (called, used) on lines `start..=end` of `path`.
    fn names_used(&self, path: &str, start: u32, end: u32) -> Vec<String>;
    /// The names only read on lines `start..=end` of `path`, not among
    /// [`Codebase::names_used`] there: a member read without a call (`order.Total`, a
    /// property where the language has them), and a function passed without a call
    /// (`rows.map(toInvoice)`). Their definitions are shown after those of the names
    /// used, so a change that reads many members does not crowd out what it calls. None,
    /// for an index that does not tell reads apart.
    fn names_read(&self, _path: &str, _start: u32, _end: u32) -> Vec<String> {
        Vec::new()
    }
    /// The text of `span`, or `None` when the file is not in the snapshot.
    fn text(&self, span: &Span) -> Option<String>;
    /// How many files the snapshot holds (for the summary).
    fn files(&self) -> usize;
    /// How many lines `path` has; `None` when the file is not in the snapshot.
    fn line_count(&self, path: &str) -> Option<u32>;
    /// Whether `path` was left out of the snapshot because its header says a tool wrote
    /// it ([`crate::repo::generated::says_generated`]).
    fn says_generated(&self, _path: &str) -> bool {
        false
    }
    /// What is directly under `dir` (`""` is the root): file names, and directory names
    /// ending in `/`, sorted. `None` when no file is under it.
    fn list_dir(&self, dir: &str) -> Option<Vec<String>>;
    /// Lines matching the regular expression `pattern`, in files whose path matches
    /// `path_glob` (all files when `None`), in path order, at most `max_hits`. `Err` says
    /// what is wrong with the pattern or the glob, for the model to correct.
    fn search(
        &self,
        pattern: &str,
        path_glob: Option<&str>,
        max_hits: usize,
    ) -> Result<Vec<SearchHit>, String>;
}

/// The most files that may define a name for a definition of it to be taken for the
/// one meant without anything tying it to the file that uses it (see
/// [`Codebase::definitions_meant`]). A function's name is defined in a file or two;
/// among more (`new`, `handle`, `data`), which one is meant cannot be told.
pub const FEW_DEFINING: usize = 4;

/// How near `candidate` is to `path`: 0 the same file, 1 the same directory, 2 elsewhere.
pub fn nearness(candidate: &str, path: &str) -> u8 {
    fn dir(path: &str) -> &str {
        path.rsplit_once('/').map_or("", |(dir, _)| dir)
    }
    if candidate == path {
        0
    } else if dir(candidate) == dir(path) {
        1
    } else {
        2
    }
}

/// One line a search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    pub path: String,
    pub line: u32,
    pub text: String,
}

/// Where a review or an answer gets its [`Codebase`] from. `Err` carries why there is
/// none (the repository over the snapshot's caps, an unsafe tarball, GitHub trouble),
/// for the summary's "Context used"; the caller goes on from the diff alone.
#[async_trait]
pub trait CodeSource: Send + Sync {
    async fn open(
        &self,
        github: &dyn crate::ports::GitHub,
        scope: &crate::ports::RepoScope,
        sha: &str,
    ) -> Result<std::sync::Arc<dyn Codebase>, String>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `render` defined once in each of `widgets` directories, `w0/` to `w{n-1}/`.
    struct Widgets(usize);

    impl Codebase for Widgets {
        fn enclosing(&self, _: &str, _: u32) -> Option<Span> {
            None
        }
        fn definitions(&self, _: &str) -> Vec<Span> {
            (0..self.0)
                .map(|i| Span {
                    path: format!("w{i}/mod.rs"),
                    start: 1,
                    end: 3,
                    name: Some("render".into()),
                })
                .collect()
        }
        fn callers(&self, _: &str) -> Vec<Span> {
            Vec::new()
        }
        fn names_used(&self, _: &str, _: u32, _: u32) -> Vec<String> {
            Vec::new()
        }
        fn text(&self, _: &Span) -> Option<String> {
            None
        }
        fn files(&self) -> usize {
            self.0
        }
        fn line_count(&self, _: &str) -> Option<u32> {
            None
        }
        fn list_dir(&self, _: &str) -> Option<Vec<String>> {
            None
        }
        fn search(&self, _: &str, _: Option<&str>, _: usize) -> Result<Vec<SearchHit>, String> {
            Ok(Vec::new())
        }
    }

    /// Without imports to go by, a name many files define is meant only in the file or
    /// directory using it; one few files define, wherever it is.
    #[test]
    fn a_name_many_files_define_is_meant_only_near() {
        let paths = |code: &Widgets, from: &str| -> Vec<String> {
            code.definitions_meant("render", from, 1, 3)
                .into_iter()
                .map(|span| span.path)
                .collect()
        };
        let many = Widgets(FEW_DEFINING + 1);
        assert_eq!(paths(&many, "app/page.rs"), Vec::<String>::new());
        assert_eq!(paths(&many, "w2/card.rs"), ["w2/mod.rs"]);
        assert_eq!(many.definitions_near("render", "app/page.rs", 3).len(), 3);
        let few = Widgets(FEW_DEFINING);
        assert_eq!(
            paths(&few, "app/page.rs"),
            ["w0/mod.rs", "w1/mod.rs", "w2/mod.rs"]
        );
        assert_eq!(paths(&few, "w2/card.rs")[0], "w2/mod.rs");
    }
}
