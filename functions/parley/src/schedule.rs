//! What `parley serve` does by the clock: queue the sweep for lost webhook deliveries
//! ([`parley_core::redelivery`]) when it starts, so a machine that was down catches up
//! first, and every `PARLEY_REDELIVERY_MINUTES` after (15; 0 turns it off). On AWS an
//! EventBridge schedule queues the same job (template.yaml, `RedeliverySweepRule`).

use anyhow::Context;
use parley_core::ports::JobQueue;
use parley_core::redelivery;
use std::sync::Arc;
use std::time::Duration;
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

/// How often to sweep, from `PARLEY_REDELIVERY_MINUTES`; `None`: never.
pub fn every(value: Option<String>) -> anyhow::Result<Option<Duration>> {
    let minutes: u64 = match value.as_deref().map(str::trim) {
        None | Some("") => 15,
        Some(text) => text.parse().with_context(|| {
            format!(
                "PARLEY_REDELIVERY_MINUTES must be a whole number of minutes (0: off), got {text:?}"
            )
        })?,
    };
    Ok((minutes > 0).then(|| Duration::from_secs(minutes * 60)))
}

/// Queue a sweep now and every `every`, until `shutdown`. A failed send is logged: the
/// next tick queues another.
pub async fn run(
    queue: Arc<dyn JobQueue>,
    every: Duration,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            _ = ticks.tick() => {}
        }
        let run = OffsetDateTime::now_utc().unix_timestamp().to_string();
        let job = redelivery::job(&run);
        let sent = match job.message(job.delivery_id().to_string()) {
            Ok(message) => queue.send(message).await.map_err(anyhow::Error::new),
            Err(err) => Err(anyhow::Error::new(err)),
        };
        if let Err(err) = sent {
            tracing::warn!(error = %err, "could not queue the sweep for lost webhook deliveries");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_minutes_and_zero_is_off() {
        assert_eq!(every(None).unwrap(), Some(Duration::from_secs(900)));
        assert_eq!(
            every(Some("5".into())).unwrap(),
            Some(Duration::from_secs(300))
        );
        assert_eq!(every(Some("0".into())).unwrap(), None);
        let err = every(Some("soon".into())).unwrap_err().to_string();
        assert!(err.contains("PARLEY_REDELIVERY_MINUTES"), "{err}");
    }
}
