//! Copies to the segments of peers of this node without the transport: each such peer's
//! segment is mapped at its place in the pool (`base + rank * max`), from the memfd the peer
//! passes over its node socket ([`Group::shared_file`], as Share Memory maps its peers), and a
//! copy to or from it is a range check and a `memcpy`: no call of the group, nothing to flush.
//!
//! - **Mapping.** A peer is mapped after a copy reached it through the transport (its first
//!   copy, so a member that joins late is mapped at the first copy to it, without any call of
//!   the others). A peer of another node (no file to map) stays with the transport.
//! - **Checks.** A mapped peer is reached directly while two things hold: the group's change
//!   count ([`Group::changes`]: a member left or went down, a withdrawal seen) is the one at
//!   which the transport last reached it, and that was less than [`LEASE_NS`] ago on the coarse
//!   clock. Otherwise the copy goes through the transport, which checks the member, its
//!   registration and its process (its node socket) and fails naming the rank; once it
//!   succeeds the peer is reached directly again. So a copy to a peer that left fails at the
//!   first copy after its withdrawal, and to a killed peer within a few milliseconds of its
//!   death (the lease, the node transport's poll, the coarse clock's tick), as through the
//!   transport alone; a copy in that interval lands in memory the dead process no longer uses
//!   (its file lives while mapped).
//! - **Unmapping.** A peer the transport failed to reach (its process ended, its registration
//!   withdrawn) has its place made inaccessible again ([`Reservation::release`]) after that
//!   copy; so has, when the count moved, each member that left or went down, by the group's
//!   events, which the next copy reads first. Both under the table's write lock, which waits
//!   for copies using it (they hold the read lock throughout). A mapping is installed only if the count did not
//!   move since its file was asked for, so a file of a member that went meanwhile is never
//!   mapped.
//!
//! The hot path reads the count (one atomic load), takes the table's read lock and the coarse
//! clock (no system call), and allocates nothing.

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use super::classify::Pool;
use super::va::Reservation;
use super::SEGMENT;
use crate::clock::coarse_clock_ns;
use crate::group::{Group, MemberEvent};
use crate::mapping::page_size;

/// How long, after the transport reached a mapped peer, copies go to it directly
/// (nanoseconds of the coarse monotonic clock): the node transport's liveness poll interval.
pub const LEASE_NS: u64 = crate::dynamic::node::POLL_INTERVAL_NS;

/// How a peer's segment is reached.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// Not known yet: through the transport, then mapped if it can be.
    Unknown,
    /// Mapped at its place: `len` bytes.
    Mapped(u64),
    /// Through the transport only (another node, or its file could not be mapped), asked
    /// again once the group's change count moved.
    Transport,
}

/// One rank's entry.
struct Entry {
    kind: Kind,
    /// The group's change count when the transport last reached the peer.
    changes: AtomicU64,
    /// Until when (coarse clock, ns) copies go directly.
    until: AtomicU64,
}

/// The same-node mappings of one object's peers.
pub struct Direct {
    table: RwLock<Vec<Entry>>,
    /// The group's change count whose events were read.
    seen: AtomicU64,
}

/// The place of `rank`'s segment in the pool.
fn place(pool: &Pool, rank: u32) -> usize {
    pool.base + rank as usize * pool.max as usize
}

impl Direct {
    /// A table for `world` ranks, none mapped.
    pub fn new(world: u32) -> Direct {
        let table = (0..world)
            .map(|_| Entry {
                kind: Kind::Unknown,
                changes: AtomicU64::new(0),
                until: AtomicU64::new(0),
            })
            .collect();
        Direct {
            table: RwLock::new(table),
            seen: AtomicU64::new(0),
        }
    }

    fn write(&self) -> RwLockWriteGuard<'_, Vec<Entry>> {
        self.table.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes `rank`'s place inaccessible again if it is mapped, and forgets how it is reached.
    fn forget(t: &mut [Entry], res: &Reservation, pool: &Pool, rank: u32) {
        let Some(e) = t.get_mut(rank as usize) else {
            return;
        };
        if let Kind::Mapped(len) = e.kind {
            res.release(
                place(pool, rank),
                len.next_multiple_of(page_size()) as usize,
            );
        }
        e.kind = Kind::Unknown;
        e.until.store(0, Ordering::Relaxed);
    }

    /// The group's change count, with the events up to it read: members that left or went
    /// down are unmapped. Call without holding [`Peers`] of this table.
    pub fn sweep(&self, g: &Group, res: &Reservation, pool: &Pool) -> u64 {
        let now = g.changes();
        if self.seen.load(Ordering::Acquire) == now {
            return now;
        }
        let mut t = self.write();
        while let Some(e) = g.next_event(Duration::ZERO) {
            if let MemberEvent::Left { rank, .. } | MemberEvent::Down { rank, .. } = e {
                Self::forget(&mut t, res, pool, rank);
            }
        }
        self.seen.fetch_max(now, Ordering::AcqRel);
        now
    }

