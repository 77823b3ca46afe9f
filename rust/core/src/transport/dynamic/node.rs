//! The node path of the dynamic transport: a [`NodeWorker`] wraps another worker (UCX, or the
//! loopback in tests) and reaches the memory of peers on its own node by mapping it, so that
//! processes started independently (no launcher, no inherited socket) put and get among
//! themselves with a bounds check and a copy.
//!
//! - **Who is on this node.** Two workers map each other's memory when they can pass
//!   descriptors over an abstract Unix socket and are let in by its peer-credential check: the
//!   same kernel boot and network namespace (the node identity of the SHMEM job,
//!   `bootstrap::node::locality`: abstract sockets do not cross namespaces) and the same user.
//!   A worker's address is that identity, its user, the name of its own abstract socket (random,
//!   `shmem-<uid>-dyn-<128 bits>`: nothing in any file system, nothing another group meets) and
//!   the inner worker's name and address. Any other peer is the inner worker's to reach.
//! - **Without UCX.** Where `libucp.so.0` does not load, [`NodeWorker::without_ucx`] runs over
//!   the loopback worker: members of this node still map each other's shareable memory, but a
//!   member of another node, or another process's private memory, is refused with
//!   [`TransportError::NeedsUcx`] naming the loader's error and the package to install; its
//!   peers read from its address that its inner worker is the loopback and refuse the same
//!   way (an inner worker never receives another kind's address).
//! - **Shareable memory** is memory registered with [`DynamicWorker::register_fd`]: a shared
//!   mapping of a file ([`SharedMemory`] makes one over a memfd). Its key holds, after the
//!   [`KeyHeader`], its slot in the worker's registration page and then the inner worker's key
//!   (the inner worker registers it too, for peers of other nodes); the worker keeps a duplicate
//!   of the descriptor while it is registered. The file must keep its length meanwhile: a peer
//!   touching a mapping past the file's end faults. Memory registered with
//!   [`DynamicWorker::register`] is private: its key has no slot, and every peer reaches it
//!   through the inner worker, connected on the first such key (the loopback cannot connect to
//!   another process: such an operation fails, naming the key).
//! - **The socket.** Each worker serves its socket on one thread (`shmem-node-dyn`), which
//!   admits only this user's processes (SO_PEERCRED), greets each with the descriptor of its
//!   registration page, and answers a peer's request for a registration with its descriptor
//!   (`SCM_RIGHTS`, through the store's [`send_with_fds`] and [`FdReader`]), its offset and its
//!   length. A peer's endpoint keeps its connection: it is the owner's liveness. On first use
//!   of a key, the endpoint asks for the descriptor, maps the file (`MAP_SHARED`, the range only),
//!   closes the descriptor and keeps the mapping until the endpoint ends or the registration is
//!   seen withdrawn. [`DynamicWorker::shared_file`] makes the same request and hands the
//!   descriptor to a caller that maps the file itself, at an address of its choosing. Puts and gets are copies; their non-blocking forms complete at once; a
//!   flush orders them (a fence) and flushes the inner endpoint if there is one.
//! - **Registration page.** One shared table of [`SLOTS`] words per worker (64 KiB), mapped by
//!   every peer on its node: a slot holds the id of the live registration that owns it, 0
//!   otherwise.
//!   A peer reads the slot before each copy, so once [`DynamicWorker::unregister`] returned,
//!   peers' operations on the key fail ([`TransportError::BadKey`], "the peer unregistered it")
//!   instead of writing into memory that is no longer exposed; a copy already past that check
//!   when the owner unregisters is the caller's race, as over UCX. Ids are never reused, so a
//!   slot taken again does not revive an old key.
//! - **Peers that go.** A worker being dropped first sets the word after the slots of its page:
//!   its peers' operations fail from then on with [`TransportError::PeerGone`] naming it. A
//!   process that ends sets nothing, but its connections close: an endpoint polls its
//!   connection (`ppoll`, no wait) before an operation at most every 2 ms of the coarse
//!   monotonic clock (no system call per operation), so operations to a killed peer fail with
//!   [`TransportError::PeerGone`] within 2 ms and a clock tick (a few ms) of its death, and
//!   fail for good once one did. Memory of a dead process stays mapped (its file lives while
//!   mapped), so a copy in that interval lands harmlessly. [`DynamicWorker::disconnect`]
//!   unmaps what the endpoint mapped, closes its connection and disconnects its inner endpoint.
//!   Dropping the worker stops its thread, clears its page, withdraws its registrations and
//!   closes its socket: nothing (descriptors, mappings, threads) is left.

