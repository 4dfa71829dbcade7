//! Which changed files a review looks at, and which it says it did not.
//!
//! Every file the PR changes ends up either reviewed or in the "not reviewed" list with a
//! reason: skipped by pattern, no patch from GitHub (binary or too large), an unreadable
//! patch, over the token budget, or beyond GitHub's listing cap. A silent partial review
//! would let a reader believe the whole PR was checked.

use crate::config::ReviewConfig;
use crate::ports::github::{ChangedFile, FileStatus};
use crate::repo::{Attributes, Marked};
use crate::review::diff::{self, Patch};
use crate::review::pointers::{self, Pointer};
use globset::{Glob, GlobSet, GlobSetBuilder};

/// A file whose patch goes to the specialists.
#[derive(Debug, Clone)]
pub struct InputFile {
    pub path: String,
    pub status: FileStatus,
    pub raw_patch: String,
    pub patch: Patch,
    pub tokens: usize,
}

impl ReviewInputs {
    /// How many parts the review reads the diff in (at least one, even with no file).
    pub fn parts(&self) -> usize {
        self.part_tokens.len().max(1)
    }

    /// Each part's files, in GitHub's order: what one set of passes reads.
    pub fn split(&self) -> Vec<Vec<InputFile>> {
        let mut parts = vec![Vec::new(); self.parts()];
        for (file, part) in self.files.iter().zip(&self.part_of) {
            parts[*part].push(file.clone());
        }
        parts
    }

    /// The estimated tokens of the largest part: what a prompt's patch takes of the budget.
    pub fn largest_part_tokens(&self) -> usize {
        self.part_tokens.iter().copied().max().unwrap_or(0)
    }

    /// Whether files this review should have read went unread: some were over the token
    /// budget, or GitHub's listing stopped short. With a failed pass, this is what makes
    /// a review partial (and its gate `neutral`, or `parley review --fail-on-partial` fail).
    pub fn incomplete(&self) -> bool {
        self.listing_truncated
            || self
                .not_reviewed
                .iter()
                .any(|n| n.why.leaves_review_partial())
    }
}

/// A changed file left out of the review, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReviewed {
    pub path: String,
    pub why: LeftOut,
}

/// Why a file was left out. [`LeftOut::OverBudget`] and [`LeftOut::Unreadable`] make a
/// review partial: Parley should have read those (an unreadable patch is Parley's parser
/// failing on what GitHub sent). The others are files no review of this PR could read (a
/// skip pattern the team chose, a binary, a patch GitHub would not send), so a gate that
/// waited for them would never say `success`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeftOut {
    SkipPaths,
    /// Marked `linguist-generated` or `linguist-vendored` in the default branch's
    /// `.gitattributes` named (the root's or a directory's).
    Marked(Marked, String),
    NoPatch,
    /// Its diff is only a submodule's commit or a Git LFS pointer: no code of this
    /// repository's to read.
    Pointer(Pointer),
    Unreadable(String),
    OverBudget,
    /// Reviewed, by the passes of another part of a diff too large for one budget: what
    /// a part's passes are told of the rest, never a file the summary lists.
    InAnotherPart,
}

impl LeftOut {
    /// Why, as the passes are told: a few words, none of them the patch's (a parse
    /// error quotes it).
    pub fn for_the_model(&self) -> &'static str {
        match self {
            LeftOut::SkipPaths => "skipped by the repository's settings",
            LeftOut::Marked(Marked::Generated, _) => "generated code, as the repository marks it",
            LeftOut::Marked(Marked::Vendored, _) => {
                "another project's code, as the repository marks it"
            }
            LeftOut::Marked(Marked::SaysGenerated, _) => "generated code, as the file says",
            LeftOut::NoPatch => "binary, or too large for a patch",
            LeftOut::Pointer(Pointer::Submodule { .. }) => {
                "a submodule's commit, another repository's code"
            }
            LeftOut::Pointer(Pointer::Lfs) => "a Git LFS pointer, its content stored elsewhere",
            LeftOut::Unreadable(_) => "its patch could not be read",
            LeftOut::OverBudget => "over this review's size budget",
            LeftOut::InAnotherPart => "reviewed separately, in another part of this change",
        }
    }

    /// Whether a file left out this way is one the review should have read.
    pub fn leaves_review_partial(&self) -> bool {
        matches!(self, LeftOut::OverBudget | LeftOut::Unreadable(_))
    }
}

