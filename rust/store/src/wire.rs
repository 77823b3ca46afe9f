//! Wire format of the control store: versioned, length-prefixed frames.
//!
//! Owns the byte layout of every request and reply, the size limits, and reading one whole
//! frame from any [`Read`] (a Unix socket, TCP, or TLS over TCP: see `crate::link`). Must never panic or
//! allocate more than [`MAX_FRAME_LEN`] on hostile input, and never knows about sockets, file
//! descriptors (they travel beside a frame, see `crate::unix`) or the store's state.
//!
//! A frame is `u32 LE length | u8 op | payload`, where `length` counts the op byte and the
//! payload. Inside a payload a key is `u16 LE length | UTF-8 bytes`, integers are little endian,
//! and a value or message is "the rest of the frame". Every connection starts with HELLO.

use std::io::{self, Read};

/// Version spoken by this build; HELLO carries it and both ends must agree.
/// Version 2 added the job id to HELLO, and CAS, APPEND and DELETE_PREFIX; version 3 added
/// GATHER and GATHER_FD, which read one key per PE in one round trip; version 4 added
/// WATCH, the group requests (GROUP_JOIN, GROUP_LEAVE, GROUP_OWN, GROUP_WATCH, GROUP_CHANGE)
/// and HELLOs of clients that hold no PE's place ([`NO_RANK`]).
pub const PROTOCOL_VERSION: u32 = 4;
/// Rank a HELLO names for a client that is no PE of a job: a process that only uses the
/// store (its groups, its keys), as the processes of groups whose members come and go do. It
/// names `n_pes` 0 too.
pub const NO_RANK: u32 = u32::MAX;
/// Most events one GROUP_WATCH reply carries; a watcher further behind is told which it
/// missed (see [`GroupView::first`]).
pub const MAX_GROUP_EVENTS: usize = 32;
/// First bytes of a HELLO payload, so a stray peer is told apart from an old version.
pub const HELLO_MAGIC: [u8; 4] = *b"SHKV";
/// Longest key, in bytes.
pub const MAX_KEY_LEN: usize = 1024;
/// Longest value, in bytes.
pub const MAX_VALUE_LEN: usize = 16 << 20;
/// Largest value of a frame's length field (op byte plus payload).
pub const MAX_FRAME_LEN: usize = 17 << 20;
/// Longest error message a reply carries; longer ones are cut.
const MAX_MESSAGE_LEN: usize = 4096;
/// Largest length field of a HELLO frame (op byte, magic, three integers and a job id of at
/// most [`MAX_KEY_LEN`] bytes): a store takes no larger frame from a connection before HELLO.
pub const MAX_HELLO_FRAME_LEN: usize = 1 + 4 + 12 + 2 + MAX_KEY_LEN;
/// Words that start a store's refusal of a connection it has no room for: the PE tries
/// again, where any other refusal is final.
pub const STORE_FULL: &str = "store full";
/// What the store's refusal of a HELLO for a PE whose place another connection holds says:
/// the store is this job's, so a PE trying a range of ports stops there.
pub const PLACE_TAKEN: &str = "place in this job is taken";

/// Most keys one GATHER or GATHER_FD may name (the job sizes a store serves fit it).
pub const MAX_GATHER_COUNT: u32 = 1 << 20;
/// Most descriptors sent with one `sendmsg` of a FDS reply; a receiver's buffer has room for
/// this many per read.
pub const FDS_PER_SEND: usize = 64;
/// Words that start a store's refusal of a GATHER whose reply would not fit one frame: the
/// client then reads the keys one by one.
pub const GATHER_TOO_LARGE: &str = "gathered values do not fit one frame";

/// The reason a store gives for refusing a GROUP_JOIN whose member id a member of the group
/// holds already (rank `rank`); [`member_id_held_rank`] reads it back.
pub fn member_id_held(member: &str, rank: u32) -> String {
    format!("member id '{member}' holds rank {rank} already")
}

/// The rank of a refusal made of [`member_id_held`] for `member` (the end of the store's
/// message); `None` for any other refusal.
pub fn member_id_held_rank(message: &str, member: &str) -> Option<u32> {
    let head = format!("member id '{member}' holds rank ");
    let at = message.rfind(&head)?;
    message[at + head.len()..]
        .strip_suffix(" already")?
        .parse()
        .ok()
}

/// Size of the length prefix.
const HEADER_LEN: usize = 4;

mod op {
    pub const HELLO: u8 = 0x01;
    pub const SET: u8 = 0x02;
    pub const GET: u8 = 0x03;
    pub const ADD: u8 = 0x04;
    pub const DELETE: u8 = 0x05;
    pub const PUT_FD: u8 = 0x06;
    pub const GET_FD: u8 = 0x07;
    pub const ABORT: u8 = 0x08;
    pub const BYE: u8 = 0x09;
    pub const CAS: u8 = 0x0a;
    pub const APPEND: u8 = 0x0b;
    pub const DELETE_PREFIX: u8 = 0x0c;
    pub const GATHER: u8 = 0x0d;
    pub const GATHER_FD: u8 = 0x0e;
    pub const WATCH: u8 = 0x0f;
    pub const GROUP_JOIN: u8 = 0x10;
    pub const GROUP_LEAVE: u8 = 0x11;
    pub const GROUP_OWN: u8 = 0x12;
    pub const GROUP_WATCH: u8 = 0x13;
    pub const GROUP_CHANGE: u8 = 0x14;

    pub const HELLO_ACK: u8 = 0x81;
    pub const OK: u8 = 0x82;
    pub const VALUE: u8 = 0x83;
    pub const COUNTER: u8 = 0x84;
    pub const FD: u8 = 0x85;
    pub const TIMEOUT: u8 = 0x86;
    pub const ERROR: u8 = 0x87;
    pub const SWAPPED: u8 = 0x88;
    pub const VALUES: u8 = 0x89;
    pub const FDS: u8 = 0x8a;
    pub const MISSING: u8 = 0x8b;
    pub const WATCHED: u8 = 0x8c;
    pub const GROUP: u8 = 0x8d;
}

