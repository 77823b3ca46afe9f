//! The cuda device: symmetric memory in an NVIDIA GPU's memory, through the CUDA driver's
//! virtual-memory calls, loaded at run time ([`cuda_sys`]). A segment is physical memory
//! (`cuMemCreate`, exportable as a POSIX file descriptor) mapped into an address range reserved
//! in this process (`cuMemAddressReserve`, `cuMemMap`) and opened to this PE's device
//! (`cuMemSetAccess`); its export is that descriptor (`cuMemExportToShareableHandle`), which
//! travels to the node's PEs over the node-local socket like the host device's memfds, and a
//! peer imports it (`cuMemImportFromShareableHandle`) and maps it into a range of its own. The
//! CPU never loads or stores this memory: the host reaches it with the driver's copies (unified
//! addressing: `cuMemcpy` tells host from device memory), kernels with their own loads and
//! stores.
//!
//! Several PEs on one GPU work: each process maps every PE's allocation on its own context, and
//! copies between them are device-to-device within the GPU. The device a PE uses is the one of
//! the context current on its thread (as after `torch.cuda.set_device`), else its local rank
//! modulo the devices the driver reports (the driver applies `CUDA_VISIBLE_DEVICES`). Every call
//! first makes the PE's context current on the calling thread.

use super::vmm::{self, Layout};
use super::{
    check_range, Accelerator, AcceleratorKind, Device, DeviceMemory, Export, Placement, Segment,
    StreamCmp, StreamSignal,
};
use crate::bootstrap::Bootstrap;
use crate::error::{Error, Result};
use cuda_sys as cu;
use rustix::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Words of an export beside its descriptor: physical length, offset of the segment in the
/// mapping, segment length.
const EXPORT_WORDS: usize = 3;

/// The library's kernels for the on-stream signal ADD and the waits other than EQ and GE, as
/// PTX text (NUL-terminated for `cuModuleLoadData`): `shmem_stream_signal_add(addr, value)`,
/// `shmem_stream_wait(addr, cmp, value)`.
const STREAM_PTX: &str = concat!(include_str!("cuda_stream.ptx"), "\0");

/// The driver of this process, loaded once (a failure is remembered).
static DRIVER: OnceLock<std::result::Result<cu::Cuda, String>> = OnceLock::new();

fn load(library: &str) -> std::result::Result<&'static cu::Cuda, String> {
    DRIVER
        .get_or_init(|| cu::Cuda::load(library).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(Clone::clone)
}

thread_local! {
    /// The context the library made current on this thread (0: none yet).
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

/// The cuda device of this PE. Cheap to clone.
#[derive(Clone)]
pub struct Cuda {
    inner: Arc<Inner>,
}

struct Inner {
    cuda: &'static cu::Cuda,
    device: i32,
    context: usize,
    granularity: usize,
    /// The library's own stream for the host's copies: non-blocking, so a host call never waits
    /// for the program's work on blocking streams, as the legacy default stream would.
    copies: usize,
    /// Whether the library enqueued work on a stream, which finalize drains.
    enqueued: vmm::Enqueued,
    /// The kernels of `STREAM_PTX`, loaded into the context at their first use (a failure is
    /// reported to that call and tried again at the next).
    kernels: Mutex<Option<StreamKernels>>,
}

/// The functions of the loaded `STREAM_PTX` module (`CUfunction`s as numbers).
#[derive(Clone, Copy)]
struct StreamKernels {
    signal_add: usize,
    wait: usize,
}

impl std::fmt::Debug for Cuda {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cuda")
            .field("device", &self.inner.device)
            .field("granularity", &self.inner.granularity)
            .finish()
    }
}

/// What keeps a segment made or imported here: its physical memory and the range it is mapped
/// in; for one made here, the mapping's start (the segment starts `pad` bytes on).
#[derive(Debug)]
struct Backing {
    handle: u64,
    range: usize,
    reserve_len: usize,
    mapped_at: usize,
    phys_len: usize,
    pad: usize,
    local: bool,
}

