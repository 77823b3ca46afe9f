//! shmem-core: the runtime behind `libshmem.so`.
//!
//! It owns every decision about a job: who the PEs are (bootstrap), where the symmetric heap
//! lives and how peers map it (heap), how global and static variables become symmetric
//! (static_data), and how PEs wait for each other (sync). The C++ facade reaches it only
//! through the cxx bridge in [`ffi`]; the per-call data path (put, get, atomics) runs in the
//! facade on the addresses this crate hands out and never calls back in here.

pub mod bootstrap;
pub mod env;
pub mod error;
mod ffi;
pub mod heap;
pub mod job_state;
pub mod log;
mod mapping;
pub mod runtime;
pub mod static_data;
pub mod sync;
