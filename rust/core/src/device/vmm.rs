//! What the devices built on a virtual-memory API share (`npu` over ACL's, `cuda` over the CUDA
//! driver's): where a segment's physical memory goes in the address range reserved for it, the
//! words of an export, and a copy inside a segment whose ranges overlap.

use super::{DeviceMemory, Placement};
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether an accelerator enqueued the library's work on a stream since finalize last drained
/// it: finalize then waits for the whole device (every stream of this PE's context, the ones the
/// program destroyed since too), so that nothing of the library's runs after the heap is gone.
/// A stream's handle is not kept: the program may destroy the stream before finalize, and a
/// destroyed handle must not be passed to the device API again.
#[derive(Debug, Default)]
pub(crate) struct Enqueued(AtomicBool);

impl Enqueued {
    /// Notes that work was enqueued (one relaxed store beside an enqueue of microseconds).
    pub fn note(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether work was noted since the last call.
    pub fn take(&self) -> bool {
        self.0.swap(false, Ordering::Relaxed)
    }
}

/// Where a segment of `len` bytes goes: physical memory of `phys_len` bytes (a multiple of the
/// device's granularity) mapped at the start of a granule, the segment starting `pad` bytes in,
/// inside a reservation of `reserve_len` bytes aligned to `align`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub pad: usize,
    pub phys_len: usize,
    pub reserve_len: usize,
    pub align: usize,
    skew: usize,
}

fn round_up(n: usize, to: usize) -> Option<usize> {
    n.checked_add(to - 1).map(|n| n / to * to)
}

impl Layout {
    /// The layout of a segment of `len` bytes placed as `placement` asks, with physical memory
    /// in granules of `gran` bytes (a power of two); `None` when the sizes overflow. An aligned
    /// placement reserves one alignment more than it maps, so that the segment's `skew` byte
    /// can land on a multiple of the alignment wherever the reservation starts.
    pub fn new(gran: usize, len: usize, placement: Placement) -> Option<Layout> {
        let (align, skew) = match placement {
            Placement::Anywhere => (gran, 0),
            Placement::Aligned { align, skew } => (align.max(gran), skew),
        };
        let pad = (gran - skew % gran) % gran;
        let phys_len = round_up(pad.checked_add(len)?, gran)?;
        Some(Layout {
            pad,
            phys_len,
            reserve_len: phys_len.checked_add(align)?,
            align,
            skew,
        })
    }

    /// Where the physical memory is mapped in the reservation starting at `range`: the segment
    /// (`pad` bytes on) then has its `skew` byte on a multiple of `align`.
    pub fn mapped_at(&self, range: usize) -> Option<usize> {
        let first = round_up(range.checked_add(self.pad + self.skew)?, self.align)?;
        Some(first - self.skew - self.pad)
    }
}

/// An export's words, little-endian.
pub(crate) fn encode(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The `n` words of an export's bytes, or `None` when it does not hold exactly that many.
pub(crate) fn decode(bytes: &[u8], n: usize) -> Option<Vec<u64>> {
    (bytes.len() == 8 * n).then(|| {
        bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8-byte chunk")))
            .collect()
    })
}

/// A device export's fixed words (physical length, pad, segment length) as sizes, checked to
/// fit each other; `what` names the device for the error.
pub(crate) fn shape(words: &[u64], what: &str) -> Result<(usize, usize, usize)> {
    let bad = || {
        Error::os(
            format!(
                "a {what} segment's export is malformed (is SHMEM_DEVICE the same on every PE?)"
            ),
            std::io::ErrorKind::InvalidData,
        )
    };
    let size = |v: u64| usize::try_from(v).map_err(|_| bad());
    let (phys_len, pad, len) = (size(words[0])?, size(words[1])?, size(words[2])?);
    if pad.checked_add(len).is_none_or(|end| end > phys_len) {
        return Err(bad());
    }
    Ok((phys_len, pad, len))
}

/// Copies `len` bytes from `base + src` to `base + dst` of device memory whose ranges overlap
/// (a block moved by less than its length): through host memory, chunk by chunk, in the order
/// that reads every byte before it is overwritten.
pub(crate) fn copy_overlapping(
    dev: &dyn DeviceMemory,
    base: usize,
    src: usize,
    dst: usize,
    len: usize,
) -> Result<()> {
    const CHUNK: usize = 1 << 20;
    let mut buf = vec![0u8; CHUNK.min(len)];
    let mut done = 0;
    while done < len {
        let n = buf.len().min(len - done);
        let at = if dst < src { done } else { len - done - n };
        // SAFETY: `buf` holds `n` bytes; the caller's ranges lie in one device segment.
        unsafe {
            dev.read(buf.as_mut_ptr(), base + src + at, n)?;
            dev.write(base + dst + at, buf.as_ptr(), n)?;
        }
        done += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_aligned_segment_lands_its_skewed_byte_on_the_alignment() {
        let gran = 2 << 20;
        let l = Layout::new(
            gran,
            (1 << 30) + 16384,
            Placement::Aligned {
                align: 1 << 30,
                skew: 16384,
            },
        )
        .unwrap();
        assert_eq!(l.pad, gran - 16384);
        assert_eq!(l.phys_len % gran, 0);
        assert!(l.phys_len >= l.pad + (1 << 30) + 16384);
        for range in [0x7f00_0000_0000usize, 0x7f00_0020_0000, 0x7f00_1fe0_0000] {
            let at = l.mapped_at(range).unwrap();
            assert_eq!(at % gran, 0, "mapped on a granule");
            assert!(at >= range && at + l.phys_len <= range + l.reserve_len);
            assert_eq!((at + l.pad + 16384) % (1 << 30), 0, "user base aligned");
        }
        let any = Layout::new(gran, 100, Placement::Anywhere).unwrap();
        assert_eq!((any.pad, any.phys_len), (0, gran));
        assert_eq!(any.mapped_at(0x4000_0000), Some(0x4000_0000));
        assert!(Layout::new(gran, usize::MAX - 10, Placement::Anywhere).is_none());
    }

    #[test]
    fn export_words_round_trip_and_are_checked() {
        let b = encode(&[4096, 16, 100]);
        let w = decode(&b, 3).unwrap();
        assert_eq!(shape(&w, "test").unwrap(), (4096, 16, 100));
        assert!(decode(&b, 4).is_none());
        assert!(shape(&[64, 16, 100], "test").is_err());
    }
}
