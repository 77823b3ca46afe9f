//! Raw declarations of `libshmem.so`'s public C ABI, for Rust programs and bindings (a Python
//! package, a torch extension) that run on the shmem library.
//!
//! This crate owns only declarations: `extern "C"` functions, the `#[repr(C)]` structs of the
//! CANN start-up API laid out byte for byte as `<aclshmem.h>`, and the constants of
//! `<shmem.h>`. It must never contain or link a runtime of its own: it links the shared
//! library `shmem` (see `build.rs` for how it is found), so a process that loads Python, torch
//! and a Rust extension together still holds one copy of the runtime and one job state.
//!
//! Naming follows the C headers. Routines of one name (`shmem_putmem`, `shmem_barrier_all`)
//! keep it. Typed routines, which C spells `shmem_<TYPE>_<op>` over the specification's type
//! tables, are grouped in [`typed`], one module per type name, with the C name as their link
//! name: `shmem_int_put` is [`typed::int::put`], `shmem_uint64_atomic_fetch_add` is
//! [`typed::uint64::atomic_fetch_add`]. `long double` has no Rust type, so `longdouble` routines are
//! not declared. The handles `SHMEM_TEAM_WORLD`, `SHMEM_TEAM_SHARED` and `SHMEM_CTX_DEFAULT`
//! are macros in C; here they are the functions [`shmem_team_world`], [`shmem_team_shared`]
//! and [`shmem_ctx_default`].
//!
//! Every declaration's Rust types are checked against its prototype in the C headers by the
//! crate's tests (`tests/decls.rs`, over `shmem_decls.txt`, which `extract_decls.py` takes from
//! the headers), and every declared symbol against the library's exports (`tests/abi.rs`).
//!
//! Everything is `unsafe` to call, with the contracts of OpenSHMEM 1.5 and of the comments in
//! the C headers: symmetric addresses where the specification asks for them, `shmem_init` (or
//! `aclshmemx_init_attr`) before any other routine, and so on.

#![allow(non_camel_case_types)]

use core::ffi::{c_char, c_int, c_long, c_void};
use core::marker::{PhantomData, PhantomPinned};

/// The [`Signature`](sys_decl::Signature) of a function declared as `fn $symbol($t, ...) -> $ret`
/// (no `-> $ret`: `()`).
macro_rules! signature {
    ($symbol:expr; ($($t:ty),*) $(-> $ret:ty)?) => {
        sys_decl::Signature {
            symbol: $symbol,
            rust_ret: sys_decl::given_or!("()" $(, stringify!($ret))?),
            rust_params: &[$(stringify!($t)),*],
        }
    };
}

