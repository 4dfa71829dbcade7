//! Definitions and references of a snapshot, by tree-sitter, in the manner of a tags
//! file or Aider's repository map: each grammar's own `tags.scm` query says what a
//! definition (function, method, class, interface, module) and a reference (a call, a
//! type used) is, with its name, and Parley's additions a declaration (a signature
//! without its body, see [`Role::Declaration`]). Files in languages without a grammar
//! here are kept for their text only.
//!
//! Parsing is lazy. Building the index reads every file once for the identifiers it
//! holds and where they stand (a word index: see `words`); a file is parsed and tagged
//! (see `tagging`) the first time a question needs it: the changed files for their enclosing
//! definitions and the names they use, the files that may define a name for its
//! definitions, the files that may call it for its callers. A review of a 10,000-file repository parses the few hundred files its names
//! lead to, not all of them (parsing everything took 14 s on two cores), and an answer
//! in a thread parses fewer still. Each file is parsed at most once per index, and
//! the answers are the same as parsing everything first.

mod cores;
mod embedded;
mod imports;
mod languages;
mod locals;
mod packages;
mod tagging;
mod template;

use crate::snapshot::Snapshot;
use crate::words::identifiers;
use cores::{off_the_runtime, on_all_cores, threads};
use imports::Imports;
use languages::{Lang, Languages, language_of};
pub use packages::MANIFESTS;
use packages::Packages;
use parley_core::ports::code::{Codebase, FEW_DEFINING, Span, nearness};
use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use tagging::{tag_blocks, tag_file, template_tags};
use tree_sitter::Parser;

/// A snapshot, its word index, and the tags of the files parsed so far.
pub struct CodeIndex {
    snapshot: Snapshot,
    /// File id to path, in path order (the snapshot's order).
    paths: Vec<String>,
    ids: HashMap<String, u32>,
    /// Each identifier to the files (ids, ascending) where it stands where a definition
    /// could, and where a call or a reference could (see `words`).
    defining: Postings,
    referring: Postings,
    /// Each file's tags, filled the first time a question needs them.
    tagged: Vec<OnceLock<Vec<Tag>>>,
    /// Each file's imports (see `imports`), read the first time a name it uses is
    /// looked up.
    imports: Vec<OnceLock<Imports>>,
    /// The repository's own packages (see `packages`), read with the first imports.
    packages: OnceLock<Packages>,
    languages: Languages,
}

type Postings = HashMap<Box<str>, Vec<u32>>;

/// A definition or a reference found in one file.
#[derive(Debug)]
struct Tag {
    name: Box<str>,
    start: u32,
    end: u32,
    role: Role,
}

/// What a tag says of its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Role {
    /// Where the name is defined, its body included.
    Definition,
    /// A signature without its body: a C or C++ prototype, a method declared in its
    /// class, a Rust trait's method, a Go interface's. Not where the function is defined
    /// (a reader wants the body), but a changed line in it changes the function, whose
    /// callers are what a reviewer checks.
    Declaration,
    /// A call, or another use of the name.
    Use,
    /// A member read without a call (`order.Total`).
    Read,
    /// A function passed as a value (`items.map(normalise)`): a use for its callers, and
    /// a name a changed line is shown the definition of only where few files may define
    /// it (see `CodeIndex::names_read`).
    Passed,
}

impl Role {
    fn of_capture(capture: &str) -> Role {
        if capture.starts_with("definition.") {
            Role::Definition
        } else if capture.starts_with("declaration.") {
            Role::Declaration
        } else if capture == "reference.member" {
            Role::Read
        } else if capture == "reference.passed" {
            Role::Passed
        } else {
            Role::Use
        }
    }

    /// Whether a changed line in the tag is in the function or type it names.
    fn encloses(self) -> bool {
        matches!(self, Role::Definition | Role::Declaration)
    }
}

/// The files of `postings` holding `name`.
fn holding<'a>(postings: &'a Postings, name: &str) -> &'a [u32] {
    postings.get(name).map_or(&[], Vec::as_slice)
}

