//! The part of UCX's UCP 1.13 C API the UCX transport calls, declared here and loaded from
//! `libucp.so.0` at run time, so the library builds without UCX's headers and runs without UCX
//! until a job needs it. The structs mirror `ucp/api/ucp.h` only as far as the fields this
//! transport sets; each is padded to the header's size, so UCP never reads past one, and the
//! field masks say which fields UCP may read. The tests below pin the sizes and offsets taken
//! from the header.
//!
//! This module only declares and loads; every call and its `// SAFETY:` reasoning is in the
//! transport (`super`).

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

/// The file loaded: UCP's soname on Linux distributions.
pub const LIBRARY: &str = "libucp.so.0";

/// `ucs_status_t`: 0 is `UCS_OK`, 1 `UCS_INPROGRESS`, negative values are errors.
pub type Status = i32;
/// `UCS_OK`.
pub const UCS_OK: Status = 0;
/// `UCS_INPROGRESS`.
pub const UCS_INPROGRESS: Status = 1;
/// `UCS_ERR_LAST`: a status pointer at or above `(void *)UCS_ERR_LAST` is an error.
const UCS_ERR_LAST: isize = -100;

/// `UCS_ERR_UNREACHABLE`.
const UCS_ERR_UNREACHABLE: Status = -6;
/// `UCS_ERR_CONNECTION_RESET`.
const UCS_ERR_CONNECTION_RESET: Status = -25;
/// `UCS_ERR_FIRST_LINK_FAILURE`: from here to `UCS_ERR_LAST_ENDPOINT_FAILURE` (-89) are the
/// link and endpoint failures (`UCS_ERR_ENDPOINT_TIMEOUT` is -80).
const UCS_ERR_FIRST_LINK_FAILURE: Status = -40;
/// `UCS_ERR_LAST_ENDPOINT_FAILURE`.
const UCS_ERR_LAST_ENDPOINT_FAILURE: Status = -89;

/// Whether `status` is `UCS_ERR_UNREACHABLE` (from `ucp_ep_create`: no transport of this
/// worker reaches the peer's address).
pub fn is_unreachable(status: Status) -> bool {
    status == UCS_ERR_UNREACHABLE
}

/// Whether a request's `status` says the peer is gone: the connection was reset, the peer
/// became unreachable, or a link or endpoint failed (timed out).
pub fn is_peer_failure(status: Status) -> bool {
    status == UCS_ERR_UNREACHABLE
        || status == UCS_ERR_CONNECTION_RESET
        || (UCS_ERR_LAST_ENDPOINT_FAILURE..=UCS_ERR_FIRST_LINK_FAILURE).contains(&status)
}

/// `ucs_status_ptr_t`: null (done at once), an error status cast to a pointer, or a request.
pub type StatusPtr = *mut c_void;

/// `UCS_PTR_IS_ERR`.
pub fn ptr_is_err(p: StatusPtr) -> bool {
    (p as usize) >= (UCS_ERR_LAST as usize)
}

/// `UCS_PTR_STATUS` of a pointer [`ptr_is_err`] accepted.
pub fn ptr_status(p: StatusPtr) -> Status {
    p as isize as Status
}

/// The API version asked of `ucp_init_version`: the release whose ABI these declarations copy.
pub const API_MAJOR: c_uint = 1;
/// See [`API_MAJOR`].
pub const API_MINOR: c_uint = 13;

/// `UCP_PARAM_FIELD_FEATURES`.
pub const PARAM_FIELD_FEATURES: u64 = 1 << 0;
/// `UCP_FEATURE_RMA`.
pub const FEATURE_RMA: u64 = 1 << 1;
/// `UCP_FEATURE_AMO32`.
pub const FEATURE_AMO32: u64 = 1 << 2;
/// `UCP_FEATURE_AMO64`.
pub const FEATURE_AMO64: u64 = 1 << 3;
/// `UCP_FEATURE_WAKEUP`: the worker has an event descriptor ([`Api::worker_get_efd`]).
pub const FEATURE_WAKEUP: u64 = 1 << 4;
/// `UCS_ERR_BUSY`: what `ucp_worker_arm` returns while events are still to be progressed.
pub const UCS_ERR_BUSY: Status = -15;

/// `UCP_WORKER_PARAM_FIELD_THREAD_MODE`.
pub const WORKER_PARAM_FIELD_THREAD_MODE: u64 = 1 << 0;
/// `UCS_THREAD_MODE_MULTI`: any thread may call at any time (granted where UCX was built with
/// `--enable-mt`; otherwise UCX makes a serialized worker).
pub const THREAD_MODE_MULTI: u32 = 2;

