//! `parley`: the local runtime and operator commands.
//!
//! ```text
//! parley serve     webhook + both workers + SQLite store/queue in one process
//! parley dlq       list | show <id> | redrive <id> | redrive --all
//! parley replay    <payload.json> --event E [--url URL]: sign and send a delivery
//! parley tables    create: the template's tables and queues in an emulator
//! parley budget    show | set | clear: an installation's monthly LLM budget
//! ```

use anyhow::{Context, bail};
use parley_cli::poller::PollerOptions;
use parley_cli::{ServeOptions, start};
use parley_runtime::{clients, telemetry};
use std::net::SocketAddr;
use tokio_util::sync::CancellationToken;

const USAGE: &str =
    "usage: parley serve | dlq | replay | tables | budget  (parley <command> --help)

Runs the webhook on PORT (default 3000) at POST /webhook and both workers, with the
store and queue in PARLEY_DB_PATH (default .parley/parley.db). Reads .env if present.
Ctrl-C finishes in-flight jobs and exits.";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _ = dotenvy::dotenv();
    telemetry::init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("serve") => serve().await,
        Some("dlq") => parley_cli::dlq::main(&args[1..]).await,
        Some("replay") => parley_cli::replay::main(&args[1..]).await,
        Some("tables") => parley_cli::tables::main(&args[1..]).await,
        Some("budget") => parley_cli::budget::main(&args[1..]).await,
        Some("help" | "--help" | "-h") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown command {other:?}\n\n{USAGE}"),
    }
}

async fn serve() -> anyhow::Result<()> {
    let port: u16 = match std::env::var("PORT") {
        Ok(port) => port
            .parse()
            .with_context(|| format!("PORT must be a port number, got {port:?}"))?,
        Err(_) => 3000,
    };
    let host: std::net::IpAddr = match std::env::var("HOST") {
        Ok(host) => host
            .parse()
            .with_context(|| format!("HOST must be an IP address, got {host:?}"))?,
        Err(_) => [127, 0, 0, 1].into(),
    };
    let options = ServeOptions {
        addr: SocketAddr::new(host, port),
        env: clients::process_env(),
        poller: PollerOptions::default(),
    };
    let shutdown = CancellationToken::new();
    let running = start(options, shutdown.clone()).await?;
    println!("parley listening on http://{}/webhook", running.local_addr);

    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    tracing::info!("shutting down: finishing in-flight jobs");
    shutdown.cancel();
    running.wait().await
}
