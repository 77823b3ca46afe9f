//! The CANN SHMEM start-up API of `<aclshmem.h>`: attributes, unique ids, and the routines
//! that start a job from them. The structs are laid out as CANN lays them out (LP64); the
//! crate's tests check every size and offset against the numbers `tests/abi/layout.c` checks
//! the C header against.

use core::ffi::{c_char, c_int, c_void};

/// `ACLSHMEM_MAX_IP_PORT_LEN`: bytes of `ip_port`, NUL included.
pub const ACLSHMEM_MAX_IP_PORT_LEN: usize = 64;
/// `ACLSHMEM_UNIQUE_ID_INNER_LEN`: bytes of a unique id's opaque part.
pub const ACLSHMEM_UNIQUE_ID_INNER_LEN: usize = 124;
/// `ACLSHMEM_DEFAULT_TIMEOUT`: seconds of every timeout until set otherwise.
pub const ACLSHMEM_DEFAULT_TIMEOUT: u32 = 120;

/// Return code: success.
pub const ACLSHMEM_SUCCESS: c_int = 0;
/// Return code: an argument is wrong.
pub const ACLSHMEM_INVALID_PARAM: c_int = -1;
/// Return code: a value out of its range.
pub const ACLSHMEM_INVALID_VALUE: c_int = -2;
/// Return code: CANN's memory layer (not returned by this library).
pub const ACLSHMEM_SMEM_ERROR: c_int = -3;
/// Return code: a system call failed, or the library's state forbids the call.
pub const ACLSHMEM_INNER_ERROR: c_int = -4;
/// Return code: the library is not initialised.
pub const ACLSHMEM_NOT_INITED: c_int = -5;
/// Return code: the PEs could not meet or talk through the store.
pub const ACLSHMEM_BOOTSTRAP_ERROR: c_int = -6;
/// Return code: a start-up or control step ran out of time.
pub const ACLSHMEM_TIMEOUT_ERROR: c_int = -7;
/// Return code: the symmetric heap could not be made.
pub const ACLSHMEM_MALLOC_FAILED: c_int = -8;
/// Return code: the routine or option needs what this build lacks.
pub const ACLSHMEM_NOT_SUPPORTED: c_int = -100;

/// `aclshmemx_bootstrap_t`: how `aclshmemx_init_attr` finds the other PEs.
pub type aclshmemx_bootstrap_t = c_int;
/// The store address in `ip_port`, else the unique id in `comm_args`.
pub const ACLSHMEMX_INIT_WITH_DEFAULT: aclshmemx_bootstrap_t = 1 << 0;
/// Through MPI (not supported: `ACLSHMEM_NOT_SUPPORTED`).
pub const ACLSHMEMX_INIT_WITH_MPI: aclshmemx_bootstrap_t = 1 << 1;
/// The unique id in `comm_args`.
pub const ACLSHMEMX_INIT_WITH_UNIQUEID: aclshmemx_bootstrap_t = 1 << 3;

/// `aclshmemx_init_status` result: not initialised.
pub const ACLSHMEM_STATUS_NOT_INITIALIZED: c_int = 0;
/// `aclshmemx_init_status` result: the heap exists, start-up not finished.
pub const ACLSHMEM_STATUS_SHM_CREATED: c_int = 1;
/// `aclshmemx_init_status` result: initialised.
pub const ACLSHMEM_STATUS_IS_INITIALIZED: c_int = 2;

/// `data_op_engine_type_t`: the data engine of a job (an `int`-sized enum in C).
pub type data_op_engine_type_t = c_int;
/// The engine this library uses (the host CPU plays MTE's part).
pub const ACLSHMEM_DATA_OP_MTE: data_op_engine_type_t = 0x01;
/// SDMA (not supported).
pub const ACLSHMEM_DATA_OP_SDMA: data_op_engine_type_t = 0x02;
/// RoCE (not supported).
pub const ACLSHMEM_DATA_OP_ROCE: data_op_engine_type_t = 0x04;
/// UDMA (not supported).
pub const ACLSHMEM_DATA_OP_UDMA: data_op_engine_type_t = 0x08;

/// Optional attributes (24 bytes): timeouts in seconds, 1 or more.
#[allow(non_snake_case)] // `sockFd` is CANN's field name, kept for code ported from its headers.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct aclshmem_init_optional_attr_t {
    /// [`ACLSHMEM_OPTIONAL_ATTR_VERSION`].
    pub version: c_int,
    /// The data engine.
    pub data_op_engine_type: data_op_engine_type_t,
    /// Bound on joining the job.
    pub shm_init_timeout: u32,
    /// Bound on making and exchanging the heap.
    pub shm_create_timeout: u32,
    /// Bound on the control steps of a running job.
    pub control_operation_timeout: u32,
    /// Not used.
    pub sockFd: i32,
}

/// `ACLSHMEM_OPTIONAL_ATTR_VERSION`: (1 << 16) + the struct's size.
pub const ACLSHMEM_OPTIONAL_ATTR_VERSION: c_int =
    (1 << 16) + core::mem::size_of::<aclshmem_init_optional_attr_t>() as c_int;

impl Default for aclshmem_init_optional_attr_t {
    /// CANN's C++ defaults: this version, engine MTE, every timeout
    /// [`ACLSHMEM_DEFAULT_TIMEOUT`].
    fn default() -> Self {
        Self {
            version: ACLSHMEM_OPTIONAL_ATTR_VERSION,
            data_op_engine_type: ACLSHMEM_DATA_OP_MTE,
            shm_init_timeout: ACLSHMEM_DEFAULT_TIMEOUT,
            shm_create_timeout: ACLSHMEM_DEFAULT_TIMEOUT,
            control_operation_timeout: ACLSHMEM_DEFAULT_TIMEOUT,
            sockFd: 0,
        }
    }
}

