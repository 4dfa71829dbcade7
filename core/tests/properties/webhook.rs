//! The webhook normaliser: whatever GitHub (or anyone holding the secret) sends, the
//! answer is a job, an ignore or a clear error, never a panic; and the fast path that
//! reads the raw body always agrees with the reference path over a parsed `Value`.

use crate::common::{MEGABYTE, config, grow, huge_config, text, timed};
use parley_core::Job;
use parley_core::mention::Handles;
use parley_core::webhook::normalise::{NormaliseContext, Normalised, normalise, normalise_body};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::OnceLock;

/// `(event, payload)` for every example in the shared corpus.
fn corpus() -> &'static [(String, Vec<u8>)] {
    static CORPUS: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpora/webhooks");
        let mut examples = Vec::new();
        for event in std::fs::read_dir(&root).expect("webhook corpus beside the repository") {
            let event = event.expect("corpus entry").path();
            let name = event.file_name().map(|n| n.to_string_lossy().to_string());
            let Some(name) = name.filter(|n| event.is_dir() && n != "schema") else {
                continue;
            };
            for file in std::fs::read_dir(&event).expect("event folder") {
                let file = file.expect("corpus file").path();
                if file.extension().is_some_and(|x| x == "json") {
                    examples.push((name.clone(), std::fs::read(&file).expect("payload")));
                }
            }
        }
        examples.sort();
        assert!(
            examples.len() >= 70,
            "corpus has {} payloads",
            examples.len()
        );
        examples
    })
}

/// Every event Parley handles, and some it does not.
fn events() -> Vec<&'static str> {
    let mut events = vec!["ping", "push", "check_run"];
    events.extend(parley_core::webhook::normalise::HANDLED_EVENTS);
    events
}

/// Keys Parley reads, so generated objects often land on a field that matters.
const KEYS: &[&str] = &[
    "action",
    "sender",
    "installation",
    "login",
    "type",
    "id",
    "number",
    "draft",
    "merged",
    "title",
    "body",
    "user",
    "head",
    "base",
    "sha",
    "ref",
    "before",
    "repository",
    "name",
    "full_name",
    "owner",
    "pull_request",
    "issue",
    "comment",
    "review",
    "thread",
    "comments",
    "in_reply_to_id",
    "path",
    "line",
    "html_url",
    "created_at",
    "repositories_added",
];

fn contexts() -> impl Strategy<Value = NormaliseContext> {
    prop_oneof![
        Just(NormaliseContext::default()),
        Just(NormaliseContext {
            handles: Some(Handles::new("parley", &["claude".to_string()])),
        }),
        Just(NormaliseContext {
            handles: Some(Handles::new("octocat", &[])),
        }),
    ]
}

fn event_name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(events()).prop_map(str::to_string),
        1 => text(),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop::sample::select(
            &[
                "opened",
                "created",
                "submitted",
                "resolved",
                "closed",
                "synchronize",
                "@parley review",
                "parley[bot]",
                "Bot"
            ][..]
        )
        .prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        3 => prop::sample::select(KEYS).prop_map(str::to_string),
                        1 => text(),
                    ],
                    inner,
                ),
                0..6
            )
            .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// Replace (`Some`) or remove (`None`) the value at the path the indices pick, walking
