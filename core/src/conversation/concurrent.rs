//! Running two independent calls at once. Each GitHub call costs a round trip (tens of
//! milliseconds from Lambda, more under load); the PR and the comment listings do not
//! depend on each other, so a turn waits for the slower one instead of their sum. The
//! domain crate has no async runtime dependency, so this is a tiny std-only join.

use std::future::{Future, poll_fn};
use std::task::Poll;

/// Poll both futures to completion concurrently on the current task.
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

/// Poll every future to completion concurrently on the current task; outputs in input
/// order. For a handful of store writes at a time (callers bound the batch).
pub async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut pending: Vec<_> = futures.into_iter().map(|f| Some(Box::pin(f))).collect();
    let mut done: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    poll_fn(|cx| {
        for (slot, out) in pending.iter_mut().zip(done.iter_mut()) {
            if let Some(future) = slot
                && let Poll::Ready(value) = future.as_mut().poll(cx)
            {
                *out = Some(value);
                *slot = None;
            }
        }
        if pending.iter().all(Option::is_none) {
            Poll::Ready(done.iter_mut().filter_map(Option::take).collect())
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

    #[tokio::test]
    async fn both_run_at_once() {
        let started = Instant::now();
        let (a, b) = join2(
            async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                1
            },
            async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                2
            },
        )
        .await;
        assert_eq!((a, b), (1, 2));
        assert!(started.elapsed() < Duration::from_millis(95));
    }

    #[tokio::test]
    async fn all_run_at_once_and_answer_in_order() {
        let started = Instant::now();
        let futures: Vec<_> = (0..4u64)
            .map(|i| async move {
                tokio::time::sleep(Duration::from_millis(60 - i * 10)).await;
                i
            })
            .collect();
        assert_eq!(join_all(futures).await, vec![0, 1, 2, 3]);
        assert!(started.elapsed() < Duration::from_millis(150));
        let none: Vec<std::future::Ready<u8>> = Vec::new();
        assert!(join_all(none).await.is_empty());
    }
}
