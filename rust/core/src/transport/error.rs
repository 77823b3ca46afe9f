//! What a transport can fail with: the one error type of every transport, composed into the
//! runtime's error type (`Error::Transport`). It imports nothing but the segment names, so the
//! runtime's error type can hold it without depending on the transports themselves.

use super::segment::Segment;

/// What a transport can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The operation targets a PE this transport does not reach.
    #[error("PE {pe} is not reachable through the {transport} transport")]
    Unreachable {
        /// The transport.
        transport: &'static str,
        /// The PE.
        pe: usize,
    },
    /// The range lies outside the segment as the peer registered it.
    #[error("bytes [{offset}, {offset}+{len}) are outside PE {pe}'s {} of {size} bytes", segment.name())]
    OutOfRange {
        /// The PE.
        pe: usize,
        /// The segment.
        segment: Segment,
        /// The range's offset in the segment.
        offset: u64,
        /// The range's length.
        len: usize,
        /// The segment's size on that PE.
        size: usize,
    },
    /// The facade passed a value the table does not define (a segment, an operation, an
    /// element size).
    #[error("invalid argument {arg}={value}")]
    BadArgument {
        /// The argument's name.
        arg: &'static str,
        /// Its value.
        value: i64,
    },
    /// A peer's address or remote key does not describe what this transport expects.
    #[error("PE {pe}'s {what} is malformed: {why}")]
    BadPeerData {
        /// The PE.
        pe: usize,
        /// What it sent (`address`, `heap key`, ...).
        what: &'static str,
        /// Why it was refused.
        why: String,
    },
    /// A peer of a dynamic worker (not a PE of the job, so named by what it is: a worker
    /// address, a worker's label) sent an address or a reply this worker does not understand.
    #[error("{peer}'s {what} is malformed: {why}")]
    BadWorkerData {
        /// The peer, as far as it is known (`a peer` when its address did not say).
        peer: String,
        /// What it sent.
        what: &'static str,
        /// Why it was refused.
        why: String,
    },
    /// A transport's library could not be loaded (UCX's `libucp.so.0`).
    #[error("cannot load {library} ({why}): install {package} (apt-get install {package})")]
    NotLoaded {
        /// The file.
        library: String,
        /// The loader's reason.
        why: String,
        /// The Debian package that provides it.
        package: &'static str,
    },
    /// A call of the transport's library failed.
    #[error("{call}: {why}")]
    Library {
        /// The library's call, with the PE or segment it was about.
        call: String,
        /// The library's words for the failure.
        why: String,
    },
    /// The connection to a peer failed (its process died, or its node cannot be reached): the
    /// transport's library reported the failure on that peer's endpoint.
    #[error("lost the connection to PE {pe} ({why}): PE {pe} died or its node cannot be reached")]
    PeerFailed {
        /// The PE.
        pe: usize,
        /// The library's words for the failure.
        why: String,
    },
    /// An operation did not complete within the control timeout.
    #[error("{what} did not complete within {} s (SHMEM_INIT_TIMEOUT sets this bound)", after.as_secs_f64())]
    TimedOut {
        /// The operation and its PE.
        what: String,
        /// The bound.
        after: std::time::Duration,
    },
    /// The transport does not support this (an operation, a segment).
    #[error("the {transport} transport cannot {what}")]
    Unsupported {
        /// The transport.
        transport: &'static str,
        /// What was asked.
        what: &'static str,
    },
    /// A dynamic worker's operation found its endpoint disconnected (by this process, before
    /// or while the operation ran).
    #[error("{op} to {peer}: the endpoint was disconnected")]
    Disconnected {
        /// The operation (`put`, `get`, `flush`, ...).
        op: &'static str,
        /// The peer, as the endpoint names it.
        peer: String,
    },
    /// A dynamic worker's operation failed because its peer is gone: the peer's worker was
    /// dropped, its process died, or its node cannot be reached.
    #[error("{op} to {peer} failed: the peer is gone ({why})")]
    PeerGone {
        /// The operation.
        op: &'static str,
        /// The peer.
        peer: String,
        /// The library's (or the loopback's) words for the failure.
        why: String,
    },
    /// A remote key given to a dynamic worker's operation was refused: malformed, not the
    /// peer's, unregistered there, or the range lies outside its registration.
    #[error("{op} to {peer} with remote key {key}: {why}")]
    BadKey {
        /// The operation.
        op: &'static str,
        /// The peer.
        peer: String,
        /// The key, as [`crate::dynamic::key_name`] names it.
        key: String,
        /// Why it was refused.
        why: String,
    },
    /// A dynamic node worker was asked for what only UCX reaches (a member of another node,
    /// a member's private memory) and one of the two processes has no UCX worker: its
    /// `libucp.so.0` did not load, so its node worker runs over the loopback.
    #[error("{op} to {peer}: {what} is reached through UCX, which {why}")]
    NeedsUcx {
        /// The operation.
        op: &'static str,
        /// The peer.
        peer: String,
        /// What was to be reached (`a member of another node`, `private memory ...`).
        what: &'static str,
        /// Whose UCX is missing, and why (the loader's words and the package to install).
        why: String,
    },
    /// A dynamic worker's operation did not complete within the worker's timeout.
    #[error("{op} to {peer} did not complete within {} s (the dynamic worker's timeout)", after.as_secs_f64())]
    Deadline {
        /// The operation.
        op: &'static str,
        /// The peer.
        peer: String,
        /// The bound.
        after: std::time::Duration,
    },
}
