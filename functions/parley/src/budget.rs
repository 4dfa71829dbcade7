//! `parley budget show <installation> | set <installation> <usd> | clear <installation>`:
//! an installation's monthly LLM budget (see `parley_core::budget`). `set` overrides
//! `PARLEY_MONTHLY_BUDGET_USD` for that installation, `clear` drops the override.

use anyhow::Context;
use clap::{Parser, Subcommand};
use parley_core::budget::{self, BudgetPolicy, LimitSource};
use parley_core::ports::Store;
use std::io::Write;

#[derive(Debug, Parser)]
#[command(name = "parley budget", about = "An installation's monthly LLM budget")]
pub struct BudgetCommand {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Debug, Subcommand)]
pub enum Action {
    /// This month's spend and the limit in force.
    Show { installation: u64 },
    /// Give the installation a limit of its own, in US dollars a month.
    Set {
        installation: u64,
        /// Checked by Parley, negative ones included, so the refusal says why.
        #[arg(allow_negative_numbers = true)]
        usd: String,
        /// Recorded with the override: who set it.
        #[arg(long, env = "USER")]
        by: Option<String>,
    },
    /// Drop the installation's own limit: the default applies again.
    Clear {
        installation: u64,
        #[arg(long, env = "USER")]
        by: Option<String>,
    },
}

/// `parley budget …` from the process environment.
pub async fn main(args: &[String]) -> anyhow::Result<()> {
    let command = BudgetCommand::try_parse_from(
        std::iter::once("parley budget".to_string()).chain(args.iter().cloned()),
    )
    .unwrap_or_else(|err| err.exit());
    let settings = parley_runtime::Settings::from_env()?;
    let policy = BudgetPolicy::from_env_value(std::env::var(budget::ENV).ok().as_deref())?;
    let adapters = parley_runtime::build_adapters(&settings)
        .await
        .context("opening the store")?;
    run(
        &command,
        adapters.store.as_ref(),
        &policy,
        &mut std::io::stdout(),
    )
    .await
}

pub async fn run(
    command: &BudgetCommand,
    store: &dyn Store,
    policy: &BudgetPolicy,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let installation = match &command.action {
        Action::Show { installation } => *installation,
        Action::Set {
            installation,
            usd,
            by,
        } => {
            let amount = budget::parse_usd("the budget", usd)?;
            budget::set_override(store, *installation, Some(amount), by.as_deref()).await?;
            *installation
        }
        Action::Clear { installation, by } => {
            budget::set_override(store, *installation, None, by.as_deref()).await?;
            *installation
        }
    };
    let standing =
        budget::standing(store, policy, installation, time::OffsetDateTime::now_utc()).await?;
    let limit = match standing.limit {
        Some((usd, LimitSource::Override)) => format!("${usd:.2} (this installation's own)"),
        Some((usd, LimitSource::Default)) => format!("${usd:.2} ({})", budget::ENV),
        None => "none".to_string(),
    };
    writeln!(
        out,
        "installation {installation}: ${:.4} spent in {}; limit {limit}{}",
        standing.spent_usd(),
        standing.month,
        if standing.exhausted() {
            "; exhausted"
        } else {
            ""
        }
    )?;
    Ok(())
}