/// The most files parsed to find the nearest callers of one name.
const MAX_FILES_FOR_CALLERS: usize = 256;

/// Lines shown either side of a use outside any definition (see `CodeIndex::around`):
/// the statement around it, as a diff's context shows a change.
const AROUND_USE: u32 = 3;

/// The rank of a file neither the one asking, nor one of its imports, nor in its
/// directory (see `CodeIndex::definition_rank`, `CodeIndex::callers_near`).
const ELSEWHERE: u8 = 4;

/// Files parsed together on every core once there are this many to parse.
const PARALLEL_FROM: usize = 8;

impl CodeIndex {
    /// Read every file of a tagged language for its identifiers, on all cores; parse
    /// nothing yet.
    pub fn build(snapshot: Snapshot) -> CodeIndex {
        let paths: Vec<String> = snapshot.files.keys().cloned().collect();
        let texts: Vec<&str> = snapshot.files.values().map(String::as_str).collect();
        let langs: Vec<Option<Lang>> = paths.iter().map(|p| language_of(p)).collect();
        let per_file = on_all_cores(texts.len(), |at| match langs[at] {
            Some(Lang::Component) => component_identifiers(&paths[at], texts[at]),
            Some(lang) => identifiers(texts[at], lang.style()),
            None => (Vec::new(), Vec::new()),
        });
        let mut defining = Postings::new();
        let mut referring = Postings::new();
        for (id, (defined, referred)) in per_file.into_iter().enumerate() {
            post(&mut defining, id as u32, defined);
            post(&mut referring, id as u32, referred);
        }
        let ids = paths
            .iter()
            .enumerate()
            .map(|(id, path)| (path.clone(), id as u32))
            .collect();
        let tagged = paths.iter().map(|_| OnceLock::new()).collect();
        let imports = paths.iter().map(|_| OnceLock::new()).collect();
        CodeIndex {
            snapshot,
            paths,
            ids,
            defining,
            referring,
            tagged,
            imports,
            packages: OnceLock::new(),
            languages: Languages::default(),
        }
    }

    /// How many distinct identifiers the word index holds.
    pub fn word_count(&self) -> usize {
        self.defining.len() + self.referring.len()
    }

    /// How many files have been parsed so far.
    pub fn parsed_count(&self) -> usize {
        self.tagged.iter().filter(|t| t.get().is_some()).count()
    }

    /// Parse every file not parsed yet (what answering every question would take).
    pub fn parse_all(&self) {
        let all: Vec<u32> = (0..self.paths.len() as u32).collect();
        self.ensure(&all);
    }

    /// Every definition of `name` among the files parsed so far, in path order: after
    /// [`CodeIndex::parse_all`], what an index that parses everything would answer.
    /// The bench compares it with the lazy answers.
    pub fn definitions_parsed(&self, name: &str) -> Vec<Span> {
        (0..self.paths.len() as u32)
            .flat_map(|id| self.definitions_in(id, name))
            .collect()
    }

    /// Every caller of `name` among the files parsed so far, in path order: after
    /// [`CodeIndex::parse_all`], what an index that parses everything would answer (the
    /// bench checks the word index sends a callers question to each of those files).
    pub fn callers_parsed(&self, name: &str) -> Vec<Span> {
        (0..self.paths.len() as u32)
            .flat_map(|id| self.callers_in(id, name))
            .collect()
    }

    /// How near a definition of `name` in `candidate` is to a use of it in `path` (see
    /// [`rank`], `imports`). The bench ranks what parsing everything finds by it.
    pub fn definition_rank(&self, name: &str, path: &str, line: u32, candidate: &str) -> u8 {
        self.ranker(name, path, self.bare_on(path, line, name))(candidate)
    }

    /// Whether the context shows a definition of `name` in `candidate` to a reader of
    /// `line` of `path` (see [`Codebase::definitions_meant`]). The bench holds what
    /// parsing everything finds to it.
    pub fn definition_meant(&self, name: &str, path: &str, line: u32, candidate: &str) -> bool {
        self.definition_rank(name, path, line, candidate) <= self.meant_reach(name)
    }

