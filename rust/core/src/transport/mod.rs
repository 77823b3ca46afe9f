//! Transports: how this PE reaches a peer whose symmetric memory is not mapped here. This module
//! owns the [`Transport`] trait, the choice of transport at start-up ([`start`]) and the C table
//! of operations the facade calls (`shmem/transport.h`, filled by [`table`]). It never touches
//! the mapped path: a peer that is mapped here is reached by the facade's own loads, stores and
//! CPU atomics, and this module is not called for it (except AMOs, see below).
//!
//! Shipped transports: [`none`] (no peer reachable: today's refusal of every PE that is not
//! mapped) and [`loopback`], a test transport that reaches chosen peers through the table while
//! copying through their mappings (`SHMEM_TEST_LOOPBACK`, for testing only), and [`ucx`], the
//! network transport over UCX's UCP (jobs that span nodes; `SHMEM_TEST_UCX` in tests).
//!
//! Atomicity rule: while any PE of the job is reached through a transport, every AMO goes
//! through it, to mapped PEs too, since CPU atomics and a transport's atomics on one word are
//! not atomic with each other. The facade follows it by testing the job state's `transport`.
//!
//! The runtime's own calls (the barriers' flags of PEs behind the transport, the waits'
//! progress) go to the [`Transport`] directly ([`put_word`], [`get_word`], [`progress`]), not
//! through the C table, which is the facade's way in. Either way a failure is logged once where
//! it happens (`table::logged`) and returned: this module never ends the job.

pub mod devcopy;
pub mod dynamic;
pub(crate) mod error;
pub mod loopback;
pub mod none;
mod segment;
pub mod table;
pub mod ucx;

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::clock::node_clock_ns;
pub use error::TransportError;
pub use segment::{Segment, SEGMENTS};

/// An atomic operation (`enum shmem_transport_amo_op`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AmoOp {
    /// Returns the element.
    Fetch,
    /// Stores the value.
    Set,
    /// Stores the value, returns the old one.
    Swap,
    /// Stores the value where the element equals the compare value; returns the old one.
    CompareSwap,
    /// Adds (two's complement), returns the old value.
    FetchAdd,
    /// Bitwise and, returns the old value.
    FetchAnd,
    /// Bitwise or, returns the old value.
    FetchOr,
    /// Bitwise xor, returns the old value.
    FetchXor,
}

impl AmoOp {
    /// The operation of a C `op` argument, if it names one.
    pub fn from_raw(raw: i32) -> Option<AmoOp> {
        Some(match raw {
            0 => AmoOp::Fetch,
            1 => AmoOp::Set,
            2 => AmoOp::Swap,
            3 => AmoOp::CompareSwap,
            4 => AmoOp::FetchAdd,
            5 => AmoOp::FetchAnd,
            6 => AmoOp::FetchOr,
            7 => AmoOp::FetchXor,
            _ => return None,
        })
    }
}

/// The context an operation was issued on: only its identity (the facade's `shmem_ctx_t`; 0
/// for the default context). Completion and ordering are per context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ctx(pub usize);

impl Ctx {
    /// The runtime's own: the puts of its synchronisation flags ([`put_word`]), which the peer
    /// waits for and no quiet needs to complete (never a facade context's address).
    pub const RUNTIME: Ctx = Ctx(usize::MAX);

    /// The context of a C `ctx` argument.
    pub fn from_raw(raw: *const c_void) -> Ctx {
        Ctx(raw as usize)
    }
}