use super::loopback::LoopbackWorker;
use super::{bad_key, key_name, worker_id, DynamicWorker, Endpoint, KeyHeader, Registration};
use crate::bootstrap::bits::socket_name;
use crate::bootstrap::node::locality::NodeId;
use crate::bootstrap::node::meet::admit;
use crate::clock::coarse_clock_ns;
use crate::idmap::IdMap;
use crate::mapping::{self, page_size, Mapping};
use crate::transport::TransportError;
use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use shmem_store::unix::{send_with_fds, FdReader};
use std::collections::HashMap;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// The prefix of a node worker's address.
const ADDRESS_PREFIX: &[u8] = b"dynnode:";
/// Slots of a worker's registration page: shareable registrations live at once.
pub const SLOTS: usize = 8192;
/// Bytes of the registration slots.
const PAGE_BYTES: usize = SLOTS * 8;
/// The word after the slots: [`GONE`] once the owner's worker is being dropped.
const STATE_WORD: usize = PAGE_BYTES;
/// Bytes of the registration page: the slots and the state word.
const PAGE_LEN: usize = PAGE_BYTES + 8;
/// The state word of a worker being dropped.
const GONE: u64 = 1;
/// How often, at most, an endpoint polls its peer's socket to learn whether the peer's process
/// ended (nanoseconds of the coarse monotonic clock): an operation within this interval of the
/// last poll relies on it, so a process that dies is reported gone within this interval and
/// the coarse clock's tick.
pub(crate) const POLL_INTERVAL_NS: u64 = 2_000_000;
/// The slot of a private registration's key.
const PRIVATE: u64 = u64::MAX;
/// The greeting: magic, the worker's id, its slots; the page's descriptor rides on it.
const GREETING_MAGIC: &[u8; 4] = b"SHdn";
const GREETING_LEN: usize = 4 + 8 + 8;
/// A request: the operation (byte 0), then a registration id (bytes 8..16).
const REQUEST_LEN: usize = 16;
const OP_MAP: u8 = b'M';
/// A reply: status (byte 0), the registration's offset in its file, its length; with
/// [`MAP_OK`], its descriptor.
const REPLY_LEN: usize = 24;
const MAP_OK: u8 = 0;
const MAP_UNKNOWN: u8 = 1;
const MAP_PRIVATE: u8 = 2;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn peer_label(id: u64) -> String {
    format!("node worker {id:016x}")
}

fn word(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Memory that peers on this node can map: an anonymous memfd mapped shared in this process,
/// for [`DynamicWorker::register_fd`]. Unmapped and closed on drop (unregister it first).
#[derive(Debug)]
pub struct SharedMemory {
    fd: OwnedFd,
    map: Mapping,
}

impl SharedMemory {
    /// `len` bytes, zero-filled.
    pub fn new(len: usize) -> Result<SharedMemory, TransportError> {
        let fail = |e: crate::error::Error| TransportError::Library {
            call: format!("shareable memory of {len} bytes"),
            why: e.to_string(),
        };
        let fd = mapping::memfd("shmem-dynamic", len).map_err(fail)?;
        let map = Mapping::map_shared(&fd, len).map_err(fail)?;
        Ok(SharedMemory { fd, map })
    }

    /// The memory's first byte in this process.
    pub fn as_ptr(&self) -> *mut u8 {
        self.map.addr() as *mut u8
    }

    /// Its length.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }

    /// The memfd behind it (offset 0 is the first byte).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// A shareable registration's file.
#[derive(Debug)]
struct Share {
    fd: OwnedFd,
    fd_offset: u64,
    slot: usize,
}

/// A registration of this worker: the inner worker's, and its file when shareable.
#[derive(Debug)]
struct Reg {
    inner: Registration,
    len: u64,
    share: Option<Share>,
}

/// This worker's registrations.
#[derive(Debug, Default)]
struct Regs {
    map: HashMap<u64, Reg>,
    free_slots: Vec<usize>,
    next_slot: usize,
    next_id: u64,
}

/// What the socket's thread shares with the worker.
#[derive(Debug)]
struct Owned {
    id: u64,
    uid: u32,
    regs: Mutex<Regs>,
    page_fd: OwnedFd,
    page: Mapping,
}

impl Owned {
    fn set_slot(&self, slot: usize, id: u64) {
        self.page.atomic_u64(slot * 8).store(id, Ordering::Release);
    }
}

/// A peer on this node: the connection to its socket, its page and what was mapped.
#[derive(Debug)]
struct Local {
    stream: UnixStream,
    page: Mapping,
    /// What was mapped, and whether the connection still serves; its lock keeps the
    /// connection's exchanges one at a time (and so its liveness check apart from them).
    conn: Mutex<Conn>,
}

/// A peer's connection's state.
#[derive(Debug, Default)]
struct Conn {
    /// Mapped registrations by id.
    maps: IdMap<u64, Arc<Window>>,
    /// Why the connection no longer serves, once it does not.
    broken: Option<String>,
    /// When (coarse clock, ns) the connection is to be polled next.
    next_poll: u64,
}

/// A peer's registration as mapped here: `len` bytes from `skew` of the mapping.
#[derive(Debug)]
struct Window {
    map: Mapping,
    skew: usize,
    slot: usize,
}

impl Local {
    fn live(&self, slot: usize, id: u64) -> bool {
        self.page.atomic_u64(slot * 8).load(Ordering::Acquire) == id
    }

    /// Ok while the peer's worker serves: its page does not say it is being dropped, and its
    /// socket, polled at most every [`POLL_INTERVAL_NS`], has not closed (its process did not
    /// end). `conn` is this connection's, locked. Once it failed, it fails for good.
    fn alive(&self, conn: &mut Conn, op: &'static str, peer: &str) -> Result<(), TransportError> {
        if conn.broken.is_none() {
            if self.page.atomic_u64(STATE_WORD).load(Ordering::Acquire) == GONE {
                conn.broken = Some("its worker was dropped".into());
            } else {
                let now = coarse_clock_ns();
                if now != 0 && now < conn.next_poll {
                    return Ok(());
                }
                // Nothing arrives unasked (and no exchange runs: `conn` is locked), so a
                // readable connection has ended.
                let mut fds = [PollFd::new(&self.stream, PollFlags::IN | PollFlags::RDHUP)];
                let zero = Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                match poll(&mut fds, Some(&zero)) {
                    Ok(_) if fds[0].revents().is_empty() => {
                        conn.next_poll = now + POLL_INTERVAL_NS;
                        return Ok(());
                    }
                    Err(Errno::INTR) => return Ok(()),
                    _ => {
                        conn.broken = Some(
                            "its node socket closed: its process ended or its worker was \
                             dropped"
                                .into(),
                        )
                    }
                }
            }
        }
        Err(TransportError::PeerGone {
            op,
            peer: peer.to_string(),
            why: conn.broken.clone().unwrap_or_default(),
        })
    }
}

/// An endpoint.
#[derive(Debug)]
struct Peer {
    id: u64,
    label: String,
    local: Option<Local>,
    /// The peer's inner worker: its name and address.
    inner_name: String,
    inner_address: Vec<u8>,
    /// The inner worker's endpoint, once made.
    inner: Mutex<Option<Endpoint>>,
}

/// A peer's address, parsed.
struct PeerAddress<'a> {
    id: u64,
    uid: u32,
    node: &'a [u8],
    socket: &'a [u8],
    /// The inner worker's name ([`DynamicWorker::name`]).
    inner_name: &'a [u8],
    inner: &'a [u8],
}

impl<'a> PeerAddress<'a> {
    fn encode(&self) -> Vec<u8> {
        let mut a = ADDRESS_PREFIX.to_vec();
        a.extend_from_slice(&self.id.to_le_bytes());
        a.extend_from_slice(&self.uid.to_le_bytes());
        for field in [self.node, self.socket, self.inner_name] {
            a.extend_from_slice(&(field.len() as u16).to_le_bytes());
            a.extend_from_slice(field);
        }
        a.extend_from_slice(self.inner);
        a
    }

    fn decode(a: &'a [u8]) -> Result<PeerAddress<'a>, String> {
        let short = || {
            format!(
                "{} bytes not of the form \
                 dynnode:<id><uid><node><socket><inner name><inner address>",
                a.len()
            )
        };
        let rest = a.strip_prefix(ADDRESS_PREFIX).ok_or_else(short)?;
        if rest.len() < 12 {
            return Err(short());
        }
        let id = word(rest, 0);
        let uid = u32::from_le_bytes(rest[8..12].try_into().expect("4 bytes"));
        let mut rest = &rest[12..];
        let mut field = || -> Result<&'a [u8], String> {
            if rest.len() < 2 {
                return Err(short());
            }
            let n = usize::from(u16::from_le_bytes([rest[0], rest[1]]));
            let f = rest.get(2..2 + n).ok_or_else(short)?;
            rest = &rest[2 + n..];
            Ok(f)
        };
        let node = field()?;
        let socket = field()?;
        let inner_name = field()?;
        Ok(PeerAddress {
            id,
            uid,
            node,
            socket,
            inner_name,
            inner: rest,
        })
    }
}

/// Where an operation goes: a mapped window (and the address in it), or the inner worker.
enum Route<'k> {
    Mapped(Arc<Window>, usize),
    Inner(Endpoint, &'k [u8]),
}

/// A dynamic worker that maps the shareable memory of peers on its node and reaches the rest
/// through an inner worker: see the module's documentation.
pub struct NodeWorker {
    id: u64,
    node: NodeId,
    address: Vec<u8>,
    timeout: Duration,
    owned: Arc<Owned>,
    eps: Mutex<IdMap<u64, Arc<Peer>>>,
    next_ep: AtomicU64,
    /// The socket thread and the end of its wake-up pair, whose closing stops it.
    server: Option<(UnixStream, JoinHandle<()>)>,
    inner: Box<dyn DynamicWorker>,
    /// Why this worker has no UCX worker ([`NodeWorker::without_ucx`]).
    without_ucx: Option<String>,
}

impl std::fmt::Debug for NodeWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeWorker")
            .field("id", &format_args!("{:016x}", self.id))
            .field("node", &self.node)
            .field("inner", &self.inner.name())
            .finish_non_exhaustive()
    }
}

