//! A tripwire the fakes set off when a chosen request arrives, holding its response until
//! the test lets go.
//!
//! Crash tests must kill `parley serve` at an exact point of a job (the model is thinking,
//! the reply was stored on GitHub but the answer has not come back). Sleeping and hoping
//! the worker has got there is flaky on a loaded machine; a held request is a point the
//! worker cannot pass until the test says so, and the signal tells the test it is there.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, watch};

/// Where a held request waits, relative to the fake applying it to its state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldPoint {
    /// Before anything changes: as if the request never reached the server.
    BeforeApplying,
    /// After the fake stored its effect (the comment exists, the review is listed), before
    /// the response goes back: the client cannot know its write landed.
    AfterApplying,
}

/// Set off by the first `catches` matching requests (later ones pass untouched), each of
/// which is held until [`Tripwire::release`].
pub struct Tripwire {
    point: HoldPoint,
    left: AtomicUsize,
    caught: AtomicUsize,
    arrived: Notify,
    released: watch::Sender<bool>,
}

impl Tripwire {
    pub(crate) fn new(point: HoldPoint, catches: usize) -> Arc<Self> {
        Arc::new(Tripwire {
            point,
            left: AtomicUsize::new(catches),
            caught: AtomicUsize::new(0),
            arrived: Notify::new(),
            released: watch::channel(false).0,
        })
    }

    pub fn point(&self) -> HoldPoint {
        self.point
    }

    /// Take one catch if any is left: the caller is then held.
    pub(crate) fn take(&self) -> bool {
        self.left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Called by the fake for a caught request: signal the test, then wait for release.
    pub(crate) async fn hold(&self) {
        let mut released = self.released.subscribe();
        self.caught.fetch_add(1, Ordering::SeqCst);
        self.arrived.notify_waiters();
        let _ = released.wait_for(|r| *r).await;
    }

    /// How many requests this tripwire has caught so far.
    pub fn caught(&self) -> usize {
        self.caught.load(Ordering::SeqCst)
    }

    /// Wait until at least `n` requests have been caught; panics after `timeout`, naming
    /// `what`, so a scenario that never reaches its crash point fails instead of hanging.
    pub async fn wait_caught(&self, n: usize, timeout: Duration, what: &str) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.arrived.notified();
            tokio::pin!(notified);
            // Register before checking, so a catch between the check and the wait wakes us.
            notified.as_mut().enable();
            if self.caught() >= n {
                return;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!("{what}: not reached within {timeout:?}");
            }
        }
    }

    /// Let every held request (and any later catch) go on.
    pub fn release(&self) {
        self.released.send_replace(true);
    }
}