/// `rc` as a result: the driver's code, its name and its words for a failure.
fn check(cuda: &cu::Cuda, call: &'static str, rc: cu::CUresult) -> Result<()> {
    if rc == cu::CUDA_SUCCESS {
        return Ok(());
    }
    let mut text: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: the driver writes a pointer to a static string, or leaves it null.
    unsafe { (cuda.cuGetErrorString)(rc, &mut text) };
    let words = if text.is_null() {
        String::new()
    } else {
        // SAFETY: a static NUL-terminated string of the driver's.
        unsafe { std::ffi::CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    };
    Err(Error::Device {
        device: "cuda",
        call,
        code: rc as i32,
        detail: if words.is_empty() {
            format!(" ({})", cu::error_name(rc))
        } else {
            format!(" ({}): {words}", cu::error_name(rc))
        },
    })
}

fn prop(device: i32) -> cu::CUmemAllocationProp {
    // SAFETY: a plain C struct whose all-zero value is valid (null pointer, zero flags).
    let mut p: cu::CUmemAllocationProp = unsafe { std::mem::zeroed() };
    p.type_ = cu::CU_MEM_ALLOCATION_TYPE_PINNED;
    p.requestedHandleTypes = cu::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    p.location = cu::CUmemLocation {
        type_: cu::CU_MEM_LOCATION_TYPE_DEVICE,
        id: device,
    };
    p
}

impl Cuda {
    /// Opens the cuda device of this PE: loads the driver, picks the device and makes its
    /// primary context current.
    pub fn open(bootstrap: &Bootstrap, library: &str) -> Result<Cuda> {
        let cuda = load(library).map_err(|why| Error::Device {
            device: "cuda",
            call: "loading the CUDA driver",
            code: -1,
            detail: format!(
                ": cannot load {library} ({why}); install NVIDIA's driver, set \
                 SHMEM_CUDA_LIBRARY to its libcuda.so.1, or set SHMEM_DEVICE=host"
            ),
        })?;
        let call = |name: &'static str, rc| check(cuda, name, rc);
        // SAFETY: every call below is the driver's, with valid pointers to locals.
        unsafe {
            call("cuInit", (cuda.cuInit)(0))?;
            let mut current: cu::CUcontext = std::ptr::null_mut();
            let mut device: cu::CUdevice = 0;
            let have = (cuda.cuCtxGetCurrent)(&mut current) == cu::CUDA_SUCCESS
                && !current.is_null()
                && (cuda.cuCtxGetDevice)(&mut device) == cu::CUDA_SUCCESS;
            if !have {
                let mut count = 0i32;
                call("cuDeviceGetCount", (cuda.cuDeviceGetCount)(&mut count))?;
                if count <= 0 {
                    return Err(Error::Device {
                        device: "cuda",
                        call: "cuDeviceGetCount",
                        code: 0,
                        detail: ": no GPU is visible to this process (check \
                                 CUDA_VISIBLE_DEVICES), or set SHMEM_DEVICE=host"
                            .into(),
                    });
                }
                let ordinal = (bootstrap.nodes().local_rank() % count as usize) as i32;
                call("cuDeviceGet", (cuda.cuDeviceGet)(&mut device, ordinal))?;
            }
            for (attr, what) in [
                (
                    cu::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                    "virtual memory management",
                ),
                (
                    cu::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                    "POSIX file-descriptor handles",
                ),
                (
                    cu::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING,
                    "unified addressing",
                ),
            ] {
                let mut v = 0i32;
                call(
                    "cuDeviceGetAttribute",
                    (cuda.cuDeviceGetAttribute)(&mut v, attr, device),
                )?;
                if v == 0 {
                    return Err(Error::Device {
                        device: "cuda",
                        call: "cuDeviceGetAttribute",
                        code: 0,
                        detail: format!(
                            ": device {device} lacks {what}, which the cuda device needs"
                        ),
                    });
                }
            }
            let mut context: cu::CUcontext = std::ptr::null_mut();
            call(
                "cuDevicePrimaryCtxRetain",
                (cuda.cuDevicePrimaryCtxRetain)(&mut context, device),
            )?;
            call("cuCtxSetCurrent", (cuda.cuCtxSetCurrent)(context))?;
            CURRENT.with(|c| c.set(context as usize));
            let p = prop(device);
            let mut granularity = 0usize;
            call(
                "cuMemGetAllocationGranularity",
                (cuda.cuMemGetAllocationGranularity)(
                    &mut granularity,
                    &p,
                    cu::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
                ),
            )?;
            if granularity == 0 || !granularity.is_power_of_two() {
                return Err(Error::Device {
                    device: "cuda",
                    call: "cuMemGetAllocationGranularity",
                    code: 0,
                    detail: format!(": granularity {granularity} is not a power of two"),
                });
            }
            let mut copies: cu::CUstream = std::ptr::null_mut();
            call(
                "cuStreamCreate",
                (cuda.cuStreamCreate)(&mut copies, cu::CU_STREAM_NON_BLOCKING),
            )?;
            tracing::debug!("cuda device {device} (granularity {granularity} bytes)");
            Ok(Cuda {
                inner: Arc::new(Inner {
                    cuda,
                    device,
                    context: context as usize,
                    granularity,
                    copies: copies as usize,
                    enqueued: vmm::Enqueued::default(),
                    kernels: Mutex::new(None),
                }),
            })
        }
    }

    /// The driver's entry points, with this PE's context current on the calling thread.
    fn driver(&self) -> Result<&'static cu::Cuda> {
        let cuda = self.inner.cuda;
        let ctx = self.inner.context;
        if CURRENT.with(Cell::get) != ctx {
            // SAFETY: the primary context retained at open lives until the process ends.
            check(cuda, "cuCtxSetCurrent", unsafe {
                (cuda.cuCtxSetCurrent)(ctx as cu::CUcontext)
            })?;
            CURRENT.with(|c| c.set(ctx));
        }
        Ok(cuda)
    }

    /// Copies `len` bytes from `src` to `dst` (host or device addresses) on the library's own
    /// stream, complete on return.
    fn copy_now(&self, dst: u64, src: u64, len: usize) -> Result<()> {
        let cuda = self.driver()?;
        let stream = self.inner.copies as cu::CUstream;
        // SAFETY: the callers' contracts make both ranges valid for `len` bytes; the stream is
        // the library's and lives until the process ends.
        unsafe {
            check(
                cuda,
                "cuMemcpyAsync",
                (cuda.cuMemcpyAsync)(dst, src, len, stream),
            )?;
            check(
                cuda,
                "cuStreamSynchronize",
                (cuda.cuStreamSynchronize)(stream),
            )
        }
    }

    /// Sets `len` bytes at the device address `at` to `byte` on the library's own stream,
    /// complete on return.
    fn set_now(&self, at: u64, byte: u8, len: usize) -> Result<()> {
        let cuda = self.driver()?;
        let stream = self.inner.copies as cu::CUstream;
        // SAFETY: the callers' ranges are device memory of this device; the stream is the
        // library's.
        unsafe {
            check(
                cuda,
                "cuMemsetD8Async",
                (cuda.cuMemsetD8Async)(at, byte, len, stream),
            )?;
            check(
                cuda,
                "cuStreamSynchronize",
                (cuda.cuStreamSynchronize)(stream),
            )
        }
    }

    /// The library's stream kernels, loaded into this PE's context the first time.
    fn kernels(&self) -> Result<StreamKernels> {
        let cuda = self.driver()?;
        let mut loaded = self
            .inner
            .kernels
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(k) = *loaded {
            return Ok(k);
        }
        let mut module: cu::CUmodule = std::ptr::null_mut();
        // SAFETY: STREAM_PTX is NUL-terminated text that lives for the program; the driver
        // compiles it and writes the module.
        check(cuda, "cuModuleLoadData", unsafe {
            (cuda.cuModuleLoadData)(&mut module, STREAM_PTX.as_ptr().cast())
        })?;
        let function = |name: &[u8]| -> Result<usize> {
            let mut f: cu::CUfunction = std::ptr::null_mut();
            // SAFETY: `module` was loaded above; `name` is NUL-terminated.
            check(cuda, "cuModuleGetFunction", unsafe {
                (cuda.cuModuleGetFunction)(&mut f, module, name.as_ptr().cast())
            })?;
            Ok(f as usize)
        };
        // The module stays loaded for the process: its kernels may be queued on any stream
        // until finalize drains them.
        let k = StreamKernels {
            signal_add: function(b"shmem_stream_signal_add\0")?,
            wait: function(b"shmem_stream_wait\0")?,
        };
        *loaded = Some(k);
        Ok(k)
    }

    /// Launches `f` (one of the stream kernels) as one thread of one block on `stream`, with
    /// `params` pointing at its arguments' values in order.
    fn launch(&self, f: usize, stream: usize, params: &mut [*mut c_void]) -> Result<()> {
        let cuda = self.driver()?;
        self.used();
        // SAFETY: `params` points at values of the types the kernel's PTX declares, in order;
        // the driver copies them before returning.
        check(cuda, "cuLaunchKernel", unsafe {
            (cuda.cuLaunchKernel)(
                f as cu::CUfunction,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                stream as cu::CUstream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }

    fn used(&self) {
        self.inner.enqueued.note();
    }

    fn reserve(&self, len: usize, align: usize) -> Result<usize> {
        let cuda = self.driver()?;
        let mut at: cu::CUdeviceptr = 0;
        // SAFETY: the driver's reservation with a valid out-pointer.
        check(cuda, "cuMemAddressReserve", unsafe {
            (cuda.cuMemAddressReserve)(&mut at, len, align, 0, 0)
        })?;
        Ok(at as usize)
    }

    /// Maps `handle` (`len` bytes) at `at` and opens it to this PE's device.
    fn map(&self, at: usize, len: usize, handle: u64) -> Result<()> {
        let cuda = self.driver()?;
        let access = cu::CUmemAccessDesc {
            location: cu::CUmemLocation {
                type_: cu::CU_MEM_LOCATION_TYPE_DEVICE,
                id: self.inner.device,
            },
            flags: cu::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: `at..at+len` lies in a reservation of ours; `handle` holds `len` bytes.
        unsafe {
            check(
                cuda,
                "cuMemMap",
                (cuda.cuMemMap)(at as u64, len, 0, handle, 0),
            )?;
            let rc = (cuda.cuMemSetAccess)(at as u64, len, &access, 1);
            if let Err(e) = check(cuda, "cuMemSetAccess", rc) {
                (cuda.cuMemUnmap)(at as u64, len);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Releases what `b` holds (best effort after the first failure, which is returned).
    fn release(&self, b: &Backing, mapped: bool) -> Result<()> {
        let cuda = self.driver()?;
        // SAFETY: each of these was made by this device for `b`, and is released once.
        let (unmap, free, addr) = unsafe {
            (
                if mapped {
                    (cuda.cuMemUnmap)(b.mapped_at as u64, b.phys_len)
                } else {
                    cu::CUDA_SUCCESS
                },
                (cuda.cuMemRelease)(b.handle),
                (cuda.cuMemAddressFree)(b.range as u64, b.reserve_len),
            )
        };
        check(cuda, "cuMemUnmap", unmap)?;
        check(cuda, "cuMemRelease", free)?;
        check(cuda, "cuMemAddressFree", addr)
    }
}

impl Device for Cuda {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn cpu_accessible(&self) -> bool {
        false
    }

    fn allocate(&self, name: &str, len: usize, placement: Placement) -> Result<Segment> {
        let too_large = || Error::Device {
            device: "cuda",
            call: "cuMemCreate",
            code: 0,
            detail: format!(": {name} of {len} bytes is too large"),
        };
        let layout = Layout::new(self.inner.granularity, len, placement).ok_or_else(too_large)?;
        let cuda = self.driver()?;
        let range = self.reserve(layout.reserve_len, layout.align)?;
        let mut backing = Backing {
            handle: 0,
            range,
            reserve_len: layout.reserve_len,
            mapped_at: range,
            phys_len: layout.phys_len,
            pad: layout.pad,
            local: true,
        };
        // Undoes what was made so far (the reservation, the memory once created).
        let undo = |b: &Backing, created: bool| {
            // SAFETY: releasing what this call made, once.
            unsafe {
                if created {
                    (cuda.cuMemRelease)(b.handle);
                }
                (cuda.cuMemAddressFree)(b.range as u64, b.reserve_len);
            }
        };
        let Some(at) = layout.mapped_at(range) else {
            undo(&backing, false);
            return Err(too_large());
        };
        backing.mapped_at = at;
        let p = prop(self.inner.device);
        // SAFETY: the driver's allocation with a valid out-pointer and properties.
        let rc = unsafe { (cuda.cuMemCreate)(&mut backing.handle, layout.phys_len, &p, 0) };
        if let Err(e) = check(cuda, "cuMemCreate", rc) {
            undo(&backing, false);
            return Err(e);
        }
        if let Err(e) = self.map(at, layout.phys_len, backing.handle) {
            undo(&backing, true);
            return Err(e);
        }
        if let Err(e) = self.set_now(at as u64, 0, layout.phys_len) {
            let _ = self.release(&backing, true);
            return Err(e);
        }
        tracing::debug!(
            "cuda: {name}: {len} bytes at {:#x} on device {}",
            at + layout.pad,
            self.inner.device
        );
        Ok(Segment::unmapped(at + layout.pad, len, Box::new(backing)))
    }

    fn export(&self, segment: &Segment) -> Result<Export> {
        let Some(b) = segment
            .backing()
            .downcast_ref::<Backing>()
            .filter(|b| b.local)
        else {
            return Err(Error::os(
                "exporting a segment the cuda device did not allocate",
                std::io::ErrorKind::InvalidInput,
            ));
        };
        let cuda = self.driver()?;
        let mut fd: i32 = -1;
        // SAFETY: the driver writes an int descriptor for a POSIX-descriptor export.
        check(cuda, "cuMemExportToShareableHandle", unsafe {
            (cuda.cuMemExportToShareableHandle)(
                (&mut fd as *mut i32).cast(),
                b.handle,
                cu::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                0,
            )
        })?;
        // SAFETY: the driver gave this process a new descriptor, now owned here.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Export {
            bytes: vmm::encode(&[b.phys_len as u64, b.pad as u64, segment.len() as u64]),
            fds: vec![fd],
        })
    }

    fn exported_len(&self, export: &Export) -> Result<usize> {
        Ok(parse(export)?.2)
    }

    fn import(&self, export: &Export, _placement: Placement) -> Result<Segment> {
        let (phys_len, pad, len) = parse(export)?;
        let cuda = self.driver()?;
        let fd = export.fds[0].as_raw_fd();
        let mut handle = 0u64;
        // SAFETY: the driver takes the descriptor as a pointer-sized integer and does not keep it.
        check(cuda, "cuMemImportFromShareableHandle", unsafe {
            (cuda.cuMemImportFromShareableHandle)(
                &mut handle,
                fd as usize as *mut c_void,
                cu::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            )
        })?;
        let gran = self.inner.granularity;
        let range = match self.reserve(phys_len, gran) {
            Ok(r) => r,
            Err(e) => {
                // SAFETY: releasing the handle just imported.
                unsafe { (cuda.cuMemRelease)(handle) };
                return Err(e);
            }
        };
        if let Err(e) = self.map(range, phys_len, handle) {
            // SAFETY: as above; the reservation holds nothing.
            unsafe {
                (cuda.cuMemRelease)(handle);
                (cuda.cuMemAddressFree)(range as u64, phys_len);
            }
            return Err(e);
        }
        Ok(Segment::unmapped(
            range + pad,
            len,
            Box::new(Backing {
                handle,
                range,
                reserve_len: phys_len,
                mapped_at: range,
                phys_len,
                pad,
                local: false,
            }),
        ))
    }

    fn free(&self, segment: Segment) -> Result<()> {
        let Some(b) = segment.backing().downcast_ref::<Backing>() else {
            return Err(Error::os(
                "freeing a segment the cuda device did not make",
                std::io::ErrorKind::InvalidInput,
            ));
        };
        self.release(b, true)
    }

    fn set(&self, segment: &Segment, offset: usize, byte: u8, len: usize) -> Result<()> {
        check_range(segment, "cuda set", offset, len)?;
        if len == 0 {
            return Ok(());
        }
        self.set_now((segment.addr() + offset) as u64, byte, len)
    }

    fn copy(&self, segment: &Segment, src: usize, dst: usize, len: usize) -> Result<()> {
        check_range(segment, "cuda copy (source)", src, len)?;
        check_range(segment, "cuda copy (destination)", dst, len)?;
        if len == 0 || src == dst {
            return Ok(());
        }
        let base = segment.addr();
        if src.abs_diff(dst) >= len {
            return self.copy_now((base + dst) as u64, (base + src) as u64, len);
        }
        vmm::copy_overlapping(self, base, src, dst, len)
    }
}

impl DeviceMemory for Cuda {
    unsafe fn write(&self, to: usize, src: *const u8, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        // Unified addressing tells host from device memory.
        self.copy_now(to as u64, src as u64, len)
    }

    unsafe fn read(&self, dest: *mut u8, from: usize, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        self.copy_now(dest as u64, from as u64, len)
    }

    fn memory_name(&self) -> &'static str {
        "cuda"
    }
}

impl Accelerator for Cuda {
    fn kind(&self) -> AcceleratorKind {
        AcceleratorKind::Cuda
    }

    fn device_id(&self) -> i32 {
        self.inner.device
    }

    fn as_device(&self) -> Box<dyn Device> {
        Box::new(self.clone())
    }

    fn as_memory(&self) -> Box<dyn DeviceMemory> {
        Box::new(self.clone())
    }

    fn malloc(&self, len: usize) -> Result<usize> {
        let cuda = self.driver()?;
        let mut at: cu::CUdeviceptr = 0;
        // SAFETY: the driver's allocation with a valid out-pointer.
        check(cuda, "cuMemAlloc", unsafe {
            (cuda.cuMemAlloc)(&mut at, len)
        })?;
        Ok(at as usize)
    }

    fn free_plain(&self, at: usize) -> Result<()> {
        let cuda = self.driver()?;
        // SAFETY: `at` came from cuMemAlloc and is freed once.
        check(cuda, "cuMemFree", unsafe { (cuda.cuMemFree)(at as u64) })
    }

    fn copy_on_stream(&self, dst: usize, src: usize, len: usize, stream: usize) -> Result<()> {
        let cuda = self.driver()?;
        self.used();
        // SAFETY: the driver checks the addresses and the stream and answers with a code.
        check(cuda, "cuMemcpyAsync", unsafe {
            (cuda.cuMemcpyAsync)(dst as u64, src as u64, len, stream as cu::CUstream)
        })
    }

    fn call_on_stream(
        &self,
        stream: usize,
        f: unsafe extern "C" fn(*mut c_void),
        arg: usize,
    ) -> Result<()> {
        let cuda = self.driver()?;
        self.used();
        // SAFETY: `f` is a function of the library that takes `arg` and makes no CUDA call (the
        // driver forbids them there); the driver runs it once.
        check(cuda, "cuLaunchHostFunc", unsafe {
            (cuda.cuLaunchHostFunc)(stream as cu::CUstream, f, arg as *mut c_void)
        })
    }

    fn signal_on_stream(
        &self,
        stream: usize,
        at: usize,
        value: u32,
        op: StreamSignal,
    ) -> Result<()> {
        if op == StreamSignal::Add {
            let k = self.kernels()?;
            let (mut addr, mut value) = (at as u64, value);
            return self.launch(
                k.signal_add,
                stream,
                &mut [
                    std::ptr::addr_of_mut!(addr).cast(),
                    std::ptr::addr_of_mut!(value).cast(),
                ],
            );
        }
        let cuda = self.driver()?;
        self.used();
        // SAFETY: the driver checks the address and the stream.
        check(cuda, "cuStreamWriteValue32", unsafe {
            (cuda.cuStreamWriteValue32)(
                stream as cu::CUstream,
                at as u64,
                value,
                cu::CU_STREAM_WRITE_VALUE_DEFAULT,
            )
        })
    }

    /// EQ and GE are the stream's own memory operation (`cuStreamWaitValue32`: no kernel, no
    /// SM held; its GE holds when `(int32_t)(word - value) >= 0`, a signed `>=` unless the two
    /// lie 2^31 or more apart); the others are the library's wait kernel.
    fn wait_on_stream(&self, stream: usize, at: usize, value: u32, cmp: StreamCmp) -> Result<()> {
        let flags = match cmp {
            StreamCmp::Eq => cu::CU_STREAM_WAIT_VALUE_EQ,
            StreamCmp::Ge => cu::CU_STREAM_WAIT_VALUE_GEQ,
            _ => {
                let k = self.kernels()?;
                let (mut addr, mut cmp, mut value) = (at as u64, cmp as u32, value);
                return self.launch(
                    k.wait,
                    stream,
                    &mut [
                        std::ptr::addr_of_mut!(addr).cast(),
                        std::ptr::addr_of_mut!(cmp).cast(),
                        std::ptr::addr_of_mut!(value).cast(),
                    ],
                );
            }
        };
        let cuda = self.driver()?;
        self.used();
        // SAFETY: the driver checks the address and the stream.
        check(cuda, "cuStreamWaitValue32", unsafe {
            (cuda.cuStreamWaitValue32)(stream as cu::CUstream, at as u64, value, flags)
        })
    }

    /// The whole context (`cuCtxSynchronize`: every stream, ones the program destroyed since
    /// too, whose handles must not be passed to the driver again), on a thread of its own that
    /// this call waits for at most `timeout`.
    fn drain(&self, timeout: Duration) {
        if !self.inner.enqueued.take() {
            return;
        }
        let this = self.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("shmem-cuda-drain".into())
            .spawn(move || {
                let rc = this.driver().and_then(|cuda| {
                    // SAFETY: a plain driver call on the context `driver()` made current.
                    check(cuda, "cuCtxSynchronize", unsafe {
                        (cuda.cuCtxSynchronize)()
                    })
                });
                if let Err(e) = rc {
                    tracing::warn!(
                        "finalize: the library's work on the GPU's streams did not drain: {e}"
                    );
                }
                let _ = tx.send(());
            });
        if spawned.is_ok() && rx.recv_timeout(timeout).is_err() {
            tracing::warn!(
                "finalize: the library's work on the GPU's streams did not drain within {} s",
                timeout.as_secs_f64()
            );
        }
    }
}

/// An export's (physical length, pad, length), checked.
fn parse(export: &Export) -> Result<(usize, usize, usize)> {
    let words = vmm::decode(&export.bytes, EXPORT_WORDS)
        .filter(|_| export.fds.len() == 1)
        .ok_or_else(|| {
            Error::os(
                format!(
                    "a cuda segment's export has {} bytes and {} descriptors, not {} and one \
                     (is SHMEM_DEVICE=cuda set for every PE?)",
                    export.bytes.len(),
                    export.fds.len(),
                    8 * EXPORT_WORDS
                ),
                std::io::ErrorKind::InvalidData,
            )
        })?;
    vmm::shape(&words, "cuda")
}
