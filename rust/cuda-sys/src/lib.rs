//! Raw bindings of the CUDA driver calls the shmem library makes, loaded at run time from
//! `libcuda.so.1` with libloading: the library builds without CUDA and runs without it until
//! the CUDA device is chosen.
//!
//! This crate owns the declarations only: the types, structs and constants as CUDA's `cuda.h`
//! defines them, and [`Cuda`], a table of function pointers that [`Cuda::load`] resolves. It
//! never calls the driver and holds no state beyond the loaded library; the CUDA device in
//! `shmem-core` makes every call and owns its `// SAFETY:` reasoning.
//!
//! A field of [`Cuda`] is named after the call's API name (`cuMemAlloc`) and holds the symbol
//! a program compiled against cuda.h would call: cuda.h renames some calls with `#define`
//! (`cuMemAlloc` is `cuMemAlloc_v2`, whose `CUdeviceptr` is 64-bit), and the symbol is the
//! legacy-default-stream one, never a `_ptds`/`_ptsz` variant.
//!
//! Each list below (types, structs, functions, constants) is written once, in a macro that
//! defines the bindings and also describes them as data ([`TYPEDEFS`], [`STRUCTS`], [`DECLS`],
//! [`CONSTANTS`]); the macros and the declaration types are `sys_decl`'s, shared with
//! `ascend-sys`. `cuda_decls.txt` beside this crate holds the same facts extracted from
//! cuda.h by `extract_decls.py`; `tests/decls.rs` checks that the two agree.

// The names are CUDA's own spelling (CUresult, cuMemAlloc, requestedHandleTypes): a reader
// greps CUDA's documentation for them, so they are kept rather than converted to Rust's cases.
#![allow(non_camel_case_types, non_snake_case)]

pub use sys_decl::{Constant, Decl, Field, StructDecl, Typedef};

use std::ffi::{c_char, c_void};

/// The file [`Cuda::load`] is given unless `SHMEM_CUDA_LIBRARY` names another: the driver's
/// library, which NVIDIA's driver installs where the dynamic loader finds it.
pub const LIBRARY: &str = "libcuda.so.1";

sys_decl::typedefs! {
    /// A device ordinal, `0 .. cuDeviceGetCount` (the visible devices, renumbered).
    CUdevice: "int" = i32;
    /// A device address: 64-bit, in the address space unified with the host's (a host and a
    /// device address never coincide).
    CUdeviceptr: "unsigned long long" = u64;
    /// A context: a device's state for this process, current on a thread. The library uses the
    /// device's primary context, the one CUDA's runtime API and PyTorch use too.
    CUcontext: "struct CUctx_st *" = *mut c_void;
    /// A stream: an in-order queue of work on one context. Null is the context's legacy
    /// default stream, which waits for (and is waited for by) every blocking stream.
    CUstream: "struct CUstream_st *" = *mut c_void;
    /// A handle of physical memory (`cuMemCreate`, or imported from a shareable handle),
    /// mapped into a reserved address range with `cuMemMap`.
    CUmemGenericAllocationHandle: "unsigned long long" = u64;
    /// A host function run by a stream when it reaches it (`cuLaunchHostFunc`), given its
    /// `userData`; it must not call CUDA.
    CUhostFn: "void (*)(void *)" = unsafe extern "C" fn(*mut c_void);
    /// A module: code loaded into a context (`cuModuleLoadData`, PTX compiled for the device by
    /// the driver), holding kernels.
    CUmodule: "struct CUmod_st *" = *mut c_void;
    /// A kernel of a module (`cuModuleGetFunction`), launched with `cuLaunchKernel`.
    CUfunction: "struct CUfunc_st *" = *mut c_void;
    /// cuda.h's 32-bit unsigned integer (the stream memory operations' value).
    cuuint32_t: "uint32_t" = u32;
    /// cuda.h's 64-bit unsigned integer (the stream memory operations' value).
    cuuint64_t: "uint64_t" = u64;
    /// The driver's status: [`CUDA_SUCCESS`] or an error code (`CUDA_ERROR_*`; [`error_name`]
    /// names the ones the library handles, `cuGetErrorName` every one).
    CUresult: "enum" = u32;
    /// `CUdevice_attribute`: what `cuDeviceGetAttribute` reports.
    CUdevice_attribute: "enum" = u32;
    /// `CUmemAllocationHandleType`: the kinds of shareable handle physical memory may be
    /// exported as (a bit mask in [`CUmemAllocationProp::requestedHandleTypes`]).
    CUmemAllocationHandleType: "enum" = u32;
    /// `CUmemAccess_flags`: the access a device is given to a mapped range.
    CUmemAccess_flags: "enum" = u32;
    /// `CUmemLocationType`: what [`CUmemLocation::id`] names (a device here).
    CUmemLocationType: "enum" = u32;
    /// `CUmemAllocationType`: how physical memory is allocated (pinned only).
    CUmemAllocationType: "enum" = u32;
    /// `CUmemAllocationGranularity_flags`: which granularity `cuMemGetAllocationGranularity`
    /// gives.
    CUmemAllocationGranularity_flags: "enum" = u32;
    /// `CUstream_flags`: how `cuStreamCreate`'s stream relates to the legacy default stream.
    CUstream_flags: "enum" = u32;
    /// `CUstreamWaitValue_flags`: the comparison of `cuStreamWaitValue32/64`.
    CUstreamWaitValue_flags: "enum" = u32;
    /// `CUstreamWriteValue_flags`: the ordering of `cuStreamWriteValue32/64`.
    CUstreamWriteValue_flags: "enum" = u32;
}

