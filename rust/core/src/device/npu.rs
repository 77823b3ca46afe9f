//! The NPU device: symmetric memory in an Ascend NPU's memory (HBM), through ACL's virtual-memory
//! calls, loaded at run time ([`ascend_sys`]). A segment is physical memory
//! (`aclrtMallocPhysical`) mapped into an address range reserved in this process's device address
//! space (`aclrtReserveMemAddress`, `aclrtMapMem`); its export is a shareable handle
//! (`aclrtMemExportToShareableHandle`) that the PEs of the node were allowed to import
//! (`aclrtMemSetPidToShareableHandle`, with the pids `aclrtDeviceGetBareTgid` gives), and a peer
//! imports it (`aclrtMemImportFromShareableHandle`) and maps it into a range of its own. The CPU
//! never loads or stores this memory: the host reaches it with ACL's copies ([`Npu::write`],
//! [`Npu::read`]), kernels with their own loads and stores at the device addresses.
//!
//! The device a PE uses is the one its thread already holds (`aclrtGetDevice`, as after
//! torch_npu's `torch.npu.set_device`), else its local rank modulo the devices ACL reports (ACL
//! itself applies `ASCEND_RT_VISIBLE_DEVICES`). ACL binds a device's context to a thread: every
//! call here first binds the PE's context to the calling thread, so any thread may use the
//! library.
//!
//! Besides the `Device` a SHMEM job opens ([`Npu::open`], collective), a process without a job
//! opens one with [`Npu::attach`] (memfabric's Share Memory, on the device its `deviceId`
//! names) and places memory itself: [`Npu::reserve_range`], [`Npu::map_new`] and
//! [`Npu::map_shared`] at addresses it chooses, [`Npu::share_handle`] for the processes it
//! chooses.

use super::vmm::{self, Layout};
use super::{
    check_range, Accelerator, AcceleratorKind, Device, DeviceMemory, Export, Placement, Segment,
};
use crate::bootstrap::Bootstrap;
use crate::error::{Error, Result};
use ascend_sys as acl;
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Words of an export: physical length, offset of the segment in the mapping, segment length,
/// shareable handle, device id.
const EXPORT_WORDS: usize = 5;

/// The ACL library of this process, loaded once (a failure is remembered).
static ACL: OnceLock<std::result::Result<acl::Acl, String>> = OnceLock::new();

/// Loads `library` once per process; later calls get the first outcome, whatever they name.
fn load(library: &str) -> std::result::Result<&'static acl::Acl, String> {
    ACL.get_or_init(|| acl::Acl::load(library).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(Clone::clone)
}

/// Whether `library` loads and reports at least one device (`SHMEM_DEVICE=auto`).
pub fn present(library: &str) -> bool {
    let Ok(acl) = load(library) else {
        return false;
    };
    let mut count = 0u32;
    // SAFETY: ACL's documented calls with valid out-pointers; `aclInit` may already have run
    // (torch_npu), which its repeat code says.
    unsafe {
        let rc = (acl.aclInit)(std::ptr::null());
        if rc != acl::ACL_SUCCESS && rc != acl::ACL_ERROR_REPEAT_INITIALIZE {
            return false;
        }
        (acl.aclrtGetDeviceCount)(&mut count) == acl::ACL_SUCCESS && count > 0
    }
}

thread_local! {
    /// The ACL context bound to this thread by the library (0: none yet).
    static BOUND: Cell<usize> = const { Cell::new(0) };
}

/// The NPU device of this PE. Cheap to clone: the heap holds one, the host data path another.
#[derive(Clone)]
pub struct Npu {
    inner: Arc<Inner>,
}

struct Inner {
    acl: &'static acl::Acl,
    /// The device id (ACL's logical id in this process).
    device: i32,
    /// Its context, bound to every thread that calls in.
    context: usize,
    /// Physical allocations are multiples of this.
    granularity: usize,
    /// This process's bare tgid, which a peer's export must allow.
    pid: i32,
    /// The bare tgids of this node's other PEs: the processes an export allows.
    peer_pids: Vec<i32>,
    /// The library loaded, for messages.
    library: String,
    /// Whether the library enqueued work on a stream, which finalize drains.
    enqueued: vmm::Enqueued,
}

impl std::fmt::Debug for Npu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Npu")
            .field("device", &self.inner.device)
            .field("granularity", &self.inner.granularity)
            .field("library", &self.inner.library)
            .finish()
    }
}

/// What keeps a segment allocated here: its physical memory, the range it is mapped in, and
/// its shareable handle once exported.
#[derive(Debug)]
struct Local {
    handle: usize,
    range: usize,
    phys_len: usize,
    pad: usize,
    shareable: Mutex<Option<u64>>,
}

