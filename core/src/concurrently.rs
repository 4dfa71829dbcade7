//! Waiting on a few independent futures at once, on the caller's task.
//!
//! Each GitHub call or store write costs a round trip (tens of milliseconds from Lambda,
//! more under load); calls that do not depend on each other cost the slowest one, not
//! their sum. The domain has no async runtime of its own (it runs under tokio in the
//! Lambda and `parley serve`, but does not depend on it), so this is the part of the
//! `futures` crate it needs. The futures run on the task that awaits them, so nothing
//! needs `'static` or a runtime handle.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::{Context, Poll};

/// A future of any type, for a list of different ones (the review's passes).
pub type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Both outputs.
pub async fn join2<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let mut a = Box::pin(a);
    let mut b = Box::pin(b);
    let mut out_a = None;
    let mut out_b = None;
    poll_fn(|cx| {
        if out_a.is_none()
            && let Poll::Ready(value) = a.as_mut().poll(cx)
        {
            out_a = Some(value);
        }
        if out_b.is_none()
            && let Poll::Ready(value) = b.as_mut().poll(cx)
        {
            out_b = Some(value);
        }
        match (out_a.take(), out_b.take()) {
            (Some(a), Some(b)) => Poll::Ready((a, b)),
            (a, b) => {
                out_a = a;
                out_b = b;
                Poll::Pending
            }
        }
    })
    .await
}

/// Every future's output, in input order. For a handful at a time (callers bound the
/// batch).
pub async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
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
pub async fn join_all_until<F: Future>(
    futures: Vec<F>,
    mut expired: impl FnMut(&mut Context<'_>) -> bool,
) -> Vec<Option<F::Output>> {
    let mut pending: Vec<Option<Pin<Box<F>>>> =
        futures.into_iter().map(|f| Some(Box::pin(f))).collect();
    let mut done: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    poll_fn(move |cx: &mut Context<'_>| {
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

    async fn after(ms: u64, value: u64) -> u64 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        value
    }

    #[tokio::test]
    async fn both_run_at_once() {
        let started = Instant::now();
        assert_eq!(join2(after(50, 1), after(50, 2)).await, (1, 2));
        assert!(started.elapsed() < Duration::from_millis(95));
    }

    #[tokio::test]
    async fn all_run_at_once_and_answer_in_order() {
        let started = Instant::now();
        let futures: Vec<_> = (0..4u64).map(|i| after(60 - i * 10, i)).collect();
        assert_eq!(join_all(futures).await, vec![0, 1, 2, 3]);
        assert!(started.elapsed() < Duration::from_millis(110));
        let none: Vec<std::future::Ready<u8>> = Vec::new();
        assert!(join_all(none).await.is_empty());
    }

    #[tokio::test]
    async fn what_is_pending_when_told_to_stop_is_dropped() {
        let stop_at = Instant::now() + Duration::from_millis(30);
        let futures: Vec<Boxed<'_, u64>> = vec![Box::pin(after(10, 1)), Box::pin(after(500, 2))];
        let outputs = join_all_until(futures, |cx| {
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
