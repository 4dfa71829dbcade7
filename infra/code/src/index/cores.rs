//! Work spread over the machine's cores: the word index's first read and the parses a
//! question leads to, without holding up the async runtime the questions come from.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Run `work` (parsing: seconds for a large repository's first questions) without
/// holding up the runtime's other tasks. The questions come from async code; on a
/// multi-threaded runtime (the Lambda functions, `parley serve`, whose webhook must keep
/// answering GitHub meanwhile) the thread's other tasks move to another thread while it
/// parses. On a current-thread runtime, or outside one, it runs as is.
pub(super) fn off_the_runtime<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

pub(super) fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8)
}

/// `work(i)` for every `i` below `count`, on all cores, in order. Each thread takes the
/// next item not yet taken: file sizes vary by orders of magnitude, so fixed shares
/// would leave one core with the big ones.
pub(super) fn on_all_cores<T: Send>(count: usize, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, T)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads())
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let at = next.fetch_add(1, Ordering::Relaxed);
                        if at >= count {
                            return out;
                        }
                        out.push((at, work(at)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().unwrap_or_default())
            .collect()
    });
    done.sort_by_key(|(at, _)| *at);
    done.into_iter().map(|(_, t)| t).collect()
}
