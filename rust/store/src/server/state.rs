//! The key-value state of one job: entries (values and passed descriptors) within
//! [`VALUE_BUDGET`], and the waits for keys not written yet, each woken only by a write of its
//! own key. Must never touch a socket: callers release the lock before any I/O.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Condvar, MutexGuard};
use std::time::{Duration, Instant};

use super::{PeerStatus, Shared};
use crate::wire::MAX_VALUE_LEN;

/// Bytes of values the store keeps at once, keys and `ENTRY_OVERHEAD` included: the job's
/// own traffic (identities, addresses, layouts, rounds of barriers and allgathers, deleted
/// once done) is a small fraction of it even for thousands of PEs. A write that would pass it
/// is answered with an error, and nothing is stored.
pub const VALUE_BUDGET: usize = 8 * MAX_VALUE_LEN;

/// What one stored entry is charged beyond its key and value: its map slot and allocations.
pub(super) const ENTRY_OVERHEAD: usize = 64;

/// Key-value state of the job. Finished barrier and allgather rounds are removed by the
/// clients (DELETE_PREFIX).
pub(super) struct State {
    pub(super) entries: HashMap<String, Entry>,
    /// Who waits for which absent key: a write wakes only that key's waiters, so a start-up
    /// where N PEs each write once while N wait costs O(N) wake-ups, not N x N.
    pub(super) waiters: HashMap<String, KeyWaiters>,
    /// Times a waiting connection thread woke up, for any reason: what waiting costs.
    pub(super) wakeups: usize,
    /// Bytes `entries` is charged ([`State::charge`]), within [`VALUE_BUDGET`] for what PEs
    /// write.
    pub(super) held: usize,
    /// Indexed by rank; `None` until [`Server::serve_unix`](super::Server::serve_unix) is
    /// called for that rank, or a connection from
    /// [`Server::serve_accepted`](super::Server::serve_accepted) says HELLO as that rank.
    pub(super) peers: Vec<Option<PeerStatus>>,
    /// Who holds each rank's place (indexed by rank, as `peers`), to name it to a later HELLO
    /// for the same rank: that PE then knows whom to look for.
    pub(super) holders: Vec<Option<String>>,
    /// Groups whose members come and go (`groups`).
    pub(super) groups: super::groups::Groups,
    /// Number of the last group event, across groups.
    pub(super) group_seq: u64,
}

/// The connection threads waiting for one key, and the condition variable they wait on
/// (always with [`Shared::state`]'s lock).
pub(super) struct KeyWaiters {
    pub(super) written: Arc<Condvar>,
    pub(super) count: usize,
}

impl State {
    /// What keeping `entry` under a key of `key_len` bytes is charged.
    pub(super) fn charge(key_len: usize, entry: &Entry) -> usize {
        let value = match entry {
            Entry::Bytes(v) => v.len(),
            Entry::Fd(_) => 0,
        };
        ENTRY_OVERHEAD + key_len + value
    }

    /// Stores `entry` under `key` and wakes the threads waiting for that key, and no other.
    /// Returns the entry it replaced. Does not look at [`VALUE_BUDGET`]: PEs' writes are
    /// checked by [`State::check_room`] first, the store's own notes are small.
    pub(super) fn put(&mut self, key: String, entry: Entry) -> Option<Entry> {
        self.notify(&key);
        self.held += Self::charge(key.len(), &entry);
        let key_len = key.len();
        let old = self.entries.insert(key, entry);
        if let Some(old) = &old {
            self.held -= Self::charge(key_len, old);
        }
        old
    }

    /// Whether `value_len` bytes under `key` fit [`VALUE_BUDGET`], counting the room the
    /// value it replaces gives back; else the error to answer with.
    pub(super) fn check_room(&self, op: &str, key: &str, value_len: usize) -> Result<(), String> {
        let freed = self
            .entries
            .get(key)
            .map_or(0, |old| Self::charge(key.len(), old));
        let wanted = ENTRY_OVERHEAD + key.len() + value_len;
        if self.held - freed + wanted <= VALUE_BUDGET {
            return Ok(());
        }
        Err(format!(
            "{op} of a {value_len}-byte value under '{key}' does not fit: the store holds \
             {} bytes of keys and values, at most {VALUE_BUDGET} (delete keys no longer needed)",
            self.held
        ))
    }

    /// Removes `key`; returns its entry.
    pub(super) fn remove(&mut self, key: &str) -> Option<Entry> {
        let old = self.entries.remove(key)?;
        self.notify(key);
        self.held -= Self::charge(key.len(), &old);
        Some(old)
    }