    /// How a definition of `name` in a file ranks for a reader of `path` (see [`rank`]),
    /// `bare` as [`CodeIndex::bare_on`] says: the one ranking the lazy answers and the
    /// bench's share.
    fn ranker<'a>(&'a self, name: &'a str, path: &'a str, bare: bool) -> impl Fn(&str) -> u8 + 'a {
        let imports = self.imports_of(path);
        move |candidate| {
            rank(candidate, path, || {
                imports.tie_as(name, bare, path, candidate, self.packages())
            })
        }
    }

    /// The farthest rank of a definition of `name` the context shows: any where few files
    /// may define it, else none from [`ELSEWHERE`] (see [`Codebase::definitions_meant`]).
    fn meant_reach(&self, name: &str) -> u8 {
        if self.few_define(name) {
            ELSEWHERE
        } else {
            ELSEWHERE - 1
        }
    }

    /// Whether at most [`FEW_DEFINING`] files may define `name` (by the word index).
    fn few_define(&self, name: &str) -> bool {
        holding(&self.defining, name).len() <= FEW_DEFINING
    }

    /// Whether `line` of `path`, a Go file, uses `name` only bare (`New()`, never after a
    /// `.`): a name of its own package or of one it dot-imports, whatever else the file
    /// imports by that name (`assert.New`). Other languages import names to use bare.
    fn bare_on(&self, path: &str, line: u32, name: &str) -> bool {
        if !matches!(language_of(path), Some(Lang::Go)) {
            return false;
        }
        let Some(text) = self.snapshot.files.get(path) else {
            return false;
        };
        let Some(at) = text.lines().nth(line.saturating_sub(1) as usize) else {
            return false;
        };
        let mut uses = at
            .match_indices(name)
            .filter(|&(start, _)| {
                let before = at[..start].bytes().next_back();
                let after = at.as_bytes().get(start + name.len()).copied();
                !before.is_some_and(crate::words::is_word_byte)
                    && !after.is_some_and(crate::words::is_word_byte)
            })
            .peekable();
        uses.peek().is_some() && uses.all(|(start, _)| !at[..start].ends_with('.'))
    }

    /// [`Codebase::definitions_near`], with `name` used bare on the line asked about or
    /// not (see [`CodeIndex::bare_on`]); none ranked past `reach`.
    fn definitions_ranked(
        &self,
        name: &str,
        path: &str,
        bare: bool,
        reach: u8,
        most: usize,
    ) -> Vec<Span> {
        self.nearest_first(
            holding(&self.defining, name),
            self.ranker(name, path, bare),
            (most, usize::MAX, reach),
            |id| self.definitions_in(id, name).collect(),
        )
    }

    fn imports_of(&self, path: &str) -> &Imports {
        static NONE: OnceLock<Imports> = OnceLock::new();
        let (Some(&id), Some(text), Some(lang)) = (
            self.ids.get(path),
            self.snapshot.files.get(path),
            language_of(path),
        ) else {
            return NONE.get_or_init(Imports::default);
        };
        self.imports[id as usize].get_or_init(|| Imports::read(path, text, lang, self.packages()))
    }

    fn packages(&self) -> &Packages {
        self.packages
            .get_or_init(|| Packages::read(&self.snapshot.files))
    }

    /// `found(id)` for the files of `ids` nearest first by `rank` (none ranked past
    /// `reach`), then in path order, parsing them in batches only until `most` are found
    /// or `max_files` have been asked; cut to `most`. What comes later in that order
    /// cannot displace what was
    /// found, so the answer is the one parsing everything and ranking it would give; a
    /// module imported by hundreds of files is not parsed whole for eight callers.
    fn nearest_first(
        &self,
        ids: &[u32],
        rank: impl Fn(&str) -> u8,
        (most, max_files, reach): (usize, usize, u8),
        found: impl Fn(u32) -> Vec<Span>,
    ) -> Vec<Span> {
        let mut ordered: Vec<(u8, u32)> = ids
            .iter()
            .map(|&id| (rank(&self.paths[id as usize]), id))
            .filter(|&(rank, _)| rank <= reach)
            .collect();
        ordered.sort_unstable();
        ordered.truncate(max_files);
        // No batch takes files from beyond the directory and the imports with nearer
        // ones: those are parsed only when the nearer ones fall short.
        let far = ordered.partition_point(|&(rank, _)| rank < ELSEWHERE);
        let (near, far) = ordered.split_at(far);
        let batches = near
            .chunks(PARALLEL_FROM * 2)
            .chain(far.chunks(PARALLEL_FROM * 2));
        let mut out: Vec<Span> = Vec::new();
        for batch in batches {
            if out.len() >= most {
                break;
            }
            let batch: Vec<u32> = batch.iter().map(|&(_, id)| id).collect();
            self.ensure(&batch);
            out.extend(batch.iter().flat_map(|&id| found(id)));
        }
        out.truncate(most);
        out
    }

    /// The callers of `name` in file `id` (parsed already): the definitions whose bodies
    /// use it, then the uses outside any definition (see [`Self::around`]).
    fn callers_in(&self, id: u32, name: &str) -> Vec<Span> {
        let path = &self.paths[id as usize];
        let tags = self.tagged[id as usize]
            .get()
            .map_or(&[][..], Vec::as_slice);
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        let mut outside = Vec::new();
        for reference in tags
            .iter()
            .filter(|t| matches!(t.role, Role::Use | Role::Read | Role::Passed) && &*t.name == name)
        {
            match Self::enclosing_in(path, tags, reference.start) {
                Some(span) => {
                    if span.name.as_deref() != Some(name) && seen.insert(span.start) {
                        out.push(span);
                    }
                }
                None => outside.push((reference.start, reference.end)),
            }
        }
        out.extend(self.around(path, outside));
        out
    }

    /// The lines around uses of a name that no definition encloses: a module's top level
    /// (`app.listen(port())`, a Python `urlpatterns` list, a C global's initialiser), a
    /// call in an anonymous callback (an Express route's handler, a test's `it(…)`), a
    /// component's template. They use it as surely as a function's body does, and are
    /// where a removed name is still used most often: each use with [`AROUND_USE`] lines
    /// either side, uses whose windows touch read as one.
    fn around(&self, path: &str, mut uses: Vec<(u32, u32)>) -> Vec<Span> {
        if uses.is_empty() {
            return Vec::new();
        }
        let last = self.line_count(path).unwrap_or(u32::MAX).max(1);
        uses.sort_unstable();
        let mut windows: Vec<Span> = Vec::new();
        for (start, end) in uses {
            let start = start.saturating_sub(AROUND_USE).max(1);
            let end = end.saturating_add(AROUND_USE).min(last);
            match windows.last_mut() {
                Some(previous) if start <= previous.end + 1 => {
                    previous.end = previous.end.max(end);
                }
                _ => windows.push(Span {
                    path: path.to_string(),
                    start,
                    end,
                    name: None,
                }),
            }
        }
        windows
    }

    /// The tags of file `id`, parsing it now if no question has needed it yet.
    fn tags(&self, id: u32, parser: &mut Parser) -> &[Tag] {
        self.tagged[id as usize].get_or_init(|| {
            let path = &self.paths[id as usize];
            let lang = language_of(path);
            match (
                lang,
                lang.and_then(|l| self.languages.get(l)),
                self.snapshot.files.get(path),
            ) {
                (Some(Lang::Component), Some(tags), Some(text)) => {
                    let mut tagged = tag_blocks(parser, tags, text);
                    tagged.extend(template_tags(path, text));
                    tagged
                }
                (_, Some(tags), Some(text)) => tag_file(parser, tags, text),
                _ => Vec::new(),
            }
        })
    }

    fn tags_of_path(&self, path: &str) -> &[Tag] {
        match self.ids.get(path) {
            Some(&id) => {
                self.ensure(&[id]);
                self.tagged[id as usize].get().map_or(&[], Vec::as_slice)
            }
            None => &[],
        }
    }

    /// Parse the files of `ids` not parsed yet, on all cores when there are several.
    fn ensure(&self, ids: &[u32]) {
        let todo: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|&id| self.tagged[id as usize].get().is_none())
            .collect();
        if !todo.is_empty() {
            off_the_runtime(|| self.parse(&todo));
        }
    }

    fn parse(&self, todo: &[u32]) {
        if todo.len() < PARALLEL_FROM {
            let mut parser = Parser::new();
            for &id in todo {
                self.tags(id, &mut parser);
            }
            return;
        }
        let next = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..threads() {
                scope.spawn(|| {
                    let mut parser = Parser::new();
                    while let Some(&id) = todo.get(next.fetch_add(1, Ordering::Relaxed)) {
                        self.tags(id, &mut parser);
                    }
                });
            }
        });
    }

    /// The definitions named `name` in file `id` (parsed already).
    fn definitions_in<'a>(&'a self, id: u32, name: &'a str) -> impl Iterator<Item = Span> + 'a {
        let path = &self.paths[id as usize];
        self.tagged[id as usize]
            .get()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter(move |t| t.role == Role::Definition && &*t.name == name)
            .map(move |t| span(path, t))
    }

    /// The names of the references on lines `start..=end` of `path`: member reads when
    /// `read`, else calls and other uses.
    fn references(&self, path: &str, start: u32, end: u32, read: bool) -> BTreeSet<String> {
        let role = if read { Role::Read } else { Role::Use };
        self.tags_of_path(path)
            .iter()
            .filter(|t| t.role == role && start <= t.start && t.start <= end)
            .map(|t| t.name.to_string())
            .collect()
    }

    /// The names of the functions passed as values on lines `start..=end` of `path`.
    fn passed_on<'a>(
        &'a self,
        path: &str,
        start: u32,
        end: u32,
    ) -> impl Iterator<Item = String> + 'a {
        self.tags_of_path(path)
            .iter()
            .filter(move |t| t.role == Role::Passed && start <= t.start && t.start <= end)
            .map(|t| t.name.to_string())
    }

    /// The innermost definition around `line` among `tags` of `path`.
    fn enclosing_in(path: &str, tags: &[Tag], line: u32) -> Option<Span> {
        tags.iter()
            .filter(|t| t.role.encloses() && t.start <= line && line <= t.end)
            .min_by_key(|t| t.end - t.start)
            .map(|t| span(path, t))
    }
}

