//! The symmetric heap of this PE and the mappings of its peers' heaps on the same node.
//!
//! Layout of every PE's heap file (one memfd per PE, mapped by every PE of the node):
//! `[0, RESERVED)` holds the runtime's synchronisation words (barrier flags, then one area per
//! team slot that the facade's team collectives use);
//! `[RESERVED, RESERVED + size)` is the user heap that `shmem_malloc` carves. A remote address is
//! `peer_base[pe] + (addr - my_base)`. Allocation is collective and deterministic (see
//! [`alloc`]); this module never touches the store beyond the one-time descriptor exchange.

pub mod alloc;

use crate::bootstrap::Client;
use crate::error::{Error, Result};
use crate::mapping::{self, Mapping};
use alloc::{AllocError, Allocator};
use rustix::fd::AsFd;
use std::sync::Mutex;
use std::time::Duration;

/// Bytes at the start of each heap reserved for the runtime: the barrier's words, then the team
/// areas.
pub const RESERVED: usize = TEAM_AREAS + TEAM_SLOTS * TEAM_AREA_SIZE;

/// The user heap of this PE starts on a multiple of this, so an alignment up to it is the same
/// offset on every PE (`shmem_align` with a larger alignment is refused).
pub const USER_BASE_ALIGN: usize = 1 << 30;

/// Offset of the barrier flags: one 64-byte line per dissemination round.
pub const BARRIER_FLAGS: usize = 0;
/// Most dissemination rounds (enough for 2^32 PEs).
pub const BARRIER_ROUNDS: usize = 32;
/// Offset of the central barrier's counter and release word (used on PE 0's heap), after the
/// dissemination flags.
pub const BARRIER_CENTRAL: usize = BARRIER_FLAGS + BARRIER_ROUNDS * 64;
/// Offset of the line where each PE records the last barrier over all PEs it entered and the
/// call that entered it (read by the central barrier's last arrival and by diagnostics).
pub const BARRIER_STATE: usize = BARRIER_CENTRAL + 128;

/// Offset of the team synchronisation areas: one per slot, [`TEAM_AREA_SIZE`] bytes each. A team
/// uses the area of its slot on every member; slots 0 and 1 belong to the predefined teams
/// (world and shared), so a PE can be a member of at most `TEAM_SLOTS - 2` teams made by splits.
/// The words inside an area are laid out once, in `shmem/job_state.h` (mirrored in
/// [`crate::job_state`]); this module only reserves them (the memfd pages stay unbacked until a
/// team touches them).
pub const TEAM_AREAS: usize = 64 * 1024;
/// Team slots per PE (the limit on simultaneous teams).
pub const TEAM_SLOTS: usize = 64;
/// Bytes of one team area.
pub const TEAM_AREA_SIZE: usize = 4096;

const PAGE: usize = 4096;

const _: () = assert!(BARRIER_STATE + 64 <= TEAM_AREAS);

/// This PE's heap and its view of every peer's heap.
#[derive(Debug)]
pub struct Heap {
    my_pe: usize,
    /// Mapping of each PE's heap file, indexed by PE (this PE's own heap included).
    maps: Vec<Mapping>,
    /// Usable bytes of the user part.
    size: usize,
    allocator: Mutex<Allocator>,
}

/// A heap mapping that failed: when the address space ran out (ENOMEM), says what the heaps
/// take and the two settings that bound it, `SHMEM_SYMMETRIC_SIZE` and `ulimit -v`.
fn address_space_hint(e: Error, n_pes: usize, size: usize) -> Error {
    let Error::Os { what, source } = &e else {
        return e;
    };
    if source.raw_os_error() != Some(libc::ENOMEM) {
        return e;
    }
    let limit = match rustix::process::getrlimit(rustix::process::Resource::As).current {
        Some(bytes) => format!("now {} KiB", bytes / 1024),
        None => "now unlimited".to_string(),
    };
    let each = if size >= 1 << 20 {
        format!("{} MiB", size >> 20)
    } else {
        format!("{size} bytes")
    };
    Error::Heap(format!(
        "{what}: {source}: every PE maps the symmetric heaps of all {n_pes} PEs, \
         SHMEM_SYMMETRIC_SIZE ({each}) each, and its own with {} GiB of room to align it; \
         lower SHMEM_SYMMETRIC_SIZE or raise the address-space limit (ulimit -v, {limit})",
        USER_BASE_ALIGN >> 30
    ))
}

