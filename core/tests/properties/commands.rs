//! Commands in comments: a mention followed by a command on its line is that command,
//! whatever surrounds it (outside code, which the parser ignores); anything else is not a
//! command; no text makes the parser panic, and a comment full of mentions is parsed in
//! bounded time.

use crate::common::{config, text_with, text_without, timed};
use parley_core::commands::{Command, ParseContext, parse};
use parley_core::mention::Handles;
use proptest::prelude::*;

const COMMAND_TOKENS: &[&str] = &[
    "@parley",
    "@Parley[bot]",
    "@parley-dev",
    "@claude",
    "@",
    "review",
    "full review",
    "dismiss",
    "resolve finding",
    "f_0a1b2c3d4e5f",
    "`f_abcdef`",
    "\n",
    ".",
    "!",
];

/// Random ASCII case, so `@PaRlEy FULL review` is exercised too.
fn recase(text: &str, flips: &[bool]) -> String {
    text.chars()
        .zip(flips.iter().cycle())
        .map(|(c, up)| if *up { c.to_ascii_uppercase() } else { c })
        .collect()
}

fn command() -> impl Strategy<Value = (String, Command)> {
    prop_oneof![
        Just(("review".to_string(), Command::Review)),
        Just(("full review".to_string(), Command::FullReview)),
        (
            prop::sample::select(&["dismiss", "resolve", "dismiss finding"][..]),
            "[0-9a-f]{6,32}",
            prop::sample::select(&["", "`", "\""][..]),
        )
            .prop_map(|(verb, hex, quote)| (
                format!("{verb} {quote}f_{hex}{quote}"),
                Command::DismissFinding {
                    finding: format!("f_{hex}"),
                },
            )),
    ]
}

fn handles() -> impl Strategy<Value = (String, Handles)> {
    prop_oneof![
        Just("parley".to_string()),
        Just("claude".to_string()),
        Just("pärley-bot".to_string()),
        Just("议员".to_string()),
    ]
    .prop_map(|name| {
        let handles = Handles::new("parley", std::slice::from_ref(&name));
        (name, handles)
    })
}

fn parse_command(body: &str, handles: &Handles) -> Option<Command> {
    parse(body, handles, ParseContext::default())
}

proptest! {
    #![proptest_config(config())]

    /// `@name <command>` on its own line, with any text (no other mention) around it.
    #[test]
    fn a_command_on_its_line_is_recognised(
        // No backticks or tildes: code (inline or fenced) hides mentions on purpose.
        before in text_without(&['@', '`', '~']),
        after in text_without(&['@', '`', '~']),
        (name, handles) in handles(),
        (words, expected) in command(),
        flips in prop::collection::vec(any::<bool>(), 1..8),
        bot_suffix in any::<bool>(),
        end in prop::sample::select(&["", ".", "!", "  ", " \t"][..]),
    ) {
        // `[bot]` as GitHub spells it; the handle and the words in any case.
        let suffix = if bot_suffix { "[bot]" } else { "" };
        let line = format!("@{}{suffix} {}", recase(&name, &flips), recase(&words, &flips));
        let body = format!("{before}\n{line}{end}\n{after}");
        let expected = match expected {
            Command::DismissFinding { finding } => Command::DismissFinding { finding: finding.to_ascii_lowercase() },
            other => other,
        };
        prop_assert_eq!(parse_command(&body, &handles), Some(expected), "{:?}", body);
    }

    /// A command followed by more words on its line is a question, not a command.
    #[test]
    fn more_words_make_a_question(
        (name, handles) in handles(),
        (words, _) in command(),
        extra in "[a-z]{1,8}( [a-z]{1,8}){0,3}",
    ) {
        let body = format!("@{name} {words} {extra}");
        prop_assert_eq!(parse_command(&body, &handles), None, "{:?}", body);
    }

    /// Without an `@` there is no command; with any text there is no panic.
    #[test]
    fn any_text_is_safe(body in text_with(COMMAND_TOKENS), (_, handles) in handles()) {
        let without_at: String = body.chars().filter(|c| *c != '@').collect();
        prop_assert_eq!(parse_command(&without_at, &handles), None);
        let _ = timed("parse_command", || parse_command(&body, &handles))?;
    }
}

/// One comment of GitHub's maximum size (65 536 characters) full of mentions on a single
/// line: only the last mention on a line is read, so this stays linear (the parser this
/// replaced re-read the rest of the line for every mention, quadratic here).
#[test]
fn a_comment_full_of_mentions_is_parsed_in_bounded_time() {
    let handles = Handles::new("parley", &[]);
    let body = "@parley ".repeat(65_536 / 8);
    let start = std::time::Instant::now();
    assert_eq!(parse_command(&body, &handles), None);
    let took = start.elapsed();
    assert!(took <= crate::common::TIME_BOUND, "took {took:?}");
}