/// Why a review read no file, for "Nothing to review: …". With nothing listed as not
/// reviewed, every change was a removal or a pure rename; with only files the repository
/// itself leaves out (a regenerated client, a lock file), "could not be read" would sound
/// like trouble where there is none.
pub fn why_nothing_read(not_reviewed: &[NotReviewed], listing_truncated: bool) -> &'static str {
    let pointers = not_reviewed
        .iter()
        .all(|n| matches!(n.why, LeftOut::Pointer(_)));
    let left_out_by_the_repository = not_reviewed
        .iter()
        .all(|n| matches!(n.why, LeftOut::SkipPaths | LeftOut::Marked(..)));
    match (not_reviewed.is_empty(), listing_truncated) {
        (true, false) => "the change only removes or renames files",
        (false, false) if pointers => {
            "the change only moves submodules or Git LFS pointers, with no code of this repository's"
        }
        (false, false) if left_out_by_the_repository => {
            "every changed file is one the repository leaves out of review"
        }
        _ => "no changed file could be read",
    }
}

/// More files than this left out for one reason the review should not have read anyway
/// are said in one line (see [`left_out_lines`]).
const LEFT_OUT_IN_FULL: usize = 5;

/// The summary's lines for the files left out, in the order GitHub listed them: each file
/// with why, except that a reason the review was never meant to read past (a skip pattern,
/// a `.gitattributes` mark, a patch GitHub would not send) shared by more than
/// [`LEFT_OUT_IN_FULL`] files is one line with a count and the first names. A regenerated
/// client of two hundred files is then one line, not two hundred above the findings;
/// files a review should have read (over the budget, unparsed) are always named one by one.
pub fn left_out_lines(not_reviewed: &[NotReviewed]) -> Vec<String> {
    let mut reasons: Vec<(String, Vec<&str>, bool)> = Vec::new();
    for file in not_reviewed {
        let why = file.why.to_string();
        match reasons.iter_mut().find(|(seen, _, _)| *seen == why) {
            Some((_, paths, _)) => paths.push(&file.path),
            None => reasons.push((why, vec![&file.path], file.why.leaves_review_partial())),
        }
    }
    let mut lines = Vec::new();
    for (why, paths, partial) in reasons {
        if partial || paths.len() <= LEFT_OUT_IN_FULL {
            lines.extend(paths.iter().map(|path| format!("`{path}`: {why}")));
            continue;
        }
        let named: Vec<String> = paths
            .iter()
            .take(3)
            .map(|path| format!("`{path}`"))
            .collect();
        lines.push(format!(
            "{} files: {why} ({} and {} more)",
            paths.len(),
            named.join(", "),
            paths.len() - named.len()
        ));
    }
    lines
}

/// What a review says when GitHub's file listing stopped short.
pub const LISTING_CUT_OFF: &str =
    "GitHub listed only part of this PR's files; the files beyond that listing were not reviewed.";

