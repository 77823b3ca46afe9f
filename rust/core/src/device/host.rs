//! The host device: symmetric memory in host RAM, one anonymous shared-memory file (memfd) per
//! segment, mapped read-write by every PE of the node. A segment's export is its file
//! descriptor alone (no bytes): the file's length says how large it is. It owns no layout and
//! no unsafe code; the files and mappings themselves come from [`crate::mapping`].

use super::{check_range, Device, Export, Placement, Segment};
use crate::error::{Error, Result};
use crate::mapping::{self, Mapping};
use rustix::fd::{AsFd, OwnedFd};

/// Host memory shared through memfds; the CPU loads and stores it directly.
#[derive(Debug, Default, Clone, Copy)]
pub struct Host;

/// What keeps a host segment allocated here exportable: its file.
#[derive(Debug)]
struct File(OwnedFd);

/// The backing of a peer's segment imported here: nothing beyond its mapping.
#[derive(Debug)]
struct Imported;

fn map(fd: impl AsFd, len: usize, placement: Placement) -> Result<Mapping> {
    match placement {
        Placement::Anywhere => Mapping::map_shared(fd, len),
        Placement::Aligned { align, skew } => Mapping::map_shared_aligned(fd, len, align, skew),
    }
}

impl Host {
    /// A segment over a shared-memory file of `len` bytes made here, kept so it can be
    /// exported.
    fn adopt(&self, fd: OwnedFd, len: usize, placement: Placement) -> Result<Segment> {
        let map = map(&fd, len, placement)?;
        Ok(Segment::mapped(map, Box::new(File(fd))))
    }

    /// Exports a shared-memory file without mapping it here (static data, already mapped in
    /// place by its own module).
    pub fn export_fd(&self, fd: &OwnedFd) -> Result<Export> {
        let fd = fd
            .try_clone()
            .map_err(|e| Error::os("duplicating a segment's descriptor", e))?;
        Ok(Export {
            bytes: Vec::new(),
            fds: vec![fd],
        })
    }
}

impl Device for Host {
    fn name(&self) -> &'static str {
        "host"
    }

    fn cpu_accessible(&self) -> bool {
        true
    }

    fn allocate(&self, name: &str, len: usize, placement: Placement) -> Result<Segment> {
        self.adopt(mapping::memfd(name, len)?, len, placement)
    }

    fn export(&self, segment: &Segment) -> Result<Export> {
        let Some(File(fd)) = segment.backing().downcast_ref::<File>() else {
            return Err(Error::os(
                "exporting a segment the host device did not allocate",
                std::io::ErrorKind::InvalidInput,
            ));
        };
        self.export_fd(fd)
    }

    fn exported_len(&self, export: &Export) -> Result<usize> {
        mapping::file_len(the_file(export)?.as_fd())
    }

    fn import(&self, export: &Export, placement: Placement) -> Result<Segment> {
        let len = self.exported_len(export)?;
        let map = map(the_file(export)?, len, placement)?;
        // The mapping alone keeps a peer's memory alive; holding its descriptor too would
        // cost every PE one descriptor per peer for the whole job.
        Ok(Segment::mapped(map, Box::new(Imported)))
    }

    fn free(&self, segment: Segment) -> Result<()> {
        // Unmapping and closing the file are the drop of the segment's parts.
        drop(segment);
        Ok(())
    }

    fn set(&self, segment: &Segment, offset: usize, byte: u8, len: usize) -> Result<()> {
        check_range(segment, "host set", offset, len)?;
        cpu(segment)?.fill(offset, byte, len);
        Ok(())
    }

    fn copy(&self, segment: &Segment, src: usize, dst: usize, len: usize) -> Result<()> {
        check_range(segment, "host copy (source)", src, len)?;
        check_range(segment, "host copy (destination)", dst, len)?;
        cpu(segment)?.copy_within(src, dst, len);
        Ok(())
    }
}

/// The one descriptor of a host export.
fn the_file(export: &Export) -> Result<&OwnedFd> {
    match export.fds.as_slice() {
        [fd] => Ok(fd),
        other => Err(Error::os(
            format!(
                "a host segment's export has {} descriptors, not 1",
                other.len()
            ),
            std::io::ErrorKind::InvalidData,
        )),
    }
}

/// The CPU mapping every host segment has.
fn cpu(segment: &Segment) -> Result<&Mapping> {
    segment.cpu().ok_or_else(|| {
        Error::os(
            "a segment without a CPU mapping given to the host device",
            std::io::ErrorKind::InvalidInput,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn exported_segment_shares_bytes_with_its_import() {
        let host = Host;
        let mine = host
            .allocate("test-seg", 1 << 16, Placement::Anywhere)
            .unwrap();
        assert!(host.cpu_accessible());
        assert_eq!(mine.len(), 1 << 16);
        let export = host.export(&mine).unwrap();
        assert!(export.bytes.is_empty());
        assert_eq!(host.exported_len(&export).unwrap(), 1 << 16);
        let theirs = host.import(&export, Placement::Anywhere).unwrap();
        assert_ne!(mine.addr(), theirs.addr());
        // An import keeps no descriptor, and is not this PE's to export again.
        assert!(theirs.backing().downcast_ref::<File>().is_none());
        assert!(host.export(&theirs).is_err());
        let (a, b) = (mine.cpu().unwrap(), theirs.cpu().unwrap());
        a.atomic_u64(128).store(0x1234, Ordering::Release);
        assert_eq!(b.atomic_u64(128).load(Ordering::Acquire), 0x1234);
        host.free(theirs).unwrap();
        // The file outlives one holder's free.
        assert_eq!(a.atomic_u64(128).load(Ordering::Acquire), 0x1234);
    }

    #[test]
    fn set_and_copy_work_in_place_and_check_bounds() {
        let host = Host;
        let seg = host
            .allocate("test-seg", 8192, Placement::Anywhere)
            .unwrap();
        let ab = u64::from_ne_bytes([0xab; 8]);
        host.set(&seg, 64, 0xab, 64).unwrap();
        host.copy(&seg, 64, 4096, 64).unwrap();
        // Overlapping copy, like a block moved up by one word.
        host.copy(&seg, 4096, 4104, 64).unwrap();
        let map = seg.cpu().unwrap();
        let word = |at: usize| map.atomic_u64(at).load(Ordering::Relaxed);
        assert_eq!(word(56), 0);
        assert!((64..128).step_by(8).all(|at| word(at) == ab));
        assert_eq!(word(128), 0);
        assert!((4096..4168).step_by(8).all(|at| word(at) == ab));
        assert_eq!(word(4168), 0);
        let e = host.set(&seg, 8000, 1, 200).unwrap_err().to_string();
        assert!(e.contains("offset=8000 len=200"), "{e}");
        assert!(host.copy(&seg, 0, 8190, 4).is_err());
        assert!(host.copy(&seg, usize::MAX, 0, 4).is_err());
    }

    #[test]
    fn aligned_placement_and_bad_exports() {
        let host = Host;
        let seg = host
            .allocate(
                "test-seg",
                1 << 16,
                Placement::Aligned {
                    align: 1 << 21,
                    skew: 4096,
                },
            )
            .unwrap();
        assert_eq!((seg.addr() + 4096) % (1 << 21), 0);
        let none = Export::default();
        assert!(host.exported_len(&none).is_err());
        assert!(host.import(&none, Placement::Anywhere).is_err());
        let foreign = Segment::unmapped(0x1000, 4096, Box::new(()));
        assert!(host.export(&foreign).is_err());
        assert!(host.set(&foreign, 0, 0, 8).is_err());
    }
}
