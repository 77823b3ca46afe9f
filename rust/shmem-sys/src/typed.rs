//! The typed routines, one module per type name of the specification's tables
//! (`shmem/types.h`): each module declares the families its type belongs to, under the C
//! names `shmem_<TYPE>_<op>`.

use core::ffi::{
    c_char, c_int, c_long, c_longlong, c_schar, c_short, c_uchar, c_uint, c_ulong, c_ulonglong,
    c_ushort,
};

/// Declares a family's routines for one type, with link names `shmem_<module>_<op>`, and a
/// constant (named as the family) listing their signatures.
macro_rules! family {
    ($fam:ident, $m:ident, $t:ty; $( $(#[$doc:meta])* fn $op:ident ( $($arg:ident : $aty:ty),* ) $(-> $ret:ty)? ; )*) => {
        extern "C" {
            $(
                $(#[$doc])*
                #[link_name = concat!("shmem_", stringify!($m), "_", stringify!($op))]
                pub fn $op($($arg: $aty),*) $(-> $ret)?;
            )*
        }
        #[allow(non_upper_case_globals)]
        pub(crate) const $fam: &[sys_decl::Signature] = &[$(
            signature!(concat!("shmem_", stringify!($m), "_", stringify!($op)); ($($aty),*) $(-> $ret)?)
        ),*];
    };
}

/// Remote memory access: put, get, their non-blocking, single-element and strided forms, and
/// put-with-signal.
macro_rules! rma {
    ($m:ident, $t:ty) => {
        family! { rma, $m, $t;
            /// Copies `nelems` elements from local `source` to symmetric `dest` on `pe`.
            fn put(dest: *mut $t, source: *const $t, nelems: usize, pe: c_int);
            /// Copies `nelems` elements from symmetric `source` on `pe` to local `dest`.
            fn get(dest: *mut $t, source: *const $t, nelems: usize, pe: c_int);
            /// Non-blocking `put`: complete after `shmem_quiet`.
            fn put_nbi(dest: *mut $t, source: *const $t, nelems: usize, pe: c_int);
            /// Non-blocking `get`: complete after `shmem_quiet`.
            fn get_nbi(dest: *mut $t, source: *const $t, nelems: usize, pe: c_int);
            /// Writes one element to `dest` on `pe`.
            fn p(dest: *mut $t, value: $t, pe: c_int);
            /// Reads one element of `source` on `pe`.
            fn g(source: *const $t, pe: c_int) -> $t;
            /// Strided put: element i of `source` at i * `sst` to `dest` at i * `dst`.
            fn iput(dest: *mut $t, source: *const $t, dst: isize, sst: isize, nelems: usize, pe: c_int);
            /// Strided get.
            fn iget(dest: *mut $t, source: *const $t, dst: isize, sst: isize, nelems: usize, pe: c_int);
            /// `put`, then updates the signal word `sig_addr` on `pe` with `sig_op`.
            fn put_signal(dest: *mut $t, source: *const $t, nelems: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int);
            /// Non-blocking `put_signal`.
            fn put_signal_nbi(dest: *mut $t, source: *const $t, nelems: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int);
        }
    };
}

/// The extended AMOs: fetch, set, swap.
macro_rules! amo_extended {
    ($m:ident, $t:ty) => {
        family! { amo_extended, $m, $t;
            /// Reads `source` on `pe` atomically.
            fn atomic_fetch(source: *const $t, pe: c_int) -> $t;
            /// Writes `value` to `dest` on `pe` atomically.
            fn atomic_set(dest: *mut $t, value: $t, pe: c_int);
            /// Writes `value` to `dest` on `pe`, returning the old value.
            fn atomic_swap(dest: *mut $t, value: $t, pe: c_int) -> $t;
        }
    };
}

/// The standard AMOs: compare-and-swap, increment, add.
macro_rules! amo_standard {
    ($m:ident, $t:ty) => {
        family! { amo_standard, $m, $t;
            /// Writes `value` to `dest` on `pe` if it equals `cond`; returns the old value.
            fn atomic_compare_swap(dest: *mut $t, cond: $t, value: $t, pe: c_int) -> $t;
            /// Adds 1 to `dest` on `pe`, returning the old value.
            fn atomic_fetch_inc(dest: *mut $t, pe: c_int) -> $t;
            /// Adds 1 to `dest` on `pe`.
            fn atomic_inc(dest: *mut $t, pe: c_int);
            /// Adds `value` to `dest` on `pe`, returning the old value.
            fn atomic_fetch_add(dest: *mut $t, value: $t, pe: c_int) -> $t;
            /// Adds `value` to `dest` on `pe`.
            fn atomic_add(dest: *mut $t, value: $t, pe: c_int);
        }
    };
}

/// The bitwise AMOs.
macro_rules! amo_bitwise {
    ($m:ident, $t:ty) => {
        family! { amo_bitwise, $m, $t;
            /// Ands `value` into `dest` on `pe`, returning the old value.
            fn atomic_fetch_and(dest: *mut $t, value: $t, pe: c_int) -> $t;
            /// Ors `value` into `dest` on `pe`, returning the old value.
            fn atomic_fetch_or(dest: *mut $t, value: $t, pe: c_int) -> $t;
            /// Xors `value` into `dest` on `pe`, returning the old value.
            fn atomic_fetch_xor(dest: *mut $t, value: $t, pe: c_int) -> $t;
            /// Ands `value` into `dest` on `pe`.
            fn atomic_and(dest: *mut $t, value: $t, pe: c_int);
            /// Ors `value` into `dest` on `pe`.
            fn atomic_or(dest: *mut $t, value: $t, pe: c_int);
            /// Xors `value` into `dest` on `pe`.
            fn atomic_xor(dest: *mut $t, value: $t, pe: c_int);
        }
    };
}

/// Point-to-point synchronisation on a local symmetric variable.
macro_rules! sync {
    ($m:ident, $t:ty) => {
        family! { sync, $m, $t;
            /// Waits until `*ivar` compares true (`SHMEM_CMP_*`) with `cmp_value`.
            fn wait_until(ivar: *mut $t, cmp: c_int, cmp_value: $t);
            /// 1 when `*ivar` compares true with `cmp_value`, else 0.
            fn test(ivar: *mut $t, cmp: c_int, cmp_value: $t) -> c_int;
        }
    };
}

/// The type table: each type name with its Rust type and the families it is in.
macro_rules! types {
    ($( $m:ident: $t:ty => [$($fam:ident),*]; )*) => {
        $(
            #[doc = concat!("Routines `shmem_", stringify!($m), "_*`, on `", stringify!($t), "`.")]
            pub mod $m {
                #[allow(unused_imports)]
                use super::*;
                $( $fam!($m, $t); )*
                /// The signatures declared here.
                pub(crate) fn symbols() -> Vec<sys_decl::Signature> {
                    [$($fam),*].concat()
                }
            }
        )*
        /// The signatures of every typed routine declared.
        pub(crate) fn symbols() -> Vec<sys_decl::Signature> {
            [$($m::symbols()),*].concat()
        }
    };
}

types! {
    float: f32 => [rma, amo_extended];
    double: f64 => [rma, amo_extended];
    char: c_char => [rma];
    schar: c_schar => [rma];
    short: c_short => [rma, sync];
    int: c_int => [rma, amo_extended, amo_standard, sync];
    long: c_long => [rma, amo_extended, amo_standard, sync];
    longlong: c_longlong => [rma, amo_extended, amo_standard, sync];
    uchar: c_uchar => [rma];
    ushort: c_ushort => [rma, sync];
    uint: c_uint => [rma, amo_extended, amo_standard, amo_bitwise, sync];
    ulong: c_ulong => [rma, amo_extended, amo_standard, amo_bitwise, sync];
    ulonglong: c_ulonglong => [rma, amo_extended, amo_standard, amo_bitwise, sync];
    int8: i8 => [rma];
    int16: i16 => [rma];
    int32: i32 => [rma, amo_extended, amo_standard, amo_bitwise, sync];
    int64: i64 => [rma, amo_extended, amo_standard, amo_bitwise, sync];
    uint8: u8 => [rma];
    uint16: u16 => [rma];
    uint32: u32 => [rma, amo_extended, amo_standard, amo_bitwise, sync];
    uint64: u64 => [rma, amo_extended, amo_standard, amo_bitwise, sync];
    size: usize => [rma, amo_extended, amo_standard, sync];
    ptrdiff: isize => [rma, amo_extended, amo_standard, sync];
}