/// What keeps a peer's segment imported here.
#[derive(Debug)]
struct Imported {
    handle: usize,
    range: usize,
}

impl Npu {
    /// Opens the NPU device of this PE (collective over the job: the PEs of a node exchange
    /// their process ids, which exports allow, and enable peer access between their devices).
    pub fn open(bootstrap: &Bootstrap, library: &str, timeout: Duration) -> Result<Npu> {
        let mut npu = Npu::attach(library, None, bootstrap.nodes().local_rank())?;
        let (pid, device) = (npu.inner.pid, npu.inner.device);
        // Every PE's (pid, device), so exports allow the node's processes and devices
        // that hold peers' memory may reach each other.
        let mut mine = pid.to_le_bytes().to_vec();
        mine.extend_from_slice(&device.to_le_bytes());
        let all = bootstrap
            .allgather(&mine, timeout)
            .map_err(|e| e.unshared("its NPU process id"))?;
        let nodes = bootstrap.nodes();
        let mut peer_pids = Vec::new();
        for (pe, bytes) in all.iter().enumerate() {
            if pe == bootstrap.rank() || !nodes.is_local(pe) {
                continue;
            }
            let field = |at: usize| {
                bytes
                    .get(at..at + 4)
                    .and_then(|b| <[u8; 4]>::try_from(b).ok())
                    .map(i32::from_le_bytes)
            };
            let (Some(their_pid), Some(their_device)) = (field(0), field(4)) else {
                return Err(Error::Mismatch {
                    pe: pe as i32,
                    what: "its NPU process id is malformed (is SHMEM_DEVICE=npu set for \
                           every PE?)"
                        .into(),
                });
            };
            peer_pids.push(their_pid);
            npu.reach(their_device)?;
        }
        tracing::debug!(
            "npu device {device} (granularity {} bytes, {} node peers)",
            npu.inner.granularity,
            peer_pids.len()
        );
        Arc::get_mut(&mut npu.inner)
            .expect("a device just opened is not shared yet")
            .peer_pids = peer_pids;
        Ok(npu)
    }

    /// Opens an NPU of this process on its own, without a job: device `wanted` when given
    /// (memfabric's `deviceId`), else the one the thread holds, else `index` modulo the
    /// devices ACL reports. Its segments' exports allow no other process: a caller that
    /// shares memory allows the processes it chooses ([`Npu::share_handle`]).
    pub fn attach(library: &str, wanted: Option<i32>, index: usize) -> Result<Npu> {
        let acl = load(library).map_err(|why| Error::Device {
            device: "npu",
            call: "loading the ACL runtime",
            code: -1,
            detail: format!(
                ": cannot load {library} ({why}); source CANN's set_env.sh so that \
                 LD_LIBRARY_PATH finds it, set SHMEM_ACL_LIBRARY to its path, or set \
                 SHMEM_DEVICE=host"
            ),
        })?;
        let call = |name: &'static str, rc: i32| check(acl, name, rc);
        // SAFETY: every call below is ACL's, with valid pointers to locals as out-parameters.
        unsafe {
            let rc = (acl.aclInit)(std::ptr::null());
            if rc != acl::ACL_ERROR_REPEAT_INITIALIZE {
                call("aclInit", rc)?;
            }
            let mut device = -1i32;
            let held = wanted.is_none() && (acl.aclrtGetDevice)(&mut device) == acl::ACL_SUCCESS;
            if !held {
                let mut count = 0u32;
                call("aclrtGetDeviceCount", (acl.aclrtGetDeviceCount)(&mut count))?;
                if count == 0 {
                    return Err(Error::Device {
                        device: "npu",
                        call: "aclrtGetDeviceCount",
                        code: 0,
                        detail: ": no NPU is visible to this process (check \
                                 ASCEND_RT_VISIBLE_DEVICES), or set SHMEM_DEVICE=host"
                            .into(),
                    });
                }
                device = match wanted {
                    Some(d) if d < 0 || d as u32 >= count => {
                        return Err(Error::Device {
                            device: "npu",
                            call: "aclrtSetDevice",
                            code: 0,
                            detail: format!(
                                ": device {d} is not one of the {count} this process sees"
                            ),
                        })
                    }
                    Some(d) => d,
                    None => (index % count as usize) as i32,
                };
                call("aclrtSetDevice", (acl.aclrtSetDevice)(device))?;
            }
            let mut context: acl::aclrtContext = std::ptr::null_mut();
            call(
                "aclrtGetCurrentContext",
                (acl.aclrtGetCurrentContext)(&mut context),
            )?;
            BOUND.with(|b| b.set(context as usize));
            let mut pid = 0i32;
            call(
                "aclrtDeviceGetBareTgid",
                (acl.aclrtDeviceGetBareTgid)(&mut pid),
            )?;
            let mut prop = physical_prop(device);
            let mut granularity = 0usize;
            call(
                "aclrtMemGetAllocationGranularity",
                (acl.aclrtMemGetAllocationGranularity)(
                    &mut prop,
                    acl::ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED,
                    &mut granularity,
                ),
            )?;
            if granularity == 0 || !granularity.is_power_of_two() {
                return Err(Error::Device {
                    device: "npu",
                    call: "aclrtMemGetAllocationGranularity",
                    code: 0,
                    detail: format!(": granularity {granularity} is not a power of two"),
                });
            }
            Ok(Npu {
                inner: Arc::new(Inner {
                    acl,
                    device,
                    context: context as usize,
                    granularity,
                    pid,
                    peer_pids: Vec::new(),
                    library: library.to_string(),
                    enqueued: vmm::Enqueued::default(),
                }),
            })
        }
    }

