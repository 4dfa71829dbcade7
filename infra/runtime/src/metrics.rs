//! CloudWatch Embedded Metric Format for the Lambda workers.
//!
//! The metrics themselves are recorded in `parley_core::metrics` through the `metrics`
//! facade. Here `metrics_cloudwatch_embedded` is installed as the recorder: it adds the
//! values up per dimension set during an invocation, and [`flush`] writes them as EMF
//! documents (JSON lines with an `_aws` member) to stdout, where CloudWatch Logs turns them
//! into metrics without any API call or permission. A well-kept crate for the format
//! instead of our own writer; its Lambda integration (which flushes by wrapping the
//! runtime) is left off because it pins an older `lambda_runtime`: the worker flushes
//! after each batch instead.

use metrics_cloudwatch_embedded::Collector;
use std::sync::OnceLock;

static COLLECTOR: OnceLock<Option<&'static Collector>> = OnceLock::new();

/// Install the EMF recorder once per process. `None` when another recorder was installed
/// first (metrics then go there).
pub fn init() -> Option<&'static Collector> {
    *COLLECTOR.get_or_init(|| {
        match metrics_cloudwatch_embedded::Builder::new()
            .cloudwatch_namespace(parley_core::metrics::NAMESPACE)
            .init()
        {
            Ok(collector) => {
                parley_core::metrics::describe();
                Some(collector)
            }
            Err(err) => {
                tracing::warn!(error = %err, "metrics recorder not installed; no EMF metrics from this process");
                None
            }
        }
    })
}

/// Write what was recorded since the last flush as EMF lines to `writer`.
pub fn flush_to(writer: impl std::io::Write) -> std::io::Result<()> {
    match COLLECTOR.get().copied().flatten() {
        Some(collector) => collector.flush(writer),
        None => Ok(()),
    }
}

/// [`flush_to`] stdout, holding its lock so no log line lands inside a document. Metrics
/// are an extra: a failed write is logged, never fails the invocation.
pub fn flush() {
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    if let Err(err) = flush_to(&mut lock) {
        drop(lock);
        tracing::warn!(error = %err, "could not write EMF metrics");
    }
}
