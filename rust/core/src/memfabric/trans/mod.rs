//! memfabric_hybrid's transfer engine (`smem_trans_*`, docs/memfabric.md) over the group API.
//!
//! - **Engines.** `create` joins the store's group `smem-trans` with the engine's unique id
//!   (`ip:port`, a name: nothing binds that port) as its member id, the rank the store's
//!   pick. An id another live engine holds is refused. Each engine publishes one record
//!   under the group's application key `engine/<id>`: its role, rank, process id and start
//!   time, node, and its registrations (address, length, name, private or shareable).
//! - **Registrations.** `register_mem` registers the user's range with the group as private
//!   memory ([`Group::register`]: UCX keys for peers of other nodes) under a name unique to
//!   the engine, then republishes the record; `malloc` allocates shareable memory
//!   ([`Group::alloc`], a memfd peers of this node map). `deregister_mem` and `free` withdraw
//!   the registration: every live member confirms it dropped the key before the call returns,
//!   so a later transfer into that memory fails (the key's publication is what a transfer
//!   checks). Ranges are registered as given (memfabric widens them to 2 MiB, which would
//!   expose the user's neighbouring memory).
//! - **Discovery.** A transfer finds the peer's record in the store: at once when it is there
//!   (published before the peer's create or register returned), else it waits on the key (a
//!   watch of the store, no polling) for up to the peer timeout (5 s,
//!   `SHMEM_TRANS_PEER_TIMEOUT`), then fails. A remote range in none of the record's
//!   registrations is looked up once more (the peer may have registered since) and refused
//!   before anything moves.
//! - **Data.** A private registration of a peer of this node is copied by the kernel
//!   ([`vm`]: `process_vm_writev`/`readv`, one copy, a batch in few calls), after the group
//!   confirmed the registration is still published; where the kernel refuses (ptrace policy),
//!   the engine says so once and uses the group's transport instead. Shareable memory of this
//!   node is copied through the group's mapping of it; any memory of another node over UCX.
//!   Group transfers are issued non-blocking and completed with one flush of the peer.
//! - **Failure.** A peer whose engine ended, left or was killed is gone for the group (its
//!   store connection closed): transfers to it fail at once naming it; a process that ended
//!   is also seen by its pidfd before a kernel copy.
//! - **NPU memory** ([`device`]): on the npu device, init opens the NPU; registrations of NPU
//!   memory are exported to the engines of this node, which import them and copy by the NPU
//!   (on a submit's ACL stream too); another node's NPU memory is refused.

pub mod device;
pub mod vm;

use std::collections::{BTreeMap, HashMap};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use shmem_store::addr::StoreAddr;
use shmem_store::{BootstrapError, TcpDial};

use crate::bootstrap::bits::{hex, unhex};
use crate::device::npu::Npu;
use crate::group::{Group, GroupError, GroupOptions};
use crate::idmap::IdMap;
use device::{DeviceElement, DeviceMem, NpuEngine};
use vm::{Process, VmError};

/// memfabric's codes.
pub const ERROR: i32 = -1;
pub const INVALID_PARAM: i32 = -2000;
pub const DUPLICATED_OBJECT: i32 = -2006;
pub const NOT_INITIALIZED: i32 = -2008;

/// memfabric's roles.
pub const ROLE_SENDER: u32 = 1;
pub const ROLE_RECEIVER: u32 = 2;

/// memfabric's `COPY_EXTEND_FLAG`, the one flag a transfer accepts (an NPU kernel's; ignored).
pub const COPY_EXTEND_FLAG: u32 = 2;

/// The group every engine of a store joins.
const GROUP: &str = "smem-trans";
/// Engines a store holds at once (memfabric's limit).
const MAX_ENGINES: u32 = 512;
/// `smem_trans_malloc` sizes are multiples of this.
const MALLOC_UNIT: u64 = 2 << 20;
/// Bound of the group's waits (a withdrawal's confirmations, a newcomer's address) and of
/// its transport's operations.
const GROUP_TIMEOUT: Duration = Duration::from_secs(10);

/// A failed call: memfabric's code and the reason (without the call's name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransError {
    pub code: i32,
    pub message: String,
}

impl TransError {
    pub fn new(code: i32, message: impl Into<String>) -> TransError {
        TransError {
            code,
            message: message.into(),
        }
    }
    pub fn invalid(message: impl Into<String>) -> TransError {
        TransError::new(INVALID_PARAM, message)
    }
    pub fn error(message: impl Into<String>) -> TransError {
        TransError::new(ERROR, message)
    }
}

