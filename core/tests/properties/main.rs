//! Property tests for the parsers that take text from outside: webhook payloads, diffs,
//! hidden markers, commands in comments, JSON in model replies, and the context budget.
//!
//! Each property runs a fixed number of cases (64, or `PROPTEST_CASES`), so CI time is
//! predictable; set `PROPTEST_CASES=10000` for a deep local run. Inputs mix ASCII with
//! multi-byte text, emoji (with ZWJ sequences), CJK, combining marks and invisible
//! characters, and the huge-input properties build ~1 MB strings, each case under a time
//! bound so a quadratic blow-up fails rather than just slows CI down.

mod budget;
mod commands;
mod common;
mod diff;
mod extract;
mod markers;
mod webhook;
