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

/// What a held request does once the test is done with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Held,
    /// Served as usual.
    Released,
    /// Its caller is gone (the test killed it): a request held before applying never
    /// takes effect, as one that never reached GitHub would not.
    Abandoned,
}

/// Set off by the first `catches` matching requests (later ones pass untouched), each of
/// which is held until [`Tripwire::release`] or [`Tripwire::abandon`].
pub struct Tripwire {
    point: HoldPoint,
    left: AtomicUsize,
    caught: AtomicUsize,
    arrived: Notify,
    fate: watch::Sender<Fate>,
}

impl Tripwire {
    pub(crate) fn new(point: HoldPoint, catches: usize) -> Arc<Self> {
        Arc::new(Tripwire {
            point,
            left: AtomicUsize::new(catches),
            caught: AtomicUsize::new(0),
            arrived: Notify::new(),
            fate: watch::channel(Fate::Held).0,
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

    /// Called by the fake for a caught request: signal the test, then wait for its
    /// decision. `true`: go on as usual; `false`: the request was abandoned.
    pub(crate) async fn hold(&self) -> bool {
        let mut fate = self.fate.subscribe();
        self.caught.fetch_add(1, Ordering::SeqCst);
        self.arrived.notify_waiters();
        match fate.wait_for(|f| *f != Fate::Held).await {
            Ok(fate) => *fate == Fate::Released,
            Err(_) => false,
        }
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
        self.fate.send_replace(Fate::Released);
    }

    /// Drop every held request (and any later catch): a request held before applying
    /// changes nothing and fails. For after a kill, when nobody waits for the answer and a
    /// late write would be one the dead process never made.
    pub fn abandon(&self) {
        self.fate.send_replace(Fate::Abandoned);
    }
}
