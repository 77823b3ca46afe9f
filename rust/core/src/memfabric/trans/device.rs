//! The transfer engine on the npu device (`SHMEM_DEVICE=npu`, or `auto` where ACL loads and
//! reports a device: [`npu::choice`]): registrations of NPU memory, shared with the engines of
//! this node through ACL's shareable handles, and copies by the NPU. Never touches NPU memory
//! with the CPU; never reaches NPU memory of another node (the host transports cannot).
//!
//! - **Init** opens NPU `deviceId` ([`npu::open`]): one device per process, shared with Big
//!   Memory and Share Memory.
//! - **Registration.** A range that starts where NPU memory is mapped (`aclrtMapMem`'s
//!   address: [`Npu::retain`] takes a reference to its physical memory) is exported as a
//!   shareable handle and published with the NPU device in the engine's record. A range
//!   elsewhere in a block ACL allocated (`aclrtMalloc`, as torch_npu's caching allocator
//!   allocates: a tensor at an offset in it; ACL names the block,
//!   [`Npu::address_range`]) is exported by the block's IPC key ([`Npu::ipc_export`], one
//!   export per block whatever the registrations in it) and published with its offset in the
//!   block. A range in the NPU's address window that is neither is refused; any other range is
//!   host memory, registered as on the host device. Deregistration and the engine's end let
//!   go of the reference, and of the IPC key with the block's last registration.
//! - **Admission.** Every engine on the npu device publishes its NPU process id. Its listener
//!   ([`listen`]) lets each engine of this node import this engine's exports: the engines met
//!   in the group's announcements of newcomers, and, once a second, any member not met yet
//!   (one that published its record late, or was there before).
//! - **Imports** are made at a transfer's first use of a peer's registration, mapped in a
//!   window of device address space of their own ([`DeviceWindow`]), or, for an IPC key, where
//!   ACL maps the block (one import per key, shared by the registrations in it), retried up to the peer
//!   timeout while the peer has not let this process in yet. They are unmapped when the peer
//!   withdrew the registration (seen by the next transfer to it), when the peer left or died
//!   (the listener), and when this engine ends. A copy on a stream holds its imports until the
//!   stream has run it.

use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::device::npu::Npu;
use crate::device::Accelerator;
use crate::group::MemberEvent;
use crate::memfabric::bm::classify::DEVICE_VA;
use crate::memfabric::npu::{self, DeviceWindow};

use super::{lock, Engine, Result, TransError};

/// Longest wait of the listener between looks at its stop flag.
const SLICE: Duration = Duration::from_millis(100);
/// How often the listener looks for members it has not met.
const RESCAN: Duration = Duration::from_secs(1);
/// How long the listener waits for a newcomer's record.
const RECORD_WAIT: Duration = Duration::from_millis(500);

/// The npu device's part of an engine.
pub(super) struct NpuEngine {
    pub npu: Npu,
    exports: Mutex<Exports>,
    /// Peers' registrations mapped here: by the peer's unique id, then the registration's name.
    imports: Mutex<HashMap<String, HashMap<String, Arc<Import>>>>,
    /// Peers' blocks imported by IPC key, by key (held by the imports in them); each key's
    /// slot has a lock of its own, held while that key is imported (its retries included), so
    /// an import that waits for its peer holds up no other key's.
    ipc_imports: Mutex<HashMap<String, Arc<IpcSlot>>>,
    stop: Arc<AtomicBool>,
    listener: Mutex<Option<JoinHandle<()>>>,
}

/// How a registration of NPU memory is published for the engines of its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum DeviceMem {
    /// Physical memory mapped at the registration's start, exported as a shareable handle.
    Handle { shareable: u64, device: i32 },
    /// Inside an `aclrtMalloc` block exported by IPC `key`, `offset` bytes into it.
    Ipc {
        key: String,
        offset: u64,
        device: i32,
    },
}

/// This engine's device registrations and the processes let in to them.
#[derive(Default)]
struct Exports {
    /// By start address.
    regs: BTreeMap<u64, Export>,
    /// The `aclrtMalloc` blocks exported by IPC key, by start address: the key and how many
    /// registrations lie in the block.
    blocks: HashMap<usize, (String, usize)>,
    /// The NPU process ids of the engines of this node met so far, by unique id (0: an engine
    /// that imports nothing from here: another node's, or one on the host device).
    admitted: HashMap<String, i32>,
}

/// A device registration of this engine: its reference to the memory and the export.
struct Export {
    len: u64,
    kind: ExportKind,
}