impl NodeWorker {
    /// A worker over `inner`: opens its socket and starts its thread. `timeout` bounds each
    /// exchange with a peer's socket (the greeting, a descriptor's request).
    pub fn new(
        inner: Box<dyn DynamicWorker>,
        timeout: Duration,
    ) -> Result<NodeWorker, TransportError> {
        let lib = |call: String, e: &dyn std::fmt::Display| TransportError::Library {
            call,
            why: e.to_string(),
        };
        let node = NodeId::this().map_err(|e| lib("the node worker's node identity".into(), &e))?;
        let uid = rustix::process::geteuid().as_raw();
        let socket = socket_name(uid, "dyn", "the node worker's socket name")
            .map_err(|e| lib("the node worker's socket name".into(), &e))?;
        let at = SocketAddr::from_abstract_name(socket.as_bytes())
            .map_err(|e| lib(format!("socket name @{socket}"), &e))?;
        let listener =
            UnixListener::bind_addr(&at).map_err(|e| lib(format!("binding @{socket}"), &e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| lib(format!("@{socket}: O_NONBLOCK"), &e))?;
        let page_fd = mapping::memfd("shmem-dynamic-registrations", PAGE_LEN)
            .map_err(|e| lib("the node worker's registration page".into(), &e))?;
        let page = Mapping::map_shared(&page_fd, PAGE_LEN)
            .map_err(|e| lib("the node worker's registration page".into(), &e))?;
        let id = worker_id();
        let owned = Arc::new(Owned {
            id,
            uid,
            regs: Mutex::new(Regs {
                next_id: 1,
                ..Regs::default()
            }),
            page_fd,
            page,
        });
        let (wake, wakes) =
            UnixStream::pair().map_err(|e| lib("the node worker's wake-up pair".into(), &e))?;
        let shared = Arc::clone(&owned);
        let thread = std::thread::Builder::new()
            .name("shmem-node-dyn".into())
            .stack_size(128 * 1024)
            .spawn(move || serve(&listener, &wakes, &shared))
            .map_err(|e| lib("starting the node worker's thread".into(), &e))?;
        let address = PeerAddress {
            id,
            uid,
            node: &node.encode(),
            socket: socket.as_bytes(),
            inner_name: inner.name().as_bytes(),
            inner: &inner.address(),
        }
        .encode();
        Ok(NodeWorker {
            id,
            node,
            address,
            timeout,
            owned,
            eps: Mutex::new(IdMap::default()),
            next_ep: AtomicU64::new(1),
            server: Some((wake, thread)),
            inner,
            without_ucx: None,
        })
    }

    /// A worker for a process where UCX cannot be loaded (`why`: the loader's error, naming
    /// the package to install): over the loopback worker, so it maps the shareable memory of
    /// members of this node (and reaches workers of this process), while an operation on a
    /// member of another node, or on another process's private memory, fails with
    /// [`TransportError::NeedsUcx`] naming `why`. Its peers see from its address that it has
    /// no UCX worker, and fail the same way.
    pub fn without_ucx(why: String, timeout: Duration) -> Result<NodeWorker, TransportError> {
        let mut w = NodeWorker::new(Box::new(LoopbackWorker::new()), timeout)?;
        w.without_ucx = Some(why);
        Ok(w)
    }

    /// Why this worker has no UCX worker, if it was made by [`NodeWorker::without_ucx`].
    pub fn without_ucx_reason(&self) -> Option<&str> {
        self.without_ucx.as_deref()
    }

    /// The inner worker's endpoint to a peer whose inner worker is `name` at `address`, for
    /// `what` (a member of another node, private memory); `peer` names it in errors. Where
    /// one of the two has no UCX worker, a failure says so: [`TransportError::NeedsUcx`].
    fn connect_inner(
        &self,
        op: &'static str,
        peer: &str,
        what: &'static str,
        name: &str,
        address: &[u8],
    ) -> Result<Endpoint, TransportError> {
        let needs_ucx = |why: String| TransportError::NeedsUcx {
            op,
            peer: peer.to_string(),
            what,
            why,
        };
        let mine = self.inner.name();
        if name != mine {
            return Err(match &self.without_ucx {
                Some(why) => needs_ucx(format!("this process could not load: {why}")),
                None if mine == "ucx" => needs_ucx(format!(
                    "the peer's process could not load (its node worker runs over the {name} \
                     worker)"
                )),
                None => TransportError::BadWorkerData {
                    peer: peer.to_string(),
                    what: "node worker address",
                    why: format!("{peer}'s inner worker is a {name} worker, this one's a {mine}"),
                },
            });
        }
        self.inner
            .connect(address)
            .map_err(|e| match &self.without_ucx {
                Some(why) => needs_ucx(format!("this process could not load: {why}")),
                None => e,
            })
    }

    /// The inner worker.
    pub fn inner(&self) -> &dyn DynamicWorker {
        &*self.inner
    }

    fn peer(&self, op: &'static str, ep: Endpoint) -> Result<Arc<Peer>, TransportError> {
        lock(&self.eps)
            .get(&ep.0)
            .cloned()
            .ok_or_else(|| TransportError::Disconnected {
                op,
                peer: format!("endpoint {}", ep.0),
            })
    }

    /// Connects to the socket of a peer on this node and takes its registration page.
    fn open_local(&self, label: &str, a: &PeerAddress<'_>) -> Result<Local, TransportError> {
        let name = String::from_utf8_lossy(a.socket).into_owned();
        let bad = |why: String| TransportError::BadWorkerData {
            peer: label.to_string(),
            what: "node worker's socket",
            why: format!("@{name}: {why}"),
        };
        let at = SocketAddr::from_abstract_name(a.socket).map_err(|e| bad(e.to_string()))?;
        let stream = UnixStream::connect_addr(&at).map_err(|e| TransportError::PeerGone {
            op: "connect",
            peer: label.to_string(),
            why: format!("nothing answers at its node socket @{name} ({e})"),
        })?;
        admit(&stream, self.owned.uid).map_err(|e| bad(e.to_string()))?;
        (stream.set_read_timeout(Some(self.timeout)))
            .and_then(|()| stream.set_write_timeout(Some(self.timeout)))
            .map_err(|e| bad(format!("socket timeouts: {e}")))?;
        let mut greeting = [0u8; GREETING_LEN];
        let mut fds = Vec::new();
        FdReader {
            sock: stream.as_fd(),
            fds: &mut fds,
        }
        .read_exact(&mut greeting)
        .map_err(|e| self.exchange_failed("connect", label, e))?;
        if &greeting[..4] != GREETING_MAGIC || word(&greeting, 4) != a.id {
            return Err(bad(format!(
                "its greeting is not node worker {:016x}'s ({:02x?})",
                a.id, greeting
            )));
        }
        let slots = word(&greeting, 12);
        let page_fd = match (fds.pop(), fds.is_empty()) {
            (Some(fd), true) if slots == SLOTS as u64 => fd,
            _ => return Err(bad(format!("a greeting of {slots} slots without its page"))),
        };
        match mapping::file_len(page_fd.as_fd()) {
            Ok(n) if n >= PAGE_LEN => {}
            _ => return Err(bad("its registration page is too short".into())),
        }
        let page = Mapping::map_shared_at(&page_fd, 0, PAGE_LEN)
            .map_err(|e| bad(format!("mapping its registration page: {e}")))?;
        Ok(Local {
            stream,
            page,
            conn: Mutex::new(Conn::default()),
        })
    }

    /// The error of an exchange with a peer's socket that failed with `e`.
    fn exchange_failed(&self, op: &'static str, peer: &str, e: io::Error) -> TransportError {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => TransportError::Deadline {
                op,
                peer: peer.to_string(),
                after: self.timeout,
            },
            _ => TransportError::PeerGone {
                op,
                peer: peer.to_string(),
                why: format!("its node socket: {e}"),
            },
        }
    }

    /// The window of `p`'s registration `h` (slot `slot`), mapped on first use.
    fn window(
        &self,
        op: &'static str,
        p: &Peer,
        l: &Local,
        key: &[u8],
        h: &KeyHeader,
        slot: u64,
    ) -> Result<Arc<Window>, TransportError> {
        let slot = usize::try_from(slot)
            .ok()
            .filter(|&s| s < SLOTS)
            .ok_or_else(|| bad_key(op, &p.label, key, format!("slot {slot} is not a slot")))?;
        let unregistered = || bad_key(op, &p.label, key, "the peer unregistered it".into());
        let mut conn = lock(&l.conn);
        l.alive(&mut conn, op, &p.label)?;
        if !l.live(slot, h.id) {
            conn.maps.remove(&h.id);
            return Err(unregistered());
        }
        if let Some(w) = conn.maps.get(&h.id) {
            return Ok(Arc::clone(w));
        }
        let (fd, fd_offset, len) = self.fetch(op, p, l, &mut conn, key, h)?;
        let aligned = fd_offset - fd_offset % page_size();
        let skew = (fd_offset - aligned) as usize;
        let map = Mapping::map_shared_at(&fd, aligned, skew + len as usize).map_err(|e| {
            bad_key(
                op,
                &p.label,
                key,
                format!("mapping its {len} bytes at offset {fd_offset} of its file: {e}"),
            )
        })?;
        // Windows of registrations withdrawn meanwhile go now.
        conn.maps.retain(|&id, w| l.live(w.slot, id));
        let w = Arc::new(Window { map, skew, slot });
        conn.maps.insert(h.id, Arc::clone(&w));
        Ok(w)
    }

    /// Asks `p`'s socket (its connection `conn`, locked) for the descriptor of registration
    /// `h`: the descriptor, the registration's offset in the file and its length.
    fn fetch(
        &self,
        op: &'static str,
        p: &Peer,
        l: &Local,
        conn: &mut Conn,
        key: &[u8],
        h: &KeyHeader,
    ) -> Result<(OwnedFd, u64, u64), TransportError> {
        let unregistered = || bad_key(op, &p.label, key, "the peer unregistered it".into());
        // Ask for the descriptor. A failed exchange leaves the connection out of step: it
        // serves no more.
        let mut req = [0u8; REQUEST_LEN];
        req[0] = OP_MAP;
        req[8..].copy_from_slice(&h.id.to_le_bytes());
        let mut reply = [0u8; REPLY_LEN];
        let mut fds = Vec::new();
        let exchanged = send_with_fds(l.stream.as_fd(), &req, &[]).and_then(|()| {
            FdReader {
                sock: l.stream.as_fd(),
                fds: &mut fds,
            }
            .read_exact(&mut reply)
        });
        if let Err(e) = exchanged {
            let err = self.exchange_failed(op, &p.label, e);
            conn.broken = Some(format!("its node socket failed: {err}"));
            return Err(err);
        }
        let (fd_offset, len) = (word(&reply, 8), word(&reply, 16));
        let fd = match (reply[0], fds.pop(), fds.is_empty()) {
            (MAP_OK, Some(fd), true) if len == h.len => fd,
            (MAP_UNKNOWN, None, true) => return Err(unregistered()),
            (MAP_PRIVATE, None, true) => {
                return Err(bad_key(
                    op,
                    &p.label,
                    key,
                    "the peer registered it as private memory, yet its key has a slot".into(),
                ))
            }
            (status, _, _) => {
                return Err(TransportError::BadWorkerData {
                    peer: p.label.clone(),
                    what: "node worker's reply",
                    why: format!(
                        "{} for {}: status {status}, {len} bytes, {} descriptors",
                        p.label,
                        key_name(key),
                        fds.len()
                    ),
                })
            }
        };
        Ok((fd, fd_offset, len))
    }

    /// The inner worker's endpoint to `p`, made on first use; `key` for the error.
    fn inner_endpoint(
        &self,
        op: &'static str,
        p: &Peer,
        key: &[u8],
    ) -> Result<Endpoint, TransportError> {
        let mut e = lock(&p.inner);
        if let Some(ep) = *e {
            return Ok(ep);
        }
        let what = "private memory (registered without its file)";
        let ep = self
            .connect_inner(op, &p.label, what, &p.inner_name, &p.inner_address)
            .map_err(|e| match e {
                e @ TransportError::NeedsUcx { .. } => e,
                e => bad_key(
                    op,
                    &p.label,
                    key,
                    format!(
                        "{what} is reached through the {} worker, which cannot connect: {e}",
                        self.inner.name()
                    ),
                ),
            })?;
        *e = Some(ep);
        Ok(ep)
    }

    /// Where `op` of `len` bytes at `offset` of `key` goes, checked.
    fn route<'k>(
        &self,
        op: &'static str,
        p: &Peer,
        key: &'k [u8],
        offset: u64,
        len: usize,
    ) -> Result<Route<'k>, TransportError> {
        let (h, rest) = KeyHeader::decode(key).map_err(|why| bad_key(op, &p.label, key, why))?;
        if h.worker != p.id {
            return Err(bad_key(
                op,
                &p.label,
                key,
                format!("the key was registered by worker {:016x}", h.worker),
            ));
        }
        if rest.len() < 8 {
            return Err(bad_key(
                op,
                &p.label,
                key,
                "not a node worker's key (no slot)".into(),
            ));
        }
        h.address_of(offset, len)
            .map_err(|why| bad_key(op, &p.label, key, why))?;
        let slot = word(rest, 0);
        match &p.local {
            Some(l) if slot != PRIVATE => {
                let w = self.window(op, p, l, key, &h, slot)?;
                // The window maps the registration as its owner reported it: a key claiming
                // more is refused here.
                if offset + len as u64 > (w.map.len() - w.skew) as u64 {
                    return Err(bad_key(
                        op,
                        &p.label,
                        key,
                        format!(
                            "bytes [{offset}, {offset}+{len}) are outside its registration of {} \
                             bytes",
                            w.map.len() - w.skew
                        ),
                    ));
                }
                let at = w.map.addr() + w.skew + offset as usize;
                Ok(Route::Mapped(w, at))
            }
            _ => Ok(Route::Inner(self.inner_endpoint(op, p, key)?, &rest[8..])),
        }
    }

    /// Registers with the inner worker and records the registration (`share`: its file).
    fn record(
        &self,
        inner: Registration,
        inner_key: Vec<u8>,
        share: Option<(OwnedFd, u64)>,
    ) -> Result<(Registration, Vec<u8>), TransportError> {
        let (base, len) = (inner.base, inner.len);
        let mut regs = lock(&self.owned.regs);
        let id = regs.next_id;
        let share = match share {
            None => None,
            Some((fd, fd_offset)) => {
                let slot = match regs.free_slots.pop() {
                    Some(s) => s,
                    None if regs.next_slot < SLOTS => {
                        regs.next_slot += 1;
                        regs.next_slot - 1
                    }
                    None => {
                        drop(regs);
                        let _ = self.inner.unregister(inner);
                        return Err(TransportError::Library {
                            call: format!("register_fd of {len} bytes at {base:#x}"),
                            why: format!(
                                "{SLOTS} shareable registrations are live: unregister one first"
                            ),
                        });
                    }
                };
                Some(Share {
                    fd,
                    fd_offset,
                    slot,
                })
            }
        };
        regs.next_id += 1;
        let slot = share.as_ref().map_or(PRIVATE, |s| s.slot as u64);
        let mut rest = slot.to_le_bytes().to_vec();
        rest.extend_from_slice(&inner_key);
        let key = KeyHeader {
            worker: self.id,
            id,
            base: base as u64,
            len: len as u64,
        }
        .encode(&rest);
        if let Some(s) = &share {
            self.owned.set_slot(s.slot, id);
        }
        regs.map.insert(
            id,
            Reg {
                inner,
                len: len as u64,
                share,
            },
        );
        Ok((Registration { id, base, len }, key))
    }
}