/// `UCP_EP_PARAM_FIELD_REMOTE_ADDRESS`.
pub const EP_PARAM_FIELD_REMOTE_ADDRESS: u64 = 1 << 0;
/// `UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE`.
pub const EP_PARAM_FIELD_ERR_HANDLING_MODE: u64 = 1 << 1;
/// `UCP_EP_PARAM_FIELD_ERR_HANDLER`.
pub const EP_PARAM_FIELD_ERR_HANDLER: u64 = 1 << 2;
/// `UCP_ERR_HANDLING_MODE_PEER`: a peer's failure fails that endpoint's requests and calls the
/// endpoint's error handler; without it (`UCP_ERR_HANDLING_MODE_NONE`) UCX treats the failure
/// as fatal and aborts the process.
pub const ERR_HANDLING_MODE_PEER: u32 = 1;
/// `UCP_EP_CLOSE_FLAG_FORCE`.
pub const EP_CLOSE_FLAG_FORCE: u32 = 1 << 0;

/// `UCP_MEM_MAP_PARAM_FIELD_ADDRESS`.
pub const MEM_MAP_PARAM_FIELD_ADDRESS: u64 = 1 << 0;
/// `UCP_MEM_MAP_PARAM_FIELD_LENGTH`.
pub const MEM_MAP_PARAM_FIELD_LENGTH: u64 = 1 << 1;

/// `UCP_OP_ATTR_FIELD_DATATYPE`.
pub const OP_ATTR_FIELD_DATATYPE: u32 = 1 << 3;
/// `UCP_OP_ATTR_FIELD_FLAGS`.
pub const OP_ATTR_FIELD_FLAGS: u32 = 1 << 4;
/// `UCP_OP_ATTR_FIELD_REPLY_BUFFER`.
pub const OP_ATTR_FIELD_REPLY_BUFFER: u32 = 1 << 5;
/// `UCP_OP_ATTR_FIELD_MEMH`: the local buffer lies in [`RequestParam::memh`]'s registration.
pub const OP_ATTR_FIELD_MEMH: u32 = 1 << 8;

/// `ucp_atomic_op_t` (AND, OR and XOR, 3 to 5, are not used: see the transport's `amo`).
pub const ATOMIC_OP_ADD: u32 = 0;
/// See [`ATOMIC_OP_ADD`].
pub const ATOMIC_OP_SWAP: u32 = 1;
/// See [`ATOMIC_OP_ADD`].
pub const ATOMIC_OP_CSWAP: u32 = 2;

/// `ucp_dt_make_contig(size)`: a contiguous datatype of `size`-byte elements.
pub fn dt_contig(size: usize) -> u64 {
    (size as u64) << 3
}

/// `ucp_params_t` (80 bytes): only the mask and the features are set.
#[repr(C)]
pub struct Params {
    /// Which fields are valid.
    pub field_mask: u64,
    /// `UCP_FEATURE_*` bits.
    pub features: u64,
    _rest: [u8; 64],
}

/// `ucp_worker_params_t` (200 bytes): only the mask and the thread mode are set.
#[repr(C)]
pub struct WorkerParams {
    /// Which fields are valid.
    pub field_mask: u64,
    /// `ucs_thread_mode_t`.
    pub thread_mode: u32,
    _rest: [u8; 188],
}

/// `ucp_err_handler_cb_t`: called by UCP, from the worker's progress, when an endpoint fails;
/// `arg` is the handler's `arg`.
pub type ErrHandlerCb = unsafe extern "C" fn(arg: *mut c_void, ep: Handle, status: Status);

/// `ucp_ep_params_t` (104 bytes): the mask, the peer's worker address, the error handling mode
/// and the error handler.
#[repr(C)]
pub struct EpParams {
    /// Which fields are valid.
    pub field_mask: u64,
    /// The peer's worker address (`const ucp_address_t *`).
    pub address: *const c_void,
    /// `ucp_err_handling_mode_t`.
    pub err_mode: u32,
    _pad: u32,
    /// `ucp_err_handler_t`'s callback.
    pub err_handler_cb: Option<ErrHandlerCb>,
    /// `ucp_err_handler_t`'s argument.
    pub err_handler_arg: *mut c_void,
    _rest: [u8; 64],
}

/// `ucp_mem_map_params_t` (40 bytes): the mask, the address and the length.
#[repr(C)]
pub struct MemMapParams {
    /// Which fields are valid.
    pub field_mask: u64,
    /// The memory to register (it exists: UCP allocates nothing).
    pub address: *mut c_void,
    /// Its length in bytes.
    pub length: usize,
    _rest: [u8; 16],
}