enum ExportKind {
    /// A reference of [`Npu::retain`] and its shareable handle.
    Handle { handle: usize, shareable: u64 },
    /// In the IPC-exported block starting at `block` ([`Exports::blocks`]).
    Ipc { block: usize },
}

/// A peer's registration mapped here.
pub(super) struct Import {
    mem: DeviceMem,
    mapped: Mapped,
}

enum Mapped {
    /// Imported from a shareable handle into a window of its own.
    Window(DeviceWindow),
    /// In a peer's block imported by IPC key.
    Ipc(Arc<IpcImport>),
}

/// A peer's block imported by IPC key, closed when the last registration using it goes.
struct IpcImport {
    npu: Npu,
    key: String,
    base: usize,
    slot: Arc<IpcSlot>,
}

/// One IPC key's place in [`NpuEngine::ipc_imports`]. ACL closes an import by its key, so a
/// key is imported again only once the close of its previous import has run: `open` stays
/// set from the import until that close, and an importer that finds the last import gone but
/// still open waits on `closed`.
#[derive(Default)]
struct IpcSlot {
    state: Mutex<SlotState>,
    closed: Condvar,
}

#[derive(Default)]
struct SlotState {
    /// The key's import, while a registration uses it.
    import: Weak<IpcImport>,
    /// Imported and not closed yet.
    open: bool,
}

impl Drop for IpcImport {
    fn drop(&mut self) {
        let mut st = lock(&self.slot.state);
        if let Err(e) = self.npu.ipc_close(&self.key) {
            tracing::warn!("closing the imported NPU block {}: {e}", self.key);
        }
        st.open = false;
        drop(st);
        self.slot.closed.notify_all();
    }
}

impl Import {
    /// Where the registration's first byte is mapped here.
    pub fn base(&self) -> usize {
        match (&self.mapped, &self.mem) {
            (Mapped::Window(w), _) => w.base,
            (Mapped::Ipc(i), DeviceMem::Ipc { offset, .. }) => i.base + *offset as usize,
            (Mapped::Ipc(i), DeviceMem::Handle { .. }) => i.base,
        }
    }
}

/// How the NPU copies an element: between `local` and `at` (in an import), `len` bytes.
pub(super) struct DeviceElement {
    pub local: usize,
    pub at: usize,
    pub len: usize,
}

impl NpuEngine {
    pub fn new(npu: Npu) -> NpuEngine {
        NpuEngine {
            npu,
            exports: Mutex::new(Exports::default()),
            imports: Mutex::new(HashMap::new()),
            ipc_imports: Mutex::new(HashMap::new()),
            stop: Arc::new(AtomicBool::new(false)),
            listener: Mutex::new(None),
        }
    }

    /// This process's NPU as the engine's record publishes it: process id and device.
    pub fn published(&self) -> (i32, i32) {
        (self.npu.pid(), self.npu.device_id())
    }

    /// Exports `[addr, +len)` when it is NPU memory: how it is published; `None` for host
    /// memory.
    pub fn export(&self, addr: u64, len: u64) -> Result<Option<DeviceMem>> {
        let handle = match self.npu.retain(addr as usize) {
            Ok(h) => h,
            Err(e) => return self.export_in_block(addr, len, &e.to_string()),
        };
        let mut ex = lock(&self.exports);
        let pids: Vec<i32> = ex.admitted.values().copied().filter(|&p| p > 0).collect();
        match self.npu.share_handle(handle, &pids) {
            Ok(shareable) => {
                ex.regs.insert(
                    addr,
                    Export {
                        len,
                        kind: ExportKind::Handle { handle, shareable },
                    },
                );
                Ok(Some(DeviceMem::Handle {
                    shareable,
                    device: self.npu.device_id(),
                }))
            }
            Err(e) => {
                let _ = self.npu.free_handle(handle);
                Err(TransError::error(format!(
                    "exporting NPU memory [{addr:#x}, +{len}): {e}"
                )))
            }
        }
    }

