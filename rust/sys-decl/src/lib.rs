//! The machinery the library's bindings crates (`ascend-sys` for ACL, `cuda-sys` for the CUDA
//! driver) share: a C library's bindings written once, as lists that both define them and
//! describe them as data, checked against the facts extracted from the library's headers.
//!
//! - The declaration types ([`Typedef`], [`StructDecl`] and [`Field`], [`Decl`], [`Constant`]):
//!   what a binding says it is in C and in Rust; [`Signature`]: what a function a crate links
//!   (rather than loads, as `shmem-sys` links libshmem) says it is in Rust.
//! - The macros a bindings crate writes its lists in ([`typedefs!`], [`structs!`],
//!   [`functions!`], [`constants!`]): each defines the items and the table of them
//!   (`TYPEDEFS`, `STRUCTS`, `DECLS`, `CONSTANTS`) from the same tokens.
//! - With the feature `check`, for the bindings crates' tests only: the module `check`, the
//!   parser of a `*_decls.txt` data file and the comparisons of the tables with it both ways
//!   (and of a linked crate's [`Signature`]s with the functions of the data that they name).
//!
//! It depends on nothing but std, never loads or calls a library (the loader struct
//! [`functions!`] defines does, in the bindings crate, with that crate's `libloading`), and
//! knows no vendor: a bindings crate gives its own C-to-Rust scalar table and checks of its
//! own.

mod decl;
mod macros;

#[cfg(feature = "check")]
pub mod check;

#[doc(hidden)]
pub use decl::assert_zeroable;
pub use decl::{Constant, Decl, Field, Signature, StructDecl, Typedef, Zeroable};
