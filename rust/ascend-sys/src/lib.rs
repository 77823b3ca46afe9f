//! Raw bindings of the ACL (AscendCL) runtime calls the shmem library makes, loaded at run time
//! from `libascendcl.so` with libloading: the library builds without CANN and runs without it
//! until the NPU device is chosen.
//!
//! This crate owns the declarations only: the types, structs and constants as CANN's
//! `acl/acl_rt.h`, `acl/acl_base_rt.h` and `acl/error_codes/rt_error_codes.h` define them, and
//! [`Acl`], a table of function pointers that [`Acl::load`] resolves. It never calls ACL and
//! holds no state beyond the loaded library; the NPU device in `shmem-core` makes every call and
//! owns its `// SAFETY:` reasoning.
//!
//! Each list below (types, structs, functions, constants) is written once, in a macro that
//! defines the bindings and also describes them as data ([`TYPEDEFS`], [`STRUCTS`], [`DECLS`],
//! [`CONSTANTS`]); the macros and the declaration types are `sys_decl`'s, shared with
//! `cuda-sys`. `acl_decls.txt` beside this crate holds the same facts extracted from CANN's
//! headers by `extract_decls.py`; `tests/decls.rs` checks that the two agree.

// The names are ACL's own spelling (aclError, aclrtMalloc, handleType): a reader greps CANN's
// documentation for them, so they are kept rather than converted to Rust's cases.
#![allow(non_camel_case_types, non_snake_case)]

pub use sys_decl::{Constant, Decl, Field, StructDecl, Typedef};

use std::ffi::{c_char, c_void};

/// The file [`Acl::load`] is given unless `SHMEM_ACL_LIBRARY` names another (CANN's runtime
/// library, found through `LD_LIBRARY_PATH` after CANN's `set_env.sh`).
pub const LIBRARY: &str = "libascendcl.so";

sys_decl::typedefs! {
    /// ACL's status: [`ACL_SUCCESS`] or an error code (`ACL_ERROR_*`; [`error_name`] names the
    /// ones the library handles).
    aclError: "int" = i32;
    /// A stream: an in-order queue of tasks on one device (copies, memsets, events, kernels,
    /// host functions). Null is the current context's default stream.
    aclrtStream: "void *" = *mut c_void;
    /// An event: recorded on a stream, completed when the stream reaches it.
    aclrtEvent: "void *" = *mut c_void;
    /// A context: the device and resources current on a thread.
    aclrtContext: "void *" = *mut c_void;
    /// A handle of physical device memory (`aclrtMallocPhysical`, or imported from a shareable
    /// handle), mapped into a reserved address range with `aclrtMapMem`.
    aclrtDrvMemHandle: "void *" = *mut c_void;
    /// A host function run by a stream when it reaches it (`aclrtLaunchHostFunc`), given `args`.
    aclrtHostFunc: "void (*)(void *)" = unsafe extern "C" fn(*mut c_void);
    /// `aclrtMemcpyKind`: the direction of a copy ([`ACL_MEMCPY_HOST_TO_HOST`] ..
    /// [`ACL_MEMCPY_DEFAULT`], where ACL infers it from the addresses).
    aclrtMemcpyKind: "enum" = u32;
    /// `aclrtMemMallocPolicy`: page size and placement of `aclrtMalloc`'s memory.
    aclrtMemMallocPolicy: "enum" = u32;
    /// `aclrtMemAttr`: the kind of physical memory `aclrtMallocPhysical` allocates.
    aclrtMemAttr: "enum" = u32;
    /// `aclrtMemLocationType`: where physical memory lives (device or host).
    aclrtMemLocationType: "enum" = u32;
    /// `aclrtMemAllocationType`: how physical memory is allocated (pinned only).
    aclrtMemAllocationType: "enum" = u32;
    /// `aclrtMemHandleType`: the kind of shareable handle physical memory can be exported as.
    aclrtMemHandleType: "enum" = u32;
    /// `aclrtMemGranularityOptions`: which granularity `aclrtMemGetAllocationGranularity` gives.
    aclrtMemGranularityOptions: "enum" = u32;
}

