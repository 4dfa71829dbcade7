//! Snapshot + index time and peak memory for a real code base of about 1,000 and about
//! 10,000 source files, and the time to assemble a review's context after that. The
//! files are the Rust sources of the crates in the local cargo registry (code nobody here
//! wrote), read from disk into a snapshot as `parley review --git` does.
//!
//! `cargo bench -p parley-code --bench index`

use parley_code::{CodeIndex, Limits, Snapshot};
use parley_core::ports::code::Codebase;
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let registry = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .map(|home| home.join("registry/src"))
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
            if snapshot.files.len() >= target {
                break;
            }
            let Ok(krate) = Snapshot::from_dir(root, Limits::default()) else {
                continue;
            };
            let name = root.file_name().map(|n| n.to_string_lossy().into_owned());
            for (path, text) in krate.files {
                if path.ends_with(".rs") {
                    snapshot
                        .files
                        .insert(format!("{}/{path}", name.clone().unwrap_or_default()), text);
                }
            }
        }
        let read = started.elapsed();
        let (files, bytes) = (snapshot.files.len(), snapshot.bytes());
        let sample: Vec<String> = snapshot
            .files
            .keys()
            .step_by(files.max(50) / 50)
            .take(50)
            .cloned()
            .collect();
        let started = Instant::now();
        let index = CodeIndex::build(snapshot);
        let indexed = started.elapsed();
        // A review's questions for 50 changed files, ten changed lines each: the
        // enclosing definitions, the definitions of the names used, their callers.
        let started = Instant::now();
        let mut pieces = 0;
        for path in &sample {
            for line in 10..20 {
                if let Some(span) = index.enclosing(path, line) {
                    pieces += 1;
                    if let Some(name) = &span.name {
                        pieces += index.callers(name).len();
                    }
                }
                for name in index.names_used(path, line, line) {
                    pieces += index.definitions(&name).len();
                }
            }
        }
        let asked = started.elapsed();
        println!(
            "index: {files} Rust files ({:.1} MB) read in {:.2} s, indexed in {:.2} s ({} definitions, {} references); context for 50 files x 10 changed lines {:.1} ms ({pieces} pieces found); peak RSS {} MB",
            bytes as f64 / 1e6,
            read.as_secs_f64(),
            indexed.as_secs_f64(),
            index.definition_count(),
            index.reference_count(),
            asked.as_secs_f64() * 1000.0,
            peak_rss_mb()
        );
    }
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