    /// This process's bare tgid: what a peer's [`Npu::share_handle`] must allow.
    pub fn pid(&self) -> i32 {
        self.inner.pid
    }

    /// Physical memory comes in multiples of this many bytes.
    pub fn granularity(&self) -> usize {
        self.inner.granularity
    }

    /// Lets this device reach `peer`'s memory (a peer's memory imported here lives there);
    /// nothing for this device itself.
    pub fn reach(&self, peer: i32) -> Result<()> {
        if peer == self.inner.device {
            return Ok(());
        }
        enable_peer_access(self.acl()?, self.inner.device, peer)
    }

    /// Reserves `len` bytes of device address space (a multiple of the granularity), aligned
    /// to the granularity, with nothing mapped: its first address.
    pub fn reserve_range(&self, len: usize) -> Result<usize> {
        self.reserve(len, self.inner.granularity)
    }

    /// Releases a range of [`Npu::reserve_range`] once nothing is mapped in it.
    pub fn release_range(&self, range: usize) {
        self.release(range)
    }

    /// Allocates `len` bytes of physical memory (a multiple of the granularity), maps it at
    /// `at` in a reserved range and zeroes it: its handle, for [`Npu::share_handle`] and
    /// [`Npu::unmap_and_free`]. On failure nothing stays allocated or mapped.
    pub fn map_new(&self, at: usize, len: usize) -> Result<usize> {
        let acl = self.acl()?;
        let mut prop = physical_prop(self.inner.device);
        let mut handle: acl::aclrtDrvMemHandle = std::ptr::null_mut();
        // SAFETY: ACL's allocation with a valid out-pointer and properties.
        let rc = unsafe { (acl.aclrtMallocPhysical)(&mut handle, len, &mut prop, 0) };
        check(acl, "aclrtMallocPhysical", rc)?;
        let handle = handle as usize;
        let ready = self.map(at, len, handle).and_then(|()| {
            // SAFETY: `at..at+len` is mapped device memory of ours.
            check(acl, "aclrtMemset", unsafe {
                (acl.aclrtMemset)(at as *mut c_void, len, 0, len)
            })
        });
        if let Err(e) = ready {
            // SAFETY: freeing what was just allocated; unmapping what may be mapped.
            unsafe {
                (acl.aclrtUnmapMem)(at as *mut c_void);
                (acl.aclrtFreePhysical)(handle as acl::aclrtDrvMemHandle);
            }
            return Err(e);
        }
        Ok(handle)
    }

    /// Exports physical memory of [`Npu::map_new`] as a shareable handle that the processes
    /// `pids` (bare tgids) may import.
    pub fn share_handle(&self, handle: usize, pids: &[i32]) -> Result<u64> {
        let acl = self.acl()?;
        let mut h = 0u64;
        // SAFETY: `handle` is physical memory of ours; valid out-pointer.
        check(acl, "aclrtMemExportToShareableHandle", unsafe {
            (acl.aclrtMemExportToShareableHandle)(
                handle as acl::aclrtDrvMemHandle,
                acl::ACL_MEM_HANDLE_TYPE_NONE,
                0,
                &mut h,
            )
        })?;
        self.allow(h, pids)?;
        Ok(h)
    }

    /// Lets the processes `pids` (bare tgids) import `shareable`, an export of this process
    /// ([`Npu::share_handle`]), besides those it allowed before; none: nothing to do.
    pub fn allow(&self, shareable: u64, pids: &[i32]) -> Result<()> {
        if pids.is_empty() {
            return Ok(());
        }
        let acl = self.acl()?;
        let mut pids = pids.to_vec();
        // SAFETY: `pids` holds `pids.len()` process ids.
        check(acl, "aclrtMemSetPidToShareableHandle", unsafe {
            (acl.aclrtMemSetPidToShareableHandle)(shareable, pids.as_mut_ptr(), pids.len())
        })
    }

