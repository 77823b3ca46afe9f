//! The job as the barriers and waits see it: this PE, the PE count, the node map, where every
//! PE's control segment is mapped here and which PEs are reached through the transport, the
//! barrier's shape, and the transport itself. The runtime builds it once at start-up
//! ([`install`]) from what it owns and drops it at finalize ([`clear`]); the barriers the
//! facade runs read it without the runtime's lock. It is a plain Rust value, not the C job
//! state (which the facade and kernels read, and which the runtime fills alongside).
//!
//! Readers take it with one atomic load, allocate nothing and take no lock: the waits of the
//! data path read it on every pass. It must never hold anything the runtime does not keep
//! alive until [`clear`].

use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use crate::transport::Transport;

/// What the barriers and waits of a running job read.
#[derive(Debug)]
pub struct View {
    /// This PE.
    my_pe: usize,
    /// PEs in the job.
    n_pes: usize,
    /// Bytes of each control segment.
    control_size: usize,
    /// Per PE, its control segment as mapped here (0: not mapped here: another node's PE, or
    /// one reached through the transport).
    control_bases: Vec<usize>,
    /// Per PE, whether it is reached through the transport (never this PE itself).
    through_transport: Vec<bool>,
    /// Every PE's node (empty: one node).
    nodes: Vec<u32>,
    /// Whether barriers take the central shape.
    pub central: bool,
    /// The transport reaching the PEs not mapped here, when any is.
    transport: Option<NonNull<dyn Transport>>,
}

// SAFETY: the transport pointer names a `Transport`, which is `Send + Sync`, kept alive by the
// runtime for as long as the view is installed (see `View::new`); the rest is plain data.
unsafe impl Send for View {}
// SAFETY: as for `Send`: shared access only reads the data and calls the `Sync` transport.
unsafe impl Sync for View {}

impl View {
    /// The view of PE `my_pe`: `control_bases[pe]` is PE `pe`'s control segment as mapped here
    /// (0: not mapped here) of `control_size` bytes; `through_transport[pe]` says which PEs the
    /// transport reaches (empty: none); `nodes[pe]` is PE `pe`'s node.
    ///
    /// # Safety
    /// The mapped control segments and `transport` must stay alive and in place until the
    /// view is dropped ([`clear`] for an installed one).
    pub unsafe fn new(
        my_pe: usize,
        control_size: usize,
        control_bases: Vec<usize>,
        through_transport: Vec<bool>,
        nodes: Vec<u32>,
        central: bool,
        transport: Option<&dyn Transport>,
    ) -> View {
        let n_pes = control_bases.len();
        let one_node = nodes.windows(2).all(|w| w[0] == w[1]);
        View {
            my_pe,
            n_pes,
            control_size,
            control_bases,
            through_transport,
            nodes: if one_node { Vec::new() } else { nodes },
            central,
            // SAFETY: the caller keeps the transport alive while the view lives; the lifetime is
            // erased here and given back only for the length of a borrow of the view.
            transport: transport.map(|t| unsafe {
                std::mem::transmute::<NonNull<dyn Transport + '_>, NonNull<dyn Transport>>(
                    NonNull::from(t),
                )
            }),
        }
    }

    /// The transport, when the job has one.
    pub fn transport(&self) -> Option<&dyn Transport> {
        // SAFETY: alive as long as the view (`View::new`'s contract).
        self.transport.map(|t| unsafe { t.as_ref() })
    }

    /// Whether world PE `pe` is reached through the transport from here, and so never through
    /// a mapping. This PE's own memory is always mapped here, whoever else writes it.
    pub fn through_transport(&self, pe: usize) -> bool {
        pe != self.my_pe && self.through_transport.get(pe).copied().unwrap_or(false)
    }

    /// The 8-byte word at `offset` of world PE `pe`'s control segment as mapped here. `None`
    /// when `pe` is not a PE of the job or not mapped here, or the word is not inside the
    /// segment.
    pub fn control_word(&self, pe: usize, offset: usize) -> Option<&AtomicU64> {
        if pe >= self.n_pes {
            return None;
        }
        let base = self.control_bases[pe];
        if base == 0 || !offset.is_multiple_of(8) || offset + 8 > self.control_size {
            return None;
        }
        // SAFETY: a nonzero base is a live mapping of control_size bytes, kept alive as long
        // as the view (`View::new`'s contract); the word lies inside it and is 8-byte aligned
        // (page-aligned base, offset checked above). The segment is shared memory whose words
        // are only ever accessed atomically.
        Some(unsafe { &*((base + offset) as *const AtomicU64) })
    }

    /// World PE `pe`'s node (0 on a job of one node).
    pub fn node(&self, pe: usize) -> u32 {
        self.nodes.get(pe).copied().unwrap_or(0)
    }
}