/// A frame sent by a PE to the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// First frame of every connection. Layout: magic, version, rank, n_pes (u32 each after
    /// the magic), then (version 2) the job id as a key that may be empty; bytes after them
    /// are reserved for later versions and ignored.
    Hello {
        /// Protocol version of the client.
        version: u32,
        /// Rank of the PE speaking.
        rank: u32,
        /// Job size as the PE sees it.
        n_pes: u32,
        /// Job the PE belongs to ("" when it does not know); a store serving another job
        /// refuses it.
        job: String,
    },
    /// Store `value` under `key` (replaces any previous value). Layout: key, value.
    Set {
        /// Key.
        key: String,
        /// Value, at most [`MAX_VALUE_LEN`] bytes.
        value: Vec<u8>,
    },
    /// Wait up to `timeout_ms` for `key`, answer its value. Layout: key, u64 timeout_ms.
    Get {
        /// Key.
        key: String,
        /// How long the server waits for the key to appear.
        timeout_ms: u64,
    },
    /// Add `delta` to the counter under `key` (missing = 0), answer the new value.
    /// Layout: key, i64 delta. A counter is stored as 8 LE bytes.
    Add {
        /// Key.
        key: String,
        /// Signed increment.
        delta: i64,
    },
    /// Remove `key` (absent keys are fine). Layout: key.
    Delete {
        /// Key.
        key: String,
    },
    /// Store the file descriptor sent beside this frame under `key`. Layout: key.
    PutFd {
        /// Key.
        key: String,
    },
    /// Wait up to `timeout_ms` for an fd under `key`; the reply carries it. Layout as GET.
    GetFd {
        /// Key.
        key: String,
        /// How long the server waits for the key to appear.
        timeout_ms: u64,
    },
    /// Global exit: the launcher stops the job with `status`. Layout: i32, then the byte 1 when
    /// the library itself stops the job after an error it reported (nothing for a call of
    /// `shmem_global_exit`). No reply.
    Abort {
        /// Exit status for the whole job.
        status: i32,
        /// The library stopped the job after an error, rather than the program calling
        /// `shmem_global_exit`.
        after_error: bool,
    },
    /// Goodbye sent by finalize; EOF after it is a clean exit. Empty payload.
    Bye,
    /// Compare and swap: if the value under `key` is `expected` (`None`: the key is absent),
    /// store `desired`. Answered with SWAPPED. Layout: key, u32 expected length
    /// (`u32::MAX` for absent), expected bytes, desired bytes (rest of the frame).
    Cas {
        /// Key.
        key: String,
        /// Value the key must hold for the swap, or `None` for "absent".
        expected: Option<Vec<u8>>,
        /// Value stored on a match.
        desired: Vec<u8>,
    },
    /// Append `value` to the bytes under `key` (missing = empty); answered with COUNTER, the
    /// new length. Layout: key, value.
    Append {
        /// Key.
        key: String,
        /// Bytes to append.
        value: Vec<u8>,
    },
    /// Remove every key starting with `prefix`; answered with COUNTER, the number removed.
    /// Layout: key (the prefix).
    DeletePrefix {
        /// Prefix of the keys to remove.
        prefix: String,
    },
    /// Wait up to `timeout_ms` until the keys `prefix0` .. `prefix{count-1}` (the prefix then
    /// the decimal index) all hold values; answered with VALUES, in index order, or with
    /// MISSING, naming the indices still absent at the timeout. Layout: key (the prefix), u32
    /// count, u64 timeout_ms.
    Gather {
        /// Prefix of the keys.
        prefix: String,
        /// How many keys, at most [`MAX_GATHER_COUNT`].
        count: u32,
        /// How long the server waits for the last of them.
        timeout_ms: u64,
    },
    /// As GATHER, for keys that hold descriptors (PUT_FD); answered with FDS, whose
    /// descriptors travel beside it in index order, or with MISSING. Unix links only.
    GatherFd {
        /// Prefix of the keys.
        prefix: String,
        /// How many keys, at most [`MAX_GATHER_COUNT`].
        count: u32,
        /// How long the server waits for the last of them.
        timeout_ms: u64,
    },
    /// Wait up to `timeout_ms` until `key` holds something other than `seen` (`None`: until
    /// it exists); answered with WATCHED, what it holds then, or TIMEOUT. Layout: key, u64
    /// timeout_ms, u8 1 when `seen` follows (0: none), then `seen` (rest of the frame).
    Watch {
        /// Key.
        key: String,
        /// The value the caller knows (`None`: the key is absent as far as it knows).
        seen: Option<Vec<u8>>,
        /// How long the server waits for a change.
        timeout_ms: u64,
    },
    /// Join `group` as `member`, holding rank `rank` (`None`: the store picks one, see
    /// [`Request::GroupJoin::rank`]). The group is made by its first join with `size` and
    /// `drop_owned`; later joins must name the same size. Every request of this connection
    /// counts as its heartbeat: one not heard from for `loss_ms` is reported down, and so is
    /// one whose connection ends. Answered with COUNTER, the rank. Layout: key group, key
    /// member, u32 size, u32 rank (`u32::MAX`: the store picks), u64 loss_ms, u8 1 when the
    /// keys a member owns go with it (0: they stay).
    GroupJoin {
        /// Group name.
        group: String,
        /// The member's id, unique in the group (for example its `ip:port`).
        member: String,
        /// Most members the group holds at once; its ranks are `0..size`.
        size: u32,
        /// The rank asked for; `None`: the lowest free rank at or after the group's cursor,
        /// which then moves past it (ranks asked for are skipped).
        rank: Option<u32>,
        /// How long a member may stay silent before it is reported down, in milliseconds.
        loss_ms: u64,
        /// Whether the keys a member owns ([`Request::GroupOwn`]) are removed when it leaves
        /// or is reported down.
        drop_owned: bool,
    },
    /// Leave `group` (the member this connection joined as). Answered with OK. Layout: key.
    GroupLeave {
        /// Group name.
        group: String,
    },
    /// Record `key` as owned by this connection's member of `group`. Answered with OK.
    /// Layout: key group, key.
    GroupOwn {
        /// Group name.
        group: String,
        /// The key owned.
        key: String,
    },
    /// Wait up to `timeout_ms` for events of `group` later than `after`; answered with GROUP
    /// (at once when there are some, else at the timeout, with none). Layout: key group, u64
    /// after, u64 timeout_ms.
    GroupWatch {
        /// Group name.
        group: String,
        /// Sequence number of the last event seen (0: none).
        after: u64,
        /// How long the server waits for an event.
        timeout_ms: u64,
    },
    /// Begin (`begin`) or end a membership change of `group`: a compare-and-swap of the
    /// group's event key ([`group_event_key`]) from absent to `tag`, or from `tag` to absent.
    /// A change begun is reported to the group's watchers with the ranks of the members then
    /// (every one of them takes part); if the member that began it goes, the key is reset.
    /// Answered with SWAPPED. Layout: key group, u8 1 to begin (0 to end), key tag.
    GroupChange {
        /// Group name.
        group: String,
        /// Whether the change begins (else it ends).
        begin: bool,
        /// What the change is, unique among the group's changes (the event key's value).
        tag: String,
    },
}

/// The store key whose value is the membership change `group` is going through (absent
/// when none): see [`Request::GroupChange`].
pub fn group_event_key(group: &str) -> String {
    format!("shmem/group/{group}/event")
}

/// What happened in a group, as [`GroupEvent::kind`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupEventKind {
    /// The member joined with its rank.
    Joined,
    /// The member left.
    Left,
    /// The member's connection ended, or it was not heard from within its bound: it is gone;
    /// the event's detail says which.
    Down,
    /// The member began a membership change (detail: its tag; ranks: the members taking
    /// part).
    ChangeBegun,
    /// The change whose tag the detail holds ended (by the member that began it, or because
    /// it went).
    ChangeEnded,
}

impl GroupEventKind {
    fn code(self) -> u8 {
        match self {
            GroupEventKind::Joined => 1,
            GroupEventKind::Left => 2,
            GroupEventKind::Down => 3,
            GroupEventKind::ChangeBegun => 4,
            GroupEventKind::ChangeEnded => 5,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            1 => GroupEventKind::Joined,
            2 => GroupEventKind::Left,
            3 => GroupEventKind::Down,
            4 => GroupEventKind::ChangeBegun,
            5 => GroupEventKind::ChangeEnded,
            _ => return None,
        })
    }
}

/// One event of a group, numbered in the order the store saw them (numbers grow across all
/// groups of a store and are never reused).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupEvent {
    /// Its number.
    pub seq: u64,
    /// What happened.
    pub kind: GroupEventKind,
    /// The member's rank.
    pub rank: u32,
    /// The member's id.
    pub member: String,
    /// Why a member is down, or a change's tag; else empty.
    pub detail: String,
    /// Ranks taking part in a change begun; else empty.
    pub ranks: Vec<u32>,
}

/// A group as GROUP_WATCH sees it: its members now and its events after the watcher's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupView {
    /// Number of the group's latest event (0: none).
    pub last: u64,
    /// Number of the oldest event the store still keeps for the group: a watcher that asked
    /// for events after an older one missed those between.
    pub first: u64,
    /// Members now, as (rank, id), by rank.
    pub members: Vec<(u32, String)>,
    /// Events after the watcher's, oldest first, at most [`MAX_GROUP_EVENTS`].
    pub events: Vec<GroupEvent>,
}

/// A frame sent by the store to a PE, answering the request before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Answer to HELLO. Layout: u32 version, u32 n_pes; later bytes ignored.
    HelloAck {
        /// Protocol version of the server.
        version: u32,
        /// Job size as the server sees it.
        n_pes: u32,
    },
    /// Done (SET, DELETE, PUT_FD, BYE). Empty payload.
    Ok,
    /// Answer to GET: the value (rest of the frame).
    Value(Vec<u8>),
    /// Answer to ADD: the counter after the addition. Layout: i64.
    Counter(i64),
    /// Answer to GET_FD: the descriptor travels beside this frame. Empty payload.
    Fd,
    /// A GET or GET_FD waited its whole timeout without the key appearing. Empty payload.
    Timeout,
    /// The server refused the request; UTF-8 message (rest of the frame).
    Error(String),
    /// Answer to CAS. Layout: u8 flags (bit 0: swapped, bit 1: the key exists), then the value
    /// the key holds now (rest of the frame; empty when absent).
    Swapped {
        /// The swap happened.
        swapped: bool,
        /// What the key holds after the request (`None`: absent).
        current: Option<Vec<u8>>,
    },
    /// Answer to GATHER: every value in index order. Layout: u32 count, then per value u32
    /// length and its bytes.
    Values(Vec<Vec<u8>>),
    /// Answer to GATHER_FD: `count` descriptors travel beside the frame, in index order.
    /// Layout: u32 count, then one zero byte per descriptor (each `sendmsg` needs bytes to
    /// carry its descriptors, at most [`FDS_PER_SEND`] of them).
    Fds(u32),
    /// A GATHER or GATHER_FD waited its whole timeout: the indices still absent, ascending.
    /// Layout: u32 count, then the indices (u32 each).
    Missing(Vec<u32>),
    /// Answer to WATCH: what the key holds now (`None`: absent). Layout: u8 1 when a value
    /// follows (0: absent), then the value (rest of the frame).
    Watched(Option<Vec<u8>>),
    /// Answer to GROUP_WATCH. Layout: u64 last, u64 first, u32 member count, per member u32
    /// rank and its id as a key; u32 event count, per event u64 seq, u8 kind (1 joined, 2
    /// left, 3 down, 4 change begun, 5 change ended), u32 rank, member id as a key, detail as
    /// a key that may be empty, u32 rank count and the ranks (u32 each).
    Group(GroupView),
}

