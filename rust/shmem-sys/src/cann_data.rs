//! CANN SHMEM's host data plane of `<aclshmem.h>`: symmetric memory, byte and typed RMA with
//! CANN's int32 signals, int team handles, barriers, waits and tests, logging and the routines
//! that need an NPU (they answer `ACLSHMEM_NOT_SUPPORTED`). Each is a thin form of an OpenSHMEM
//! routine of the same library; only declarations live here.

use core::ffi::{c_char, c_int, c_void};

/// CANN's element types of the host's typed families, `name: RustType` for each, as
/// `<shmem/cann_types.h>` lists them (device/include/shmem/cann_types.h, the one table the C
/// headers expand): `rma` is its `ACLSHMEMI_HOST_TYPES` (typed put/get, `_p`, `_g`), `p2p` its
/// `ACLSHMEMI_P2P_TYPES` (waits and tests). `cann_types!(rma => m! { args })` expands to
/// `m! { args float: f32, double: f64, int8: i8, ..., char: c_char, }`; `c_char` is
/// `core::ffi::c_char`, which the expansion's place must have in scope. The crate's tests
/// check both lists against the header, name by name and type by type.
#[macro_export]
macro_rules! cann_types {
    (rma => $then:ident! { $($args:tt)* }) => {
        $crate::cann_types! { @ints $then! { $($args)* float: f32, double: f64, } { char: c_char, } }
    };
    (p2p => $then:ident! { $($args:tt)* }) => {
        $crate::cann_types! { @ints $then! { $($args)* float: f32, } { char: c_char, } }
    };
    (@ints $then:ident! { $($before:tt)* } { $($after:tt)* }) => {
        $then! { $($before)*
            int8: i8, int16: i16, int32: i32, int64: i64,
            uint8: u8, uint16: u16, uint32: u32, uint64: u64,
            $($after)*
        }
    };
}

/// A list of `name: RustType` as data.
macro_rules! type_table {
    ($($name:ident: $t:ty,)*) => {
        &[$((stringify!($name), stringify!($t)),)*]
    };
}

/// [`cann_types!`]`(rma => ..)` as data: (type name, Rust type), in the header's order.
pub const CANN_RMA_TYPES: &[(&str, &str)] = cann_types!(rma => type_table! {});
/// [`cann_types!`]`(p2p => ..)` as data: (type name, Rust type), in the header's order.
pub const CANN_P2P_TYPES: &[(&str, &str)] = cann_types!(p2p => type_table! {});

/// A CANN team handle: `ACLSHMEM_TEAM_WORLD` (0), a split's new handle, or
/// `ACLSHMEM_TEAM_INVALID` (-1).
pub type aclshmem_team_t = c_int;
/// Every PE of the job.
pub const ACLSHMEM_TEAM_WORLD: aclshmem_team_t = 0;
/// No team: what a split gives the PEs left out.
pub const ACLSHMEM_TEAM_INVALID: aclshmem_team_t = -1;

/// CANN's put-with-signal operation: set the int32 signal.
pub const ACLSHMEM_SIGNAL_SET: c_int = 0;
/// CANN's put-with-signal operation: add to the int32 signal.
pub const ACLSHMEM_SIGNAL_ADD: c_int = 1;
/// CANN's comparisons (not OpenSHMEM's values): equal.
pub const ACLSHMEM_CMP_EQ: c_int = 0;
/// Not equal.
pub const ACLSHMEM_CMP_NE: c_int = 1;
/// Greater than.
pub const ACLSHMEM_CMP_GT: c_int = 2;
/// Greater than or equal.
pub const ACLSHMEM_CMP_GE: c_int = 3;
/// Less than.
pub const ACLSHMEM_CMP_LT: c_int = 4;
/// Less than or equal.
pub const ACLSHMEM_CMP_LE: c_int = 5;
/// `aclshmemx_init_status` result of a state that is none of the others.
pub const ACLSHMEM_STATUS_INVALID: c_int = c_int::MAX;

/// A team's configuration as CANN lays it out (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct aclshmem_team_config_t {
    /// 0.
    pub version: i32,
    /// The OpenSHMEM team's `num_contexts`.
    pub num_contexts: i32,
    /// The team's handle.
    pub uniqueid: u64,
    /// Reserved.
    pub padding: [c_char; 48],
}