sys_decl::structs! {
    /// `aclrtMemLocation`: where physical memory lives.
    struct aclrtMemLocation {
        /// The device id (for [`ACL_MEM_LOCATION_TYPE_DEVICE`]).
        id: u32 => "id",
        /// An [`aclrtMemLocationType`].
        type_: aclrtMemLocationType => "type",
    }

    /// `aclrtPhysicalMemProp`: what `aclrtMallocPhysical` allocates and
    /// `aclrtMemGetAllocationGranularity` asks about (32 bytes).
    struct aclrtPhysicalMemProp {
        /// An [`aclrtMemHandleType`] ([`ACL_MEM_HANDLE_TYPE_NONE`]).
        handleType: aclrtMemHandleType => "handleType",
        /// An [`aclrtMemAllocationType`] ([`ACL_MEM_ALLOCATION_TYPE_PINNED`]).
        allocationType: aclrtMemAllocationType => "allocationType",
        /// An [`aclrtMemAttr`] (e.g. [`ACL_HBM_MEM_HUGE`]: HBM in huge pages).
        memAttr: aclrtMemAttr => "memAttr",
        /// The device the memory is on.
        location: aclrtMemLocation => "location",
        /// Reserved, 0.
        reserve: u64 => "reserve",
    }
}

sys_decl::functions! {
    /// ACL's runtime calls the library makes, resolved from one loaded `libascendcl.so` (or a
    /// stand-in with the same symbols). Each field is the C function of its name; calling one
    /// is `unsafe`: ACL's rules for its arguments (valid pointers, live handles, the device
    /// current on the thread) are the caller's to keep. The library stays loaded as long as
    /// this value lives, so the pointers must not outlive it.
    pub struct Acl;

    /// Initialises ACL for the process; `configPath` names a JSON configuration or is null.
    /// Returns [`ACL_ERROR_REPEAT_INITIALIZE`] if the process did so already (torch_npu does).
    fn aclInit(configPath: *const c_char => "const char *") -> aclError => "aclError";
    /// Finalises ACL for the process; [`ACL_ERROR_REPEAT_FINALIZE`] when already done.
    fn aclFinalize() -> aclError => "aclError";
    /// The thread's most recent error message, or null: owned by ACL, read it before the next
    /// call.
    fn aclGetRecentErrMsg() -> *const c_char => "const char *";

    /// Writes the number of devices this process may use.
    fn aclrtGetDeviceCount(count: *mut u32 => "uint32_t *") -> aclError => "aclError";
    /// Writes the device current on the calling thread ([`ACL_ERROR_RT_CONTEXT_NULL`] if none).
    fn aclrtGetDevice(deviceId: *mut i32 => "int32_t *") -> aclError => "aclError";
    /// Makes `deviceId` current on the calling thread, creating its default context on first
    /// use.
    fn aclrtSetDevice(deviceId: i32 => "int32_t") -> aclError => "aclError";
    /// Releases the process's use of `deviceId`: its default context and streams when the last
    /// `aclrtSetDevice` is undone.
    fn aclrtResetDevice(deviceId: i32 => "int32_t") -> aclError => "aclError";
    /// Writes the context current on the calling thread.
    fn aclrtGetCurrentContext(context: *mut aclrtContext => "aclrtContext *")
        -> aclError => "aclError";
    /// Makes `context` (and its device) current on the calling thread.
    fn aclrtSetCurrentContext(context: aclrtContext => "aclrtContext") -> aclError => "aclError";
    /// Writes the process id the device driver knows this process by: the id a peer passes to
    /// `aclrtMemSetPidToShareableHandle` to allow this process to import its memory.
    fn aclrtDeviceGetBareTgid(pid: *mut i32 => "int32_t *") -> aclError => "aclError";

    /// Writes 1 to `canAccessPeer` if `deviceId` can access `peerDeviceId`'s memory, else 0.
    fn aclrtDeviceCanAccessPeer(
        canAccessPeer: *mut i32 => "int32_t *",
        deviceId: i32 => "int32_t",
        peerDeviceId: i32 => "int32_t",
    ) -> aclError => "aclError";
    /// Lets the current device access `peerDeviceId`'s memory; `flags` is reserved, 0.
    fn aclrtDeviceEnablePeerAccess(peerDeviceId: i32 => "int32_t", flags: u32 => "uint32_t")
        -> aclError => "aclError";

    /// Writes the allocation granularity (minimum or recommended) of memory described by
    /// `prop`: sizes and reservations are multiples of it.
    fn aclrtMemGetAllocationGranularity(
        prop: *mut aclrtPhysicalMemProp => "aclrtPhysicalMemProp *",
        option: aclrtMemGranularityOptions => "aclrtMemGranularityOptions",
        granularity: *mut usize => "size_t *",
    ) -> aclError => "aclError";
    /// Reserves `size` bytes of device virtual addresses, aligned to `alignment`, and writes
    /// the start to `virPtr`; `expectPtr` must be null, `flags` picks the page type (0).
    fn aclrtReserveMemAddress(
        virPtr: *mut *mut c_void => "void **",
        size: usize => "size_t",
        alignment: usize => "size_t",
        expectPtr: *mut c_void => "void *",
        flags: u64 => "uint64_t",
    ) -> aclError => "aclError";
    /// Releases a range `aclrtReserveMemAddress` reserved (nothing may be mapped in it).
    fn aclrtReleaseMemAddress(virPtr: *mut c_void => "void *") -> aclError => "aclError";
    /// Allocates `size` bytes of physical memory as `prop` describes and writes its handle;
    /// `flags` is reserved, 0.
    fn aclrtMallocPhysical(
        handle: *mut aclrtDrvMemHandle => "aclrtDrvMemHandle *",
        size: usize => "size_t",
        prop: *const aclrtPhysicalMemProp => "const aclrtPhysicalMemProp *",
        flags: u64 => "uint64_t",
    ) -> aclError => "aclError";
    /// Frees physical memory once no mapping uses it.
    fn aclrtFreePhysical(handle: aclrtDrvMemHandle => "aclrtDrvMemHandle")
        -> aclError => "aclError";
    /// Writes a new reference to the physical memory mapped at `virPtr` (where `aclrtMapMem`
    /// mapped it), released with `aclrtFreePhysical` as an allocation is.
    fn aclrtMemRetainAllocationHandle(
        virPtr: *mut c_void => "void *",
        handle: *mut aclrtDrvMemHandle => "aclrtDrvMemHandle *",
    ) -> aclError => "aclError";
    /// Maps `size` bytes of `handle`'s memory from `offset` at `virPtr`, inside a reserved
    /// range; `flags` is reserved, 0.
    fn aclrtMapMem(
        virPtr: *mut c_void => "void *",
        size: usize => "size_t",
        offset: usize => "size_t",
        handle: aclrtDrvMemHandle => "aclrtDrvMemHandle",
        flags: u64 => "uint64_t",
    ) -> aclError => "aclError";
    /// Unmaps the mapping that starts at `virPtr`.
    fn aclrtUnmapMem(virPtr: *mut c_void => "void *") -> aclError => "aclError";
    /// Exports physical memory as a shareable handle (a 64-bit value other processes import);
    /// `handleType` must be [`ACL_MEM_HANDLE_TYPE_NONE`], `flags` 0 keeps the pid whitelist.
    fn aclrtMemExportToShareableHandle(
        handle: aclrtDrvMemHandle => "aclrtDrvMemHandle",
        handleType: aclrtMemHandleType => "aclrtMemHandleType",
        flags: u64 => "uint64_t",
        shareableHandle: *mut u64 => "uint64_t *",
    ) -> aclError => "aclError";
    /// Allows the `pidNum` processes in `pid` (their `aclrtDeviceGetBareTgid` ids) to import
    /// `shareableHandle`.
    fn aclrtMemSetPidToShareableHandle(
        shareableHandle: u64 => "uint64_t",
        pid: *mut i32 => "int32_t *",
        pidNum: usize => "size_t",
    ) -> aclError => "aclError";
    /// Imports a peer's shareable handle on `deviceId` and writes a handle of this process to
    /// map it with.
    fn aclrtMemImportFromShareableHandle(
        shareableHandle: u64 => "uint64_t",
        deviceId: i32 => "int32_t",
        handle: *mut aclrtDrvMemHandle => "aclrtDrvMemHandle *",
    ) -> aclError => "aclError";
    /// Exports the `aclrtMalloc` memory at `devPtr` (`size` bytes) for other processes and
    /// writes its key (a string; `len` is the room in `key`, 65 bytes). `flags` 0 keeps the
    /// pid whitelist ([`aclrtIpcMemSetImportPid`](Acl::aclrtIpcMemSetImportPid)).
    fn aclrtIpcMemGetExportKey(
        devPtr: *mut c_void => "void *",
        size: usize => "size_t",
        key: *mut c_char => "char *",
        len: usize => "size_t",
        flags: u64 => "uint64_t",
    ) -> aclError => "aclError";
    /// Allows the `num` processes in `pid` (their `aclrtDeviceGetBareTgid` ids) to import the
    /// memory exported as `key`.
    fn aclrtIpcMemSetImportPid(
        key: *const c_char => "const char *",
        pid: *mut i32 => "int32_t *",
        num: usize => "size_t",
    ) -> aclError => "aclError";
    /// Imports a peer's memory exported as `key` and writes the address it is mapped at here.
    fn aclrtIpcMemImportByKey(
        devPtr: *mut *mut c_void => "void **",
        key: *const c_char => "const char *",
        flags: u64 => "uint64_t",
    ) -> aclError => "aclError";
    /// Closes `key`: an importer unmaps the memory, the exporter ends the export (after every
    /// importer closed it).
    fn aclrtIpcMemClose(key: *const c_char => "const char *") -> aclError => "aclError";
    /// Writes the start and size of the block (`aclrtMalloc`, `aclrtMapMem`, `aclrtMallocHost`)
    /// that holds `ptr`.
    fn aclrtMemGetAddressRange(
        ptr: *mut c_void => "void *",
        pbase: *mut *mut c_void => "void **",
        psize: *mut usize => "size_t *",
    ) -> aclError => "aclError";

    /// Allocates `size` bytes of device memory with `policy` and writes the address.
    fn aclrtMalloc(
        devPtr: *mut *mut c_void => "void **",
        size: usize => "size_t",
        policy: aclrtMemMallocPolicy => "aclrtMemMallocPolicy",
    ) -> aclError => "aclError";
    /// Frees memory `aclrtMalloc` allocated.
    fn aclrtFree(devPtr: *mut c_void => "void *") -> aclError => "aclError";
    /// Allocates `size` bytes of page-locked host memory and writes the address.
    fn aclrtMallocHost(hostPtr: *mut *mut c_void => "void **", size: usize => "size_t")
        -> aclError => "aclError";
    /// Frees memory `aclrtMallocHost` allocated.
    fn aclrtFreeHost(hostPtr: *mut c_void => "void *") -> aclError => "aclError";
    /// Copies `count` bytes from `src` to `dst` (room for `destMax`) and returns when done.
    fn aclrtMemcpy(
        dst: *mut c_void => "void *",
        destMax: usize => "size_t",
        src: *const c_void => "const void *",
        count: usize => "size_t",
        kind: aclrtMemcpyKind => "aclrtMemcpyKind",
    ) -> aclError => "aclError";
    /// Queues the copy on `stream`: it happens when the stream reaches it; `src` and `dst`
    /// must stay valid until then.
    fn aclrtMemcpyAsync(
        dst: *mut c_void => "void *",
        destMax: usize => "size_t",
        src: *const c_void => "const void *",
        count: usize => "size_t",
        kind: aclrtMemcpyKind => "aclrtMemcpyKind",
        stream: aclrtStream => "aclrtStream",
    ) -> aclError => "aclError";
    /// Sets `count` bytes at `devPtr` (room for `maxCount`) to the byte `value`.
    fn aclrtMemset(
        devPtr: *mut c_void => "void *",
        maxCount: usize => "size_t",
        value: i32 => "int32_t",
        count: usize => "size_t",
    ) -> aclError => "aclError";
    /// Queues the memset on `stream`.
    fn aclrtMemsetAsync(
        devPtr: *mut c_void => "void *",
        maxCount: usize => "size_t",
        value: i32 => "int32_t",
        count: usize => "size_t",
        stream: aclrtStream => "aclrtStream",
    ) -> aclError => "aclError";

    /// Creates a stream on the current context and writes it.
    fn aclrtCreateStream(stream: *mut aclrtStream => "aclrtStream *") -> aclError => "aclError";
    /// Destroys a stream once its queued tasks are done; it may not be used after.
    fn aclrtDestroyStream(stream: aclrtStream => "aclrtStream") -> aclError => "aclError";
    /// Blocks until every task queued on `stream` is done.
    fn aclrtSynchronizeStream(stream: aclrtStream => "aclrtStream") -> aclError => "aclError";
    /// As `aclrtSynchronizeStream`, giving up after `timeout` ms ([`ACL_ERROR_RT_WAIT_TIMEOUT`]);
    /// -1 waits forever, 0 only checks.
    fn aclrtSynchronizeStreamWithTimeout(
        stream: aclrtStream => "aclrtStream",
        timeout: i32 => "int32_t",
    ) -> aclError => "aclError";
    /// Blocks until every task queued on the current device, on any stream (destroyed ones too),
    /// is done, giving up after `timeout` ms ([`ACL_ERROR_RT_WAIT_TIMEOUT`]); -1 waits forever.
    fn aclrtSynchronizeDeviceWithTimeout(timeout: i32 => "int32_t") -> aclError => "aclError";
    /// Creates an event and writes it.
    fn aclrtCreateEvent(event: *mut aclrtEvent => "aclrtEvent *") -> aclError => "aclError";
    /// Destroys an event.
    fn aclrtDestroyEvent(event: aclrtEvent => "aclrtEvent") -> aclError => "aclError";
    /// Records `event` on `stream`: it completes when the stream reaches this point.
    fn aclrtRecordEvent(event: aclrtEvent => "aclrtEvent", stream: aclrtStream => "aclrtStream")
        -> aclError => "aclError";
    /// Makes `stream` wait, at this point, until `event` completes.
    fn aclrtStreamWaitEvent(
        stream: aclrtStream => "aclrtStream",
        event: aclrtEvent => "aclrtEvent",
    ) -> aclError => "aclError";
    /// Blocks until `event` completes.
    fn aclrtSynchronizeEvent(event: aclrtEvent => "aclrtEvent") -> aclError => "aclError";
    /// Queues a call of `fn_(args)` on the host when `stream` reaches it; the stream's later
    /// tasks wait for it to return.
    fn aclrtLaunchHostFunc(
        stream: aclrtStream => "aclrtStream",
        fn_: aclrtHostFunc => "aclrtHostFunc",
        args: *mut c_void => "void *",
    ) -> aclError => "aclError";
}

