//! Scope and path words in a learning: "for this PR", "org-wide", "in tests/**".
//!
//! They say where a rule applies, not what it is, so they come out of the rule's text:
//! the learning list then shows "unwrap" with its scope and globs beside it rather than
//! "unwrap in src/legacy/ for this PR". Phrases are matched word by word at every
//! position, so the work stays linear in the rule's length.

use super::ScopeWord;
use super::words::{same_word, words};
use std::ops::Range;

/// Which path phrases limit a learning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PathMode {
    /// Any path after "in", "under", "for"…: a dismissal or adjustment about a file is
    /// limited to it.
    Any,
    /// Only globs and directories: a fact that names a file is about that file
    /// ("config lives in config/app.yml") and keeps it in its text.
    GlobsAndDirectories,
}

/// A rule's text with its scope and paths taken out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Extracted {
    pub text: String,
    pub scope: Option<ScopeWord>,
    pub paths: Vec<String>,
}

const SCOPES: &[(&str, ScopeWord)] = &[
    ("in this thread", ScopeWord::Thread),
    ("for this thread", ScopeWord::Thread),
    ("for this pr", ScopeWord::Pr),
    ("in this pr", ScopeWord::Pr),
    ("on this pr", ScopeWord::Pr),
    ("for this pull request", ScopeWord::Pr),
    ("in this pull request", ScopeWord::Pr),
    ("on this pull request", ScopeWord::Pr),
    ("for the repo", ScopeWord::Repo),
    ("for this repo", ScopeWord::Repo),
    ("in this repo", ScopeWord::Repo),
    ("across the repo", ScopeWord::Repo),
    ("for the repository", ScopeWord::Repo),
    ("for this repository", ScopeWord::Repo),
    ("in this repository", ScopeWord::Repo),
    ("across the repository", ScopeWord::Repo),
    ("repo-wide", ScopeWord::Repo),
    ("repository-wide", ScopeWord::Repo),
    ("for all repos", ScopeWord::Org),
    ("for all repositories", ScopeWord::Org),
    ("across all repos", ScopeWord::Org),
    ("across all repositories", ScopeWord::Org),
    ("in all repos", ScopeWord::Org),
    ("across the org", ScopeWord::Org),
    ("across the organisation", ScopeWord::Org),
    ("across the organization", ScopeWord::Org),
    ("for the org", ScopeWord::Org),
    ("for the organisation", ScopeWord::Org),
    ("for the organization", ScopeWord::Org),
    ("org-wide", ScopeWord::Org),
    ("organisation-wide", ScopeWord::Org),
    ("organization-wide", ScopeWord::Org),
];

/// Words that open a path phrase.
const PREPOSITIONS: &[&str] = &["in", "under", "within", "inside", "for"];
/// Words between a preposition and the path: "in files under src/".
const FILES: &[&str] = &["files", "file"];
const FILES_WHERE: &[&str] = &["in", "under", "within", "inside", "matching"];
/// Words after a path that belong to the phrase; the directory ones make it a tree.
const TRAILERS: &[&str] = &["files", "file", "code"];
const DIRECTORY: &[&str] = &[
    "directory",
    "directories",
    "dir",
    "folder",
    "folders",
    "tree",
];
/// English with a slash, not paths.
const SLASH_WORDS: &[&str] = &[
    "and/or",
    "either/or",
    "w/o",
    "i/o",
    "read/write",
    "client/server",
    "input/output",
    "yes/no",
    "on/off",
    "true/false",
    "pass/fail",
    "n/a",
];

/// Take the scope and path phrases out of `raw`.
pub(super) fn extract(raw: &str, mode: PathMode) -> Extracted {
    let words: Vec<Range<usize>> = words(raw).map(|(s, e)| s..e).collect();
    let word = |k: usize| words.get(k).and_then(|r| raw.get(r.clone())).unwrap_or("");
    let mut removed: Vec<Range<usize>> = Vec::new();
    let mut scope: Option<ScopeWord> = None;
    let mut paths = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let taken = if let Some((n, found)) = scope_at(&word, i) {
            // Contradictory scopes: the narrowest, so a muddled rule reaches least.
            scope = Some(scope.map_or(found, |s| s.min(found)));
            n
        } else if let Some((n, found)) = paths_at(&word, i, mode) {
            paths.extend(found);
            n
        } else {
            0
        };
        if taken == 0 {
            i += 1;
            continue;
        }
        removed.push(words[i].start..words[i + taken - 1].end);
        i += taken;
    }
    Extracted {
        text: rebuild(raw, &removed),
        scope,
        paths,
    }
}