sys_decl::structs! {
    /// `CUmemLocation`: where physical memory lives, or which device an access descriptor is
    /// for (8 bytes).
    struct CUmemLocation {
        /// A [`CUmemLocationType`] ([`CU_MEM_LOCATION_TYPE_DEVICE`]).
        type_: CUmemLocationType => "type",
        /// The device ordinal (for [`CU_MEM_LOCATION_TYPE_DEVICE`]).
        id: i32 => "id",
    }

    /// The anonymous struct that is [`CUmemAllocationProp::allocFlags`] (8 bytes).
    struct CUmemAllocationProp_flags as "CUmemAllocationProp.allocFlags" {
        /// `CUmemAllocationCompType`: 0, not compressible.
        compressionType: u8 => "compressionType",
        /// 1 to ask for memory usable by GPUDirect RDMA, 0 otherwise.
        gpuDirectRDMACapable: u8 => "gpuDirectRDMACapable",
        /// `CU_MEM_CREATE_USAGE_*` bits: 0, ordinary memory.
        usage: u16 => "usage",
        /// Reserved, 0.
        reserved: [u8; 4] => "reserved",
    }

    /// `CUmemAllocationProp`: what `cuMemCreate` allocates and `cuMemGetAllocationGranularity`
    /// asks about (32 bytes).
    struct CUmemAllocationProp {
        /// A [`CUmemAllocationType`] ([`CU_MEM_ALLOCATION_TYPE_PINNED`]).
        type_: CUmemAllocationType => "type",
        /// The [`CUmemAllocationHandleType`]s the memory may be exported as
        /// ([`CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`] to share it with other processes).
        requestedHandleTypes: CUmemAllocationHandleType => "requestedHandleTypes",
        /// The device the memory is on.
        location: CUmemLocation => "location",
        /// Windows' object attributes for Win32 handles; null on Linux.
        win32HandleMetaData: *mut c_void => "win32HandleMetaData",
        /// Compression, RDMA and usage hints; all zero for ordinary memory.
        allocFlags: CUmemAllocationProp_flags => "allocFlags",
    }

    /// `CUmemAccessDesc`: the access one location is given to a mapped range (12 bytes).
    struct CUmemAccessDesc {
        /// The device given access.
        location: CUmemLocation => "location",
        /// A [`CUmemAccess_flags`] ([`CU_MEM_ACCESS_FLAGS_PROT_READWRITE`]).
        flags: CUmemAccess_flags => "flags",
    }
}

