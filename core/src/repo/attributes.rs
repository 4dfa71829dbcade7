//! The repository's `.gitattributes`, for the two attributes GitHub itself reads to tell a
//! team's own code from what a tool or another project wrote: `linguist-generated` (GitHub
//! collapses such files in a PR's diff) and `linguist-vendored`. A review that comments on
//! a generated client or a bundled library is noise nobody can act on, so files the
//! repository marks so are left out of review as `review.skipPaths` leaves files out.
//!
//! The root's file and those of the directories a PR touches (a monorepo marks a
//! package's generated client in the package's own), each read relative to its directory,
//! a deeper one deciding over the root's, as Git reads them. Read from the branch
//! `.parley.yml` is read from (the default branch), never the PR's head or a base branch
//! its author may have made: what is left out of review is a rule
//! like `review.skipPaths`, and a PR that marks its own files generated must not hide them
//! from review (its `.gitattributes` change is reviewed as any file).
//!
//! Git's rules, as far as these attributes need them: a line is a pattern and attributes;
//! a pattern without a `/` matches a file's name at any depth, one with a `/` matches from
//! the root; `attr` or `attr=true` sets, `-attr` or `attr=false` unsets, `!attr` forgets;
//! for each attribute the last matching line decides. Macros (`[attr]…`), negated and
//! directory-only patterns never name a file, and are passed over, as are patterns that
//! do not compile. Written here rather than taken from gitoxide's attribute crates: two
//! attributes need a few dozen lines, and the workers' binaries have little room left.

use crate::ports::github::{GitHub, RepoScope};
use globset::{GlobBuilder, GlobMatcher};

/// The file's name, at the root of the repository and in any directory under it.
pub const FILE_NAME: &str = ".gitattributes";

/// The path of directory `dir`'s `.gitattributes` (`""`: the root's).
pub fn file_in(dir: &str) -> String {
    match dir {
        "" => FILE_NAME.to_string(),
        dir => format!("{dir}/{FILE_NAME}"),
    }
}

/// The directory whose `.gitattributes` `path` is (`""`: the root's); `None` for any other
/// file.
pub fn dir_of(path: &str) -> Option<&str> {
    match path.strip_suffix(FILE_NAME)? {
        "" => Some(""),
        dir => dir.strip_suffix('/'),
    }
}

/// Directories whose own `.gitattributes` is looked for (nearest the root first), besides
/// the root's: as many as guideline files are looked for in.
const MAX_DIRECTORIES: usize = 8;

/// More lines than any real `.gitattributes` has; the rest of a larger file is ignored.
const MAX_RULES: usize = 2_000;

const GENERATED: &str = "linguist-generated";
const VENDORED: &str = "linguist-vendored";

/// Why the repository says a file is not its own code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marked {
    Generated,
    Vendored,
}

/// The rules of one `.gitattributes` that name [`GENERATED`] or [`VENDORED`].
#[derive(Debug, Clone, Default)]
pub struct Attributes {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
struct Rule {
    /// The directory whose file it is in (`""`: the root's).
    dir: String,
    /// The line as written (trimmed), to say which rule a change adds.
    line: String,
    pattern: GlobMatcher,
    /// `Some(true)` sets, `Some(false)` unsets, `None` forgets (`!attr`).
    generated: Option<Option<bool>>,
    vendored: Option<Option<bool>>,
}

impl Attributes {
    /// The root's `.gitattributes`.
    pub fn parse(text: &str) -> Self {
        Self::parse_in("", text)
    }

    /// The `.gitattributes` of directory `dir` (`""`: the root), whose patterns Git reads
    /// relative to it: a name matches at any depth below it, a path from it.
    pub fn parse_in(dir: &str, text: &str) -> Self {
        let rules = text
            .lines()
            .filter_map(|line| rule(line, dir))
            .take(MAX_RULES)
            .collect::<Vec<_>>();
        Self { rules }
    }

