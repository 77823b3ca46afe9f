//! The runtime's error type. Each variant says when it happens; the facade maps them to the
//! public error returns (OpenSHMEM's or CANN's codes). The function that first detects an error
//! builds it with enough context (call, argument, value, PE) to be logged once as one line.

use crate::bootstrap::BootstrapError;

/// Every way the runtime can fail.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An environment variable holds a value that does not parse or is out of range.
    #[error("environment variable {name}={value:?}: {reason}")]
    BadEnv {
        /// Variable name.
        name: &'static str,
        /// The value as given.
        value: String,
        /// Why it was refused.
        reason: String,
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
    /// `shmem_finalize`, or `shmem_init` was called twice.
    #[error("{call}: {reason}")]
    State {
        /// The public routine that was called.
        call: &'static str,
        /// What was wrong with the library's state.
        reason: &'static str,
    },
    /// The launcher's environment describes a job this build cannot run (PEs on several
    /// nodes, no job id to meet under), or the PEs of a job without `shmemrun` could not meet
    /// at PE 0's store.
    #[error("{0}")]
    Launch(String),
    /// The control plane (launcher store) failed: connection, protocol or timeout.
    #[error("bootstrap: {0}")]
    Bootstrap(#[from] BootstrapError),
    /// A system call failed while setting up or tearing down the job.
    #[error("{what}: {source}")]
    Os {
        /// What the runtime was doing.
        what: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// A symmetric allocation could not be met (heap exhausted) or named no live block, or the
    /// heaps did not fit this process's address space at start-up.
    #[error("{0}")]
    Heap(String),
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
    Transport(#[from] crate::transport::TransportError),
    /// An error already logged where it was detected (with its context); callers pass it on
    /// without logging it again.
    #[error("{0}")]
    Logged(Box<Error>),
}

impl Error {
    /// Wraps a system error with what the runtime was doing when it happened.
    pub fn os(what: impl Into<String>, source: impl Into<std::io::Error>) -> Self {
        Error::Os {
            what: what.into(),
            source: source.into(),
        }
    }
}

/// Result with the runtime's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
