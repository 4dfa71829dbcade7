//! A cap on glibc's malloc arenas for the long-running `parley serve`.
//!
//! glibc gives a thread that finds the arenas busy an arena of its own, up to eight per
//! core, and keeps what is freed in each for reuse. `parley serve`'s work waits on the
//! network, so more arenas buy no speed, only memory held after a peak: in the load bench
//! (`cargo bench -p parley-tests --bench load`, 1,000 deliveries) the server held
//! 43.3 MiB at its peak and after; with two arenas 26.9 MiB (one: 25.0 MiB), at the same
//! throughput. Two is what `MALLOC_ARENA_MAX=2` gives; an operator's own
//! `MALLOC_ARENA_MAX` wins. Other allocators and platforms are left alone.

/// Cap the arenas at two unless `MALLOC_ARENA_MAX` is set. Call it before the runtime's
/// threads start, so none has an arena of its own yet.
pub fn cap_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt sets a tuning parameter of the allocator and has no memory-safety
        // preconditions; it is called once, before any other thread exists.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}