    /// Removes every key starting with `prefix`; returns how many.
    pub(super) fn remove_prefix(&mut self, prefix: &str) -> usize {
        let (mut count, mut bytes) = (0, 0);
        let waiters = &self.waiters;
        self.entries.retain(|k, e| {
            let keep = !k.starts_with(prefix);
            if !keep {
                count += 1;
                bytes += Self::charge(k.len(), e);
                // A removal is a change to whoever watches the key.
                if let Some(w) = waiters.get(k) {
                    w.written.notify_all();
                }
            }
            keep
        });
        self.held -= bytes;
        count
    }

    /// Registers one waiter for `key`; returns what to wait on. Pair with [`State::unwait`].
    pub(super) fn wait_on(&mut self, key: &str) -> Arc<Condvar> {
        let waiters = self
            .waiters
            .entry(key.to_string())
            .or_insert_with(|| KeyWaiters {
                written: Arc::new(Condvar::new()),
                count: 0,
            });
        waiters.count += 1;
        Arc::clone(&waiters.written)
    }

    /// Withdraws one waiter for `key` registered by [`State::wait_on`].
    pub(super) fn unwait(&mut self, key: &str) {
        if let Some(waiters) = self.waiters.get_mut(key) {
            waiters.count -= 1;
            if waiters.count == 0 {
                self.waiters.remove(key);
            }
        }
    }
}

/// One stored value. Shared so that a reply can be sent after the lock is released.
#[derive(Clone)]
pub(super) enum Entry {
    Bytes(Arc<[u8]>),
    Fd(Arc<OwnedFd>),
}

impl Shared {
    pub(super) fn insert(&self, key: String, entry: Entry) {
        let old = self.lock().put(key, entry);
        drop(old);
    }

    /// Waits until the keys `prefix0` .. `prefix{count-1}` all exist or `timeout` passes (an
    /// unrepresentable deadline waits forever). Returns their entries in index order, or the
    /// indices still absent at the timeout. It waits only for the first key not seen yet and
    /// is woken only by writes of that key, so a whole wait costs `count` lookups and about
    /// `count` wake-ups: a gather by every PE of a job is O(N) work for each. A key seen and
    /// later removed still counts as seen.
    pub(super) fn wait_for_all(
        &self,
        prefix: &str,
        count: u32,
        timeout: Duration,
    ) -> std::result::Result<Vec<Entry>, Vec<u32>> {
        let deadline = Instant::now().checked_add(timeout);
        let mut got = Vec::with_capacity(count as usize);
        let mut key = String::with_capacity(prefix.len() + 10);
        let mut state = self.lock();
        loop {
            while got.len() < count as usize {
                key.clear();
                key.push_str(prefix);
                key.push_str(&got.len().to_string());
                match state.entries.get(&key) {
                    Some(entry) => got.push(entry.clone()),
                    None => break,
                }
            }
            if got.len() == count as usize {
                return Ok(got);
            }
            let in_time;
            (state, in_time) = Self::wait_key(state, &key, deadline);
            if !in_time {
                let missing = (got.len() as u32..count)
                    .filter(|i| !state.entries.contains_key(&format!("{prefix}{i}")))
                    .collect();
                return Err(missing);
            }
        }
    }

    /// Waits until `key` exists or `timeout` passes (an unrepresentable deadline waits forever).
    pub(super) fn wait_for(&self, key: &str, timeout: Duration) -> Option<Entry> {
        let deadline = Instant::now().checked_add(timeout);
        let mut state = self.lock();
        loop {
            if let Some(entry) = state.entries.get(key) {
                return Some(entry.clone());
            }
            let in_time;
            (state, in_time) = Self::wait_key(state, key, deadline);
            if !in_time {
                return None;
            }
        }
    }