/// Declares C functions under link names, each `fn name = "symbol"; (arg: Type, ...) -> Ret;`
/// (the symbol an expression such as `concat!(..)`), and `$list`, their signatures.
macro_rules! linked {
    ($list:ident; $( $(#[$m:meta])* fn $name:ident = $symbol:expr; ( $($arg:ident : $aty:ty),* $(,)? ) $(-> $ret:ty)? ; )*) => {
        extern "C" {
            $( $(#[$m])* #[link_name = $symbol] pub fn $name($($arg: $aty),*) $(-> $ret)?; )*
        }
        pub(crate) const $list: &[sys_decl::Signature] =
            &[$(signature!($symbol; ($($aty),*) $(-> $ret)?)),*];
    };
}

/// Declares C functions and records their signatures for [`declared_signatures`].
macro_rules! declare {
    ($list:ident; $( $(#[$m:meta])* fn $name:ident ( $($arg:ident : $aty:ty),* $(,)? ) $(-> $ret:ty)? ; )*) => {
        extern "C" {
            $( $(#[$m])* pub fn $name($($arg: $aty),*) $(-> $ret)?; )*
        }
        pub(crate) const $list: &[sys_decl::Signature] =
            &[$(signature!(stringify!($name); ($($aty),*) $(-> $ret)?)),*];
    };
}

// ---- Types ---------------------------------------------------------------------------------

/// The object behind a team handle (opaque).
#[repr(C)]
pub struct shmem_team_s {
    _opaque: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// The object behind a context handle (opaque).
#[repr(C)]
pub struct shmem_ctx_s {
    _opaque: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// A team handle; null is `SHMEM_TEAM_INVALID`.
pub type shmem_team_t = *mut shmem_team_s;
/// A context handle; null is `SHMEM_CTX_INVALID`.
pub type shmem_ctx_t = *mut shmem_ctx_s;

/// Team configuration (OpenSHMEM 1.5 §9.4).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct shmem_team_config_t {
    /// Contexts the team will make (with `SHMEM_TEAM_NUM_CONTEXTS` in the mask).
    pub num_contexts: c_int,
}

// ---- Constants of <shmem/constants.h> ------------------------------------------------------

/// Specification version implemented.
pub const SHMEM_MAJOR_VERSION: c_int = 1;
/// Specification version implemented.
pub const SHMEM_MINOR_VERSION: c_int = 5;
/// Size of the buffer `shmem_info_get_name` fills.
pub const SHMEM_MAX_NAME_LEN: usize = 256;

/// Thread level: one thread.
pub const SHMEM_THREAD_SINGLE: c_int = 0;
/// Thread level: only the main thread calls.
pub const SHMEM_THREAD_FUNNELED: c_int = 1;
/// Thread level: one thread at a time calls.
pub const SHMEM_THREAD_SERIALIZED: c_int = 2;
/// Thread level: any thread, any time.
pub const SHMEM_THREAD_MULTIPLE: c_int = 3;

/// Context option: used by one thread at a time.
pub const SHMEM_CTX_SERIALIZED: c_long = 1 << 0;
/// Context option: used by the thread that made it.
pub const SHMEM_CTX_PRIVATE: c_long = 1 << 1;
/// Context option: no stores (puts) through it.
pub const SHMEM_CTX_NOSTORE: c_long = 1 << 2;

/// Comparison: equal.
pub const SHMEM_CMP_EQ: c_int = 1;
/// Comparison: not equal.
pub const SHMEM_CMP_NE: c_int = 2;
/// Comparison: greater than.
pub const SHMEM_CMP_GT: c_int = 3;
/// Comparison: greater than or equal.
pub const SHMEM_CMP_GE: c_int = 4;
/// Comparison: less than.
pub const SHMEM_CMP_LT: c_int = 5;
/// Comparison: less than or equal.
pub const SHMEM_CMP_LE: c_int = 6;

/// Signal operation: set the signal word.
pub const SHMEM_SIGNAL_SET: c_int = 1;
/// Signal operation: add to the signal word.
pub const SHMEM_SIGNAL_ADD: c_int = 2;

/// Allocation hint: the block is the target of remote atomics.
pub const SHMEM_MALLOC_ATOMICS_REMOTE: c_long = 1 << 0;
/// Allocation hint: the block holds signal words.
pub const SHMEM_MALLOC_SIGNAL_REMOTE: c_long = 1 << 1;

/// Team configuration mask: `num_contexts` is set.
pub const SHMEM_TEAM_NUM_CONTEXTS: c_long = 1 << 0;

/// Initial value of every `pSync` element.
pub const SHMEM_SYNC_VALUE: c_long = 0;
/// Elements of a `pSync` array of the active-set collectives.
pub const SHMEM_SYNC_SIZE: usize = 128;
/// Elements of a barrier's `pSync`.
pub const SHMEM_BARRIER_SYNC_SIZE: usize = SHMEM_SYNC_SIZE;
/// Least elements of a reduction's `pWrk`.
pub const SHMEM_REDUCE_MIN_WRKDATA_SIZE: usize = 16;

/// No team: what a split gives the PEs left out.
pub const SHMEM_TEAM_INVALID: shmem_team_t = core::ptr::null_mut();
/// No context.
pub const SHMEM_CTX_INVALID: shmem_ctx_t = core::ptr::null_mut();

extern "C" {
    /// The object `SHMEM_TEAM_WORLD` points at; use [`shmem_team_world`].
    pub static mut shmem_internal_team_world: shmem_team_s;
    /// The object `SHMEM_TEAM_SHARED` points at; use [`shmem_team_shared`].
    pub static mut shmem_internal_team_shared: shmem_team_s;
    /// The object `SHMEM_CTX_DEFAULT` points at; use [`shmem_ctx_default`].
    pub static mut shmem_internal_ctx_default: shmem_ctx_s;
}

const STATICS: &[&str] = &[
    "shmem_internal_team_world",
    "shmem_internal_team_shared",
    "shmem_internal_ctx_default",
];

/// `SHMEM_TEAM_WORLD`: every PE of the job.
pub fn shmem_team_world() -> shmem_team_t {
    // SAFETY: only the address of the library's object is taken; nothing reads or writes it.
    #[allow(unused_unsafe)]
    unsafe {
        core::ptr::addr_of_mut!(shmem_internal_team_world)
    }
}

/// `SHMEM_TEAM_SHARED`: the PEs whose memory this PE maps (those on this node).
pub fn shmem_team_shared() -> shmem_team_t {
    // SAFETY: as in `shmem_team_world`.
    #[allow(unused_unsafe)]
    unsafe {
        core::ptr::addr_of_mut!(shmem_internal_team_shared)
    }
}

/// `SHMEM_CTX_DEFAULT`: the context every routine without a context argument uses.
pub fn shmem_ctx_default() -> shmem_ctx_t {
    // SAFETY: as in `shmem_team_world`.
    #[allow(unused_unsafe)]
    unsafe {
        core::ptr::addr_of_mut!(shmem_internal_ctx_default)
    }
}

// ---- Untyped routines of <shmem.h> and <shmemx.h> ------------------------------------------

declare! {
    CORE;
    /// Starts the library on this PE (collective over the job).
    fn shmem_init();
    /// As `shmem_init`, asking for thread level `requested`; `*provided` gets the level given.
    fn shmem_init_thread(requested: c_int, provided: *mut c_int) -> c_int;
    /// The thread level the library runs at.
    fn shmem_query_thread(provided: *mut c_int);
    /// Ends the library on this PE (collective).
    fn shmem_finalize();
    /// Ends the whole job with `status`; does not return.
    fn shmem_global_exit(status: c_int);
    /// This PE's number.
    fn shmem_my_pe() -> c_int;
    /// Number of PEs in the job.
    fn shmem_n_pes() -> c_int;
    /// The specification version implemented.
    fn shmem_info_get_version(major: *mut c_int, minor: *mut c_int);
    /// Writes the library name (at most `SHMEM_MAX_NAME_LEN` bytes with the NUL).
    fn shmem_info_get_name(name: *mut c_char);
    /// 1 when `pe` can be reached, else 0.
    fn shmem_pe_accessible(pe: c_int) -> c_int;
    /// 1 when `addr` is symmetric and reachable on `pe`, else 0.
    fn shmem_addr_accessible(addr: *const c_void, pe: c_int) -> c_int;
    /// Where this PE can load and store `dest` of `pe` directly, or null.
    fn shmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void;

    /// `size` symmetric bytes (collective), aligned to at least 64; null when size is 0 or the
    /// heap is exhausted.
    fn shmem_malloc(size: usize) -> *mut c_void;
    /// As `shmem_malloc`, with `SHMEM_MALLOC_*` hints.
    fn shmem_malloc_with_hints(size: usize, hints: c_long) -> *mut c_void;
    /// `count * size` zeroed symmetric bytes (collective).
    fn shmem_calloc(count: usize, size: usize) -> *mut c_void;
    /// `size` symmetric bytes aligned to `alignment`, a power of two (collective).
    fn shmem_align(alignment: usize, size: usize) -> *mut c_void;
    /// Resizes a symmetric block, keeping its contents (collective).
    fn shmem_realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
    /// Frees a symmetric block (collective).
    fn shmem_free(ptr: *mut c_void);

    /// Copies `nelems` bytes from local `source` to symmetric `dest` on `pe`.
    fn shmem_putmem(dest: *mut c_void, source: *const c_void, nelems: usize, pe: c_int);
    /// Copies `nelems` bytes from symmetric `source` on `pe` to local `dest`.
    fn shmem_getmem(dest: *mut c_void, source: *const c_void, nelems: usize, pe: c_int);
    /// Non-blocking `shmem_putmem`: complete after `shmem_quiet`.
    fn shmem_putmem_nbi(dest: *mut c_void, source: *const c_void, nelems: usize, pe: c_int);
    /// Non-blocking `shmem_getmem`: complete after `shmem_quiet`.
    fn shmem_getmem_nbi(dest: *mut c_void, source: *const c_void, nelems: usize, pe: c_int);
    /// `shmem_putmem` on context `ctx`.
    fn shmem_ctx_putmem(ctx: shmem_ctx_t, dest: *mut c_void, source: *const c_void, nelems: usize, pe: c_int);
    /// `shmem_getmem` on context `ctx`.
    fn shmem_ctx_getmem(ctx: shmem_ctx_t, dest: *mut c_void, source: *const c_void, nelems: usize, pe: c_int);
    /// `shmem_putmem_nbi` on context `ctx`.
    fn shmem_ctx_putmem_nbi(ctx: shmem_ctx_t, dest: *mut c_void, source: *const c_void, nelems: usize, pe: c_int);
    /// `shmem_getmem_nbi` on context `ctx`.
    fn shmem_ctx_getmem_nbi(ctx: shmem_ctx_t, dest: *mut c_void, source: *const c_void, nelems: usize, pe: c_int);

    /// Orders this PE's puts to each PE.
    fn shmem_fence();
    /// Completes every put, AMO and non-blocking call this PE issued.
    fn shmem_quiet();
    /// `shmem_fence` on context `ctx`.
    fn shmem_ctx_fence(ctx: shmem_ctx_t);
    /// `shmem_quiet` on context `ctx`.
    fn shmem_ctx_quiet(ctx: shmem_ctx_t);
    /// Completes this PE's operations and waits for every PE.
    fn shmem_barrier_all();
    /// Waits for every PE; completes no operations.
    fn shmem_sync_all();

    /// Number of this PE in `team`, or -1.
    fn shmem_team_my_pe(team: shmem_team_t) -> c_int;
    /// Number of PEs in `team`, or -1.
    fn shmem_team_n_pes(team: shmem_team_t) -> c_int;
    /// The configuration `team` was made with.
    fn shmem_team_get_config(team: shmem_team_t, config_mask: c_long, config: *mut shmem_team_config_t) -> c_int;
    /// The number in `dest_team` of PE `src_pe` of `src_team`, or -1.
    fn shmem_team_translate_pe(src_team: shmem_team_t, src_pe: c_int, dest_team: shmem_team_t) -> c_int;
    /// Splits `parent_team` into the PEs start, start + stride, ... (collective over it).
    fn shmem_team_split_strided(parent_team: shmem_team_t, start: c_int, stride: c_int, size: c_int, config: *const shmem_team_config_t, config_mask: c_long, new_team: *mut shmem_team_t) -> c_int;
    /// Splits `parent_team` along a grid `xrange` PEs wide (collective over it).
    fn shmem_team_split_2d(parent_team: shmem_team_t, xrange: c_int, xaxis_config: *const shmem_team_config_t, xaxis_mask: c_long, xaxis_team: *mut shmem_team_t, yaxis_config: *const shmem_team_config_t, yaxis_mask: c_long, yaxis_team: *mut shmem_team_t) -> c_int;
    /// Destroys a team made by a split (collective over it).
    fn shmem_team_destroy(team: shmem_team_t);
    /// Waits until every PE of `team` reaches it.
    fn shmem_team_sync(team: shmem_team_t) -> c_int;
    /// Where this PE can load and store `dest` of team PE `pe`, or null.
    fn shmem_team_ptr(team: shmem_team_t, dest: *const c_void, pe: c_int) -> *mut c_void;

    /// Copies `nelems` bytes from `source` on team PE `pe_root` to `dest` on every team PE.
    fn shmem_broadcastmem(team: shmem_team_t, dest: *mut c_void, source: *const c_void, nelems: usize, pe_root: c_int) -> c_int;
    /// Concatenates each team PE's `nelems` bytes (which may differ per PE) into `dest`.
    fn shmem_collectmem(team: shmem_team_t, dest: *mut c_void, source: *const c_void, nelems: usize) -> c_int;
    /// Concatenates each team PE's `nelems` bytes (the same on every PE) into `dest`.
    fn shmem_fcollectmem(team: shmem_team_t, dest: *mut c_void, source: *const c_void, nelems: usize) -> c_int;
    /// Sends block j of `nelems` bytes of `source` to team PE j.
    fn shmem_alltoallmem(team: shmem_team_t, dest: *mut c_void, source: *const c_void, nelems: usize) -> c_int;

    /// Makes a context with `SHMEM_CTX_*` options.
    fn shmem_ctx_create(options: c_long, ctx: *mut shmem_ctx_t) -> c_int;
    /// Makes a context of `team`.
    fn shmem_team_create_ctx(team: shmem_team_t, options: c_long, ctx: *mut shmem_ctx_t) -> c_int;
    /// Destroys a context (after completing its operations).
    fn shmem_ctx_destroy(ctx: shmem_ctx_t);
    /// The team `ctx` was made from.
    fn shmem_ctx_get_team(ctx: shmem_ctx_t, team: *mut shmem_team_t) -> c_int;

    /// Puts `nelems` bytes, then updates the signal word `sig_addr` on `pe` with `sig_op`.
    fn shmem_putmem_signal(dest: *mut c_void, source: *const c_void, nelems: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int);
    /// Non-blocking `shmem_putmem_signal`.
    fn shmem_putmem_signal_nbi(dest: *mut c_void, source: *const c_void, nelems: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int);
    /// `shmem_putmem_signal` on context `ctx`.
    fn shmem_ctx_putmem_signal(ctx: shmem_ctx_t, dest: *mut c_void, source: *const c_void, nelems: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int);
    /// `shmem_putmem_signal_nbi` on context `ctx`.
    fn shmem_ctx_putmem_signal_nbi(ctx: shmem_ctx_t, dest: *mut c_void, source: *const c_void, nelems: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int);
    /// The value of a local signal word, read atomically.
    fn shmem_signal_fetch(sig_addr: *const u64) -> u64;
    /// Waits until the local signal word compares true with `cmp_value`; returns its value.
    fn shmem_signal_wait_until(sig_addr: *mut u64, cmp: c_int, cmp_value: u64) -> u64;

    /// Blocks until this PE holds the symmetric lock `lock`.
    fn shmem_set_lock(lock: *mut c_long);
    /// Takes the lock if free: 0 when taken, 1 otherwise.
    fn shmem_test_lock(lock: *mut c_long) -> c_int;
    /// Releases the lock.
    fn shmem_clear_lock(lock: *mut c_long);

    /// Turns the store's TLS off (`enable` false) or on with the certificates `tls_info`
    /// describes (see `<shmemx.h>`); before `shmem_init`.
    fn shmem_set_conf_store_tls(enable: bool, tls_info: *const c_char, tls_info_len: u32) -> i32;
    /// Gives the private key and its password in place of files (see `<shmemx.h>`).
    fn shmem_set_config_store_tls_key(tls_pk: *const c_char, tls_pk_len: u32, tls_pk_pw: *const c_char, tls_pk_pw_len: u32, decrypt_handler: aclshmem_decrypt_handler) -> i32;

    /// Where this PE's symmetric heap lives ([`SHMEMX_HEAP_HOST`], [`SHMEMX_HEAP_NPU`],
    /// [`SHMEMX_HEAP_CUDA`]), the device's index written to `device_id` when it is not null
    /// (-1 for host memory); -1, writing nothing, when the library is not running.
    fn shmemx_heap_device(device_id: *mut c_int) -> c_int;
}

/// `shmemx_heap_device`: the heap is host memory, which the CPU loads and stores.
pub const SHMEMX_HEAP_HOST: c_int = 0;
/// `shmemx_heap_device`: the heap is an Ascend NPU's memory (the npu device).
pub const SHMEMX_HEAP_NPU: c_int = 1;
/// `shmemx_heap_device`: the heap is an NVIDIA GPU's memory (the cuda device).
pub const SHMEMX_HEAP_CUDA: c_int = 2;

/// Decrypts a private key's password (`<shmemx.h>`): `plain_len` holds the buffer's size on
/// entry and the password's length on return; 0 on success.
pub type aclshmem_decrypt_handler = Option<
    unsafe extern "C" fn(
        cipher_text: *const c_char,
        cipher_text_len: usize,
        plain_text: *mut c_char,
        plain_text_len: *mut usize,
    ) -> c_int,
>;

pub mod typed;

mod cann;
pub use cann::*;

mod cann_data;
pub use cann_data::*;

pub mod reduce;

/// Every function this crate declares, by its symbol and Rust types: what its tests check
/// against the prototypes of the C headers (`shmem_decls.txt`).
pub fn declared_signatures() -> Vec<sys_decl::Signature> {
    [CORE, cann::SYMBOLS, cann_data::DATA_SYMBOLS]
        .concat()
        .into_iter()
        .chain(cann_data::rma_signatures())
        .chain(cann_data::p2p_signatures())
        .chain(reduce::signatures())
        .chain(typed::symbols())
        .collect()
}

/// Every C symbol this crate declares (functions and the handles' objects), for checking them
/// against the library's exports.
pub fn declared_symbols() -> Vec<&'static str> {
    STATICS
        .iter()
        .copied()
        .chain(declared_signatures().iter().map(|s| s.symbol))
        .collect()
}
