//! Operational metrics: what an operator graphs and alarms on.
//!
//! Recorded through the `metrics` facade, which does no I/O: with no recorder installed
//! (`parley serve`, tests) every call is a no-op. The Lambda workers install a recorder
//! that writes CloudWatch Embedded Metric Format lines to stdout after each invocation
//! (`parley_runtime::metrics`), namespace [`NAMESPACE`]. The names, units and dimensions
//! live here only, so the template's dashboard and alarms have one place to agree with.

use crate::ports::llm::Usage;
use metrics::{
    Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram,
};
use std::time::Duration;

/// The CloudWatch namespace of every metric.
pub const NAMESPACE: &str = "Parley";

/// The one dimension: which kind of job (`review`, `conversation`, `bookkeeping`, or
/// `unknown` for a message that is not a job). Per-repository dimensions would make a
/// metric per repository, which CloudWatch bills one by one.
pub const KIND: &str = "Kind";

pub const JOBS_HANDLED: &str = "JobsHandled";
pub const JOBS_FAILED: &str = "JobsFailed";
/// Wall time of one job: a review, or a conversation turn (with its sweep).
pub const JOB_DURATION: &str = "JobDuration";
pub const LLM_CALLS: &str = "LlmCalls";
pub const LLM_INPUT_TOKENS: &str = "LlmInputTokens";
pub const LLM_OUTPUT_TOKENS: &str = "LlmOutputTokens";
/// Input tokens the provider read from its prompt cache, and wrote to it.
pub const LLM_CACHE_READ_TOKENS: &str = "LlmCacheReadTokens";
pub const LLM_CACHE_WRITE_TOKENS: &str = "LlmCacheWriteTokens";
/// What the prompt cache saved, in US dollars (one value per job).
pub const LLM_CACHE_SAVED_USD: &str = "LlmCacheSavedUSD";
/// Estimated cost of the priced calls, in US dollars (one value per job).
pub const LLM_COST_USD: &str = "LlmCostUSD";
pub const GITHUB_CALLS: &str = "GitHubCalls";
/// `x-ratelimit-remaining` of the last GitHub answer in the invocation.
pub const GITHUB_RATE_LIMIT_REMAINING: &str = "GitHubRateLimitRemaining";
/// Findings posted by a review, inline or in its summary.
pub const FINDINGS_POSTED: &str = "FindingsPosted";
/// Findings a review dropped because of what Parley learned: dismissals, false-positive
/// patterns, the judge pass.
pub const FINDINGS_SUPPRESSED: &str = "FindingsSuppressed";
/// Findings a review dropped for confidence below the threshold in force.
pub const FINDINGS_BELOW_THRESHOLD: &str = "FindingsBelowThreshold";
/// Wall time to get a reviewed head's archive from GitHub (not recorded when the archive
/// came from the local cache).
pub const SNAPSHOT_DOWNLOAD_TIME: &str = "SnapshotDownloadTime";
/// Wall time to check, extract and index an archive.
pub const SNAPSHOT_INDEX_TIME: &str = "SnapshotIndexTime";
/// Archives read from the local disk cache instead of GitHub.
pub const SNAPSHOT_CACHE_HITS: &str = "SnapshotCacheHits";
/// Jobs that went on from the diff alone because the archive could not be used
/// (not downloaded, refused as unsafe, over the caps, unreadable).
pub const SNAPSHOTS_UNUSED: &str = "SnapshotsUnused";
/// Tool calls the model made to read code, and the bytes they returned.
pub const TOOL_CALLS: &str = "ToolCalls";
pub const TOOL_BYTES: &str = "ToolBytes";
/// Webhook events Parley failed to take and asked GitHub for again.
pub const WEBHOOKS_REDELIVERED: &str = "WebhooksRedelivered";
/// Webhook events that failed every redelivery: lost unless someone acts (alarmed).
pub const WEBHOOKS_GIVEN_UP: &str = "WebhooksGivenUp";
/// Gate checks concluded `action_required` for want of a complete review
/// (`gate.incomplete: hold`): merges held up by Parley's trouble or a partial review.
pub const GATES_HELD: &str = "GatesHeld";
/// Heads a maintainer let through without a complete review.
pub const HEADS_LET_THROUGH: &str = "HeadsLetThrough";

