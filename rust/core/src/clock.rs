//! The node's monotonic clock: one time line for every process of the node, which the waits
//! stamp their naps with and the transports their progress. Imports nothing of the crate.

/// The node's monotonic clock in nanoseconds: the same clock in every process of the node,
/// unlike a process's own `Instant` epoch. 0 only if the clock cannot be read.
pub(crate) fn node_clock_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// The node's coarse monotonic clock in nanoseconds (`CLOCK_MONOTONIC_COARSE`: the time of the
/// last tick, read without a system call): for checks made at most every few milliseconds on
/// a hot path. 0 only if the clock cannot be read.
pub(crate) fn coarse_clock_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC_COARSE)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `ts` is.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