    /// Exports `[addr, +len)`, which does not start a mapping (`not_mapped`: why), by the IPC
    /// key of the `aclrtMalloc` block that holds it; `None` for host memory.
    fn export_in_block(&self, addr: u64, len: u64, not_mapped: &str) -> Result<Option<DeviceMem>> {
        let in_window = DEVICE_VA.contains(&(addr as usize));
        let refuse = |why: String| {
            TransError::invalid(format!(
                "invalid argument address={addr:#x} capacity={len}: NPU memory is registered \
                 from where it was mapped (aclrtMapMem's address) or inside a block aclrtMalloc \
                 allocated: {why}"
            ))
        };
        let (base, size) = match self.npu.address_range(addr as usize) {
            Ok(r) => r,
            Err(e) if in_window => return Err(refuse(format!("{not_mapped}; {e}"))),
            Err(e) => {
                tracing::trace!("{addr:#x} is host memory: {e}");
                return Ok(None);
            }
        };
        let offset = addr - base as u64;
        if len > (size as u64).saturating_sub(offset) {
            return Err(refuse(format!(
                "it runs past the end of the block [{base:#x}, +{size}) that holds it"
            )));
        }
        let mut ex = lock(&self.exports);
        let key = match ex.blocks.get_mut(&base) {
            Some((key, n)) => {
                *n += 1;
                key.clone()
            }
            None => {
                let pids: Vec<i32> = ex.admitted.values().copied().filter(|&p| p > 0).collect();
                match self.npu.ipc_export(base, size, &pids) {
                    Ok(key) => {
                        ex.blocks.insert(base, (key.clone(), 1));
                        key
                    }
                    Err(e) if in_window => return Err(refuse(format!("{not_mapped}; {e}"))),
                    Err(e) => {
                        // A block of host memory (aclrtMallocHost): registered as host memory.
                        tracing::trace!("{addr:#x} is host memory: {e}");
                        return Ok(None);
                    }
                }
            }
        };
        ex.regs.insert(
            addr,
            Export {
                len,
                kind: ExportKind::Ipc { block: base },
            },
        );
        Ok(Some(DeviceMem::Ipc {
            key,
            offset,
            device: self.npu.device_id(),
        }))
    }

    /// Lets go of the export at `addr` (its registration unpublished already).
    pub fn withdraw(&self, addr: u64) {
        let mut ex = lock(&self.exports);
        if let Some(e) = ex.regs.remove(&addr) {
            self.release(&mut ex, addr, e);
        }
    }

    /// Lets go of export `e` at `addr`: its reference, or its share of its block's IPC key.
    fn release(&self, ex: &mut Exports, addr: u64, e: Export) {
        let r = match e.kind {
            ExportKind::Handle { handle, .. } => self.npu.free_handle(handle),
            ExportKind::Ipc { block } => match ex.blocks.get_mut(&block) {
                Some((_, n)) if *n > 1 => {
                    *n -= 1;
                    Ok(())
                }
                Some(_) => {
                    let (key, _) = ex.blocks.remove(&block).unwrap_or_default();
                    self.npu.ipc_close(&key)
                }
                None => Ok(()),
            },
        };
        if let Err(err) = r {
            tracing::warn!("NPU memory [{addr:#x}, +{}): {err}", e.len);
        }
    }

    /// Whether `[addr, +len)` of this process is NPU memory: in the NPU's address window, or in
    /// a device registration of this engine.
    pub fn is_device(&self, addr: usize, len: usize) -> bool {
        if DEVICE_VA.contains(&addr) {
            return true;
        }
        let ex = lock(&self.exports);
        ex.regs
            .range(..=addr as u64)
            .next_back()
            .is_some_and(|(&s, e)| {
                (addr as u64) < s + e.len && len as u64 <= s + e.len - addr as u64
            })
    }

    /// Lets engine `id` of this node, NPU process `pid`, import every export of this engine.
    fn admit(&self, id: &str, pid: i32) {
        let mut ex = lock(&self.exports);
        if ex.admitted.insert(id.to_string(), pid) == Some(pid) || pid <= 0 {
            return;
        }
        for (addr, e) in &ex.regs {
            if let ExportKind::Handle { shareable, .. } = e.kind {
                if let Err(err) = self.npu.allow(shareable, &[pid]) {
                    tracing::warn!(
                        "letting engine '{id}' import [{addr:#x}, +{}): {err}",
                        e.len
                    );
                }
            }
        }
        for (base, (key, _)) in &ex.blocks {
            if let Err(err) = self.npu.ipc_allow(key, &[pid]) {
                tracing::warn!("letting engine '{id}' import the NPU block at {base:#x}: {err}");
            }
        }
    }

    fn admitted(&self, id: &str) -> bool {
        lock(&self.exports).admitted.contains_key(id)
    }

    /// Forgets engine `id`, which left or died: its registrations are unmapped here.
    fn forget(&self, id: &str) {
        lock(&self.exports).admitted.remove(id);
        lock(&self.imports).remove(id);
    }

    /// Unmaps what is mapped here of peer `id`'s registrations that `keep` no longer holds.
    pub fn prune(&self, id: &str, keep: impl Fn(&str, &DeviceMem) -> bool) {
        if let Some(m) = lock(&self.imports).get_mut(id) {
            m.retain(|name, i| keep(name, &i.mem));
        }
    }

