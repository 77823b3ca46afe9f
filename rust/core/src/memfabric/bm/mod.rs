//! memfabric_hybrid's Big Memory pools (`smem_bm_*`, docs/memfabric.md) over the group API.
//!
//! - **Init** connects to the config store (served by rank 0 with explicit ranks, by whichever
//!   process wins the bind with auto ranking, when `startConfigStoreServer`:
//!   [`Store::serve_or_join`]), over TLS with the user's files when `storeTlsConfig` enables
//!   it, and takes this process's rank by joining the store's group `smem-bm` (explicit: the
//!   rank asked for; auto: the store's pick, the lowest free rank at or after the group's
//!   moving cursor, freed when the process leaves or dies). A store this process serves lives
//!   as long as the process, so its uninit leaves the others' store in place.
//! - **Objects.** `create` is local: it reserves `world * max` bytes of address space at a
//!   base chosen first-fit from a fixed range ([`va`]) and maps this rank's segment, a memfd
//!   (or the user's `dramShmFd`), at `base + rank * max`: ordinary memory the program reads.
//! - **Membership per object.** `join` joins the group `smem-bm-<id>` of the store with the
//!   init rank and registers the segment with [`Group::register_fd`]: members of this node map
//!   it, others reach it over UCX. Members already joined take part in the change through the
//!   group's threads, without calling anything. `leave` leaves that group for good (memfabric:
//!   create a new object to come back); `destroy` does not leave (the others see this member
//!   down, as memfabric's peers see a destroyed object only when its process goes).
//! - **Copies** ([`classify`]): each side is local memory or a place in a rank's segment; the
//!   own segment is copied with memcpy, and so is the segment of a peer of this node once it
//!   is mapped at its place ([`direct`]: no call of the group, nothing to flush); any other
//!   peer's through the group's non-blocking put and get, a peer to another peer through a
//!   bounce buffer (4 MiB at a time). A copy to or from a peer is one operation however large:
//!   UCX fragments it (over TCP a put is one zero-copy send of the caller's memory, whose
//!   registration costs nothing there, and a get is answered in segments), so pieces issued
//!   back to back here keep the wire no busier and cost a request each. A copy or a batch flushes each rank it reached through
//!   the group once before returning; with `ASYNC_COPY_FLAG` the flush is left to
//!   `smem_bm_wait`. A member gone makes its copies fail naming its rank. A copy that reaches
//!   no peer through the group (its own segment, local memory, peers mapped here) costs the
//!   object (each thread keeps a weak reference to its last copy's object, so no lock or table
//!   look-up), the copy type's resolution (no message made unless it fails), the direct
//!   table's checks and the memcpy: nothing to flush, no allocation, no string.
//! - **User memory.** `register_user_mem` registers the buffer with the worker the objects'
//!   groups share (made then if no join made it yet), its key kept to this process, so that
//!   UCX is handed the registration on copies between it and peers of other nodes
//!   (`crate::dynamic::ucx`); the object withdraws it at unregister, destroy or uninit.
//! - **Device pools** ([`device`]): on the npu device (`SHMEM_DEVICE=npu`, or `auto` where ACL
//!   loads; init opens NPU `deviceId`, shared with Share Memory) `maxHbmSize` makes a pool in
//!   the NPU's address space, whose segments members of one node import from each other;
//!   copies touching it run with ACL's copies. On the host device it is refused.

pub mod classify;
mod device;
pub mod direct;
pub mod va;

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, Weak};
use std::time::Duration;

use classify::{Param, Pool, Side};
use direct::{Direct, Peers};
use shmem_store::addr::StoreAddr;
use shmem_store::tls::{load_user_identity, TlsInfo};
use shmem_store::{Client, Member, Store, TcpDial};

use crate::device::npu::Npu;
use crate::dynamic::{DynamicWorker, Registration};
use crate::group::{default_worker, Group, GroupOptions};
use crate::idmap::IdMap;
use va::Reservation;

/// memfabric's codes.
pub const ERROR: i32 = -1;
/// The lower layer's "invalid param" (an AUTO copy out of the pool).
pub const LOWER_INVALID_PARAM: i32 = -2;
pub const INVALID_PARAM: i32 = -2000;
pub const NOT_STARTED: i32 = -2003;
pub const DUPLICATED_OBJECT: i32 = -2006;
pub const NOT_INITIALIZED: i32 = -2008;

/// memfabric's `ASYNC_COPY_FLAG`.
pub const ASYNC_COPY_FLAG: u32 = 1;
/// memfabric's `SMEM_BM_FLAG_CREATE_WITH_SHM`.
pub const FLAG_CREATE_WITH_SHM: u32 = 1 << 8;
/// The data-op bits memfabric knows (SDMA, HOST_RDMA, HOST_TCP, DEVICE_RDMA, HOST_URMA).
pub const DATA_OP_BITS: u32 = 0x1f;
/// memfabric's memory types.
pub const MEM_TYPE_DEVICE: u32 = 2;
pub const MEM_TYPE_HOST: u32 = 3;

/// Pool sizes are multiples of this.
const SIZE_UNIT: u64 = 2 << 20;
/// Largest local DRAM contribution (memfabric's limit).
const MAX_LOCAL_DRAM: u64 = 2 << 40;
/// Largest local HBM contribution (memfabric's limit).
const MAX_LOCAL_HBM: u64 = 64 << 30;
/// Object ids memfabric accepts: 0..=254.
const MAX_ID: u32 = 254;
/// Clients a store served by Big Memory admits.
const MAX_CLIENTS: usize = 4096;
/// Largest piece of a copy between two peers held in this process at once.
const BOUNCE: usize = 4 << 20;
/// The name of a segment's registration in its object's group.
const SEGMENT: &str = "dram";

/// A failed call: memfabric's code and the reason (without the call's name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BmError {
    pub code: i32,
    pub message: String,
}

