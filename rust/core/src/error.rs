//! The runtime's error type. Each variant says when it happens; [`Error::code`] is the one
//! mapping to the public error returns (CANN's codes; the OpenSHMEM calls that return an
//! error use them too). The function that first detects an error builds it with enough
//! context (call, argument, value, PE) to be logged once as one line, and marks it
//! [`Error::logged`] when it logged it itself.
//!
//! The layers below define their own error types beside the code that fails (the bootstrap's
//! [`LaunchError`] and store errors, the transports' `TransportError`) in files that import
//! nothing above them; this type composes them, so no layer imports another through it.

use std::time::Duration;

pub use crate::bootstrap::error::LaunchError;
use crate::bootstrap::store::tls::TlsError;
use crate::bootstrap::store::BootstrapError;

/// Every way the runtime can fail.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A variable of the table (`shmem_base::env`) holds a value that does not parse or is
    /// out of range.
    #[error(transparent)]
    Env(#[from] shmem_base::EnvError),
    /// An environment variable the runtime reads on its own (a launcher's, or a table entry's
    /// value checked against the job) holds a value that does not parse or is out of range.
    #[error("environment variable {name}={value:?}: {reason}")]
    BadEnv {
        /// Variable name.
        name: &'static str,
        /// The value as given.
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// An environment variable names an address or an interface that does not parse, or where
    /// no store can listen; `source` is the typed reason
    /// ([`AddrError`](crate::bootstrap::addr::AddrError),
    /// [`NoAddress`](crate::bootstrap::error::NoAddress)).
    #[error("environment variable {name}={value:?}: {source}")]
    BadAddress {
        /// Variable name.
        name: &'static str,
        /// The value as given.
        value: String,
        /// Why it was refused.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A routine was called with an argument it cannot accept.
    #[error("{call}: invalid argument {arg}={value}: {reason}")]
    InvalidArgument {
        /// The public routine that was called.
        call: &'static str,
        /// The argument's name.
        arg: &'static str,
        /// The argument's value, printed.
        value: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A routine that needs an initialised library was called before `shmem_init` or after
    /// `shmem_finalize`, `shmem_init` was called twice, or a setting that is fixed once the
    /// library runs was changed then.
    #[error("{call}: {reason}")]
    State {
        /// The public routine that was called.
        call: &'static str,
        /// What was wrong with the library's state.
        reason: &'static str,
    },
    /// The launcher's environment describes a job this build cannot start, or the PEs could
    /// not meet: each case its own variant.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// The control plane (launcher store) failed: connection, protocol or timeout.
    #[error("bootstrap: {0}")]
    Bootstrap(#[from] BootstrapError),
    /// A PE of the job cannot be reached from this one by any means this build has.
    #[error("{why}")]
    Unreachable {
        /// The PE that cannot be reached.
        pe: u32,
        /// Why, naming both PEs' nodes and what would reach it.
        why: String,
    },
    /// A step of the job did not finish within its bound.
    #[error("{step} within {:.1} s ({bound}){why}", .after.as_secs_f64())]
    Timeout {
        /// What did not happen ("not every PE reached the end of start-up").
        step: String,
        /// How long it was waited for.
        after: Duration,
        /// The setting that bounds it (`SHMEM_INIT_TIMEOUT`, an attribute).
        bound: String,
        /// What that tells about the PEs (starts with ": " or ", "), or "".
        why: String,
    },
    /// The device cannot do what was asked (CANN's and the C API's "not supported").
    #[error("the {device} device cannot do this: {what}")]
    Unsupported {
        /// What was asked.
        what: &'static str,
        /// The device.
        device: &'static str,
    },
    /// A device's call failed with the device's own code.
    #[error("{device} device: {call} failed with code {code}{detail}")]
    Device {
        /// The device ("host", "npu", "cuda").
        device: &'static str,
        /// The device API's call.
        call: &'static str,
        /// Its return code.
        code: i32,
        /// What the device says about the code (starts with ": "), or "".
        detail: String,
    },
    /// The device's memory cannot hold what the runtime needs there (for example words the
    /// CPU must reach in memory it cannot).
    #[error("the {device} device's memory is not CPU-accessible, and {needs}")]
    NotCpuAccessible {
        /// The device.
        device: &'static str,
        /// What needs CPU access.
        needs: &'static str,
    },
    /// TLS of the job's store: certificates, keys, the bundle from `shmemrun`, or settings.
    #[error("{what}: {source}")]
    Tls {
        /// What was being done or read.
        what: String,
        /// The TLS failure.
        source: TlsError,
    },
    /// A TLS setting given to a routine (`tls_info`, `tls_pk`) cannot be used.
    #[error("invalid argument {arg}: {source}")]
    TlsArgument {
        /// The argument's name.
        arg: &'static str,
        /// Why it cannot be used.
        source: TlsError,
    },
    /// A system call failed while setting up or tearing down the job.
    #[error("{what}: {source}")]
    Os {
        /// What the runtime was doing.
        what: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// A symmetric allocation could not be met: no free block is large enough.
    #[error(
        "{call}: out of symmetric memory: {wanted} bytes wanted, largest free block is \
         {largest_free} bytes ({total_free} of {heap_size} bytes free); \
         raise SHMEM_SYMMETRIC_SIZE"
    )]
    HeapExhausted {
        /// The public routine.
        call: String,
        /// Bytes asked for, after rounding.
        wanted: usize,
        /// Largest free block.
        largest_free: usize,
        /// Free bytes in all.
        total_free: usize,
        /// Usable bytes of the heap.
        heap_size: usize,
    },
    /// An address passed to free or realloc names no live symmetric block: it is outside the
    /// heap (`offset` is `None`), or no block starts there.
    #[error("{}", no_such_block(call, *.addr, *.offset))]
    NoSuchBlock {
        /// The public routine.
        call: String,
        /// The address as given.
        addr: usize,
        /// Its offset in the heap, when it is in the heap.
        offset: Option<usize>,
    },
    /// A symmetric allocation asked for an alignment larger than the heap's.
    #[error("{call}: alignment={align} is larger than the largest supported ({max})")]
    Alignment {
        /// The public routine.
        call: String,
        /// The alignment asked for.
        align: usize,
        /// The largest supported.
        max: usize,
    },
    /// The symmetric heaps of all PEs do not fit this process's address space.
    #[error(
        "{what}: {source}: every PE maps the symmetric heaps of all {n_pes} PEs, \
         SHMEM_SYMMETRIC_SIZE ({each}) each, and its own with {align_gib} GiB of room to align \
         it; lower SHMEM_SYMMETRIC_SIZE or raise the address-space limit (ulimit -v, {limit})"
    )]
    AddressSpace {
        /// The mapping that failed.
        what: String,
        /// The system's error (ENOMEM).
        source: std::io::Error,
        /// PEs of the job.
        n_pes: usize,
        /// One heap's size, printed.
        each: String,
        /// Room for aligning this PE's own heap, in GiB.
        align_gib: usize,
        /// The address-space limit, printed.
        limit: String,
    },
    /// The PEs of one job disagree on something that must be the same everywhere.
    #[error("PE {pe}: {what}")]
    Mismatch {
        /// The PE whose value differs from this PE's.
        pe: i32,
        /// What differs, with both values.
        what: String,
    },
    /// A transport failed to connect, register a segment or reach a peer.
    #[error("transport: {0}")]
    Transport(#[from] crate::transport::error::TransportError),
    /// An error already logged where it was detected (with its context); callers pass it on
    /// without logging it again. Made by [`Error::logged`], asked by [`Error::is_logged`].
    #[error("{0}")]
    Logged(Box<Error>),
}

/// The text of [`Error::NoSuchBlock`].
fn no_such_block(call: &str, addr: usize, offset: Option<usize>) -> String {
    match offset {
        None => format!("{call}: ptr={addr:#x} is not an address in the symmetric heap"),
        Some(offset) => format!(
            "{call}: address at heap offset {offset} is not the start of a symmetric block \
             (ptr={addr:#x}: already freed, or not a block start)"
        ),
    }
}

impl Error {
    /// Wraps a system error with what the runtime was doing when it happened.
    pub fn os(what: impl Into<String>, source: impl Into<std::io::Error>) -> Self {
        Error::Os {
            what: what.into(),
            source: source.into(),
        }
    }

    /// The same error, marked as logged where it was detected.
    pub fn logged(self) -> Error {
        match self {
            e @ Error::Logged(_) => e,
            e => Error::Logged(Box::new(e)),
        }
    }

    /// Whether the error was logged where it was detected.
    pub fn is_logged(&self) -> bool {
        matches!(self, Error::Logged(_))
    }

    /// Whether the message names the public routine itself (so that a caller logging it does
    /// not put the routine's name in front again).
    pub fn names_call(&self) -> bool {
        match self {
            Error::Logged(e) => e.names_call(),
            Error::InvalidArgument { .. }
            | Error::State { .. }
            | Error::HeapExhausted { .. }
            | Error::NoSuchBlock { .. }
            | Error::Alignment { .. }
            | Error::Launch(
                LaunchError::UniqueIdOwner { .. }
                | LaunchError::UniqueId { .. }
                | LaunchError::UniqueIdStore { .. },
            ) => true,
            _ => false,
        }
    }

    /// The public error code for this error (`ACLSHMEM_*` in `aclshmem.h`), the one mapping
    /// from the runtime's errors to what the C API returns.
    pub fn code(&self) -> i32 {
        const INVALID_PARAM: i32 = -1;
        const INVALID_VALUE: i32 = -2;
        const INNER_ERROR: i32 = -4;
        const BOOTSTRAP_ERROR: i32 = -6;
        const TIMEOUT_ERROR: i32 = -7;
        const MALLOC_FAILED: i32 = -8;
        match self {
            Error::Logged(inner) => inner.code(),
            Error::InvalidArgument { .. }
            | Error::TlsArgument { .. }
            | Error::Mismatch { .. }
            | Error::Alignment { .. } => INVALID_PARAM,
            Error::Env(_) | Error::BadEnv { .. } | Error::BadAddress { .. } => INVALID_VALUE,
            Error::Timeout { .. }
            | Error::Bootstrap(
                BootstrapError::Timeout { .. }
                | BootstrapError::Absent { .. }
                | BootstrapError::NotPublished { .. },
            ) => TIMEOUT_ERROR,
            Error::Bootstrap(_)
            | Error::Launch(_)
            | Error::Unreachable { .. }
            | Error::Tls { .. } => BOOTSTRAP_ERROR,
            Error::HeapExhausted { .. }
            | Error::NoSuchBlock { .. }
            | Error::AddressSpace { .. }
            | Error::NotCpuAccessible { .. } => MALLOC_FAILED,
            Error::Unsupported { .. } => NOT_SUPPORTED,
            Error::State { .. } | Error::Device { .. } | Error::Os { .. } | Error::Transport(_) => {
                INNER_ERROR
            }
        }
    }
}

/// CANN's `ACLSHMEM_NOT_SUPPORTED`: what a CANN call answers when this build or this job cannot
/// do what it asks.
pub const NOT_SUPPORTED: i32 = -100;

/// Result with the runtime's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_variant_and_survive_logging() {
        let timeout = Error::Timeout {
            step: "not every PE reached the end of start-up".into(),
            after: Duration::from_secs(2),
            bound: "the start-up timeout, SHMEM_INIT_TIMEOUT".into(),
            why: String::new(),
        };
        assert_eq!(timeout.code(), -7);
        assert_eq!(
            timeout.to_string(),
            "not every PE reached the end of start-up within 2.0 s (the start-up timeout, \
             SHMEM_INIT_TIMEOUT)"
        );
        let logged = timeout.logged();
        assert!(logged.is_logged());
        assert_eq!(logged.code(), -7);
        assert!(!logged.logged().names_call());
        let exhausted = Error::HeapExhausted {
            call: "shmem_malloc".into(),
            wanted: 64,
            largest_free: 0,
            total_free: 0,
            heap_size: 4096,
        };
        assert_eq!(exhausted.code(), -8);
        assert!(exhausted.names_call());
        assert!(!exhausted.is_logged());
        let launch = Error::from(LaunchError::NoRandom { what: "a test" });
        assert_eq!(launch.code(), -6);
        assert!(!launch.names_call());
    }
}
