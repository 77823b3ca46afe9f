//! What memfabric's families share on the npu device: the one NPU of the process and the
//! windows of device address space they place their memory in.
//!
//! - **The device** ([`open`]): `SHMEM_DEVICE=npu`, or `auto` where ACL loads and reports a
//!   device, as a SHMEM job chooses its heap's ([`choice`]). The first family to initialise
//!   opens NPU `deviceId` ([`Npu::attach`]); the others share it. One device per process: a
//!   family given another `deviceId` fails to initialise, naming both.
//! - **A window** ([`DeviceWindow`]): a range of device address space with this rank's memory
//!   mapped at its place, and the memory of ranks of this node imported at theirs through
//!   shareable handles ([`DeviceWindow::import`]), each unmapped on its own when its rank goes
//!   ([`DeviceWindow::unmap`]) or all together when the window is dropped.
//! - **A rank's description** ([`NpuPeer`]): its process id (what an export allows), its
//!   device (what an import must reach) and its node, as bytes the families exchange.

use std::sync::{Mutex, MutexGuard};

use crate::bootstrap::node::locality::NodeId;
use crate::device::npu::{self, Npu};
use crate::device::Accelerator;

/// The NPU of this process, once a family opened it; kept for the process's life.
static OPENED: Mutex<Option<Npu>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where `SHMEM_DEVICE` puts memfabric's device memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// `npu`, or `auto` where ACL loads and reports a device.
    Npu,
    /// `host`, or `auto` without ACL.
    Host,
    /// Another device (`cuda`): memfabric's families have no memory there.
    Other(&'static str),
}

/// `SHMEM_DEVICE`'s choice for memfabric's families (a bad value: its message).
pub fn choice() -> Result<Choice, String> {
    let device = crate::env::device().map_err(|e| e.to_string())?;
    Ok(match device {
        "npu" => Choice::Npu,
        "auto" if npu::present(&library()) => Choice::Npu,
        "auto" | "host" => Choice::Host,
        other => Choice::Other(other),
    })
}

fn library() -> String {
    crate::env::text(crate::env::ACL_LIBRARY).unwrap_or_else(|| ascend_sys::LIBRARY.into())
}

/// The process's NPU, device `device_id` (memfabric's `deviceId`): opened by the first call,
/// shared by the later ones. A later call naming another device fails: one device per process.
pub fn open(device_id: u16) -> Result<Npu, String> {
    let mut opened = lock(&OPENED);
    if let Some(npu) = opened.as_ref() {
        if npu.device_id() != i32::from(device_id) {
            return Err(format!(
                "deviceId={device_id}: this process uses NPU device {} already (opened by \
                 another memfabric family's init); every family of a process must be given the \
                 same deviceId",
                npu.device_id()
            ));
        }
        return Ok(npu.clone());
    }
    let npu = Npu::attach(&library(), Some(i32::from(device_id)), 0)
        .map_err(|e| format!("deviceId={device_id}: opening the npu device: {e}"))?;
    *opened = Some(npu.clone());
    Ok(npu)
}

/// A rank's NPU as the ranks of its node need it: the process an export must allow, the
/// device an import must reach, and the node (only ranks of one node share device memory).
#[derive(Debug, Clone)]
pub struct NpuPeer {
    pub pid: i32,
    pub device: i32,
    pub node: NodeId,
}

impl NpuPeer {
    /// This process's, on `npu`.
    pub fn this(npu: &Npu) -> crate::error::Result<NpuPeer> {
        Ok(NpuPeer {
            pid: npu.pid(),
            device: npu.device_id(),
            node: NodeId::this()?,
        })
    }

    /// As bytes: pid and device (4 bytes each, little-endian), then the node.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = self.pid.to_le_bytes().to_vec();
        v.extend_from_slice(&self.device.to_le_bytes());
        v.extend_from_slice(&self.node.encode());
        v
    }

    /// From [`NpuPeer::encode`]'s bytes; `None` when they are not that.
    pub fn decode(bytes: &[u8]) -> Option<NpuPeer> {
        let word = |at: usize| {
            bytes
                .get(at..at + 4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(i32::from_le_bytes)
        };
        Some(NpuPeer {
            pid: word(0)?,
            device: word(4)?,
            node: NodeId::decode(bytes.get(8..)?).ok()?,
        })
    }

    /// Whether this rank runs on the node of `other`.
    pub fn same_node(&self, other: &NpuPeer) -> bool {
        self.node.same_node(&other.node)
    }
}

/// A window in an NPU's address space (its addresses are device addresses): this rank's part
/// is physical memory of its own, the parts of ranks of its node are their memory imported
/// through shareable handles. The CPU never touches it. Dropping it unmaps every part, lets go
/// of their memory and releases the range.
pub struct DeviceWindow {
    pub npu: Npu,
    pub base: usize,
    /// This rank's physical memory (for its export).
    pub own: usize,
    /// What is mapped in the range: (address, ACL handle), this rank's first.
    slots: Vec<(usize, usize)>,
}

impl DeviceWindow {
    /// Reserves `total` bytes of device address space and maps `slot` bytes of new memory at
    /// `own` bytes in (none when `slot` is 0).
    pub fn new(
        npu: &Npu,
        total: usize,
        own: usize,
        slot: usize,
    ) -> crate::error::Result<DeviceWindow> {
        let base = npu.reserve_range(total)?;
        if slot == 0 {
            return Ok(DeviceWindow {
                npu: npu.clone(),
                base,
                own: 0,
                slots: Vec::new(),
            });
        }
        match npu.map_new(base + own, slot) {
            Ok(h) => Ok(DeviceWindow {
                npu: npu.clone(),
                base,
                own: h,
                slots: vec![(base + own, h)],
            }),
            Err(e) => {
                npu.release_range(base);
                Err(e)
            }
        }
    }

    /// Maps `len` bytes of a peer's memory, exported as `shareable` on its `device`, at
    /// `offset` bytes into the window (this device first made able to reach that one).
    pub fn import(
        &mut self,
        device: i32,
        shareable: u64,
        offset: usize,
        len: usize,
    ) -> crate::error::Result<()> {
        self.npu.reach(device)?;
        let at = self.base + offset;
        let imported = self.npu.map_shared(shareable, at, len)?;
        self.slots.push((at, imported));
        Ok(())
    }

    /// Unmaps what [`DeviceWindow::import`] mapped at `offset` bytes into the window, and lets
    /// go of it; nothing there: nothing to do.
    pub fn unmap(&mut self, offset: usize) -> crate::error::Result<()> {
        let at = self.base + offset;
        match self.slots.iter().position(|&(a, _)| a == at) {
            Some(i) => {
                let (at, handle) = self.slots.remove(i);
                self.npu.unmap_and_free(at, handle)
            }
            None => Ok(()),
        }
    }
}

impl Drop for DeviceWindow {
    fn drop(&mut self) {
        for &(at, handle) in self.slots.iter().rev() {
            if let Err(e) = self.npu.unmap_and_free(at, handle) {
                tracing::warn!("device window at {:#x}: {e}", self.base);
            }
        }
        self.npu.release_range(self.base);
    }
}