/// How this PE reaches peers whose memory is not mapped here. One instance per job, made at
/// start-up by [`start`], called by the facade through the C table ([`table`]) from any thread
/// (hence `Sync`).
///
/// Set-up order: [`address`](Transport::address) of every PE is exchanged through the bootstrap
/// and given to [`connect`](Transport::connect); then per segment, [`register`]
/// (Transport::register) gives the remote-key bytes that are exchanged and given to
/// [`attach`](Transport::attach).
pub trait Transport: Send + Sync + std::fmt::Debug {
    /// The transport's name, for messages.
    fn name(&self) -> &'static str;
    /// The same name for C (the table's `name`).
    fn c_name(&self) -> &'static std::ffi::CStr;
    /// Whether this transport reaches `pe` (the per-peer capability query).
    fn can_reach(&self, pe: usize) -> bool;
    /// This PE's address, as the other PEs' `connect` will receive it.
    fn address(&self) -> Vec<u8>;
    /// Connects to the peers; `addresses[p]` is PE p's [`address`](Transport::address).
    fn connect(&mut self, addresses: &[Vec<u8>]) -> Result<(), TransportError>;
    /// Registers this PE's `segment` (`len` bytes at `base`); returns its remote key.
    fn register(
        &mut self,
        segment: Segment,
        base: usize,
        len: usize,
    ) -> Result<Vec<u8>, TransportError>;
    /// Takes every PE's remote key of `segment` (`keys[p]` from PE p's `register`).
    fn attach(&mut self, segment: Segment, keys: &[Vec<u8>]) -> Result<(), TransportError>;
    /// Copies `source` to `offset` of `segment` on `pe`: `source` may be reused on return, the
    /// data is visible there after [`quiet`](Transport::quiet) on `ctx` (ordered by
    /// [`fence`](Transport::fence)), as OpenSHMEM's put is.
    fn put(
        &self,
        ctx: Ctx,
        pe: usize,
        segment: Segment,
        offset: u64,
        source: &[u8],
    ) -> Result<(), TransportError>;
    /// Copies from `offset` of `segment` on `pe` into `dest`; complete on return.
    fn get(
        &self,
        ctx: Ctx,
        pe: usize,
        segment: Segment,
        offset: u64,
        dest: &mut [u8],
    ) -> Result<(), TransportError>;
    /// Starts a put; complete after [`quiet`](Transport::quiet) on `ctx`. The caller keeps
    /// `source` (`len` bytes) unchanged until then.
    ///
    /// # Safety
    /// `source` must be readable for `len` bytes until `quiet` on `ctx` returns.
    unsafe fn put_nbi(
        &self,
        ctx: Ctx,
        pe: usize,
        segment: Segment,
        offset: u64,
        source: *const u8,
        len: usize,
    ) -> Result<(), TransportError>;
    /// Starts a get; `dest` holds the data after [`quiet`](Transport::quiet) on `ctx`.
    ///
    /// # Safety
    /// `dest` must be writable for `len` bytes, and not read, until `quiet` on `ctx` returns.
    unsafe fn get_nbi(
        &self,
        ctx: Ctx,
        pe: usize,
        segment: Segment,
        offset: u64,
        dest: *mut u8,
        len: usize,
    ) -> Result<(), TransportError>;
    /// One atomic operation on the naturally aligned element of `size` bytes (4 or 8) at
    /// `offset` of `segment` on `pe`; returns the old value (0 for `Set`).
    #[allow(clippy::too_many_arguments)]
    fn amo(
        &self,
        ctx: Ctx,
        pe: usize,
        segment: Segment,
        offset: u64,
        op: AmoOp,
        size: usize,
        value: u64,
        compare: u64,
    ) -> Result<u64, TransportError>;
    /// Orders the operations issued on `ctx` before this call before those issued after.
    fn fence(&self, ctx: Ctx) -> Result<(), TransportError>;
    /// Completes every operation issued on `ctx`.
    fn quiet(&self, ctx: Ctx) -> Result<(), TransportError>;
    /// Moves data while this PE waits.
    fn progress(&self) -> Result<(), TransportError>;
    /// Ends the transport's part in the job (from finalize, after the last barrier).
    fn finalize(&self) -> Result<(), TransportError>;
    /// A few words on how it reaches its peers, for `SHMEM_INFO` (empty: nothing to add).
    fn detail(&self) -> String {
        String::new()
    }
}