/// The scope phrase starting at word `i`: how many words it takes, and its scope.
fn scope_at<'a>(word: &impl Fn(usize) -> &'a str, i: usize) -> Option<(usize, ScopeWord)> {
    SCOPES.iter().find_map(|(phrase, scope)| {
        let n = phrase.split(' ').count();
        phrase
            .split(' ')
            .enumerate()
            .all(|(k, want)| {
                let w = word(i + k);
                let w = if k + 1 == n {
                    w.trim_end_matches([',', '.', ';', ':', '!', ')'])
                } else {
                    w
                };
                same_word(w, want)
            })
            .then_some((n, *scope))
    })
}

/// The path phrase starting at word `i`: how many words it takes, and its globs.
/// `in [the] [files in|under|matching] <path>[, <path>| and <path>…] [files|directory]`.
fn paths_at<'a>(
    word: &impl Fn(usize) -> &'a str,
    i: usize,
    mode: PathMode,
) -> Option<(usize, Vec<String>)> {
    // "for `*.md` files: use sentence case": the phrase's last word may carry punctuation.
    let is = |k: usize, set: &[&str]| {
        let w = word(k).trim_end_matches([',', '.', ';', ':', '!', ')']);
        set.iter().any(|s| same_word(w, s))
    };
    if !is(i, PREPOSITIONS) {
        return None;
    }
    let mut k = i + 1;
    if is(k, &["the"]) {
        k += 1;
    }
    if is(k, FILES) && is(k + 1, FILES_WHERE) {
        k += 2;
    }
    let mut found = Vec::new();
    loop {
        let directory = is(k + 1, DIRECTORY);
        let path = path(word(k), mode, directory)?;
        found.push(path);
        k += 1;
        let comma = word(k - 1).ends_with(',');
        if is(k, &["and", "or"]) && path_like(word(k + 1), mode, is(k + 2, DIRECTORY)) {
            k += 1;
        } else if !(comma && path_like(word(k), mode, is(k + 1, DIRECTORY))) {
            break;
        }
    }
    if is(k, DIRECTORY) {
        for path in &mut found {
            if !path.contains('*') {
                *path = format!("{}/**", path.trim_end_matches('/'));
            }
        }
        k += 1;
    } else if is(k, TRAILERS) {
        k += 1;
    }
    Some((k - i, found))
}

fn path_like(word: &str, mode: PathMode, directory: bool) -> bool {
    path(word, mode, directory).is_some()
}

/// `word` as a glob, if it reads as a path: it has a `/` or a `*`, and is not a URL, an
/// address, or English ("and/or"). A directory (`src/legacy/`) becomes `src/legacy/**`.
fn path(word: &str, mode: PathMode, directory: bool) -> Option<String> {
    let quotes = ['`', '"', '\'', '“', '”', '‘', '’'];
    let punctuation = [',', ';', ':', '.', '!', '?', ')'];
    let word = word
        .trim_end_matches(punctuation)
        .trim_matches(quotes)
        .trim_end_matches(punctuation);
    if word.contains("://") || word.contains('@') || word.starts_with('-') {
        return None;
    }
    if SLASH_WORDS.iter().any(|w| w.eq_ignore_ascii_case(word)) {
        return None;
    }
    let word = word.trim_start_matches("./").trim_start_matches('/');
    let glob = word.contains('*');
    let dir = word.ends_with('/');
    let counts = match mode {
        PathMode::Any => glob || word.contains('/'),
        PathMode::GlobsAndDirectories => glob || dir || (directory && word.contains('/')),
    };
    if !counts || word.is_empty() {
        return None;
    }
    Some(if dir {
        format!("{word}**")
    } else {
        word.to_string()
    })
}

/// `raw` without the `removed` ranges, each gap closed with one space, and without the
/// punctuation a removal leaves dangling at either end ("for this repo: we use tabs").
fn rebuild(raw: &str, removed: &[Range<usize>]) -> String {
    let mut out = String::new();
    let mut push = |piece: &str| {
        let piece = piece.trim();
        if !piece.is_empty() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(piece);
        }
    };
    let mut pos = 0;
    for range in removed {
        push(raw.get(pos..range.start).unwrap_or(""));
        pos = range.end;
    }
    push(raw.get(pos..).unwrap_or(""));
    out.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ':'))
        .trim_end_matches(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ':' | '.' | '!'))
        .to_string()
}