/// objects and arrays by index modulo their size; a path that ends early replaces there.
fn mutate(value: &mut Value, path: &[usize], new: Option<Value>) {
    let Some((&index, rest)) = path.split_first() else {
        if let Some(new) = new {
            *value = new;
        }
        return;
    };
    match value {
        Value::Object(map) if !map.is_empty() => {
            let key = map.keys().nth(index % map.len()).cloned().expect("key");
            match (rest.is_empty(), new) {
                (true, None) => {
                    map.remove(&key);
                }
                (_, new) => mutate(map.get_mut(&key).expect("value"), rest, new),
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let at = index % items.len();
            match (rest.is_empty(), new) {
                (true, None) => {
                    items.remove(at);
                }
                (_, new) => mutate(&mut items[at], rest, new),
            }
        }
        other => {
            if let Some(new) = new {
                *other = new;
            }
        }
    }
}

/// Shared checks on any outcome: a ping is a ping, errors say why, jobs carry the delivery.
fn check_outcome(event: &str, outcome: &Normalised) -> Result<(), TestCaseError> {
    match outcome {
        Normalised::Ping => prop_assert_eq!(event, "ping"),
        Normalised::Malformed(reason) => prop_assert!(
            reason.starts_with("invalid JSON: ")
                || reason.starts_with("payload does not match the event: "),
            "unclear reason: {reason}"
        ),
        Normalised::Ignored(reason) => prop_assert!(!reason.is_empty()),
        Normalised::Job(job) => prop_assert_eq!(job.delivery_id(), "d"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Corpus payloads with values replaced or removed anywhere: the body path and the
    /// `Value` path give the same answer, and a JSON body is never "invalid JSON".
    #[test]
    fn mutated_payloads_agree_with_the_value_path(
        example in 0..corpus().len(),
        other_event in prop::option::weighted(0.2, event_name()),
        mutations in prop::collection::vec(
            (prop::collection::vec(any::<usize>(), 0..6), prop::option::weighted(0.8, json_value())),
            0..4,
        ),
        pretty in any::<bool>(),
        ctx in contexts(),
    ) {
        let (corpus_event, bytes) = &corpus()[example];
        let event = other_event.unwrap_or_else(|| corpus_event.clone());
        let mut value: Value = serde_json::from_slice(bytes).expect("corpus JSON");
        for (path, new) in mutations {
            mutate(&mut value, &path, new);
        }
        let body = if pretty {
            serde_json::to_vec_pretty(&value)
        } else {
            serde_json::to_vec(&value)
        }
        .expect("encode");
        let fast = timed("normalise_body", || normalise_body(&event, "d", &body, &ctx))?;
        // Against the body parsed again, not `value`: serde_json's float parsing does not
        // round-trip every float it prints, and the webhook only ever sees the text.
        let reparsed: Value = serde_json::from_slice(&body).expect("JSON");
        prop_assert_eq!(&fast, &normalise(&event, "d", &reparsed, &ctx));
        check_outcome(&event, &fast)?;
        if let Normalised::Malformed(reason) = &fast {
            prop_assert!(!reason.starts_with("invalid JSON"), "{reason}");
        }
    }

    /// Corpus payloads cut, spliced and bit-flipped as bytes: never a panic; where the
    /// bytes are still JSON the two paths agree; where they are not, the answer is the
    /// parser's reason, except for the leniency `normalise_body` documents (values it
    /// skips are not range-checked, surrogate-paired or depth-capped).
    #[test]
    fn byte_mutations_are_answered_clearly(
        example in 0..corpus().len(),
        edits in prop::collection::vec(
            (any::<prop::sample::Index>(), 0u8..4, prop::collection::vec(any::<u8>(), 0..8)),
            1..4,
        ),
        ctx in contexts(),
    ) {
        let (event, bytes) = &corpus()[example];
        let mut body = bytes.clone();
        for (at, op, bytes) in edits {
            let at = at.index(body.len() + 1);
            match op {
                0 => body.truncate(at),
                1 => {
                    body.splice(at..at, bytes);
                }
                2 => {
                    let end = (at + bytes.len()).min(body.len());
                    body.drain(at..end);
                }
                _ => {
                    if let (Some(b), Some(x)) = (body.get_mut(at), bytes.first()) {
                        *b ^= x | 1;
                    }
                }
            }
        }
        let fast = timed("normalise_body", || normalise_body(event, "d", &body, &ctx))?;
        check_outcome(event, &fast)?;
        match serde_json::from_slice::<Value>(&body) {
            Ok(value) => prop_assert_eq!(&fast, &normalise(event, "d", &value, &ctx)),
            Err(err) => {
                let reason = format!("invalid JSON: {err}");
                let lenient = ["number out of range", "surrogate", "recursion limit"]
                    .iter()
                    .any(|known| reason.contains(known));
                prop_assert!(
                    fast == Normalised::Malformed(reason.clone()) || lenient,
                    "{fast:?} for a body the parser rejects with {reason}"
                );
            }
        }
    }

    /// Generated JSON (objects of the keys Parley reads, nested anyhow) and generated
    /// text under any event name.
    #[test]
    fn generated_bodies_are_answered_clearly(
        event in event_name(),
        value in json_value(),
        raw in text(),
        ctx in contexts(),
    ) {
        let body = serde_json::to_vec(&value).expect("encode");
        let fast = normalise_body(&event, "d", &body, &ctx);
        // Against the body parsed again, not `value`: serde_json's float parsing does not
        // round-trip every float it prints, and the webhook only ever sees the text.
        let reparsed: Value = serde_json::from_slice(&body).expect("JSON");
        prop_assert_eq!(&fast, &normalise(&event, "d", &reparsed, &ctx));
        check_outcome(&event, &fast)?;
        let outcome = normalise_body(&event, "d", raw.as_bytes(), &ctx);
        check_outcome(&event, &outcome)?;
    }
}

proptest! {
    #![proptest_config(huge_config())]

    /// A megabyte of multi-byte text in a comment body and in a field nobody reads: read
    /// in bounded time, the body kept whole, the issue description cut to its cap.
    #[test]
    fn huge_comments_are_read_in_bounded_time(unit in text(), mention in any::<bool>()) {
        let huge = grow(&unit, MEGABYTE);
        let body = if mention { format!("@parley {huge}") } else { huge.clone() };
        let (_, bytes) = corpus()
            .iter()
            .find(|(event, bytes)| event == "issue_comment" && bytes.windows(9).any(|w| w == b"\"created\""))
            .expect("an issue_comment.created example");
        let mut value: Value = serde_json::from_slice(bytes).expect("corpus JSON");
        value["comment"]["body"] = json!(body);
        value["issue"]["body"] = json!(huge);
        value["unread"] = json!({ "text": huge, "list": [huge] });
        let encoded = serde_json::to_vec(&value).expect("encode");
        let ctx = NormaliseContext { handles: Some(Handles::new("parley", &[])) };
        let outcome = timed("normalise_body", || normalise_body("issue_comment", "d", &encoded, &ctx))?;
        match outcome {
            Normalised::Job(job) => {
                prop_assert!(mention);
                let Job::Conversation(job) = *job else {
                    return Err(TestCaseError::fail("not a conversation"));
                };
                prop_assert_eq!(&job.comment.body, &body);
                let topic = job.topic.expect("topic");
                prop_assert!(topic.body.chars().count() <= 4000 + "… [truncated]".chars().count());
            }
            Normalised::Ignored(_) => prop_assert!(!mention || body.trim().is_empty()),
            other => return Err(TestCaseError::fail(format!("{other:?}"))),
        }
    }
}