impl Default for aclshmem_team_config_t {
    fn default() -> Self {
        Self {
            version: 0,
            num_contexts: 0,
            uniqueid: 0,
            padding: [0; 48],
        }
    }
}

declare! {
    DATA_SYMBOLS;
    /// `size` symmetric bytes (collective); null for 0, before start-up or when full.
    fn aclshmem_malloc(size: usize) -> *mut c_void;
    /// `nmemb * size` zeroed symmetric bytes (collective).
    fn aclshmem_calloc(nmemb: usize, size: usize) -> *mut c_void;
    /// `size` symmetric bytes aligned to `alignment`, a power of two (collective).
    fn aclshmem_align(alignment: usize, size: usize) -> *mut c_void;
    /// Frees a symmetric block (collective); null does nothing.
    fn aclshmem_free(ptr: *mut c_void);
    /// Where this process may load and store `ptr` of `pe`, or null.
    fn aclshmem_ptr(ptr: *mut c_void, pe: c_int) -> *mut c_void;

    /// Copies `elem_size` bytes from local `src` to symmetric `dst` on `pe`.
    fn aclshmem_putmem(dst: *mut c_void, src: *mut c_void, elem_size: usize, pe: i32);
    /// Copies `elem_size` bytes from symmetric `src` on `pe` to local `dst`.
    fn aclshmem_getmem(dst: *mut c_void, src: *mut c_void, elem_size: usize, pe: i32);
    /// Non-blocking `aclshmem_putmem`: complete after a quiet.
    fn aclshmem_putmem_nbi(dst: *mut c_void, src: *mut c_void, elem_size: usize, pe: i32);
    /// Non-blocking `aclshmem_getmem`: complete after a quiet.
    fn aclshmem_getmem_nbi(dst: *mut c_void, src: *mut c_void, elem_size: usize, pe: i32);
    /// Puts `elem_size` bytes, then updates the int32 signal at `sig_addr` on `pe` by
    /// `sig_op` (`ACLSHMEM_SIGNAL_SET` or `_ADD`).
    fn aclshmemx_putmem_signal(dst: *mut c_void, src: *mut c_void, elem_size: usize, sig_addr: *mut c_void, signal: i32, sig_op: c_int, pe: c_int);
    /// Non-blocking `aclshmemx_putmem_signal`.
    fn aclshmemx_putmem_signal_nbi(dst: *mut c_void, src: *mut c_void, elem_size: usize, sig_addr: *mut c_void, signal: i32, sig_op: c_int, pe: c_int);
    /// Waits until this PE's int32 signal compares true (`ACLSHMEM_CMP_*`) with `cmp_val`.
    fn aclshmem_signal_wait_until(sig_addr: *mut i32, cmp: c_int, cmp_val: i32);
    /// Sets the NPU's unified-buffer staging area: `ACLSHMEM_NOT_SUPPORTED` here.
    fn aclshmemx_set_mte_config(offset: u64, ub_size: u32, event_id: u32) -> c_int;

    /// Collective over `parent_team`: its PEs `pe_start`, `pe_start + pe_stride`, ...
    fn aclshmem_team_split_strided(parent_team: aclshmem_team_t, pe_start: c_int, pe_stride: c_int, pe_size: c_int, new_team: *mut aclshmem_team_t) -> c_int;
    /// Collective over `parent_team`: a grid `x_range` PEs wide.
    fn aclshmem_team_split_2d(parent_team: aclshmem_team_t, x_range: c_int, x_team: *mut aclshmem_team_t, y_team: *mut aclshmem_team_t) -> c_int;
    /// The number in `dest_team` of `src_pe` of `src_team`, or -1.
    fn aclshmem_team_translate_pe(src_team: aclshmem_team_t, src_pe: c_int, dest_team: aclshmem_team_t) -> c_int;
    /// Ends a team made by a split (collective over it).
    fn aclshmem_team_destroy(team: aclshmem_team_t);
    /// This PE's number in `team`, or -1.
    fn aclshmem_team_my_pe(team: aclshmem_team_t) -> c_int;
    /// The team's size, or -1.
    fn aclshmem_team_n_pes(team: aclshmem_team_t) -> c_int;
    /// Fills `*config`; 0 or `ACLSHMEM_INVALID_PARAM`.
    fn aclshmem_team_get_config(team: aclshmem_team_t, config: *mut aclshmem_team_config_t) -> c_int;
    /// Quiet, then waits for every PE of `team`.
    fn aclshmem_barrier(team: aclshmem_team_t);
    /// Quiet, then waits for every PE.
    fn aclshmem_barrier_all();
    /// Waits for every PE of `team` without completing puts.
    fn aclshmem_sync(team: aclshmem_team_t);
    /// Waits for every PE without completing puts.
    fn aclshmem_sync_all();

    /// Hands the library's log lines to `func` (null: stderr again).
    fn aclshmemx_set_extern_logger(func: Option<unsafe extern "C" fn(level: c_int, msg: *const c_char)>) -> i32;
    /// Shows log lines of `level` (0 debug .. 4 fatal) and above.
    fn aclshmemx_set_log_level(level: c_int) -> i32;
}