    /// Sleeps, with the state's lock released meanwhile, until `key` is written or `deadline`
    /// passes (`None`: never); a write of any other key does not wake it. Returns the lock
    /// again and whether the deadline had not passed on entry (the caller looks again either
    /// way: a wake-up may be spurious, and the key may have come as time ran out).
    pub(super) fn wait_key<'a>(
        mut state: MutexGuard<'a, State>,
        key: &str,
        deadline: Option<Instant>,
    ) -> (MutexGuard<'a, State>, bool) {
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if left.is_some_and(|left| left.is_zero()) {
            return (state, false);
        }
        let written = state.wait_on(key);
        state = match left {
            None => written.wait(state).unwrap_or_else(|e| e.into_inner()),
            Some(left) => {
                written
                    .wait_timeout(state, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        };
        state.unwait(key);
        state.wakeups += 1;
        (state, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::tests::*;

    use crate::wire::{self};
    use crate::{BootstrapError, Client, Server};

    use std::os::fd::AsFd;
    use std::thread;

    #[test]
    fn an_allgather_costs_each_pe_a_few_requests_whatever_the_job_size() {
        let n = 16;
        let (server, _events, ends) = job(n);
        let clients: Vec<Client> = (ends.into_iter().enumerate())
            .map(|(rank, fd)| Client::connect_inherited(fd, rank as u32, n, T).unwrap())
            .collect();
        let before = server.requests_served();
        let handles: Vec<_> = (clients.into_iter())
            .map(|c| {
                thread::spawn(move || {
                    let all = c.allgather(&[c.rank() as u8; 3], T).unwrap();
                    let want: Vec<Vec<u8>> = (0..n as u8).map(|r| vec![r; 3]).collect();
                    assert_eq!(all, want);
                    let fd =
                        rustix::fs::memfd_create("t", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
                    rustix::fs::ftruncate(&fd, u64::from(c.rank())).unwrap();
                    c.put_fd(&format!("seg/{}", c.rank()), fd.as_fd()).unwrap();
                    let fds = c.gather_fds("seg/", n, T).unwrap();
                    for (pe, fd) in fds.iter().enumerate() {
                        assert_eq!(rustix::fs::fstat(fd).unwrap().st_size, pe as i64);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        // SET, GATHER and ADD (the last PE's DELETE_PREFIX too), then PUT_FD and GATHER_FD:
        // one GET per peer would be n - 1 more for each PE.
        let served = server.requests_served() - before;
        assert!(
            served <= 5 * n as usize + 1,
            "{served} requests for {n} PEs"
        );
    }

    #[test]
    fn a_write_wakes_only_the_waiters_of_its_key() {
        let n = 8;
        let (server, _events, mut ends) = job(n + 1);
        let writer = Client::connect_inherited(ends.pop().unwrap(), n, n + 1, T).unwrap();
        let handles: Vec<_> = (ends.into_iter().enumerate())
            .map(|(rank, fd)| {
                thread::spawn(move || {
                    let rank = rank as u32;
                    let c = Client::connect_inherited(fd, rank, n + 1, T).unwrap();
                    let key = if rank.is_multiple_of(2) {
                        "gets/"
                    } else {
                        "gathers/"
                    };
                    if rank.is_multiple_of(2) {
                        assert_eq!(c.get(&format!("{key}{rank}"), T).unwrap(), [rank as u8]);
                    } else {
                        let all = c.gather(&format!("{key}{rank}/"), 2, T).unwrap();
                        assert_eq!(all, [[rank as u8], [rank as u8 + 1]]);
                    }
                })
            })
            .collect();
        let start = Instant::now();
        while server.shared.lock().waiters.len() < n as usize {
            assert!(start.elapsed() < T, "the waiters never started waiting");
            thread::sleep(Duration::from_millis(1));
        }
        for i in 0..50 {
            writer.set(&format!("other/{i}"), b"x").unwrap();
            writer.add("counter", 1).unwrap();
        }
        for rank in 0..n {
            if rank % 2 == 0 {
                writer.set(&format!("gets/{rank}"), &[rank as u8]).unwrap();
            } else {
                writer
                    .set(&format!("gathers/{rank}/0"), &[rank as u8])
                    .unwrap();
                writer
                    .set(&format!("gathers/{rank}/1"), &[rank as u8 + 1])
                    .unwrap();
            }
        }
        for h in handles {
            h.join().unwrap();
        }
        // One wake-up per key waited for (n / 2 GETs, two keys per gather); a few spurious
        // ones are allowed. Waking every waiter on every write would be about 100 x n.
        let wakeups = server.wakeups();
        assert!(wakeups <= 3 * n as usize / 2 + 4, "{wakeups} wake-ups");
        assert!(server.shared.lock().waiters.is_empty());
    }

    #[test]
    fn a_gather_names_the_first_key_missing_and_keeps_the_connection() {
        let (_server, _events, mut ends) = job(1);
        let c = Client::connect_inherited(ends.pop().unwrap(), 0, 1, T).unwrap();
        c.set("g/0", b"a").unwrap();
        c.set("g/2", b"c").unwrap();
        let err = c.gather("g/", 4, Duration::from_millis(50)).unwrap_err();
        assert!(
            matches!(err, BootstrapError::Absent { rank: 1, .. }),
            "{err}"
        );
        c.set("g/1", b"b").unwrap();
        c.set("g/3", b"").unwrap();
        let all = c.gather("g/", 4, T).unwrap();
        assert_eq!(all, [&b"a"[..], b"b", b"c", b""]);
        // A value where a descriptor is expected is refused, the connection still usable.
        let err = c.gather_fds("g/", 4, T).unwrap_err();
        assert!(matches!(err, BootstrapError::Refused { .. }), "{err}");
        // Values too large for one reply frame are read one by one.
        let big = vec![7u8; wire::MAX_VALUE_LEN / 2 + 1];
        for i in 0..3 {
            c.set(&format!("big/{i}"), &big).unwrap();
        }
        let all = c.gather("big/", 3, T).unwrap();
        assert!(all.iter().all(|v| *v == big));
    }

    #[test]
    fn get_waits_for_a_later_set() {
        let (_server, _events, mut ends) = job(2);
        let b = Client::connect_inherited(ends.pop().unwrap(), 1, 2, T).unwrap();
        let a = Client::connect_inherited(ends.pop().unwrap(), 0, 2, T).unwrap();
        let waiter = thread::spawn(move || a.get("late", T).unwrap());
        // Whether the GET arrives before or after the SET, it must see the value.
        b.set("late", b"here").unwrap();
        assert_eq!(waiter.join().unwrap(), b"here");
    }

    #[test]
    fn get_timeout_names_the_key_and_keeps_the_connection() {
        let (_server, _events, mut ends) = job(1);
        let c = Client::connect_inherited(ends.pop().unwrap(), 0, 1, T).unwrap();
        let err = c.get("never/there", Duration::from_millis(50)).unwrap_err();
        assert!(
            matches!(&err, BootstrapError::Timeout { key, .. } if key == "never/there"),
            "{err}"
        );
        assert!(err.to_string().contains("never/there"));
        let err = c.get_fd("no/fd", Duration::from_millis(20)).unwrap_err();
        assert!(matches!(err, BootstrapError::Timeout { .. }), "{err}");
        c.set("x", b"1").unwrap();
        assert_eq!(c.get("x", T).unwrap(), b"1");
    }

    /// Bytes the store's entries are charged right now.
    fn held(server: &Server) -> usize {
        server.shared.lock().held
    }

    /// What the store keeps is charged to [`VALUE_BUDGET`] and given back by every way a key
    /// goes (replaced, deleted, deleted by prefix): writes past the budget are refused, whatever
    /// the request, and rounds of barriers and allgathers leave nothing charged behind.
    #[test]
    fn stored_values_stay_within_their_budget() {
        let n = 2;
        let (server, _events, ends) = job(n);
        let pes: Vec<Client> = (ends.into_iter().enumerate())
            .map(|(rank, fd)| Client::connect_inherited(fd, rank as u32, n, T).unwrap())
            .collect();
        let empty = held(&server);
        let big = vec![0x5a; wire::MAX_VALUE_LEN];
        let fit = VALUE_BUDGET / (wire::MAX_VALUE_LEN + ENTRY_OVERHEAD + 8);
        for i in 0..fit {
            pes[i % 2].set(&format!("big/{i}"), &big).unwrap();
        }
        // Replacing a value with one of the same size needs no more room.
        pes[1].set("big/0", &big).unwrap();
        let full = |e: BootstrapError| {
            let text = e.to_string();
            assert!(
                text.contains("does not fit") && text.contains(&VALUE_BUDGET.to_string()),
                "{text}"
            );
        };
        full(pes[0].set("one/more", &big).unwrap_err());
        full(pes[1].cas("one/more", None, &big).unwrap_err());
        pes[0].set("half", &big[..wire::MAX_VALUE_LEN / 2]).unwrap();
        full(
            pes[1]
                .append("half", &big[..wire::MAX_VALUE_LEN / 2])
                .unwrap_err(),
        );
        // Each PE reads what the other wrote, whole.
        assert_eq!(pes[0].get("big/1", T).unwrap(), big);
        assert_eq!(
            pes[1].get("half", T).unwrap(),
            &big[..wire::MAX_VALUE_LEN / 2]
        );
        pes[1].delete("half").unwrap();
        pes[0].delete("big/0").unwrap();
        pes[1].set("one/more", &big).unwrap();
        assert_eq!(pes[0].delete_prefix("big/").unwrap(), fit - 1);
        pes[0].delete("one/more").unwrap();
        assert_eq!(held(&server), empty);
        let rounds: Vec<_> = pes
            .into_iter()
            .map(|c| {
                thread::spawn(move || {
                    for round in 0..50u8 {
                        c.barrier(T).unwrap();
                        let all = c.allgather(&[c.rank() as u8, round], T).unwrap();
                        assert_eq!(all, vec![vec![0, round], vec![1, round]]);
                    }
                })
            })
            .collect();
        for r in rounds {
            r.join().unwrap();
        }
        // The last barrier round's keys, a few bytes: not 50 rounds' worth.
        let left = held(&server) - empty;
        assert!(
            left < 8 * (ENTRY_OVERHEAD + 64),
            "{left} bytes still charged"
        );
    }
}