impl BmError {
    pub fn new(code: i32, message: impl Into<String>) -> BmError {
        BmError {
            code,
            message: message.into(),
        }
    }
    pub fn invalid(message: impl Into<String>) -> BmError {
        BmError::new(INVALID_PARAM, message)
    }
    pub fn error(message: impl Into<String>) -> BmError {
        BmError::new(ERROR, message)
    }
}

type Result<T> = std::result::Result<T, BmError>;

/// `storeTlsConfig`'s files.
#[derive(Debug, Clone, Default)]
pub struct TlsFiles {
    pub enable: bool,
    pub ca: String,
    pub crl: String,
    pub cert: String,
    pub key: String,
    pub key_pass: String,
}

/// `smem_bm_init`'s arguments.
#[derive(Debug, Clone)]
pub struct InitArgs {
    pub url: String,
    pub world: u32,
    pub device_id: u16,
    pub init_timeout_s: u32,
    pub control_timeout_s: u32,
    pub start_server: bool,
    pub auto_ranking: bool,
    pub rank_id: u16,
    pub hcom_url: String,
    pub tls: TlsFiles,
}

/// What `init` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inited {
    /// Initialised now; `plain`: the store connection is plain TCP.
    Now { plain: bool },
    /// Already initialised: nothing changed.
    Already,
}

/// `smem_bm_create2`'s option.
#[derive(Debug, Clone, Copy, Default)]
pub struct CreateArgs {
    pub max_dram: u64,
    pub max_hbm: u64,
    pub local_dram: u64,
    pub local_hbm: u64,
    pub data_op: u32,
    pub flags: u32,
    pub shm_fd: i32,
}

/// Whether this member of an object's group is in it.
enum Membership {
    NotJoined,
    Joined(Group),
    Left,
}

/// A Big Memory object of this process.
struct Object {
    /// The object's membership; dropped before the segment is unmapped (fields drop in order).
    membership: RwLock<Membership>,
    /// The device pool, on the npu device when `maxHbmSize` is not 0.
    device: Option<device::DevicePool>,
    /// Ranks with non-blocking operations to flush at `smem_bm_wait`.
    pending: Mutex<BTreeSet<u32>>,
    /// Buffers registered by `smem_bm_register_user_mem`, by address.
    user_mem: Mutex<HashMap<u64, UserMem>>,
    id: u32,
    pool: Pool,
    rank: u32,
    local: u64,
    /// The file behind this rank's segment (a memfd, or a duplicate of the user's).
    fd: Option<OwnedFd>,
    /// The segments of peers of this node mapped in the host pool's range.
    direct: Direct,
    /// The host pool's address range (none without a host pool); its drop unmaps the segment
    /// (and the peers' mapped there).
    reservation: Option<Reservation>,
    /// Set when `destroy` or `uninit` takes the object out of the table: a copy that reaches
    /// it through a thread's cached reference ([`object_for_copy`]) looks it up again then.
    destroyed: AtomicBool,
}

/// A buffer given to `smem_bm_register_user_mem`: registered with the objects' worker, so
/// that copies between it and peers of other nodes go as from and into registered memory
/// (its key is not published: no peer reaches it). Dropping it withdraws the registration.
struct UserMem {
    size: u64,
    reg: Option<(Arc<dyn DynamicWorker>, Registration)>,
}

impl Drop for UserMem {
    fn drop(&mut self) {
        if let Some((worker, reg)) = self.reg.take() {
            if let Err(e) = worker.unregister(reg) {
                tracing::debug!("smem_bm_unregister_user_mem: {e}");
            }
        }
    }
}

/// This process's Big Memory, between init and uninit.
struct State {
    dial: TcpDial,
    rank: u32,
    world: u32,
    /// The member holding this process's rank in the store's `smem-bm` group.
    member: Member,
    control_timeout: Duration,
    connect_timeout: Duration,
    /// This process's id in the groups: host and process id.
    id: String,
    /// The worker the objects' groups share, made at the first join.
    worker: Mutex<Option<Arc<dyn DynamicWorker>>>,
    /// The NPU of the device pools (`None`: the host device, host pools only).
    npu: Option<Npu>,
    objects: Mutex<IdMap<usize, Arc<Object>>>,
}

static STATE: Mutex<Option<Arc<State>>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn not_initialized() -> BmError {
    BmError::new(
        NOT_INITIALIZED,
        "Big Memory is not initialised (call smem_bm_init first)",
    )
}

fn state() -> Result<Arc<State>> {
    lock(&STATE).clone().ok_or_else(not_initialized)
}

fn object(handle: usize) -> Result<(Arc<State>, Arc<Object>)> {
    let s = state()?;
    let o = lock(&s.objects)
        .get(&handle)
        .cloned()
        .ok_or_else(|| no_object(handle))?;
    Ok((s, o))
}

fn no_object(handle: usize) -> BmError {
    BmError::invalid(format!(
        "invalid argument handle={handle:#x}: no Big Memory object of this process has it"
    ))
}

/// The object alone: looked up under the state's lock, without taking a reference to the
/// state.
fn object_only(handle: usize) -> Result<Arc<Object>> {
    let slot = lock(&STATE);
    let s = slot.as_ref().ok_or_else(not_initialized)?;
    let o = lock(&s.objects).get(&handle).cloned();
    o.ok_or_else(|| no_object(handle))
}

thread_local! {
    /// The object of this thread's last copy: its handle and a weak reference, which keeps its
    /// allocation (so no other object gets its address, the handle) but not the object.
    static LAST_OBJECT: RefCell<Option<(usize, Weak<Object>)>> = const { RefCell::new(None) };
}

/// The object for a copy: the one this thread's last copy used when `handle` names it, it
/// lives and it was not destroyed (no lock, no table); otherwise [`object_only`]'s look-up,
/// remembered for the next copy.
fn object_for_copy(handle: usize) -> Result<Arc<Object>> {
    let cached = LAST_OBJECT.with(|c| match &*c.borrow() {
        Some((h, o)) if *h == handle => o.upgrade(),
        _ => None,
    });
    if let Some(o) = cached.filter(|o| !o.destroyed.load(Ordering::Acquire)) {
        return Ok(o);
    }
    let o = object_only(handle)?;
    LAST_OBJECT.with(|c| *c.borrow_mut() = Some((handle, Arc::downgrade(&o))));
    Ok(o)
}

