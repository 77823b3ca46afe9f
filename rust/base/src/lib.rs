//! shmem-base: what both the runtime (`shmem-core`) and the launcher (`shmemrun`) need, and
//! nothing that needs either of them.
//!
//! - [`env`](mod@env): the one table of every `SHMEM_*` environment variable, its parsing and
//!   its printing (`SHMEM_INFO=1`); refusals are [`EnvError`]s.
//! - [`log`]: the process's `tracing` subscriber and its last output ([`log::exit_process`]).
//! - [`malloc`]: allocator tuning for a process that serves the control store.
//!
//! Must never grow into a runtime of its own: no job state, no sockets, no device. It depends
//! on `libc`, `thiserror` and `tracing` only, so that the launcher built on it stays small.

pub mod env;
mod error;
pub mod log;
pub mod malloc;

pub use error::{EnvError, PortRangeError};
