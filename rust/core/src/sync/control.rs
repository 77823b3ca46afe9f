//! The control segment: this PE's host API synchronisation words, in host memory of their own
//! (one shared-memory file per PE, from the [`Host`] device), exported to and mapped by every
//! PE of the node like the heap's segments (PEs of other nodes reach it through the transport). Keeping them out of the heap lets barriers run on
//! the CPU whatever device holds the heap. This module owns the segment's layout and its
//! exchange; the words' meaning belongs to the barrier ([`super::barrier`]) and to the
//! facade's team collectives. It never touches the store beyond the one exchange.
//!
//! Layout of every PE's segment: [`crate::layout`], which the job state publishes too (as
//! `control_*`); the nap stamp in the state line is [`super::wait::publish_naps`]'s.
//!
//! The file's pages stay unbacked until a word on them is written: a job that never splits a
//! team touches two or three pages per PE.

use crate::bootstrap::Bootstrap;
use crate::device::{self, host::Host, Device, Placement, Segment};
use crate::error::Result;
use crate::mapping::Mapping;
use std::time::Duration;

pub use crate::layout::{BARRIER, NAP_STAMP, SIZE, STATE, TEAM_AREAS, TEAM_AREA_SIZE};

/// This PE's control segment and its mappings of its node's peers' segments.
#[derive(Debug)]
pub struct Control {
    my_pe: usize,
    /// Every PE's segment as mapped here, indexed by PE (this PE's own included); `None` for
    /// the PEs of other nodes.
    segments: Vec<Option<Segment>>,
}

impl Control {
    /// Creates this PE's control segment and, with a store, exchanges it with every PE of this
    /// node and maps theirs (collective over the job).
    pub fn create(bootstrap: &Bootstrap, timeout: Duration) -> Result<Control> {
        let my_pe = bootstrap.rank();
        let host = Host;
        let mine = host.allocate(
            &format!("shmem-control-pe{my_pe}"),
            SIZE,
            Placement::Anywhere,
        )?;
        let segments = device::share(
            &host,
            bootstrap,
            "control/",
            mine,
            "its control segment",
            timeout,
            |_, _| Ok(()),
        )?;
        Ok(Control { my_pe, segments })
    }

    /// `pe`'s segment as mapped here, `None` for a PE of another node.
    pub fn mapped(&self, pe: usize) -> Option<&Mapping> {
        self.segments[pe].as_ref().and_then(Segment::cpu)
    }

    /// `pe`'s segment as mapped here; `pe` must be on this node. The runtime's own barrier
    /// words are read only for such PEs: a PE of another node is reached through the
    /// transport, and a job with such PEs and no transport stops at init.
    pub fn map(&self, pe: usize) -> &Mapping {
        // Host segments always carry a CPU mapping (`Host::cpu_accessible`); see above for
        // the node.
        self.mapped(pe)
            .expect("control segments of this node's PEs are mapped")
    }

    /// This PE's own segment.
    pub fn local(&self) -> &Mapping {
        self.map(self.my_pe)
    }

    /// Every PE's segment base as mapped here, indexed by PE, for the job state.
    pub fn bases(&self) -> Vec<usize> {
        (self.segments.iter())
            .map(|s| s.as_ref().map_or(0, Segment::addr))
            .collect()
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        for segment in self.segments.drain(..).rev().flatten() {
            if let Err(e) = Host.free(segment) {
                tracing::warn!("freeing a control segment: {e}");
            }
        }
    }
}

#[cfg(test)]
impl Control {
    /// The control segments of an `n_pes`-PE job living in this one process, as each PE sees
    /// them (PE i's view maps every PE's file): for tests of the barrier, one thread per PE.
    pub(crate) fn in_process(n_pes: usize) -> Vec<Control> {
        let first: Vec<Segment> = (0..n_pes)
            .map(|pe| {
                Host.allocate(
                    &format!("shmem-test-control-pe{pe}"),
                    SIZE,
                    Placement::Anywhere,
                )
                .unwrap()
            })
            .collect();
        let exports: Vec<_> = first.iter().map(|s| Host.export(s).unwrap()).collect();
        (0..n_pes)
            .map(|my_pe| Control {
                my_pe,
                segments: exports
                    .iter()
                    .map(|e| Some(Host.import(e, Placement::Anywhere).unwrap()))
                    .collect(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::TEAM_SLOTS;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_single_pe_segment_is_zeroed_host_memory() {
        let c = Control::create(&Bootstrap::alone(), Duration::from_secs(1)).unwrap();
        assert_eq!(c.local().len(), SIZE);
        assert_eq!(c.bases(), vec![c.local().addr()]);
        let last = TEAM_AREAS + (TEAM_SLOTS - 1) * TEAM_AREA_SIZE;
        assert_eq!(c.local().atomic_u64(last).load(Ordering::Relaxed), 0);
    }

    #[test]
    fn in_process_views_share_each_pes_segment() {
        let views = Control::in_process(3);
        views[2]
            .local()
            .atomic_u64(BARRIER)
            .store(5, Ordering::Release);
        for v in &views {
            assert_eq!(v.map(2).atomic_u64(BARRIER).load(Ordering::Acquire), 5);
        }
    }
}