/// Where `candidate` ranks for a question asked from `path`: 0 the same file, then what
/// `tie` says an import makes it (1 the name imported, 2 something else from the same
/// module), 3 the same directory, [`ELSEWHERE`] elsewhere. `tie` is asked only of
/// another file.
fn rank(candidate: &str, path: &str, tie: impl FnOnce() -> Option<u8>) -> u8 {
    match nearness(candidate, path) {
        0 => 0,
        near => tie().unwrap_or(near + 2),
    }
}

/// Add file `id` to the postings of each of `words`.
fn post(postings: &mut Postings, id: u32, words: Vec<&str>) {
    for word in words {
        match postings.get_mut(word) {
            Some(files) => files.push(id),
            None => {
                postings.insert(word.into(), vec![id]);
            }
        }
    }
}

fn span(path: &str, tag: &Tag) -> Span {
    Span {
        path: path.to_string(),
        start: tag.start,
        end: tag.end,
        name: Some(tag.name.to_string()),
    }
}

/// The words of a component's code blocks, each block read as a file of its own (the
/// parse reads the blocks alone), and the names its template uses (see `template`):
/// the rest of its markup defines and uses nothing.
fn component_identifiers<'a>(path: &str, text: &'a str) -> (Vec<&'a str>, Vec<&'a str>) {
    let mut defining = BTreeSet::new();
    let mut referring = BTreeSet::new();
    for block in embedded::code_blocks(text) {
        let (defined, referred) = identifiers(&text[block], Lang::Component.style());
        defining.extend(defined);
        referring.extend(referred);
    }
    referring.extend(template::uses(path, text).into_iter().map(|(_, name)| name));
    (
        defining.into_iter().collect(),
        referring.into_iter().collect(),
    )
}

