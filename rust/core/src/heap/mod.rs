//! The symmetric heap of this PE and the mappings of its peers' heaps on the same node.
//!
//! Where the heap's memory lives is the [`Device`]'s business (today the host device: one
//! memfd per PE); this module owns the layout and the allocator. Layout of every PE's heap
//! segment (exported to and imported by every PE of the node):
//! `[0, RESERVED)` holds the runtime's synchronisation words (barrier flags, then one area per
//! team slot that the facade's team collectives use);
//! `[RESERVED, RESERVED + size)` is the user heap that `shmem_malloc` carves. A remote address is
//! `peer_base[pe] + (addr - my_base)`. Allocation is collective and deterministic (see
//! [`alloc`]); this module never touches the store beyond the one-time exchange of the segments' exports.

pub mod alloc;

use crate::bootstrap::Bootstrap;
use crate::device::{self, Device, Placement, Segment};
use crate::error::{Error, Result};
use crate::mapping::Mapping;
use alloc::{AllocError, Allocator};
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
    /// Where the segments live.
    device: Box<dyn Device>,
    /// Each PE's heap segment as reachable here, indexed by PE (this PE's own, allocated here,
    /// included).
    segments: Vec<Segment>,
    /// Usable bytes of the user part.
    size: usize,
    allocator: Mutex<Allocator>,
}