impl std::fmt::Display for LeftOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeftOut::SkipPaths => f.write_str("matches `review.skipPaths`"),
            LeftOut::Marked(Marked::Generated, file) => {
                write!(f, "marked `linguist-generated` in `{file}`")
            }
            LeftOut::Marked(Marked::Vendored, file) => {
                write!(f, "marked `linguist-vendored` in `{file}`")
            }
            LeftOut::Marked(Marked::SaysGenerated, _) => {
                f.write_str("its first lines say it is generated (on the default branch too)")
            }
            LeftOut::NoPatch => f.write_str("GitHub sent no patch (binary or too large)"),
            LeftOut::Pointer(pointer) => write!(f, "{pointer}"),
            LeftOut::Unreadable(err) => write!(f, "patch could not be read ({err})"),
            LeftOut::OverBudget => {
                f.write_str("over the patch token budget (`review.maxPatchTokens`)")
            }
            LeftOut::InAnotherPart => f.write_str("reviewed in another part"),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ReviewInputs {
    pub files: Vec<InputFile>,
    pub not_reviewed: Vec<NotReviewed>,
    /// GitHub had more files than the listing cap: the ones beyond it are unknown by name.
    pub listing_truncated: bool,
    /// The part each of `files` is reviewed in, in the same order; all 0 while the diff
    /// fits one budget.
    pub part_of: Vec<usize>,
    /// The estimated tokens of each part's patches.
    pub part_tokens: Vec<usize>,
}

/// Whether a review of `changed` has nothing for a pass to read: no file in `read` and
/// none deleted (a deletion is reviewed when code at the head still uses what it
/// deleted), or no pass asked for has anything to look at in `read`.
pub fn nothing_to_read(
    read: &[InputFile],
    changed: &[ChangedFile],
    config: &crate::config::RepoConfig,
    guidelines: &[crate::repo::Guideline],
) -> bool {
    if read.is_empty() {
        return !changed.iter().any(|f| f.status == FileStatus::Removed);
    }
    let paths: Vec<&str> = read.iter().map(|f| f.path.as_str()).collect();
    crate::review::specialists::select(&config.review, !guidelines.is_empty(), &paths)
        .run
        .is_empty()
}

/// Rough token estimate for prompt budgets: about four characters per token for code.
pub fn estimate_tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// Choose the files to review from `changed`, in GitHub's order, within the config's
/// token budget, leaving out what the repository marks generated or vendored. A diff
/// over the budget is cut into parts of at most the budget each (`review.maxParts`),
/// filled in GitHub's order so that a directory's files are read together; a file
/// that fits no part (larger than the budget alone, or every part full) is left out.
pub fn select(
    changed: Vec<ChangedFile>,
    listing_truncated: bool,
    config: &ReviewConfig,
    attributes: &Attributes,
) -> ReviewInputs {
    let skip = glob_set(&config.skip_paths);
    let budget = usize::try_from(config.max_patch_tokens).unwrap_or(usize::MAX);
    let max_parts = usize::try_from(config.max_parts.max(1)).unwrap_or(1);
    let mut inputs = ReviewInputs {
        listing_truncated,
        ..ReviewInputs::default()
    };
    for file in changed {
        let leave_out = |why: LeftOut| NotReviewed {
            path: file.filename.clone(),
            why,
        };
        if file.status == FileStatus::Removed {
            // Nothing is left to comment on; a deletion is seen in the files that used it.
            continue;
        }
        if skip.is_match(&file.filename) {
            inputs.not_reviewed.push(leave_out(LeftOut::SkipPaths));
            continue;
        }
        if let Some((marked, by)) = attributes.marked_by(&file.filename) {
            inputs
                .not_reviewed
                .push(leave_out(LeftOut::Marked(marked, by)));
            continue;
        }
        let Some(raw_patch) = file.patch.clone().filter(|p| !p.trim().is_empty()) else {
            if file.status == FileStatus::Renamed && file.changes == 0 {
                continue; // a pure rename changes no line
            }
            inputs.not_reviewed.push(leave_out(LeftOut::NoPatch));
            continue;
        };
        let patch = match diff::parse_hunks(&raw_patch) {
            Ok(patch) => patch,
            Err(err) => {
                inputs
                    .not_reviewed
                    .push(leave_out(LeftOut::Unreadable(err.to_string())));
                continue;
            }
        };
        if let Some(pointer) = pointers::of(&patch) {
            inputs
                .not_reviewed
                .push(leave_out(LeftOut::Pointer(pointer)));
            continue;
        }
        let tokens = estimate_tokens(&raw_patch);
        let Some(part) = part_for(&mut inputs.part_tokens, tokens, budget, max_parts) else {
            inputs.not_reviewed.push(leave_out(LeftOut::OverBudget));
            continue;
        };
        inputs.part_tokens[part] += tokens;
        inputs.part_of.push(part);
        inputs.files.push(InputFile {
            path: file.filename,
            status: file.status,
            raw_patch,
            patch,
            tokens,
        });
    }
    inputs
}