sys_decl::functions! {
    /// The CUDA driver calls the library makes, resolved from one loaded `libcuda.so.1` (or a
    /// stand-in with the same symbols). Each field is the C function of its API name, resolved
    /// from the ABI symbol cuda.h maps that name to ([`DECLS`] lists both); calling one is
    /// `unsafe`: the driver's rules for its arguments (valid pointers, live handles, a current
    /// context) are the caller's to keep. The library stays loaded as long as this value lives,
    /// so the pointers must not outlive it.
    pub struct Cuda;

    /// Initialises the driver for the process; `Flags` must be 0. Every call but
    /// `cuDriverGetVersion` and `cuGetError*` fails with [`CUDA_ERROR_NOT_INITIALIZED`] before
    /// it; calling it again is harmless. [`CUDA_ERROR_NO_DEVICE`] without a usable GPU,
    /// [`CUDA_ERROR_STUB_LIBRARY`] from the toolkit's link-time stub.
    fn cuInit(Flags: u32 => "unsigned int") -> CUresult => "CUresult";
    /// Writes the newest CUDA version the driver supports (1000 * major + 10 * minor: 12090
    /// for 12.9); needs no `cuInit`.
    fn cuDriverGetVersion(driverVersion: *mut i32 => "int *") -> CUresult => "CUresult";
    /// Writes the name of `error` (`"CUDA_ERROR_INVALID_VALUE"`), a static string; an unknown
    /// code writes null and returns [`CUDA_ERROR_INVALID_VALUE`]. Needs no `cuInit`.
    fn cuGetErrorName(error: CUresult => "CUresult", pStr: *mut *const c_char => "const char **")
        -> CUresult => "CUresult";
    /// Writes the description of `error`, a static string, as `cuGetErrorName` does.
    fn cuGetErrorString(
        error: CUresult => "CUresult",
        pStr: *mut *const c_char => "const char **",
    ) -> CUresult => "CUresult";

    /// Writes the number of devices this process may use (after `CUDA_VISIBLE_DEVICES`).
    fn cuDeviceGetCount(count: *mut i32 => "int *") -> CUresult => "CUresult";
    /// Writes the device of ordinal `ordinal` (`0 .. cuDeviceGetCount`).
    fn cuDeviceGet(device: *mut CUdevice => "CUdevice *", ordinal: i32 => "int")
        -> CUresult => "CUresult";
    /// Writes the value of attribute `attrib` of device `dev` (`CU_DEVICE_ATTRIBUTE_*`).
    fn cuDeviceGetAttribute(
        pi: *mut i32 => "int *",
        attrib: CUdevice_attribute => "CUdevice_attribute",
        dev: CUdevice => "CUdevice",
    ) -> CUresult => "CUresult";

    /// Retains the primary context of `dev`, creating it on its first retain in the process,
    /// and writes it; it does not make it current. Each retain is undone by one release.
    fn cuDevicePrimaryCtxRetain(pctx: *mut CUcontext => "CUcontext *", dev: CUdevice => "CUdevice")
        -> CUresult => "CUresult";
    /// Undoes one `cuDevicePrimaryCtxRetain` of `dev`'s primary context, which is destroyed
    /// (with its memory and streams) when the last retain is undone.
    fn cuDevicePrimaryCtxRelease as cuDevicePrimaryCtxRelease_v2(dev: CUdevice => "CUdevice")
        -> CUresult => "CUresult";
    /// Writes the context current on the calling thread, null if none.
    fn cuCtxGetCurrent(pctx: *mut CUcontext => "CUcontext *") -> CUresult => "CUresult";
    /// Makes `ctx` current on the calling thread (null: none); other threads are unaffected.
    fn cuCtxSetCurrent(ctx: CUcontext => "CUcontext") -> CUresult => "CUresult";
    /// Writes the device of the context current on the calling thread
    /// ([`CUDA_ERROR_INVALID_CONTEXT`] if none).
    fn cuCtxGetDevice(device: *mut CUdevice => "CUdevice *") -> CUresult => "CUresult";
    /// Blocks until every piece of work queued in the current context, on any stream (destroyed
    /// ones too), is done; returns the error of one that failed.
    fn cuCtxSynchronize() -> CUresult => "CUresult";

    /// Writes the allocation granularity (minimum or recommended) of memory described by
    /// `prop`: the sizes, offsets and addresses of the calls below are multiples of it.
    fn cuMemGetAllocationGranularity(
        granularity: *mut usize => "size_t *",
        prop: *const CUmemAllocationProp => "const CUmemAllocationProp *",
        option: CUmemAllocationGranularity_flags => "CUmemAllocationGranularity_flags",
    ) -> CUresult => "CUresult";
    /// Reserves `size` bytes of virtual addresses (a multiple of the granularity), aligned to
    /// `alignment` (0: CUDA's default), and writes the start; `addr` is a wished-for start (0:
    /// none), `flags` must be 0.
    fn cuMemAddressReserve(
        ptr: *mut CUdeviceptr => "CUdeviceptr *",
        size: usize => "size_t",
        alignment: usize => "size_t",
        addr: CUdeviceptr => "CUdeviceptr",
        flags: u64 => "unsigned long long",
    ) -> CUresult => "CUresult";
    /// Frees a whole range `cuMemAddressReserve` reserved; nothing may be mapped in it.
    fn cuMemAddressFree(ptr: CUdeviceptr => "CUdeviceptr", size: usize => "size_t")
        -> CUresult => "CUresult";
    /// Allocates `size` bytes of physical memory as `prop` describes and writes its handle;
    /// `flags` must be 0. The memory is not addressable until mapped.
    fn cuMemCreate(
        handle: *mut CUmemGenericAllocationHandle => "CUmemGenericAllocationHandle *",
        size: usize => "size_t",
        prop: *const CUmemAllocationProp => "const CUmemAllocationProp *",
        flags: u64 => "unsigned long long",
    ) -> CUresult => "CUresult";
    /// Releases a handle of `cuMemCreate` or `cuMemImportFromShareableHandle`; the memory is
    /// freed once no handle and no mapping refers to it.
    fn cuMemRelease(handle: CUmemGenericAllocationHandle => "CUmemGenericAllocationHandle")
        -> CUresult => "CUresult";
    /// Maps `size` bytes of `handle`'s memory at `ptr`, inside a reserved range; `offset` must
    /// be 0, `flags` 0. No device may access the range until `cuMemSetAccess`.
    fn cuMemMap(
        ptr: CUdeviceptr => "CUdeviceptr",
        size: usize => "size_t",
        offset: usize => "size_t",
        handle: CUmemGenericAllocationHandle => "CUmemGenericAllocationHandle",
        flags: u64 => "unsigned long long",
    ) -> CUresult => "CUresult";
    /// Unmaps `size` bytes at `ptr`, whole mappings only; work still using them must be done.
    fn cuMemUnmap(ptr: CUdeviceptr => "CUdeviceptr", size: usize => "size_t")
        -> CUresult => "CUresult";
    /// Gives the `count` locations of `desc` the access each names to the mapped range of
    /// `size` bytes at `ptr`.
    fn cuMemSetAccess(
        ptr: CUdeviceptr => "CUdeviceptr",
        size: usize => "size_t",
        desc: *const CUmemAccessDesc => "const CUmemAccessDesc *",
        count: usize => "size_t",
    ) -> CUresult => "CUresult";
    /// Exports `handle`'s memory as a shareable handle of `handleType`, which it was created
    /// to allow; `flags` must be 0. For [`CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`],
    /// `shareableHandle` points to an `int` that receives a new file descriptor, the caller's to
    /// pass to other processes (`SCM_RIGHTS`) and to close.
    fn cuMemExportToShareableHandle(
        shareableHandle: *mut c_void => "void *",
        handle: CUmemGenericAllocationHandle => "CUmemGenericAllocationHandle",
        handleType: CUmemAllocationHandleType => "CUmemAllocationHandleType",
        flags: u64 => "unsigned long long",
    ) -> CUresult => "CUresult";
    /// Imports a shareable handle and writes a handle of this process over the same memory
    /// (to map, then release). For [`CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`], `osHandle` is
    /// the descriptor itself cast to a pointer (`(void *)(uintptr_t)fd`), which stays the
    /// caller's to close.
    fn cuMemImportFromShareableHandle(
        handle: *mut CUmemGenericAllocationHandle => "CUmemGenericAllocationHandle *",
        osHandle: *mut c_void => "void *",
        shHandleType: CUmemAllocationHandleType => "CUmemAllocationHandleType",
    ) -> CUresult => "CUresult";

    /// Allocates `bytesize` bytes of device memory on the current context's device and writes
    /// the address.
    fn cuMemAlloc as cuMemAlloc_v2(
        dptr: *mut CUdeviceptr => "CUdeviceptr *",
        bytesize: usize => "size_t",
    ) -> CUresult => "CUresult";
    /// Frees memory `cuMemAlloc` allocated.
    fn cuMemFree as cuMemFree_v2(dptr: CUdeviceptr => "CUdeviceptr") -> CUresult => "CUresult";
    /// Copies `ByteCount` bytes from `src` to `dst`, either of which may be host or device
    /// memory (unified addressing tells them apart), on the legacy default stream. It returns
    /// once `src` may be reused and a copy to host memory is there; a copy to device memory
    /// may still be in flight (later work on the legacy default stream is ordered after it).
    fn cuMemcpy(
        dst: CUdeviceptr => "CUdeviceptr",
        src: CUdeviceptr => "CUdeviceptr",
        ByteCount: usize => "size_t",
    ) -> CUresult => "CUresult";
    /// Queues the copy on `hStream`: it happens when the stream reaches it, and both buffers
    /// must stay valid until then.
    fn cuMemcpyAsync(
        dst: CUdeviceptr => "CUdeviceptr",
        src: CUdeviceptr => "CUdeviceptr",
        ByteCount: usize => "size_t",
        hStream: CUstream => "CUstream",
    ) -> CUresult => "CUresult";
    /// Sets `N` bytes of device memory at `dstDevice` to `uc`.
    fn cuMemsetD8 as cuMemsetD8_v2(
        dstDevice: CUdeviceptr => "CUdeviceptr",
        uc: u8 => "unsigned char",
        N: usize => "size_t",
    ) -> CUresult => "CUresult";
    /// Queues the memset on `hStream`.
    fn cuMemsetD8Async(
        dstDevice: CUdeviceptr => "CUdeviceptr",
        uc: u8 => "unsigned char",
        N: usize => "size_t",
        hStream: CUstream => "CUstream",
    ) -> CUresult => "CUresult";

    /// Creates a stream on the current context and writes it; `Flags` is [`CU_STREAM_DEFAULT`]
    /// or [`CU_STREAM_NON_BLOCKING`] (no implicit ordering with the legacy default stream).
    fn cuStreamCreate(phStream: *mut CUstream => "CUstream *", Flags: u32 => "unsigned int")
        -> CUresult => "CUresult";
    /// Destroys a stream: it returns at once, the work already queued still runs, and the
    /// stream may not be used after.
    fn cuStreamDestroy as cuStreamDestroy_v2(hStream: CUstream => "CUstream")
        -> CUresult => "CUresult";
    /// Blocks until every piece of work queued on `hStream` is done; returns the error of one
    /// that failed.
    fn cuStreamSynchronize(hStream: CUstream => "CUstream") -> CUresult => "CUresult";
    /// Queues a call of `fn_(userData)` on a driver thread when `hStream` reaches it; the
    /// stream's later work waits for it to return. The function must not call CUDA.
    fn cuLaunchHostFunc(
        hStream: CUstream => "CUstream",
        fn_: CUhostFn => "CUhostFn",
        userData: *mut c_void => "void *",
    ) -> CUresult => "CUresult";
    /// Queues a write of the 32-bit `value` at device address `addr` when `stream` reaches it;
    /// with [`CU_STREAM_WRITE_VALUE_DEFAULT`] the stream's earlier writes are visible first.
    fn cuStreamWriteValue32 as cuStreamWriteValue32_v2(
        stream: CUstream => "CUstream",
        addr: CUdeviceptr => "CUdeviceptr",
        value: cuuint32_t => "cuuint32_t",
        flags: u32 => "unsigned int",
    ) -> CUresult => "CUresult";
    /// Holds `stream`, when it reaches this point, until the 32-bit word at `addr` compares
    /// with `value` as `flags` says: [`CU_STREAM_WAIT_VALUE_GEQ`] `(int32_t)(*addr - value) >=
    /// 0`, [`CU_STREAM_WAIT_VALUE_EQ`], [`CU_STREAM_WAIT_VALUE_AND`] `(*addr & value) != 0`,
    /// [`CU_STREAM_WAIT_VALUE_NOR`] `~(*addr | value) != 0`.
    fn cuStreamWaitValue32 as cuStreamWaitValue32_v2(
        stream: CUstream => "CUstream",
        addr: CUdeviceptr => "CUdeviceptr",
        value: cuuint32_t => "cuuint32_t",
        flags: u32 => "unsigned int",
    ) -> CUresult => "CUresult";
    /// `cuStreamWriteValue32` of a 64-bit `value` (`addr` 8-byte aligned).
    fn cuStreamWriteValue64 as cuStreamWriteValue64_v2(
        stream: CUstream => "CUstream",
        addr: CUdeviceptr => "CUdeviceptr",
        value: cuuint64_t => "cuuint64_t",
        flags: u32 => "unsigned int",
    ) -> CUresult => "CUresult";
    /// `cuStreamWaitValue32` on a 64-bit word (`addr` 8-byte aligned; GEQ compares as
    /// `int64_t`).
    fn cuStreamWaitValue64 as cuStreamWaitValue64_v2(
        stream: CUstream => "CUstream",
        addr: CUdeviceptr => "CUdeviceptr",
        value: cuuint64_t => "cuuint64_t",
        flags: u32 => "unsigned int",
    ) -> CUresult => "CUresult";

    /// Loads a module into the current context from `image` (here NUL-terminated PTX text,
    /// which the driver compiles for the context's device) and writes it.
    fn cuModuleLoadData(module: *mut CUmodule => "CUmodule *", image: *const c_void => "const void *")
        -> CUresult => "CUresult";
    /// Writes the kernel `name` (its `.entry` name) of `hmod`.
    fn cuModuleGetFunction(
        hfunc: *mut CUfunction => "CUfunction *",
        hmod: CUmodule => "CUmodule",
        name: *const c_char => "const char *",
    ) -> CUresult => "CUresult";
    /// Queues a launch of `f` on `hStream` with the given grid and block shape; `kernelParams`
    /// points at one pointer per kernel parameter, each at the parameter's value, read before
    /// the call returns; `extra` is null here.
    fn cuLaunchKernel(
        f: CUfunction => "CUfunction",
        gridDimX: u32 => "unsigned int",
        gridDimY: u32 => "unsigned int",
        gridDimZ: u32 => "unsigned int",
        blockDimX: u32 => "unsigned int",
        blockDimY: u32 => "unsigned int",
        blockDimZ: u32 => "unsigned int",
        sharedMemBytes: u32 => "unsigned int",
        hStream: CUstream => "CUstream",
        kernelParams: *mut *mut c_void => "void **",
        extra: *mut *mut c_void => "void **",
    ) -> CUresult => "CUresult";
}

