//! The transfer engine on the npu device (`SHMEM_DEVICE=npu`, or `auto` where ACL loads and
//! reports a device: [`npu::choice`]): registrations of NPU memory, shared with the engines of
//! this node through ACL's shareable handles, and copies by the NPU. Never touches NPU memory
//! with the CPU; never reaches NPU memory of another node (the host transports cannot).
//!
//! - **Init** opens NPU `deviceId` ([`npu::open`]): one device per process, shared with Big
//!   Memory and Share Memory.
//! - **Registration.** A range that starts where NPU memory is mapped (`aclrtMapMem`'s
//!   address: [`Npu::retain`] takes a reference to its physical memory) is exported as a
//!   shareable handle and published with the NPU device in the engine's record. A range in the
//!   NPU's address window that does not start there is refused; any other range is host
//!   memory, registered as on the host device. Deregistration and the engine's end let go of
//!   the reference.
//! - **Admission.** Every engine on the npu device publishes its NPU process id. Its listener
//!   ([`listen`]) lets each engine of this node import this engine's exports: the engines met
//!   in the group's announcements of newcomers, and, once a second, any member not met yet
//!   (one that published its record late, or was there before).
//! - **Imports** are made at a transfer's first use of a peer's registration, mapped in a
//!   window of device address space of their own ([`DeviceWindow`]), retried up to the peer
//!   timeout while the peer has not let this process in yet. They are unmapped when the peer
//!   withdrew the registration (seen by the next transfer to it), when the peer left or died
//!   (the listener), and when this engine ends. A copy on a stream holds its imports until the
//!   stream has run it.

use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
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
    stop: Arc<AtomicBool>,
    listener: Mutex<Option<JoinHandle<()>>>,
}

/// This engine's device registrations and the processes let in to them.
#[derive(Default)]
struct Exports {
    /// By start address.
    regs: BTreeMap<u64, Export>,
    /// The NPU process ids of the engines of this node met so far, by unique id (0: an engine
    /// that imports nothing from here: another node's, or one on the host device).
    admitted: HashMap<String, i32>,
}

/// A device registration of this engine: its reference to the memory and the export.
struct Export {
    len: u64,
    handle: usize,
    shareable: u64,
}

/// A peer's registration mapped here.
pub(super) struct Import {
    window: DeviceWindow,
    shareable: u64,
}

impl Import {
    /// Where the registration's first byte is mapped here.
    pub fn base(&self) -> usize {
        self.window.base
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
            stop: Arc::new(AtomicBool::new(false)),
            listener: Mutex::new(None),
        }
    }

    /// This process's NPU as the engine's record publishes it: process id and device.
    pub fn published(&self) -> (i32, i32) {
        (self.npu.pid(), self.npu.device_id())
    }

    /// Exports `[addr, +len)` when it is NPU memory: its shareable handle and device; `None`
    /// for host memory.
    pub fn export(&self, addr: u64, len: u64) -> Result<Option<(u64, i32)>> {
        let handle = match self.npu.retain(addr as usize) {
            Ok(h) => h,
            Err(e) if DEVICE_VA.contains(&(addr as usize)) => {
                return Err(TransError::invalid(format!(
                    "invalid argument address={addr:#x} capacity={len}: NPU memory is \
                     registered from where it was mapped (aclrtMapMem's address, the start of \
                     a tensor's block): {e}"
                )))
            }
            Err(e) => {
                tracing::trace!("{addr:#x} is host memory: {e}");
                return Ok(None);
            }
        };
        let mut ex = lock(&self.exports);
        let pids: Vec<i32> = ex.admitted.values().copied().filter(|&p| p > 0).collect();
        match self.npu.share_handle(handle, &pids) {
            Ok(shareable) => {
                ex.regs.insert(
                    addr,
                    Export {
                        len,
                        handle,
                        shareable,
                    },
                );
                Ok(Some((shareable, self.npu.device_id())))
            }
            Err(e) => {
                let _ = self.npu.free_handle(handle);
                Err(TransError::error(format!(
                    "exporting NPU memory [{addr:#x}, +{len}): {e}"
                )))
            }
        }
    }

    /// Lets go of the export at `addr` (its registration unpublished already).
    pub fn withdraw(&self, addr: u64) {
        let e = lock(&self.exports).regs.remove(&addr);
        if let Some(e) = e {
            if let Err(err) = self.npu.free_handle(e.handle) {
                tracing::warn!("NPU memory [{addr:#x}, +{}): {err}", e.len);
            }
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
            if let Err(err) = self.npu.allow(e.shareable, &[pid]) {
                tracing::warn!(
                    "letting engine '{id}' import [{addr:#x}, +{}): {err}",
                    e.len
                );
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
    pub fn prune(&self, id: &str, keep: impl Fn(&str, u64) -> bool) {
        if let Some(m) = lock(&self.imports).get_mut(id) {
            m.retain(|name, i| keep(name, i.shareable));
        }
    }

    /// Peer `id`'s registration `name` (`len` bytes, exported as `shareable` on `device`),
    /// mapped here: at once when it is, else imported, retried until `deadline` while the
    /// peer has not let this process in.
    pub fn import(
        &self,
        id: &str,
        name: &str,
        shareable: u64,
        device: i32,
        len: u64,
        deadline: Instant,
    ) -> Result<Arc<Import>> {
        if let Some(i) = lock(&self.imports).get(id).and_then(|m| m.get(name)) {
            if i.shareable == shareable {
                return Ok(Arc::clone(i));
            }
        }
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
        let i = Arc::new(Import { window, shareable });
        lock(&self.imports)
            .entry(id.to_string())
            .or_default()
            .insert(name.to_string(), Arc::clone(&i));
        Ok(i)
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
        let regs = std::mem::take(&mut lock(&self.exports).regs);
        for (addr, e) in regs {
            if let Err(err) = self.npu.free_handle(e.handle) {
                tracing::warn!("NPU memory [{addr:#x}, +{}): {err}", e.len);
            }
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