    /// Imports a peer's shareable handle and maps `len` bytes of it at `at` in a reserved
    /// range: the imported handle, for [`Npu::unmap_and_free`]. On failure nothing stays
    /// imported or mapped.
    pub fn map_shared(&self, shareable: u64, at: usize, len: usize) -> Result<usize> {
        let acl = self.acl()?;
        let mut handle: acl::aclrtDrvMemHandle = std::ptr::null_mut();
        // SAFETY: ACL's import with a valid out-pointer; it checks the handle.
        check(acl, "aclrtMemImportFromShareableHandle", unsafe {
            (acl.aclrtMemImportFromShareableHandle)(shareable, self.inner.device, &mut handle)
        })?;
        let handle = handle as usize;
        if let Err(err) = self.map(at, len, handle) {
            // SAFETY: releasing the handle just imported.
            unsafe { (acl.aclrtFreePhysical)(handle as acl::aclrtDrvMemHandle) };
            return Err(err);
        }
        Ok(handle)
    }

    /// A new reference to the physical memory mapped at `at` (the address [`Npu::map_new`],
    /// [`Npu::map_shared`] or the program's own `aclrtMapMem` mapped it at), which keeps that
    /// memory while held, for [`Npu::share_handle`]; released with [`Npu::free_handle`].
    pub fn retain(&self, at: usize) -> Result<usize> {
        let acl = self.acl()?;
        let mut handle: acl::aclrtDrvMemHandle = std::ptr::null_mut();
        // SAFETY: ACL's query with a valid out-pointer; it checks the address.
        check(acl, "aclrtMemRetainAllocationHandle", unsafe {
            (acl.aclrtMemRetainAllocationHandle)(at as *mut c_void, &mut handle)
        })?;
        Ok(handle as usize)
    }

    /// The block ACL allocated or mapped that holds `at` (`aclrtMalloc`, `aclrtMapMem`,
    /// `aclrtMallocHost`): its start and length.
    pub fn address_range(&self, at: usize) -> Result<(usize, usize)> {
        let acl = self.acl()?;
        let mut base: *mut c_void = std::ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: ACL's query with valid out-pointers; it checks the address.
        check(acl, "aclrtMemGetAddressRange", unsafe {
            (acl.aclrtMemGetAddressRange)(at as *mut c_void, &mut base, &mut len)
        })?;
        Ok((base as usize, len))
    }