impl Heap {
    /// Creates this PE's heap of `size` user bytes and, with a store, exchanges heap files with
    /// every peer and maps theirs.
    pub fn create(
        my_pe: usize,
        n_pes: usize,
        size: usize,
        store: Option<&Client>,
        timeout: Duration,
    ) -> Result<Heap> {
        let size = size
            .checked_add(PAGE - 1)
            .map(|s| s & !(PAGE - 1))
            .ok_or_else(|| Error::BadEnv {
                name: crate::env::SYMMETRIC_SIZE,
                value: size.to_string(),
                reason: "too large".into(),
            })?;
        let total = RESERVED.checked_add(size).ok_or_else(|| Error::BadEnv {
            name: crate::env::SYMMETRIC_SIZE,
            value: size.to_string(),
            reason: "too large".into(),
        })?;
        let own = mapping::memfd(&format!("shmem-heap-pe{my_pe}"), total)?;
        let mut maps = Vec::with_capacity(n_pes);
        let no_room = |e| address_space_hint(e, n_pes, size);
        match store {
            None => maps.push(
                Mapping::map_shared_aligned(&own, total, USER_BASE_ALIGN, RESERVED)
                    .map_err(no_room)?,
            ),
            Some(store) => {
                store.put_fd(&format!("heap/{my_pe}"), own.as_fd())?;
                // Every PE's descriptor in one round trip (this PE's own comes back too).
                let fds = (store.gather_fds("heap/", n_pes as u32, timeout))
                    .map_err(|e| e.unshared("its symmetric heap"))?;
                for (pe, fd) in fds.into_iter().enumerate() {
                    if pe == my_pe {
                        maps.push(
                            Mapping::map_shared_aligned(&own, total, USER_BASE_ALIGN, RESERVED)
                                .map_err(no_room)?,
                        );
                        continue;
                    }
                    let len = mapping::file_len(fd.as_fd())?;
                    if len != total {
                        return Err(Error::Mismatch {
                            pe: pe as i32,
                            what: format!(
                                "symmetric heap is {} bytes there and {} here; \
                                 SHMEM_SYMMETRIC_SIZE must be the same on every PE",
                                len.saturating_sub(RESERVED),
                                size
                            ),
                        });
                    }
                    maps.push(Mapping::map_shared(&fd, total).map_err(no_room)?);
                }
            }
        }
        Ok(Heap {
            my_pe,
            maps,
            size,
            allocator: Mutex::new(Allocator::new(size)),
        })
    }

    /// Usable user bytes per PE.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Address of the first user byte of `pe`'s heap as mapped in this process.
    pub fn user_base(&self, pe: usize) -> usize {
        self.maps[pe].addr() + RESERVED
    }

    /// Mapping of `pe`'s whole heap file (reserved part included).
    pub fn map(&self, pe: usize) -> &Mapping {
        &self.maps[pe]
    }

    /// This PE's own mapping.
    pub fn local(&self) -> &Mapping {
        &self.maps[self.my_pe]
    }

    /// Offset in the user heap of a local address, if it lies inside it.
    pub fn offset_of(&self, addr: usize) -> Option<usize> {
        addr.checked_sub(self.user_base(self.my_pe))
            .filter(|off| *off < self.size)
    }

    /// Runs `f` on the allocator. Only the collective allocation calls use it.
    pub fn with_allocator<T>(&self, f: impl FnOnce(&mut Allocator) -> T) -> T {
        // A poisoned lock means a panic mid-allocation, which aborts the process (panic=abort),
        // so recovering the guard is never observed with broken state.
        let mut guard = self.allocator.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }
}

#[cfg(test)]
impl Heap {
    /// The heaps of an `n_pes`-PE job living in this one process, as each PE sees them (PE i's
    /// view maps every PE's file), with `size` user bytes each: for tests of the barrier and
    /// other code on the reserved words, one thread per PE.
    pub(crate) fn in_process(n_pes: usize, size: usize) -> Vec<Heap> {
        let total = RESERVED + size;
        let files: Vec<_> = (0..n_pes)
            .map(|pe| mapping::memfd(&format!("shmem-test-heap-pe{pe}"), total).unwrap())
            .collect();
        (0..n_pes)
            .map(|my_pe| Heap {
                my_pe,
                maps: files
                    .iter()
                    .map(|fd| Mapping::map_shared(fd, total).unwrap())
                    .collect(),
                size,
                allocator: Mutex::new(Allocator::new(size)),
            })
            .collect()
    }
}

/// Describes an allocation failure for the log.
pub fn describe(call: &str, err: &AllocError, heap_size: usize) -> String {
    match err {
        AllocError::Exhausted {
            wanted,
            largest_free,
            total_free,
        } => format!(
            "{call}: out of symmetric memory: {wanted} bytes wanted, largest free block is \
             {largest_free} bytes ({total_free} of {heap_size} bytes free); \
             raise SHMEM_SYMMETRIC_SIZE"
        ),
        AllocError::NotABlock { offset } => {
            format!("{call}: address at heap offset {offset} is not the start of a symmetric block")
        }
    }
}