/// The store's dial for `url` (memfabric's `tcp://<ip>:<port>`), with the user's TLS files
/// when `tls.enable`: also the server's TLS settings, for the process that hosts it.
fn dial_for(url: &str, tls: &TlsFiles) -> Result<(TcpDial, Option<Arc<rustls::ServerConfig>>)> {
    let addr = super::parse_url(url).map_err(|e| BmError::invalid(e.message().to_string()))?;
    let addr = StoreAddr::from_socket(addr);
    if !tls.enable {
        return Ok((
            TcpDial {
                addr,
                tls: None,
                job: String::new(),
            },
            None,
        ));
    }
    let bad = |why: String| BmError::error(format!("config->storeTlsConfig: {why}"));
    let path = |p: &str| (!p.is_empty()).then(|| std::path::PathBuf::from(p));
    let files = |p: &str| -> Result<Vec<std::path::PathBuf>> {
        let Some(p) = path(p) else {
            return Ok(Vec::new());
        };
        if !p.is_dir() {
            return Ok(vec![p]);
        }
        let mut all: Vec<_> = std::fs::read_dir(&p)
            .map_err(|e| bad(format!("{}: {e}", p.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        all.sort();
        Ok(all)
    };
    let info = TlsInfo {
        ca_files: files(&tls.ca)?,
        cert: path(&tls.cert),
        key: path(&tls.key),
        key_password: path(&tls.key_pass),
        crl_files: files(&tls.crl)?,
    };
    let identity = load_user_identity(&info, None, None).map_err(|e| bad(e.to_string()))?;
    let client = identity.client_config().map_err(|e| bad(e.to_string()))?;
    let server = identity.server_config().map_err(|e| bad(e.to_string()))?;
    let name = addr.server_name();
    Ok((
        TcpDial {
            addr,
            tls: Some((client, name)),
            job: String::new(),
        },
        Some(server),
    ))
}

/// This host's interfaces with an address in the hcomUrl's subnet.
fn interfaces_in(h: &classify::HcomUrl) -> Vec<String> {
    let mut names = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list`, freed below; entries are read while it lives.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return names;
    }
    let mut at = list;
    while !at.is_null() {
        // SAFETY: a live entry of the list.
        let e = unsafe { &*at };
        at = e.ifa_next;
        if e.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: ifa_addr points at a sockaddr of its family's size.
        let ip: Option<std::net::IpAddr> = unsafe {
            match i32::from((*e.ifa_addr).sa_family) {
                libc::AF_INET => {
                    let a = &*(e.ifa_addr as *const libc::sockaddr_in);
                    Some(std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)).into())
                }
                libc::AF_INET6 => {
                    let a = &*(e.ifa_addr as *const libc::sockaddr_in6);
                    Some(std::net::Ipv6Addr::from(a.sin6_addr.s6_addr).into())
                }
                _ => None,
            }
        };
        if ip.is_some_and(|ip| h.matches(ip)) {
            // SAFETY: ifa_name is a NUL-terminated string of the entry.
            let name = unsafe { std::ffi::CStr::from_ptr(e.ifa_name) };
            names.push(name.to_string_lossy().into_owned());
        }
    }
    // SAFETY: the list getifaddrs made.
    unsafe { libc::freeifaddrs(list) };
    names.dedup();
    names
}

fn seconds(arg: &str, s: u32) -> Result<Duration> {
    if s == 0 {
        return Err(BmError::invalid(format!(
            "invalid argument config->{arg}=0: a timeout is at least 1 s"
        )));
    }
    Ok(Duration::from_secs(u64::from(s)))
}

fn process_id() -> String {
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    format!("{host}-{}", std::process::id())
}

/// `smem_bm_init`: connects to (or serves) the store and takes this process's rank.
pub fn init(args: &InitArgs) -> Result<Inited> {
    let mut slot = lock(&STATE);
    if slot.is_some() {
        return Ok(Inited::Already);
    }
    if args.world == 0 || args.world > 1024 {
        return Err(BmError::invalid(format!(
            "invalid argument worldSize={}: not in 1..1024",
            args.world
        )));
    }
    if !args.auto_ranking && u32::from(args.rank_id) >= args.world {
        return Err(BmError::invalid(format!(
            "invalid argument config->rankId={}: not below worldSize={}",
            args.rank_id, args.world
        )));
    }
    let connect_timeout = seconds("initTimeout", args.init_timeout_s)?;
    let control_timeout = seconds("controlOperationTimeout", args.control_timeout_s)?;
    if let Some(h) = classify::parse_hcom_url(&args.hcom_url)? {
        let names = interfaces_in(&h);
        if names.is_empty() {
            tracing::warn!(
                "smem_bm_init: config->hcomUrl='{}': no interface of this host has an address \
                 in {}/{}; the host transport uses the interfaces UCX chooses",
                args.hcom_url,
                h.ip,
                h.prefix
            );
        } else {
            tracing::info!(
                "smem_bm_init: hcomUrl {} names interfaces {names:?}; the host transport (UCX) \
                 chooses among this host's interfaces by UCX_NET_DEVICES",
                args.hcom_url
            );
        }
    }
    let (dial, server_tls) = dial_for(&args.url, &args.tls)?;
    let plain = dial.tls.is_none();
    let npu = match super::npu::choice().map_err(BmError::error)? {
        super::npu::Choice::Npu => Some(super::npu::open(args.device_id).map_err(BmError::error)?),
        super::npu::Choice::Host | super::npu::Choice::Other(_) => None,
    };
    let store_err =
        |e: shmem_store::BootstrapError| BmError::error(format!("config store {}: {e}", args.url));
    let serves = args.start_server && (args.auto_ranking || args.rank_id == 0);
    let client = if serves {
        let store = Store::serve_or_join(&dial, server_tls, MAX_CLIENTS, connect_timeout)
            .map_err(store_err)?;
        if let Some(server) = store.server {
            tracing::info!(
                "smem_bm_init: this process serves the config store {}",
                args.url
            );
            let addr = super::parse_url(&args.url).map_err(|e| BmError::invalid(e.message()))?;
            super::keep_served(addr, server);
        }
        store.client
    } else {
        Client::connect_open(&dial, connect_timeout).map_err(store_err)?
    };
    // The rank is held by the member; the client only proved the store answers.
    drop(client);
    let id = process_id();
    let mut options = shmem_store::GroupOptions::new(args.world);
    options.rank = (!args.auto_ranking).then_some(u32::from(args.rank_id));
    options.control_timeout = control_timeout;
    let member = Member::join(&dial, "smem-bm", &id, &options, connect_timeout).map_err(|e| {
        BmError::error(format!(
            "cannot take a rank ({}) of worldSize={} at the config store {}: {e}",
            if args.auto_ranking {
                "auto ranking".to_string()
            } else {
                format!("rankId={}", args.rank_id)
            },
            args.world,
            args.url
        ))
    })?;
    let rank = member.rank();
    tracing::info!(
        "smem_bm_init: rank {rank} of {} (device {})",
        args.world,
        args.device_id
    );
    *slot = Some(Arc::new(State {
        dial,
        rank,
        world: args.world,
        member,
        control_timeout,
        connect_timeout,
        id,
        worker: Mutex::new(None),
        npu,
        objects: Mutex::new(IdMap::default()),
    }));
    Ok(Inited::Now { plain })
}

/// `smem_bm_uninit`: destroys every object (without leaving their groups) and gives the rank
/// back. Local: waits for no other process. Whether it was initialised.
pub fn uninit() -> bool {
    let Some(s) = lock(&STATE).take() else {
        return false;
    };
    let objects: Vec<Arc<Object>> = lock(&s.objects).drain().map(|(_, o)| o).collect();
    for o in &objects {
        o.destroyed.store(true, Ordering::Release);
    }
    for d in objects.iter().filter_map(|o| o.device.as_ref()) {
        d.stop();
    }
    drop(objects);
    if let Ok(s) = Arc::try_unwrap(s) {
        if let Err(e) = s.member.leave() {
            tracing::warn!("smem_bm_uninit: giving the rank back: {e}");
        }
    }
    true
}

/// `smem_bm_get_rank_id`: this process's rank, 0 before init (as memfabric).
pub fn rank() -> u32 {
    lock(&STATE).as_ref().map_or(0, |s| s.rank)
}

/// Checks `smem_bm_create2`'s option as memfabric does.
fn check_create(id: u32, a: &CreateArgs) -> Result<()> {
    if id > MAX_ID {
        return Err(BmError::invalid(format!(
            "invalid argument id={id}: not in 0..{MAX_ID}"
        )));
    }
    if a.data_op & DATA_OP_BITS == 0 || a.data_op & !DATA_OP_BITS != 0 {
        return Err(BmError::invalid(format!(
            "invalid argument dataOpType={}: not a mask of SMEMB_DATA_OP_SDMA, HOST_RDMA, \
             HOST_TCP, DEVICE_RDMA, HOST_URMA (1, 2, 4, 8, 16)",
            a.data_op
        )));
    }
    if a.max_dram == 0 && a.max_hbm == 0 {
        return Err(BmError::invalid(
            "invalid argument maxDramSize=0 and maxHbmSize=0: a pool needs one of them",
        ));
    }
    for (arg, v) in [
        ("maxDramSize", a.max_dram),
        ("maxHbmSize", a.max_hbm),
        ("localDRAMSize", a.local_dram),
        ("localHBMSize", a.local_hbm),
    ] {
        if v % SIZE_UNIT != 0 {
            return Err(BmError::invalid(format!(
                "invalid argument {arg}={v}: not a multiple of 2 MiB"
            )));
        }
    }
    if a.local_dram > a.max_dram {
        return Err(BmError::invalid(format!(
            "invalid argument localDRAMSize={}: more than maxDramSize={}",
            a.local_dram, a.max_dram
        )));
    }
    if a.local_hbm > a.max_hbm {
        return Err(BmError::invalid(format!(
            "invalid argument localHBMSize={}: more than maxHbmSize={}",
            a.local_hbm, a.max_hbm
        )));
    }
    if a.local_dram > MAX_LOCAL_DRAM {
        return Err(BmError::invalid(format!(
            "invalid argument localDRAMSize={}: more than 2 TiB",
            a.local_dram
        )));
    }
    if a.flags & FLAG_CREATE_WITH_SHM != 0 {
        if a.shm_fd < 0 {
            return Err(BmError::invalid(format!(
                "invalid argument dramShmFd={}: SMEM_BM_FLAG_CREATE_WITH_SHM needs a file",
                a.shm_fd
            )));
        }
        if a.local_dram == 0 {
            return Err(BmError::invalid(
                "invalid argument localDRAMSize=0: SMEM_BM_FLAG_CREATE_WITH_SHM backs the local \
                 DRAM segment, which is empty",
            ));
        }
    }
    if a.local_hbm > MAX_LOCAL_HBM {
        return Err(BmError::invalid(format!(
            "invalid argument localHBMSize={}: more than 64 GiB",
            a.local_hbm
        )));
    }
    Ok(())
}

/// `smem_bm_create2`: reserves the pool's range and maps this rank's segment; local. Returns
/// the handle.
pub fn create(id: u32, a: &CreateArgs) -> Result<usize> {
    let s = state()?;
    check_create(id, a)?;
    if lock(&s.objects).values().any(|o| o.id == id) {
        return Err(BmError::new(
            DUPLICATED_OBJECT,
            format!("invalid argument id={id}: this process has an object of that id"),
        ));
    }
    let device = if a.max_hbm == 0 {
        None
    } else {
        let Some(npu) = &s.npu else {
            return Err(BmError::error(format!(
                "invalid argument maxHbmSize={} (localHBMSize={}): a device pool needs the npu \
                 device, and this process runs on the host device; set SHMEM_DEVICE=npu (or \
                 auto where ACL loads), or use a host pool (maxDramSize/localDRAMSize)",
                a.max_hbm, a.local_hbm
            )));
        };
        Some(device::DevicePool::create(
            npu,
            id,
            s.rank,
            s.world,
            a.max_hbm,
            a.local_hbm,
        )?)
    };
    let world = s.world as usize;
    let max = a.max_dram as usize;
    let len = max.checked_mul(world).ok_or_else(|| {
        BmError::invalid(format!("maxDramSize={max} * worldSize={world}: too large"))
    })?;
    let reservation = if max == 0 {
        None
    } else {
        Some(Reservation::take(len)?)
    };
    let base = reservation.as_ref().map_or(0, |r| r.base);
    let local = a.local_dram as usize;
    let fd = if local == 0 {
        None
    } else if a.flags & FLAG_CREATE_WITH_SHM != 0 {
        // SAFETY: the caller names an open descriptor of its own; it is only duplicated.
        let user = unsafe { BorrowedFd::borrow_raw(a.shm_fd) };
        let size = rustix::fs::fstat(user)
            .map_err(|e| BmError::invalid(format!("invalid argument dramShmFd={}: {e}", a.shm_fd)))?
            .st_size as u64;
        if size < a.local_dram {
            return Err(BmError::invalid(format!(
                "invalid argument dramShmFd={}: its file holds {size} bytes, less than \
                 localDRAMSize={}",
                a.shm_fd, a.local_dram
            )));
        }
        Some(
            rustix::io::fcntl_dupfd_cloexec(user, 0).map_err(|e| {
                BmError::error(format!("cannot duplicate dramShmFd={}: {e}", a.shm_fd))
            })?,
        )
    } else {
        Some(
            crate::mapping::memfd(&format!("smem-bm-{id}"), local)
                .map_err(|e| BmError::error(e.to_string()))?,
        )
    };
    let seg = base + s.rank as usize * max;
    if let (Some(fd), Some(reservation)) = (&fd, &reservation) {
        reservation.map_fd(seg, local, fd.as_fd())?;
    }
    let object = Arc::new(Object {
        membership: RwLock::new(Membership::NotJoined),
        device,
        pending: Mutex::new(BTreeSet::new()),
        user_mem: Mutex::new(HashMap::new()),
        id,
        pool: Pool {
            base,
            max: a.max_dram,
            world: s.world,
        },
        rank: s.rank,
        local: a.local_dram,
        fd,
        direct: Direct::new(s.world),
        reservation,
        destroyed: AtomicBool::new(false),
    });
    let handle = Arc::as_ptr(&object) as usize;
    lock(&s.objects).insert(handle, object);
    Ok(handle)
}

/// `smem_bm_destroy`: unmaps the pool, without leaving its group (the others see this member
/// down).
pub fn destroy(handle: usize) -> Result<()> {
    let (s, _) = object(handle)?;
    // Dropped (its group ended, its range unmapped) once no call uses it, outside the lock.
    let removed = lock(&s.objects).remove(&handle);
    if let Some(o) = &removed {
        o.destroyed.store(true, Ordering::Release);
    }
    if let Some(d) = removed.as_ref().and_then(|o| o.device.as_ref()) {
        d.stop();
    }
    drop(removed);
    Ok(())
}

fn group_failed(what: &str, e: impl std::fmt::Display) -> BmError {
    BmError::error(format!("{what}: {e}"))
}

impl State {
    /// The worker the objects' groups share, made on first use.
    fn worker(&self) -> Result<Arc<dyn DynamicWorker>> {
        let mut w = lock(&self.worker);
        if let Some(w) = &*w {
            return Ok(Arc::clone(w));
        }
        let made = default_worker(self.control_timeout)
            .map_err(|e| group_failed("cannot make the host transport's worker", e))?;
        *w = Some(Arc::clone(&made));
        Ok(made)
    }
}

/// `smem_bm_join`: joins the object's group with this process's rank and publishes its
/// segment. Already joined: 0.
pub fn join(handle: usize) -> Result<()> {
    let (s, o) = object(handle)?;
    let mut m = o.membership.write().unwrap_or_else(|e| e.into_inner());
    match *m {
        Membership::Joined(_) => return Ok(()),
        Membership::Left => {
            return Err(BmError::error(format!(
                "object {} left its group; create a new object to join again",
                o.id
            )))
        }
        Membership::NotJoined => {}
    }
    let worker = s.worker()?;
    let mut options = GroupOptions::new(s.world);
    options.member.rank = Some(s.rank);
    options.member.control_timeout = s.control_timeout;
    options.connect_timeout = s.connect_timeout;
    options.timeout = s.control_timeout;
    options.worker = Some(worker);
    let name = format!("smem-bm-{}", o.id);
    // This process's member id holding a rank already can only be a destroyed object of the
    // same id (create refuses a live one): its connection to the store is closed, and the store
    // lets the rank go once it has seen that, which a busy machine may delay past this join.
    let deadline = std::time::Instant::now() + s.control_timeout;
    let group = loop {
        match Group::join(&s.dial, &name, &s.id, options.clone()) {
            Ok(g) => break g,
            Err(e) if e.member_id_held() && std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => {
                return Err(group_failed(
                    &format!("rank {} cannot join object {}", s.rank, o.id),
                    e,
                ))
            }
        }
    };
    if let Some(fd) = &o.fd {
        let seg = seg_ptr(&o);
        // SAFETY: [seg, seg+local) maps the file from offset 0 shared for as long as the
        // object lives, which outlives its group (the membership drops first).
        unsafe { group.register_fd(SEGMENT, fd.as_fd(), 0, seg as *mut u8, o.local as usize) }
            .map_err(|e| group_failed("cannot publish this rank's segment", e))?;
    }
    if let Some(d) = &o.device {
        d.join(&group, s.control_timeout)?;
    }
    *m = Membership::Joined(group);
    drop(m);
    device::listen(&o, s.control_timeout)
}

/// `smem_bm_leave`: leaves the object's group for good. Not joined: -2003.
pub fn leave(handle: usize) -> Result<()> {
    let (_, o) = object(handle)?;
    let joined = matches!(
        *o.membership.read().unwrap_or_else(|e| e.into_inner()),
        Membership::Joined(_)
    );
    if let (true, Some(d)) = (joined, &o.device) {
        d.stop();
    }
    let mut m = o.membership.write().unwrap_or_else(|e| e.into_inner());
    match std::mem::replace(&mut *m, Membership::Left) {
        Membership::Joined(g) => {
            if let Some(d) = &o.device {
                d.unmap_peers();
            }
            if let Some(res) = &o.reservation {
                o.direct.release_all(res, &o.pool);
            }
            g.leave()
                .map_err(|e| group_failed(&format!("leaving object {}", o.id), e))
        }
        other => {
            *m = other;
            Err(BmError::new(
                NOT_STARTED,
                format!(
                    "object {} has not joined its group (call smem_bm_join)",
                    o.id
                ),
            ))
        }
    }
}

fn seg_ptr(o: &Object) -> usize {
    o.pool.base + (o.rank as usize) * (o.pool.max as usize)
}

fn check_mem_type(mem_type: u32) -> Result<()> {
    match mem_type {
        MEM_TYPE_DEVICE | MEM_TYPE_HOST => Ok(()),
        t => Err(BmError::invalid(format!(
            "invalid argument memType={t}: not SMEM_MEM_TYPE_DEVICE (2) or SMEM_MEM_TYPE_HOST (3)"
        ))),
    }
}

/// `smem_bm_get_local_mem_size_by_mem_type`: this rank's bytes of the pool of that type (0
/// without one).
pub fn local_size(handle: usize, mem_type: u32) -> Result<u64> {
    let (_, o) = object(handle)?;
    check_mem_type(mem_type)?;
    Ok(if mem_type == MEM_TYPE_HOST {
        o.local
    } else {
        o.device.as_ref().map_or(0, |d| d.local)
    })
}

/// `smem_bm_ptr_by_mem_type`: `base + max * peer`.
pub fn ptr(handle: usize, mem_type: u32, peer: u32) -> Result<usize> {
    let (_, o) = object(handle)?;
    check_mem_type(mem_type)?;
    if peer >= o.pool.world {
        return Err(BmError::invalid(format!(
            "invalid argument peerRankId={peer}: not below worldSize={}",
            o.pool.world
        )));
    }
    let pool = if mem_type == MEM_TYPE_DEVICE {
        o.device.as_ref().map(|d| d.pool).ok_or_else(|| {
            BmError::invalid(format!(
                "invalid argument memType=SMEM_MEM_TYPE_DEVICE: object {} has no device pool",
                o.id
            ))
        })?
    } else if o.pool.max == 0 {
        return Err(BmError::invalid(format!(
            "invalid argument memType=SMEM_MEM_TYPE_HOST: object {} has no host pool",
            o.id
        )));
    } else {
        o.pool
    };
    Ok(pool.base + peer as usize * pool.max as usize)
}

/// `smem_bm_get_rank_id_by_gva`: the rank whose segment holds `gva` (the offset divided by
/// the per-rank stride, `max`), in the host or the device pool; `None` outside both.
pub fn rank_by_gva(handle: usize, gva: usize) -> Result<Option<u32>> {
    let (_, o) = object(handle)?;
    Ok(o.pool
        .rank_of(gva)
        .or_else(|| o.device.as_ref().and_then(|d| d.pool.rank_of(gva))))
}

/// One resolved copy.
struct Op {
    src: Side,
    dest: Side,
    len: usize,
}

/// A side of a copy as the copy reaches it.
#[derive(Clone, Copy)]
enum At {
    /// An address of this process: local memory or the own segment.
    Here(usize),
    /// The address of a place in a peer's segment mapped here ([`direct`]).
    Mapped(usize),
    /// (rank, offset) of a peer's segment reached through the group.
    Peer(u32, u64),
}

/// The ranks a copy issued operations to: the first inline, so that a copy with one peer
/// allocates nothing.
#[derive(Default)]
struct Touched {
    first: Option<u32>,
    /// The others, once there are (so that an empty set costs nothing to drop).
    more: Option<BTreeSet<u32>>,
}

impl Touched {
    fn insert(&mut self, rank: u32) {
        match self.first {
            None => self.first = Some(rank),
            Some(f) if f == rank => {}
            Some(_) => {
                self.more.get_or_insert_with(BTreeSet::new).insert(rank);
            }
        }
    }

    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.first
            .into_iter()
            .chain(self.more.iter().flat_map(|m| m.iter().copied()))
    }
}

/// What a copy to or from peers needs.
struct Copier<'a> {
    o: &'a Object,
    group: Option<&'a Group>,
    /// The peers of this node mapped here (once joined), held until the copy is done.
    peers: Option<Peers<'a>>,
    /// Ranks with non-blocking operations issued.
    touched: Touched,
    /// Ranks the group's operations reached (their mappings renewed or made after the copy).
    reached: Touched,
    /// Whether a peer's mapped segment was written.
    wrote_direct: bool,
    /// The first rank the group failed to reach: its mapping, if any, goes after the copy.
    lost: Option<u32>,
}

impl Copier<'_> {
    fn own(&self, offset: u64, len: usize, what: Param) -> Result<usize> {
        if offset + len as u64 > self.o.local {
            return Err(BmError::invalid(format!(
                "invalid argument {what}: [{offset}, +{len}) of this rank's ({}) segment is \
                 beyond the {} bytes it backs",
                self.o.rank, self.o.local
            )));
        }
        Ok(seg_ptr(self.o) + offset as usize)
    }

    fn group(&self, rank: u32) -> Result<&Group> {
        self.group.ok_or_else(|| {
            BmError::error(format!(
                "rank {rank}'s segment of object {} is reached once this rank joined (call \
                 smem_bm_join)",
                self.o.id
            ))
        })
    }

    fn failed(&mut self, rank: u32, e: crate::group::GroupError) -> BmError {
        self.lost.get_or_insert(rank);
        let why = match e {
            crate::group::GroupError::NoMember { .. } => format!(
                "rank {rank} is not a member of object {}'s group: it left, its process ended, \
                 or it has not joined ({e})",
                self.o.id
            ),
            _ => e.to_string(),
        };
        BmError::error(format!(
            "copy with rank {rank}'s segment of object {} failed: {why}",
            self.o.id
        ))
    }

    /// Where a side of `op` is: an address of this process (local memory, the own segment
    /// checked against what this rank backs, or a peer's segment mapped here and checked,
    /// [`direct`]), or a place in a peer's segment reached through the group.
    fn place(&mut self, side: Side, len: usize, what: Param) -> Result<At> {
        Ok(match side {
            Side::Local(addr) => At::Here(addr),
            Side::Pool { rank, offset } if rank == self.o.rank => {
                At::Here(self.own(offset, len, what)?)
            }
            Side::Pool { rank, offset } => {
                let pool = &self.o.pool;
                match self
                    .peers
                    .as_mut()
                    .and_then(|p| p.at(pool, rank, offset, len))
                {
                    Some(at) => At::Mapped(at),
                    None => At::Peer(rank, offset),
                }
            }
        })
    }

    /// Runs `op`; `nb`: peers' parts non-blocking, completed by [`Copier::flush`].
    fn run(&mut self, op: &Op, nb: bool, what: Param) -> Result<()> {
        let len = op.len;
        let from = self.place(op.src, len, what)?;
        let to = self.place(op.dest, len, what)?;
        match (from, to) {
            (At::Here(src) | At::Mapped(src), At::Here(dest) | At::Mapped(dest)) => {
                // SAFETY: the user's buffers are theirs to name; a range of the own segment
                // is checked against what this rank maps, one of a peer's mapped segment
                // against what it backs (mapped while `peers` is held).
                unsafe { std::ptr::copy(src as *const u8, dest as *mut u8, len) };
                self.wrote_direct |= matches!(to, At::Mapped(_));
            }
            (At::Here(src), At::Peer(rank, offset)) => self.put(rank, offset, src, len, nb)?,
            (At::Peer(rank, offset), At::Here(dest)) => self.get(rank, offset, dest, len, nb)?,
            // Between a mapped peer and one reached through the group: blocking, so that no
            // operation still uses the mapping once the copy returns (it may be unmapped then).
            (At::Mapped(src), At::Peer(rank, offset)) => self.put(rank, offset, src, len, false)?,
            (At::Peer(rank, offset), At::Mapped(dest)) => {
                self.get(rank, offset, dest, len, false)?
            }
            (At::Peer(a, oa), At::Peer(b, ob)) => {
                // Between two peers: through a buffer of this process, a piece at a time.
                let mut bounce = vec![0u8; len.min(BOUNCE)];
                let mut done = 0;
                while done < len {
                    let n = bounce.len().min(len - done);
                    let at = bounce.as_mut_ptr() as usize;
                    self.get(a, oa + done as u64, at, n, false)?;
                    self.put(b, ob + done as u64, at, n, false)?;
                    done += n;
                }
            }
        }
        Ok(())
    }

    fn put(&mut self, rank: u32, offset: u64, src: usize, len: usize, nb: bool) -> Result<()> {
        self.transfer(true, rank, offset, src, len, nb)
    }

    fn get(&mut self, rank: u32, offset: u64, dest: usize, len: usize, nb: bool) -> Result<()> {
        self.transfer(false, rank, offset, dest, len, nb)
    }

    /// Writes (`put`) `len` bytes at `local` to `offset` of `rank`'s segment, or reads them
    /// from there into `local`; `nb`: non-blocking. Non-blocking operations, and every put,
    /// are complete at the peer after [`Copier::flush`] of the ranks in `touched`.
    fn transfer(
        &mut self,
        put: bool,
        rank: u32,
        offset: u64,
        local: usize,
        len: usize,
        nb: bool,
    ) -> Result<()> {
        let g = self.group(rank)?;
        // `local` is `len` bytes the caller names: the user's buffer by memfabric's contract
        // (valid until the flush for a non-blocking operation), or a bounce buffer (blocking).
        let done = if nb {
            if put {
                // SAFETY: `local` stays valid and unchanged until the flush (above).
                unsafe { g.put_nb(rank, SEGMENT, offset, local as *const u8, len) }
            } else {
                // SAFETY: `local` stays valid and untouched until the flush (above).
                unsafe { g.get_nb(rank, SEGMENT, offset, local as *mut u8, len) }
            }
        } else if put {
            // SAFETY: `local` is `len` readable bytes (above).
            let src = unsafe { std::slice::from_raw_parts(local as *const u8, len) };
            g.put(rank, SEGMENT, offset, src)
        } else {
            // SAFETY: `local` is `len` writable bytes no one else uses during the call (above).
            let dst = unsafe { std::slice::from_raw_parts_mut(local as *mut u8, len) };
            g.get(rank, SEGMENT, offset, dst)
        };
        done.map_err(|e| self.failed(rank, e))?;
        self.reached.insert(rank);
        // A put, even a blocking one, is visible at the peer after a flush of its rank.
        if nb || put {
            self.touched.insert(rank);
        }
        Ok(())
    }

    /// Completes the non-blocking operations to every rank touched; the first error.
    fn flush(&mut self, ranks: impl Iterator<Item = u32>) -> Result<()> {
        let mut first = Ok(());
        for r in ranks {
            if let Some(g) = self.group {
                if let Err(e) = g.flush(r) {
                    if first.is_ok() {
                        first = Err(self.failed(r, e));
                    }
                }
            }
        }
        first
    }
}

/// `smem_bm_copy` and `smem_bm_copy_batch`: `(src, dest, size)` elements, the copy type
/// resolved from the first and each element checked against it.
pub fn copy(
    handle: usize,
    elements: &[(usize, usize, u64)],
    t: u32,
    flags: u32,
    batch: bool,
) -> Result<()> {
    let o = object_for_copy(handle)?;
    if let Some(d) = &o.device {
        return device::copy(&o, d, elements, t, batch);
    }
    let Some(res) = o.reservation.as_ref() else {
        return Err(BmError::invalid(format!(
            "object {}: it has neither a host nor a device pool to copy with",
            o.id
        )));
    };
    // One element (every smem_bm_copy) resolved on the stack.
    let one: [(Side, Side, usize); 1];
    let many: Vec<(Side, Side, usize)>;
    let ops: &[(Side, Side, usize)] = match elements {
        [element] => {
            one = [classify::resolve_element(&o.pool, t, *element, batch, 0)?];
            &one
        }
        _ => {
            many = classify::resolve_batch(&o.pool, elements, t, batch)?;
            &many
        }
    };
    let m = o.membership.read().unwrap_or_else(|e| e.into_inner());
    let group = match &*m {
        Membership::Joined(g) => Some(g),
        _ => None,
    };
    let asynchronous = flags & ASYNC_COPY_FLAG != 0;
    // Every operation is issued non-blocking and completed once per rank at the end (or at
    // smem_bm_wait): one wait for a copy, as for a batch.
    let nb = true;
    let changes = group.map(|g| o.direct.sweep(g, res, &o.pool));
    let mut c = Copier {
        o: &o,
        group,
        peers: changes.map(|n| o.direct.peers(n)),
        touched: Touched::default(),
        reached: Touched::default(),
        wrote_direct: false,
        lost: None,
    };
    let mut result = Ok(());
    for (i, &(src, dest, len)) in ops.iter().enumerate() {
        let what = Param { batch, i };
        if let Err(e) = c.run(&Op { src, dest, len }, nb, what) {
            result = Err(e);
            break;
        }
    }
    if c.wrote_direct {
        // As the node transport's flush: the stores are ordered before what follows.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
    if c.reached.first.is_none() && c.lost.is_none() {
        // Nothing went through the group (every operation issued is in `reached`): nothing to
        // flush, no mapping to renew, make or release.
        return result;
    }
    let touched = std::mem::take(&mut c.touched);
    if !asynchronous {
        let flushed = c.flush(touched.iter());
        result = result.and(flushed);
    } else {
        lock(&o.pending).extend(touched.iter());
    }
    // Peers the group reached: mapped ones go directly again; others are mapped now.
    let reached = std::mem::take(&mut c.reached);
    let mut unmapped = Touched::default();
    if result.is_ok() {
        if let Some(p) = &c.peers {
            for r in reached.iter() {
                if p.reached(r) {
                    unmapped.insert(r);
                }
            }
        }
    }
    let lost = c.lost;
    drop(c);
    if let (Some(g), Some(n)) = (group, changes) {
        for r in unmapped.iter() {
            o.direct.map(g, res, &o.pool, r, n);
        }
    }
    if let Some(r) = lost {
        // The transport failed to reach it (gone, its registration withdrawn): its mapping is
        // of no more use; a member taking its rank is mapped anew.
        o.direct.release(res, &o.pool, r);
    }
    result
}

/// `smem_bm_wait`: completes this object's copies made with `ASYNC_COPY_FLAG`.
pub fn wait(handle: usize) -> Result<()> {
    let (_, o) = object(handle)?;
    let ranks = std::mem::take(&mut *lock(&o.pending));
    let m = o.membership.read().unwrap_or_else(|e| e.into_inner());
    let group = match &*m {
        Membership::Joined(g) => Some(g),
        _ => None,
    };
    let mut c = Copier {
        o: &o,
        group,
        peers: None,
        touched: Touched::default(),
        reached: Touched::default(),
        wrote_direct: false,
        lost: None,
    };
    let done = c.flush(ranks.into_iter());
    if let (Some(r), Some(res)) = (c.lost, &o.reservation) {
        o.direct.release(res, &o.pool, r);
    }
    done
}

/// `smem_bm_register_user_mem`: registers the buffer with the host transport's worker (copies
/// between it and peers of other nodes then go as from and into registered memory; copies work
/// without it). The same address and size again: 0; the same address with another size: -1.
pub fn register_user_mem(handle: usize, addr: u64, size: u64) -> Result<()> {
    let (s, o) = object(handle)?;
    if size == 0 {
        return Err(BmError::invalid(format!(
            "invalid argument size=0 (addr={addr:#x})"
        )));
    }
    let len = usize::try_from(size)
        .ok()
        .filter(|&l| (addr as usize).checked_add(l).is_some())
        .ok_or_else(|| {
            BmError::invalid(format!(
                "invalid argument size={size}: addr={addr:#x} + size passes the address space's end"
            ))
        })?;
    let mut m = lock(&o.user_mem);
    if let Some(u) = m.get(&addr) {
        return match u.size {
            s if s == size => Ok(()),
            s => Err(BmError::error(format!(
                "addr={addr:#x} is registered with size {s}, not size={size}"
            ))),
        };
    }
    let worker = s.worker()?;
    // SAFETY: memfabric's contract: the buffer stays valid until it is unregistered (or the
    // object destroyed). No peer gets its key, so only this process's copies touch it.
    let (reg, _key) = unsafe { worker.register(addr as *mut u8, len) }.map_err(|e| {
        BmError::error(format!(
            "cannot register addr={addr:#x} size={size} with the host transport: {e}"
        ))
    })?;
    m.insert(
        addr,
        UserMem {
            size,
            reg: Some((worker, reg)),
        },
    );
    Ok(())
}

/// `smem_bm_unregister_user_mem`: withdraws the buffer's registration, once this object's
/// asynchronous copies are complete (one may still use it); an unknown address: 0.
pub fn unregister_user_mem(handle: usize, addr: u64) -> Result<()> {
    let (_, o) = object(handle)?;
    if !lock(&o.user_mem).contains_key(&addr) {
        return Ok(());
    }
    if !lock(&o.pending).is_empty() {
        wait(handle)?;
    }
    lock(&o.user_mem).remove(&addr);
    Ok(())
}
