//! Failed webhook deliveries, sent again.
//!
//! GitHub delivers an event once and does not try again when Parley did not take it: a
//! deploy in progress, a throttled API, a cold start past GitHub's ten-second wait, a
//! `parley serve` machine that was down. A lost `pull_request` is a required check that
//! never comes; a lost comment is a question nobody answers. The sweep, a scheduled
//! bookkeeping job, reads the App's recent deliveries and asks GitHub to deliver again each
//! event that none of its attempts delivered, as GitHub's guide to failed deliveries
//! describes.
//!
//! - Which: an event none of whose listed attempts got a 2xx, and whose latest attempt
//!   failed in a way worth repeating: no answer (status 0), 429, or 5xx. Another 4xx is the
//!   webhook refusing the delivery (bad signature, malformed, too large); sent again, it
//!   would be refused again.
//! - When: not while Parley is still failing. If the newest attempt of all failed less than
//!   [`HOLD_OFF`] ago, the sweep asks for nothing and keeps its watermark, so an outage
//!   spends no redeliveries; the first sweep after deliveries are taken again asks for
//!   every event lost in it.
//! - Unheld: before asking, the sweep drops the webhook's claim on the event's delivery
//!   id. A webhook that died between claiming a delivery and queueing it (killed, not
//!   timed out: its calls give up in time and release the claim) would otherwise hold the
//!   claim for three days and take the redelivery for a duplicate. If the event was queued
//!   after all, it runs twice, and the workers' own claims (one answer per comment, one
//!   review per head) make the second run a no-op.
//! - How often: each failed attempt is asked for once (a claim on its id), and each event
//!   at most [`MAX_REDELIVERIES`] times (numbered claims on its guid), both kept as long as
//!   GitHub can redeliver. A redelivery taken twice is harmless: the webhook takes an event
//!   once, by its guid.
//! - How far back: from the start of the last sweep that read everything, less
//!   [`OVERLAP`]; the first sweep reads [`FIRST_LOOKBACK`]; never past what GitHub still
//!   redelivers. The watermark is a counter of unix seconds that only moves forward, and
//!   the sweeps run one at a time (one queue group), so nothing races it.

use crate::job::{BookkeepingEvent, BookkeepingJob, Job};
use crate::ports::github::{GitHub, GitHubError, WebhookDelivery};
use crate::ports::store::keys;
use crate::ports::{Claim, JobError, Store, StoreError};
use std::collections::BTreeMap;
use std::time::Duration;
use time::OffsetDateTime;

/// Deliveries of one event Parley asks for, beyond GitHub's first.
pub const MAX_REDELIVERIES: u32 = 5;
/// How recent a failed newest attempt says Parley is still failing (one sweep's interval).
pub const HOLD_OFF: Duration = Duration::from_secs(15 * 60);
/// How far back the first sweep reads.
pub const FIRST_LOOKBACK: Duration = Duration::from_secs(6 * 3600);
/// How far before the last complete sweep the next one starts reading: an attempt GitHub
/// lists a little after it was made is not missed.
pub const OVERLAP: Duration = Duration::from_secs(15 * 60);
/// GitHub redelivers deliveries of the past three days; an hour is kept in hand.
const REDELIVERY_WINDOW: Duration = Duration::from_secs(71 * 3600);
/// Pages of 100 read at most per sweep; beyond, the watermark stays and the next sweep
/// reads the same span again.
const MAX_PAGES: usize = 50;
const SCOPE: &str = "app#redelivery";
const WATERMARK: &str = "watermark";

/// The scheduled job that runs a sweep. `run_id` tells sweeps apart on the queue.
pub fn job(run_id: &str) -> Job {
    Job::Bookkeeping(BookkeepingJob {
        delivery_id: format!("redelivery-{run_id}"),
        installation_id: None,
        event: BookkeepingEvent::RedeliverFailed,
    })
}

/// What one sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Attempts listed.
    pub listed: usize,
    /// Events asked for again, by guid.
    pub redelivered: Vec<String>,
    /// Events that failed every time they were asked for, left alone from now on.
    pub given_up: Vec<String>,
    /// Events whose latest attempt the webhook refused (a 4xx other than 429).
    pub refused: Vec<String>,
    /// Whether everything back to the watermark was read (the watermark then moves).
    pub complete: bool,
    /// The newest attempt failed moments ago: nothing was asked for this time.
    pub held: bool,
    /// This GitHub keeps no delivery log for Apps (`/app/hook/deliveries` answers 404,
    /// as a GitHub Enterprise Server without it does): nothing can be recovered, and the
    /// sweep says so instead of failing every interval.
    pub unavailable: bool,
}