/// Why a frame could not be read, encoded or decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The peer closed the stream cleanly between two frames.
    #[error("connection closed")]
    Closed,
    /// The stream ended inside a frame.
    #[error("connection closed inside a frame ({got} of {want} bytes read)")]
    Truncated {
        /// Bytes of the frame read before the end.
        got: usize,
        /// Bytes the frame should have had.
        want: usize,
    },
    /// A frame's length field is zero or above [`MAX_FRAME_LEN`].
    #[error("frame length {0} out of range (1..={MAX_FRAME_LEN})")]
    BadLength(u32),
    /// The op byte names no known operation (or a reply where a request was due, or back).
    #[error("unknown op code {0:#04x}")]
    UnknownOp(u8),
    /// The payload does not match its op's layout.
    #[error("malformed {op} frame: {why}")]
    Malformed {
        /// Operation whose payload was wrong.
        op: &'static str,
        /// What was wrong.
        why: String,
    },
    /// Something to send breaks a limit (key or value too long, empty key).
    #[error("{what} is {len} bytes, limit {max}")]
    Limit {
        /// What was too long.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The empty string was given as a key.
    #[error("empty key")]
    EmptyKey,
    /// A read hit the socket's timeout; `partial` says whether part of a frame was consumed
    /// (then the stream is out of step and must be dropped).
    #[error("timed out reading a frame{}", if *partial { " (frame cut short)" } else { "" })]
    TimedOut {
        /// Whether some bytes of the frame had already been read.
        partial: bool,
    },
    /// Any other I/O error of the underlying stream.
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
}

/// Checks a key against the protocol's rules (non-empty, at most [`MAX_KEY_LEN`] bytes).
pub fn check_key(key: &str) -> Result<(), WireError> {
    if key.is_empty() {
        return Err(WireError::EmptyKey);
    }
    if key.len() > MAX_KEY_LEN {
        return Err(WireError::Limit {
            what: "key",
            len: key.len(),
            max: MAX_KEY_LEN,
        });
    }
    Ok(())
}

/// Checks a value's length against [`MAX_VALUE_LEN`].
pub fn check_value(value: &[u8]) -> Result<(), WireError> {
    if value.len() > MAX_VALUE_LEN {
        return Err(WireError::Limit {
            what: "value",
            len: value.len(),
            max: MAX_VALUE_LEN,
        });
    }
    Ok(())
}

/// Builds one frame: reserves the header, lets the caller append the payload, then fills in
/// the length.
struct FrameBuilder(Vec<u8>);

impl FrameBuilder {
    fn new(op: u8, payload_hint: usize) -> Self {
        let mut buf = Vec::with_capacity(HEADER_LEN + 1 + payload_hint);
        buf.extend_from_slice(&[0; HEADER_LEN]);
        buf.push(op);
        FrameBuilder(buf)
    }

    fn key(mut self, key: &str) -> Result<Self, WireError> {
        check_key(key)?;
        // check_key bounds the length by MAX_KEY_LEN (1024), which fits in u16.
        let len = key.len() as u16;
        self.0.extend_from_slice(&len.to_le_bytes());
        self.0.extend_from_slice(key.as_bytes());
        Ok(self)
    }

    /// A string laid out as a key that may be empty (a detail, a reason).
    fn text(mut self, text: &str) -> Result<Self, WireError> {
        if text.is_empty() {
            self.0.extend_from_slice(&0u16.to_le_bytes());
            return Ok(self);
        }
        self.key(text)
    }

    fn u8(self, byte: u8) -> Self {
        self.bytes(&[byte])
    }

    fn bytes(mut self, bytes: &[u8]) -> Self {
        self.0.extend_from_slice(bytes);
        self
    }

    fn finish(mut self) -> Vec<u8> {
        // Every frame built here is at most 1 + 2 + MAX_KEY_LEN + MAX_VALUE_LEN (or + 16 bytes of
        // integers, or + MAX_MESSAGE_LEN) long, far below u32::MAX and MAX_FRAME_LEN.
        let len = (self.0.len() - HEADER_LEN) as u32;
        self.0[..HEADER_LEN].copy_from_slice(&len.to_le_bytes());
        self.0
    }
}