sys_decl::constants! {
    /// 1 if the device shares one address space with the host (every 64-bit Linux GPU).
    CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: CUdevice_attribute = 41;
    /// 1 if the device supports the virtual memory calls (`cuMemAddressReserve`, `cuMemCreate`,
    /// `cuMemMap`, ...).
    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: CUdevice_attribute = 102;
    /// 1 if the device's memory can be exported as a POSIX file descriptor.
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: CUdevice_attribute = 103;
    /// No shareable handle: the memory stays in this process.
    CU_MEM_HANDLE_TYPE_NONE: CUmemAllocationHandleType = 0;
    /// A shareable handle that is a POSIX file descriptor (an `int`).
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR: CUmemAllocationHandleType = 1;
    /// No access (the state of a range before `cuMemSetAccess`).
    CU_MEM_ACCESS_FLAGS_PROT_NONE: CUmemAccess_flags = 0;
    /// Read and write access.
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE: CUmemAccess_flags = 3;
    /// A location that is a device ([`CUmemLocation::id`] is its ordinal).
    CU_MEM_LOCATION_TYPE_DEVICE: CUmemLocationType = 1;
    /// Pinned physical memory: it stays where it was allocated.
    CU_MEM_ALLOCATION_TYPE_PINNED: CUmemAllocationType = 1;
    /// The smallest granularity the memory may have.
    CU_MEM_ALLOC_GRANULARITY_MINIMUM: CUmemAllocationGranularity_flags = 0;
    /// The granularity CUDA recommends for performance.
    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED: CUmemAllocationGranularity_flags = 1;
    /// A stream ordered with the legacy default stream.
    CU_STREAM_DEFAULT: CUstream_flags = 0;
    /// A stream not ordered with the legacy default stream.
    CU_STREAM_NON_BLOCKING: CUstream_flags = 1;
    /// Wait until `(int32_t)(*addr - value) >= 0` (`int64_t` for 64-bit words): a cyclic
    /// comparison, correct across wrap-around.
    CU_STREAM_WAIT_VALUE_GEQ: CUstreamWaitValue_flags = 0;
    /// Wait until `*addr == value`.
    CU_STREAM_WAIT_VALUE_EQ: CUstreamWaitValue_flags = 1;
    /// Wait until `(*addr & value) != 0`.
    CU_STREAM_WAIT_VALUE_AND: CUstreamWaitValue_flags = 2;
    /// Wait until `~(*addr | value) != 0`.
    CU_STREAM_WAIT_VALUE_NOR: CUstreamWaitValue_flags = 3;
    /// The write is ordered after the stream's earlier writes (a fence before it).
    CU_STREAM_WRITE_VALUE_DEFAULT: CUstreamWriteValue_flags = 0;

    /// Success.
    CUDA_SUCCESS: CUresult = 0;
    /// An argument is invalid.
    CUDA_ERROR_INVALID_VALUE: CUresult = 1;
    /// Out of device memory (or of the resources a call needs).
    CUDA_ERROR_OUT_OF_MEMORY: CUresult = 2;
    /// `cuInit` has not run, or failed.
    CUDA_ERROR_NOT_INITIALIZED: CUresult = 3;
    /// The driver is shutting down (a call made during process exit).
    CUDA_ERROR_DEINITIALIZED: CUresult = 4;
    /// The library loaded is the toolkit's link-time stub, not the driver's.
    CUDA_ERROR_STUB_LIBRARY: CUresult = 34;
    /// The device is unavailable (exclusive mode and in use by another process).
    CUDA_ERROR_DEVICE_UNAVAILABLE: CUresult = 46;
    /// No CUDA-capable device is visible.
    CUDA_ERROR_NO_DEVICE: CUresult = 100;
    /// The device ordinal is invalid.
    CUDA_ERROR_INVALID_DEVICE: CUresult = 101;
    /// The module image is not one the driver can load.
    CUDA_ERROR_INVALID_IMAGE: CUresult = 200;
    /// No context is current on the thread, or the context is invalid.
    CUDA_ERROR_INVALID_CONTEXT: CUresult = 201;
    /// The range is already mapped.
    CUDA_ERROR_ALREADY_MAPPED: CUresult = 208;
    /// The range is not mapped.
    CUDA_ERROR_NOT_MAPPED: CUresult = 211;
    /// The driver could not compile PTX for the device.
    CUDA_ERROR_INVALID_PTX: CUresult = 218;
    /// A call into the operating system failed (a file descriptor, an mmap).
    CUDA_ERROR_OPERATING_SYSTEM: CUresult = 304;
    /// The handle (stream, memory handle) is invalid.
    CUDA_ERROR_INVALID_HANDLE: CUresult = 400;
    /// The object is in a state in which the call is not allowed.
    CUDA_ERROR_ILLEGAL_STATE: CUresult = 401;
    /// A named symbol or object was not found.
    CUDA_ERROR_NOT_FOUND: CUresult = 500;
    /// Work queued earlier is not done yet (a query, not a failure).
    CUDA_ERROR_NOT_READY: CUresult = 600;
    /// A kernel or copy accessed an invalid address; the context cannot be used any more.
    CUDA_ERROR_ILLEGAL_ADDRESS: CUresult = 700;
    /// A launch asked for more resources (threads, registers, shared memory) than the device has.
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: CUresult = 701;
    /// The context was destroyed.
    CUDA_ERROR_CONTEXT_IS_DESTROYED: CUresult = 709;
    /// A kernel executed an illegal instruction (a `trap`); the context cannot be used any more.
    CUDA_ERROR_ILLEGAL_INSTRUCTION: CUresult = 715;
    /// A kernel failed; the context cannot be used any more.
    CUDA_ERROR_LAUNCH_FAILED: CUresult = 719;
    /// The call is not permitted here (e.g. a CUDA call inside a host function).
    CUDA_ERROR_NOT_PERMITTED: CUresult = 800;
    /// The call or feature is not supported on this device or system.
    CUDA_ERROR_NOT_SUPPORTED: CUresult = 801;
    /// The driver library and the kernel module are of different versions.
    CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: CUresult = 803;
    /// A wait timed out.
    CUDA_ERROR_TIMEOUT: CUresult = 909;
    /// An unknown internal error.
    CUDA_ERROR_UNKNOWN: CUresult = 999;
}

