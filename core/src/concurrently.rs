//! Waiting on a handful of futures at once, on the caller's task.
//!
//! The domain has no async runtime of its own (it runs under tokio in the Lambda and
//! `parley serve`, but does not depend on it), so this is the part of
//! `futures::join_all` it needs rather than the `futures` crate. The futures run
//! concurrently on the task that awaits them, so nothing needs `'static` or a runtime
//! handle.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

pub type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Every future's output, in input order.
pub async fn join_all<T>(futures: Vec<Boxed<'_, T>>) -> Vec<T> {
    join_all_until(futures, |_| false)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// Poll every future until all are done or `expired` says to stop (it is asked on every
/// wake-up, and must arrange its own wake-up for when it will say so). Outputs in input
/// order, `None` for a future still pending then; dropping it cancels it (an HTTP request
/// in it is abandoned).
pub async fn join_all_until<T>(
    futures: Vec<Boxed<'_, T>>,
    mut expired: impl FnMut(&mut Context<'_>) -> bool,
) -> Vec<Option<T>> {
    let mut pending: Vec<Option<Boxed<'_, T>>> = futures.into_iter().map(Some).collect();
    let mut done: Vec<Option<T>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx: &mut Context<'_>| {
        for (slot, result) in pending.iter_mut().zip(done.iter_mut()) {
            if let Some(future) = slot
                && let Poll::Ready(output) = future.as_mut().poll(cx)
            {
                *result = Some(output);
                *slot = None;
            }
        }
        if pending.iter().all(Option::is_none) || expired(cx) {
            pending.iter_mut().for_each(|slot| *slot = None);
            Poll::Ready(done.iter_mut().map(Option::take).collect())
        } else {
            Poll::Pending
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn after(ms: u64, value: u32) -> Boxed<'static, u32> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            value
        })
    }

    #[tokio::test]
    async fn futures_run_at_once_and_come_back_in_input_order() {
        let started = Instant::now();
        let outputs = join_all(vec![after(60, 1), after(10, 2), after(40, 3)]).await;
        assert_eq!(outputs, [1, 2, 3]);
        assert!(
            started.elapsed() < Duration::from_millis(110),
            "{:?}",
            started.elapsed()
        );
        assert!(join_all(Vec::<Boxed<'_, u32>>::new()).await.is_empty());
    }

    #[tokio::test]
    async fn what_is_pending_when_told_to_stop_is_dropped() {
        let stop_at = Instant::now() + Duration::from_millis(30);
        let outputs = join_all_until(vec![after(10, 1), after(500, 2)], |cx| {
            let expired = Instant::now() >= stop_at;
            if !expired {
                // Ask again soon: a real deadline wakes the task itself.
                cx.waker().wake_by_ref();
            }
            expired
        })
        .await;
        assert_eq!(outputs, [Some(1), None]);
    }
}