impl Request {
    /// Name of the operation, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Request::Hello { .. } => "HELLO",
            Request::Set { .. } => "SET",
            Request::Get { .. } => "GET",
            Request::Add { .. } => "ADD",
            Request::Delete { .. } => "DELETE",
            Request::PutFd { .. } => "PUT_FD",
            Request::GetFd { .. } => "GET_FD",
            Request::Abort { .. } => "ABORT",
            Request::Bye => "BYE",
            Request::Cas { .. } => "CAS",
            Request::Append { .. } => "APPEND",
            Request::DeletePrefix { .. } => "DELETE_PREFIX",
            Request::Gather { .. } => "GATHER",
            Request::GatherFd { .. } => "GATHER_FD",
            Request::Watch { .. } => "WATCH",
            Request::GroupJoin { .. } => "GROUP_JOIN",
            Request::GroupLeave { .. } => "GROUP_LEAVE",
            Request::GroupOwn { .. } => "GROUP_OWN",
            Request::GroupWatch { .. } => "GROUP_WATCH",
            Request::GroupChange { .. } => "GROUP_CHANGE",
        }
    }

    /// Encodes the whole frame, header included. Fails only on a key or value over its limit.
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        Ok(match self {
            Request::Hello {
                version,
                rank,
                n_pes,
                job,
            } => {
                if job.len() > MAX_KEY_LEN {
                    return Err(WireError::Limit {
                        what: "job id",
                        len: job.len(),
                        max: MAX_KEY_LEN,
                    });
                }
                FrameBuilder::new(op::HELLO, 18 + job.len())
                    .bytes(&HELLO_MAGIC)
                    .bytes(&version.to_le_bytes())
                    .bytes(&rank.to_le_bytes())
                    .bytes(&n_pes.to_le_bytes())
                    // Bounded by MAX_KEY_LEN above, so it fits in u16.
                    .bytes(&(job.len() as u16).to_le_bytes())
                    .bytes(job.as_bytes())
                    .finish()
            }
            Request::Set { key, value } => {
                check_value(value)?;
                FrameBuilder::new(op::SET, 2 + key.len() + value.len())
                    .key(key)?
                    .bytes(value)
                    .finish()
            }
            Request::Get { key, timeout_ms } => FrameBuilder::new(op::GET, 10 + key.len())
                .key(key)?
                .bytes(&timeout_ms.to_le_bytes())
                .finish(),
            Request::Add { key, delta } => FrameBuilder::new(op::ADD, 10 + key.len())
                .key(key)?
                .bytes(&delta.to_le_bytes())
                .finish(),
            Request::Delete { key } => FrameBuilder::new(op::DELETE, 2 + key.len())
                .key(key)?
                .finish(),
            Request::PutFd { key } => FrameBuilder::new(op::PUT_FD, 2 + key.len())
                .key(key)?
                .finish(),
            Request::GetFd { key, timeout_ms } => FrameBuilder::new(op::GET_FD, 10 + key.len())
                .key(key)?
                .bytes(&timeout_ms.to_le_bytes())
                .finish(),
            Request::Abort {
                status,
                after_error,
            } => FrameBuilder::new(op::ABORT, 5)
                .bytes(&status.to_le_bytes())
                .bytes(if *after_error { &[1u8][..] } else { &[] })
                .finish(),
            Request::Bye => FrameBuilder::new(op::BYE, 0).finish(),
            Request::Cas {
                key,
                expected,
                desired,
            } => {
                let exp = expected.as_deref().unwrap_or_default();
                check_value(exp)?;
                check_value(desired)?;
                // Both are at most MAX_VALUE_LEN (16 MiB): the length fits in u32 and is never
                // the u32::MAX that means "absent". Both together may exceed one value's limit
                // but stay below MAX_FRAME_LEN only if they fit it, so check that too.
                let len = expected.as_ref().map_or(u32::MAX, |e| e.len() as u32);
                if exp.len() + desired.len() > MAX_VALUE_LEN {
                    return Err(WireError::Limit {
                        what: "expected and desired values together",
                        len: exp.len() + desired.len(),
                        max: MAX_VALUE_LEN,
                    });
                }
                FrameBuilder::new(op::CAS, 6 + key.len() + exp.len() + desired.len())
                    .key(key)?
                    .bytes(&len.to_le_bytes())
                    .bytes(exp)
                    .bytes(desired)
                    .finish()
            }
            Request::Append { key, value } => {
                check_value(value)?;
                FrameBuilder::new(op::APPEND, 2 + key.len() + value.len())
                    .key(key)?
                    .bytes(value)
                    .finish()
            }
            Request::DeletePrefix { prefix } => {
                FrameBuilder::new(op::DELETE_PREFIX, 2 + prefix.len())
                    .key(prefix)?
                    .finish()
            }
            Request::Gather {
                prefix,
                count,
                timeout_ms,
            }
            | Request::GatherFd {
                prefix,
                count,
                timeout_ms,
            } => {
                check_gather_count(*count)?;
                let code = match self {
                    Request::Gather { .. } => op::GATHER,
                    _ => op::GATHER_FD,
                };
                FrameBuilder::new(code, 14 + prefix.len())
                    .key(prefix)?
                    .bytes(&count.to_le_bytes())
                    .bytes(&timeout_ms.to_le_bytes())
                    .finish()
            }
            Request::Watch {
                key,
                seen,
                timeout_ms,
            } => {
                let value = seen.as_deref().unwrap_or_default();
                check_value(value)?;
                FrameBuilder::new(op::WATCH, 11 + key.len() + value.len())
                    .key(key)?
                    .bytes(&timeout_ms.to_le_bytes())
                    .u8(u8::from(seen.is_some()))
                    .bytes(value)
                    .finish()
            }
            Request::GroupJoin {
                group,
                member,
                size,
                rank,
                loss_ms,
                drop_owned,
            } => FrameBuilder::new(op::GROUP_JOIN, 21 + group.len() + member.len())
                .key(group)?
                .key(member)?
                .bytes(&size.to_le_bytes())
                .bytes(&rank.unwrap_or(u32::MAX).to_le_bytes())
                .bytes(&loss_ms.to_le_bytes())
                .u8(u8::from(*drop_owned))
                .finish(),
            Request::GroupLeave { group } => FrameBuilder::new(op::GROUP_LEAVE, 2 + group.len())
                .key(group)?
                .finish(),
            Request::GroupOwn { group, key } => {
                FrameBuilder::new(op::GROUP_OWN, 4 + group.len() + key.len())
                    .key(group)?
                    .key(key)?
                    .finish()
            }
            Request::GroupWatch {
                group,
                after,
                timeout_ms,
            } => FrameBuilder::new(op::GROUP_WATCH, 18 + group.len())
                .key(group)?
                .bytes(&after.to_le_bytes())
                .bytes(&timeout_ms.to_le_bytes())
                .finish(),
            Request::GroupChange { group, begin, tag } => {
                FrameBuilder::new(op::GROUP_CHANGE, 5 + group.len() + tag.len())
                    .key(group)?
                    .u8(u8::from(*begin))
                    .key(tag)?
                    .finish()
            }
        })
    }

    /// Decodes a request frame (as returned by [`read_frame`]).
    pub fn from_frame(frame: &Frame) -> Result<Request, WireError> {
        Request::decode(frame.op(), frame.payload())
    }

    /// Decodes a request from its op byte and payload.
    pub fn decode(op: u8, payload: &[u8]) -> Result<Request, WireError> {
        let name = match op {
            op::HELLO => "HELLO",
            op::SET => "SET",
            op::GET => "GET",
            op::ADD => "ADD",
            op::DELETE => "DELETE",
            op::PUT_FD => "PUT_FD",
            op::GET_FD => "GET_FD",
            op::ABORT => "ABORT",
            op::BYE => "BYE",
            op::CAS => "CAS",
            op::APPEND => "APPEND",
            op::DELETE_PREFIX => "DELETE_PREFIX",
            op::GATHER => "GATHER",
            op::GATHER_FD => "GATHER_FD",
            op::WATCH => "WATCH",
            op::GROUP_JOIN => "GROUP_JOIN",
            op::GROUP_LEAVE => "GROUP_LEAVE",
            op::GROUP_OWN => "GROUP_OWN",
            op::GROUP_WATCH => "GROUP_WATCH",
            op::GROUP_CHANGE => "GROUP_CHANGE",
            other => return Err(WireError::UnknownOp(other)),
        };
        let mut c = Cursor::new(name, payload);
        let req = match op {
            op::HELLO => {
                let magic = c.take(4)?;
                if magic != HELLO_MAGIC {
                    return Err(c.malformed("bad magic: not a shmem store peer"));
                }
                let (version, rank, n_pes) = (c.u32()?, c.u32()?, c.u32()?);
                // Version 1 ends here; a version-1 peer is told apart by its version number.
                let job = if c.rest.is_empty() {
                    String::new()
                } else {
                    c.text(true)?
                };
                // Later versions may append fields; they are not ours to judge.
                return Ok(Request::Hello {
                    version,
                    rank,
                    n_pes,
                    job,
                });
            }
            op::SET => Request::Set {
                key: c.key()?,
                value: c.value()?,
            },
            op::CAS => {
                let key = c.key()?;
                let len = c.u32()?;
                let expected = if len == u32::MAX {
                    None
                } else {
                    if len as usize > MAX_VALUE_LEN {
                        return Err(c.malformed(format!(
                            "expected value is {len} bytes, limit {MAX_VALUE_LEN}"
                        )));
                    }
                    Some(c.take(len as usize)?.to_vec())
                };
                Request::Cas {
                    key,
                    expected,
                    desired: c.value()?,
                }
            }
            op::APPEND => Request::Append {
                key: c.key()?,
                value: c.value()?,
            },
            op::DELETE_PREFIX => Request::DeletePrefix { prefix: c.key()? },
            op::GATHER | op::GATHER_FD => {
                let prefix = c.key()?;
                let count = c.u32()?;
                if count > MAX_GATHER_COUNT {
                    return Err(c.malformed(format!("{count} keys, limit {MAX_GATHER_COUNT}")));
                }
                let timeout_ms = c.u64()?;
                if op == op::GATHER {
                    Request::Gather {
                        prefix,
                        count,
                        timeout_ms,
                    }
                } else {
                    Request::GatherFd {
                        prefix,
                        count,
                        timeout_ms,
                    }
                }
            }
            op::GET => Request::Get {
                key: c.key()?,
                timeout_ms: c.u64()?,
            },
            op::WATCH => {
                let key = c.key()?;
                let timeout_ms = c.u64()?;
                let present = c.flag()?;
                let value = c.value()?;
                if !present && !value.is_empty() {
                    return Err(c.malformed("a value after the flag that says none follows"));
                }
                Request::Watch {
                    key,
                    seen: present.then_some(value),
                    timeout_ms,
                }
            }
            op::GROUP_JOIN => {
                let (group, member) = (c.key()?, c.key()?);
                let size = c.u32()?;
                let rank = c.u32()?;
                Request::GroupJoin {
                    group,
                    member,
                    size,
                    rank: (rank != u32::MAX).then_some(rank),
                    loss_ms: c.u64()?,
                    drop_owned: c.flag()?,
                }
            }
            op::GROUP_LEAVE => Request::GroupLeave { group: c.key()? },
            op::GROUP_OWN => Request::GroupOwn {
                group: c.key()?,
                key: c.key()?,
            },
            op::GROUP_WATCH => Request::GroupWatch {
                group: c.key()?,
                after: c.u64()?,
                timeout_ms: c.u64()?,
            },
            op::GROUP_CHANGE => Request::GroupChange {
                group: c.key()?,
                begin: c.flag()?,
                tag: c.key()?,
            },
            op::ADD => Request::Add {
                key: c.key()?,
                delta: c.u64()? as i64,
            },
            op::DELETE => Request::Delete { key: c.key()? },
            op::PUT_FD => Request::PutFd { key: c.key()? },
            op::GET_FD => Request::GetFd {
                key: c.key()?,
                timeout_ms: c.u64()?,
            },
            op::ABORT => {
                let status = c.u32()? as i32;
                let after_error = match c.rest() {
                    [] => false,
                    [1] => true,
                    other => {
                        return Err(c.malformed(format!(
                            "ABORT ends with {} bytes, not the after-error flag",
                            other.len()
                        )))
                    }
                };
                Request::Abort {
                    status,
                    after_error,
                }
            }
            _ => Request::Bye,
        };
        c.finish()?;
        Ok(req)
    }
}