type Result<T> = std::result::Result<T, TransError>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What init set.
struct State {
    device_id: u32,
    /// The NPU, on the npu device.
    npu: Option<Npu>,
    engines: IdMap<usize, Arc<Engine>>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// Whether the kernel refused a cross-process copy in this process: from then on the group's
/// transport carries private memory of this node's peers too.
static VM_DENIED: AtomicBool = AtomicBool::new(false);

/// A line for memfabric's log, at warning level, that the call which made it hands to
/// `libmf_smem.so` with its success ([`take_note`]).
static NOTE: Mutex<Option<String>> = Mutex::new(None);

/// The line a call left for memfabric's log, if any.
pub fn take_note() -> Option<String> {
    lock(&NOTE).take()
}

/// `smem_trans_init`: records the device id and, on the npu device, opens that NPU
/// ([`device::open`]); a second call changes nothing. Whether it was initialised now.
pub fn init(device_id: u32) -> Result<bool> {
    let mut s = lock(&STATE);
    if s.is_some() {
        return Ok(false);
    }
    let npu = device::open(device_id)?;
    tracing::info!(
        "smem_trans_init: device {device_id} ({})",
        if npu.is_some() {
            "npu: NPU and host memory"
        } else {
            "host memory"
        }
    );
    *s = Some(State {
        device_id,
        npu,
        engines: IdMap::default(),
    });
    Ok(true)
}

/// `smem_trans_uninit`: destroys this process's engines. Whether it was initialised.
pub fn uninit() -> bool {
    let Some(s) = lock(&STATE).take() else {
        return false;
    };
    for (_, e) in s.engines {
        e.end();
    }
    true
}

fn engine(handle: usize) -> Result<Arc<Engine>> {
    let s = lock(&STATE);
    let s = s.as_ref().ok_or_else(|| {
        TransError::invalid("the transfer engine is not initialised (call smem_trans_init first)")
    })?;
    s.engines.get(&handle).cloned().ok_or_else(|| {
        TransError::new(
            -2007,
            format!("invalid argument handle={handle:#x}: no engine of this process has it"),
        )
    })
}

/// Checks a unique id as memfabric does: `<ipv4>:<port>` or `[<ipv6>]:<port>`, port
/// 1025..65535.
pub fn parse_unique_id(id: &str) -> Result<()> {
    let bad = |why: &str| {
        TransError::invalid(format!(
            "invalid argument uniqueId='{id}': {why} (expected <ipv4>:<port> or [<ipv6>]:<port>, \
             port 1025..65535)"
        ))
    };
    let port = if let Some(rest) = id.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(|| bad("'[' without ']'"))?;
        host.parse::<Ipv6Addr>()
            .map_err(|_| bad(&format!("'{host}' is not an IPv6 address")))?;
        after
            .strip_prefix(':')
            .ok_or_else(|| bad("no ':<port>' after ']'"))?
    } else {
        let (host, port) = id.rsplit_once(':').ok_or_else(|| bad("no ':<port>'"))?;
        host.parse::<Ipv4Addr>()
            .map_err(|_| bad(&format!("'{host}' is not an IPv4 address")))?;
        port
    };
    let port: u32 = port
        .parse()
        .map_err(|_| bad(&format!("port '{port}' is not a number")))?;
    if !(1025..=65535).contains(&port) {
        return Err(bad(&format!("port {port} is not in 1025..65535")));
    }
    Ok(())
}

/// This process's node as engines compare it: boot, network namespace, process namespace (a
/// kernel copy needs the peer's process id to mean the same process here). Where they cannot
/// be read, a name no other process has: such an engine reaches its peers by the network.
fn node_id() -> String {
    use std::os::unix::fs::MetadataExt;
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let ns = |p: &str| std::fs::metadata(p).map(|m| m.ino()).ok();
    match (
        boot.trim(),
        ns("/proc/self/ns/net"),
        ns("/proc/self/ns/pid"),
    ) {
        (boot, Some(net), Some(pid)) if !boot.is_empty() => format!("{boot}/{net}/{pid}"),
        _ => format!(
            "unknown-{}-{}",
            std::process::id(),
            vm::start_time(std::process::id()).unwrap_or(0)
        ),
    }
}

fn role_name(role: u32) -> &'static str {
    match role {
        ROLE_SENDER => "sender",
        ROLE_RECEIVER => "receiver",
        _ => "none",
    }
}

/// A registration of an engine, as its record publishes it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Region {
    len: u64,
    name: String,
    /// Shareable memory (`smem_trans_malloc`), mapped by peers of its node.
    shared: bool,
    /// NPU memory: how it is exported (imported by peers of its node).
    device: Option<DeviceMem>,
}

/// An engine's record: what its peers need to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    role: u32,
    rank: u32,
    pid: u32,
    start: u64,
    node: String,
    /// Its NPU process id and device, on the npu device.
    npu: Option<(i32, i32)>,
    /// By start address.
    regions: BTreeMap<u64, Region>,
}

impl Record {
    fn encode(&self) -> Vec<u8> {
        let mut s = format!(
            "role {}\nrank {}\npid {} {}\nnode {}\n",
            self.role, self.rank, self.pid, self.start, self.node
        );
        if let Some((pid, device)) = self.npu {
            s.push_str(&format!("npu {pid} {device}\n"));
        }
        for (addr, r) in &self.regions {
            match &r.device {
                Some(DeviceMem::Handle { shareable, device }) => s.push_str(&format!(
                    "r {addr} {} {} d {shareable} {device}\n",
                    r.len, r.name
                )),
                Some(DeviceMem::Ipc {
                    key,
                    offset,
                    device,
                }) => s.push_str(&format!(
                    "r {addr} {} {} i {} {offset} {device}\n",
                    r.len,
                    r.name,
                    hex(key.as_bytes())
                )),
                None => s.push_str(&format!(
                    "r {addr} {} {} {}\n",
                    r.len,
                    r.name,
                    if r.shared { 's' } else { 'p' }
                )),
            }
        }
        s.into_bytes()
    }