    /// Peer `id`'s registration `name` (`len` bytes, published as `mem`), mapped here: at once
    /// when it is, else imported, retried until `deadline` while the peer has not let this
    /// process in.
    pub fn import(
        &self,
        id: &str,
        name: &str,
        mem: &DeviceMem,
        len: u64,
        deadline: Instant,
    ) -> Result<Arc<Import>> {
        if let Some(i) = lock(&self.imports).get(id).and_then(|m| m.get(name)) {
            if i.mem == *mem {
                return Ok(Arc::clone(i));
            }
        }
        let mapped = match mem {
            DeviceMem::Handle { shareable, device } => {
                Mapped::Window(self.import_window(id, name, *shareable, *device, len, deadline)?)
            }
            DeviceMem::Ipc { key, device, .. } => {
                Mapped::Ipc(self.import_block(id, name, key, *device, deadline)?)
            }
        };
        let i = Arc::new(Import {
            mem: mem.clone(),
            mapped,
        });
        lock(&self.imports)
            .entry(id.to_string())
            .or_default()
            .insert(name.to_string(), Arc::clone(&i));
        Ok(i)
    }

    /// Peer `id`'s block exported as IPC `key` on `device` (holding its registration `name`),
    /// imported here once whatever the registrations in it.
    fn import_block(
        &self,
        id: &str,
        name: &str,
        key: &str,
        device: i32,
        deadline: Instant,
    ) -> Result<Arc<IpcImport>> {
        let slot = {
            let mut blocks = lock(&self.ipc_imports);
            // Slots nobody holds whose import is closed go; a slot in use stays.
            blocks.retain(|_, s| {
                Arc::strong_count(s) > 1 || s.state.try_lock().map_or(true, |st| st.open)
            });
            Arc::clone(blocks.entry(key.to_string()).or_default())
        };
        // One importer of a key at a time (the others want the same import); other keys go on.
        let mut st = lock(&slot.state);
        if let Some(b) = st.import.upgrade() {
            return Ok(b);
        }
        // The last registration in the block let go of it and its close has not run yet: after
        // that close (which unmaps by key), not before.
        while st.open {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(TransError::error(format!(
                    "engine '{id}': importing the NPU block of its registration {name} (IPC \
                     key {key} on device {device}): its previous import here is still closing"
                )));
            }
            st = slot
                .closed
                .wait_timeout(st, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        loop {
            match self.npu.ipc_import(key) {
                Ok(base) => {
                    let b = Arc::new(IpcImport {
                        npu: self.npu.clone(),
                        key: key.to_string(),
                        base,
                        slot: Arc::clone(&slot),
                    });
                    st.import = Arc::downgrade(&b);
                    st.open = true;
                    return Ok(b);
                }
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(e) => {
                    return Err(TransError::error(format!(
                        "engine '{id}': importing the NPU block of its registration {name} \
                         (IPC key {key} on device {device}): {e}"
                    )))
                }
            }
        }
    }

    /// Peer `id`'s registration `name` exported as `shareable` on `device`, imported into a
    /// window of its own.
    fn import_window(
        &self,
        id: &str,
        name: &str,
        shareable: u64,
        device: i32,
        len: u64,
        deadline: Instant,
    ) -> Result<DeviceWindow> {
        let g = self.npu.granularity();
        let span = (len as usize).div_ceil(g) * g;
        let mut window = DeviceWindow::new(&self.npu, span, 0, 0).map_err(|e| {
            TransError::error(format!(
                "engine '{id}': reserving {span} bytes of NPU address space for its \
                 registration {name}: {e}"
            ))
        })?;
        loop {
            match window.import(device, shareable, 0, span) {
                Ok(()) => break,
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(e) => {
                    return Err(TransError::error(format!(
                        "engine '{id}': importing its NPU registration {name} ({len} bytes on \
                         device {device}): {e}"
                    )))
                }
            }
        }
        Ok(window)
    }

    /// Copies each element by the NPU: complete on return, or, with a `stream`, enqueued on it
    /// (with a release of `held` after the copies, so the imports outlive them).
    pub fn copy(
        &self,
        write: bool,
        elements: &[DeviceElement],
        stream: usize,
        held: Vec<Arc<Import>>,
    ) -> std::result::Result<(), String> {
        for el in elements {
            let (dst, src) = if write {
                (el.at, el.local)
            } else {
                (el.local, el.at)
            };
            // SAFETY: `at..at+len` lies in an import mapped here (held until the copy ran);
            // the local buffer is the caller's, valid and untouched until the call returns or,
            // for a submit, until the stream ran the copy (memfabric's contract).
            let r = unsafe {
                if stream == 0 {
                    self.npu.copy(dst, src, el.len)
                } else {
                    self.npu.copy_on(dst, src, el.len, stream)
                }
            };
            r.map_err(|e| e.to_string())?;
        }
        if stream != 0 && !held.is_empty() {
            let arg = Box::into_raw(Box::new(held));
            if let Err(e) = self
                .npu
                .call_on_stream(stream, release_imports, arg as usize)
            {
                // Not enqueued: the box is still ours, dropped once the copies enqueued
                // before are done with the imports.
                let _ = self.npu.synchronize(stream);
                // SAFETY: `arg` is the box made above, which the stream never received.
                drop(unsafe { Box::from_raw(arg) });
                return Err(e.to_string());
            }
        }
        Ok(())
    }

    /// Stops the listener, unmaps every import and lets go of every export (the registrations
    /// unpublished already).
    pub fn end(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = lock(&self.listener).take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
        lock(&self.imports).clear();
        let mut ex = lock(&self.exports);
        let regs = std::mem::take(&mut ex.regs);
        for (addr, e) in regs {
            self.release(&mut ex, addr, e);
        }
    }
}

/// Run by a stream after a submit's copies: drops the imports they used.
unsafe extern "C" fn release_imports(arg: *mut c_void) {
    // SAFETY: `arg` is the box `NpuEngine::copy` enqueued, run once by the stream.
    drop(unsafe { Box::from_raw(arg as *mut Vec<Arc<Import>>) });
}

/// The device a transfer engine's init opens: `Some` on the npu device, `None` on the host.
pub(super) fn open(device_id: u32) -> Result<Option<Npu>> {
    match npu::choice().map_err(TransError::invalid)? {
        npu::Choice::Npu => {
            let id = u16::try_from(device_id).map_err(|_| {
                TransError::invalid(format!(
                    "invalid argument config->deviceId={device_id}: the npu device \
                     (SHMEM_DEVICE) needs the id of an NPU"
                ))
            })?;
            npu::open(id).map(Some).map_err(TransError::error)
        }
        npu::Choice::Host | npu::Choice::Other(_) => Ok(None),
    }
}

/// Starts engine `e`'s listener (an engine on the npu device): it admits the engines of this
/// node to its exports and forgets those that left or died.
pub(super) fn listen(e: &Arc<Engine>) -> Result<()> {
    let Some(d) = &e.device else {
        return Ok(());
    };
    let weak = Arc::downgrade(e);
    let stop = Arc::clone(&d.stop);
    let t = std::thread::Builder::new()
        .name("smem-trans-npu".into())
        .stack_size(256 * 1024)
        .spawn(move || {
            let mut scanned: Option<Instant> = None;
            while !stop.load(Ordering::SeqCst) {
                let Some(e) = weak.upgrade() else {
                    return;
                };
                let Some(d) = &e.device else {
                    return;
                };
                match e.group.next_event(SLICE) {
                    Some(MemberEvent::Joined { member, .. }) => admit(&e, d, &member),
                    Some(MemberEvent::Left { member, .. })
                    | Some(MemberEvent::Down { member, .. }) => d.forget(&member),
                    _ if scanned.is_none_or(|t| t.elapsed() >= RESCAN) => {
                        scanned = Some(Instant::now());
                        match e.group.members() {
                            Ok(members) => {
                                for (_, id) in members {
                                    if id != e.id && !d.admitted(&id) {
                                        admit(&e, d, &id);
                                    }
                                }
                            }
                            Err(err) => tracing::debug!("engine '{}': {err}", e.id),
                        }
                    }
                    _ => {}
                }
            }
        })
        .map_err(|err| TransError::error(format!("engine '{}': its listener: {err}", e.id)))?;
    *lock(&d.listener) = Some(t);
    Ok(())
}

/// Reads engine `id`'s record and admits it when it runs on this node's NPU.
fn admit(e: &Engine, d: &NpuEngine, id: &str) {
    match e.fetch(id, RECORD_WAIT) {
        Ok(Some(p)) => {
            let pid = match p.record.npu {
                Some((pid, _)) if p.record.node == e.node => pid,
                _ => 0,
            };
            d.admit(id, pid);
        }
        Ok(None) => {}
        Err(err) => tracing::debug!("engine '{}': {}", e.id, err.message),
    }
}
