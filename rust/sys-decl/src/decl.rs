//! The declaration types: what each binding of a bindings crate says it is in C (the header's
//! spelling, normalised as the crate's `*_decls.txt` writes it), in Rust (`stringify!` of the
//! type written in the binding) and, for a function, which symbol of the library it resolves.
//! The macros fill tables of these from the same lists that define the bindings, so a check
//! against the data extracted from the headers checks the bindings themselves, not a copy.

/// One bound function.
#[derive(Clone, Copy, Debug)]
pub struct Decl {
    /// The C function's API name, also the name of the loader struct's field.
    pub name: &'static str,
    /// The symbol the loader resolves: the API name after the header's renaming `#define`
    /// lines (cuda.h's `cuMemAlloc` is `cuMemAlloc_v2`), the API name itself where the header
    /// renames nothing.
    pub symbol: &'static str,
    /// Its C return type.
    pub c_ret: &'static str,
    /// Its C parameter types, names dropped; empty for `()`.
    pub c_params: &'static [&'static str],
    /// The Rust return type of the binding.
    pub rust_ret: &'static str,
    /// The Rust parameter types of the binding.
    pub rust_params: &'static [&'static str],
}

/// One function a crate declares in an `extern "C"` block (linked, not loaded by a
/// [`functions!`](crate::functions) loader), described by its link name and Rust types alone:
/// the check finds its C prototype in the data by that name and compares the types.
#[derive(Clone, Copy, Debug)]
pub struct Signature {
    /// The symbol it links to, also the C function's name in the data.
    pub symbol: &'static str,
    /// The Rust return type (`stringify!` of it), `()` for none.
    pub rust_ret: &'static str,
    /// The Rust parameter types, in order.
    pub rust_params: &'static [&'static str],
}

/// One type alias of a C typedef: a handle, an integer, a status, a callback or an enum.
#[derive(Clone, Copy, Debug)]
pub struct Typedef {
    /// The typedef's name, also the Rust alias's.
    pub name: &'static str,
    /// What the header defines it as at the end of its typedef chain (`void *`,
    /// `void (*)(void *)`, `int` for a `CUdevice` that is `CUdevice_v1`, which is `int`), or
    /// `enum` for an enum type.
    pub c_def: &'static str,
    /// What the Rust alias is.
    pub rust_def: &'static str,
}

/// One `#[repr(C)]` struct laid out as the header's.
#[derive(Clone, Copy, Debug)]
pub struct StructDecl {
    /// The Rust struct's name.
    pub name: &'static str,
    /// The C struct's name in the data: its typedef name (`CUmemLocation`), or `S.f` for the
    /// anonymous struct that is field `f` of struct `S`; the Rust name unless the list gives
    /// another.
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

impl Constant {
    /// The name of the first constant of `constants` bound with the Rust type `rust_type` (as
    /// written in the list: `"CUresult"`) whose value is `value`: an error code's name for a
    /// log line. An enumerator of another type with the same value is not it.
    pub fn name_of(
        constants: &'static [Constant],
        rust_type: &str,
        value: i64,
    ) -> Option<&'static str> {
        constants
            .iter()
            .find(|c| c.rust_type == rust_type && c.value == value)
            .map(|c| c.name)
    }
}

/// A type for which all-zero bytes are a valid value: the only field types a struct of
/// [`structs!`](crate::structs) may have, so that its `Default`, all fields zero (what C
/// libraries ask of the fields a call does not use), is sound.
///
/// # Safety
///
/// An implementation promises that the all-zero bit pattern is a valid value of the type.
pub unsafe trait Zeroable {}

macro_rules! zeroable {
    ($($t:ty),*) => {
        // SAFETY: 0 is a valid value of every integer and floating-point type.
        $(unsafe impl Zeroable for $t {})*
    };
}

zeroable!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);

// SAFETY: the null pointer is a valid raw pointer (to a sized type: no metadata to be valid).
unsafe impl<T> Zeroable for *const T {}
// SAFETY: as for `*const T`.
unsafe impl<T> Zeroable for *mut T {}
// SAFETY: an array of zero bytes is an array of zero elements, each valid by `T`'s promise.
unsafe impl<T: Zeroable, const N: usize> Zeroable for [T; N] {}

/// Compiles only for a [`Zeroable`] `T`: what [`structs!`](crate::structs) asks of each field
/// type, at compile time.
#[doc(hidden)]
pub const fn assert_zeroable<T: Zeroable>() {}