/// The name of a `CUresult` the library handles (`"CUDA_ERROR_NO_DEVICE"`), or
/// `"unknown CUDA error"` for any other code: log lines print the number beside it, and the
/// driver's `cuGetErrorName` names every code.
pub fn error_name(code: CUresult) -> &'static str {
    Constant::name_of(CONSTANTS, "CUresult", code.into()).unwrap_or("unknown CUDA error")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_names() {
        assert_eq!(error_name(CUDA_SUCCESS), "CUDA_SUCCESS");
        assert_eq!(error_name(CUDA_ERROR_NO_DEVICE), "CUDA_ERROR_NO_DEVICE");
        assert_eq!(error_name(800), "CUDA_ERROR_NOT_PERMITTED");
        assert_eq!(error_name(u32::MAX), "unknown CUDA error");
        // An enumerator of the same value is not an error code: 41 is an attribute.
        assert_eq!(error_name(41), "unknown CUDA error");
    }

    #[test]
    fn symbols_are_the_api_names_or_their_versions() {
        for d in DECLS {
            let version = d.symbol.strip_prefix(d.name);
            assert!(
                matches!(version, Some("" | "_v2")),
                "{} resolves as {}",
                d.name,
                d.symbol
            );
        }
        let renamed: Vec<&str> = DECLS
            .iter()
            .filter(|d| d.symbol != d.name)
            .map(|d| d.name)
            .collect();
        assert_eq!(
            renamed,
            [
                "cuDevicePrimaryCtxRelease",
                "cuMemAlloc",
                "cuMemFree",
                "cuMemsetD8",
                "cuStreamDestroy",
                "cuStreamWriteValue32",
                "cuStreamWaitValue32",
                "cuStreamWriteValue64",
                "cuStreamWaitValue64",
            ]
        );
    }

    #[test]
    fn default_structs_are_zero() {
        let prop = CUmemAllocationProp::default();
        assert!(prop.win32HandleMetaData.is_null());
        assert_eq!(
            (prop.type_, prop.requestedHandleTypes, prop.location),
            (0, 0, CUmemLocation { type_: 0, id: 0 })
        );
        assert_eq!(prop.allocFlags.reserved, [0; 4]);
    }
}
