//! Context recall on real changes nobody here wrote: the diff between two consecutive
//! released versions of popular packages from the registries (crates.io, PyPI, npm;
//! Rust, Python and JavaScript), fetched by `scripts/recall_packages.sh`.
//!
//! For each package, the newer version is indexed as a review's snapshot would be, the
//! change is read as a review's diff, and the review's static context is assembled at the
//! default budget. Recall is the share of the repository's own symbols used on changed
//! lines (names with a definition in the index) whose definition the model then sees:
//! in the assembled context, or in the diff itself. Also printed: the context's tokens.
//!
//! `scripts/recall_packages.sh /tmp/parley-recall && cargo bench -p parley-code --bench recall -- /tmp/parley-recall`

use parley_code::{CodeIndex, Limits, Snapshot};
use parley_core::config::DEFAULT_CONTEXT_MAX_TOKENS;
use parley_core::context::assemble;
use parley_core::ports::code::Codebase;
use parley_core::ports::github::FileStatus;
use parley_core::review::diff::parse_unified;
use parley_core::review::inputs::{InputFile, estimate_tokens};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The recall the static context is meant to reach at the default budget.
const GOAL: f64 = 0.9;

fn main() {
    let dir = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/parley-recall"));
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!(
            "no packages in {}: run scripts/recall_packages.sh first",
            dir.display()
        );
        std::process::exit(2);
    };
    let mut packages: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("new").is_dir())
        .collect();
    packages.sort();
    println!(
        "{:<12} {:>6} {:>8} {:>8} {:>7} {:>8}",
        "package", "files", "symbols", "covered", "recall", "tokens"
    );
    let (mut all_symbols, mut all_covered, mut all_tokens) = (0usize, 0usize, 0usize);
    for package in &packages {
        let Some(m) = measure(package) else { continue };
        println!(
            "{:<12} {:>6} {:>8} {:>8} {:>7.2} {:>8}",
            package.file_name().unwrap_or_default().to_string_lossy(),
            m.files,
            m.symbols,
            m.covered,
            ratio(m.covered, m.symbols),
            m.tokens
        );
        all_symbols += m.symbols;
        all_covered += m.covered;
        all_tokens += m.tokens;
    }
    let recall = ratio(all_covered, all_symbols);
    println!(
        "all: {all_covered}/{all_symbols} symbols, recall {recall:.2} (goal {GOAL}) at a budget of {} tokens, {} tokens per review on average",
        budget(),
        all_tokens / packages.len().max(1)
    );
    if recall < GOAL {
        println!("recall below the goal");
    }
}

/// `PARLEY_RECALL_BUDGET` tokens, else the default budget (`review.context.maxTokens`).
fn budget() -> usize {
    std::env::var("PARLEY_RECALL_BUDGET")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CONTEXT_MAX_TOKENS as usize)
}

struct Measured {
    files: usize,
    symbols: usize,
    covered: usize,
    tokens: usize,
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

fn measure(package: &Path) -> Option<Measured> {
    let snapshot = Snapshot::from_dir(&package.join("new"), Limits::default()).ok()?;
    let index = CodeIndex::build(snapshot);
    let diff = Command::new("diff")
        .args(["-ruN", "old", "new"])
        .current_dir(package)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&diff.stdout);
    let files: Vec<InputFile> = parse_unified(&text)
        .ok()?
        .into_iter()
        .filter_map(|file| {
            let path = file.new_path.as_deref()?;
            let path = path.strip_prefix("new/").unwrap_or(path).to_string();
            // Only what the snapshot kept (sources; not lock files, not vendored code).
            index.line_count(&path)?;
            if file.patch.added_lines().is_empty() {
                return None;
            }
            let raw_patch = file.patch.to_text();
            Some(InputFile {
                tokens: estimate_tokens(&raw_patch),
                path,
                status: if file.is_added() {
                    FileStatus::Added
                } else {
                    FileStatus::Modified
                },
                raw_patch,
                patch: file.patch,
            })
        })
        .collect();
    let context = assemble(&index, &files, &[], budget());
    let used: Vec<(String, u32, u32)> = context.used.iter().filter_map(|u| span_of(u)).collect();
    let mut symbols = BTreeSet::new();
    let mut covered = BTreeSet::new();
    let mut missed = BTreeSet::new();
    for file in &files {
        let shown: Vec<(u32, u32)> = file
            .patch
            .hunks
            .iter()
            .map(|h| (h.new_start, h.new_start + h.new_lines.saturating_sub(1)))
            .collect();
        for line in file.patch.added_lines() {
            let named = index.names_used(&file.path, line, line).into_iter();
            for name in named.chain(index.names_read(&file.path, line, line)) {
                let definitions = index.definitions(&name);
                if definitions.is_empty() {
                    continue;
                }
                symbols.insert(name.clone());
                let seen = definitions.iter().any(|d| {
                    let in_diff = files.iter().any(|f| {
                        f.path == d.path
                            && f.patch.hunks.iter().any(|h| {
                                h.new_start <= d.start && d.start < h.new_start + h.new_lines.max(1)
                            })
                    }) || (d.path == file.path
                        && shown.iter().any(|(s, e)| *s <= d.start && d.start <= *e));
                    let in_context = used
                        .iter()
                        .any(|(p, s, e)| *p == d.path && *s <= d.start && d.start <= *e);
                    in_diff || in_context
                });
                if seen {
                    covered.insert(name);
                } else {
                    missed.insert(name);
                }
            }
        }
    }
    // A name is missed once no line using it had its definition in view.
    missed.retain(|name| !covered.contains(name));
    if !missed.is_empty() {
        eprintln!("{}: not covered: {missed:?}", package.display());
    }
    Some(Measured {
        files: files.len(),
        symbols: symbols.len(),
        covered: covered.len(),
        tokens: estimate_tokens(&context.rendered),
    })
}

/// `src/lib.rs:10-40 (why)` as its path and lines.
fn span_of(used: &str) -> Option<(String, u32, u32)> {
    let head = used.split(" (").next()?;
    let (path, lines) = head.rsplit_once(':')?;
    let (start, end) = lines.split_once('-')?;
    Some((path.to_string(), start.parse().ok()?, end.parse().ok()?))
}