/// The part a patch of `tokens` goes in: the last one while it has room (files next to
/// each other in GitHub's order are mostly one directory's), else a new one, else the
/// first earlier one with room; `None` when none can take it.
fn part_for(
    parts: &mut Vec<usize>,
    tokens: usize,
    budget: usize,
    max_parts: usize,
) -> Option<usize> {
    let fits = |used: usize| used.saturating_add(tokens) <= budget;
    if parts.last().is_some_and(|used| fits(*used)) {
        return Some(parts.len() - 1);
    }
    if parts.len() < max_parts && fits(0) {
        parts.push(0);
        return Some(parts.len() - 1);
    }
    parts.iter().position(|used| fits(*used))
}

/// The configured globs; ones that do not compile were already reported by the config
/// parser and are left out here.
pub(crate) fn glob_set(globs: &[String]) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        if let Ok(glob) = Glob::new(glob) {
            builder.add(glob);
        }
        // `**/x` does not match a root-level `x` in every glob flavour; add the root form.
        if let Some(root) = glob.strip_prefix("**/")
            && let Ok(glob) = Glob::new(root)
        {
            builder.add(glob);
        }
    }
    builder.build().unwrap_or_else(|_| GlobSet::empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changed(name: &str, patch: Option<&str>) -> ChangedFile {
        ChangedFile::listed(name, FileStatus::Modified, patch)
    }

    /// What the default settings select of `files`.
    fn by_default(files: Vec<ChangedFile>) -> ReviewInputs {
        select(
            files,
            false,
            &ReviewConfig::default(),
            &Attributes::default(),
        )
    }

    /// The paths read, in order.
    fn read(inputs: &ReviewInputs) -> Vec<&str> {
        inputs.files.iter().map(|f| f.path.as_str()).collect()
    }

    /// Each file left out, with why as the summary says it.
    fn reasons(inputs: &ReviewInputs) -> Vec<(&str, String)> {
        inputs
            .not_reviewed
            .iter()
            .map(|n| (n.path.as_str(), n.why.to_string()))
            .collect()
    }

    #[test]
    fn skips_defaults_and_reports_why() {
        let config = ReviewConfig {
            max_patch_tokens: 8,
            max_parts: 1,
            ..ReviewConfig::default()
        };
        let patch = "@@ -1 +1 @@\n-a\n+b\n";
        let inputs = select(
            vec![
                changed("Cargo.lock", Some(patch)),
                changed("src/a.rs", Some(patch)),
                changed("img/logo.png", None),
                changed("src/b.rs", Some(patch)),
                changed("src/c.rs", Some("@@ -1,2 +1,2 @@\n+x\n")),
            ],
            false,
            &config,
            &Attributes::default(),
        );
        assert_eq!(inputs.files.len(), 1);
        assert_eq!(inputs.files[0].path, "src/a.rs");
        let reasons = reasons(&inputs);
        assert_eq!(
            reasons[0],
            ("Cargo.lock", "matches `review.skipPaths`".into())
        );
        assert_eq!(reasons[1].0, "img/logo.png");
        assert!(reasons[2].1.contains("budget"), "{reasons:?}");
        assert!(reasons[3].1.contains("could not be read"), "{reasons:?}");
        assert!(inputs.incomplete(), "a file over the budget went unread");
    }

    /// Tools' output that a review has nothing to say to: lock files of every package
    /// manager, test snapshots, built artefacts; the code beside them is reviewed.
    #[test]
    fn lock_files_snapshots_and_artefacts_are_skipped_by_default() {
        let patch = "@@ -1 +1 @@\n-a\n+b\n";
        let skipped = [
            "web/npm-shrinkwrap.json",
            "go.work.sum",
            "src/__tests__/__snapshots__/App.test.tsx.snap",
            "tests/snapshots/parse__nested.snap",
            "src/__snapshots__/view.ts",
            "dist-ish/module.wasm",
            "build/Main.class",
        ];
        let mut files: Vec<_> = skipped.iter().map(|p| changed(p, Some(patch))).collect();
        files.push(changed("src/App.test.tsx", Some(patch)));
        let inputs = by_default(files);
        assert_eq!(read(&inputs), ["src/App.test.tsx"]);
        let reasons = reasons(&inputs);
        assert_eq!(reasons.len(), skipped.len());
        assert!(
            reasons
                .iter()
                .all(|(_, why)| why == "matches `review.skipPaths`"),
            "{reasons:?}"
        );
        assert!(!inputs.incomplete());
    }

    /// What GitHub itself collapses as generated, by path, is not read either; code named
    /// like it is.
    #[test]
    fn what_github_collapses_as_generated_is_skipped_by_default() {
        let patch = "@@ -1 +1 @@\n-a\n+b\n";
        let skipped = [
            ".pnp.cjs",
            "web/.pnp.loader.mjs",
            ".yarn/releases/yarn-4.5.0.cjs",
            "app/src/__generated__/UserQuery.graphql.ts",
            "infra/.terraform.lock.hcl",
            "Package.resolved",
            "ios/App.xcworkspace/xcshareddata/swiftpm/Package.resolved",
            "src/Api/packages.lock.json",
            "gradle.lockfile",
            "WinApp/Form1.Designer.cs",
            "WinApp/Settings.designer.vb",
            "Specs/Login.feature.cs",
            "proto/user.pb.h",
            "proto/user.grpc.pb.cc",
            "api/user_pb2.pyi",
            "api/user_pb2_grpc.py",
            "ios/Pods/Alamofire/Source/Session.swift",
            "Carthage/Build/iOS/Lib.framework/Headers/Lib.h",
            "Godeps/Godeps.json",
            ".idea/workspace.xml",
            "ios/Base.lproj/Main.nib",
        ];
        let reviewed = [
            "src/designer.rs",
            "src/Designer/Canvas.cs",
            "src/pods.ts",
            "src/generated_ids.rs",
            "api/user_pb.py",
            "features/login.feature",
        ];
        let files: Vec<_> = skipped
            .iter()
            .chain(&reviewed)
            .map(|p| changed(p, Some(patch)))
            .collect();
        let inputs = by_default(files);
        assert_eq!(read(&inputs), reviewed);
        assert_eq!(reasons(&inputs).len(), skipped.len());
        assert!(!inputs.incomplete());
    }

    const SUBMODULE: &str = "@@ -1 +1 @@\n-Subproject commit 1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d\n+Subproject commit 3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d1a2b";
    const LFS: &str = "@@ -0,0 +1,3 @@\n+version https://git-lfs.github.com/spec/v1\n+oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n+size 1200";

    #[test]
    fn files_no_review_could_read_do_not_make_it_incomplete() {
        let patch = "@@ -1 +1 @@\n-a\n+b\n";
        let inputs = select(
            vec![
                changed("Cargo.lock", Some(patch)),
                changed("img/logo.png", None),
                changed("libs/engine", Some(SUBMODULE)),
                changed("models/weights.onnx", Some(LFS)),
                changed("src/a.rs", Some(patch)),
            ],
            false,
            &ReviewConfig::default(),
            &Attributes::default(),
        );
        assert_eq!(read(&inputs), ["src/a.rs"]);
        assert_eq!(
            reasons(&inputs)[2..],
            [
                (
                    "libs/engine",
                    "a submodule, moved from `1a2b3c4` to `3c4d5e6` (another repository's code)"
                        .to_string()
                ),
                (
                    "models/weights.onnx",
                    "a Git LFS pointer (its content is not in the diff)".to_string()
                )
            ]
        );
        assert!(!inputs.incomplete());
        let truncated = select(
            vec![changed("src/a.rs", Some(patch))],
            true,
            &ReviewConfig::default(),
            &Attributes::default(),
        );
        assert!(
            truncated.incomplete(),
            "files beyond GitHub's listing went unread"
        );
    }

    #[test]
    fn files_the_repository_marks_generated_or_vendored_are_left_out_saying_so() {
        let patch = "@@ -1 +1 @@\n-a\n+b\n";
        let attributes = Attributes::parse(
            "api/client/** linguist-generated\n*.pb.rs linguist-generated\nlibs/** linguist-vendored\n",
        );
        let inputs = select(
            vec![
                changed("api/client/users.ts", Some(patch)),
                changed("src/proto/msg.pb.rs", Some(patch)),
                changed("libs/json/json.c", Some(patch)),
                changed("src/a.rs", Some(patch)),
            ],
            false,
            &ReviewConfig::default(),
            &attributes,
        );
        let read: Vec<_> = inputs.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(read, ["src/a.rs"]);
        let reasons = reasons(&inputs);
        assert_eq!(
            reasons,
            [
                (
                    "api/client/users.ts",
                    "marked `linguist-generated` in `.gitattributes`".to_string()
                ),
                (
                    "src/proto/msg.pb.rs",
                    "marked `linguist-generated` in `.gitattributes`".to_string()
                ),
                (
                    "libs/json/json.c",
                    "marked `linguist-vendored` in `.gitattributes`".to_string()
                ),
            ]
        );
        assert!(
            !inputs.incomplete(),
            "what the repository marks so is not for review: the review is whole"
        );
    }

    #[test]
    fn many_files_left_out_for_one_reason_are_one_line_unless_the_review_needed_them() {
        let patch = "@@ -1 +1 @@\n-a\n+b\n";
        let big = "@@ -0,0 +1,2 @@\n+a\n+b\n";
        let mut files: Vec<ChangedFile> = (0..7)
            .map(|i| changed(&format!("api/gen{i}.ts"), Some(patch)))
            .collect();
        files.push(changed("src/a.rs", Some(patch)));
        files.extend((0..7).map(|i| changed(&format!("src/big{i}.rs"), Some(big))));
        files.push(changed("Cargo.lock", Some(patch)));
        let config = ReviewConfig {
            max_patch_tokens: 8,
            max_parts: 1,
            ..ReviewConfig::default()
        };
        let attributes = Attributes::parse("api/** linguist-generated\n");
        let inputs = select(files, false, &config, &attributes);
        let lines = left_out_lines(&inputs.not_reviewed);
        assert_eq!(
            lines[0],
            "7 files: marked `linguist-generated` in `.gitattributes` (`api/gen0.ts`, `api/gen1.ts`, `api/gen2.ts` and 4 more)"
        );
        assert_eq!(lines.len(), 1 + 7 + 1, "{lines:#?}");
        assert!(
            lines[1..8]
                .iter()
                .all(|line| line.contains("over the patch token budget"))
        );
        assert_eq!(lines[8], "`Cargo.lock`: matches `review.skipPaths`");
    }

    #[test]
    fn nothing_read_says_why() {
        let patch = "@@ -1 +1 @@\n-a\n+b\n";
        let attributes = Attributes::parse("api/** linguist-generated\n");
        let why = |files: Vec<ChangedFile>, truncated: bool| {
            let inputs = select(files, truncated, &ReviewConfig::default(), &attributes);
            assert!(inputs.files.is_empty());
            why_nothing_read(&inputs.not_reviewed, truncated)
        };
        let removed = ChangedFile::listed("src/a.rs", FileStatus::Removed, Some(patch));
        assert_eq!(
            why(vec![removed], false),
            "the change only removes or renames files"
        );
        let ours = || {
            vec![
                changed("Cargo.lock", Some(patch)),
                changed("api/client.ts", Some(patch)),
            ]
        };
        assert_eq!(
            why(ours(), false),
            "every changed file is one the repository leaves out of review"
        );
        assert_eq!(why(ours(), true), "no changed file could be read");
        let mut with_a_binary = ours();
        with_a_binary.push(changed("logo.svgz", None));
        assert_eq!(why(with_a_binary, false), "no changed file could be read");
        let pointers = vec![
            changed("libs/engine", Some(SUBMODULE)),
            changed("models/weights.onnx", Some(LFS)),
        ];
        assert_eq!(
            why(pointers, false),
            "the change only moves submodules or Git LFS pointers, with no code of this repository's"
        );
    }

    #[test]
    fn a_diff_over_the_budget_is_read_in_parts_in_githubs_order() {
        // Ten tokens a part; patches of 5, 8, 11 and 4 tokens.
        let patch = "@@ -1 +1 @@\n-a\n+b\n";
        let larger = "@@ -1,3 +1,3 @@\n x\n-a\n-b\n+c\n+d\n";
        let small = "@@ -0,0 +1 @@\n+\n";
        let too_big = format!("@@ -0,0 +1,9 @@\n{}", "+a\n".repeat(9));
        let config = |max_parts| ReviewConfig {
            max_patch_tokens: 10,
            max_parts,
            ..ReviewConfig::default()
        };
        let files = || {
            vec![
                changed("src/a.rs", Some(patch)),
                changed("src/b.rs", Some(larger)),
                changed("src/huge.rs", Some(&too_big)),
                changed("src/c.rs", Some(larger)),
                changed("src/d.rs", Some(larger)),
                changed("src/e.rs", Some(small)),
            ]
        };
        let inputs = select(files(), false, &config(3), &Attributes::default());
        let parts: Vec<Vec<String>> = inputs
            .split()
            .iter()
            .map(|part| part.iter().map(|f| f.path.clone()).collect())
            .collect();
        assert_eq!(
            parts,
            [
                vec!["src/a.rs".to_string(), "src/e.rs".to_string()],
                vec!["src/b.rs".to_string()],
                vec!["src/c.rs".to_string()],
            ],
            "a new part while the last is full and parts are left, then the first with room"
        );
        assert_eq!(inputs.part_tokens, [9, 8, 8]);
        assert_eq!(inputs.largest_part_tokens(), 9);
        assert_eq!(
            reasons(&inputs),
            [
                (
                    "src/huge.rs",
                    "over the patch token budget (`review.maxPatchTokens`)".to_string()
                ),
                (
                    "src/d.rs",
                    "over the patch token budget (`review.maxPatchTokens`)".to_string()
                ),
            ],
            "larger than a part, and no part left with room"
        );
        assert!(inputs.incomplete());

        let one = select(files(), false, &config(1), &Attributes::default());
        assert_eq!(one.parts(), 1);
        let read: Vec<_> = one.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            read,
            ["src/a.rs", "src/e.rs"],
            "one budget, as before parts"
        );

        let nothing = select(Vec::new(), false, &config(3), &Attributes::default());
        assert_eq!(nothing.parts(), 1, "no file is still one (empty) part");
        assert!(nothing.split().iter().all(Vec::is_empty));
    }

    #[test]
    fn a_patch_parley_could_not_parse_makes_it_incomplete() {
        let inputs = select(
            vec![
                changed("src/a.rs", Some("@@ -1 +1 @@\n-a\n+b\n")),
                changed("src/c.rs", Some("@@ -1,2 +1,2 @@\n+x\n")),
            ],
            false,
            &ReviewConfig::default(),
            &Attributes::default(),
        );
        assert_eq!(inputs.files.len(), 1);
        assert!(
            inputs.incomplete(),
            "GitHub sent src/c.rs's patch; the review should have read it"
        );
    }
}
