//! The reductions of OpenSHMEM 1.5 (`shmem_<TYPE>_<OP>_reduce` over a team), for the fixed-width
//! and floating types: one module per type name, one function per operation, returning 0 or
//! nonzero as the C routine does.

use crate::shmem_team_t;
use core::ffi::c_int;

/// Declares the reductions `ops` of one type, and `signatures()`, theirs.
macro_rules! reductions {
    ($($name:ident: $t:ty => [$($op:ident),*];)*) => {
        $(
            #[doc = concat!("Reductions `shmem_", stringify!($name), "_<op>_reduce` on `", stringify!($t), "`.")]
            pub mod $name {
                #[allow(unused_imports)]
                use super::*;
                linked! { SIGNATURES; $(
                    #[doc = concat!("`", stringify!($op), "` of `nreduce` elements of every team PE's `source` into `dest`.")]
                    fn $op = concat!("shmem_", stringify!($name), "_", stringify!($op), "_reduce");
                        (team: shmem_team_t, dest: *mut $t, source: *const $t, nreduce: usize) -> c_int;
                )* }
            }
        )*
        pub(crate) fn signatures() -> Vec<sys_decl::Signature> {
            [$($name::SIGNATURES),*].concat()
        }
    };
}

/// The reduction table of this crate (OpenSHMEM 1.5's for the fixed-width and floating types),
/// each `name: RustType => [ops];`, given to a macro: `reduction_types!(m! { args })` expands
/// to `m! { args int8: i8 => [and, or, xor, max, min, sum, prod]; ... double: f64 => [max,
/// min, sum, prod]; }`. The declarations below come from it, and so does the Python package's
/// choice of reduction by NumPy dtype; the crate's tests check each declaration against the
/// header's prototype.
#[macro_export]
macro_rules! reduction_types {
    ($then:ident! { $($args:tt)* }) => {
        $then! { $($args)*
            int8: i8 => [and, or, xor, max, min, sum, prod];
            int16: i16 => [and, or, xor, max, min, sum, prod];
            int32: i32 => [and, or, xor, max, min, sum, prod];
            int64: i64 => [and, or, xor, max, min, sum, prod];
            uint8: u8 => [and, or, xor, max, min, sum, prod];
            uint16: u16 => [and, or, xor, max, min, sum, prod];
            uint32: u32 => [and, or, xor, max, min, sum, prod];
            uint64: u64 => [and, or, xor, max, min, sum, prod];
            float: f32 => [max, min, sum, prod];
            double: f64 => [max, min, sum, prod];
        }
    };
}

reduction_types!(reductions! {});