    fn decode(bytes: &[u8]) -> Option<Record> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut r = Record {
            role: 0,
            rank: 0,
            pid: 0,
            start: 0,
            node: String::new(),
            npu: None,
            regions: BTreeMap::new(),
        };
        for line in text.lines() {
            let mut w = line.split(' ');
            match w.next()? {
                "role" => r.role = w.next()?.parse().ok()?,
                "rank" => r.rank = w.next()?.parse().ok()?,
                "pid" => {
                    r.pid = w.next()?.parse().ok()?;
                    r.start = w.next()?.parse().ok()?;
                }
                "node" => r.node = w.next()?.to_string(),
                "npu" => r.npu = Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?)),
                "r" => {
                    let addr = w.next()?.parse().ok()?;
                    let len = w.next()?.parse().ok()?;
                    let name = w.next()?.to_string();
                    let kind = w.next()?;
                    let device = match kind {
                        "d" => Some(DeviceMem::Handle {
                            shareable: w.next()?.parse().ok()?,
                            device: w.next()?.parse().ok()?,
                        }),
                        "i" => Some(DeviceMem::Ipc {
                            key: String::from_utf8(unhex(w.next()?)?).ok()?,
                            offset: w.next()?.parse().ok()?,
                            device: w.next()?.parse().ok()?,
                        }),
                        _ => None,
                    };
                    r.regions.insert(
                        addr,
                        Region {
                            len,
                            name,
                            shared: kind == "s",
                            device,
                        },
                    );
                }
                _ => {}
            }
        }
        Some(r)
    }

    /// The registration holding `[addr, addr+len)`: its start and itself.
    fn region_of(&self, addr: u64, len: u64) -> Option<(u64, &Region)> {
        // The largest start at or below `addr` first (memfabric's lookup), then any other
        // registration that holds the range (registrations may overlap).
        let fits = |(&start, r): (&u64, &Region)| {
            addr >= start
                && addr
                    .checked_add(len)
                    .is_some_and(|end| end <= start + r.len)
        };
        self.regions
            .range(..=addr)
            .next_back()
            .filter(|&e| fits(e))
            .or_else(|| self.regions.range(..=addr).rev().find(|&e| fits(e)))
            .map(|(&s, r)| (s, r))
    }
}

/// A peer as this engine knows it.
struct Peer {
    record: Record,
    /// Its process, for kernel copies (a peer of this node), opened at first use.
    process: Mutex<Option<Arc<Process>>>,
}

/// A transfer engine of this process.
pub struct Engine {
    id: String,
    role: u32,
    group: Group,
    node: String,
    /// What this engine publishes; its lock orders registrations.
    record: Mutex<Record>,
    /// Registrations made by `malloc`, by address.
    allocated: Mutex<HashMap<u64, String>>,
    /// Peers looked up, by unique id.
    peers: Mutex<HashMap<String, Arc<Peer>>>,
    peer_timeout: Duration,
    ended: AtomicBool,
    /// NPU memory, on the npu device.
    device: Option<NpuEngine>,
}

fn group_err(what: &str, e: GroupError) -> TransError {
    TransError::error(format!("{what}: {e}"))
}

/// How long a transfer waits for a peer the store does not know yet (`SHMEM_TRANS_PEER_TIMEOUT`).
fn peer_timeout() -> Result<Duration> {
    shmem_base::env::trans_peer_timeout().map_err(|e| TransError::invalid(e.to_string()))
}

/// `smem_trans_create`: joins the store's engines as `unique_id`; the handle.
pub fn create(
    url: &str,
    unique_id: &str,
    role: u32,
    init_timeout_s: u32,
    start_server: bool,
) -> Result<usize> {
    let (device_id, npu) = {
        let s = lock(&STATE);
        let s = s.as_ref().ok_or_else(|| {
            TransError::new(
                NOT_INITIALIZED,
                "the transfer engine is not initialised (call smem_trans_init first)",
            )
        })?;
        if s.engines.values().any(|e| e.id == unique_id) {
            return Err(TransError::new(
                DUPLICATED_OBJECT,
                format!("invalid argument uniqueId='{unique_id}': this process has an engine of that id"),
            ));
        }
        (s.device_id, s.npu.clone())
    };
    if role != ROLE_SENDER && role != ROLE_RECEIVER {
        return Err(TransError::invalid(format!(
            "invalid argument config->role={role}: not SMEM_TRANS_SENDER (1) or \
             SMEM_TRANS_RECEIVER (2)"
        )));
    }
    parse_unique_id(unique_id)?;
    let addr = super::parse_url(url).map_err(|e| TransError::invalid(e.message()))?;
    let peer_timeout = peer_timeout()?;
    if init_timeout_s == 0 {
        return Err(TransError::invalid(
            "invalid argument config->initTimeout=0: a timeout is at least 1 s",
        ));
    }
    if start_server {
        // Served here when this host has the address (memfabric's rule); otherwise, or when
        // another process serves it already, this engine is its client.
        match super::config_store_open(url) {
            Ok(()) => tracing::info!("smem_trans_create: this process serves the store {url}"),
            Err(e) => tracing::info!("smem_trans_create: not serving {url} here: {}", e.message()),
        }
    }
    let dial = TcpDial {
        addr: StoreAddr::from_socket(addr),
        tls: None,
        job: String::new(),
    };
    let mut options = GroupOptions::new(MAX_ENGINES);
    options.connect_timeout = Duration::from_secs(u64::from(init_timeout_s));
    options.timeout = GROUP_TIMEOUT;
    options.member.control_timeout = GROUP_TIMEOUT;
    let duplicate = || {
        TransError::new(
            DUPLICATED_OBJECT,
            format!(
                "invalid argument uniqueId='{unique_id}': another engine of the store {url} has \
                 that id"
            ),
        )
    };
    let group = Group::join(&dial, GROUP, unique_id, options).map_err(|e| {
        // The store refuses a member id a live member holds.
        if e.member_id_held() {
            return duplicate();
        }
        TransError::error(format!(
            "engine '{unique_id}' cannot join the engines of the store {url}: {e}"
        ))
    })?;
    let members = group
        .members()
        .map_err(|e| group_err("listing the store's engines", e))?;
    if members
        .iter()
        .any(|(r, id)| id == unique_id && *r != group.rank())
    {
        let _ = group.leave();
        return Err(duplicate());
    }
    let pid = std::process::id();
    let device = npu.map(NpuEngine::new);
    let record = Record {
        role,
        rank: group.rank(),
        pid,
        start: vm::start_time(pid).unwrap_or(0),
        node: node_id(),
        npu: device.as_ref().map(NpuEngine::published),
        regions: BTreeMap::new(),
    };
    let engine = Arc::new(Engine {
        id: unique_id.to_string(),
        role,
        node: record.node.clone(),
        record: Mutex::new(record),
        allocated: Mutex::new(HashMap::new()),
        peers: Mutex::new(HashMap::new()),
        peer_timeout,
        ended: AtomicBool::new(false),
        device,
        group,
    });
    engine.publish(&lock(&engine.record))?;
    if let Err(e) = device::listen(&engine) {
        engine.end();
        return Err(e);
    }
    tracing::info!(
        "smem_trans_create: engine '{unique_id}' ({}, rank {} of the store {url}, device \
         {device_id})",
        role_name(role),
        engine.group.rank()
    );
    let handle = Arc::as_ptr(&engine) as usize;
    let mut s = lock(&STATE);
    match s.as_mut() {
        Some(s) => {
            s.engines.insert(handle, engine);
            Ok(handle)
        }
        None => {
            engine.end();
            Err(TransError::new(
                NOT_INITIALIZED,
                "the transfer engine was uninitialised meanwhile",
            ))
        }
    }
}