    /// These rules, then `deeper`'s: Git lets a file nearer the path decide over one
    /// nearer the root, as a later line decides over an earlier one.
    pub fn then(mut self, deeper: Attributes) -> Attributes {
        self.rules.extend(deeper.rules);
        self
    }

    /// Where `.gitattributes` files that may mark `touched` files are looked for: the
    /// root's, then those of the directories holding them (bounded, nearest the root
    /// first, so the order is the order they apply in).
    pub fn files_for(touched: &[String]) -> Vec<(String, String)> {
        let dirs = super::touched_directories(touched, MAX_DIRECTORIES);
        std::iter::once(String::new())
            .chain(dirs)
            .map(|dir| {
                let path = file_in(&dir);
                (dir, path)
            })
            .collect()
    }

    /// What the repository marks `path` as, if anything (generated before vendored).
    pub fn marked(&self, path: &str) -> Option<Marked> {
        self.marked_by(path).map(|(marked, _)| marked)
    }

    /// What the repository marks `path` as, and the `.gitattributes` whose line decided
    /// it (the root's, or a directory's): what a summary says of the file.
    pub fn marked_by(&self, path: &str) -> Option<(Marked, String)> {
        let (mut generated, mut vendored) = (None, None);
        for rule in self.rules.iter().filter(|rule| rule.pattern.is_match(path)) {
            if let Some(state) = rule.generated {
                generated = Some((state, &rule.dir));
            }
            if let Some(state) = rule.vendored {
                vendored = Some((state, &rule.dir));
            }
        }
        match (generated, vendored) {
            (Some((Some(true), dir)), _) => Some((Marked::Generated, file_in(dir))),
            (_, Some((Some(true), dir))) => Some((Marked::Vendored, file_in(dir))),
            _ => None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The lines of `dir`'s file (`""`: the root's) that mark files generated or vendored
    /// (not those that only take a mark away), as written.
    pub fn marking_lines<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = &'a str> {
        self.rules
            .iter()
            .filter(move |rule| rule.dir == dir)
            .filter(|rule| rule.generated == Some(Some(true)) || rule.vendored == Some(Some(true)))
            .map(|rule| rule.line.as_str())
    }
}

/// The rule on one line of `dir`'s file, when it names a file and one of the two
/// attributes.
fn rule(line: &str, dir: &str) -> Option<Rule> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') || line.starts_with("[attr]") {
        return None;
    }
    let (pattern, rest) = split_pattern(line)?;
    let (mut generated, mut vendored) = (None, None);
    for word in rest.split_whitespace() {
        let (name, state) = attribute(word);
        match name {
            GENERATED => generated = Some(state),
            VENDORED => vendored = Some(state),
            _ => {}
        }
    }
    if generated.is_none() && vendored.is_none() {
        return None;
    }
    Some(Rule {
        dir: dir.to_string(),
        line: line.to_string(),
        pattern: matcher(&pattern, dir)?,
        generated,
        vendored,
    })
}

/// The pattern (unquoted when Git's C-style quotes surround it) and what follows it.
fn split_pattern(line: &str) -> Option<(String, &str)> {
    let Some(quoted) = line.strip_prefix('"') else {
        let (pattern, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        return Some((pattern.to_string(), rest));
    };
    let mut pattern = String::new();
    let mut chars = quoted.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return Some((pattern, &quoted[at + 1..])),
            '\\' => pattern.push(chars.next()?.1),
            c => pattern.push(c),
        }
    }
    None
}

/// An attribute's name and its state (see [`Rule`]).
fn attribute(word: &str) -> (&str, Option<bool>) {
    if let Some(name) = word.strip_prefix('-') {
        return (name, Some(false));
    }
    if let Some(name) = word.strip_prefix('!') {
        return (name, None);
    }
    match word.split_once('=') {
        Some((name, value)) => (name, Some(!value.eq_ignore_ascii_case("false"))),
        None => (word, Some(true)),
    }
}

