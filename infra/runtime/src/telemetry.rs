//! Logging. JSON lines inside Lambda (CloudWatch Logs Insights queries them by field);
//! human-readable text on a terminal. `RUST_LOG` filters, default `info`.

use tracing_subscriber::EnvFilter;

pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let in_lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    // `try_init`: a second call (tests, embedded use) keeps the first subscriber.
    let _ = if in_lambda {
        builder
            .json()
            .with_current_span(false)
            .with_ansi(false)
            .without_time() // Lambda stamps every line itself.
            .try_init()
    } else {
        builder.try_init()
    };
}

/// For commands a person runs (`parley review`, `doctor`): only errors (RUST_LOG for more), on stderr, so
/// stdout carries nothing but the command's output.
pub fn init_cli() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("error"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
