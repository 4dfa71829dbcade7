//! `parley dlq list | show <id> | redrive <id> | redrive --all`: the jobs that failed
//! every attempt, on whichever queue the settings select (the SQLite queue locally, SQS
//! with `PARLEY_QUEUE=sqs` and the `PARLEY_*_DLQ_URL` variables).
//!
//! A redriven job goes back to the end of its PR's group with its attempts counted afresh.
//! Fix what made it fail first: it is the same job, and fails the same way otherwise.

use anyhow::{Context, bail};
use clap::{Parser, Subcommand, ValueEnum};
use parley_core::Job;
use parley_core::ports::{DeadLetter, PollingQueue, QueueName};
use std::io::Write;

#[derive(Debug, Parser)]
#[command(name = "parley dlq", about = "Inspect and redrive dead-lettered jobs")]
pub struct DlqCommand {
    /// Only this queue (default: both).
    #[arg(long, value_enum, global = true)]
    pub queue: Option<Queue>,
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Debug, Subcommand)]
pub enum Action {
    /// One line per dead letter: id, queue, group, what the job is.
    List,
    /// One dead letter in full.
    Show { id: String },
    /// Send one dead letter (or all, oldest first) back to its queue.
    Redrive {
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        id: Option<String>,
        #[arg(long)]
        all: bool,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Queue {
    Conversation,
    Review,
}

impl From<Queue> for QueueName {
    fn from(queue: Queue) -> Self {
        match queue {
            Queue::Conversation => QueueName::Conversation,
            Queue::Review => QueueName::Review,
        }
    }
}

/// `parley dlq …` from the process: arguments after `dlq`, adapters from the environment.
pub async fn main(args: &[String]) -> anyhow::Result<()> {
    let command = DlqCommand::try_parse_from(
        std::iter::once("parley dlq".to_string()).chain(args.iter().cloned()),
    )
    .unwrap_or_else(|err| err.exit());
    let settings = parley_runtime::Settings::from_env()?;
    let adapters = parley_runtime::build_adapters(&settings)
        .await
        .context("opening the queue")?;
    run(&command, adapters.polling.as_ref(), &mut std::io::stdout()).await
}

/// Carry out `command` on `queue`, writing what an operator reads to `out`.
pub async fn run(
    command: &DlqCommand,
    queue: &dyn PollingQueue,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let queues: Vec<QueueName> = match command.queue {
        Some(one) => vec![one.into()],
        None => QueueName::ALL.to_vec(),
    };
    match &command.action {
        Action::List => {
            let mut total = 0;
            for name in &queues {
                for letter in read(queue, *name).await? {
                    total += 1;
                    writeln!(
                        out,
                        "{}\t{}\t{}\t{}",
                        letter.message_id,
                        name.as_str(),
                        letter.group_id,
                        describe(&letter.body)
                    )?;
                }
            }
            writeln!(out, "{total} dead letter(s)")?;
        }
        Action::Show { id } => {
            let (name, letter) = find(queue, &queues, id).await?;
            writeln!(out, "id:       {}", letter.message_id)?;
            writeln!(out, "queue:    {}", name.as_str())?;
            writeln!(out, "group:    {}", letter.group_id)?;
            if let Some(count) = letter.receive_count {
                writeln!(out, "receives: {count}")?;
            }
            writeln!(out, "job:      {}", describe(&letter.body))?;
            let body = serde_json::from_str::<serde_json::Value>(&letter.body)
                .ok()
                .and_then(|v| serde_json::to_string_pretty(&v).ok())
                .unwrap_or_else(|| letter.body.clone());
            writeln!(out, "{body}")?;
        }
        Action::Redrive { id: Some(id), .. } => {
            let (name, letter) = find(queue, &queues, id).await?;
            if !queue
                .redrive_dead_letter(name, &letter.message_id)
                .await
                .with_context(|| format!("redriving {id}"))?
            {
                bail!(
                    "{id} left the {} dead letters before it could be redriven",
                    name.as_str()
                );
            }
            writeln!(
                out,
                "redriven {id} to the {} queue ({})",
                name.as_str(),
                letter.group_id
            )?;
        }
        Action::Redrive { id: None, .. } => {
            let mut moved = 0;
            for name in &queues {
                for letter in read(queue, *name).await? {
                    if queue
                        .redrive_dead_letter(*name, &letter.message_id)
                        .await
                        .with_context(|| format!("redriving {}", letter.message_id))?
                    {
                        moved += 1;
                        writeln!(
                            out,
                            "redriven {} to the {} queue",
                            letter.message_id,
                            name.as_str()
                        )?;
                    }
                }
            }
            writeln!(out, "{moved} dead letter(s) redriven")?;
        }
    }
    Ok(())
}

async fn read(queue: &dyn PollingQueue, name: QueueName) -> anyhow::Result<Vec<DeadLetter>> {
    queue
        .list_dead_letters(name)
        .await
        .with_context(|| format!("reading the {} dead letters", name.as_str()))
}

/// The dead letter `id` on one of `queues`, or an error that says where it was looked for.
async fn find(
    queue: &dyn PollingQueue,
    queues: &[QueueName],
    id: &str,
) -> anyhow::Result<(QueueName, DeadLetter)> {
    for name in queues {
        if let Some(letter) = read(queue, *name)
            .await?
            .into_iter()
            .find(|l| l.message_id == id)
        {
            return Ok((*name, letter));
        }
    }
    let searched: Vec<&str> = queues.iter().map(|q| q.as_str()).collect();
    bail!(
        "no dead letter {id} on the {} queue(s); `parley dlq list` shows the ids",
        searched.join(" and ")
    )
}

/// What the job is, or why the body is not one.
fn describe(body: &str) -> String {
    match serde_json::from_str::<Job>(body) {
        Ok(job) => format!("{} (delivery {})", job.describe(), job.delivery_id()),
        Err(err) => format!("not a job: {err}"),
    }
}
