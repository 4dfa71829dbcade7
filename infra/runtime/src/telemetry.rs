//! Logging. JSON lines inside Lambda (CloudWatch Logs Insights queries them by field);
//! human-readable text on a terminal. `RUST_LOG` filters, default `info`.
//!
//! In JSON every line of a job carries the job's span (`span.delivery_id`, `span.repo`,
//! `span.pr`, `span.kind`, `span.message_id`; see `parley_core::worker::job_span`): the
//! current span only, not the list of its parents, which repeats the same fields.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let in_lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    // `try_init`: a second call (tests, embedded use) keeps the first subscriber.
    let _ = if in_lambda {
        tracing::subscriber::set_global_default(json(std::io::stdout, filter))
            .map_err(|err| err.to_string())
    } else {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .try_init()
            .map_err(|err| err.to_string())
    };
}

/// For commands a person runs (`parley review`, `doctor`): no log records at all unless
/// asked for (`verbose`, or `RUST_LOG`), and then on stderr. A person reads what the
/// command itself says (its result, its warnings, its one-line errors); timestamped
/// records of the worker's internals in front of that are noise.
pub fn init_cli(verbose: bool) {
    let filter = match EnvFilter::try_from_default_env() {
        Ok(filter) => filter,
        Err(_) if verbose => EnvFilter::new("info"),
        Err(_) => return,
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// The Lambda subscriber, writing to `writer`: JSON lines with the current span's fields.
pub fn json<W>(writer: W, filter: EnvFilter) -> impl tracing::Subscriber + Send + Sync + 'static
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .json()
        .with_current_span(true)
        .with_span_list(false)
        .with_ansi(false)
        .without_time() // Lambda stamps every line itself.
        .finish()
}
