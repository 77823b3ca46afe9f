//! The waiting policy, one for the whole library: spin a little (a peer on another core answers
//! within a cache-line transfer), then `sched_yield` (with more PEs than cores the peer needs our
//! core), then sleep in short naps that grow to a bound (a long wait must not burn a core).
//! Waits in Rust use [`Backoff`]; the facade's waits (wait_until, signals) drive the same
//! policy through the bridge, keeping their own condition check.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Spins (one `pause` each, the condition checked between them) before the first yield, about
/// 50 us; 0 when PEs outnumber cores (spinning then only delays the peer we wait for, which
/// needs our core). One pause per check keeps the reaction to a peer's store within a few
/// nanoseconds of the cache-line transfer itself.
const SPIN_BUDGET: u32 = 2048;
static SPINS: AtomicU32 = AtomicU32::new(SPIN_BUDGET);
const YIELD_FOR_NS: u64 = 20_000_000;
const FIRST_NAP_NS: u64 = 20_000;
const LONGEST_NAP_NS: u64 = 1_000_000;

/// True when a node running `local_pes` PEs has fewer cores than PEs.
pub fn oversubscribed(local_pes: usize) -> bool {
    local_pes > std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Chooses the spin phase for a node running `local_pes` PEs.
pub fn configure(local_pes: usize) {
    SPINS.store(
        if oversubscribed(local_pes) { 0 } else { 64 },
        Ordering::Relaxed,
    );
}

/// Monotonic nanoseconds since the first call, never 0 (0 marks "not yet" in [`Backoff`]).
/// Through std (libc's clock_gettime), not rustix's own vDSO reader, which crashes under
/// valgrind; programs using this library must stay debuggable with valgrind.
fn now_ns() -> u64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let epoch = *EPOCH.get_or_init(std::time::Instant::now);
    epoch.elapsed().as_nanos() as u64 + 1
}

/// State of one wait; call [`Backoff::snooze`] each time the condition is still false.
#[derive(Debug, Default, Clone, Copy)]
pub struct Backoff {
    /// Snoozes spent spinning so far.
    pub spins: u32,
    /// Monotonic time (ns) of the first yield; 0 before.
    pub yielding_since_ns: u64,
    /// Length of the last nap (ns); 0 before the first.
    pub nap_ns: u64,
}

impl Backoff {
    /// A fresh wait.
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits a little before the caller checks its condition again.
    pub fn snooze(&mut self) {
        if self.spins < SPINS.load(Ordering::Relaxed) {
            self.spins += 1;
            std::hint::spin_loop();
            return;
        }
        let now = now_ns();
        if self.yielding_since_ns == 0 {
            self.yielding_since_ns = now;
        }
        if now - self.yielding_since_ns < YIELD_FOR_NS {
            std::thread::yield_now();
            return;
        }
        self.nap_ns = if self.nap_ns == 0 {
            FIRST_NAP_NS
        } else {
            (self.nap_ns * 2).min(LONGEST_NAP_NS)
        };
        std::thread::sleep(Duration::from_nanos(self.nap_ns));
    }
}

/// Waits until `done()` is true.
pub fn until(mut done: impl FnMut() -> bool) {
    let mut backoff = Backoff::new();
    while !done() {
        backoff.snooze();
    }
}

/// Waits until `done()` is true (returns true) or `deadline` has passed (returns false); no
/// deadline waits as long as it takes. The clock is read only once spinning is over.
pub fn until_deadline(mut done: impl FnMut() -> bool, deadline: Option<Instant>) -> bool {
    let Some(deadline) = deadline else {
        until(done);
        return true;
    };
    let mut backoff = Backoff::new();
    while !done() {
        if backoff.yielding_since_ns != 0 && Instant::now() >= deadline {
            return false;
        }
        backoff.snooze();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn backoff_reaches_naps_and_bounds_them() {
        let mut b = Backoff::new();
        let start = std::time::Instant::now();
        while b.nap_ns < LONGEST_NAP_NS {
            b.snooze();
        }
        assert!(start.elapsed() >= Duration::from_nanos(YIELD_FOR_NS));
        b.snooze();
        assert_eq!(b.nap_ns, LONGEST_NAP_NS);
    }

    #[test]
    fn until_deadline_gives_up_at_the_deadline() {
        let start = Instant::now();
        let deadline = start + Duration::from_millis(50);
        assert!(!until_deadline(|| false, Some(deadline)));
        assert!(Instant::now() >= deadline);
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(until_deadline(|| true, Some(start)));
        let mut calls = 0;
        assert!(until_deadline(
            || {
                calls += 1;
                calls > 3
            },
            None
        ));
    }

    #[test]
    fn until_sees_another_threads_store() {
        let flag = Arc::new(AtomicBool::new(false));
        let setter = {
            let flag = flag.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(30));
                flag.store(true, Ordering::Release);
            })
        };
        until(|| flag.load(Ordering::Acquire));
        setter.join().unwrap();
    }
}