/// Git's pattern in `dir`'s file as a glob over repository paths; `None` for one that
/// never names a file.
fn matcher(pattern: &str, dir: &str) -> Option<GlobMatcher> {
    if pattern.starts_with('!') || pattern.ends_with('/') {
        return None;
    }
    let anchored = pattern.trim_start_matches('/');
    let relative = if pattern.contains('/') {
        anchored.to_string()
    } else {
        format!("**/{pattern}")
    };
    let glob = if dir.is_empty() {
        relative
    } else {
        // The directory's own name is matched literally, whatever it holds.
        format!("{}/{relative}", globset::escape(dir))
    };
    GlobBuilder::new(&glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .ok()
        .map(|glob| glob.compile_matcher())
}

/// The `.gitattributes` files of `branch` that may mark `touched` files (see
/// [`Attributes::files_for`]), read side by side and applied root first. One that cannot
/// be read leaves nothing marked by it: the review then reads those files too, which is
/// noise, never a finding lost.
pub async fn load_attributes(
    github: &dyn GitHub,
    scope: &RepoScope,
    branch: &str,
    touched: &[String],
) -> Attributes {
    let files = Attributes::files_for(touched);
    let reads = files.iter().map(|(dir, path)| async move {
        match github.get_file_contents(scope, path, branch).await {
            Ok(Some(file)) => file
                .text()
                .map(|text| Attributes::parse_in(dir, text))
                .unwrap_or_default(),
            Ok(None) => Attributes::default(),
            Err(err) => {
                tracing::warn!(repo = %scope.full_name(), path, error = %err, "could not read a .gitattributes; the files it marks are reviewed like the rest");
                Attributes::default()
            }
        }
    });
    crate::concurrently::join_all(reads.collect())
        .await
        .into_iter()
        .fold(Attributes::default(), Attributes::then)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(text: &str, path: &str) -> Option<Marked> {
        Attributes::parse(text).marked(path)
    }

    #[test]
    fn a_name_pattern_matches_at_any_depth_and_a_path_pattern_from_the_root() {
        let text = "*.pb.go linguist-generated\n/api/client/** linguist-generated=true\nlib/** linguist-vendored\n";
        assert_eq!(marked(text, "x.pb.go"), Some(Marked::Generated));
        assert_eq!(marked(text, "svc/v1/x.pb.go"), Some(Marked::Generated));
        assert_eq!(
            marked(text, "api/client/gen/users.ts"),
            Some(Marked::Generated)
        );
        assert_eq!(marked(text, "web/api/client/users.ts"), None, "anchored");
        assert_eq!(marked(text, "lib/jquery.js"), Some(Marked::Vendored));
        assert_eq!(
            marked(text, "src/lib/util.js"),
            None,
            "lib/ with a slash is anchored"
        );
        assert_eq!(marked(text, "src/main.go"), None);
    }

    #[test]
    fn a_star_stays_within_a_directory() {
        let text = "gen/*.ts linguist-generated\n";
        assert_eq!(marked(text, "gen/a.ts"), Some(Marked::Generated));
        assert_eq!(marked(text, "gen/deep/a.ts"), None);
    }

    #[test]
    fn the_last_matching_line_decides_each_attribute() {
        let text = "vendor/** linguist-vendored\nvendor/ours/** -linguist-vendored\n*.gen.rs linguist-generated\nsrc/keep.gen.rs linguist-generated=false\n";
        assert_eq!(marked(text, "vendor/x/a.c"), Some(Marked::Vendored));
        assert_eq!(marked(text, "vendor/ours/a.c"), None);
        assert_eq!(marked(text, "src/a.gen.rs"), Some(Marked::Generated));
        assert_eq!(marked(text, "src/keep.gen.rs"), None);
        // `!attr` forgets an earlier setting.
        let text = "*.js linguist-vendored\napp.js !linguist-vendored\n";
        assert_eq!(marked(text, "app.js"), None);
        assert_eq!(marked(text, "lib.js"), Some(Marked::Vendored));
    }

    #[test]
    fn lines_that_name_no_file_or_other_attributes_change_nothing() {
        let text = "# a comment\n\n[attr]generated linguist-generated\n*.rs text eol=lf\n!*.c linguist-generated\ndocs/ linguist-generated\n*.md linguist-documentation\n";
        let attributes = Attributes::parse(text);
        assert!(attributes.is_empty(), "{attributes:?}");
        assert_eq!(attributes.marked("a.c"), None);
    }

    #[test]
    fn quoted_patterns_and_odd_values() {
        let text = "\"docs/my file.txt\" linguist-generated\n*.snap linguist-generated=1\n[ linguist-generated\n\"unterminated linguist-generated\n";
        assert_eq!(marked(text, "docs/my file.txt"), Some(Marked::Generated));
        assert_eq!(marked(text, "x.snap"), Some(Marked::Generated));
        assert_eq!(marked(text, "["), None, "a pattern that does not compile");
    }

    /// A directory's own file speaks for what is under it, relative to it, and decides
    /// over the root's.
    #[test]
    fn a_directorys_file_is_read_relative_to_it_and_decides_over_the_roots() {
        let root = Attributes::parse("*.ts linguist-generated\n");
        let nested = Attributes::parse_in(
            "packages/api",
            "client.ts linguist-generated\n/gen/** linguist-vendored\nsrc/*.ts -linguist-generated\n",
        );
        let all = root.then(nested);
        assert_eq!(
            all.marked("packages/api/lib/client.ts"),
            Some(Marked::Generated)
        );
        assert_eq!(all.marked("packages/api/gen/x.rs"), Some(Marked::Vendored));
        assert_eq!(
            all.marked("gen/x.rs"),
            None,
            "anchored to its own directory"
        );
        assert_eq!(all.marked("packages/web/gen/x.rs"), None);
        assert_eq!(
            all.marked("packages/api/src/main.ts"),
            None,
            "the deeper file decides"
        );
        assert_eq!(all.marked("web/main.ts"), Some(Marked::Generated));
        assert_eq!(
            all.marked_by("packages/api/lib/client.ts"),
            Some((Marked::Generated, "packages/api/.gitattributes".to_string()))
        );
        assert_eq!(
            all.marked_by("web/main.ts"),
            Some((Marked::Generated, ".gitattributes".to_string()))
        );
        let odd = Attributes::parse_in("a[1]", "*.rs linguist-generated\n");
        assert_eq!(odd.marked("a[1]/x.rs"), Some(Marked::Generated));
        assert_eq!(
            odd.marked("a1/x.rs"),
            None,
            "the directory's name is literal"
        );
    }

    #[test]
    fn a_files_path_and_its_directory() {
        for (dir, path) in [
            ("", ".gitattributes"),
            ("svc/api", "svc/api/.gitattributes"),
        ] {
            assert_eq!(file_in(dir), path);
            assert_eq!(dir_of(path), Some(dir));
        }
        for other in [
            "svc.gitattributes",
            "docs/gitattributes",
            "a/.gitattributes.bak",
        ] {
            assert_eq!(dir_of(other), None, "{other}");
        }
    }

    #[test]
    fn files_are_looked_for_at_the_root_then_in_touched_directories() {
        let touched = vec!["packages/api/src/a.ts".to_string(), "README.md".to_string()];
        let files: Vec<String> = Attributes::files_for(&touched)
            .into_iter()
            .map(|(_, path)| path)
            .collect();
        assert_eq!(
            files,
            [
                ".gitattributes",
                "packages/.gitattributes",
                "packages/api/.gitattributes",
                "packages/api/src/.gitattributes"
            ]
        );
    }

    #[test]
    fn a_huge_file_is_read_only_so_far() {
        let mut text = "x linguist-generated\n".repeat(MAX_RULES);
        text.push_str("late.rs linguist-generated\n");
        assert_eq!(marked(&text, "late.rs"), None);
        assert_eq!(marked(&text, "x"), Some(Marked::Generated));
    }
}