/// Read the deliveries since the watermark and ask for each lost event again.
pub async fn sweep(
    github: &dyn GitHub,
    store: &dyn Store,
    now: OffsetDateTime,
) -> Result<Sweep, JobError> {
    let watermark = store.counter(SCOPE, WATERMARK).await.map_err(store_error)?;
    let since = if watermark == 0 {
        now - FIRST_LOOKBACK
    } else {
        OffsetDateTime::from_unix_timestamp(watermark as i64).unwrap_or(now) - OVERLAP
    }
    .max(now - REDELIVERY_WINDOW);

    let Some((attempts, complete)) = read_since(github, since).await? else {
        tracing::warn!(
            "this GitHub keeps no webhook delivery log for Apps (GET /app/hook/deliveries: 404); \
             lost deliveries cannot be asked for again (turn the sweep off: RedeliverySchedule \
             empty, or PARLEY_REDELIVERY_MINUTES=0)"
        );
        return Ok(Sweep {
            unavailable: true,
            ..Sweep::default()
        });
    };
    let mut sweep = Sweep {
        listed: attempts.len(),
        complete,
        ..Sweep::default()
    };
    if let Some(newest) = still_failing(&attempts, now) {
        tracing::info!(guid = %newest.guid, status = %newest.status, "the newest webhook delivery failed too; lost events are asked for again once deliveries are taken");
        sweep.held = true;
        return Ok(sweep);
    }
    for (guid, latest) in lost_events(&attempts, since) {
        if !worth_repeating(latest.status_code) {
            sweep.refused.push(guid);
            continue;
        }
        match ask(store, &guid, latest).await? {
            Ask::AlreadyAsked => {}
            Ask::GiveUp => {
                tracing::warn!(%guid, event = %latest.event, status = %latest.status, "a webhook delivery failed every time it was sent again; giving up on it");
                sweep.given_up.push(guid);
            }
            Ask::Go { slot } => {
                store
                    .release(&keys::delivery(&guid))
                    .await
                    .map_err(store_error)?;
                if let Err(err) = github.redeliver_webhook_delivery(latest.id).await {
                    // Not asked after all: the next sweep tries again.
                    let _ = store.release(&attempt_key(latest.id)).await;
                    let _ = store.release(&slot).await;
                    if err.is_transient() || err.is_config() {
                        return Err(JobError::from(err));
                    }
                    tracing::warn!(%guid, delivery = latest.id, error = %err, "GitHub would not deliver the event again");
                    continue;
                }
                tracing::info!(%guid, event = %latest.event, action = latest.action.as_deref().unwrap_or(""), status = %latest.status, "asked GitHub to deliver a lost webhook event again");
                sweep.redelivered.push(guid);
            }
        }
    }

    if complete {
        let now_secs = now.unix_timestamp().max(0) as u64;
        if now_secs > watermark {
            store
                .add_to_counter(SCOPE, WATERMARK, now_secs - watermark)
                .await
                .map_err(store_error)?;
        }
    } else {
        tracing::warn!(pages = MAX_PAGES, %since, "more webhook deliveries than one sweep reads; the next sweep reads them again");
    }
    Ok(sweep)
}

/// The attempts listed back to `since` (newest first), and whether that was all of them.
/// `None`: the first page is not there at all (404), so this GitHub has no such log.
async fn read_since(
    github: &dyn GitHub,
    since: OffsetDateTime,
) -> Result<Option<(Vec<WebhookDelivery>, bool)>, JobError> {
    let mut attempts = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let page = match github.list_webhook_deliveries(cursor.as_deref()).await {
            Ok(page) => page,
            Err(GitHubError::NotFound(_)) if cursor.is_none() => return Ok(None),
            Err(err) => return Err(JobError::from(err)),
        };
        let reached = page.deliveries.iter().any(|d| d.delivered_at < since);
        attempts.extend(page.deliveries);
        match page.next {
            Some(next) if !reached => cursor = Some(next),
            _ => return Ok(Some((attempts, true))),
        }
    }
    Ok(Some((attempts, false)))
}

/// Each event none of whose attempts was taken, with its latest attempt, where that
/// attempt is at or after `since` (an older one was a previous sweep's to judge).
fn lost_events(
    attempts: &[WebhookDelivery],
    since: OffsetDateTime,
) -> Vec<(String, &WebhookDelivery)> {
    let mut by_event: BTreeMap<&str, Vec<&WebhookDelivery>> = BTreeMap::new();
    for attempt in attempts {
        by_event.entry(&attempt.guid).or_default().push(attempt);
    }
    by_event
        .into_iter()
        .filter(|(_, attempts)| !attempts.iter().any(|a| a.taken()))
        .filter_map(|(guid, attempts)| {
            let latest = attempts
                .into_iter()
                .max_by_key(|a| (a.delivered_at, a.id))?;
            (latest.delivered_at >= since).then(|| (guid.to_string(), latest))
        })
        .collect()
}