/// `ucp_request_param_t` (72 bytes): the mask, the flags, the datatype, the reply buffer and
/// the local buffer's memory handle.
#[repr(C)]
pub struct RequestParam {
    /// `UCP_OP_ATTR_FIELD_*` bits: which fields are valid.
    pub op_attr_mask: u32,
    /// Operation flags (`ucp_ep_close_nbx`'s `UCP_EP_CLOSE_FLAG_*`).
    pub flags: u32,
    _request: *mut c_void,
    _cb: *mut c_void,
    /// `ucp_datatype_t`.
    pub datatype: u64,
    _user_data: *mut c_void,
    /// An atomic's result (and CSWAP's compare value on input).
    pub reply_buffer: *mut c_void,
    _memory_type: u32,
    _recv_info: *mut c_void,
    /// The `ucp_mem_h` of a registration holding the operation's local buffer.
    pub memh: Handle,
}

macro_rules! zeroed_params {
    ($($t:ty),*) => {$(
        impl $t {
            /// Every field zero: nothing valid until the mask says so.
            pub fn zeroed() -> Self {
                // SAFETY: a plain C struct of integers, pointers and bytes: all zeros is valid
                // (null pointers, empty masks).
                unsafe { std::mem::zeroed() }
            }
        }
    )*};
}
zeroed_params!(Params, WorkerParams, EpParams, MemMapParams, RequestParam);

/// An opaque UCP handle (`ucp_context_h`, `ucp_worker_h`, `ucp_ep_h`, `ucp_mem_h`, `ucp_rkey_h`,
/// `ucp_config_t *`, `ucp_address_t *`).
pub type Handle = *mut c_void;

/// UCP's entry points, taken from the loaded library.
#[allow(missing_docs)]
pub struct Api {
    pub config_read: unsafe extern "C" fn(*const c_char, *const c_char, *mut Handle) -> Status,
    pub config_release: unsafe extern "C" fn(Handle),
    pub config_modify: unsafe extern "C" fn(Handle, *const c_char, *const c_char) -> Status,
    pub init_version:
        unsafe extern "C" fn(c_uint, c_uint, *const Params, Handle, *mut Handle) -> Status,
    pub cleanup: unsafe extern "C" fn(Handle),
    pub worker_create: unsafe extern "C" fn(Handle, *const WorkerParams, *mut Handle) -> Status,
    pub worker_destroy: unsafe extern "C" fn(Handle),
    pub worker_get_address: unsafe extern "C" fn(Handle, *mut Handle, *mut usize) -> Status,
    pub worker_release_address: unsafe extern "C" fn(Handle, Handle),
    pub ep_create: unsafe extern "C" fn(Handle, *const EpParams, *mut Handle) -> Status,
    pub ep_close_nbx: unsafe extern "C" fn(Handle, *const RequestParam) -> StatusPtr,
    pub ep_flush_nbx: unsafe extern "C" fn(Handle, *const RequestParam) -> StatusPtr,
    pub mem_map: unsafe extern "C" fn(Handle, *const MemMapParams, *mut Handle) -> Status,
    pub mem_unmap: unsafe extern "C" fn(Handle, Handle) -> Status,
    pub rkey_pack: unsafe extern "C" fn(Handle, Handle, *mut *mut c_void, *mut usize) -> Status,
    pub rkey_buffer_release: unsafe extern "C" fn(*mut c_void),
    pub ep_rkey_unpack: unsafe extern "C" fn(Handle, *const c_void, *mut Handle) -> Status,
    pub rkey_destroy: unsafe extern "C" fn(Handle),
    pub put_nbx: unsafe extern "C" fn(
        Handle,
        *const c_void,
        usize,
        u64,
        Handle,
        *const RequestParam,
    ) -> StatusPtr,
    pub get_nbx: unsafe extern "C" fn(
        Handle,
        *mut c_void,
        usize,
        u64,
        Handle,
        *const RequestParam,
    ) -> StatusPtr,
    pub atomic_op_nbx: unsafe extern "C" fn(
        Handle,
        u32,
        *const c_void,
        usize,
        u64,
        Handle,
        *const RequestParam,
    ) -> StatusPtr,
    pub worker_fence: unsafe extern "C" fn(Handle) -> Status,
    pub worker_flush_nbx: unsafe extern "C" fn(Handle, *const RequestParam) -> StatusPtr,
    pub worker_progress: unsafe extern "C" fn(Handle) -> c_uint,
    pub worker_get_efd: unsafe extern "C" fn(Handle, *mut c_int) -> Status,
    pub worker_arm: unsafe extern "C" fn(Handle) -> Status,
    pub request_check_status: unsafe extern "C" fn(*mut c_void) -> Status,
    pub request_free: unsafe extern "C" fn(*mut c_void),
    pub status_string: unsafe extern "C" fn(Status) -> *const c_char,
    /// `ucs_log_push_handler`, where UCS has one (UCX 1.9 and later).
    pub log_push_handler: Option<unsafe extern "C" fn(LogFunc)>,
}