/// `smem_trans_destroy`: withdraws the engine's record and registrations and leaves.
pub fn destroy(handle: usize) -> Result<()> {
    engine(handle)?;
    let e = lock(&STATE)
        .as_mut()
        .and_then(|s| s.engines.remove(&handle));
    if let Some(e) = e {
        e.end();
    }
    Ok(())
}

/// A transfer's direction and elements.
pub struct Transfer<'a> {
    pub write: bool,
    pub peer: &'a str,
    pub locals: &'a [usize],
    pub remotes: &'a [usize],
    pub sizes: &'a [u64],
    pub flags: u32,
    /// The ACL stream of a `*_submit` (0: not a submit).
    pub stream: usize,
}

impl Engine {
    fn record_key(id: &str) -> String {
        format!("engine/{id}")
    }

    fn publish(&self, record: &Record) -> Result<()> {
        self.group
            .set(&Engine::record_key(&self.id), &record.encode())
            .map_err(|e| group_err("publishing the engine's registrations", e))
    }

    /// Withdraws the record and leaves the group (its registrations withdrawn with it).
    fn end(&self) {
        if self.ended.swap(true, Ordering::SeqCst) {
            return;
        }
        let _ = self.group.delete(&Engine::record_key(&self.id));
        let names: Vec<String> = lock(&self.record)
            .regions
            .values()
            .filter(|r| r.device.is_none())
            .map(|r| r.name.clone())
            .collect();
        for n in names {
            if let Err(e) = self.group.unregister(&n) {
                tracing::warn!("smem_trans_destroy: engine '{}': {e}", self.id);
            }
        }
        if let Some(d) = &self.device {
            d.end();
        }
    }

    /// A registration's name, never given twice by this process (an engine made again with
    /// the same id and rank must not revive a name a peer still caches with another range).
    fn name(&self, kind: char) -> String {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        format!("{kind}{:x}-{n}", std::process::id())
    }

    /// `smem_trans_register_mem`, `smem_trans_batch_register_mem`: each range registered as
    /// private memory and published; a range inside one registered already is left as is.
    pub fn register(&self, ranges: &[(u64, u64)]) -> Result<()> {
        let mut record = lock(&self.record);
        let mut added: Vec<(u64, String)> = Vec::new();
        for (i, &(addr, len)) in ranges.iter().enumerate() {
            if addr == 0 || len == 0 {
                return Err(TransError::invalid(format!(
                    "invalid argument element {i}: address={addr:#x} capacity={len}"
                )));
            }
            if record.region_of(addr, len).is_some() {
                continue;
            }
            let name = self.name('r');
            let device = match &self.device {
                Some(d) => match d.export(addr, len) {
                    Ok(x) => x,
                    Err(e) => {
                        self.unregister_added(&mut record, added);
                        return Err(e);
                    }
                },
                None => None,
            };
            if device.is_none() {
                // SAFETY: memfabric's contract: the user's range stays valid until it is
                // deregistered or the engine destroyed, both of which withdraw it first.
                let r = unsafe { self.group.register(&name, addr as *mut u8, len as usize) };
                if let Err(e) = r {
                    self.unregister_added(&mut record, added);
                    return Err(group_err(&format!("registering [{addr:#x}, +{len})"), e));
                }
            }
            record.regions.insert(
                addr,
                Region {
                    len,
                    name: name.clone(),
                    shared: false,
                    device,
                },
            );
            added.push((addr, name));
        }
        self.publish(&record)
    }

    /// Undoes the registrations of a call that failed part way: `added`, (address, name).
    fn unregister_added(&self, record: &mut Record, added: Vec<(u64, String)>) {
        for (a, n) in added {
            match record.regions.remove(&a) {
                Some(Region {
                    device: Some(_), ..
                }) => {
                    if let Some(d) = &self.device {
                        d.withdraw(a);
                    }
                }
                _ => {
                    let _ = self.group.unregister(&n);
                }
            }
        }
    }

    /// `smem_trans_deregister_mem`: withdraws the registration starting at `addr`; peers'
    /// later transfers into it fail.
    pub fn deregister(&self, addr: u64) -> Result<()> {
        let mut record = lock(&self.record);
        match record.regions.get(&addr) {
            Some(r) if !r.shared => {}
            Some(_) => {
                return Err(TransError::invalid(format!(
                    "invalid argument address={addr:#x}: memory of smem_trans_malloc (release \
                     it with smem_trans_free)"
                )))
            }
            None => {
                return Err(TransError::invalid(format!(
                    "invalid argument address={addr:#x}: no registration of engine '{}' \
                     starts there",
                    self.id
                )))
            }
        }
        let region = record.regions.remove(&addr).expect("checked above");
        // Unpublished first: a peer looking the range up from now on does not find it.
        self.publish(&record)?;
        if region.device.is_some() {
            if let Some(d) = &self.device {
                d.withdraw(addr);
            }
            return Ok(());
        }
        self.group
            .unregister(&region.name)
            .map_err(|e| group_err(&format!("withdrawing [{addr:#x}, +{})", region.len), e))
    }

