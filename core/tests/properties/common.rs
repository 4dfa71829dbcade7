//! Strategies and helpers shared by the properties.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use std::time::{Duration, Instant};

/// Cases per property: 64 unless `PROPTEST_CASES` says otherwise.
pub fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

pub fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        // Failures print their minimal input; a known one becomes a named test instead of
        // a regression file nobody reads.
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..ProptestConfig::default()
    }
}

/// For properties whose every case builds a ~1 MB input: an eighth of the cases, at
/// least four.
pub fn huge_config() -> ProptestConfig {
    ProptestConfig {
        cases: (cases() / 8).max(4),
        ..config()
    }
}

/// Generous per-case bound for debug builds: catches quadratic work on huge inputs, not
/// slowness.
pub const TIME_BOUND: Duration = Duration::from_secs(2);

/// Run `f`, failing the case if it took longer than [`TIME_BOUND`].
pub fn timed<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, TestCaseError> {
    let start = Instant::now();
    let out = f();
    let took = start.elapsed();
    prop_assert!(took <= TIME_BOUND, "{what} took {took:?}");
    Ok(out)
}

/// One-megabyte target for huge inputs.
pub const MEGABYTE: usize = 1 << 20;

/// Repeat `unit` until the result is at least `bytes` long.
pub fn grow(unit: &str, bytes: usize) -> String {
    let unit = if unit.is_empty() { "x" } else { unit };
    unit.repeat(bytes.div_ceil(unit.len()))
}

/// Text fragments that are hard for text handling: multi-byte, emoji with modifiers and
/// ZWJ, CJK, combining marks, right-to-left, invisible and control characters.
const TRICKY: &[&str] = &[
    "é",
    "e\u{301}",
    "ß",
    "Ω",
    "😀",
    "👩\u{200D}👩\u{200D}👧",
    "👍🏽",
    "🇫🇷",
    "中文",
    "日本語",
    "한국어",
    "\u{0915}\u{094D}\u{0937}",
    "عربى",
    "\u{202E}",
    "\u{200B}",
    "\u{FEFF}",
    "\u{E0041}",
    "\t",
    "\r\n",
    "\n",
    "\0",
    " ",
    "\u{10FFFF}",
];

/// Unicode text: tricky fragments, any chars, and plain words, interleaved.
pub fn text() -> impl Strategy<Value = String> {
    text_with(&[])
}

/// Like [`text`], with extra domain tokens (markers, mentions, fences) mixed in.
pub fn text_with(tokens: &'static [&'static str]) -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        3 => prop::sample::select(TRICKY).prop_map(str::to_string),
        2 => any::<char>().prop_map(String::from),
        3 => "[a-zA-Z0-9 .,!?]{0,8}",
        3 => if tokens.is_empty() {
            Just(String::new()).boxed()
        } else {
            prop::sample::select(tokens).prop_map(str::to_string).boxed()
        },
    ];
    prop::collection::vec(fragment, 0..48).prop_map(|parts| parts.concat())
}

/// [`text`] without the characters in `banned`.
pub fn text_without(banned: &'static [char]) -> impl Strategy<Value = String> {
    text().prop_map(move |t| t.chars().filter(|c| !banned.contains(c)).collect())
}