/// Attributes of `aclshmemx_init_attr` (120 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct aclshmemx_init_attr_t {
    /// This PE.
    pub my_pe: c_int,
    /// PEs in the job.
    pub n_pes: c_int,
    /// `tcp://ip:port` or `tcp6://[ip]:port`, NUL-terminated.
    pub ip_port: [c_char; ACLSHMEM_MAX_IP_PORT_LEN],
    /// Bytes of symmetric heap per PE.
    pub local_mem_size: u64,
    /// Optional attributes.
    pub option_attr: aclshmem_init_optional_attr_t,
    /// The unique id with `ACLSHMEMX_INIT_WITH_UNIQUEID`.
    pub comm_args: *mut c_void,
    /// Part of CANN's layout only; never read.
    pub instance_id: u64,
}

impl Default for aclshmemx_init_attr_t {
    /// CANN's C++ member defaults: zeros, default optional attributes, no unique id.
    fn default() -> Self {
        Self {
            my_pe: 0,
            n_pes: 0,
            ip_port: [0; ACLSHMEM_MAX_IP_PORT_LEN],
            local_mem_size: 0,
            option_attr: aclshmem_init_optional_attr_t::default(),
            comm_args: core::ptr::null_mut(),
            instance_id: 0,
        }
    }
}

/// Unique id (136 bytes), made by `aclshmemx_get_uniqueid` and handed to every PE as bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct aclshmemx_uniqueid_t {
    /// [`ACLSHMEM_UNIQUEID_VERSION`].
    pub version: i32,
    /// Filled by `aclshmemx_set_attr_uniqueid_args`.
    pub my_pe: c_int,
    /// Filled by `aclshmemx_set_attr_uniqueid_args`.
    pub n_pes: c_int,
    /// Store address, secret and certificate fingerprint (opaque).
    pub internal: [c_char; ACLSHMEM_UNIQUE_ID_INNER_LEN],
}

/// `ACLSHMEM_UNIQUEID_VERSION`: (1 << 16) + the struct's size.
pub const ACLSHMEM_UNIQUEID_VERSION: i32 =
    (1 << 16) + core::mem::size_of::<aclshmemx_uniqueid_t>() as i32;

impl Default for aclshmemx_uniqueid_t {
    /// `ACLSHMEM_UNIQUEID_INITIALIZER`.
    fn default() -> Self {
        Self {
            version: ACLSHMEM_UNIQUEID_VERSION,
            my_pe: 0,
            n_pes: 0,
            internal: [0; ACLSHMEM_UNIQUE_ID_INNER_LEN],
        }
    }
}

/// The older unique id (128 bytes) that `shmem_get_uniqueid` writes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct shmemx_uniqueid_t {
    /// [`SHMEM_UNIQUEID_VERSION`].
    pub version: i32,
    /// Store address, secret and certificate fingerprint (opaque).
    pub internal: [c_char; ACLSHMEM_UNIQUE_ID_INNER_LEN],
}

/// `SHMEM_UNIQUEID_VERSION`: (1 << 16) + the struct's size.
pub const SHMEM_UNIQUEID_VERSION: i32 =
    (1 << 16) + core::mem::size_of::<shmemx_uniqueid_t>() as i32;

declare! {
    SYMBOLS;
    /// Where start-up is (`ACLSHMEM_STATUS_*`).
    fn aclshmemx_init_status() -> c_int;
    /// Fills a library-owned attribute struct and stores its address in `*attributes`.
    fn aclshmemx_set_attr(my_pe: c_int, n_pes: c_int, local_mem_size: u64, ip_port: *const c_char, attributes: *mut *mut aclshmemx_init_attr_t) -> c_int;
    /// Sets the data engine (only `ACLSHMEM_DATA_OP_MTE`).
    fn aclshmemx_set_data_op_engine_type(attributes: *mut aclshmemx_init_attr_t, value: data_op_engine_type_t) -> c_int;
    /// Sets all three timeouts to `value` seconds.
    fn aclshmemx_set_timeout(attributes: *mut aclshmemx_init_attr_t, value: u32) -> c_int;
    /// Makes a unique id for a new job; the caller is its PE 0.
    fn aclshmemx_get_uniqueid(uid: *mut aclshmemx_uniqueid_t) -> c_int;
    /// The same, in the older 128-byte layout.
    fn shmem_get_uniqueid(uid: *mut shmemx_uniqueid_t) -> c_int;
    /// Fills `*attr` for PE `my_pe` of `n_pes`, joining through `uid`.
    fn aclshmemx_set_attr_uniqueid_args(my_pe: c_int, n_pes: c_int, local_mem_size: i64, uid: *mut aclshmemx_uniqueid_t, attr: *mut aclshmemx_init_attr_t) -> c_int;
    /// Starts the library on this PE as `attributes` say (collective).
    fn aclshmemx_init_attr(bootstrap_flags: aclshmemx_bootstrap_t, attributes: *mut aclshmemx_init_attr_t) -> c_int;
    /// Ends the library on this PE (collective).
    fn aclshmem_finalize() -> c_int;
    /// Ends the whole job with `status`; does not return.
    fn aclshmem_global_exit(status: c_int);
    /// CANN's library version.
    fn aclshmem_info_get_version(major: *mut c_int, minor: *mut c_int);
    /// Writes the library name.
    fn aclshmem_info_get_name(name: *mut c_char);
    /// This PE's number.
    fn aclshmem_my_pe() -> c_int;
    /// Number of PEs.
    fn aclshmem_n_pes() -> c_int;
}
