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
}