/// Which PEs `t` reaches and which are mapped, for `SHMEM_INFO`: e.g. `mapped 0,2, ucx 1,3`.
pub fn describe_reach(t: &dyn Transport, n_pes: usize) -> String {
    let list = |want: bool| -> String {
        let pes: Vec<usize> = (0..n_pes).filter(|&p| t.can_reach(p) == want).collect();
        let mut runs: Vec<String> = Vec::new();
        let mut i = 0;
        while i < pes.len() {
            let mut j = i;
            while j + 1 < pes.len() && pes[j + 1] == pes[j] + 1 {
                j += 1;
            }
            runs.push(if j == i {
                pes[i].to_string()
            } else {
                format!("{}-{}", pes[i], pes[j])
            });
            i = j + 1;
        }
        runs.join(",")
    };
    let mut parts = Vec::new();
    let mapped = list(false);
    if !mapped.is_empty() {
        parts.push(format!("mapped {mapped}"));
    }
    let reached = list(true);
    if !reached.is_empty() {
        parts.push(format!("{} {reached}", t.name()));
    }
    let detail = t.detail();
    if detail.is_empty() {
        parts.join(", ")
    } else {
        format!("{} ({detail})", parts.join(", "))
    }
}

/// A started transport and the C table that reaches it; lives as long as the runtime, and the
/// job state points at its table (and the barriers' view at the transport) until finalize
/// clears them.
#[derive(Debug)]
pub struct Started {
    /// The transport (boxed twice so the table's `self` is a thin, stable pointer).
    transport: Box<Box<dyn Transport>>,
    /// The table the facade calls.
    ops: Box<table::TransportOps>,
}

// SAFETY: the table's pointers are its static name and the transport this value owns, which is
// `Send + Sync` itself; the table is never written after `start` built it.
unsafe impl Send for Started {}
// SAFETY: as for `Send`: shared access only reads the table and calls the `Sync` transport.
unsafe impl Sync for Started {}

impl Started {
    /// The table, for the job state.
    pub fn ops(&self) -> *const table::TransportOps {
        &*self.ops
    }

    /// The transport.
    pub fn transport(&self) -> &dyn Transport {
        &**self.transport
    }
}

/// A segment of this PE to register: which, where and how long.
#[derive(Debug, Clone, Copy)]
pub struct LocalSegment {
    /// Which segment.
    pub segment: Segment,
    /// Its base in this process.
    pub base: usize,
    /// Its length in bytes.
    pub len: usize,
}

/// Every PE contributes bytes and receives every PE's, by rank (the bootstrap's allgather).
pub type Allgather<'a> = dyn FnMut(&[u8]) -> crate::error::Result<Vec<Vec<u8>>> + 'a;

/// Connects `transport` and registers `segments` with it, exchanging addresses and remote keys
/// through `allgather` (every PE contributes bytes and receives every PE's, by rank), then
/// builds its table. Collective: every PE of the job calls it with the same segments.
pub fn start(
    mut transport: Box<dyn Transport>,
    segments: &[LocalSegment],
    allgather: &mut Allgather<'_>,
) -> crate::error::Result<Started> {
    let addresses = allgather(&transport.address())?;
    transport.connect(&addresses)?;
    for s in segments {
        let key = transport.register(s.segment, s.base, s.len)?;
        let keys = allgather(&key)?;
        transport.attach(s.segment, &keys)?;
    }
    tracing::debug!("transport {} connected", transport.name());
    let mut transport = Box::new(transport);
    let ops = Box::new(table::fill(&mut transport));
    Ok(Started { transport, ops })
}

/// Lets `transport` move data (from every wait loop of the runtime and the facade, while a
/// transport is in use). A failure is logged here; the wait goes on (the operation that needs
/// the peer reports it).
pub fn progress(transport: &dyn Transport) {
    let _ = table::logged(transport, "progress", -1, transport.progress());
}

/// Writes the 8-byte `value` at `offset` of `segment` on `pe` through `transport`: a put on
/// [`Ctx::RUNTIME`], after this PE's earlier ones, visible there once the transport delivers it
/// (a flag that the peer waits for; what must land before it is completed by a quiet first,
/// and no quiet waits for it); for the runtime's synchronisation words of PEs reached through
/// the transport. A failure is logged here (naming the transport, the operation and the PE);
/// the caller passes it on, and the runtime ends the job.
pub fn put_word(
    transport: &dyn Transport,
    pe: usize,
    segment: Segment,
    offset: usize,
    value: u64,
) -> Result<(), TransportError> {
    let bytes = value.to_ne_bytes();
    // The fence keeps this PE's flags in the order it raised them (a flag of the next epoch
    // never lands before this one's); the put is made even after a failed fence, as each
    // reports its own failure.
    let fenced = table::logged(transport, "fence", -1, transport.fence(Ctx::RUNTIME));
    let put = transport.put(Ctx::RUNTIME, pe, segment, offset as u64, &bytes);
    let put = table::logged(transport, "put", pe as i32, put);
    fenced.and(put)
}

