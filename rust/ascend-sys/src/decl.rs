//! The crate's declarations described as data: what each binding says it is in C (the header's
//! spelling, normalised as `acl_decls.txt` writes it) and in Rust (`stringify!` of the type
//! written in the binding). The macros in `lib.rs` fill these tables from the same lists that
//! define the bindings, so the test that compares them with the data extracted from CANN's
//! headers checks the bindings themselves, not a copy. Nothing here calls ACL.

/// One bound function.
#[derive(Clone, Copy, Debug)]
pub struct Decl {
    /// The C function's name, also the [`Acl`](crate::Acl) field's.
    pub name: &'static str,
    /// Its C return type.
    pub c_ret: &'static str,
    /// Its C parameter types, names dropped; empty for `()`.
    pub c_params: &'static [&'static str],
    /// The Rust return type of the binding.
    pub rust_ret: &'static str,
    /// The Rust parameter types of the binding.
    pub rust_params: &'static [&'static str],
}

/// One type alias of an ACL typedef: a handle, a status, a callback or an enum.
#[derive(Clone, Copy, Debug)]
pub struct Typedef {
    /// The typedef's name, also the Rust alias's.
    pub name: &'static str,
    /// What the header defines it as (`void *`, `void (*)(void *)`), or `enum` for an enum type.
    pub c_def: &'static str,
    /// What the Rust alias is.
    pub rust_def: &'static str,
}

/// One `#[repr(C)]` struct laid out as ACL's.
#[derive(Clone, Copy, Debug)]
pub struct StructDecl {
    /// The C struct's name, also the Rust struct's.
    pub name: &'static str,
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