sys_decl::constants! {
    /// Copy between host buffers.
    ACL_MEMCPY_HOST_TO_HOST: aclrtMemcpyKind = 0;
    /// Copy from host to device memory.
    ACL_MEMCPY_HOST_TO_DEVICE: aclrtMemcpyKind = 1;
    /// Copy from device to host memory.
    ACL_MEMCPY_DEVICE_TO_HOST: aclrtMemcpyKind = 2;
    /// Copy between device buffers (also across devices with peer access).
    ACL_MEMCPY_DEVICE_TO_DEVICE: aclrtMemcpyKind = 3;
    /// ACL infers the direction from the addresses.
    ACL_MEMCPY_DEFAULT: aclrtMemcpyKind = 4;
    /// `aclrtMalloc`: huge pages if available, else normal pages.
    ACL_MEM_MALLOC_HUGE_FIRST: aclrtMemMallocPolicy = 0;
    /// `aclrtMallocPhysical`: HBM in huge pages.
    ACL_HBM_MEM_HUGE: aclrtMemAttr = 4;
    /// Physical memory on a device ([`aclrtMemLocation::id`]).
    ACL_MEM_LOCATION_TYPE_DEVICE: aclrtMemLocationType = 1;
    /// Pinned physical memory, the only allocation type.
    ACL_MEM_ALLOCATION_TYPE_PINNED: aclrtMemAllocationType = 0;
    /// The handle type `aclrtMemExportToShareableHandle` requires.
    ACL_MEM_HANDLE_TYPE_NONE: aclrtMemHandleType = 0;
    /// The smallest granularity physical memory may have.
    ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM: aclrtMemGranularityOptions = 0;
    /// The granularity ACL recommends for performance.
    ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED: aclrtMemGranularityOptions = 1;

    /// Success.
    ACL_SUCCESS: aclError = 0;
    /// An argument is invalid (ACL's check).
    ACL_ERROR_INVALID_PARAM: aclError = 100000;
    /// ACL is not initialised (`aclInit`).
    ACL_ERROR_UNINITIALIZE: aclError = 100001;
    /// `aclInit` was already called in this process.
    ACL_ERROR_REPEAT_INITIALIZE: aclError = 100002;
    /// `aclFinalize` was already called in this process.
    ACL_ERROR_REPEAT_FINALIZE: aclError = 100037;
    /// The device id is invalid.
    ACL_ERROR_INVALID_DEVICE: aclError = 200002;
    /// An argument is invalid (the runtime's check).
    ACL_ERROR_RT_PARAM_INVALID: aclError = 107000;
    /// The device id is invalid (the runtime's check).
    ACL_ERROR_RT_INVALID_DEVICEID: aclError = 107001;
    /// No context is current on the thread.
    ACL_ERROR_RT_CONTEXT_NULL: aclError = 107002;
    /// The stream is not in the current context.
    ACL_ERROR_RT_STREAM_CONTEXT: aclError = 107003;
    /// The handle (stream, event, memory handle) is invalid.
    ACL_ERROR_RT_INVALID_HANDLE: aclError = 107017;
    /// A wait with a timeout timed out.
    ACL_ERROR_RT_WAIT_TIMEOUT: aclError = 107019;
    /// The feature is not supported on this device or driver.
    ACL_ERROR_RT_FEATURE_NOT_SUPPORT: aclError = 207000;
    /// Out of device memory.
    ACL_ERROR_RT_MEMORY_ALLOCATION: aclError = 207001;
    /// No device.
    ACL_ERROR_RT_NO_DEVICE: aclError = 207004;
}

/// The name of an `aclError` the library handles (`"ACL_ERROR_RT_NO_DEVICE"`), or
/// `"unknown ACL error"` for any other code: log lines print the number beside it.
pub fn error_name(code: aclError) -> &'static str {
    Constant::name_of(CONSTANTS, "aclError", code.into()).unwrap_or("unknown ACL error")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_names() {
        assert_eq!(error_name(ACL_SUCCESS), "ACL_SUCCESS");
        assert_eq!(error_name(ACL_ERROR_RT_NO_DEVICE), "ACL_ERROR_RT_NO_DEVICE");
        assert_eq!(error_name(107019), "ACL_ERROR_RT_WAIT_TIMEOUT");
        assert_eq!(error_name(-1), "unknown ACL error");
        // An enumerator of the same value is not an error code.
        assert_eq!(error_name(4), "unknown ACL error");
    }

    #[test]
    fn default_structs_are_zero() {
        let prop = aclrtPhysicalMemProp::default();
        assert_eq!(
            (
                prop.handleType,
                prop.allocationType,
                prop.memAttr,
                prop.reserve
            ),
            (0, 0, 0, 0)
        );
        assert_eq!(prop.location, aclrtMemLocation { id: 0, type_: 0 });
    }
}
