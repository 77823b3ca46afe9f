//! The waiting policy, one for the whole library: spin a little (a peer on another core answers
//! within a cache-line transfer), then `sched_yield` (with more PEs than cores the peer needs our
//! core), then sleep in short naps that grow to a bound (a long wait must not burn a core).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Spins before the first yield; 0 when PEs outnumber cores (spinning then only delays the
/// peer we wait for, which needs our core).
static SPINS: AtomicU32 = AtomicU32::new(64);
const YIELD_FOR: Duration = Duration::from_millis(20);
const FIRST_NAP: Duration = Duration::from_micros(20);
const LONGEST_NAP: Duration = Duration::from_millis(1);

/// Chooses the spin phase for a node running `local_pes` PEs.
pub fn configure(local_pes: usize) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    SPINS.store(if local_pes > cores { 0 } else { 64 }, Ordering::Relaxed);
}

/// State of one wait; call [`Backoff::snooze`] each time the condition is still false.
#[derive(Debug, Default)]
pub struct Backoff {
    spins: u32,
    yielding_since: Option<Instant>,
    nap: Duration,
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
            for _ in 0..(1 << self.spins.min(4)) {
                std::hint::spin_loop();
            }
            return;
        }
        let since = *self.yielding_since.get_or_insert_with(Instant::now);
        if since.elapsed() < YIELD_FOR {
            std::thread::yield_now();
            return;
        }
        self.nap = if self.nap.is_zero() {
            FIRST_NAP
        } else {
            (self.nap * 2).min(LONGEST_NAP)
        };
        std::thread::sleep(self.nap);
    }
}

/// Waits until `done()` is true.
pub fn until(mut done: impl FnMut() -> bool) {
    let mut backoff = Backoff::new();
    while !done() {
        backoff.snooze();
    }
}