/// `ucs_log_level_t`: `UCS_LOG_LEVEL_FATAL`.
pub const LOG_LEVEL_FATAL: c_int = 0;
/// `UCS_LOG_LEVEL_WARN` (`UCS_LOG_LEVEL_ERROR` is 1; levels above WARN are UCX's
/// diagnostics, info, debug and trace).
pub const LOG_LEVEL_WARN: c_int = 2;
/// `UCS_LOG_FUNC_RC_STOP`: the line was handled, UCS's own handler does not print it.
pub const LOG_FUNC_RC_STOP: c_int = 0;
/// `UCS_LOG_FUNC_RC_CONTINUE`.
pub const LOG_FUNC_RC_CONTINUE: c_int = 1;

/// `ucs_log_func_t`: file, line, function, `ucs_log_level_t`, the component's configuration,
/// the printf format and its `va_list`. On x86-64 and aarch64 Linux a `va_list` parameter is
/// passed as a pointer (x86-64: the array decays; aarch64: the 32-byte struct is passed by
/// reference), so it is declared as one and handed on to `vsnprintf` as it came.
pub type LogFunc = unsafe extern "C" fn(
    *const c_char,
    c_uint,
    *const c_char,
    c_int,
    *const c_void,
    *const c_char,
    *mut c_void,
) -> c_int;

extern "C" {
    /// libc's `vsnprintf`, its `va_list` passed as [`LogFunc`] received it.
    pub fn vsnprintf(buf: *mut c_char, n: usize, format: *const c_char, ap: *mut c_void) -> c_int;
}

impl Api {
    /// UCX's words for `status`.
    pub fn describe(&self, status: Status) -> String {
        // SAFETY: ucs_status_string returns a static NUL-terminated string for any status.
        let s = unsafe { (self.status_string)(status) };
        if s.is_null() {
            return format!("status {status}");
        }
        // SAFETY: non-null, static and NUL-terminated (above).
        unsafe { std::ffi::CStr::from_ptr(s) }
            .to_string_lossy()
            .into_owned()
    }
}

/// Why UCP could not be loaded: the file and the loader's (or the missing symbol's) reason.
#[derive(Debug, Clone)]
pub struct NotLoaded {
    /// The file asked for.
    pub library: String,
    /// dlerror's reason.
    pub why: String,
}

/// The API from `libucp.so.0`, loaded once per process (and never unloaded: UCX keeps threads
/// and memory hooks that must outlive any transport).
pub fn api() -> Result<&'static Api, NotLoaded> {
    static API: OnceLock<Result<Api, NotLoaded>> = OnceLock::new();
    API.get_or_init(|| load(LIBRARY))
        .as_ref()
        .map_err(Clone::clone)
}

