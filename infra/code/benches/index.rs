//! Snapshot + index time and peak memory for a real code base of about 1,000 and about
//! 10,000 source files, and the time to assemble a review's context after that (cold:
//! the index parses the files a review's questions lead to when they are asked). The
//! files are the Rust sources of the crates in the local cargo registry (code nobody here
//! wrote), read from disk into a snapshot as `parley review --git` does.
//!
//! `cargo bench -p parley-code --bench index`
//!
//! Other languages: `PARLEY_INDEX_SOURCES=DIR PARLEY_INDEX_EXT=.js` reads the code bases
//! `DIR/*/*` (laid out as the registry's `src/<index>/<crate>`) and their files with that
//! extension, e.g. `DIR=/usr/lib/node_modules/npm` (its `node_modules/<package>`) or a
//! Python `lib/python3.X` (its `site-packages/<package>`).
//!
//! `PARLEY_INDEX_REMOVED=1` measures instead what a deletion costs at worst: a change
//! removing the definitions of up to 40 names the sampled files call but the code base
//! defines nowhere (library calls, so every call site is a place that "still uses" one),
//! through the real assembly on a fresh index, cold.

use parley_code::{CodeIndex, Limits, Snapshot};
use parley_core::config::DEFAULT_CONTEXT_MAX_TOKENS;
use parley_core::context::assemble;
use parley_core::ports::code::{Codebase, Span, nearness};
use parley_core::ports::github::FileStatus;
use parley_core::review::diff::parse_unified;
use parley_core::review::inputs::{InputFile, estimate_tokens};
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let extension = std::env::var("PARLEY_INDEX_EXT").unwrap_or_else(|_| ".rs".into());
    let registry = std::env::var_os("PARLEY_INDEX_SOURCES")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("CARGO_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
                .map(|home| home.join("registry/src"))
        })
        .expect("a cargo home");
    let mut roots: Vec<PathBuf> = std::fs::read_dir(&registry)
        .expect("the registry's sources")
        .flatten()
        .flat_map(|index| {
            std::fs::read_dir(index.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|krate| krate.path())
        .collect();
    roots.sort();
    for target in [1_000usize, 10_000] {
        // Whole crates until about `target` source files.
        let started = Instant::now();
        let mut snapshot = Snapshot::default();
        for root in &roots {
            if snapshot.files.keys().filter(|p| !is_manifest(p)).count() >= target {
                break;
            }
            let Ok(krate) = Snapshot::from_dir(root, Limits::default()) else {
                continue;
            };
            let name = root.file_name().map(|n| n.to_string_lossy().into_owned());
            let mut files = krate.files;
            // The registry's `Cargo.toml` is cargo's rewrite, marked generated (and so
            // skipped); the crate's own is beside it.
            if let Ok(manifest) = std::fs::read_to_string(root.join("Cargo.toml.orig")) {
                files.insert("Cargo.toml".into(), manifest);
            }
            for (path, text) in files {
                // The manifests too, which say where a repository's own packages are.
                if path.ends_with(extension.as_str()) || is_manifest(&path) {
                    snapshot
                        .files
                        .insert(format!("{}/{path}", name.clone().unwrap_or_default()), text);
                }
            }
        }
        let read = started.elapsed();
        // The same files as GitHub serves a repository: a gzipped tarball under
        // `owner-repo-sha/`, extracted under the default caps as a review does.
        let archive = tarball(&snapshot);
        drop(snapshot);
        let started = Instant::now();
        let snapshot = Snapshot::from_tarball(&archive, Limits::default())
            .expect("the snapshot is within the default caps");
        let extracted = started.elapsed();
        let archive_mb = archive.len() as f64 / 1e6;
        drop(archive);
        let manifests = snapshot.files.keys().filter(|p| is_manifest(p)).count();
        let (files_count, bytes) = (snapshot.files.len() - manifests, snapshot.bytes());
        if std::env::var_os("PARLEY_INDEX_REMOVED").is_some() {
            removal(snapshot, &extension);
            continue;
        }
        let sample = sample_of(&snapshot);
        let started = Instant::now();
        let index = CodeIndex::build(snapshot);
        let indexed = started.elapsed();
        // A review of 50 changed files, ten added lines each, through the real context
        // assembly: the enclosing definitions, the definitions of the names used
        // (nearest three), the callers of the changed functions. Cold: the files these
        // questions lead to are parsed now.
        let (files, changed): (Vec<InputFile>, Vec<(u32, u32)>) = sample
            .iter()
            .filter_map(|path| review_of(&index, path))
            .unzip();
        let started = Instant::now();
        let context = assemble(&index, &files, &[], DEFAULT_CONTEXT_MAX_TOKENS as usize);
        let cold = started.elapsed();
        let parsed = index.parsed_count();
        let started = Instant::now();
        let again = assemble(&index, &files, &[], DEFAULT_CONTEXT_MAX_TOKENS as usize);
        let warm = started.elapsed();
        assert_eq!(context, again);
        let peak_review = peak_rss_mb();
        // What answering every question would take: every file parsed.
        let started = Instant::now();
        index.parse_all();
        let all = started.elapsed();
        // The lazy answers against parsing everything: for each name used (or read) on
        // the changed lines, the nearest three definitions the context asks for.
        let (mut names, mut missed, mut imported) = (0, 0, 0);
        let (mut called, mut callers_missed, mut callers_imported) = (0, 0, 0);
        for (file, &(first, last)) in files.iter().zip(&changed) {
            // The callers of each name a changed line uses, from the files the word
            // index sends the question to, against every file's.
            // (A name the tags hold with its path, `new Benchmark.Suite()`, is no word.)
            for name in index.names_used(&file.path, first, last) {
                if name.contains('.') {
                    continue;
                }
                called += 1;
                let (lazy, everything) = (index.callers(&name), index.callers_parsed(&name));
                if lazy.len() != everything.len() {
                    callers_missed += 1;
                    let missing: Vec<String> = everything
                        .iter()
                        .filter(|span| !lazy.contains(span))
                        .take(3)
                        .map(|span| format!("{}:{}", span.path, span.start))
                        .collect();
                    eprintln!(
                        "callers differ: `{name}`: lazily {}, parsing everything {} (not found lazily: {missing:?})",
                        lazy.len(),
                        everything.len()
                    );
                }
                // The eight callers a change to the name's nearest definition is shown,
                // against the eight nearest by directory: how often the files that
                // import it from there bring another caller in.
                let Some(defined) = index.definitions_near(&name, &file.path, 1).pop() else {
                    continue;
                };
                let mut by_directory = everything;
                by_directory.sort_by_key(|span| nearness(&span.path, &defined.path));
                by_directory.truncate(8);
                let shown = index.callers_near(&name, &defined.path, 8);
                if shown.iter().any(|span| !by_directory.contains(span)) {
                    callers_imported += 1;
                }
            }
            let named = index.names_used(&file.path, first, last).into_iter();
            for name in named.chain(index.names_read(&file.path, first, last)) {
                // The first line using it: as the context asks, line by line (a Go name
                // used bare there is its own package's).
                let line = (first..=last)
                    .find(|&line| {
                        index.names_used(&file.path, line, line).contains(&name)
                            || index.names_read(&file.path, line, line).contains(&name)
                    })
                    .unwrap_or(first);
                let mut everything = index.definitions_parsed(&name);
                // What the file imports the name from, where it says: how often that
                // chooses another nearest definition than the directories would.
                let nearest = everything
                    .iter()
                    .min_by_key(|span| nearness(&span.path, &file.path))
                    .cloned();
                everything
                    .sort_by_key(|span| index.definition_rank(&name, &file.path, line, &span.path));
                if nearest.as_ref() != everything.first() {
                    imported += 1;
                    let at = |span: Option<&Span>| span.map(|s| format!("{}:{}", s.path, s.start));
                    eprintln!(
                        "imported: `{name}` in {}: {:?}, not {:?}",
                        file.path,
                        at(everything.first()),
                        at(nearest.as_ref())
                    );
                }
                names += 1;
                // What the context shows: no far guess for a name many files define.
                everything
                    .retain(|span| index.definition_meant(&name, &file.path, line, &span.path));
                everything.truncate(3);
                let near = index.definitions_meant(&name, &file.path, line, 3);
                if near != everything {
                    missed += 1;
                    eprintln!(
                        "differs: `{name}` from {}: lazily {near:?}, parsing everything {everything:?}",
                        file.path
                    );
                }
            }
        }
        println!(
            "index: {files_count} {extension} files and {manifests} manifests ({:.1} MB) read in {:.2} s, a {:.1} MB tarball of them extracted in {:.2} s; ready in {:.2} s ({} words); a 50-file review's context {:.0} ms cold ({parsed} files parsed, {} pieces used), {:.1} ms warm; peak RSS {peak_review} MB. Parsing every file: {:.2} s more, peak RSS {} MB; lazy answers that differ from parsing everything: {missed} of {names} names, callers of {callers_missed} of {called}; names whose nearest definition is where the file imports it from, not the directories' nearest: {imported}; callers shown of which an importer brings another in: {callers_imported}",
            bytes as f64 / 1e6,
            read.as_secs_f64(),
            archive_mb,
            extracted.as_secs_f64(),
            indexed.as_secs_f64(),
            index.word_count(),
            cold.as_secs_f64() * 1000.0,
            context.used.len(),
            warm.as_secs_f64() * 1000.0,
            all.as_secs_f64(),
            peak_rss_mb()
        );
    }
}

/// The worst deletion: 40 removed definitions of names that the sampled files use and
/// nothing in the code base defines, looked up on a fresh index (cold).
fn removal(snapshot: Snapshot, extension: &str) {
    let files_count = snapshot.files.len();
    let sample = sample_of(&snapshot);
    let everything = CodeIndex::build(snapshot.clone());
    everything.parse_all();
    let mut names: Vec<String> = Vec::new();
    for path in &sample {
        let lines = everything.line_count(path).unwrap_or(0);
        for name in everything.names_used(path, 1, lines) {
            if names.len() < 40
                && name.len() > 1
                && !names.contains(&name)
                && everything.definitions_parsed(&name).is_empty()
            {
                names.push(name);
            }
        }
    }
    drop(everything);
    let removed: String = names.iter().map(|n| format!("-fn {n}() {{}}\n")).collect();
    let diff = format!(
        "diff --git a/gone.rs b/gone.rs\n--- a/gone.rs\n+++ /dev/null\n@@ -1,{} +0,0 @@\n{removed}",
        names.len()
    );
    let patch = parse_unified(&diff)
        .expect("a deletion")
        .into_iter()
        .next()
        .expect("one file")
        .patch;
    let index = CodeIndex::build(snapshot);
    let started = Instant::now();
    let context = assemble(
        &index,
        &[],
        &[("gone.rs", &patch)],
        DEFAULT_CONTEXT_MAX_TOKENS as usize,
    );
    let cold = started.elapsed();
    println!(
        "removal: {files_count} {extension} files; a deletion of {} names defined nowhere (the assembly looks up the first ones only), its context cold in {:.0} ms ({} files parsed, {} pieces still using them shown, {} left out for the budget)",
        names.len(),
        cold.as_secs_f64() * 1000.0,
        index.parsed_count(),
        context.still_used,
        context.left_out
    );
}

/// Fifty of `snapshot`'s files, spread over it: the files a sampled review changes.
fn sample_of(snapshot: &Snapshot) -> Vec<String> {
    let sources: Vec<&String> = snapshot.files.keys().filter(|p| !is_manifest(p)).collect();
    sources
        .iter()
        .step_by(sources.len().max(50) / 50)
        .take(50)
        .map(|path| path.to_string())
        .collect()
}

fn is_manifest(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    parley_code::index::MANIFESTS.contains(&name)
}

/// `snapshot`'s files as a gzipped tarball with GitHub's layout.
fn tarball(snapshot: &Snapshot) -> Vec<u8> {
    let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut builder = tar::Builder::new(gzip);
    for (path, text) in &snapshot.files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(
                &mut header,
                format!("octo-repo-abc/{path}"),
                text.as_bytes(),
            )
            .expect("append");
    }
    builder.into_inner().expect("tar").finish().expect("gzip")
}