    /// `smem_trans_malloc`: shareable memory, published as a registration.
    pub fn malloc(&self, size: u64) -> Result<u64> {
        if size == 0 || !size.is_multiple_of(MALLOC_UNIT) {
            return Err(TransError::invalid(format!(
                "invalid argument capacity={size}: not a positive multiple of 2 MiB"
            )));
        }
        let mut record = lock(&self.record);
        let name = self.name('m');
        let base =
            self.group
                .alloc(&name, size as usize)
                .map_err(|e| group_err(&format!("allocating {size} bytes"), e))? as u64;
        record.regions.insert(
            base,
            Region {
                len: size,
                name: name.clone(),
                shared: true,
                device: None,
            },
        );
        if let Err(e) = self.publish(&record) {
            record.regions.remove(&base);
            let _ = self.group.unregister(&name);
            return Err(e);
        }
        lock(&self.allocated).insert(base, name);
        Ok(base)
    }

    /// `smem_trans_free`: withdraws and frees memory of `malloc`. An unknown address: -1.
    pub fn free(&self, addr: u64) -> Result<()> {
        let mut record = lock(&self.record);
        let Some(name) = lock(&self.allocated).remove(&addr) else {
            return Err(TransError::error(format!(
                "invalid argument address={addr:#x}: not memory of smem_trans_malloc of engine \
                 '{}'",
                self.id
            )));
        };
        record.regions.remove(&addr);
        self.publish(&record)?;
        self.group
            .unregister(&name)
            .map_err(|e| group_err(&format!("freeing {addr:#x}"), e))
    }

    /// The peer's record: cached, or from the store, waiting up to the peer timeout for an
    /// engine not known yet.
    fn peer(&self, id: &str) -> Result<Arc<Peer>> {
        if let Some(p) = lock(&self.peers).get(id) {
            return Ok(Arc::clone(p));
        }
        self.fetch(id, self.peer_timeout)?.ok_or_else(|| {
            TransError::invalid(format!(
                "invalid argument remoteUniqueId='{id}': no engine of that id is known to the \
                 store (none published itself within {} ms)",
                self.peer_timeout.as_millis()
            ))
        })
    }