    /// Exports the `aclrtMalloc` block at `base` (`len` bytes) by IPC key, which the processes
    /// `pids` (bare tgids) may import ([`Npu::ipc_import`]); closed with [`Npu::ipc_close`].
    pub fn ipc_export(&self, base: usize, len: usize, pids: &[i32]) -> Result<String> {
        let acl = self.acl()?;
        let mut key = [0 as std::ffi::c_char; IPC_KEY_LEN];
        // SAFETY: `key` has room for `IPC_KEY_LEN` bytes; ACL checks the block.
        check(acl, "aclrtIpcMemGetExportKey", unsafe {
            (acl.aclrtIpcMemGetExportKey)(base as *mut c_void, len, key.as_mut_ptr(), key.len(), 0)
        })?;
        // SAFETY: ACL wrote a NUL-terminated key into the buffer.
        let key = unsafe { std::ffi::CStr::from_ptr(key.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        if let Err(e) = self.ipc_allow(&key, pids) {
            let _ = self.ipc_close(&key);
            return Err(e);
        }
        Ok(key)
    }

    /// Lets the processes `pids` (bare tgids) import `key`, an export of this process
    /// ([`Npu::ipc_export`]); none: nothing to do.
    pub fn ipc_allow(&self, key: &str, pids: &[i32]) -> Result<()> {
        if pids.is_empty() {
            return Ok(());
        }
        let acl = self.acl()?;
        let key = ipc_key(key)?;
        let mut pids = pids.to_vec();
        // SAFETY: `key` is NUL-terminated; `pids` holds `pids.len()` process ids.
        check(acl, "aclrtIpcMemSetImportPid", unsafe {
            (acl.aclrtIpcMemSetImportPid)(key.as_ptr(), pids.as_mut_ptr(), pids.len())
        })
    }

    /// Imports a peer's block exported as `key`: where it is mapped here, until
    /// [`Npu::ipc_close`]. Peer access between the devices is enabled with it.
    pub fn ipc_import(&self, key: &str) -> Result<usize> {
        let acl = self.acl()?;
        let key = ipc_key(key)?;
        let mut at: *mut c_void = std::ptr::null_mut();
        // SAFETY: valid out-pointer and NUL-terminated key; ACL checks the key.
        check(acl, "aclrtIpcMemImportByKey", unsafe {
            (acl.aclrtIpcMemImportByKey)(&mut at, key.as_ptr(), IPC_IMPORT_ENABLE_PEER_ACCESS)
        })?;
        Ok(at as usize)
    }

    /// Closes `key`: an import of it is unmapped here, an export of this process ends.
    pub fn ipc_close(&self, key: &str) -> Result<()> {
        let acl = self.acl()?;
        let key = ipc_key(key)?;
        // SAFETY: NUL-terminated key; ACL checks it.
        check(acl, "aclrtIpcMemClose", unsafe {
            (acl.aclrtIpcMemClose)(key.as_ptr())
        })
    }

    /// Lets go of a reference of [`Npu::retain`].
    pub fn free_handle(&self, handle: usize) -> Result<()> {
        let acl = self.acl()?;
        // SAFETY: `handle` is a reference this process holds, released once.
        check(acl, "aclrtFreePhysical", unsafe {
            (acl.aclrtFreePhysical)(handle as acl::aclrtDrvMemHandle)
        })
    }

    /// Enqueues a copy of `len` bytes from `src` to `dst`, each host memory or device memory
    /// mapped here (ACL tells them apart), on `stream`: done when the stream reaches it.
    ///
    /// # Safety
    /// `src..src+len` must stay readable and `dst..dst+len` writable until the stream has run
    /// the copy.
    pub unsafe fn copy_on(&self, dst: usize, src: usize, len: usize, stream: usize) -> Result<()> {
        self.enqueue_copy(dst, src, len, acl::ACL_MEMCPY_DEFAULT, stream)
    }

    /// `aclrtMemcpyAsync` of `len` bytes, `kind`, on `stream`; ACL checks the addresses
    /// against the kind and the stream, and answers with a code.
    fn enqueue_copy(
        &self,
        dst: usize,
        src: usize,
        len: usize,
        kind: acl::aclrtMemcpyKind,
        stream: usize,
    ) -> Result<()> {
        let acl = self.acl()?;
        self.used();
        // SAFETY: ACL checks the addresses and the stream; the callers' contracts keep the
        // memory valid until the stream ran the copy.
        check(acl, "aclrtMemcpyAsync", unsafe {
            (acl.aclrtMemcpyAsync)(
                dst as *mut c_void,
                len,
                src as *const c_void,
                len,
                kind,
                stream as acl::aclrtStream,
            )
        })
    }

    /// Waits until `stream` has run everything queued on it.
    pub fn synchronize(&self, stream: usize) -> Result<()> {
        let acl = self.acl()?;
        // SAFETY: ACL checks the stream and answers with a code.
        check(acl, "aclrtSynchronizeStream", unsafe {
            (acl.aclrtSynchronizeStream)(stream as acl::aclrtStream)
        })
    }

    /// Copies `len` bytes from `src` to `dst`, each host memory or device memory mapped here
    /// (ACL tells them apart); complete on return.
    ///
    /// # Safety
    /// `src..src+len` must be readable and `dst..dst+len` writable, and no one else may
    /// write them during the call.
    pub unsafe fn copy(&self, dst: usize, src: usize, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let acl = self.acl()?;
        // SAFETY: the caller's contract; ACL tells host from device memory (DEFAULT).
        check(acl, "aclrtMemcpy", unsafe {
            (acl.aclrtMemcpy)(
                dst as *mut c_void,
                len,
                src as *const c_void,
                len,
                acl::ACL_MEMCPY_DEFAULT,
            )
        })
    }

    /// ACL's entry points, with this PE's context bound to the calling thread.
    fn acl(&self) -> Result<&'static acl::Acl> {
        let acl = self.inner.acl;
        let ctx = self.inner.context;
        if BOUND.with(Cell::get) != ctx {
            // SAFETY: the context came from aclrtGetCurrentContext and lives until the
            // process ends (the library never destroys it).
            check(acl, "aclrtSetCurrentContext", unsafe {
                (acl.aclrtSetCurrentContext)(ctx as acl::aclrtContext)
            })?;
            BOUND.with(|b| b.set(ctx));
        }
        Ok(acl)
    }

    fn used(&self) {
        self.inner.enqueued.note();
    }

    fn reserve(&self, len: usize, align: usize) -> Result<usize> {
        let acl = self.acl()?;
        let mut va: *mut c_void = std::ptr::null_mut();
        // SAFETY: ACL's reservation with a valid out-pointer.
        check(acl, "aclrtReserveMemAddress", unsafe {
            (acl.aclrtReserveMemAddress)(&mut va, len, align, std::ptr::null_mut(), 0)
        })?;
        Ok(va as usize)
    }

    fn release(&self, range: usize) {
        if let Ok(acl) = self.acl() {
            // SAFETY: `range` came from aclrtReserveMemAddress and nothing is mapped in it now.
            let rc = unsafe { (acl.aclrtReleaseMemAddress)(range as *mut c_void) };
            if let Err(e) = check(acl, "aclrtReleaseMemAddress", rc) {
                tracing::warn!("{e}");
            }
        }
    }

    fn map(&self, at: usize, len: usize, handle: usize) -> Result<()> {
        let acl = self.acl()?;
        // SAFETY: `at..at+len` lies in a reservation of ours; `handle` is physical memory of
        // at least `len` bytes.
        check(acl, "aclrtMapMem", unsafe {
            (acl.aclrtMapMem)(
                at as *mut c_void,
                len,
                0,
                handle as acl::aclrtDrvMemHandle,
                0,
            )
        })
    }

    /// Unmaps what [`Npu::map_new`] or [`Npu::map_shared`] mapped at `at` and lets go of its
    /// handle.
    pub fn unmap_and_free(&self, at: usize, handle: usize) -> Result<()> {
        let acl = self.acl()?;
        // SAFETY: `at` is where `handle` was mapped; both are released once.
        unsafe {
            check(acl, "aclrtUnmapMem", (acl.aclrtUnmapMem)(at as *mut c_void))?;
            check(
                acl,
                "aclrtFreePhysical",
                (acl.aclrtFreePhysical)(handle as acl::aclrtDrvMemHandle),
            )
        }
    }
}

impl DeviceMemory for Npu {
    /// Copies `len` bytes from `src` (host memory or this device's) to the device address `to`;
    /// complete on return.
    ///
    /// # Safety
    /// `src` must be readable for `len` bytes; `to..to+len` must be device memory mapped here.
    unsafe fn write(&self, to: usize, src: *const u8, len: usize) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.copy(to, src as usize, len) }
    }

    /// Copies `len` bytes from the device address `from` to `dest` (host memory or this
    /// device's); complete on return.
    ///
    /// # Safety
    /// `dest` must be writable for `len` bytes; `from..from+len` must be device memory mapped
    /// here.
    unsafe fn read(&self, dest: *mut u8, from: usize, len: usize) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.copy(dest as usize, from, len) }
    }

    fn memory_name(&self) -> &'static str {
        "npu"
    }
}