/// Register every metric's unit with the installed recorder; call once after installing
/// one (units are what the EMF directives carry).
pub fn describe() {
    describe_counter!(JOBS_HANDLED, Unit::Count, "Jobs taken off a queue");
    describe_counter!(
        JOBS_FAILED,
        Unit::Count,
        "Jobs that failed and go back to the queue"
    );
    describe_histogram!(JOB_DURATION, Unit::Milliseconds, "Wall time of one job");
    describe_counter!(LLM_CALLS, Unit::Count, "LLM calls that returned");
    describe_counter!(LLM_INPUT_TOKENS, Unit::Count, "LLM input tokens");
    describe_counter!(LLM_OUTPUT_TOKENS, Unit::Count, "LLM output tokens");
    describe_counter!(
        LLM_CACHE_READ_TOKENS,
        Unit::Count,
        "LLM input tokens read from the prompt cache"
    );
    describe_counter!(
        LLM_CACHE_WRITE_TOKENS,
        Unit::Count,
        "LLM input tokens written to the prompt cache"
    );
    describe_histogram!(
        LLM_CACHE_SAVED_USD,
        "What the prompt cache saved in US dollars, per job"
    );
    describe_histogram!(LLM_COST_USD, "Estimated LLM cost in US dollars, per job");
    describe_counter!(GITHUB_CALLS, Unit::Count, "HTTP exchanges with GitHub");
    describe_gauge!(
        GITHUB_RATE_LIMIT_REMAINING,
        Unit::Count,
        "GitHub API requests left in the rate-limit window"
    );
    describe_counter!(FINDINGS_POSTED, Unit::Count, "Findings posted");
    describe_counter!(
        FINDINGS_SUPPRESSED,
        Unit::Count,
        "Findings suppressed by learning"
    );
    describe_counter!(
        FINDINGS_BELOW_THRESHOLD,
        Unit::Count,
        "Findings below the confidence threshold"
    );
    describe_histogram!(
        SNAPSHOT_DOWNLOAD_TIME,
        Unit::Milliseconds,
        "Downloading a reviewed head's archive"
    );
    describe_histogram!(
        SNAPSHOT_INDEX_TIME,
        Unit::Milliseconds,
        "Checking, extracting and indexing an archive"
    );
    describe_counter!(
        SNAPSHOT_CACHE_HITS,
        Unit::Count,
        "Archives read from the local disk cache"
    );
    describe_counter!(
        SNAPSHOTS_UNUSED,
        Unit::Count,
        "Jobs that read the diff alone: the archive could not be used"
    );
    describe_counter!(
        TOOL_CALLS,
        Unit::Count,
        "Tool calls the model made to read code"
    );
    describe_counter!(TOOL_BYTES, Unit::Bytes, "Bytes the tool calls returned");
    describe_counter!(
        WEBHOOKS_REDELIVERED,
        Unit::Count,
        "Webhook events asked for again after Parley failed to take them"
    );
    describe_counter!(
        WEBHOOKS_GIVEN_UP,
        Unit::Count,
        "Webhook events that failed every redelivery"
    );
    describe_counter!(
        GATES_HELD,
        Unit::Count,
        "Gate checks held for want of a complete review"
    );
    describe_counter!(
        HEADS_LET_THROUGH,
        Unit::Count,
        "Heads let through without a complete review"
    );
}

/// One job handled, and whether it failed.
pub fn job_done(kind: &'static str, ok: bool, elapsed: Duration) {
    counter!(JOBS_HANDLED, KIND => kind).increment(1);
    if !ok {
        counter!(JOBS_FAILED, KIND => kind).increment(1);
    }
    histogram!(JOB_DURATION, KIND => kind).record(elapsed.as_secs_f64() * 1000.0);
}

/// What one job spent on the LLM.
pub fn llm_usage(calls: u32, usage: Usage, cost_usd: f64, saved_usd: f64) {
    if calls == 0 {
        return;
    }
    counter!(LLM_CALLS).increment(u64::from(calls));
    counter!(LLM_INPUT_TOKENS).increment(usage.input_tokens);
    counter!(LLM_OUTPUT_TOKENS).increment(usage.output_tokens);
    counter!(LLM_CACHE_READ_TOKENS).increment(usage.cache_read_tokens);
    counter!(LLM_CACHE_WRITE_TOKENS).increment(usage.cache_write_tokens);
    histogram!(LLM_COST_USD).record(cost_usd);
    histogram!(LLM_CACHE_SAVED_USD).record(saved_usd);
}

/// One exchange with GitHub, and the rate limit it reported.
pub fn github_call(rate_limit_remaining: Option<u64>) {
    counter!(GITHUB_CALLS).increment(1);
    if let Some(remaining) = rate_limit_remaining {
        gauge!(GITHUB_RATE_LIMIT_REMAINING).set(remaining as f64);
    }
}

/// A reviewed head's code, opened: `download` is `None` when the archive came from the
/// local cache.
pub fn snapshot_opened(download: Option<Duration>, index: Duration) {
    match download {
        Some(took) => histogram!(SNAPSHOT_DOWNLOAD_TIME).record(took.as_secs_f64() * 1000.0),
        None => counter!(SNAPSHOT_CACHE_HITS).increment(1),
    }
    histogram!(SNAPSHOT_INDEX_TIME).record(index.as_secs_f64() * 1000.0);
}