impl Reply {
    /// Name of the reply, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Reply::HelloAck { .. } => "HELLO_ACK",
            Reply::Ok => "OK",
            Reply::Value(_) => "VALUE",
            Reply::Counter(_) => "COUNTER",
            Reply::Fd => "FD",
            Reply::Timeout => "TIMEOUT",
            Reply::Error(_) => "ERROR",
            Reply::Swapped { .. } => "SWAPPED",
            Reply::Values(_) => "VALUES",
            Reply::Fds(_) => "FDS",
            Reply::Missing(_) => "MISSING",
            Reply::Watched(_) => "WATCHED",
            Reply::Group(_) => "GROUP",
        }
    }

    /// Encodes the whole frame, header included. Fails only on a value over its limit; an
    /// error message over 4 KiB is cut (at a character boundary) rather than refused.
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        Ok(match self {
            Reply::HelloAck { version, n_pes } => FrameBuilder::new(op::HELLO_ACK, 8)
                .bytes(&version.to_le_bytes())
                .bytes(&n_pes.to_le_bytes())
                .finish(),
            Reply::Ok => FrameBuilder::new(op::OK, 0).finish(),
            Reply::Value(value) => {
                check_value(value)?;
                FrameBuilder::new(op::VALUE, value.len())
                    .bytes(value)
                    .finish()
            }
            Reply::Counter(v) => FrameBuilder::new(op::COUNTER, 8)
                .bytes(&v.to_le_bytes())
                .finish(),
            Reply::Fd => FrameBuilder::new(op::FD, 0).finish(),
            Reply::Timeout => FrameBuilder::new(op::TIMEOUT, 0).finish(),
            Reply::Error(msg) => {
                let mut end = msg.len().min(MAX_MESSAGE_LEN);
                while !msg.is_char_boundary(end) {
                    end -= 1;
                }
                FrameBuilder::new(op::ERROR, end)
                    .bytes(&msg.as_bytes()[..end])
                    .finish()
            }
            Reply::Swapped { swapped, current } => {
                let value = current.as_deref().unwrap_or_default();
                check_value(value)?;
                let flags = u8::from(*swapped) | u8::from(current.is_some()) << 1;
                FrameBuilder::new(op::SWAPPED, 1 + value.len())
                    .bytes(&[flags])
                    .bytes(value)
                    .finish()
            }
            Reply::Values(values) => {
                let mut frame = values_reply_head(values.iter().map(Vec::len))?;
                for v in values {
                    frame.extend_from_slice(&(v.len() as u32).to_le_bytes());
                    frame.extend_from_slice(v);
                }
                frame
            }
            Reply::Fds(n) => {
                check_gather_count(*n)?;
                let mut frame = fds_reply_head(*n);
                frame.resize(frame.len() + *n as usize, 0);
                frame
            }
            Reply::Missing(indices) => {
                // Callers list indices of one gather, so at most MAX_GATHER_COUNT of them.
                check_gather_count(indices.len().try_into().unwrap_or(u32::MAX))?;
                let mut b = FrameBuilder::new(op::MISSING, 4 + 4 * indices.len())
                    .bytes(&(indices.len() as u32).to_le_bytes());
                for i in indices {
                    b = b.bytes(&i.to_le_bytes());
                }
                b.finish()
            }
            Reply::Watched(current) => {
                let value = current.as_deref().unwrap_or_default();
                check_value(value)?;
                FrameBuilder::new(op::WATCHED, 1 + value.len())
                    .u8(u8::from(current.is_some()))
                    .bytes(value)
                    .finish()
            }
            Reply::Group(view) => encode_group_view(view)?,
        })
    }

    /// Decodes a reply frame (as returned by [`read_frame`]).
    pub fn from_frame(frame: &Frame) -> Result<Reply, WireError> {
        Reply::decode(frame.op(), frame.payload())
    }

    /// Decodes a reply from its op byte and payload.
    pub fn decode(op: u8, payload: &[u8]) -> Result<Reply, WireError> {
        let name = match op {
            op::HELLO_ACK => "HELLO_ACK",
            op::OK => "OK",
            op::VALUE => "VALUE",
            op::COUNTER => "COUNTER",
            op::FD => "FD",
            op::TIMEOUT => "TIMEOUT",
            op::ERROR => "ERROR",
            op::SWAPPED => "SWAPPED",
            op::VALUES => "VALUES",
            op::FDS => "FDS",
            op::MISSING => "MISSING",
            op::WATCHED => "WATCHED",
            op::GROUP => "GROUP",
            other => return Err(WireError::UnknownOp(other)),
        };
        let mut c = Cursor::new(name, payload);
        let reply = match op {
            op::HELLO_ACK => {
                // Later versions may append fields after these two.
                return Ok(Reply::HelloAck {
                    version: c.u32()?,
                    n_pes: c.u32()?,
                });
            }
            op::OK => Reply::Ok,
            op::VALUE => Reply::Value(c.value()?),
            op::SWAPPED => {
                let flags = c.take(1)?[0];
                if flags & !3 != 0 {
                    return Err(c.malformed(format!("unknown flags {flags:#04x}")));
                }
                let value = c.value()?;
                if flags & 2 == 0 && !value.is_empty() {
                    return Err(c.malformed("a value for an absent key"));
                }
                Reply::Swapped {
                    swapped: flags & 1 != 0,
                    current: (flags & 2 != 0).then_some(value),
                }
            }
            op::COUNTER => Reply::Counter(c.u64()? as i64),
            op::VALUES => {
                let n = c.count()?;
                let mut values = Vec::with_capacity((n as usize).min(c.rest.len() / 4));
                for _ in 0..n {
                    let len = c.u32()? as usize;
                    values.push(c.take(len)?.to_vec());
                }
                Reply::Values(values)
            }
            op::FDS => {
                let n = c.count()?;
                let pad = c.take(n as usize)?;
                if pad.iter().any(|&b| b != 0) {
                    return Err(c.malformed("descriptor bytes are not zero"));
                }
                Reply::Fds(n)
            }
            op::MISSING => {
                let n = c.count()?;
                let mut indices = Vec::with_capacity((n as usize).min(c.rest.len() / 4));
                for _ in 0..n {
                    indices.push(c.u32()?);
                }
                Reply::Missing(indices)
            }
            op::WATCHED => {
                let present = c.flag()?;
                let value = c.value()?;
                if !present && !value.is_empty() {
                    return Err(c.malformed("a value for an absent key"));
                }
                Reply::Watched(present.then_some(value))
            }
            op::GROUP => Reply::Group(decode_group_view(&mut c)?),
            op::FD => Reply::Fd,
            op::TIMEOUT => Reply::Timeout,
            _ => Reply::Error(String::from_utf8_lossy(c.rest()).into_owned()),
        };
        c.finish()?;
        Ok(reply)
    }
}

/// The start of a VALUE reply whose `len`-byte value the sender sends right after it, from
/// where the value is kept (no copy of the whole frame). Fails on a value over its limit.
pub fn value_reply_head(len: usize) -> Result<Vec<u8>, WireError> {
    if len > MAX_VALUE_LEN {
        return Err(WireError::Limit {
            what: "value",
            len,
            max: MAX_VALUE_LEN,
        });
    }
    let mut head = FrameBuilder::new(op::VALUE, 0).finish();
    // At most 1 + MAX_VALUE_LEN, far below u32::MAX.
    let frame_len = (1 + len) as u32;
    head[..HEADER_LEN].copy_from_slice(&frame_len.to_le_bytes());
    Ok(head)
}

/// The start of a SWAPPED reply whose value (`current`: its length, `None` when the key is
/// absent) the sender sends right after it, as [`value_reply_head`] does for VALUE.
pub fn swapped_reply_head(swapped: bool, current: Option<usize>) -> Result<Vec<u8>, WireError> {
    let len = current.unwrap_or(0);
    let mut head = value_reply_head(len)?;
    head[HEADER_LEN] = op::SWAPPED;
    let frame_len = (2 + len) as u32;
    head[..HEADER_LEN].copy_from_slice(&frame_len.to_le_bytes());
    head.push(u8::from(swapped) | u8::from(current.is_some()) << 1);
    Ok(head)
}

/// Checks a GATHER's key count against [`MAX_GATHER_COUNT`].
pub fn check_gather_count(count: u32) -> Result<(), WireError> {
    if count > MAX_GATHER_COUNT {
        return Err(WireError::Limit {
            what: "gather count",
            len: count as usize,
            max: MAX_GATHER_COUNT as usize,
        });
    }
    Ok(())
}