impl Codebase for CodeIndex {
    fn enclosing(&self, path: &str, line: u32) -> Option<Span> {
        Self::enclosing_in(path, self.tags_of_path(path), line)
    }

    fn definitions(&self, name: &str) -> Vec<Span> {
        let defining = holding(&self.defining, name);
        self.ensure(defining);
        defining
            .iter()
            .flat_map(|&id| self.definitions_in(id, name))
            .collect()
    }

    /// Parses the files that may define `name` nearest `path` first, and the rest only
    /// until `most` definitions are found.
    fn definitions_near(&self, name: &str, path: &str, most: usize) -> Vec<Span> {
        self.definitions_ranked(name, path, false, ELSEWHERE, most)
    }

    fn definitions_near_line(&self, name: &str, path: &str, line: u32, most: usize) -> Vec<Span> {
        let bare = self.bare_on(path, line, name);
        self.definitions_ranked(name, path, bare, ELSEWHERE, most)
    }

    /// The files far from `path` are not parsed for a name many may define.
    fn definitions_meant(&self, name: &str, path: &str, line: u32, most: usize) -> Vec<Span> {
        let bare = self.bare_on(path, line, name);
        self.definitions_ranked(name, path, bare, self.meant_reach(name), most)
    }

    fn callers(&self, name: &str) -> Vec<Span> {
        let holding = holding(&self.referring, name);
        self.ensure(holding);
        holding
            .iter()
            .flat_map(|&id| self.callers_in(id, name))
            .collect()
    }