/// A change adding lines 10 to 19 of `path` (or as many as it has), as a review's input.
fn review_of(index: &CodeIndex, path: &str) -> Option<(InputFile, (u32, u32))> {
    let lines = index.line_count(path)?;
    let first = 10u32.max(after_header(index, path, lines)?);
    if lines < first + 2 {
        return None;
    }
    let last = lines.min(first + 9);
    let text = index.text(&Span {
        path: path.to_string(),
        start: first,
        end: last,
        name: None,
    })?;
    let added: String = text.lines().map(|l| format!("+{l}\n")).collect();
    let count = last - first + 1;
    let before = first - 1;
    let diff = format!(
        "diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -{before},0 +{first},{count} @@\n{added}"
    );
    let file = parse_unified(&diff).ok()?.into_iter().next()?;
    let raw_patch = file.patch.to_text();
    let input = InputFile {
        tokens: estimate_tokens(&raw_patch),
        path: path.to_string(),
        status: FileStatus::Modified,
        raw_patch,
        patch: file.patch,
    };
    Some((input, (first, last)))
}

/// With `PARLEY_INDEX_AFTER_HEADER` set, the first line after a file's leading comment,
/// package, imports and annotations (the JDK's sources open with 25 lines of licence,
/// so lines 10 to 19 name nothing); otherwise 1, so that the other corpora's samples
/// stay the ones measured.
fn after_header(index: &CodeIndex, path: &str, lines: u32) -> Option<u32> {
    if std::env::var_os("PARLEY_INDEX_AFTER_HEADER").is_none() {
        return Some(1);
    }
    let text = index.text(&Span {
        path: path.to_string(),
        start: 1,
        end: lines,
        name: None,
    })?;
    let header = text
        .lines()
        .take_while(|line| {
            let line = line.trim_start();
            line.is_empty()
                || ["/*", "*", "//", "#", "package ", "import ", "@"]
                    .iter()
                    .any(|c| line.starts_with(c))
        })
        .count();
    Some(header as u32 + 1)
}

/// The process's peak resident set (Linux `VmHWM`), in MB.
fn peak_rss_mb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| {
                    l.split_whitespace()
                        .nth(1)
                        .and_then(|kb| kb.parse::<u64>().ok())
                })
        })
        .map_or(0, |kb| kb / 1024)
}
