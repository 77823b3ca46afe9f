//! The symmetric heap of this PE and the mappings of its peers' heaps on the same node (the
//! heaps of other nodes' PEs are not mapped here: a transport reaches them).
//!
//! Where the heap's memory lives is the [`Device`]'s business (today the host device: one
//! memfd per PE); this module owns the layout and the allocator. Layout of every PE's heap
//! segment (exported to and imported by every PE of the node):
//! `[0, RESERVED)` is reserved for kernel-side synchronisation words, which must live in the
//! device's memory beside the data (nothing uses it yet; the host API's barrier words and team
//! areas are in the control segment, [`crate::layout`], so a heap the CPU cannot reach
//! still has CPU barriers);
//! `[RESERVED, RESERVED + size)` is the user heap that `shmem_malloc` carves. A remote address is
//! `peer_base[pe] + (addr - my_base)`. Allocation is collective and deterministic (see
//! [`alloc`]); this module never touches the store beyond the one-time exchange of the segments' exports.

pub mod alloc;

use crate::bootstrap::Bootstrap;
use crate::device::{self, Device, Placement, Segment};
use crate::error::{Error, Result};
use alloc::{AllocError, Allocator};
use std::sync::Mutex;
use std::time::Duration;

/// Bytes at the start of each heap reserved for kernel-side synchronisation words (a page per
/// kind of word a kernel-side barrier, team area or signal table may need; unused so far, and
/// unbacked until something writes there).
pub const RESERVED: usize = 4 * PAGE;

/// The user heap of this PE starts on a multiple of this, so an alignment up to it is the same
/// offset on every PE (`shmem_align` with a larger alignment is refused).
pub const USER_BASE_ALIGN: usize = 1 << 30;

const PAGE: usize = 4096;

// A few whole pages: the user heap keeps its alignment, and unused pages stay unbacked.
const _: () = assert!(RESERVED <= 16 * 1024 && RESERVED.is_multiple_of(PAGE));

/// This PE's heap and its view of every peer's heap.
#[derive(Debug)]
pub struct Heap {
    my_pe: usize,
    /// Where the segments live.
    device: Box<dyn Device>,
    /// Each PE's heap segment as reachable here, indexed by PE (this PE's own, allocated here,
    /// included); `None` for the PEs of other nodes, which only a transport reaches.
    segments: Vec<Option<Segment>>,
    /// This PE's own segment's base, which every local operation uses.
    own_base: usize,
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
    /// every PE of this node in `bootstrap`'s job and imports theirs.
    pub fn create(
        device: Box<dyn Device>,
        size: usize,
        bootstrap: &Bootstrap,
        timeout: Duration,
    ) -> Result<Heap> {
        let (my_pe, n_pes) = (bootstrap.rank(), bootstrap.size());
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
        let segments = device::share(
            &*device,
            bootstrap,
            "heap/",
            mine,
            "its symmetric heap",
            timeout,
            |pe, export| {
                let len = device.exported_len(export)?;
                if len == total {
                    return Ok(());
                }
                Err(Error::Mismatch {
                    pe: pe as i32,
                    what: format!(
                        "symmetric heap is {} bytes there and {} here; \
                         SHMEM_SYMMETRIC_SIZE must be the same on every PE",
                        len.saturating_sub(RESERVED),
                        size
                    ),
                })
            },
        )
        .map_err(no_room)?;
        Ok(Heap::new(device, my_pe, segments, size))
    }

    fn new(
        device: Box<dyn Device>,
        my_pe: usize,
        segments: Vec<Option<Segment>>,
        size: usize,
    ) -> Heap {
        Heap {
            my_pe,
            device,
            own_base: segments[my_pe].as_ref().map_or(0, Segment::addr),
            segments,
            size,
            allocator: Mutex::new(Allocator::new(size)),
        }
    }

    /// Usable user bytes per PE.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Address of the first user byte of `pe`'s heap as mapped in this process; 0 for a PE of
    /// another node, whose heap is not mapped here (the job state's "not mapped").
    pub fn user_base(&self, pe: usize) -> usize {
        if pe == self.my_pe {
            return self.own_base + RESERVED;
        }
        self.segments[pe]
            .as_ref()
            .map_or(0, |s| s.addr() + RESERVED)
    }

    /// Fails unless the CPU may load and store the heap: the host data path (puts, gets, AMOs,
    /// collectives and waits on peers' heaps) copies into and out of the mappings directly.
    /// Barriers do not need it: their words are in the control segment.
    pub fn check_host_data_path(&self) -> Result<()> {
        if self.device.cpu_accessible() {
            return Ok(());
        }
        Err(Error::NotCpuAccessible {
            device: self.device.name(),
            needs: "the host data path (puts, gets, AMOs, collectives) copies into and out of \
                    peers' symmetric heaps directly",
        })
    }

    /// The CPU's mapping of `pe`'s whole heap segment (reserved part included), when the
    /// device allows loads and stores.
    #[cfg(test)]
    pub fn map(&self, pe: usize) -> Option<&crate::mapping::Mapping> {
        self.segments[pe].as_ref().and_then(Segment::cpu)
    }

    /// Zeroes `len` bytes at offset `off` of this PE's user heap.
    pub fn zero(&self, off: usize, len: usize) -> Result<()> {
        self.device.set(self.own(), RESERVED + off, 0, len)
    }

    /// Copies `len` bytes from user-heap offset `src` to `dst` in this PE's heap (the ranges
    /// may overlap).
    pub fn copy(&self, src: usize, dst: usize, len: usize) -> Result<()> {
        self.device
            .copy(self.own(), RESERVED + src, RESERVED + dst, len)
    }

    /// This PE's own segment.
    fn own(&self) -> &Segment {
        // `device::share` puts this PE's own segment at its index, and nothing removes it
        // before drop.
        self.segments[self.my_pe]
            .as_ref()
            .expect("this PE's own heap segment is held")
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
        for segment in self.segments.drain(..).rev().flatten() {
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
                    .map(|e| Some(host.import(e, Placement::Anywhere).unwrap()))
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

    /// A heap the CPU cannot reach is made (its barriers use the control segment); only the
    /// host data path refuses it, saying why.
    #[test]
    fn a_heap_on_memory_the_cpu_cannot_reach_is_made_and_refused_only_by_the_data_path() {
        let heap = Heap::create(
            Box::new(Remote),
            1 << 20,
            &Bootstrap::alone(),
            Duration::from_secs(1),
        )
        .expect("a heap on memory the CPU cannot reach");
        assert_eq!(heap.size(), 1 << 20);
        assert_eq!(heap.user_base(0), (1 << 40) + RESERVED);
        assert!(heap.map(0).is_none());
        let e = heap.check_host_data_path().unwrap_err().to_string();
        assert!(
            e.contains("remote device") && e.contains("host data path"),
            "{e}"
        );
        let host = Heap::create(
            Box::new(crate::device::host::Host),
            4096,
            &Bootstrap::alone(),
            Duration::from_secs(1),
        )
        .unwrap();
        assert!(host.check_host_data_path().is_ok());
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
        let word = |off: usize| heap.map(0).unwrap().atomic_u64(RESERVED + off);
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
            .map(1)
            .unwrap()
            .atomic_u64(RESERVED)
            .store(11, Ordering::Release);
        for view in &heaps {
            let word = view.map(1).unwrap().atomic_u64(RESERVED);
            assert_eq!(word.load(Ordering::Acquire), 11);
        }
        heaps[1].zero(0, 8).unwrap();
        let word = heaps[2].map(1).unwrap().atomic_u64(RESERVED);
        assert_eq!(word.load(Ordering::Acquire), 0);
    }
}
