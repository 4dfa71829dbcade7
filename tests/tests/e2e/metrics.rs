//! CloudWatch Embedded Metric Format, end to end: a review job through the worker's
//! `process_one` on the fake GitHub and fake LLM, a message that is not a job, then the
//! EMF recorder the Lambda workers install, flushed into a buffer. Every line must be a
//! valid EMF document: JSON, `_aws.Timestamp` in milliseconds, namespace `Parley`, every
//! dimension and metric its directives name present as a member, units CloudWatch knows.

use parley_core::job::ReviewTrigger;
use parley_core::metrics as m;
use parley_core::worker::{BatchItem, process_one};
use parley_tests::review_harness::{self as rh, Backend, HEAD, ReviewHarness};
use serde_json::Value;
use std::collections::HashMap;

/// CloudWatch's metric units (EMF rejects any other).
const UNITS: &[&str] = &[
    "Seconds",
    "Microseconds",
    "Milliseconds",
    "Bytes",
    "Kilobytes",
    "Megabytes",
    "Gigabytes",
    "Terabytes",
    "Bits",
    "Kilobits",
    "Megabits",
    "Gigabits",
    "Terabits",
    "Percent",
    "Count",
    "Bytes/Second",
    "Kilobytes/Second",
    "Megabytes/Second",
    "Gigabytes/Second",
    "Terabytes/Second",
    "Bits/Second",
    "Kilobits/Second",
    "Megabits/Second",
    "Gigabits/Second",
    "Terabits/Second",
    "Count/Second",
    "None",
];

/// One metric as a document reported it.
#[derive(Debug, Clone)]
struct Seen {
    unit: Option<String>,
    dimensions: HashMap<String, String>,
    value: Value,
}

/// Check one EMF document and return its metrics.
fn check_document(line: &str, now_ms: u64) -> Vec<(String, Seen)> {
    let doc: Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    let aws = &doc["_aws"];
    let timestamp = aws["Timestamp"]
        .as_u64()
        .unwrap_or_else(|| panic!("no Timestamp: {line}"));
    assert!(
        timestamp.abs_diff(now_ms) < 600_000,
        "Timestamp {timestamp} is not epoch milliseconds near {now_ms}"
    );
    let directives = aws["CloudWatchMetrics"]
        .as_array()
        .expect("CloudWatchMetrics");
    assert!(!directives.is_empty(), "{line}");
    let mut seen = Vec::new();
    for directive in directives {
        assert_eq!(directive["Namespace"], m::NAMESPACE, "{line}");
        let mut dimensions = HashMap::new();
        for set in directive["Dimensions"].as_array().expect("Dimensions") {
            let set = set.as_array().expect("a dimension set is an array");
            assert!(set.len() <= 30, "{line}");
            for name in set {
                let name = name.as_str().expect("dimension name");
                let value = doc[name]
                    .as_str()
                    .unwrap_or_else(|| panic!("dimension {name} is not a string member: {line}"));
                dimensions.insert(name.to_string(), value.to_string());
            }
        }
        for metric in directive["Metrics"].as_array().expect("Metrics") {
            let name = metric["Name"].as_str().expect("metric name");
            let unit = metric
                .get("Unit")
                .and_then(Value::as_str)
                .map(str::to_string);
            if let Some(unit) = &unit {
                assert!(UNITS.contains(&unit.as_str()), "unit {unit} of {name}");
            }
            let value = doc[name].clone();
            let numeric = value.is_number()
                || value
                    .as_array()
                    .is_some_and(|v| !v.is_empty() && v.iter().all(Value::is_number));
            assert!(numeric, "metric {name} has no numeric member: {line}");
            seen.push((
                name.to_string(),
                Seen {
                    unit,
                    dimensions: dimensions.clone(),
                    value,
                },
            ));
        }
    }
    seen
}

fn total(value: &Value) -> f64 {
    match value {
        Value::Array(values) => values.iter().filter_map(Value::as_f64).sum(),
        other => other.as_f64().unwrap_or(0.0),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_job_is_reported_in_valid_emf() {
    assert!(
        parley_runtime::metrics::init().is_some(),
        "recorder installed"
    );
    let h = ReviewHarness::start(Backend::Sqlite).await;
    h.llm.answer(
        rh::SECURITY,
        &rh::reply(&[rh::finding("src/db.rs", 3, "high", 95, "SQL injection")]),
    );
    let body = serde_json::to_string(&rh::job(ReviewTrigger::Opened, HEAD, "d-emf")).expect("job");
    let item = BatchItem {
        message_id: "m-1",
        group_id: None,
        body: &body,
        attempt: None,
    };
    process_one(&item, &h.handler).await.expect("review");
    let broken = BatchItem {
        message_id: "m-2",
        group_id: None,
        body: "{not a job",
        attempt: None,
    };
    assert!(process_one(&broken, &h.handler).await.is_err());

    let mut out = Vec::new();
    parley_runtime::metrics::flush_to(&mut out).expect("flush");
    let text = String::from_utf8(out).expect("utf-8");
    let now_ms = time::OffsetDateTime::now_utc().unix_timestamp() as u64 * 1000;
    let mut metrics: HashMap<String, Vec<Seen>> = HashMap::new();
    for line in text.lines() {
        for (name, seen) in check_document(line, now_ms) {
            metrics.entry(name).or_default().push(seen);
        }
    }
    let one = |name: &str, kind: Option<&str>| -> Seen {
        let all = metrics
            .get(name)
            .unwrap_or_else(|| panic!("{name} missing from:\n{text}"));
        all.iter()
            .find(|s| s.dimensions.get(m::KIND).map(String::as_str) == kind)
            .cloned()
            .unwrap_or_else(|| panic!("{name} with Kind {kind:?} missing: {all:?}"))
    };

    let handled = one(m::JOBS_HANDLED, Some("review"));
    assert_eq!(handled.unit.as_deref(), Some("Count"));
    assert_eq!(total(&handled.value), 1.0);
    assert_eq!(total(&one(m::JOBS_FAILED, Some("unknown")).value), 1.0);
    assert!(
        metrics[m::JOBS_FAILED]
            .iter()
            .all(|s| s.dimensions.get(m::KIND).map(String::as_str) != Some("review")),
        "the review did not fail"
    );
    let duration = one(m::JOB_DURATION, Some("review"));
    assert_eq!(duration.unit.as_deref(), Some("Milliseconds"));
    assert!(total(&duration.value) > 0.0);

    let calls = h.llm.prompts().len() as f64;
    assert_eq!(total(&one(m::LLM_CALLS, None).value), calls);
    assert!(total(&one(m::LLM_INPUT_TOKENS, None).value) > 0.0);
    assert!(total(&one(m::LLM_OUTPUT_TOKENS, None).value) > 0.0);
    assert!(total(&one(m::LLM_COST_USD, None).value) > 0.0);

    let github_calls = h.github.requests().len() as f64;
    assert_eq!(total(&one(m::GITHUB_CALLS, None).value), github_calls);
    let remaining = one(m::GITHUB_RATE_LIMIT_REMAINING, None);
    assert_eq!(remaining.unit.as_deref(), Some("Count"));
    assert!((1.0..5000.0).contains(&total(&remaining.value)));

    assert_eq!(total(&one(m::FINDINGS_POSTED, None).value), 1.0);

    // Counters start again after a flush: the next invocation reports its own.
    let mut again = Vec::new();
    parley_runtime::metrics::flush_to(&mut again).expect("flush");
    let again = String::from_utf8(again).expect("utf-8");
    assert!(!again.contains(m::JOBS_HANDLED), "{again}");
}