/// The socket's thread: admits peers, greets them, answers their requests; returns when the
/// wake-up pair's other end closes.
fn serve(listener: &UnixListener, wake: &UnixStream, owned: &Owned) {
    let mut conns: Vec<(UnixStream, Vec<u8>)> = Vec::new();
    loop {
        let ready: Vec<bool> = {
            let mut fds = Vec::with_capacity(conns.len() + 2);
            fds.push(PollFd::new(wake, PollFlags::IN));
            fds.push(PollFd::new(listener, PollFlags::IN));
            for (c, _) in &conns {
                fds.push(PollFd::new(c, PollFlags::IN | PollFlags::RDHUP));
            }
            match poll(&mut fds, None) {
                Ok(_) => {}
                Err(Errno::INTR) => continue,
                Err(e) => {
                    tracing::warn!("dynamic node worker: stopped serving its socket: {e}");
                    return;
                }
            }
            fds.iter().map(|f| !f.revents().is_empty()).collect()
        };
        if ready[0] {
            return;
        }
        let mut i = 2;
        conns.retain_mut(|(c, buf)| {
            i += 1;
            !ready[i - 1] || answer(c, buf, owned)
        });
        if ready[1] {
            loop {
                match listener.accept() {
                    Ok((s, _)) => match admit(&s, owned.uid) {
                        Ok(()) => {
                            if let Some(s) = greet(s, owned) {
                                conns.push((s, Vec::new()));
                            }
                        }
                        Err(why) => tracing::warn!("dynamic node worker: refused a peer: {why}"),
                    },
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                        ) => {}
                    Err(e) => {
                        tracing::warn!("dynamic node worker: cannot accept a peer: {e}");
                        break;
                    }
                }
            }
        }
    }
}

