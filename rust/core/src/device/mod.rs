//! Devices: where symmetric memory lives. A [`Device`] allocates this PE's segment, exports it
//! for the PEs of its node (opaque bytes plus node-local handles such as file descriptors),
//! imports a peer's export, sets and copies bytes inside a segment, and says whether the CPU
//! may load and store its memory. The heap and the static data hold segments; they decide
//! layout, the device decides only placement and access.
//!
//! [`host`] keeps segments in shared-memory files in host memory; [`npu`] in an Ascend NPU's
//! memory through ACL (the CPU cannot load or store it: the host reaches it through
//! `transport::devcopy`). A GPU device is another file in this folder implementing the same
//! trait. Nothing here talks to the store
//! beyond [`exchange`], which moves exports between the PEs of a node.

pub mod cuda;
pub mod host;
pub mod npu;
mod vmm;

use crate::bootstrap::Bootstrap;
use crate::error::{Error, Result};
use crate::mapping::Mapping;
use rustix::fd::{AsFd, OwnedFd};
use std::any::Any;
use std::fmt;
use std::time::Duration;

/// Where a segment is placed in this process's address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Wherever the device (or the kernel) picks.
    Anywhere,
    /// At an address `a` with `a + skew` a multiple of `align` (a power of two, at least a
    /// page), so that an offset inside the segment can carry an alignment of up to `align`.
    Aligned {
        /// The alignment of `a + skew`.
        align: usize,
        /// Bytes from the segment's start to the aligned point.
        skew: usize,
    },
}

/// A segment as another PE of the node can import it. Its shape (how many handles, whether
/// there are bytes) is fixed per device kind, so every PE of a job makes the same exchange calls.
#[derive(Debug, Default)]
pub struct Export {
    /// Device-defined description (a memory handle, a length); empty for the host device.
    pub bytes: Vec<u8>,
    /// Node-local handles that travel with the bytes (at most one today; the host device's
    /// shared-memory file).
    pub fds: Vec<OwnedFd>,
}

/// Device-private state that keeps a segment's memory alive (released on drop).
pub type Backing = Box<dyn Any + Send + Sync>;

/// A block of symmetric memory of one PE, allocated here or imported from a peer. Dropping it
/// releases this process's hold on it (the memory itself lives until its last holder lets go).
pub struct Segment {
    addr: usize,
    len: usize,
    /// The CPU's view, when the device allows loads and stores.
    cpu: Option<Mapping>,
    /// What the device needs to export the segment again or to release it.
    backing: Backing,
}

impl fmt::Debug for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Segment")
            .field("addr", &format_args!("{:#x}", self.addr))
            .field("len", &self.len)
            .field("cpu", &self.cpu.is_some())
            .finish()
    }
}

impl Segment {
    /// A segment the CPU can load and store through `map`.
    pub fn mapped(map: Mapping, backing: Backing) -> Segment {
        Segment {
            addr: map.addr(),
            len: map.len(),
            cpu: Some(map),
            backing,
        }
    }

    /// A segment at device address `addr` that the CPU must not touch (NPU, GPU memory).
    pub fn unmapped(addr: usize, len: usize, backing: Backing) -> Segment {
        Segment {
            addr,
            len,
            cpu: None,
            backing,
        }
    }

    /// First byte of the segment in this process's (or the device's) address space.
    pub fn addr(&self) -> usize {
        self.addr
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The CPU's mapping of the segment, when the CPU may load and store it.
    pub fn cpu(&self) -> Option<&Mapping> {
        self.cpu.as_ref()
    }

    /// The device's private state behind the segment.
    pub fn backing(&self) -> &(dyn Any + Send + Sync) {
        &*self.backing
    }
}

/// Where symmetric memory lives: one implementation per kind of memory (host, NPU, GPU).
/// Calls that fail say what they were doing; the caller adds which PE and which segment.
pub trait Device: fmt::Debug + Send + Sync {
    /// Short name for messages ("host").
    fn name(&self) -> &'static str;

    /// Whether the CPU may load and store this device's segments (then every segment carries
    /// a [`Segment::cpu`] mapping).
    fn cpu_accessible(&self) -> bool;

    /// Allocates this PE's segment of `len` bytes, zero-filled, named `name` for diagnostics.
    fn allocate(&self, name: &str, len: usize, placement: Placement) -> Result<Segment>;

    /// Describes `segment` (allocated here) for the PEs of this node.
    fn export(&self, segment: &Segment) -> Result<Export>;

