//! The waiting policy, one for the whole library: spin a little (a peer on another core answers
//! within a cache-line transfer), then `sched_yield` (with more PEs than cores the peer needs our
//! core), then sleep in short naps that grow to a bound (a long wait must not burn a core).
//! Waits in Rust use [`Backoff`]; the facade's waits (wait_until, signals) drive the same
//! policy through the bridge, keeping their own condition check.

use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::clock::node_clock_ns;

/// Spins (one `pause` each, the condition checked between them) before the first yield, about
/// 50 us; 0 when PEs outnumber cores (spinning then only delays the peer we wait for, which
/// needs our core). One pause per check keeps the reaction to a peer's store within a few
/// nanoseconds of the cache-line transfer itself.
const SPIN_BUDGET: u32 = 2048;
static SPINS: AtomicU32 = AtomicU32::new(SPIN_BUDGET);
const YIELD_FOR_NS: u64 = 20_000_000;
/// While spinning, the transport is progressed on every this many checks (and on every check
/// after): a peer on another node waits a few pauses longer, a mapped peer not at all.
const PROGRESS_EVERY_SPINS: u32 = 16;
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
            // While spinning, the transport every few checks, not at the first: a mapped
            // peer's store is seen within the spin, and one progress call costs more than a
            // cache-line transfer.
            if self.spins % PROGRESS_EVERY_SPINS == PROGRESS_EVERY_SPINS - 1 {
                super::view::progress();
            }
            self.spins += 1;
            std::hint::spin_loop();
            return;
        }
        super::view::progress();
        let now = now_ns();
        if self.yielding_since_ns == 0 {
            self.yielding_since_ns = now;
        }
        if now - self.yielding_since_ns < YIELD_FOR_NS || crate::transport::recently_active() {
            std::thread::yield_now();
            return;
        }
        self.nap_ns = if self.nap_ns == 0 {
            FIRST_NAP_NS
        } else {
            (self.nap_ns * 2).min(LONGEST_NAP_NS)
        };
        stamp_nap();
        std::thread::sleep(Duration::from_nanos(self.nap_ns));
    }
}

/// This PE's nap stamp in its own heap (null before start-up and after finalize): the node's
/// monotonic clock at its latest nap. Peers read it ([`napping`]) to tell a PE that is stuck in
/// a library wait from one that is computing, which never naps.
static NAP_STAMP: AtomicPtr<AtomicU64> = AtomicPtr::new(std::ptr::null_mut());

/// A PE whose last nap is older than this is not waiting in the library (a nap lasts at most
/// [`LONGEST_NAP_NS`]; the rest is room for a busy scheduler).
const NAPPING_WITHIN_NS: u64 = 250_000_000;

fn stamp_nap() {
    let word = NAP_STAMP.load(Ordering::Acquire);
    // SAFETY: a non-null pointer was published by `publish_naps` and points into this PE's
    // heap, which stays mapped until finalize has cleared the pointer again.
    if let Some(word) = unsafe { word.as_ref() } {
        word.store(node_clock_ns(), Ordering::Relaxed);
    }
}

/// Where this PE stamps its naps from now on (`None`: stop). The runtime publishes its heap's
/// word after start-up and clears it in finalize, before the heap is unmapped.
pub fn publish_naps(word: Option<&AtomicU64>) {
    let ptr = word.map_or(std::ptr::null_mut(), |w| (w as *const AtomicU64).cast_mut());
    NAP_STAMP.store(ptr, Ordering::Release);
}

/// True when the PE owning `stamp` (its nap stamp, read through its mapped heap) has napped in
/// a library wait within the last quarter second: one of its threads is waiting for a peer.
pub fn napping(stamp: &AtomicU64) -> bool {
    let last = stamp.load(Ordering::Relaxed);
    last != 0 && node_clock_ns().saturating_sub(last) < NAPPING_WITHIN_NS
}

/// Waits until `done()` is true.
pub fn until(mut done: impl FnMut() -> bool) {
    let mut backoff = Backoff::new();
    while !done() {
        backoff.snooze();
    }
}

/// Waits until `done()` is true (returns true) or `give_up()` is (returns false); without
/// `give_up` it waits as long as it takes. `give_up` is asked only between naps, so a wait
/// that ends within the spin and yield phases never pays for it.
pub fn until_or(mut done: impl FnMut() -> bool, give_up: Option<&mut dyn FnMut() -> bool>) -> bool {
    let Some(give_up) = give_up else {
        until(done);
        return true;
    };
    let mut backoff = Backoff::new();
    while !done() {
        if backoff.nap_ns != 0 && give_up() {
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
    fn until_or_gives_up_when_asked() {
        use std::time::Instant;
        let start = Instant::now();
        let deadline = start + Duration::from_millis(50);
        let mut past = || Instant::now() >= deadline;
        assert!(!until_or(|| false, Some(&mut past)));
        assert!(Instant::now() >= deadline);
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(until_or(|| true, Some(&mut || true)));
        let mut calls = 0;
        assert!(until_or(
            || {
                calls += 1;
                calls > 3
            },
            None
        ));
    }

    #[test]
    fn naps_are_stamped_where_published_and_only_there() {
        // Static: another test's thread may still stamp through the pointer just unpublished.
        static STAMP: AtomicU64 = AtomicU64::new(0);
        let stamp = &STAMP;
        assert!(!napping(stamp));
        publish_naps(Some(stamp));
        let mut b = Backoff::new();
        while b.nap_ns == 0 {
            b.snooze();
        }
        publish_naps(None);
        assert!(napping(stamp), "a wait that napped is seen napping");
        let seen = stamp.load(Ordering::Relaxed);
        b.snooze();
        assert_eq!(
            stamp.load(Ordering::Relaxed),
            seen,
            "no stamp once unpublished"
        );
        stamp.store(node_clock_ns() - 2 * NAPPING_WITHIN_NS, Ordering::Relaxed);
        assert!(!napping(stamp), "an old nap is not a wait now");
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