    /// The peer's record from the store, waiting up to `wait` for it to appear; `None` when
    /// it did not (forgotten here too).
    fn fetch(&self, id: &str, wait: Duration) -> Result<Option<Arc<Peer>>> {
        let key = Engine::record_key(id);
        let deadline = Instant::now() + wait;
        let bytes = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let found = match self
                .group
                .watch(&key, None, left.max(Duration::from_millis(1)))
            {
                Ok(Some(b)) => Some(b),
                // Removed between the wait's wake-up and its read: wait on.
                Ok(None) => None,
                Err(GroupError::Store { source, .. })
                    if matches!(*source, BootstrapError::Timeout { .. }) =>
                {
                    None
                }
                Err(e) => return Err(group_err(&format!("looking up engine '{id}'"), e)),
            };
            match found {
                Some(b) => break b,
                None if Instant::now() < deadline => continue,
                None => {
                    lock(&self.peers).remove(id);
                    return Ok(None);
                }
            }
        };
        let record = Record::decode(&bytes).ok_or_else(|| {
            TransError::error(format!(
                "engine '{id}''s record in the store does not parse"
            ))
        })?;
        let mut peers = lock(&self.peers);
        if let Some(p) = peers.get(id) {
            if p.record == record {
                return Ok(Some(Arc::clone(p)));
            }
        }
        let p = Arc::new(Peer {
            record,
            process: Mutex::new(None),
        });
        peers.insert(id.to_string(), Arc::clone(&p));
        Ok(Some(p))
    }

    /// `smem_trans_write`, `_read`, their batches and submits: every element checked, then
    /// moved.
    pub fn transfer(&self, t: &Transfer<'_>) -> Result<()> {
        if t.flags != 0 && t.flags != COPY_EXTEND_FLAG {
            return Err(TransError::invalid(format!(
                "invalid argument flags={}: not 0 or COPY_EXTEND_FLAG (2)",
                t.flags
            )));
        }
        let n = t.locals.len();
        if n == 0 {
            return Err(TransError::invalid("invalid argument batchSize=0"));
        }
        for i in 0..n {
            if t.locals[i] == 0 || t.remotes[i] == 0 || t.sizes[i] == 0 {
                return Err(TransError::invalid(format!(
                    "invalid argument element {i}: local={:#x} remote={:#x} size={}",
                    t.locals[i], t.remotes[i], t.sizes[i]
                )));
            }
        }
        // A peer's record as cached may be stale (it registered or withdrew since, its
        // engine ended or was made again): read afresh once, without waiting.
        let mut peer = self.peer(t.peer)?;
        let mut fresh = false;
        loop {
            match self.transfer_to(&peer, t) {
                Attempt::Stale(why) if !fresh => {
                    fresh = true;
                    match self.fetch(t.peer, Duration::ZERO)? {
                        Some(p) => peer = p,
                        None => {
                            return Err(TransError::error(format!(
                                "engine '{}' is gone: its record left the store (it was \
                                 destroyed); before: {}",
                                t.peer, why.message
                            )))
                        }
                    }
                }
                Attempt::Stale(why) => return Err(why),
                Attempt::Done(r) => return r,
                Attempt::Fallback => unreachable!("a transfer's attempt ends or is stale"),
            }
        }
    }

    /// One attempt of `t` with the peer as `peer` says.
    fn transfer_to(&self, peer: &Peer, t: &Transfer<'_>) -> Attempt {
        let rec = &peer.record;
        if rec.role == self.role {
            let other = if self.role == ROLE_SENDER {
                ROLE_RECEIVER
            } else {
                ROLE_SENDER
            };
            return Attempt::Done(Err(TransError::invalid(format!(
                "invalid argument remoteUniqueId='{}': that engine is a {} too; a {} addresses \
                 {}s only",
                t.peer,
                role_name(rec.role),
                role_name(self.role),
                role_name(other)
            ))));
        }
        // Each element's registration, before anything moves.
        let many = t.locals.len() > 1;
        let mut places = Vec::with_capacity(t.locals.len());
        for i in 0..t.locals.len() {
            let (remote, len) = (t.remotes[i] as u64, t.sizes[i]);
            match rec.region_of(remote, len) {
                Some((start, r)) => places.push((i, start, r)),
                None => {
                    return Attempt::Stale(TransError::invalid(format!(
                        "invalid argument remoteAddr{}={remote:#x} dataSize={len}: \
                         [{remote:#x}, +{len}) is not inside one memory region engine '{}' \
                         registered ({} registered)",
                        if many {
                            format!("s[{i}]")
                        } else {
                            String::new()
                        },
                        t.peer,
                        rec.regions.len()
                    )))
                }
            }
        }
        // The peer's NPU memory by the NPU; its host memory as on the host device.
        let (dev, places): (Vec<Place<'_>>, Vec<Place<'_>>) =
            places.into_iter().partition(|(_, _, r)| r.device.is_some());
        if !places.is_empty() {
            match self.host_copy(peer, t, places) {
                Attempt::Done(Ok(())) => {}
                other => return other,
            }
        }
        if dev.is_empty() {
            return Attempt::Done(Ok(()));
        }
        self.device_copy(peer, t, &dev)
    }

    /// The elements into a peer's host memory. On the npu device, a submit's stream is
    /// synchronised first (they are done before the call returns, after the stream's earlier
    /// work), and local NPU memory goes through a host buffer of this process.
    fn host_copy(&self, peer: &Peer, t: &Transfer<'_>, places: Vec<Place<'_>>) -> Attempt {
        let rec = &peer.record;
        let failed = |what: &str, e: crate::error::Error| {
            Attempt::Done(Err(TransError::error(format!(
                "transfer with engine '{}': {what}: {e}",
                t.peer
            ))))
        };
        let mut staged: Vec<(usize, Vec<u8>)> = Vec::new();
        if let Some(d) = &self.device {
            if t.stream != 0 {
                if let Err(e) = d.npu.synchronize(t.stream) {
                    return failed(&format!("synchronising stream {:#x}", t.stream), e);
                }
            }
            for &(i, _, _) in &places {
                let len = t.sizes[i] as usize;
                if !d.is_device(t.locals[i], len) {
                    continue;
                }
                let mut buf = vec![0u8; len];
                if t.write {
                    // SAFETY: the local range is the caller's NPU memory (memfabric's
                    // contract); the buffer is ours, `len` bytes.
                    let r = unsafe { d.npu.copy(buf.as_mut_ptr() as usize, t.locals[i], len) };
                    if let Err(e) = r {
                        return failed(&format!("reading local NPU memory {:#x}", t.locals[i]), e);
                    }
                }
                staged.push((i, buf));
            }
        }
        let locals: Vec<usize>;
        let staged_t;
        let ht = if staged.is_empty() {
            t
        } else {
            let mut l = t.locals.to_vec();
            for (i, buf) in &mut staged {
                l[*i] = buf.as_mut_ptr() as usize;
            }
            locals = l;
            staged_t = Transfer {
                write: t.write,
                peer: t.peer,
                locals: &locals,
                remotes: t.remotes,
                sizes: t.sizes,
                flags: t.flags,
                stream: t.stream,
            };
            &staged_t
        };
        // A peer of this node: its private memory by the kernel's copy, its shareable memory
        // (and, where the kernel refuses, everything) through the group.
        let (kernel, mut group): (Vec<Place<'_>>, Vec<Place<'_>>) =
            if rec.node == self.node && !VM_DENIED.load(Ordering::Relaxed) {
                places.into_iter().partition(|(_, _, r)| !r.shared)
            } else {
                (Vec::new(), places)
            };
        if !kernel.is_empty() {
            match self.kernel_copy(peer, ht, &kernel) {
                Attempt::Fallback => group.extend(kernel),
                Attempt::Done(Ok(())) => {}
                other => return other,
            }
        }
        if !group.is_empty() {
            match self.group_copy(rec, ht, &group) {
                Attempt::Done(Ok(())) => {}
                other => return other,
            }
        }
        if let (Some(d), false) = (&self.device, t.write) {
            for (i, buf) in &staged {
                // SAFETY: the local range is the caller's NPU memory, writable (memfabric's
                // contract); the buffer holds what was read.
                let r = unsafe { d.npu.copy(t.locals[*i], buf.as_ptr() as usize, buf.len()) };
                if let Err(e) = r {
                    return failed(&format!("writing local NPU memory {:#x}", t.locals[*i]), e);
                }
            }
        }
        Attempt::Done(Ok(()))
    }

    /// The elements into a peer's NPU memory: by the NPU from this node (complete on return,
    /// or enqueued on a submit's stream), refused from another. The registrations are
    /// confirmed first in the peer's record read afresh, and the peer in the group.
    fn device_copy(&self, peer: &Peer, t: &Transfer<'_>, places: &[Place<'_>]) -> Attempt {
        let rec = &peer.record;
        let (i0, start0, r0) = places[0];
        let Some(d) = &self.device else {
            return Attempt::Done(Err(TransError::error(format!(
                "remoteAddr {:#x}: engine '{}' registered [{start0:#x}, +{}) as NPU memory, and \
                 this engine runs on the host device (SHMEM_DEVICE): it reaches host memory only",
                t.remotes[i0], t.peer, r0.len
            ))));
        };
        if rec.node != self.node {
            return Attempt::Done(Err(TransError::error(format!(
                "remoteAddr {:#x}: engine '{}' registered [{start0:#x}, +{}) as NPU memory on \
                 another node; the host transports do not reach NPU memory (only engines of its \
                 node write and read it)",
                t.remotes[i0], t.peer, r0.len
            ))));
        }
        let fresh = match self.fetch(t.peer, Duration::ZERO) {
            Ok(Some(p)) => p,
            // Read afresh already: nothing to look up again.
            Ok(None) => {
                return Attempt::Done(Err(TransError::error(format!(
                    "engine '{}' is gone: its record left the store (it was destroyed)",
                    t.peer
                ))))
            }
            Err(e) => return Attempt::Done(Err(e)),
        };
        d.prune(t.peer, |name, h| {
            fresh
                .record
                .regions
                .values()
                .any(|r| r.name == name && r.device.as_ref() == Some(h))
        });
        for &(_, start, r) in places {
            if fresh.record.regions.get(&start) != Some(r) {
                return Attempt::Stale(TransError::invalid(format!(
                    "engine '{}' withdrew the registration [{start:#x}, +{}) ({}): it was \
                     deregistered",
                    t.peer, r.len, r.name
                )));
            }
        }
        match self.group.members() {
            Ok(m) if m.iter().any(|(r, id)| *r == rec.rank && id == t.peer) => {}
            Ok(_) => {
                return Attempt::Stale(TransError::error(format!(
                    "engine '{}' (rank {}) is gone: its engine was destroyed or its process ended",
                    t.peer, rec.rank
                )))
            }
            Err(e) => return self.group_failed(t.peer, rec, e),
        }
        let deadline = Instant::now() + self.peer_timeout;
        let mut held: Vec<Arc<device::Import>> = Vec::new();
        let mut elements = Vec::with_capacity(places.len());
        for &(i, start, r) in places {
            let Some(mem) = &r.device else {
                continue;
            };
            let import = match d.import(t.peer, &r.name, mem, r.len, deadline) {
                Ok(x) => x,
                Err(e) => return Attempt::Done(Err(e)),
            };
            elements.push(DeviceElement {
                local: t.locals[i],
                at: import.base() + (t.remotes[i] - start as usize),
                len: t.sizes[i] as usize,
            });
            if !held.iter().any(|x| Arc::ptr_eq(x, &import)) {
                held.push(import);
            }
        }
        match d.copy(t.write, &elements, t.stream, held) {
            Ok(()) => Attempt::Done(Ok(())),
            Err(e) => Attempt::Done(Err(TransError::error(format!(
                "transfer with engine '{}' by the NPU failed: {e}",
                t.peer
            )))),
        }
    }

    /// A group error with `rec`'s peer: a registration or member gone is stale (looked up
    /// again), anything else fails.
    fn group_failed(&self, peer_id: &str, rec: &Record, e: GroupError) -> Attempt {
        match e {
            GroupError::NoRegistration { name, .. } => {
                // Its record outlives an engine killed: the rank's holder says which it is.
                let alive = self
                    .group
                    .members()
                    .map(|m| m.iter().any(|(r, id)| *r == rec.rank && id == peer_id))
                    .unwrap_or(true);
                Attempt::Stale(if alive {
                    TransError::invalid(format!(
                        "engine '{peer_id}' withdrew the registration the range lies in \
                         ({name}): it was deregistered or freed"
                    ))
                } else {
                    TransError::error(format!(
                        "engine '{peer_id}' (rank {}) is gone: its process ended",
                        rec.rank
                    ))
                })
            }
            GroupError::Gone { .. } | GroupError::NoMember { .. } => {
                Attempt::Stale(TransError::error(format!(
                    "engine '{peer_id}' (rank {}) is gone: its engine was destroyed or its \
                     process ended ({e})",
                    rec.rank
                )))
            }
            e => Attempt::Done(Err(TransError::error(format!(
                "transfer with engine '{peer_id}' failed: {e}"
            )))),
        }
    }

    /// Through the group's transport: every element non-blocking, one flush.
    fn group_copy(&self, rec: &Record, t: &Transfer<'_>, places: &[Place<'_>]) -> Attempt {
        for &(i, start, r) in places {
            let offset = t.remotes[i] as u64 - start;
            let len = t.sizes[i] as usize;
            // SAFETY: memfabric's contract: the local buffers stay valid and untouched (a
            // read's) or unchanged (a write's) during the call, which flushes before it
            // returns.
            let r = unsafe {
                if t.write {
                    self.group
                        .put_nb(rec.rank, &r.name, offset, t.locals[i] as *const u8, len)
                } else {
                    self.group
                        .get_nb(rec.rank, &r.name, offset, t.locals[i] as *mut u8, len)
                }
            };
            if let Err(e) = r {
                let _ = self.group.flush(rec.rank);
                return self.group_failed(t.peer, rec, e);
            }
        }
        match self.group.flush(rec.rank) {
            Ok(()) => Attempt::Done(Ok(())),
            Err(e) => self.group_failed(t.peer, rec, e),
        }
    }

    /// By the kernel's cross-process copy, each registration confirmed published first.
    /// [`Attempt::Fallback`]: the kernel refused (said once in the log).
    fn kernel_copy(&self, peer: &Peer, t: &Transfer<'_>, places: &[Place<'_>]) -> Attempt {
        let rec = &peer.record;
        let mut checked: Vec<&str> = Vec::new();
        for &(_, start, r) in places {
            if checked.contains(&r.name.as_str()) {
                continue;
            }
            match self
                .group
                .with_registration(rec.rank, &r.name, |base, len| (base, len))
            {
                Ok((base, len)) if base == start && len == r.len => {}
                Ok(_) => {
                    return Attempt::Stale(TransError::error(format!(
                        "engine '{}''s registration {} does not match its record",
                        t.peer, r.name
                    )))
                }
                Err(e) => return self.group_failed(t.peer, rec, e),
            }
            checked.push(&r.name);
        }
        let process = {
            let mut p = lock(&peer.process);
            match &*p {
                Some(p) => Arc::clone(p),
                None => match Process::open(rec.pid, rec.start) {
                    Ok(made) => {
                        let made = Arc::new(made);
                        *p = Some(Arc::clone(&made));
                        made
                    }
                    Err(e) => return Attempt::Stale(self.vm_failed(t.peer, e)),
                },
            }
        };
        let pieces: Vec<(usize, usize, usize)> = places
            .iter()
            .map(|&(i, _, _)| (t.locals[i], t.remotes[i], t.sizes[i] as usize))
            .collect();
        match process.copy(t.write, &pieces) {
            Ok(()) => Attempt::Done(Ok(())),
            Err(VmError::Denied(e)) => {
                if !VM_DENIED.swap(true, Ordering::Relaxed) {
                    *lock(&NOTE) = Some(format!(
                        "the kernel refuses cross-process copies to this node's engines ({e}; \
                         see /proc/sys/kernel/yama/ptrace_scope, or the container's seccomp \
                         profile): their registered memory is reached through the network \
                         transport (UCX) from now on"
                    ));
                }
                Attempt::Fallback
            }
            Err(e @ VmError::Gone(_)) => Attempt::Stale(self.vm_failed(t.peer, e)),
            Err(e) => Attempt::Done(Err(self.vm_failed(t.peer, e))),
        }
    }

    fn vm_failed(&self, peer_id: &str, e: VmError) -> TransError {
        match e {
            VmError::Gone(why) => TransError::error(format!("engine '{peer_id}' is gone: {why}")),
            VmError::Denied(e) => TransError::error(format!(
                "engine '{peer_id}': the kernel refuses the copy: {e}"
            )),
            VmError::Failed(why) => {
                TransError::error(format!("transfer with engine '{peer_id}' failed: {why}"))
            }
        }
    }
}