    /// Length in bytes of the segment `export` describes, before importing it (so a mismatch
    /// is found without mapping anything).
    fn exported_len(&self, export: &Export) -> Result<usize>;

    /// Makes a peer's exported segment reachable here.
    fn import(&self, export: &Export, placement: Placement) -> Result<Segment>;

    /// Releases this process's hold on `segment`.
    fn free(&self, segment: Segment) -> Result<()>;

    /// Sets `len` bytes at `offset` inside `segment` to `byte`.
    fn set(&self, segment: &Segment, offset: usize, byte: u8, len: usize) -> Result<()>;

    /// Copies `len` bytes from offset `src` to offset `dst` inside `segment` (the ranges may
    /// overlap).
    fn copy(&self, segment: &Segment, src: usize, dst: usize, len: usize) -> Result<()>;
}

/// Copies between host memory and device memory mapped in this process (an accelerator's).
pub trait DeviceMemory: Send + Sync + fmt::Debug {
    /// Copies `len` bytes from `src` (host or device memory) to the device address `to`;
    /// complete on return.
    ///
    /// # Safety
    /// `src` must be readable for `len` bytes; `to..to+len` must be device memory mapped here.
    unsafe fn write(&self, to: usize, src: *const u8, len: usize) -> Result<()>;
    /// Copies `len` bytes from the device address `from` to `dest` (host or device memory);
    /// complete on return.
    ///
    /// # Safety
    /// `dest` must be writable for `len` bytes; `from..from+len` must be device memory mapped
    /// here.
    unsafe fn read(&self, dest: *mut u8, from: usize, len: usize) -> Result<()>;
    /// The device's name, for messages.
    fn memory_name(&self) -> &'static str;
}

/// Which accelerator holds the heap: the job state's `heap_on_device` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcceleratorKind {
    /// An Ascend NPU, through ACL.
    Npu = 1,
    /// An NVIDIA GPU, through the CUDA driver.
    Cuda = 2,
}

/// How an on-stream signal changes its 32-bit word (`Accelerator::signal_on_stream`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamSignal {
    /// The word becomes the value.
    Set,
    /// The value is added to the word (wrapping), atomically.
    Add,
}

/// How an on-stream wait compares its 32-bit word with the value
/// (`Accelerator::wait_on_stream`): as signed 32-bit numbers, in the order and with the numbers
/// of CANN's `ACLSHMEM_CMP_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamCmp {
    /// word == value
    Eq = 0,
    /// word != value
    Ne = 1,
    /// word > value
    Gt = 2,
    /// word >= value
    Ge = 3,
    /// word < value
    Lt = 4,
    /// word <= value
    Le = 5,
}

impl StreamCmp {
    /// The comparison CANN numbers `cmp`, if it is one.
    pub fn from_cann(cmp: i32) -> Option<StreamCmp> {
        Some(match cmp {
            0 => StreamCmp::Eq,
            1 => StreamCmp::Ne,
            2 => StreamCmp::Gt,
            3 => StreamCmp::Ge,
            4 => StreamCmp::Lt,
            5 => StreamCmp::Le,
            _ => return None,
        })
    }
}

/// A device whose memory the CPU cannot load or store (an NPU, a GPU): besides `Device` and
/// the host's copies, what the runtime and the on-stream calls need of it. Streams are the
/// device API's own handles as a number (0: the current context's default stream).
pub trait Accelerator: Device + DeviceMemory {
    /// Which accelerator this is.
    fn kind(&self) -> AcceleratorKind;
    /// The device id this PE uses.
    fn device_id(&self) -> i32;
    /// The same device, as the heap holds it.
    fn as_device(&self) -> Box<dyn Device>;
    /// The same device, as the host data path holds it.
    fn as_memory(&self) -> Box<dyn DeviceMemory>;
    /// `len` bytes of plain device memory (not symmetric), for what kernels read.
    fn malloc(&self, len: usize) -> Result<usize>;
    /// Frees what `malloc` gave.
    fn free_plain(&self, at: usize) -> Result<()>;
    /// Enqueues a copy of `len` bytes between two device addresses on `stream`.
    fn copy_on_stream(&self, dst: usize, src: usize, len: usize, stream: usize) -> Result<()>;
    /// Enqueues `f(arg)` on `stream`: it runs on the device API's thread when the stream
    /// reaches it, and later work waits for it to return.
    fn call_on_stream(
        &self,
        stream: usize,
        f: unsafe extern "C" fn(*mut std::ffi::c_void),
        arg: usize,
    ) -> Result<()>;
    /// Enqueues a signal on `stream`: the 32-bit word at the device address `at` is set to, or
    /// increased by, `value` once the stream's earlier work is done and visible, where the
    /// device can do it on the stream itself (an `Unsupported` error where it cannot).
    fn signal_on_stream(
        &self,
        _stream: usize,
        _at: usize,
        _value: u32,
        _op: StreamSignal,
    ) -> Result<()> {
        Err(Error::Unsupported {
            what: "a signal on a stream",
            device: self.name(),
        })
    }
    /// Enqueues a wait on `stream` until the 32-bit word at the device address `at` compares
    /// with `value` as `cmp` says; the stream's later work runs after it and sees what the
    /// signaller wrote before the word. As `signal_on_stream`, where the device can.
    fn wait_on_stream(
        &self,
        _stream: usize,
        _at: usize,
        _value: u32,
        _cmp: StreamCmp,
    ) -> Result<()> {
        Err(Error::Unsupported {
            what: "a wait on a stream",
            device: self.name(),
        })
    }
    /// Waits, at most `timeout`, until the device has run everything the library enqueued on
    /// its streams (at finalize), without touching a stream handle the program may have
    /// destroyed since.
    fn drain(&self, timeout: Duration);
}