/// Sends a new peer the greeting and the page's descriptor; the connection, non-blocking, or
/// `None` when that failed.
fn greet(s: UnixStream, owned: &Owned) -> Option<UnixStream> {
    let mut g = GREETING_MAGIC.to_vec();
    g.extend_from_slice(&owned.id.to_le_bytes());
    g.extend_from_slice(&(SLOTS as u64).to_le_bytes());
    let sent = s
        .set_nonblocking(true)
        .and_then(|()| send_with_fds(s.as_fd(), &g, &[owned.page_fd.as_fd()]));
    match sent {
        Ok(()) => Some(s),
        Err(e) => {
            tracing::debug!("dynamic node worker: cannot greet a peer: {e}");
            None
        }
    }
}

/// Reads what a peer sent and answers each whole request; false when the connection ends
/// (closed, broken, or a request that is not one).
fn answer(c: &UnixStream, buf: &mut Vec<u8>, owned: &Owned) -> bool {
    let mut chunk = [0u8; 256];
    loop {
        match (&*c).read(&mut chunk) {
            Ok(0) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    while buf.len() >= REQUEST_LEN {
        let req: Vec<u8> = buf.drain(..REQUEST_LEN).collect();
        if req[0] != OP_MAP {
            tracing::debug!("dynamic node worker: a peer sent {req:02x?}: closing it");
            return false;
        }
        let id = word(&req, 8);
        let regs = lock(&owned.regs);
        let mut reply = [0u8; REPLY_LEN];
        let fd = match regs.map.get(&id) {
            Some(Reg {
                len,
                share: Some(s),
                ..
            }) => {
                reply[8..16].copy_from_slice(&s.fd_offset.to_le_bytes());
                reply[16..].copy_from_slice(&len.to_le_bytes());
                Some(s.fd.as_fd())
            }
            Some(_) => {
                reply[0] = MAP_PRIVATE;
                None
            }
            None => {
                reply[0] = MAP_UNKNOWN;
                None
            }
        };
        let fds: &[BorrowedFd<'_>] = match &fd {
            Some(f) => std::slice::from_ref(f),
            None => &[],
        };
        if let Err(e) = send_with_fds(c.as_fd(), &reply, fds) {
            tracing::debug!("dynamic node worker: cannot answer a peer: {e}");
            return false;
        }
    }
    true
}

impl DynamicWorker for NodeWorker {
    fn name(&self) -> &'static str {
        "node"
    }

    fn address(&self) -> Vec<u8> {
        self.address.clone()
    }

    fn connect(&self, peer: &[u8]) -> Result<Endpoint, TransportError> {
        let a = PeerAddress::decode(peer).map_err(|why| TransportError::BadWorkerData {
            peer: "a peer".into(),
            what: "node worker address",
            why,
        })?;
        let mut label = peer_label(a.id);
        let same_node = a.uid == self.owned.uid
            && NodeId::decode(a.node).is_ok_and(|n| n.same_node(&self.node));
        let inner_name = String::from_utf8_lossy(a.inner_name).into_owned();
        let (local, inner) = if same_node {
            label.push_str(" (this node)");
            (Some(self.open_local(&label, &a)?), None)
        } else {
            label.push_str(" (another node)");
            let what = "a member of another node";
            let ep = self.connect_inner("connect", &label, what, &inner_name, a.inner)?;
            (None, Some(ep))
        };
        let ep = self.next_ep.fetch_add(1, Ordering::Relaxed);
        let p = Peer {
            id: a.id,
            label,
            local,
            inner_name,
            inner_address: a.inner.to_vec(),
            inner: Mutex::new(inner),
        };
        lock(&self.eps).insert(ep, Arc::new(p));
        Ok(Endpoint(ep))
    }

    fn peer_name(&self, ep: Endpoint) -> Option<String> {
        lock(&self.eps).get(&ep.0).map(|p| p.label.clone())
    }

    unsafe fn register(
        &self,
        base: *mut u8,
        len: usize,
    ) -> Result<(Registration, Vec<u8>), TransportError> {
        // SAFETY: the caller's contract.
        let (inner, key) = unsafe { self.inner.register(base, len) }?;
        self.record(inner, key, None)
    }

    unsafe fn register_fd(
        &self,
        fd: BorrowedFd<'_>,
        fd_offset: u64,
        base: *mut u8,
        len: usize,
    ) -> Result<(Registration, Vec<u8>), TransportError> {
        if len == 0 {
            return Err(TransportError::BadArgument {
                arg: "len",
                value: 0,
            });
        }
        let call = || format!("register_fd of {len} bytes at offset {fd_offset} of its file");
        let size = rustix::fs::fstat(fd)
            .map_err(|e| TransportError::Library {
                call: call(),
                why: format!("fstat: {e}"),
            })?
            .st_size as u64;
        if fd_offset
            .checked_add(len as u64)
            .is_none_or(|end| end > size)
        {
            return Err(TransportError::Library {
                call: call(),
                why: format!("the file holds {size} bytes"),
            });
        }
        let own = rustix::io::fcntl_dupfd_cloexec(fd, 0).map_err(|e| TransportError::Library {
            call: call(),
            why: format!("dup: {e}"),
        })?;
        // SAFETY: the caller's contract.
        let (inner, key) = unsafe { self.inner.register_fd(fd, fd_offset, base, len) }?;
        self.record(inner, key, Some((own, fd_offset)))
    }

    fn shared_file(
        &self,
        ep: Endpoint,
        key: &[u8],
    ) -> Result<Option<(OwnedFd, u64, u64)>, TransportError> {
        let op = "shared_file";
        let p = self.peer(op, ep)?;
        let (h, rest) = KeyHeader::decode(key).map_err(|why| bad_key(op, &p.label, key, why))?;
        if h.worker != p.id || rest.len() < 8 {
            return Err(bad_key(
                op,
                &p.label,
                key,
                "not a key of this peer's node worker".into(),
            ));
        }
        let slot = word(rest, 0);
        let Some(l) = p.local.as_ref().filter(|_| slot != PRIVATE) else {
            return Ok(None);
        };
        let slot = usize::try_from(slot)
            .ok()
            .filter(|&s| s < SLOTS)
            .ok_or_else(|| bad_key(op, &p.label, key, format!("slot {slot} is not a slot")))?;
        let mut conn = lock(&l.conn);
        l.alive(&mut conn, op, &p.label)?;
        if !l.live(slot, h.id) {
            return Err(bad_key(
                op,
                &p.label,
                key,
                "the peer unregistered it".into(),
            ));
        }
        self.fetch(op, &p, l, &mut conn, key, &h).map(Some)
    }

    fn unregister(&self, reg: Registration) -> Result<(), TransportError> {
        let r = {
            let mut regs = lock(&self.owned.regs);
            let r = regs
                .map
                .remove(&reg.id)
                .ok_or(TransportError::BadArgument {
                    arg: "registration",
                    value: reg.id as i64,
                })?;
            if let Some(s) = &r.share {
                self.owned.set_slot(s.slot, 0);
                regs.free_slots.push(s.slot);
            }
            r
        };
        self.inner.unregister(r.inner)
    }

    fn put(&self, ep: Endpoint, key: &[u8], offset: u64, src: &[u8]) -> Result<(), TransportError> {
        let p = self.peer("put", ep)?;
        match self.route("put", &p, key, offset, src.len())? {
            Route::Mapped(_w, at) => {
                // SAFETY: `at..at+len` lies in the window (range checked against the
                // registration, which the window maps whole), kept mapped by `_w`.
                unsafe { std::ptr::copy(src.as_ptr(), at as *mut u8, src.len()) };
                Ok(())
            }
            Route::Inner(iep, k) => self.inner.put(iep, k, offset, src),
        }
    }

    fn get(
        &self,
        ep: Endpoint,
        key: &[u8],
        offset: u64,
        dst: &mut [u8],
    ) -> Result<(), TransportError> {
        let p = self.peer("get", ep)?;
        match self.route("get", &p, key, offset, dst.len())? {
            Route::Mapped(_w, at) => {
                // SAFETY: as in put, the other way.
                unsafe { std::ptr::copy(at as *const u8, dst.as_mut_ptr(), dst.len()) };
                Ok(())
            }
            Route::Inner(iep, k) => self.inner.get(iep, k, offset, dst),
        }
    }

    unsafe fn put_nb(
        &self,
        ep: Endpoint,
        key: &[u8],
        offset: u64,
        src: *const u8,
        len: usize,
    ) -> Result<(), TransportError> {
        let p = self.peer("put", ep)?;
        match self.route("put", &p, key, offset, len)? {
            Route::Mapped(_w, at) => {
                // SAFETY: as in put; `src` is the caller's (valid for `len` bytes).
                unsafe { std::ptr::copy(src, at as *mut u8, len) };
                Ok(())
            }
            // SAFETY: the caller's contract.
            Route::Inner(iep, k) => unsafe { self.inner.put_nb(iep, k, offset, src, len) },
        }
    }

    unsafe fn get_nb(
        &self,
        ep: Endpoint,
        key: &[u8],
        offset: u64,
        dst: *mut u8,
        len: usize,
    ) -> Result<(), TransportError> {
        let p = self.peer("get", ep)?;
        match self.route("get", &p, key, offset, len)? {
            Route::Mapped(_w, at) => {
                // SAFETY: as in get; `dst` is the caller's (valid for `len` bytes).
                unsafe { std::ptr::copy(at as *const u8, dst, len) };
                Ok(())
            }
            // SAFETY: the caller's contract.
            Route::Inner(iep, k) => unsafe { self.inner.get_nb(iep, k, offset, dst, len) },
        }
    }

    fn flush(&self, ep: Endpoint) -> Result<(), TransportError> {
        let p = self.peer("flush", ep)?;
        if let Some(l) = &p.local {
            l.alive(&mut lock(&l.conn), "flush", &p.label)?;
            fence(Ordering::SeqCst);
        }
        let inner = *lock(&p.inner);
        match inner {
            Some(iep) => self.inner.flush(iep),
            None => Ok(()),
        }
    }

    fn disconnect(&self, ep: Endpoint) -> Result<(), TransportError> {
        match self.end(ep)? {
            Some(iep) => self.inner.disconnect(iep),
            None => Ok(()),
        }
    }

    fn disconnect_gone(&self, ep: Endpoint) -> Result<(), TransportError> {
        match self.end(ep)? {
            Some(iep) => self.inner.disconnect_gone(iep),
            None => Ok(()),
        }
    }
}

impl NodeWorker {
    /// Forgets `ep`: its windows and connection go with the last reference (an operation still
    /// copying holds one). Returns the inner worker's endpoint, if one was made, for the caller
    /// to end.
    fn end(&self, ep: Endpoint) -> Result<Option<Endpoint>, TransportError> {
        let p = lock(&self.eps)
            .remove(&ep.0)
            .ok_or_else(|| TransportError::Disconnected {
                op: "disconnect",
                peer: format!("endpoint {}", ep.0),
            })?;
        let inner = lock(&p.inner).take();
        Ok(inner)
    }
}

impl Drop for NodeWorker {
    fn drop(&mut self) {
        // Peers' operations fail from now on (before the slots are cleared below, so that
        // they fail as gone, not as unregistered).
        self.owned
            .page
            .atomic_u64(STATE_WORD)
            .store(GONE, Ordering::Release);
        if let Some((wake, thread)) = self.server.take() {
            drop(wake);
            if thread.join().is_err() {
                tracing::debug!("dynamic node worker: its socket's thread panicked");
            }
        }
        lock(&self.eps).clear();
        let regs: Vec<Reg> = {
            let mut regs = lock(&self.owned.regs);
            regs.free_slots.clear();
            regs.map.drain().map(|(_, r)| r).collect()
        };
        for r in regs {
            if let Some(s) = &r.share {
                self.owned.set_slot(s.slot, 0);
            }
            if let Err(e) = self.inner.unregister(r.inner) {
                tracing::debug!("dynamic node worker: {e}");
            }
        }
    }
}