/// Reads the 8-byte word at `offset` of `segment` on `pe` through `transport`, on the default
/// context (see [`put_word`]).
pub fn get_word(
    transport: &dyn Transport,
    pe: usize,
    segment: Segment,
    offset: usize,
) -> Result<u64, TransportError> {
    let mut bytes = [0u8; 8];
    let got = transport.get(Ctx(0), pe, segment, offset as u64, &mut bytes);
    table::logged(transport, "get", pe as i32, got)?;
    Ok(u64::from_ne_bytes(bytes))
}

/// A wait does not nap while a transport moved data for this PE within this long: a peer that
/// reaches this PE over a transport whose operations this PE must serve (UCX over TCP) waits for
/// this PE's progress, so a wait that napped would make every such operation wait for its nap.
const ACTIVE_FOR_NS: u64 = 2_000_000;
/// When a transport last moved data for this PE ([`node_clock_ns`]; 0: never).
static ACTIVE_NS: AtomicU64 = AtomicU64::new(0);

/// Says that the transport moved data for this PE just now (from its progress calls).
pub fn moved() {
    ACTIVE_NS.store(node_clock_ns(), Ordering::Relaxed);
}

/// Whether a transport moved data for this PE within the last [`ACTIVE_FOR_NS`]: the waits
/// then yield rather than nap.
pub fn recently_active() -> bool {
    let last = ACTIVE_NS.load(Ordering::Relaxed);
    last != 0 && node_clock_ns().saturating_sub(last) < ACTIVE_FOR_NS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_peer_is_named_once_with_the_reason() {
        let e = TransportError::PeerFailed {
            pe: 3,
            why: "Endpoint timeout".into(),
        };
        assert_eq!(
            e.to_string(),
            "lost the connection to PE 3 (Endpoint timeout): PE 3 died or its node cannot be \
             reached"
        );
    }

    #[test]
    fn reach_is_described_in_runs() {
        let pes = vec![false, true, true, true, false, false, true];
        let t = loopback::Loopback::new(pes, &[], &[], &[]);
        assert_eq!(describe_reach(&t, 7), "mapped 0,4-5, loopback 1-3,6");
        let all = loopback::Loopback::new(vec![true; 2], &[], &[], &[]);
        assert_eq!(describe_reach(&all, 2), "loopback 0-1");
    }
}

/// The calls a transport served, by kind: it logs them at debug level when the job ends
/// ([`Counts::log`]), so a test can prove that calls went through it.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub(crate) puts: AtomicU64,
    pub(crate) gets: AtomicU64,
    pub(crate) nbi: AtomicU64,
    pub(crate) amos: AtomicU64,
    pub(crate) fences: AtomicU64,
    pub(crate) quiets: AtomicU64,
    pub(crate) progress: AtomicU64,
}

/// Counts one call of a kind.
pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl Counts {
    /// Logs the counts of `transport`, which reached the PEs `reach` marks, in the one line the
    /// tests read.
    pub(crate) fn log(&self, transport: &str, reach: &[bool]) {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let reached: Vec<String> = (0..reach.len())
            .filter(|&pe| reach[pe])
            .map(|pe| pe.to_string())
            .collect();
        tracing::debug!(
            "{transport} transport (PEs {}): {} puts, {} gets, {} non-blocking, {} atomics, {} \
             fences, {} quiets, {} progress calls",
            reached.join(","),
            n(&self.puts),
            n(&self.gets),
            n(&self.nbi),
            n(&self.amos),
            n(&self.fences),
            n(&self.quiets),
            n(&self.progress)
        );
    }
}