/// Loads the API from `name`.
pub fn load(name: &str) -> Result<Api, NotLoaded> {
    let not_loaded = |why: String| NotLoaded {
        library: name.to_string(),
        why,
    };
    // RTLD_GLOBAL: the transport modules UCX opens itself (libuct_*.so) resolve UCX's symbols.
    let flags = libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL;
    // SAFETY: loading runs UCX's initialisers, which set up UCX's own globals only. The library
    // is leaked below, so the function pointers taken from it stay valid for the process's life.
    let lib = unsafe { libloading::os::unix::Library::open(Some(name), flags) }
        .map_err(|e| not_loaded(e.to_string()))?;
    let lib: &'static libloading::os::unix::Library = Box::leak(Box::new(lib));
    macro_rules! symbol {
        ($name:literal) => {
            // SAFETY: the symbol is UCP's C function of that name; its signature is the one
            // `ucp/api/ucp.h` of UCX 1.13 declares (the type of the field it is stored in).
            *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| not_loaded(format!("{}: {e}", $name)))?
        };
    }
    Ok(Api {
        config_read: symbol!("ucp_config_read"),
        config_release: symbol!("ucp_config_release"),
        config_modify: symbol!("ucp_config_modify"),
        init_version: symbol!("ucp_init_version"),
        cleanup: symbol!("ucp_cleanup"),
        worker_create: symbol!("ucp_worker_create"),
        worker_destroy: symbol!("ucp_worker_destroy"),
        worker_get_address: symbol!("ucp_worker_get_address"),
        worker_release_address: symbol!("ucp_worker_release_address"),
        ep_create: symbol!("ucp_ep_create"),
        ep_close_nbx: symbol!("ucp_ep_close_nbx"),
        ep_flush_nbx: symbol!("ucp_ep_flush_nbx"),
        mem_map: symbol!("ucp_mem_map"),
        mem_unmap: symbol!("ucp_mem_unmap"),
        rkey_pack: symbol!("ucp_rkey_pack"),
        rkey_buffer_release: symbol!("ucp_rkey_buffer_release"),
        ep_rkey_unpack: symbol!("ucp_ep_rkey_unpack"),
        rkey_destroy: symbol!("ucp_rkey_destroy"),
        put_nbx: symbol!("ucp_put_nbx"),
        get_nbx: symbol!("ucp_get_nbx"),
        atomic_op_nbx: symbol!("ucp_atomic_op_nbx"),
        worker_fence: symbol!("ucp_worker_fence"),
        worker_flush_nbx: symbol!("ucp_worker_flush_nbx"),
        worker_progress: symbol!("ucp_worker_progress"),
        worker_get_efd: symbol!("ucp_worker_get_efd"),
        worker_arm: symbol!("ucp_worker_arm"),
        request_check_status: symbol!("ucp_request_check_status"),
        request_free: symbol!("ucp_request_free"),
        status_string: symbol!("ucs_status_string"),
        // SAFETY: as `symbol!`: UCS's function of that name, `void (ucs_log_func_t)`.
        log_push_handler: unsafe { lib.get(b"ucs_log_push_handler\0") }
            .ok()
            .map(|f| *f),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// Sizes and offsets as `ucp/api/ucp.h` of UCX 1.13 lays the structs out on x86-64 and
    /// aarch64 Linux (LP64).
    #[test]
    fn layouts_match_the_ucp_header() {
        assert_eq!(size_of::<Params>(), 80);
        assert_eq!(offset_of!(Params, features), 8);
        assert_eq!(size_of::<WorkerParams>(), 200);
        assert_eq!(offset_of!(WorkerParams, thread_mode), 8);
        assert_eq!(size_of::<EpParams>(), 104);
        assert_eq!(offset_of!(EpParams, address), 8);
        assert_eq!(offset_of!(EpParams, err_mode), 16);
        assert_eq!(offset_of!(EpParams, err_handler_cb), 24);
        assert_eq!(offset_of!(EpParams, err_handler_arg), 32);
        assert_eq!(size_of::<MemMapParams>(), 40);
        assert_eq!(offset_of!(MemMapParams, address), 8);
        assert_eq!(offset_of!(MemMapParams, length), 16);
        assert_eq!(size_of::<RequestParam>(), 72);
        assert_eq!(offset_of!(RequestParam, flags), 4);
        assert_eq!(offset_of!(RequestParam, datatype), 24);
        assert_eq!(offset_of!(RequestParam, reply_buffer), 40);
        assert_eq!(offset_of!(RequestParam, memh), 64);
        assert_eq!(dt_contig(8), 64);
    }

    #[test]
    fn peer_failures_are_recognised() {
        // UCS_ERR_CONNECTION_RESET, UCS_ERR_ENDPOINT_TIMEOUT, UCS_ERR_UNREACHABLE.
        assert!(is_peer_failure(-25) && is_peer_failure(-80) && is_peer_failure(-6));
        // UCS_ERR_NO_MEMORY, UCS_ERR_INVALID_PARAM, UCS_ERR_TIMED_OUT, UCS_OK.
        assert!(!is_peer_failure(-4) && !is_peer_failure(-5) && !is_peer_failure(-20));
        assert!(!is_peer_failure(UCS_OK));
    }

    #[test]
    fn status_pointers_decode() {
        assert!(!ptr_is_err(std::ptr::null_mut()));
        let err = -3isize as StatusPtr;
        assert!(ptr_is_err(err));
        assert_eq!(ptr_status(err), -3);
        let request = 0x7f00_0000_1000usize as StatusPtr;
        assert!(!ptr_is_err(request));
    }

    #[test]
    fn a_missing_library_says_which_and_why() {
        let Err(e) = load("libshmem-test-absent-ucp.so.0") else {
            panic!("an absent library loaded");
        };
        assert_eq!(e.library, "libshmem-test-absent-ucp.so.0");
        assert!(e.why.contains("libshmem-test-absent-ucp.so.0"), "{}", e.why);
    }
}
