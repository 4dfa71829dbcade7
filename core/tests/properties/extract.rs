//! Finding JSON in a model's reply: every candidate is one JSON value taken from the
//! reply, the answer is found whatever prose or fences surround it, and no reply, however
//! long or bracket-ridden, costs more than linear work.

use crate::common::{MEGABYTE, config, grow, huge_config, text_with, timed};
use parley_core::llm::json_candidates;
use proptest::prelude::*;
use serde::de::IgnoredAny;
use serde_json::Value;

const JSON_TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    "\\",
    ":",
    ",",
    "1",
    "null",
    "true",
    "{\"a\": 1}",
    "[1, 2]",
    "```json\n",
    "```\n",
    "\n```",
    "~~~\n",
    "\n~~~",
    "```JSON ",
    "\n",
];

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        text_with(JSON_TOKENS).prop_map(Value::from),
    ];
    let nested = leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(text_with(JSON_TOKENS), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    // What a caller wants is an object or an array.
    prop_oneof![
        prop::collection::btree_map(text_with(JSON_TOKENS), nested.clone(), 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        prop::collection::vec(nested, 0..4).prop_map(Value::Array),
    ]
}

/// Prose that holds no JSON of its own: no brackets, and no fences.
fn prose() -> impl Strategy<Value = String> {
    crate::common::text_without(&['{', '}', '[', ']', '`', '~'])
}

fn encode(value: &Value, pretty: bool) -> String {
    if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    }
    .expect("encode")
}

/// Offsets of `part` within `whole`, which it must be a slice of.
fn span(whole: &str, part: &str) -> Option<(usize, usize)> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (start + part.len() <= whole.len()).then_some((start, start + part.len()))
}

proptest! {
    #![proptest_config(config())]

    /// Any reply: each candidate is a distinct slice of the reply holding exactly one
    /// JSON value, an object or array unless it is the whole reply.
    #[test]
    fn candidates_are_json_slices_of_the_reply(reply in text_with(JSON_TOKENS)) {
        let candidates = timed("json_candidates", || json_candidates(&reply))?;
        let mut spans = Vec::new();
        for c in &candidates {
            let s = span(&reply, c).ok_or_else(|| TestCaseError::fail("not a slice of the reply"))?;
            prop_assert!(!spans.contains(&s), "listed twice: {c:?}");
            spans.push(s);
            prop_assert!(serde_json::from_str::<IgnoredAny>(c).is_ok(), "not JSON: {c:?}");
            prop_assert!(c.starts_with(['{', '[']) || *c == reply.trim(), "{c:?}");
        }
    }

    /// An answer with prose around it (no other brackets) is the one candidate.
    #[test]
    fn an_answer_in_prose_is_found(
        before in prose(),
        after in prose(),
        value in json_value(),
        pretty in any::<bool>(),
    ) {
        let answer = encode(&value, pretty);
        let reply = format!("{before}{answer}{after}");
        let candidates = json_candidates(&reply);
        prop_assert_eq!(candidates, vec![answer.as_str()]);
    }

    /// An answer in a `json` fence comes first, whatever loose JSON and other text the
    /// rest of the reply holds.
    #[test]
    fn a_fenced_answer_comes_first(
        before in text_with(JSON_TOKENS).prop_map(|t| t.replace(['`', '~'], "")),
        after in text_with(JSON_TOKENS).prop_map(|t| t.replace(['`', '~'], "")),
        value in json_value(),
        pretty in any::<bool>(),
        tag in prop::sample::select(&["json", "JSON", "jsonc", "json5 "][..]),
    ) {
        let answer = encode(&value, pretty);
        let reply = format!("{before}\n```{tag}\n{answer}\n```\n{after}");
        let candidates = json_candidates(&reply);
        prop_assert_eq!(candidates.first().copied(), Some(answer.as_str()), "{:?}", reply);
    }
}

proptest! {
    #![proptest_config(huge_config())]

    /// A megabyte of reply: many small fenced or loose values, unterminated strings,
    /// open brackets, or text around one answer.
    #[test]
    fn huge_replies_take_bounded_time(
        unit in text_with(JSON_TOKENS),
        shape in 0u8..5,
        value in json_value(),
    ) {
        let reply = match shape {
            0 => grow("```json\n{}\n```\n", MEGABYTE),
            1 => grow("{\"a\": [1]} ", MEGABYTE),
            2 => format!("{}{}", "[".repeat(100), grow("1,", MEGABYTE)),
            3 => format!("{{\"s\": \"{}", grow(&unit.replace(['"', '\\'], ""), MEGABYTE)),
            _ => format!("{}{}", grow(&unit, MEGABYTE), encode(&value, false)),
        };
        let candidates = timed("json_candidates", || json_candidates(&reply))?;
        // At most the whole reply, one per fence and the bounded loose scan.
        let fences = reply.matches("```").count() + reply.matches("~~~").count();
        prop_assert!(candidates.len() <= 1 + fences + 256);
    }
}
