//! What carrying the parse tables packed costs: each grammar's packed and unpacked bytes,
//! and the time its first use takes to unpack them (once per process; a grammar is
//! unpacked only when a file in its language is first parsed).
//!
//! `cargo bench -p parley-grammars --bench load`

use parley_grammars::{Grammar, table_bytes};
use std::time::Instant;

fn main() {
    let (mut packed_total, mut unpacked_total, mut millis_total) = (0, 0, 0.0);
    println!(
        "{:<12} {:>12} {:>14} {:>12}",
        "grammar", "packed", "unpacked", "first use"
    );
    for grammar in Grammar::ALL {
        let (packed, unpacked) = table_bytes(grammar);
        let started = Instant::now();
        if let Err(err) = grammar.language() {
            eprintln!("{err}");
            std::process::exit(1);
        }
        let millis = started.elapsed().as_secs_f64() * 1e3;
        println!(
            "{:<12} {:>10} B {:>12} B {:>9.2} ms",
            grammar.name(),
            packed,
            unpacked,
            millis
        );
        packed_total += packed;
        unpacked_total += unpacked;
        millis_total += millis;
    }
    println!(
        "{:<12} {:>10} B {:>12} B {:>9.2} ms",
        "all", packed_total, unpacked_total, millis_total
    );
}
