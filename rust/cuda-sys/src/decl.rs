//! The crate's declarations described as data: what each binding says it is in C (cuda.h's
//! spelling, normalised as `cuda_decls.txt` writes it), in Rust (`stringify!` of the type
//! written in the binding) and, for a function, which symbol of `libcuda.so.1` it is. The
//! macros in `lib.rs` fill these tables from the same lists that define the bindings, so the
//! test that compares them with the data extracted from cuda.h checks the bindings themselves,
//! not a copy. Nothing here calls the driver.

/// One bound function.
#[derive(Clone, Copy, Debug)]
pub struct Decl {
    /// The API name (`cuMemAlloc`), also the [`Cuda`](crate::Cuda) field's.
    pub name: &'static str,
    /// The symbol [`Cuda::load`](crate::Cuda::load) resolves: the API name after cuda.h's
    /// `#define` lines (`cuMemAlloc_v2`), the API name itself where cuda.h renames nothing.
    pub symbol: &'static str,
    /// Its C return type.
    pub c_ret: &'static str,
    /// Its C parameter types, names dropped.
    pub c_params: &'static [&'static str],
    /// The Rust return type of the binding.
    pub rust_ret: &'static str,
    /// The Rust parameter types of the binding.
    pub rust_params: &'static [&'static str],
}

/// One type alias of a CUDA typedef: a handle, an integer, a callback or an enum.
#[derive(Clone, Copy, Debug)]
pub struct Typedef {
    /// The typedef's name, also the Rust alias's.
    pub name: &'static str,
    /// What cuda.h defines it as at the end of its typedef chain (`int` for `CUdevice`, which
    /// is `CUdevice_v1`, which is `int`), or `enum` for an enum type.
    pub c_def: &'static str,
    /// What the Rust alias is.
    pub rust_def: &'static str,
}

/// One `#[repr(C)]` struct laid out as cuda.h's.
#[derive(Clone, Copy, Debug)]
pub struct StructDecl {
    /// The Rust struct's name.
    pub name: &'static str,
    /// The C struct's name in the data: its typedef name (`CUmemLocation`), or `S.f` for the
    /// anonymous struct that is field `f` of struct `S`.
    pub c_name: &'static str,
    /// `size_of` the Rust struct.
    pub size: usize,
    /// `align_of` the Rust struct.
    pub align: usize,
    /// Its fields in declaration order.
    pub fields: &'static [Field],
}

/// One field of a [`StructDecl`].
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// The C field's name.
    pub c_name: &'static str,
    /// The Rust field's type.
    pub rust_type: &'static str,
    /// The Rust field's offset in bytes (a function: `offset_of!` is newer than the MSRV).
    pub offset: fn() -> usize,
}

/// One constant: an enumerator or an error code.
#[derive(Clone, Copy, Debug)]
pub struct Constant {
    /// The C name, also the Rust constant's.
    pub name: &'static str,
    /// The Rust constant's type.
    pub rust_type: &'static str,
    /// Its value.
    pub value: i64,
}