/// A heap mapping that failed: when the address space ran out (ENOMEM), says what the heaps
/// take and the two settings that bound it, `SHMEM_SYMMETRIC_SIZE` and `ulimit -v`.
fn address_space_hint(e: Error, n_pes: usize, size: usize) -> Error {
    if !matches!(&e, Error::Os { source, .. } if source.raw_os_error() == Some(libc::ENOMEM)) {
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
    let Error::Os { what, source } = e else {
        return e;
    };
    Error::AddressSpace {
        what,
        source,
        n_pes,
        each,
        align_gib: USER_BASE_ALIGN >> 30,
        limit,
    }
}

impl Heap {
    /// Creates this PE's heap of `size` user bytes on `device`, exchanges heap segments with
    /// every PE of `bootstrap`'s job and imports theirs.
    pub fn create(
        device: Box<dyn Device>,
        size: usize,
        bootstrap: &Bootstrap,
        timeout: Duration,
    ) -> Result<Heap> {
        let (my_pe, n_pes) = (bootstrap.rank(), bootstrap.size());
        if !device.cpu_accessible() {
            // The barrier words and team areas live in the reserved prefix, which the CPU
            // must reach until they have a host segment of their own.
            return Err(Error::NotCpuAccessible {
                device: device.name(),
                needs: "the runtime's synchronisation words live in the symmetric heap",
            });
        }
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
        let no_room = |e| address_space_hint(e, n_pes, size);
        let own = Placement::Aligned {
            align: USER_BASE_ALIGN,
            skew: RESERVED,
        };
        let mine = device
            .allocate(&format!("shmem-heap-pe{my_pe}"), total, own)
            .map_err(no_room)?;
        let exports = device::exchange(
            bootstrap,
            "heap/",
            device.export(&mine)?,
            "its symmetric heap",
            timeout,
        )?;
        let mut segments = Vec::with_capacity(n_pes);
        let mut mine = Some(mine);
        for (pe, export) in exports.iter().enumerate() {
            if pe == my_pe {
                segments.extend(mine.take());
                continue;
            }
            let len = device.exported_len(export)?;
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
            segments.push(
                device
                    .import(export, Placement::Anywhere)
                    .map_err(no_room)?,
            );
        }
        Ok(Heap::new(device, my_pe, segments, size))
    }

    fn new(device: Box<dyn Device>, my_pe: usize, segments: Vec<Segment>, size: usize) -> Heap {
        Heap {
            my_pe,
            device,
            segments,
            size,
            allocator: Mutex::new(Allocator::new(size)),
        }
    }

    /// Usable user bytes per PE.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Address of the first user byte of `pe`'s heap as mapped in this process.
    pub fn user_base(&self, pe: usize) -> usize {
        self.segments[pe].addr() + RESERVED
    }

    /// The CPU's mapping of `pe`'s whole heap segment (reserved part included).
    pub fn map(&self, pe: usize) -> &Mapping {
        // `create` accepts only a CPU-accessible device, and such a device gives every
        // segment a CPU mapping (the contract of `Device::cpu_accessible`).
        self.segments[pe]
            .cpu()
            .expect("heap segments of a CPU-accessible device are mapped")
    }

    /// This PE's own mapping.
    pub fn local(&self) -> &Mapping {
        self.map(self.my_pe)
    }

    /// Zeroes `len` bytes at offset `off` of this PE's user heap.
    pub fn zero(&self, off: usize, len: usize) -> Result<()> {
        let own = &self.segments[self.my_pe];
        self.device.set(own, RESERVED + off, 0, len)
    }

    /// Copies `len` bytes from user-heap offset `src` to `dst` in this PE's heap (the ranges
    /// may overlap).
    pub fn copy(&self, src: usize, dst: usize, len: usize) -> Result<()> {
        let own = &self.segments[self.my_pe];
        self.device.copy(own, RESERVED + src, RESERVED + dst, len)
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

impl Drop for Heap {
    fn drop(&mut self) {
        for segment in self.segments.drain(..).rev() {
            if let Err(e) = self.device.free(segment) {
                tracing::warn!("freeing a symmetric heap segment: {e}");
            }
        }
    }
}

#[cfg(test)]
impl Heap {
    /// The heaps of an `n_pes`-PE job living in this one process, as each PE sees them (PE i's
    /// view maps every PE's file), with `size` user bytes each: for tests of the barrier and
    /// other code on the reserved words, one thread per PE.
    pub(crate) fn in_process(n_pes: usize, size: usize) -> Vec<Heap> {
        let host = crate::device::host::Host;
        let total = RESERVED + size;
        let first: Vec<Segment> = (0..n_pes)
            .map(|pe| {
                host.allocate(
                    &format!("shmem-test-heap-pe{pe}"),
                    total,
                    Placement::Anywhere,
                )
                .unwrap()
            })
            .collect();
        let exports: Vec<_> = first.iter().map(|s| host.export(s).unwrap()).collect();
        (0..n_pes)
            .map(|my_pe| {
                let segments = exports
                    .iter()
                    .map(|e| host.import(e, Placement::Anywhere).unwrap())
                    .collect();
                Heap::new(Box::new(host), my_pe, segments, size)
            })
            .collect()
    }
}

/// The runtime's error for an allocator failure in `call` (on the block at `addr`, for free
/// and realloc).
pub fn alloc_error(call: &str, addr: Option<usize>, err: &AllocError, heap_size: usize) -> Error {
    match *err {
        AllocError::Exhausted {
            wanted,
            largest_free,
            total_free,
        } => Error::HeapExhausted {
            call: call.to_string(),
            wanted,
            largest_free,
            total_free,
            heap_size,
        },
        AllocError::NotABlock { offset } => Error::NoSuchBlock {
            call: call.to_string(),
            addr: addr.unwrap_or(0),
            offset: Some(offset),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Export;
    use std::sync::atomic::Ordering;

    /// A device whose memory the CPU may not touch, allocating nothing.
    #[derive(Debug)]
    struct Remote;

    impl Device for Remote {
        fn name(&self) -> &'static str {
            "remote"
        }
        fn cpu_accessible(&self) -> bool {
            false
        }
        fn allocate(&self, _: &str, len: usize, _: Placement) -> Result<Segment> {
            Ok(Segment::unmapped(1 << 40, len, Box::new(())))
        }
        fn export(&self, _: &Segment) -> Result<Export> {
            Ok(Export::default())
        }
        fn exported_len(&self, _: &Export) -> Result<usize> {
            Ok(0)
        }
        fn import(&self, _: &Export, _: Placement) -> Result<Segment> {
            unreachable!()
        }
        fn free(&self, _: Segment) -> Result<()> {
            Ok(())
        }
        fn set(&self, _: &Segment, _: usize, _: u8, _: usize) -> Result<()> {
            unreachable!()
        }
        fn copy(&self, _: &Segment, _: usize, _: usize, _: usize) -> Result<()> {
            unreachable!()
        }
    }

    #[test]
    fn a_heap_on_memory_the_cpu_cannot_reach_is_refused_by_name() {
        let e = Heap::create(
            Box::new(Remote),
            1 << 20,
            &Bootstrap::alone(),
            Duration::from_secs(1),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("remote device") && e.contains("not CPU-accessible"),
            "{e}"
        );
    }

    #[test]
    fn a_single_pe_heap_is_aligned_zeroes_and_copies_through_its_device() {
        let heap = Heap::create(
            Box::new(crate::device::host::Host),
            5000,
            &Bootstrap::alone(),
            Duration::from_secs(1),
        )
        .unwrap();
        assert_eq!(heap.size(), 8192, "rounded up to pages");
        assert_eq!(heap.user_base(0) % USER_BASE_ALIGN, 0);
        let word = |off: usize| heap.local().atomic_u64(RESERVED + off);
        word(64).store(7, Ordering::Relaxed);
        heap.copy(64, 4096, 8).unwrap();
        assert_eq!(word(4096).load(Ordering::Relaxed), 7);
        heap.zero(64, 8).unwrap();
        assert_eq!(word(64).load(Ordering::Relaxed), 0);
        assert!(heap.zero(8190, 8).is_err(), "past the user heap's segment");
        assert_eq!(heap.offset_of(heap.user_base(0) + 100), Some(100));
    }

    #[test]
    fn in_process_views_share_each_pes_segment() {
        let heaps = Heap::in_process(3, 4096);
        heaps[1]
            .local()
            .atomic_u64(RESERVED)
            .store(11, Ordering::Release);
        for view in &heaps {
            assert_eq!(view.map(1).atomic_u64(RESERVED).load(Ordering::Acquire), 11);
        }
        heaps[1].zero(0, 8).unwrap();
        assert_eq!(
            heaps[2].map(1).atomic_u64(RESERVED).load(Ordering::Acquire),
            0
        );
    }
}