/// The start of a VALUES reply (op byte and count) for values of the lengths `lens`, whose
/// length prefixes and bytes the sender sends right after it from where they are kept. Fails
/// when the whole frame would exceed [`MAX_FRAME_LEN`] (the store then answers
/// [`GATHER_TOO_LARGE`]) or there are too many values.
pub fn values_reply_head(lens: impl ExactSizeIterator<Item = usize>) -> Result<Vec<u8>, WireError> {
    let n = lens.len();
    check_gather_count(n.try_into().unwrap_or(u32::MAX))?;
    let body = lens.fold(1 + 4usize, |sum, len| sum.saturating_add(4 + len));
    if body > MAX_FRAME_LEN {
        return Err(WireError::Limit {
            what: "VALUES reply",
            len: body,
            max: MAX_FRAME_LEN,
        });
    }
    let mut head = FrameBuilder::new(op::VALUES, 4)
        .bytes(&(n as u32).to_le_bytes())
        .finish();
    // At most MAX_FRAME_LEN, checked above.
    head[..HEADER_LEN].copy_from_slice(&(body as u32).to_le_bytes());
    Ok(head)
}

/// The start of a FDS reply for `n` descriptors (header, op byte and count); the `n` zero
/// bytes that carry the descriptors follow it.
pub fn fds_reply_head(n: u32) -> Vec<u8> {
    let mut head = FrameBuilder::new(op::FDS, 4)
        .bytes(&n.to_le_bytes())
        .finish();
    // 5 + n bytes, n at most MAX_GATHER_COUNT: far below MAX_FRAME_LEN.
    head[..HEADER_LEN].copy_from_slice(&(5 + n).to_le_bytes());
    head
}

/// One frame as read from a stream: the op byte and its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Op byte followed by the payload; never empty.
    body: Vec<u8>,
}

impl Frame {
    /// The op byte.
    pub fn op(&self) -> u8 {
        self.body[0]
    }

    /// The payload after the op byte.
    pub fn payload(&self) -> &[u8] {
        &self.body[1..]
    }
}

/// Reads one frame.
///
/// [`WireError::Closed`] means a clean end between frames; a read timeout gives
/// [`WireError::TimedOut`] telling whether the frame was cut. A bad length is refused before
/// anything is allocated for it.
pub fn read_frame<R: Read + ?Sized>(r: &mut R) -> Result<Frame, WireError> {
    let len = read_header(r)?;
    read_body(r, len)
}

/// Reads a frame's length field: the first half of [`read_frame`], for a reader that decides
/// whether (and when) to take the frame before its body is read. Returns the length of the
/// op byte and payload, checked to be in `1..=MAX_FRAME_LEN`.
pub fn read_header<R: Read + ?Sized>(r: &mut R) -> Result<usize, WireError> {
    let mut header = [0u8; HEADER_LEN];
    let got = fill(r, &mut header, 0)?;
    if got == 0 {
        return Err(WireError::Closed);
    }
    if got < HEADER_LEN {
        return Err(WireError::Truncated {
            got,
            want: HEADER_LEN,
        });
    }
    let len = u32::from_le_bytes(header);
    if len == 0 || len as usize > MAX_FRAME_LEN {
        return Err(WireError::BadLength(len));
    }
    Ok(len as usize)
}

/// Reads the op byte and payload of a frame whose header [`read_header`] read: `len` bytes
/// (at least 1: `read_header` checked it; a zero `len` reads as a malformed frame).
pub fn read_body<R: Read + ?Sized>(r: &mut R, len: usize) -> Result<Frame, WireError> {
    if len == 0 {
        return Err(WireError::BadLength(0));
    }
    let mut body = vec![0u8; len];
    let got = fill(r, &mut body, HEADER_LEN)?;
    if got < body.len() {
        return Err(WireError::Truncated {
            got: HEADER_LEN + got,
            want: HEADER_LEN + body.len(),
        });
    }
    // `len >= 1` was checked above, so `body` holds at least the op byte.
    Ok(Frame { body })
}

/// Reads into `buf` until it is full or the stream ends; returns the bytes read.
/// `before` is how many bytes of this frame were consumed earlier (for timeout reporting).
fn fill<R: Read + ?Sized>(r: &mut R, buf: &mut [u8], before: usize) -> Result<usize, WireError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(WireError::TimedOut {
                    partial: before + got > 0,
                })
            }
            Err(e) => return Err(WireError::Io(e)),
        }
    }
    Ok(got)
}

/// Encodes a GROUP reply. Fails on more members or events than one reply may carry.
fn encode_group_view(view: &GroupView) -> Result<Vec<u8>, WireError> {
    let count = |what, n: usize| {
        if n > MAX_GATHER_COUNT as usize {
            return Err(WireError::Limit {
                what,
                len: n,
                max: MAX_GATHER_COUNT as usize,
            });
        }
        Ok((n as u32).to_le_bytes())
    };
    let mut b = FrameBuilder::new(op::GROUP, 24 + 16 * view.members.len())
        .bytes(&view.last.to_le_bytes())
        .bytes(&view.first.to_le_bytes())
        .bytes(&count("group members", view.members.len())?);
    for (rank, member) in &view.members {
        b = b.bytes(&rank.to_le_bytes()).key(member)?;
    }
    b = b.bytes(&count("group events", view.events.len())?);
    for e in &view.events {
        b = b
            .bytes(&e.seq.to_le_bytes())
            .u8(e.kind.code())
            .bytes(&e.rank.to_le_bytes())
            .key(&e.member)?
            .text(&e.detail)?
            .bytes(&count("ranks of a change", e.ranks.len())?);
        for r in &e.ranks {
            b = b.bytes(&r.to_le_bytes());
        }
    }
    let frame = b.finish();
    if frame.len() - HEADER_LEN > MAX_FRAME_LEN {
        return Err(WireError::Limit {
            what: "GROUP reply",
            len: frame.len() - HEADER_LEN,
            max: MAX_FRAME_LEN,
        });
    }
    Ok(frame)
}

fn decode_group_view(c: &mut Cursor<'_>) -> Result<GroupView, WireError> {
    let (last, first) = (c.u64()?, c.u64()?);
    let n = c.count()?;
    let mut members = Vec::with_capacity((n as usize).min(c.rest.len() / 6));
    for _ in 0..n {
        members.push((c.u32()?, c.key()?));
    }
    let n = c.count()?;
    let mut events = Vec::with_capacity((n as usize).min(c.rest.len() / 23));
    for _ in 0..n {
        let seq = c.u64()?;
        let code = c.take(1)?[0];
        let kind = GroupEventKind::from_code(code)
            .ok_or_else(|| c.malformed(format!("unknown group event kind {code}")))?;
        let rank = c.u32()?;
        let member = c.key()?;
        let detail = c.text(true)?;
        let k = c.count()?;
        let mut ranks = Vec::with_capacity((k as usize).min(c.rest.len() / 4));
        for _ in 0..k {
            ranks.push(c.u32()?);
        }
        events.push(GroupEvent {
            seq,
            kind,
            rank,
            member,
            detail,
            ranks,
        });
    }
    Ok(GroupView {
        last,
        first,
        members,
        events,
    })
}