impl Accelerator for Npu {
    fn kind(&self) -> AcceleratorKind {
        AcceleratorKind::Npu
    }

    /// The device id this PE uses.
    fn device_id(&self) -> i32 {
        self.inner.device
    }

    fn as_device(&self) -> Box<dyn Device> {
        Box::new(self.clone())
    }

    fn as_memory(&self) -> Box<dyn DeviceMemory> {
        Box::new(self.clone())
    }

    /// Allocates `len` bytes of plain device memory (not symmetric), for what kernels read.
    fn malloc(&self, len: usize) -> Result<usize> {
        let acl = self.acl()?;
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: ACL's allocation with a valid out-pointer.
        check(acl, "aclrtMalloc", unsafe {
            (acl.aclrtMalloc)(&mut p, len, acl::ACL_MEM_MALLOC_HUGE_FIRST)
        })?;
        Ok(p as usize)
    }

    /// Frees what [`Npu::malloc`] gave.
    fn free_plain(&self, addr: usize) -> Result<()> {
        let acl = self.acl()?;
        // SAFETY: `addr` came from aclrtMalloc and is freed once.
        check(acl, "aclrtFree", unsafe {
            (acl.aclrtFree)(addr as *mut c_void)
        })
    }

    /// Enqueues a copy of `len` bytes from `src` to `dst` (both device memory) on `stream`
    /// (0: the default stream).
    fn copy_on_stream(&self, dst: usize, src: usize, len: usize, stream: usize) -> Result<()> {
        self.enqueue_copy(dst, src, len, acl::ACL_MEMCPY_DEVICE_TO_DEVICE, stream)
    }

    /// Enqueues `f(arg)` on `stream` (0: the default stream): it runs on ACL's thread once the
    /// stream reaches it, and later work on the stream waits for it to return.
    fn call_on_stream(
        &self,
        stream: usize,
        f: unsafe extern "C" fn(*mut c_void),
        arg: usize,
    ) -> Result<()> {
        let acl = self.acl()?;
        self.used();
        // SAFETY: `f` is a function of the library that takes `arg`; ACL runs it once.
        check(acl, "aclrtLaunchHostFunc", unsafe {
            (acl.aclrtLaunchHostFunc)(stream as acl::aclrtStream, f, arg as *mut c_void)
        })
    }

