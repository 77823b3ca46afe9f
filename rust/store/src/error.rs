//! Why a store operation failed ([`BootstrapError`]), and how a start-up step renames a
//! timeout into the PE that did not publish its part.

use std::io;
use std::time::Duration;

use crate::wire;

/// The text of [`BootstrapError::Timeout`]: a wait for a key, or for any answer at all (HELLO).
fn timeout_text(op: &str, key: &str, after: Duration) -> String {
    let secs = after.as_secs_f64();
    if key.is_empty() {
        format!("the store did not answer {op} within {secs:.1} s")
    } else {
        format!("store {op} timed out after {secs:.1} s waiting for key '{key}'")
    }
}

impl BootstrapError {
    /// The same error seen from a start-up step in which PE `rank` publishes `what`: a wait
    /// for its key that timed out becomes [`BootstrapError::NotPublished`], naming the PE and
    /// what it had not done. Any other error is returned as it is.
    pub fn unpublished(self, rank: u32, what: &'static str) -> BootstrapError {
        match self {
            BootstrapError::Timeout { after, .. } => {
                BootstrapError::NotPublished { rank, what, after }
            }
            other => other.unshared(what),
        }
    }

    /// The same error seen from a start-up allgather in which every PE shares `what`: the
    /// PE an [`BootstrapError::Absent`] names becomes the PE that did not publish it. Any other
    /// error is returned as it is.
    pub fn unshared(self, what: &'static str) -> BootstrapError {
        match self {
            BootstrapError::Absent { rank, after, .. } => {
                BootstrapError::NotPublished { rank, what, after }
            }
            other => other,
        }
    }
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BootstrapError {
    /// A key or value broke a protocol rule (empty key, key over 1 KiB, value over 16 MiB,
    /// or a descriptor on a link that cannot carry one);
    /// nothing was sent and the connection is still usable.
    #[error("store {op}: {source}")]
    InvalidArgument {
        /// Operation that was refused.
        op: &'static str,
        /// The broken limit.
        source: wire::WireError,
    },
    /// The key did not appear (GET, GET_FD, barrier, allgather), or the store did not answer,
    /// within the timeout.
    #[error("{}", timeout_text(op, key, *after))]
    Timeout {
        /// Operation that timed out.
        op: &'static str,
        /// Key it waited for.
        key: String,
        /// How long it waited.
        after: Duration,
    },
    /// A PE's contribution to a collective step (allgather) did not appear within the timeout:
    /// that PE never reached the store, or stopped before its turn.
    #[error(
        "store {op}: PE {rank} did not take part within {:.1} s: it did not start, is stuck, \
         or died before reaching the job's store",
        .after.as_secs_f64()
    )]
    Absent {
        /// Operation that timed out.
        op: &'static str,
        /// The PE that was waited for.
        rank: u32,
        /// How long it waited.
        after: Duration,
    },
    /// A PE's part of a start-up step (its heap, its node, ...) did not appear in the store
    /// within the start-up timeout: that PE has not called `shmem_init`, or is slow, stuck or
    /// dead before the step.
    #[error(
        "PE {rank} did not publish {what} within {:.1} s (the start-up timeout, \
         SHMEM_INIT_TIMEOUT): it has not called shmem_init, or is stuck or died before that step",
        .after.as_secs_f64()
    )]
    NotPublished {
        /// The PE that was waited for.
        rank: u32,
        /// What it had to publish ("its symmetric heap").
        what: &'static str,
        /// How long this PE waited.
        after: Duration,
    },
    /// The store serves a job of another size than this PE was told: the PEs were given
    /// different PE counts.
    #[error("the store serves {store} PEs, but this PE was told {ours}")]
    SizeMismatch {
        /// The store's job size.
        store: u32,
        /// This PE's.
        ours: u32,
    },
    /// The store refused a join of a group because a member with the same id holds a rank of it
    /// already: a live member, or one whose connection has ended but whose end the store has
    /// not seen yet. The connection is still usable.
    #[error(
        "store refused {op} of group '{group}': member id '{member}' holds rank {rank} already"
    )]
    MemberIdHeld {
        /// Operation refused.
        op: &'static str,
        /// The group.
        group: String,
        /// The member id asked for.
        member: String,
        /// The rank that member holds.
        rank: u32,
    },
    /// The store answered the request with an error (for example ADD on a key that holds no
    /// counter, or GET on a key that holds a descriptor); the connection is still usable.
    #[error("store refused {op} on key '{key}': {message}")]
    Refused {
        /// Operation refused.
        op: &'static str,
        /// Key it named.
        key: String,
        /// The store's reason.
        message: String,
    },
    /// The store speaks another protocol version (launcher and library from different builds).
    #[error(
        "store protocol version mismatch: this library speaks {ours}, the launcher {theirs}; \
         use the shmemrun that came with this library"
    )]
    VersionMismatch {
        /// Version of this library.
        ours: u32,
        /// Version of the store.
        theirs: u32,
    },
    /// The store's host (`shmemrun`, or PE 0 under other launchers) closed the connection: it
    /// is stopping the job, or it died.
    #[error("store connection closed during {op} (the store's host, shmemrun or PE 0, stopped the job or died)")]
    Closed {
        /// Operation in progress.
        op: &'static str,
    },
    /// The connection failed at the system level (bad descriptor, not a socket, send failed).
    #[error("store connection failed during {op}: {source}")]
    Io {
        /// Operation in progress.
        op: &'static str,
        /// The system error.
        source: io::Error,
    },
    /// Nothing answered as this job's store at the address within the timeout: nothing
    /// listened there, or what did was full, another job's, or closed the connection first.
    #[error(
        "store connection failed during connect: {who} could not reach the store at {addr} \
         within {} s: {last}",
        after.as_secs()
    )]
    Unreachable {
        /// Who tried: "PE 3", "this client".
        who: String,
        /// The store's address as given.
        addr: String,
        /// How long it tried.
        after: Duration,
        /// Why the last attempt failed.
        last: String,
    },
    /// The peer sent a frame that breaks the protocol, or an answer that does not fit the
    /// request.
    #[error("store protocol error during {op}: {message}")]
    Protocol {
        /// Operation in progress.
        op: &'static str,
        /// What was wrong.
        message: String,
    },
    /// An earlier failure (timeout or broken frame) left the stream out of step; every later
    /// call fails with this.
    #[error("store connection unusable after an earlier failure: {cause}")]
    Broken {
        /// The earlier failure.
        cause: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_up_waits_name_the_pe_and_what_it_had_not_published() {
        let after = Duration::from_millis(5000);
        let timeout = BootstrapError::Timeout {
            op: "get_fd",
            key: "heap/2".into(),
            after,
        };
        assert_eq!(
            timeout.to_string(),
            "store get_fd timed out after 5.0 s waiting for key 'heap/2'"
        );
        assert_eq!(
            timeout.unpublished(2, "its symmetric heap").to_string(),
            "PE 2 did not publish its symmetric heap within 5.0 s (the start-up timeout, \
             SHMEM_INIT_TIMEOUT): it has not called shmem_init, or is stuck or died before that \
             step"
        );
        let absent = BootstrapError::Absent {
            op: "allgather",
            rank: 3,
            after,
        };
        assert!(matches!(
            absent.unshared("its layout"),
            BootstrapError::NotPublished {
                rank: 3,
                what: "its layout",
                ..
            }
        ));
        let closed = BootstrapError::Closed { op: "get_fd" };
        assert!(matches!(
            closed.unpublished(1, "x"),
            BootstrapError::Closed { .. }
        ));
        let silent = BootstrapError::Timeout {
            op: "connect",
            key: String::new(),
            after,
        };
        assert_eq!(
            silent.to_string(),
            "the store did not answer connect within 5.0 s"
        );
    }
}