/// The installed view (null while no job runs).
static VIEW: AtomicPtr<View> = AtomicPtr::new(std::ptr::null_mut());

/// Installs the view of a starting job (from init, before any barrier or wait can read it);
/// replaces none: a job installs one view and [`clear`] removes it.
pub fn install(view: View) {
    let old = VIEW.swap(Box::into_raw(Box::new(view)), Ordering::AcqRel);
    if !old.is_null() {
        // SAFETY: `old` came from `Box::into_raw` here; a new job starts only after the last
        // one's finalize, and no reader overlaps init.
        drop(unsafe { Box::from_raw(old) });
    }
}

/// Removes the view (from finalize, before the runtime it points into goes).
pub fn clear() {
    let old = VIEW.swap(std::ptr::null_mut(), Ordering::AcqRel);
    if !old.is_null() {
        // SAFETY: `old` came from `Box::into_raw` in `install`; the specification forbids other
        // library calls during finalize, so no reader holds it.
        drop(unsafe { Box::from_raw(old) });
    }
}

/// The running job's view, `None` while no job runs (and in tests that build their PEs in one
/// process, which map every PE).
#[inline]
pub fn get() -> Option<&'static View> {
    // SAFETY: a non-null pointer is an installed view, dropped only by `clear` at finalize,
    // which no reader overlaps (see `clear`).
    unsafe { VIEW.load(Ordering::Acquire).as_ref() }
}

/// Whether world PE `pe` is reached through the transport (false while no job runs).
pub fn through_transport(pe: usize) -> bool {
    get().is_some_and(|v| v.through_transport(pe))
}

/// Lets the job's transport move data; nothing when every PE is mapped here.
#[inline]
pub fn progress() {
    if let Some(t) = get().and_then(View::transport) {
        crate::transport::progress(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_found_only_inside_mapped_segments_of_the_job() {
        let words = [0u64; 8];
        let base = words.as_ptr() as usize;
        // SAFETY: `words` outlives the view, and no transport is named.
        let v = unsafe {
            View::new(
                1,
                64,
                vec![base, 0, base],
                vec![],
                vec![0, 0, 0],
                false,
                None,
            )
        };
        assert!(v.control_word(0, 56).is_some());
        assert!(v.control_word(3, 0).is_none(), "not a PE of the job");
        assert!(v.control_word(0, 64).is_none(), "past the segment");
        assert!(v.control_word(0, 4).is_none(), "misaligned");
        assert!(v.control_word(1, 0).is_none(), "not mapped here");
        assert!(!v.through_transport(0) && v.transport().is_none());
        assert_eq!(v.node(2), 0);
        // SAFETY: as above.
        let nodes = unsafe {
            View::new(
                0,
                64,
                vec![base; 2],
                vec![false, true],
                vec![0, 1],
                false,
                None,
            )
        };
        assert_eq!((nodes.node(0), nodes.node(1)), (0, 1));
        assert!(nodes.through_transport(1) && !nodes.through_transport(0));
    }
}