    /// The table for one copy, at change count `changes` ([`Direct::sweep`]'s).
    pub fn peers(&self, changes: u64) -> Peers<'_> {
        Peers {
            table: self.table.read().unwrap_or_else(|e| e.into_inner()),
            changes,
            now: 0,
        }
    }

    /// Maps `rank`'s segment, which a copy at change count `changes` reached through the
    /// transport, if it is a file of this node; otherwise `rank` stays with the transport.
    /// Installed only if the count has not moved since. Call without holding [`Peers`].
    pub fn map(&self, g: &Group, res: &Reservation, pool: &Pool, rank: u32, changes: u64) {
        if g.changes() != changes {
            return;
        }
        let file = g.shared_file(rank, SEGMENT);
        let mut t = self.write();
        let Some(e) = t.get(rank as usize) else {
            return;
        };
        if matches!(e.kind, Kind::Mapped(_)) || g.changes() != changes {
            return;
        }
        let kind = match file {
            Ok(Some((fd, fd_offset, len)))
                if len > 0 && len <= pool.max && fd_offset % page_size() == 0 =>
            {
                let at = place(pool, rank);
                let span = len.next_multiple_of(page_size()) as usize;
                match res.map_fd_at(at, span, fd.as_fd(), fd_offset) {
                    Ok(()) => Kind::Mapped(len),
                    Err(err) => {
                        tracing::debug!("rank {rank}'s segment stays with the transport: {err:?}");
                        res.release(at, span);
                        Kind::Transport
                    }
                }
            }
            Ok(_) => Kind::Transport,
            Err(err) => {
                tracing::debug!("rank {rank}'s segment stays with the transport: {err}");
                Kind::Transport
            }
        };
        let e = &mut t[rank as usize];
        e.kind = kind;
        e.changes.store(changes, Ordering::Relaxed);
        e.until.store(
            coarse_clock_ns().saturating_add(LEASE_NS),
            Ordering::Relaxed,
        );
    }

    /// Unmaps `rank`'s segment, if mapped (the transport failed to reach it). Call without
    /// holding [`Peers`].
    pub fn release(&self, res: &Reservation, pool: &Pool, rank: u32) {
        Self::forget(&mut self.write(), res, pool, rank);
    }

    /// Unmaps every peer (this rank left its group).
    pub fn release_all(&self, res: &Reservation, pool: &Pool) {
        let mut t = self.write();
        for rank in 0..t.len() as u32 {
            Self::forget(&mut t, res, pool, rank);
        }
    }
}

/// The table as one copy uses it: held (read) until the copy and its flush are done, so no
/// range it uses is unmapped meanwhile.
pub struct Peers<'a> {
    table: RwLockReadGuard<'a, Vec<Entry>>,
    changes: u64,
    /// The coarse clock, read at the first look-up.
    now: u64,
}

impl Peers<'_> {
    /// The address of `[offset, offset+len)` of `rank`'s segment when it is mapped here and
    /// reached directly now (see the module's documentation); `None`: through the transport.
    pub fn at(&mut self, pool: &Pool, rank: u32, offset: u64, len: usize) -> Option<usize> {
        let e = self.table.get(rank as usize)?;
        let Kind::Mapped(mapped) = e.kind else {
            return None;
        };
        if e.changes.load(Ordering::Relaxed) != self.changes
            || offset
                .checked_add(len as u64)
                .is_none_or(|end| end > mapped)
        {
            return None;
        }
        if self.now == 0 {
            self.now = coarse_clock_ns();
        }
        if self.now >= e.until.load(Ordering::Relaxed) {
            return None;
        }
        Some(place(pool, rank) + offset as usize)
    }

    /// The transport reached `rank` in this copy: a mapped peer is reached directly again for
    /// a lease; `true` when it is to be mapped ([`Direct::map`], once this copy is done).
    pub fn reached(&self, rank: u32) -> bool {
        let Some(e) = self.table.get(rank as usize) else {
            return false;
        };
        match e.kind {
            Kind::Mapped(_) => {
                e.changes.store(self.changes, Ordering::Relaxed);
                e.until.store(
                    coarse_clock_ns().saturating_add(LEASE_NS),
                    Ordering::Relaxed,
                );
                false
            }
            Kind::Unknown => true,
            // Asked again once the group changed (a transient failure, a rank taken anew).
            Kind::Transport => e.changes.load(Ordering::Relaxed) != self.changes,
        }
    }
}
