//! shmem-core: the runtime behind `libshmem.so`.
//!
//! It owns every decision about a job: who the PEs are (bootstrap), which memory holds
//! symmetric data and how the PEs of a node reach each other's (device), how the symmetric heap
//! is laid out and carved (heap), how global and static variables become symmetric
//! (static_data), and how PEs wait for each other (sync). The C++ facade reaches it only
//! through the cxx bridge in `ffi`; the per-call data path (put, get, atomics) runs in the
//! facade on the addresses this crate hands out and never calls back in here.

//!
//! The control store is the `shmem-store` crate and the variable table and logging are
//! `shmem-base`'s ([`env`](mod@env) is re-exported here, [`log`] adds the runtime's part);
//! `shmemrun` builds on those two, never on this crate. Public are only the bootstrap (for the integration
//! test of a unique id's store), the variable table, logging, the error type their calls
//! return, and the dynamic transport ([`dynamic`]: workers with endpoints on demand, for groups
//! whose members come and go, and the node-local exchange of shareable memory) with its error
//! type, and the group API over it and the store's groups ([`group`]); everything else is
//! private to the library, and Rust programs reach the runtime through `libshmem.so`'s C ABI
//! (the `shmem-sys` crate), never by linking this crate a second time.

pub mod bootstrap;
mod clock;
mod device;
pub use shmem_base::env;
pub mod error;
mod ffi;
pub mod group;
mod heap;
mod idmap;
mod job_state;
mod layout;
pub mod log;
mod mapping;
mod memfabric;
mod runtime;
mod static_data;
mod sync;
mod transport;
pub use transport::dynamic;
pub use transport::TransportError;