/// A job that reads the diff alone because its archive could not be used.
pub fn snapshot_unused() {
    counter!(SNAPSHOTS_UNUSED).increment(1);
}

/// Tool calls answered for one pass or answer, and the bytes they returned.
pub fn tools_used(calls: usize, bytes: usize) {
    counter!(TOOL_CALLS).increment(calls as u64);
    counter!(TOOL_BYTES).increment(bytes as u64);
}

/// What one sweep for lost webhook deliveries did. Both are recorded, zeros included, so
/// the alarm on events given up has data points to judge.
pub fn webhooks_swept(redelivered: usize, given_up: usize) {
    counter!(WEBHOOKS_REDELIVERED).increment(redelivered as u64);
    counter!(WEBHOOKS_GIVEN_UP).increment(given_up as u64);
}

/// A gate check held for want of a complete review.
pub fn gate_held() {
    counter!(GATES_HELD).increment(1);
}

/// A head let through without a complete review.
pub fn head_let_through() {
    counter!(HEADS_LET_THROUGH).increment(1);
}

/// What a published review did with its candidate findings.
pub fn findings(posted: usize, suppressed: usize, below_threshold: usize) {
    counter!(FINDINGS_POSTED).increment(posted as u64);
    counter!(FINDINGS_SUPPRESSED).increment(suppressed as u64);
    counter!(FINDINGS_BELOW_THRESHOLD).increment(below_threshold as u64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics::{
        Counter, CounterFn, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
        SharedString,
    };
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    /// What was recorded, by metric name: counters' increments and histograms' values.
    #[derive(Default)]
    struct Recorded(Arc<Mutex<BTreeMap<String, Vec<f64>>>>);

    struct Series(Arc<Mutex<BTreeMap<String, Vec<f64>>>>, String);

    impl CounterFn for Series {
        fn increment(&self, value: u64) {
            self.push(value as f64);
        }
        fn absolute(&self, value: u64) {
            self.push(value as f64);
        }
    }

    impl HistogramFn for Series {
        fn record(&self, value: f64) {
            self.push(value);
        }
    }

    impl Series {
        fn push(&self, value: f64) {
            if let Ok(mut map) = self.0.lock() {
                map.entry(self.1.clone()).or_default().push(value);
            }
        }
    }

    impl Recorder for Recorded {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            Counter::from_arc(Arc::new(Series(self.0.clone(), key.name().to_string())))
        }
        fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::noop()
        }
        fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::from_arc(Arc::new(Series(self.0.clone(), key.name().to_string())))
        }
    }

    fn recorded(f: impl FnOnce()) -> BTreeMap<String, Vec<f64>> {
        let recorder = Recorded::default();
        metrics::with_local_recorder(&recorder, f);
        recorder.0.lock().expect("not poisoned").clone()
    }

    #[test]
    fn a_downloaded_archive_records_its_download_time_and_a_cached_one_a_hit() {
        let downloaded = recorded(|| {
            snapshot_opened(Some(Duration::from_millis(1500)), Duration::from_millis(40))
        });
        assert_eq!(downloaded.get(SNAPSHOT_DOWNLOAD_TIME), Some(&vec![1500.0]));
        assert_eq!(downloaded.get(SNAPSHOT_INDEX_TIME), Some(&vec![40.0]));
        assert_eq!(downloaded.get(SNAPSHOT_CACHE_HITS), None);

        let cached = recorded(|| snapshot_opened(None, Duration::from_millis(30)));
        assert_eq!(cached.get(SNAPSHOT_DOWNLOAD_TIME), None);
        assert_eq!(cached.get(SNAPSHOT_CACHE_HITS), Some(&vec![1.0]));
        assert_eq!(cached.get(SNAPSHOT_INDEX_TIME), Some(&vec![30.0]));

        let unused = recorded(snapshot_unused);
        assert_eq!(unused.get(SNAPSHOTS_UNUSED), Some(&vec![1.0]));
    }

    #[test]
    fn a_held_gate_and_a_head_let_through_are_counted() {
        let held = recorded(|| {
            gate_held();
            head_let_through();
        });
        assert_eq!(held.get(GATES_HELD), Some(&vec![1.0]));
        assert_eq!(held.get(HEADS_LET_THROUGH), Some(&vec![1.0]));
    }

    #[test]
    fn a_sweep_records_what_it_asked_for_and_what_it_gave_up() {
        let swept = recorded(|| webhooks_swept(2, 0));
        assert_eq!(swept.get(WEBHOOKS_REDELIVERED), Some(&vec![2.0]));
        assert_eq!(swept.get(WEBHOOKS_GIVEN_UP), Some(&vec![0.0]));
    }
}