/// Declares CANN's typed RMA of one type: `aclshmem_put_<T>_mem`, its `_nbi`, the gets,
/// `_p` and `_g`, and `$list()`, their signatures.
macro_rules! cann_rma {
    ($list:ident; $($name:ident: $t:ty,)*) => {
        /// CANN's typed RMA and single-element routines, one module per type name.
        pub mod rma {
            #[allow(unused_imports)]
            use core::ffi::{c_char, c_int};
            $(
                #[doc = concat!("CANN's routines on `", stringify!($t), "`.")]
                pub mod $name {
                    #[allow(unused_imports)]
                    use super::*;
                    linked! { SIGNATURES;
                        /// Copies `nelems` elements from local `source` to symmetric `dest` on `pe`.
                        fn put = concat!("aclshmem_put_", stringify!($name), "_mem");
                            (dest: *mut $t, source: *mut $t, nelems: usize, pe: c_int);
                        /// Copies `nelems` elements from symmetric `source` on `pe` to `dest`.
                        fn get = concat!("aclshmem_get_", stringify!($name), "_mem");
                            (dest: *mut $t, source: *mut $t, nelems: usize, pe: c_int);
                        /// Non-blocking `put`.
                        fn put_nbi = concat!("aclshmem_put_", stringify!($name), "_mem_nbi");
                            (dest: *mut $t, source: *mut $t, nelems: usize, pe: c_int);
                        /// Non-blocking `get`.
                        fn get_nbi = concat!("aclshmem_get_", stringify!($name), "_mem_nbi");
                            (dest: *mut $t, source: *mut $t, nelems: usize, pe: c_int);
                        /// Writes one element to `dst` on `pe`.
                        fn p = concat!("aclshmem_", stringify!($name), "_p");
                            (dst: *mut $t, value: $t, pe: c_int);
                        /// Reads one element of `src` on `pe`.
                        fn g = concat!("aclshmem_", stringify!($name), "_g");
                            (src: *mut $t, pe: i32) -> $t;
                    }
                }
            )*
        }
        pub(crate) fn $list() -> Vec<sys_decl::Signature> {
            [$(rma::$name::SIGNATURES),*].concat()
        }
    };
}

cann_types!(rma => cann_rma! { rma_signatures; });

/// Declares CANN's wait and test of one type on this PE's variable, and `$list()`, their
/// signatures.
macro_rules! cann_p2p {
    ($list:ident; $($name:ident: $t:ty,)*) => {
        /// CANN's point-to-point waits and tests (`ACLSHMEM_CMP_*` comparisons), one module
        /// per type name.
        pub mod p2p {
            #[allow(unused_imports)]
            use core::ffi::{c_char, c_int};
            $(
                #[doc = concat!("CANN's waits and tests on `", stringify!($t), "`.")]
                pub mod $name {
                    #[allow(unused_imports)]
                    use super::*;
                    linked! { SIGNATURES;
                        /// Waits until `*ivar` compares true with `cmp_value`.
                        fn wait_until = concat!("aclshmem_", stringify!($name), "_wait_until");
                            (ivar: *mut $t, cmp: c_int, cmp_value: $t);
                        /// Writes 1 to `*res_out` when `*ivar` compares true, else 0.
                        fn test = concat!("aclshmem_", stringify!($name), "_test");
                            (ivar: *mut $t, cmp: c_int, cmp_value: $t, res_out: *mut c_int);
                    }
                }
            )*
        }
        pub(crate) fn $list() -> Vec<sys_decl::Signature> {
            [$(p2p::$name::SIGNATURES),*].concat()
        }
    };
}

cann_types!(p2p => cann_p2p! { p2p_signatures; });