    /// Waits, at most `timeout`, until the device has run everything queued on it, where the
    /// library enqueued work on a stream (at finalize: nothing of the library's may run after
    /// the heap is gone). The whole device, not the streams one by one: the program may have
    /// destroyed one since. Not done in time, or failed: logged and left.
    fn drain(&self, timeout: Duration) {
        if !self.inner.enqueued.take() {
            return;
        }
        let Ok(acl) = self.acl() else {
            return;
        };
        let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: a plain ACL call on the device bound to this thread by `acl()`.
        let rc = unsafe { (acl.aclrtSynchronizeDeviceWithTimeout)(ms) };
        if let Err(e) = check(acl, "aclrtSynchronizeDeviceWithTimeout", rc) {
            tracing::warn!(
                "finalize: the library's work on the device's streams did not drain: {e}"
            );
        }
    }
}

/// The properties of physical memory on `device`: pinned HBM in huge pages, no OS handle.
fn physical_prop(device: i32) -> acl::aclrtPhysicalMemProp {
    acl::aclrtPhysicalMemProp {
        handleType: acl::ACL_MEM_HANDLE_TYPE_NONE,
        allocationType: acl::ACL_MEM_ALLOCATION_TYPE_PINNED,
        memAttr: acl::ACL_HBM_MEM_HUGE,
        location: acl::aclrtMemLocation {
            id: device as u32,
            type_: acl::ACL_MEM_LOCATION_TYPE_DEVICE,
        },
        reserve: 0,
    }
}

/// Lets `device` reach `peer`'s memory (a peer's segment imported here lives there).
fn enable_peer_access(acl: &acl::Acl, device: i32, peer: i32) -> Result<()> {
    let mut can = 0i32;
    // SAFETY: ACL's query with a valid out-pointer.
    check(acl, "aclrtDeviceCanAccessPeer", unsafe {
        (acl.aclrtDeviceCanAccessPeer)(&mut can, device, peer)
    })?;
    if can == 0 {
        return Err(Error::Device {
            device: "npu",
            call: "aclrtDeviceCanAccessPeer",
            code: 0,
            detail: format!(
                ": device {device} cannot reach device {peer}, which holds a peer's heap"
            ),
        });
    }
    // SAFETY: ACL's call on two valid devices; a repeat is answered with a code we accept.
    let rc = unsafe { (acl.aclrtDeviceEnablePeerAccess)(peer, 0) };
    if rc != acl::ACL_SUCCESS {
        tracing::debug!("aclrtDeviceEnablePeerAccess({peer}) answered {rc} (already enabled?)");
    }
    Ok(())
}

/// The room an IPC key takes, its NUL included (`aclrtIpcMemGetExportKey`'s `len`).
const IPC_KEY_LEN: usize = 65;
/// `ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS`: an import enables access between the
/// devices.
const IPC_IMPORT_ENABLE_PEER_ACCESS: u64 = 1;

/// `key` as ACL takes it: NUL-terminated.
fn ipc_key(key: &str) -> Result<std::ffi::CString> {
    std::ffi::CString::new(key).map_err(|_| Error::Device {
        device: "npu",
        call: "aclrtIpcMemImportByKey",
        code: 0,
        detail: format!(": key {key:?} holds a NUL byte"),
    })
}

/// `rc` as a result: ACL's code, its name and ACL's last message for a failure.
fn check(acl: &acl::Acl, call: &'static str, rc: i32) -> Result<()> {
    if rc == acl::ACL_SUCCESS {
        return Ok(());
    }
    // SAFETY: ACL returns a thread-local, NUL-terminated message or NULL.
    let msg = unsafe {
        let p = (acl.aclGetRecentErrMsg)();
        if p.is_null() {
            String::new()
        } else {
            std::ffi::CStr::from_ptr(p)
                .to_string_lossy()
                .trim()
                .to_string()
        }
    };
    let name = acl::error_name(rc);
    Err(Error::Device {
        device: "npu",
        call,
        code: rc,
        detail: if msg.is_empty() {
            format!(" ({name})")
        } else {
            format!(" ({name}): {msg}")
        },
    })
}