/// An element of a transfer placed: its index, and the start and registration of the peer
/// that hold its remote range.
type Place<'a> = (usize, u64, &'a Region);

/// How an attempt of a transfer ended.
enum Attempt {
    /// Done: its result.
    Done(Result<()>),
    /// What the peer's record said no longer holds (the error if it still fails afresh).
    Stale(TransError),
    /// The kernel refused a cross-process copy: the group's transport instead.
    Fallback,
}

/// Runs `f` on the engine `handle`.
pub fn with<T>(handle: usize, f: impl FnOnce(&Engine) -> Result<T>) -> Result<T> {
    let e = engine(handle)?;
    f(&e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_ids_as_memfabric_writes_them() {
        for good in ["127.0.0.1:5321", "[::1]:65535", "10.0.0.1:1025"] {
            parse_unique_id(good).unwrap();
        }
        for bad in [
            "",
            "127.0.0.1",
            "127.0.0.1:1024",
            "127.0.0.1:0",
            "127.0.0.1:65536",
            "localhost:5000",
            "::1:5000",
            "[::1]5000",
            "[::1:5000",
            "127.0.0.1:x",
        ] {
            let e = parse_unique_id(bad).unwrap_err();
            assert_eq!(e.code, INVALID_PARAM, "{bad}");
            assert!(e.message.contains(&format!("'{bad}'")), "{}", e.message);
        }
    }

    #[test]
    fn records_round_trip_and_find_ranges() {
        let mut r = Record {
            role: ROLE_RECEIVER,
            rank: 3,
            pid: 42,
            start: 7,
            node: "b/1/2".into(),
            npu: Some((42, 3)),
            regions: BTreeMap::new(),
        };
        r.regions.insert(
            0x1000,
            Region {
                len: 0x1000,
                name: "r1-0".into(),
                shared: false,
                device: None,
            },
        );
        r.regions.insert(
            0x1800,
            Region {
                len: 0x100,
                name: "m1-1".into(),
                shared: true,
                device: None,
            },
        );
        r.regions.insert(
            0x4000,
            Region {
                len: 0x200000,
                name: "r1-2".into(),
                shared: false,
                device: Some(DeviceMem::Handle {
                    shareable: 0x1234_0000_0001,
                    device: 3,
                }),
            },
        );
        r.regions.insert(
            0x900000,
            Region {
                len: 0x1000,
                name: "r1-3".into(),
                shared: false,
                device: Some(DeviceMem::Ipc {
                    key: "a key with spaces".into(),
                    offset: 0x2011,
                    device: 1,
                }),
            },
        );
        assert_eq!(Record::decode(&r.encode()).unwrap(), r);
        // Inside the first although a later registration starts below the address.
        assert_eq!(r.region_of(0x1900, 0x200).unwrap().0, 0x1000);
        assert_eq!(r.region_of(0x1800, 0x100).unwrap().0, 0x1800);
        assert!(r.region_of(0x1f00, 0x200).is_none());
        assert!(r.region_of(0xfff, 1).is_none());
        assert!(r.region_of(u64::MAX, 2).is_none());
    }
}