/// Parses a payload front to back; every shortfall is a [`WireError::Malformed`].
struct Cursor<'a> {
    op: &'static str,
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn new(op: &'static str, payload: &'a [u8]) -> Self {
        Cursor { op, rest: payload }
    }

    fn malformed(&self, why: impl Into<String>) -> WireError {
        WireError::Malformed {
            op: self.op,
            why: why.into(),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.rest.len() < n {
            return Err(self.malformed(format!(
                "payload too short: needs {n} more bytes, has {}",
                self.rest.len()
            )));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// A byte that is 0 or 1.
    fn flag(&mut self) -> Result<bool, WireError> {
        match self.take(1)?[0] {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(self.malformed(format!("flag byte {other}, not 0 or 1"))),
        }
    }

    fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn key(&mut self) -> Result<String, WireError> {
        self.text(false)
    }

    /// A u32 count of items at most [`MAX_GATHER_COUNT`].
    fn count(&mut self) -> Result<u32, WireError> {
        let n = self.u32()?;
        if n > MAX_GATHER_COUNT {
            return Err(self.malformed(format!("{n} items, limit {MAX_GATHER_COUNT}")));
        }
        Ok(n)
    }

    /// A `u16 LE length | UTF-8` string of at most [`MAX_KEY_LEN`] bytes.
    fn text(&mut self, may_be_empty: bool) -> Result<String, WireError> {
        let len = u16::from_le_bytes(self.array()?) as usize;
        if len == 0 && !may_be_empty {
            return Err(self.malformed("empty key"));
        }
        if len > MAX_KEY_LEN {
            return Err(self.malformed(format!("key is {len} bytes, limit {MAX_KEY_LEN}")));
        }
        let bytes = self.take(len)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Err(self.malformed("key is not UTF-8")),
        }
    }

    /// The rest of the frame as a value of at most [`MAX_VALUE_LEN`] bytes.
    fn value(&mut self) -> Result<Vec<u8>, WireError> {
        let value = self.rest();
        if value.len() > MAX_VALUE_LEN {
            return Err(self.malformed(format!(
                "value is {} bytes, limit {MAX_VALUE_LEN}",
                value.len()
            )));
        }
        Ok(value.to_vec())
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.rest)
    }

    fn finish(&self) -> Result<(), WireError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(self.malformed(format!("{} trailing bytes", self.rest.len())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_id_held_refusal_reads_back() {
        let why = format!("group join of group 'g': {}", member_id_held("m 'x'", 12));
        assert_eq!(member_id_held_rank(&why, "m 'x'"), Some(12));
        assert_eq!(member_id_held_rank(&why, "m"), None, "another member's id");
        assert_eq!(
            member_id_held_rank("group join of group 'g': rank 1 is held by member 'm'", "m"),
            None
        );
        assert_eq!(
            member_id_held_rank("member id 'm' holds rank 3 already, and more", "m"),
            None
        );
    }

    fn all_requests() -> Vec<Request> {
        vec![
            Request::Hello {
                version: PROTOCOL_VERSION,
                rank: 3,
                n_pes: 8,
                job: "job-1".into(),
            },
            Request::Hello {
                version: PROTOCOL_VERSION,
                rank: 0,
                n_pes: 1,
                job: String::new(),
            },
            Request::Cas {
                key: "c".into(),
                expected: None,
                desired: vec![1],
            },
            Request::Cas {
                key: "c".into(),
                expected: Some(vec![]),
                desired: vec![],
            },
            Request::Append {
                key: "l".into(),
                value: vec![4, 5],
            },
            Request::DeletePrefix {
                prefix: "shmem/".into(),
            },
            Request::Gather {
                prefix: "heap/".into(),
                count: 256,
                timeout_ms: 5,
            },
            Request::GatherFd {
                prefix: "data/".into(),
                count: 1,
                timeout_ms: u64::MAX,
            },
            Request::Set {
                key: "a/b".into(),
                value: vec![1, 2, 3],
            },
            Request::Set {
                key: "empty".into(),
                value: vec![],
            },
            Request::Get {
                key: "k".into(),
                timeout_ms: 1234,
            },
            Request::Add {
                key: "c".into(),
                delta: -7,
            },
            Request::Delete { key: "d".into() },
            Request::PutFd { key: "f".into() },
            Request::GetFd {
                key: "f".into(),
                timeout_ms: u64::MAX,
            },
            Request::Abort {
                status: -3,
                after_error: false,
            },
            Request::Abort {
                status: 1,
                after_error: true,
            },
            Request::Bye,
            Request::Watch {
                key: "w".into(),
                seen: None,
                timeout_ms: 9,
            },
            Request::Watch {
                key: "w".into(),
                seen: Some(vec![]),
                timeout_ms: 0,
            },
            Request::Watch {
                key: "w".into(),
                seen: Some(vec![1, 2]),
                timeout_ms: u64::MAX,
            },
            Request::GroupJoin {
                group: "pool".into(),
                member: "10.0.0.1:7000".into(),
                size: 8,
                rank: None,
                loss_ms: 6000,
                drop_owned: true,
            },
            Request::GroupJoin {
                group: "pool".into(),
                member: "m".into(),
                size: 1,
                rank: Some(0),
                loss_ms: 0,
                drop_owned: false,
            },
            Request::GroupLeave {
                group: "pool".into(),
            },
            Request::GroupOwn {
                group: "pool".into(),
                key: "pool/seg/3".into(),
            },
            Request::GroupWatch {
                group: "pool".into(),
                after: 17,
                timeout_ms: 2000,
            },
            Request::GroupChange {
                group: "pool".into(),
                begin: true,
                tag: "J3".into(),
            },
            Request::GroupChange {
                group: "pool".into(),
                begin: false,
                tag: "L3".into(),
            },
        ]
    }

    fn all_replies() -> Vec<Reply> {
        vec![
            Reply::HelloAck {
                version: PROTOCOL_VERSION,
                n_pes: 8,
            },
            Reply::Ok,
            Reply::Value(vec![9; 100]),
            Reply::Value(vec![]),
            Reply::Counter(i64::MIN),
            Reply::Fd,
            Reply::Timeout,
            Reply::Error("no such thing".into()),
            Reply::Swapped {
                swapped: true,
                current: Some(vec![1, 2]),
            },
            Reply::Swapped {
                swapped: false,
                current: None,
            },
            Reply::Swapped {
                swapped: false,
                current: Some(vec![]),
            },
            Reply::Values(vec![vec![1, 2], vec![], vec![3; 70]]),
            Reply::Values(vec![]),
            Reply::Fds(3),
            Reply::Missing(vec![0, 7, 255]),
            Reply::Watched(None),
            Reply::Watched(Some(vec![])),
            Reply::Watched(Some(vec![3; 5])),
            Reply::Group(GroupView::default()),
            Reply::Group(GroupView {
                last: 9,
                first: 2,
                members: vec![(0, "a".into()), (3, "b:1".into())],
                events: vec![
                    GroupEvent {
                        seq: 8,
                        kind: GroupEventKind::Down,
                        rank: 2,
                        member: "c".into(),
                        detail: "connection lost".into(),
                        ranks: vec![],
                    },
                    GroupEvent {
                        seq: 9,
                        kind: GroupEventKind::ChangeBegun,
                        rank: 3,
                        member: "b:1".into(),
                        detail: String::new(),
                        ranks: vec![0, 3],
                    },
                ],
            }),
        ]
    }

    fn split(frame: &[u8]) -> (u8, Vec<u8>) {
        let f = read_frame(&mut &frame[..]).expect("frame reads back");
        (f.op(), f.payload().to_vec())
    }

    #[test]
    fn requests_round_trip() {
        for req in all_requests() {
            let frame = req.encode().unwrap();
            let len = u32::from_le_bytes(frame[..4].try_into().unwrap()) as usize;
            assert_eq!(len, frame.len() - 4, "{req:?}");
            let (op, payload) = split(&frame);
            assert_eq!(Request::decode(op, &payload).unwrap(), req);
        }
    }

    #[test]
    fn replies_round_trip() {
        for reply in all_replies() {
            let (op, payload) = split(&reply.encode().unwrap());
            assert_eq!(Reply::decode(op, &payload).unwrap(), reply);
        }
    }

    #[test]
    fn streamed_reply_heads_match_whole_replies() {
        for reply in all_replies() {
            let (head, value) = match &reply {
                Reply::Value(v) => (value_reply_head(v.len()).unwrap(), v.clone()),
                Reply::Swapped { swapped, current } => (
                    swapped_reply_head(*swapped, current.as_ref().map(Vec::len)).unwrap(),
                    current.clone().unwrap_or_default(),
                ),
                _ => continue,
            };
            assert_eq!([head, value].concat(), reply.encode().unwrap(), "{reply:?}");
        }
        assert!(value_reply_head(MAX_VALUE_LEN + 1).is_err());
    }

    #[test]
    fn gather_reply_heads_match_whole_replies() {
        let values = vec![vec![1u8, 2], vec![], vec![3; 70]];
        let mut streamed = values_reply_head(values.iter().map(Vec::len)).unwrap();
        for v in &values {
            streamed.extend_from_slice(&(v.len() as u32).to_le_bytes());
            streamed.extend_from_slice(v);
        }
        assert_eq!(streamed, Reply::Values(values).encode().unwrap());
        let fds = [fds_reply_head(3), vec![0; 3]].concat();
        assert_eq!(fds, Reply::Fds(3).encode().unwrap());
        // 4 values of 5 MiB do not fit one frame: the store says so instead of sending it.
        assert!(matches!(
            values_reply_head([5 << 20; 4].into_iter()),
            Err(WireError::Limit {
                what: "VALUES reply",
                ..
            })
        ));
        assert!(Request::Gather {
            prefix: "k".into(),
            count: MAX_GATHER_COUNT + 1,
            timeout_ms: 0
        }
        .encode()
        .is_err());
    }

    #[test]
    fn the_largest_hello_fits_the_hello_limit() {
        let hello = Request::Hello {
            version: PROTOCOL_VERSION,
            rank: u32::MAX,
            n_pes: u32::MAX,
            job: "j".repeat(MAX_KEY_LEN),
        };
        assert_eq!(
            hello.encode().unwrap().len(),
            HEADER_LEN + MAX_HELLO_FRAME_LEN
        );
    }

    #[test]
    fn several_frames_in_one_stream() {
        let mut stream = Vec::new();
        for req in all_requests() {
            stream.extend(req.encode().unwrap());
        }
        let mut r = &stream[..];
        for req in all_requests() {
            let frame = read_frame(&mut r).unwrap();
            assert_eq!(Request::from_frame(&frame).unwrap(), req);
        }
        assert!(matches!(read_frame(&mut r), Err(WireError::Closed)));
    }

    #[test]
    fn replies_are_not_requests_and_back() {
        let (op, payload) = split(&Reply::Ok.encode().unwrap());
        assert!(matches!(
            Request::decode(op, &payload),
            Err(WireError::UnknownOp(0x82))
        ));
        let (op, payload) = split(&Request::Bye.encode().unwrap());
        assert!(matches!(
            Reply::decode(op, &payload),
            Err(WireError::UnknownOp(0x09))
        ));
    }

    #[test]
    fn truncated_input_is_an_error() {
        let frame = Request::Set {
            key: "key".into(),
            value: vec![7; 50],
        }
        .encode()
        .unwrap();
        for cut in 1..frame.len() {
            let err = read_frame(&mut &frame[..cut]).unwrap_err();
            assert!(
                matches!(err, WireError::Truncated { got, .. } if got == cut),
                "cut at {cut}: {err}"
            );
        }
        assert!(matches!(read_frame(&mut &[][..]), Err(WireError::Closed)));
    }

    #[test]
    fn bad_lengths_are_refused_before_allocating() {
        let zero = [0u8, 0, 0, 0];
        assert!(matches!(
            read_frame(&mut &zero[..]),
            Err(WireError::BadLength(0))
        ));
        let huge = u32::MAX.to_le_bytes();
        assert!(matches!(
            read_frame(&mut &huge[..]),
            Err(WireError::BadLength(u32::MAX))
        ));
        let just_over = ((MAX_FRAME_LEN + 1) as u32).to_le_bytes();
        assert!(matches!(
            read_frame(&mut &just_over[..]),
            Err(WireError::BadLength(_))
        ));
    }

    #[test]
    fn malformed_payloads_are_errors() {
        let cases: Vec<(u8, Vec<u8>)> = vec![
            (0x00, vec![]),
            (0x7f, vec![1, 2]),
            (op::HELLO, b"XXXX\x01\0\0\0\0\0\0\0\x01\0\0\0".to_vec()),
            (op::HELLO, b"SHKV\x01\0".to_vec()),
            (op::GET, vec![]),
            (op::GET, vec![1]),
            (op::GET, vec![5, 0, b'a']),
            (op::GET, vec![1, 0, b'a', 1, 2, 3]),
            (op::GET, vec![1, 0, b'a', 0, 0, 0, 0, 0, 0, 0, 0, 9]),
            (op::DELETE, vec![0, 0]),
            (op::DELETE, vec![2, 0, 0xff, 0xfe]),
            (op::DELETE, vec![1, 0, b'a', b'b']),
            (op::ADD, vec![1, 0, b'a', 1]),
            (op::ABORT, vec![1, 2, 3]),
            (op::BYE, vec![0]),
            (op::CAS, vec![1, 0, b'a', 5, 0, 0, 0, 1]),
            (op::CAS, vec![1, 0, b'a', 0xff, 0xff]),
            (op::APPEND, vec![]),
            (op::DELETE_PREFIX, vec![0, 0]),
            (op::GATHER, vec![1, 0, b'a', 1, 0, 0, 0]),
            (
                op::GATHER,
                [&[1, 0, b'a', 0, 0, 0, 0x40][..], &[0; 8]].concat(),
            ),
            (
                op::GATHER_FD,
                vec![1, 0, b'a', 1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
            ),
            (
                op::HELLO,
                b"SHKV\x02\0\0\0\0\0\0\0\x01\0\0\0\x05\0ab".to_vec(),
            ),
        ];
        for (op, payload) in cases {
            let err = Request::decode(op, &payload).expect_err(&format!("{op:#x} {payload:?}"));
            assert!(
                matches!(err, WireError::Malformed { .. } | WireError::UnknownOp(_)),
                "{err}"
            );
        }
        let mut long_key = vec![0u8; 2 + MAX_KEY_LEN + 1];
        long_key[..2].copy_from_slice(&((MAX_KEY_LEN + 1) as u16).to_le_bytes());
        assert!(Request::decode(op::DELETE, &long_key).is_err());
        assert!(Reply::decode(op::COUNTER, &[1, 2, 3]).is_err());
        assert!(Reply::decode(op::OK, &[1]).is_err());
        assert!(Reply::decode(op::SWAPPED, &[4]).is_err());
        assert!(Reply::decode(op::SWAPPED, &[1, 9]).is_err());
        assert!(Reply::decode(op::SWAPPED, &[]).is_err());
        assert!(Reply::decode(op::VALUES, &[1, 0, 0, 0, 5, 0, 0, 0, 1]).is_err());
        assert!(Reply::decode(op::VALUES, &[0xff, 0xff, 0xff, 0xff]).is_err());
        assert!(Reply::decode(op::FDS, &[2, 0, 0, 0, 0]).is_err());
        assert!(Reply::decode(op::FDS, &[1, 0, 0, 0, 1]).is_err());
        assert!(Reply::decode(op::MISSING, &[2, 0, 0, 0, 1, 0, 0, 0]).is_err());
    }

    #[test]
    fn oversized_value_in_a_legal_frame_is_refused() {
        let mut payload = vec![1u8, 0, b'k'];
        payload.resize(3 + MAX_VALUE_LEN + 1, 0);
        assert!(matches!(
            Request::decode(op::SET, &payload),
            Err(WireError::Malformed { .. })
        ));
        assert!(Reply::decode(op::VALUE, &payload).is_err());
    }

    #[test]
    fn limits_are_checked_when_encoding() {
        let long_key = "k".repeat(MAX_KEY_LEN + 1);
        assert!(matches!(
            Request::Delete { key: long_key }.encode(),
            Err(WireError::Limit { what: "key", .. })
        ));
        assert!(matches!(
            Request::Delete { key: String::new() }.encode(),
            Err(WireError::EmptyKey)
        ));
        let max_key = "k".repeat(MAX_KEY_LEN);
        let big = Request::Set {
            key: max_key,
            value: vec![0; MAX_VALUE_LEN],
        }
        .encode()
        .unwrap();
        assert!(big.len() - 4 <= MAX_FRAME_LEN);
        let (op, payload) = split(&big);
        assert!(Request::decode(op, &payload).is_ok());
        assert!(matches!(
            Request::Set {
                key: "k".into(),
                value: vec![0; MAX_VALUE_LEN + 1]
            }
            .encode(),
            Err(WireError::Limit { what: "value", .. })
        ));
    }

    #[test]
    fn long_error_messages_are_cut_at_a_char_boundary() {
        let msg = "é".repeat(MAX_MESSAGE_LEN);
        let (op, payload) = split(&Reply::Error(msg).encode().unwrap());
        match Reply::decode(op, &payload).unwrap() {
            Reply::Error(m) => assert!(m.len() <= MAX_MESSAGE_LEN && m.chars().all(|c| c == 'é')),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn hello_tolerates_later_fields() {
        let mut frame = Request::Hello {
            version: 2,
            rank: 1,
            n_pes: 2,
            job: "j".into(),
        }
        .encode()
        .unwrap();
        frame.extend([0xaa; 8]);
        let len = (frame.len() - 4) as u32;
        frame[..4].copy_from_slice(&len.to_le_bytes());
        let (op, payload) = split(&frame);
        assert_eq!(
            Request::decode(op, &payload).unwrap(),
            Request::Hello {
                version: 2,
                rank: 1,
                n_pes: 2,
                job: "j".into(),
            }
        );
        // A version-1 HELLO (no job id) still decodes, so its version can be named.
        let v1 = b"SHKV\x01\0\0\0\0\0\0\0\x01\0\0\0";
        assert_eq!(
            Request::decode(op::HELLO, v1).unwrap(),
            Request::Hello {
                version: 1,
                rank: 0,
                n_pes: 1,
                job: String::new(),
            }
        );
    }

    /// Simple deterministic fuzz: random bytes never panic the reader or decoders.
    #[test]
    fn random_bytes_never_panic() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let len = (next() % 40) as usize;
            let mut bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if len >= 4 && next() % 2 == 0 {
                let body = (len - 4) as u32;
                bytes[..4].copy_from_slice(&body.to_le_bytes());
            }
            if let Ok(frame) = read_frame(&mut &bytes[..]) {
                let _ = Request::from_frame(&frame);
                let _ = Reply::from_frame(&frame);
            }
        }
    }

    struct TimesOut(usize);
    impl Read for TimesOut {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = self.0.min(buf.len());
            buf[..n].fill(1);
            self.0 -= n;
            Ok(n)
        }
    }

    #[test]
    fn timeouts_say_whether_a_frame_was_cut() {
        assert!(matches!(
            read_frame(&mut TimesOut(0)),
            Err(WireError::TimedOut { partial: false })
        ));
        assert!(matches!(
            read_frame(&mut TimesOut(2)),
            Err(WireError::TimedOut { partial: true })
        ));
    }
}