impl Device for Npu {
    fn name(&self) -> &'static str {
        "npu"
    }

    fn cpu_accessible(&self) -> bool {
        false
    }

    fn allocate(&self, name: &str, len: usize, placement: Placement) -> Result<Segment> {
        let too_large = || Error::Device {
            device: "npu",
            call: "aclrtMallocPhysical",
            code: 0,
            detail: format!(": {name} of {len} bytes is too large"),
        };
        let layout = Layout::new(self.inner.granularity, len, placement).ok_or_else(too_large)?;
        let Layout {
            pad,
            phys_len,
            reserve_len,
            align,
            ..
        } = layout;
        let range = self.reserve(reserve_len, align)?;
        let Some(at) = layout.mapped_at(range) else {
            self.release(range);
            return Err(too_large());
        };
        let handle = match self.map_new(at, phys_len) {
            Ok(h) => h,
            Err(e) => {
                self.release(range);
                return Err(e);
            }
        };
        tracing::debug!(
            "npu: {name}: {len} bytes at {:#x} on device {}",
            at + pad,
            self.inner.device
        );
        Ok(Segment::unmapped(
            at + pad,
            len,
            Box::new(Local {
                handle,
                range,
                phys_len,
                pad,
                shareable: Mutex::new(None),
            }),
        ))
    }

    fn export(&self, segment: &Segment) -> Result<Export> {
        let Some(local) = segment.backing().downcast_ref::<Local>() else {
            return Err(Error::os(
                "exporting a segment the npu device did not allocate",
                std::io::ErrorKind::InvalidInput,
            ));
        };
        let mut shareable = local.shareable.lock().unwrap_or_else(|p| p.into_inner());
        let handle = match *shareable {
            Some(h) => h,
            None => {
                let h = self.share_handle(local.handle, &self.inner.peer_pids)?;
                *shareable = Some(h);
                h
            }
        };
        Ok(Export {
            bytes: vmm::encode(&[
                local.phys_len as u64,
                local.pad as u64,
                segment.len() as u64,
                handle,
                self.inner.device as u64,
            ]),
            fds: Vec::new(),
        })
    }

    fn exported_len(&self, export: &Export) -> Result<usize> {
        Ok(parse(export)?.len)
    }

    fn import(&self, export: &Export, _placement: Placement) -> Result<Segment> {
        let e = parse(export)?;
        let range = self.reserve(e.phys_len, self.inner.granularity)?;
        let handle = match self.map_shared(e.shareable, range, e.phys_len) {
            Ok(h) => h,
            Err(err) => {
                self.release(range);
                return Err(err);
            }
        };
        Ok(Segment::unmapped(
            range + e.pad,
            e.len,
            Box::new(Imported { handle, range }),
        ))
    }

    fn free(&self, segment: Segment) -> Result<()> {
        let at = segment.addr();
        let backing = segment.backing();
        let (handle, range, mapped) = if let Some(l) = backing.downcast_ref::<Local>() {
            (l.handle, l.range, at - l.pad)
        } else if let Some(i) = backing.downcast_ref::<Imported>() {
            (i.handle, i.range, i.range)
        } else {
            return Err(Error::os(
                "freeing a segment the npu device did not make",
                std::io::ErrorKind::InvalidInput,
            ));
        };
        let r = self.unmap_and_free(mapped, handle);
        self.release(range);
        r
    }

    fn set(&self, segment: &Segment, offset: usize, byte: u8, len: usize) -> Result<()> {
        check_range(segment, "npu set", offset, len)?;
        if len == 0 {
            return Ok(());
        }
        let acl = self.acl()?;
        // SAFETY: the range lies in the segment, device memory mapped here.
        check(acl, "aclrtMemset", unsafe {
            (acl.aclrtMemset)(
                (segment.addr() + offset) as *mut c_void,
                len,
                i32::from(byte),
                len,
            )
        })
    }

    fn copy(&self, segment: &Segment, src: usize, dst: usize, len: usize) -> Result<()> {
        check_range(segment, "npu copy (source)", src, len)?;
        check_range(segment, "npu copy (destination)", dst, len)?;
        if len == 0 || src == dst {
            return Ok(());
        }
        let base = segment.addr();
        if src.abs_diff(dst) >= len {
            let acl = self.acl()?;
            // SAFETY: two disjoint ranges of the segment.
            return check(acl, "aclrtMemcpy", unsafe {
                (acl.aclrtMemcpy)(
                    (base + dst) as *mut c_void,
                    len,
                    (base + src) as *const c_void,
                    len,
                    acl::ACL_MEMCPY_DEVICE_TO_DEVICE,
                )
            });
        }
        vmm::copy_overlapping(self, base, src, dst, len)
    }
}

/// An export's fields.
struct Parsed {
    shareable: u64,
    phys_len: usize,
    pad: usize,
    len: usize,
}

fn parse(export: &Export) -> Result<Parsed> {
    let words = vmm::decode(&export.bytes, EXPORT_WORDS)
        .filter(|_| export.fds.is_empty())
        .ok_or_else(|| {
            Error::os(
                format!(
                    "an npu segment's export has {} bytes and {} descriptors, not {} and none \
                     (is SHMEM_DEVICE=npu set for every PE?)",
                    export.bytes.len(),
                    export.fds.len(),
                    8 * EXPORT_WORDS
                ),
                std::io::ErrorKind::InvalidData,
            )
        })?;
    let (phys_len, pad, len) = vmm::shape(&words, "npu")?;
    Ok(Parsed {
        shareable: words[3],
        phys_len,
        pad,
        len,
    })
}