    /// A name as common as `new` or `parse` is called from most files of a large
    /// repository: the nearest callers are parsed and the rest left, and at most
    /// [`MAX_FILES_FOR_CALLERS`] files are read for them (a name whose calls the tags do
    /// not count, a method of a trait called through a path, would otherwise parse all).
    /// The files that import `name` from `path` come right after `path` itself: theirs
    /// are the calls of this `validate`, not of a homonym's; then those that import
    /// something else from it (a method's class). Their imports are read
    /// where no more files than that hold the name (reading every file's for `new`
    /// would cost more than it ranks).
    fn callers_near(&self, name: &str, path: &str, most: usize) -> Vec<Span> {
        let holding = holding(&self.referring, name);
        let read_imports = holding.len() <= MAX_FILES_FOR_CALLERS;
        let ranked = |candidate: &str| {
            rank(candidate, path, || {
                read_imports
                    .then(|| self.imports_of(candidate).tie(name, path, self.packages()))
                    .flatten()
            })
        };
        let bound = (most, MAX_FILES_FOR_CALLERS, ELSEWHERE);
        self.nearest_first(holding, ranked, bound, |id| self.callers_in(id, name))
    }

    fn names_used(&self, path: &str, start: u32, end: u32) -> Vec<String> {
        self.references(path, start, end, false)
            .into_iter()
            .collect()
    }

    /// Member reads, and the functions passed on those lines (`items.map(normalise)`)
    /// that the file imports or that the word index says at most
    /// [`FEW_DEFINING`] files may define: a function's name is defined in a
    /// file or two, a variable's (`data`, `config`) stands where a definition could in
    /// many, and looking each up would parse them for nothing.
    fn names_read(&self, path: &str, start: u32, end: u32) -> Vec<String> {
        let used = self.references(path, start, end, false);
        let mut read = self.references(path, start, end, true);
        let imports = self.imports_of(path);
        read.extend(
            self.passed_on(path, start, end)
                .filter(|name| imports.names(name) || self.few_define(name)),
        );
        read.difference(&used).cloned().collect()
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

    fn says_generated(&self, path: &str) -> bool {
        self.snapshot.generated.contains(path)
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
mod tests;
