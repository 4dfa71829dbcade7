//! `parley`: the local runtime, a review from the terminal, and setup commands.
//!
//! ```text
//! parley serve                 webhook + both workers + SQLite store/queue in one process
//! parley review OWNER/REPO#N   review a PR and print the findings (--post to post them)
//! parley review --git [A..B]   review a local change; nothing touches GitHub
//! parley doctor [OWNER/REPO]   check every setting and dependency
//! parley app manifest          the GitHub App manifest for this deployment
//! parley config schema         the JSON Schema of .parley.yml
//! parley dlq                   list | show <id> | redrive <id> | redrive --all
//! parley replay                <payload.json> --event E [--url URL]: sign and send a delivery
//! parley tables create         the template's tables and queues in an emulator
//! parley budget                show | set | clear: an installation's monthly LLM budget
//! ```

use anyhow::Context;
use clap::{Parser, Subcommand};
use parley_cli::poller::PollerOptions;
use parley_cli::{ServeOptions, doctor, manifest, review, start};
use parley_runtime::{clients, telemetry};
use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
#[command(
    name = "parley",
    version,
    about = "Parley: a code reviewer you can talk to"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the webhook on PORT (default 3000) at POST /webhook and both workers, with the
    /// store and queue in PARLEY_DB_PATH (default .parley/parley.db). Ctrl-C finishes
    /// in-flight jobs and exits.
    Serve,
    /// Review a PR or a local change and print the findings.
    Review(review::ReviewArgs),
    /// Check each setting and dependency; exit status 1 on any failure.
    Doctor(doctor::DoctorArgs),
    /// The GitHub App.
    App {
        #[command(subcommand)]
        command: AppCommand,
    },
    /// `.parley.yml`.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Dead-lettered jobs: `list` | `show <id>` | `redrive <id>` | `redrive --all`.
    Dlq(Operator),
    /// Sign and send a webhook delivery: <payload.json> --event E [--url URL].
    Replay(Operator),
    /// The template's tables and queues in an emulator: create.
    Tables(Operator),
    /// An installation's monthly LLM budget: show | set | clear.
    Budget(Operator),
}

/// An operator command's own arguments (`parley dlq --help` for each).
#[derive(clap::Args)]
struct Operator {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

#[derive(Subcommand)]
enum AppCommand {
    /// Print the GitHub App manifest: exactly the permissions and events Parley uses.
    Manifest {
        /// The deployment's base URL; the webhook is URL/webhook.
        #[arg(long)]
        url: Option<String>,
        /// The App's name on GitHub.
        #[arg(long, default_value = "Parley")]
        name: String,
        /// Where GitHub sends the browser with the one-time `code` once the App exists.
        #[arg(long, default_value = manifest::DEFAULT_REDIRECT_URL)]
        redirect_url: String,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Print the JSON Schema of .parley.yml (what schema/parley.schema.json holds).
    Schema,
}

fn main() -> ExitCode {
    let _ = dotenvy::dotenv();
    // People run the CLI with profiles and SSO: the AWS adapters load aws-config's default
    // chain here, where the Lambda functions read their environment alone.
    parley_aws::set_loader(|overrides| Box::pin(default_chain(overrides)));
    let cli = Cli::parse();
    if matches!(cli.command, Command::Serve) {
        parley_cli::memory::cap_malloc_arenas();
    }
    match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime.block_on(run(cli)),
        Err(err) => {
            eprintln!("parley: could not start the async runtime: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Serve => {
            telemetry::init();
            serve().await.map(|()| ExitCode::SUCCESS)
        }
        Command::Review(args) => review_command(args).await,
        Command::Doctor(args) => Ok(doctor::run(&args, &clients::process_env()).await),
        Command::App {
            command:
                AppCommand::Manifest {
                    url,
                    name,
                    redirect_url,
                },
        } => print(&manifest::render(url.as_deref(), &name, &redirect_url)),
        Command::Config {
            command: ConfigCommand::Schema,
        } => print(&parley_core::config::schema::json()),
        Command::Dlq(op) => operator(parley_cli::dlq::main(&op.args)).await,
        Command::Replay(op) => operator(parley_cli::replay::main(&op.args)).await,
        Command::Tables(op) => operator(parley_cli::tables::main(&op.args)).await,
        Command::Budget(op) => operator(parley_cli::budget::main(&op.args)).await,
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("parley: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn operator(
    command: impl std::future::Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<ExitCode> {
    telemetry::init();
    command.await.map(|()| ExitCode::SUCCESS)
}

fn print(text: &str) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}").context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// The result on stdout; on stderr one line per thing a person should know (a failed
/// pass) unless `--quiet`, and errors as one line naming the fix with exit status 2.
/// Exit status 1 is `--fail-on`'s (a finding at or above it), 3 `--fail-on-partial`'s.
async fn review_command(args: review::ReviewArgs) -> anyhow::Result<ExitCode> {
    telemetry::init_cli(args.verbose);
    match review::run(&args, &clients::process_env()).await {
        Ok(report) => {
            if !args.quiet {
                for warning in report.warnings() {
                    eprintln!("{warning}");
                }
            }
            print(&review::render::render(&report, args.format))?;
            if args.format == review::render::Format::Github {
                write_step_summary(&report);
            }
            Ok(ExitCode::from(
                report.exit_status(args.fail_on, args.fail_on_partial),
            ))
        }
        Err(err) => {
            eprintln!("parley review: {err}");
            Ok(ExitCode::from(2))
        }
    }
}

/// Under GitHub Actions, the whole report (Markdown) in the job's summary page beside the
/// annotations. The review is done whatever happens here: a failure is one warning line.
fn write_step_summary(report: &review::Report) {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return;
    };
    let written = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .and_then(|mut file| writeln!(file, "{}", review::render::markdown(report)));
    if let Err(err) = written {
        eprintln!(
            "warning: could not write the step summary to {}: {err}",
            std::path::Path::new(&path).display()
        );
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

/// aws-config's default chain, with the adapter's endpoint and timeouts over it.
async fn default_chain(overrides: parley_aws::Overrides) -> parley_aws::SdkConfig {
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
    if let Some(url) = overrides.endpoint_url {
        loader = loader.endpoint_url(url);
    }
    if let Some(timeouts) = overrides.timeouts {
        loader = loader.timeout_config(timeouts);
    }
    loader.load().await
}