/// Checks that `offset..offset+len` lies inside `segment`, naming `what` otherwise.
pub(crate) fn check_range(segment: &Segment, what: &str, offset: usize, len: usize) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= segment.len() => Ok(()),
        _ => Err(Error::os(
            format!(
                "{what}: offset={offset} len={len} outside a segment of {} bytes",
                segment.len()
            ),
            std::io::ErrorKind::InvalidInput,
        )),
    }
}

/// Shares this PE's segment `mine` of `device` with every PE of this node (collective over the
/// job): exports it, exchanges the exports under `prefix` ([`exchange`]) and imports every
/// node peer's anywhere in this process once `check` (given the peer and its export) accepts
/// it. Every PE's segment, by rank: `mine` at this PE's, `None` for the PEs of other nodes.
pub fn share(
    device: &dyn Device,
    bootstrap: &Bootstrap,
    prefix: &str,
    mine: Segment,
    whose: &'static str,
    timeout: Duration,
    mut check: impl FnMut(usize, &Export) -> Result<()>,
) -> Result<Vec<Option<Segment>>> {
    let exports = exchange(bootstrap, prefix, device.export(&mine)?, whose, timeout)?;
    let mut segments = Vec::with_capacity(exports.len());
    let mut mine = Some(mine);
    for (pe, export) in exports.iter().enumerate() {
        let segment = match export {
            _ if pe == bootstrap.rank() => mine.take(),
            Some(export) => {
                check(pe, export)?;
                Some(device.import(export, Placement::Anywhere)?)
            }
            None => None,
        };
        segments.push(segment);
    }
    Ok(segments)
}

/// Exchanges the exports of this node's PEs under `prefix` (collective over the job): this
/// PE's `mine` goes out, and every node peer's comes back indexed by PE (this PE's own
/// included); `None` for the PEs of other nodes, whose node-local descriptors cannot come
/// here. `whose` names what is exchanged for the message when a PE never publishes it.
pub fn exchange(
    bootstrap: &Bootstrap,
    prefix: &str,
    mine: Export,
    whose: &'static str,
    timeout: Duration,
) -> Result<Vec<Option<Export>>> {
    if mine.fds.len() > 1 {
        return Err(Error::os(
            format!(
                "exporting {prefix}: {} handles, at most one",
                mine.fds.len()
            ),
            std::io::ErrorKind::InvalidInput,
        ));
    }
    let nodes = bootstrap.nodes();
    let mut all: Vec<Option<Export>> = (0..bootstrap.size())
        .map(|pe| nodes.is_local(pe).then(Export::default))
        .collect();
    if let Some(fd) = mine.fds.first() {
        // Every node peer's descriptor in one round trip (this PE's own comes back too).
        let fds =
            (bootstrap.exchange_fds(prefix, fd.as_fd(), timeout)).map_err(|e| e.unshared(whose))?;
        for (export, fd) in all.iter_mut().zip(fds) {
            if let (Some(export), Some(fd)) = (export, fd) {
                export.fds.push(fd);
            }
        }
    }
    if !mine.bytes.is_empty() {
        let bytes = (bootstrap.allgather(&mine.bytes, timeout)).map_err(|e| e.unshared(whose))?;
        for (export, bytes) in all.iter_mut().zip(bytes) {
            if let Some(export) = export {
                export.bytes = bytes;
            }
        }
    }
    Ok(all)
}