/// The newest attempt of all, if it failed as an unreachable or overloaded Parley fails,
/// less than [`HOLD_OFF`] before `now`.
fn still_failing(attempts: &[WebhookDelivery], now: OffsetDateTime) -> Option<&WebhookDelivery> {
    attempts
        .iter()
        .max_by_key(|a| (a.delivered_at, a.id))
        .filter(|a| worth_repeating(a.status_code) && now - a.delivered_at < HOLD_OFF)
}

/// No answer at all, throttled, or a server error: the same delivery can succeed later.
fn worth_repeating(status: u32) -> bool {
    status == 0 || status == 429 || (500..600).contains(&status)
}

enum Ask {
    AlreadyAsked,
    GiveUp,
    /// Ask GitHub; `slot` is the event's numbered claim this request took.
    Go {
        slot: String,
    },
}

/// Whether to ask for `attempt` again: once per failed attempt, and at most
/// [`MAX_REDELIVERIES`] times per event.
async fn ask(store: &dyn Store, guid: &str, attempt: &WebhookDelivery) -> Result<Ask, JobError> {
    let ttl = REDELIVERY_WINDOW + OVERLAP;
    let claimed = store
        .claim(&attempt_key(attempt.id), ttl)
        .await
        .map_err(store_error)?;
    if claimed == Claim::AlreadyClaimed {
        return Ok(Ask::AlreadyAsked);
    }
    for n in 1..=MAX_REDELIVERIES {
        let slot = format!("redelivery:{guid}:{n}");
        match store.claim(&slot, ttl).await {
            Ok(Claim::Won) => return Ok(Ask::Go { slot }),
            Ok(Claim::AlreadyClaimed) => {}
            Err(err) => {
                // Not asked: the attempt stays the next sweep's to ask for.
                let _ = store.release(&attempt_key(attempt.id)).await;
                return Err(store_error(err));
            }
        }
    }
    Ok(Ask::GiveUp)
}

fn attempt_key(id: u64) -> String {
    format!("redelivery-attempt:{id}")
}

fn store_error(err: StoreError) -> JobError {
    JobError::Transient(err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minutes_ago: i64, now: OffsetDateTime) -> OffsetDateTime {
        now - time::Duration::minutes(minutes_ago)
    }

    fn attempt(
        id: u64,
        guid: &str,
        status_code: u32,
        delivered_at: OffsetDateTime,
    ) -> WebhookDelivery {
        WebhookDelivery {
            id,
            guid: guid.to_string(),
            delivered_at,
            redelivery: false,
            status: String::new(),
            status_code,
            event: "issue_comment".to_string(),
            action: Some("created".to_string()),
            installation_id: Some(1),
        }
    }

    #[test]
    fn an_event_is_lost_when_no_attempt_was_taken_and_its_latest_is_recent() {
        let now = OffsetDateTime::now_utc();
        let since = at(60, now);
        let attempts = [
            attempt(1, "taken-later", 502, at(30, now)),
            attempt(2, "taken-later", 202, at(20, now)),
            attempt(3, "lost", 0, at(40, now)),
            attempt(4, "lost", 503, at(10, now)),
            attempt(5, "old", 502, at(90, now)),
            attempt(6, "refused", 401, at(5, now)),
        ];
        let lost: Vec<(String, u64)> = lost_events(&attempts, since)
            .into_iter()
            .map(|(guid, latest)| (guid, latest.id))
            .collect();
        assert_eq!(
            lost,
            [("lost".to_string(), 4), ("refused".to_string(), 6)],
            "the latest attempt of each event nothing took, back to `since`"
        );
    }

    #[test]
    fn a_fresh_failure_of_the_newest_attempt_holds_the_sweep() {
        let now = OffsetDateTime::now_utc();
        let lost = attempt(1, "lost", 502, at(40, now));
        let fresh = attempt(2, "new", 503, at(2, now));
        assert_eq!(
            still_failing(&[lost.clone(), fresh.clone()], now).map(|a| a.id),
            Some(2)
        );
        let taken = attempt(3, "ok", 202, at(1, now));
        assert!(still_failing(&[lost.clone(), fresh, taken], now).is_none());
        let refused = attempt(4, "refused", 401, at(1, now));
        assert!(still_failing(&[lost.clone(), refused], now).is_none());
        assert!(
            still_failing(&[lost], now).is_none(),
            "a failure older than a sweep's interval is no evidence"
        );
    }

    #[test]
    fn only_failures_that_can_pass_later_are_repeated() {
        for status in [0, 429, 500, 502, 503, 504] {
            assert!(worth_repeating(status), "{status}");
        }
        for status in [400, 401, 403, 404, 413, 422] {
            assert!(!worth_repeating(status), "{status}");
        }
    }
}
