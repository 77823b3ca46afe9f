//! memfabric's Share Memory (`smem_shm_*`, docs/memfabric.md): windows shared by a static
//! group of ranks, over the group API ([`Group`]) and a config store.
//!
//! - **Init** ([`init`]) connects this process to the config store at the URL (rank 0 serves
//!   it first when asked to, [`super::config_store_open`]), retrying up to `shmInitTimeout`
//!   seconds, and makes the one worker every object of the process uses. Not collective; a
//!   second init is a no-op.
//! - **An object** ([`create`]) is the group `mf-shm-<id>` of the store, joined with a fixed
//!   rank (`rankId`) and size (`rankSize`), and its window: `rankSize * symmetricSize` bytes of
//!   address space reserved without access ([`Reservation`]). This rank's slot, at
//!   `gva + rank * symmetricSize`, is a memfd mapped there and registered in the group as
//!   shareable memory; once every rank joined, each rank maps the slots of the ranks of its node
//!   (their memfds, passed over their node sockets: [`Group::shared_file`]) at their place in
//!   its window, so that a CPU store into a peer's slot lands in the peer's memory (the host
//!   form of memfabric's MTE kernel). Slots of ranks on other nodes stay without access: no
//!   call of this family reaches them, and [`Object::can_reach`] says RDMA for them.
//! - **On the npu device** (`SHMEM_DEVICE=npu`, or `auto` where ACL loads and reports a
//!   device; init opens NPU `deviceId`, [`Npu::attach`]) the window is device address space
//!   instead ([`DeviceWindow`]: `gva` is a device address): this rank's slot is physical NPU
//!   memory mapped at its place; once every rank joined, the ranks gather their process ids,
//!   devices and nodes through the group, each exports its slot as a shareable handle that the
//!   processes of its node's ranks may import, they gather the handles, and each maps its node
//!   peers' slots at their places. The CPU never loads or stores it: programs copy with ACL
//!   (`aclrtMemcpy`), kernels load and store.
//! - **Collectives**: the control barrier and allgather are the group's; the subgroup forms
//!   run through the store under `mf/shm/<id>/sg/<key>_<n>/`, `n` counting this process's calls
//!   with that key. The atomic value allocator is a 1024-bit map under `mf/shm/<id>/atomic`,
//!   updated by compare-and-swap; a release clears its bit (values are reused). The exit key
//!   `mf/shm/<id>/exit` carries a global exit's status to every registered handler.
//! - **Failure.** A member that leaves or is reported down (its process ended, its connection
//!   broke), or the loss of the store, breaks the object: every later call fails with -1 and a
//!   message naming the rank. Every wait is bounded by `controlOperationTimeout`. Nothing ends
//!   the process.
//! - **The kernel-side block** ([`meta_block`]): per SHM id, the rank, rank count, symmetric
//!   size and extra context that kernels read through `shmem/memfabric_shm.h`'s getters; a
//!   `#[repr(C)]` mirror of that header's `smem_shm_meta_block`, in host memory. On the npu
//!   device a copy of it lives in NPU memory from init to uninit, updated by every change of
//!   the host block ([`meta_for_kernels`] gives its address, `smemx_shm_meta_block`).

use std::collections::{BTreeSet, HashMap};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use shmem_store::addr::StoreAddr;
use shmem_store::{BootstrapError, Client};

use super::npu::{self, DeviceWindow, NpuPeer};
use super::{parse_url, ERROR, INVALID_PARAM};
use crate::device::npu::Npu;
use crate::device::{Accelerator, DeviceMemory};
use crate::dynamic::DynamicWorker;
use crate::group::{default_worker, Group, GroupError, GroupOptions, MemberEvent, TcpDial};
use crate::mapping::{self, Reservation};
use crate::transport::TransportError;

/// memfabric's code for an object created twice (`SM_DUPLICATED_OBJECT`).
pub const DUPLICATED_OBJECT: i32 = -2006;
/// memfabric's code for an unknown handle or value (`SM_OBJECT_NOT_EXISTS`).
pub const OBJECT_NOT_EXISTS: i32 = -2007;

/// SHM object ids are `0..MAX_OBJECTS` (memfabric's 0..63).
pub const MAX_OBJECTS: u32 = 64;
/// Largest world and object (memfabric's `SMEM_WORLD_SIZE_MAX`).
pub const MAX_RANKS: u32 = 1024;
/// Largest slot (64 GiB).
pub const MAX_SYMMETRIC_SIZE: u64 = 64 << 30;
/// Slot sizes are multiples of this (2 MiB, memfabric's device granule).
pub const SYMMETRIC_GRANULE: u64 = 2 << 20;
/// Largest extra context.
pub const MAX_CONTEXT: usize = 65536;
/// Values of the atomic allocator per object.
pub const ATOMIC_VALUES: u32 = 1024;
/// Subgroup keys are shorter than this.
pub const MAX_KEY_CHARS: usize = 64;

/// Longest single wait on the store, between two looks at the object's members.
const SLICE: Duration = Duration::from_millis(100);

/// memfabric's data operation type of a rank of this node (`SMEMS_DATA_OP_MTE`), as
/// `smem_shm_topology_can_reach` reports it.
pub const DATA_OP_MTE: u32 = 1;
/// The same for a rank of another node (`SMEMS_DATA_OP_RDMA`).
pub const DATA_OP_RDMA: u32 = 4;

/// A failed call: memfabric's code and the message (without the call's name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShmError {
    pub code: i32,
    pub message: String,
}

impl ShmError {
    fn new(code: i32, message: impl Into<String>) -> ShmError {
        ShmError {
            code,
            message: message.into(),
        }
    }

    fn invalid(arg: &str, value: impl std::fmt::Display, why: &str) -> ShmError {
        ShmError::new(
            INVALID_PARAM,
            format!("invalid argument {arg}={value}: {why}"),
        )
    }
}

type Result<T> = std::result::Result<T, ShmError>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `smem_shm_config_t`'s timeouts and store choice.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// How long to retry connecting to the store, in seconds (`shmInitTimeout`).
    pub init_timeout_s: u32,
    /// Bound of every wait of a barrier, an allgather, a create (`controlOperationTimeout`).
    pub control_timeout_s: u32,
    /// Rank 0 serves the store (`startConfigStoreServer`).
    pub start_store: bool,
}

/// The family's state between init and uninit.
struct Family {
    dial: TcpDial,
    init_timeout: Duration,
    control_timeout: Duration,
    worker: Arc<dyn DynamicWorker>,
    /// The NPU that holds the windows (`SHMEM_DEVICE=npu`, or `auto` where ACL loads), else
    /// `None`: host memory.
    npu: Option<Npu>,
    /// The family's connection to the store (kept: it is the init's proof that the store
    /// answers, and the family's liveness).
    _client: Client,
}

static FAMILY: Mutex<Option<Arc<Family>>> = Mutex::new(None);
/// Live objects by handle.
static OBJECTS: Mutex<Vec<(u64, Arc<Object>)>> = Mutex::new(Vec::new());
/// The next handle's serial.
static NEXT_HANDLE: Mutex<u64> = Mutex::new(1);

fn family(call_needs: &str) -> Result<Arc<Family>> {
    lock(&FAMILY).clone().ok_or_else(|| {
        ShmError::new(
            INVALID_PARAM,
            format!("Share Memory is not initialised: call smem_shm_init before {call_needs}"),
        )
    })
}

/// `rank 2`, or `ranks 1, 2`.
fn name_ranks(ranks: &[u32]) -> String {
    let list: Vec<String> = ranks.iter().map(u32::to_string).collect();
    match ranks.len() {
        1 => format!("rank {}", list[0]),
        _ => format!("ranks {}", list.join(", ")),
    }
}

/// A rank count (named `size_arg`) of 1..1024 and a rank below it.
fn check_ranks(size_arg: &str, size: u32, rank: u32) -> Result<()> {
    if size == 0 || size > MAX_RANKS {
        return Err(ShmError::invalid(size_arg, size, "not in 1..1024"));
    }
    if rank >= size {
        return Err(ShmError::invalid(
            "rankId",
            rank,
            &format!("not below {size_arg}={size}"),
        ));
    }
    Ok(())
}

/// `smem_shm_init`: see the module's documentation. Returns whether this call initialised the
/// family (false: it was already, and nothing changed).
pub fn init(url: &str, world_size: u32, rank: u32, device_id: u16, config: Config) -> Result<bool> {
    let mut fam = lock(&FAMILY);
    if fam.is_some() {
        return Ok(false);
    }
    check_ranks("worldSize", world_size, rank)?;
    let addr = parse_url(url).map_err(|e| ShmError::new(e.code(), e.message()))?;
    let npu = open_npu(device_id)?;
    if rank == 0 && config.start_store {
        super::config_store_open(url).map_err(|e| ShmError::new(ERROR, e.message()))?;
    }
    let dial = TcpDial {
        addr: StoreAddr::from_socket(addr),
        tls: None,
        job: String::new(),
    };
    let init_timeout = Duration::from_secs(u64::from(config.init_timeout_s.max(1)));
    let control_timeout = Duration::from_secs(u64::from(config.control_timeout_s.max(1)));
    let client = Client::connect_open(&dial, init_timeout).map_err(|e| {
        ShmError::new(
            ERROR,
            format!(
                "no config store answers at {url} within shmInitTimeout={}s: {e}",
                config.init_timeout_s
            ),
        )
    })?;
    let worker = default_worker(control_timeout)
        .map_err(|e| ShmError::new(ERROR, format!("cannot make the transport's worker: {e}")))?;
    if let Some(npu) = &npu {
        meta_device_open(npu.clone())?;
    }
    *fam = Some(Arc::new(Family {
        dial,
        init_timeout,
        control_timeout,
        worker,
        npu,
        _client: client,
    }));
    Ok(true)
}

/// The NPU `SHMEM_DEVICE` chooses for the windows, as a SHMEM job chooses its heap's
/// ([`npu::choice`]): device `device_id` (memfabric's `deviceId`), shared with the process's
/// other families ([`npu::open`]). `None`: host memory (`host`, or `auto` without ACL).
fn open_npu(device_id: u16) -> Result<Option<Npu>> {
    match npu::choice().map_err(|e| ShmError::new(ERROR, e))? {
        npu::Choice::Npu => npu::open(device_id)
            .map(Some)
            .map_err(|e| ShmError::new(ERROR, e)),
        npu::Choice::Host => Ok(None),
        npu::Choice::Other(other) => Err(ShmError::new(
            ERROR,
            format!(
                "SHMEM_DEVICE={other}: Share Memory windows live in host memory or on the npu \
                 device only (set SHMEM_DEVICE=host or npu)"
            ),
        )),
    }
}

/// `smem_shm_uninit`: destroys this process's objects (locally) and forgets the store. A
/// store this process serves stays served.
pub fn uninit() -> bool {
    let objects: Vec<Arc<Object>> = lock(&OBJECTS).drain(..).map(|(_, o)| o).collect();
    for o in objects {
        o.end();
    }
    meta_device_close();
    lock(&FAMILY).take().is_some()
}

/// Why a member's loss breaks an object, from one event of its group.
fn broken_by(event: &MemberEvent) -> Option<String> {
    match event {
        MemberEvent::Left { rank, .. } => Some(format!("rank {rank} left the object")),
        MemberEvent::Down { rank, reason, .. } => Some(format!("rank {rank} is down ({reason})")),
        MemberEvent::Lost(why) => Some(format!("the config store is lost ({why})")),
        MemberEvent::Joined { .. } | MemberEvent::Changed(_) => None,
    }
}

/// A live SHM object of this process.
pub struct Object {
    id: u32,
    rank: u32,
    size: u32,
    symmetric: u64,
    timeout: Duration,
    /// `mf/shm/<id>/`: the object's own keys.
    prefix: String,
    dial: TcpDial,
    init_timeout: Duration,
    /// The object's group, until it ends (calls share it; the end takes it).
    group: RwLock<Option<Group>>,
    /// The object's connection for its own keys.
    client: Client,
    window: Window,
    /// Whether each rank's slot is mapped here.
    mapped: Vec<bool>,
    /// Why the object no longer works, once it does not.
    broken: Mutex<Option<String>>,
    /// Calls made per subgroup key.
    subgroups: Mutex<HashMap<String, u64>>,
    /// Values of the atomic allocator this process holds.
    values: Mutex<BTreeSet<u32>>,
    /// The exit handler's thread and its stop flag.
    exit: Mutex<Option<(Arc<AtomicBool>, JoinHandle<()>)>>,
}

/// The group's operations' errors as memfabric's -1, naming the object.
fn group_err(id: u32, what: &str, e: GroupError) -> ShmError {
    ShmError::new(ERROR, format!("SHM object {id}: {what}: {e}"))
}

fn store_err(id: u32, what: &str, e: BootstrapError) -> ShmError {
    ShmError::new(
        ERROR,
        format!("SHM object {id}: {what}: the config store: {e}"),
    )
}

/// `smem_shm_create`: the handle and the window's base. Collective over `rank_size` ranks.
pub fn create(id: u32, rank_size: u32, rank: u32, symmetric: u64) -> Result<(u64, usize)> {
    if id >= MAX_OBJECTS {
        return Err(ShmError::invalid("id", id, "not in 0..63"));
    }
    check_ranks("rankSize", rank_size, rank)?;
    if symmetric == 0
        || symmetric > MAX_SYMMETRIC_SIZE
        || !symmetric.is_multiple_of(SYMMETRIC_GRANULE)
    {
        return Err(ShmError::invalid(
            "symmetricSize",
            symmetric,
            "not a multiple of 2 MiB in 2 MiB..64 GiB",
        ));
    }
    let fam = family("smem_shm_create")?;
    if lock(&OBJECTS).iter().any(|(_, o)| o.id == id) {
        return Err(ShmError::new(
            DUPLICATED_OBJECT,
            format!("SHM object {id} exists in this process already (destroy it first)"),
        ));
    }
    let object = Arc::new(Object::create(&fam, id, rank_size, rank, symmetric)?);
    let mut objects = lock(&OBJECTS);
    if objects.iter().any(|(_, o)| o.id == id) {
        drop(objects);
        object.end();
        return Err(ShmError::new(
            DUPLICATED_OBJECT,
            format!("SHM object {id} was created meanwhile by another thread of this process"),
        ));
    }
    let handle = {
        let mut next = lock(&NEXT_HANDLE);
        *next += 1;
        (*next << 8) | u64::from(id)
    };
    let gva = object.window.addr();
    if let Err(e) = object.publish_meta() {
        drop(objects);
        object.end();
        return Err(e);
    }
    objects.push((handle, object));
    Ok((handle, gva))
}

/// The object behind `handle` (unknown: `code`, memfabric's -2000, or -2007 for destroy).
fn object(handle: u64, code: i32) -> Result<Arc<Object>> {
    lock(&OBJECTS)
        .iter()
        .find(|(h, _)| *h == handle)
        .map(|(_, o)| Arc::clone(o))
        .ok_or_else(|| {
            ShmError::new(
                code,
                format!(
                    "invalid argument handle={handle:#x}: not a live SHM object of this process"
                ),
            )
        })
}

/// Runs `f` on the object behind `handle`.
pub fn with<T>(handle: u64, f: impl FnOnce(&Object) -> Result<T>) -> Result<T> {
    f(&*object(handle, INVALID_PARAM)?)
}

/// `smem_shm_destroy`: local; the other ranks see this one leave (their later calls fail).
pub fn destroy(handle: u64) -> Result<()> {
    let o = {
        let mut objects = lock(&OBJECTS);
        let at = objects
            .iter()
            .position(|(h, _)| *h == handle)
            .ok_or_else(|| {
                ShmError::new(
                    OBJECT_NOT_EXISTS,
                    format!("invalid argument handle={handle:#x}: not a live SHM object of this process"),
                )
            })?;
        objects.remove(at).1
    };
    o.end();
    Ok(())
}

/// The kernel-side block: a mirror of `smem_shm_meta_block` (device/include/shmem/memfabric_shm.h).
#[repr(C)]
pub struct MetaBlock {
    /// `SMEM_SHM_META_MAGIC`, `SMEM_SHM_META_VERSION`, the slot count, a context's bytes.
    magic: u32,
    version: u32,
    slots: u32,
    context_bytes: u32,
    reserved: [u8; 112],
    slot: [MetaSlot; MAX_OBJECTS as usize],
    context: [[u8; MAX_CONTEXT]; MAX_OBJECTS as usize],
}

/// One SHM id's record (memfabric's slot layout); `rank_size` 0: no object.
#[repr(C)]
#[derive(Clone, Copy)]
struct MetaSlot {
    obj_id: u32,
    rank: u32,
    rank_size: u32,
    context_size: u32,
    symmetric_size: u64,
    qp_info: u64,
    reserved: [u8; 96],
}

const META_MAGIC: u32 = 0x4853_4d53; // "SMSH"
const META_VERSION: u32 = 1;

/// The block's address, allocated on first use and kept for the process's life: kernels on
/// the CPU read it through `shmemi_mf_shm_meta`.
pub fn meta_block() -> *mut MetaBlock {
    struct Block(*mut MetaBlock);
    // SAFETY: the pointer is written once and only shared as an address.
    unsafe impl Send for Block {}
    // SAFETY: as above.
    unsafe impl Sync for Block {}
    static BLOCK: OnceLock<Block> = OnceLock::new();
    BLOCK
        .get_or_init(|| {
            let layout = std::alloc::Layout::new::<MetaBlock>();
            // SAFETY: a non-zero layout; zeroed bytes are a valid MetaBlock (all integers).
            let b = unsafe { std::alloc::alloc_zeroed(layout) } as *mut MetaBlock;
            if b.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            // SAFETY: freshly allocated, exclusively ours.
            unsafe {
                (*b).magic = META_MAGIC;
                (*b).version = META_VERSION;
                (*b).slots = MAX_OBJECTS;
                (*b).context_bytes = MAX_CONTEXT as u32;
            }
            Block(b)
        })
        .0
}

/// An object's window: host address space whose slots are memfds, or NPU address space whose
/// slots are physical device memory.
enum Window {
    Host(Reservation),
    Npu(DeviceWindow),
}

impl Window {
    fn addr(&self) -> usize {
        match self {
            Window::Host(r) => r.addr(),
            Window::Npu(d) => d.base,
        }
    }
}

/// The device copy of the block while the windows are on the npu device: where it is
/// (`aclrtMalloc`), on which NPU. Made at init, freed at uninit.
static META_DEVICE: Mutex<Option<(Npu, usize)>> = Mutex::new(None);

/// Makes the device copy of the block on `npu` (a copy of the host block).
fn meta_device_open(npu: Npu) -> Result<()> {
    let len = std::mem::size_of::<MetaBlock>();
    let at = npu.malloc(len).map_err(|e| {
        ShmError::new(
            ERROR,
            format!("the kernel-side block's device copy ({len} bytes): {e}"),
        )
    })?;
    let mut slot = lock(&META_DEVICE);
    if let Some((old, at)) = slot.take() {
        let _ = old.free_plain(at);
    }
    *slot = Some((npu, at));
    drop(slot);
    meta_sync(0, len)
}

/// Frees the device copy of the block, if there is one.
fn meta_device_close() {
    if let Some((npu, at)) = lock(&META_DEVICE).take() {
        if let Err(e) = npu.free_plain(at) {
            tracing::warn!("the kernel-side block's device copy: {e}");
        }
    }
}

/// The address kernels read the block at: the device copy's on the npu device, else the host
/// block's (`smemx_shm_meta_block`).
pub fn meta_for_kernels() -> usize {
    match lock(&META_DEVICE).as_ref() {
        Some((_, at)) => *at,
        None => meta_block() as usize,
    }
}

/// Copies bytes `offset..offset + len` of the host block to the device copy, if there is one.
fn meta_sync(offset: usize, len: usize) -> Result<()> {
    let guard = lock(&META_DEVICE);
    let Some((npu, at)) = guard.as_ref() else {
        return Ok(());
    };
    // SAFETY: the range lies in both blocks (the caller's offsets are of fields of one); the
    // host block lives for the process, the device copy while META_DEVICE holds it (locked).
    unsafe { npu.write(at + offset, (meta_block() as *const u8).add(offset), len) }.map_err(|e| {
        ShmError::new(
            ERROR,
            format!("updating the kernel-side block's device copy: {e}"),
        )
    })
}

/// Bytes from the block's start to SHM id `id`'s record, and a record's size.
fn meta_slot_range(id: u32) -> (usize, usize) {
    let len = std::mem::size_of::<MetaSlot>();
    (
        std::mem::offset_of!(MetaBlock, slot) + id as usize * len,
        len,
    )
}

impl Object {
    fn create(fam: &Family, id: u32, size: u32, rank: u32, symmetric: u64) -> Result<Object> {
        let fail =
            |what: &str, e: String| ShmError::new(ERROR, format!("SHM object {id}: {what}: {e}"));
        let slot = symmetric as usize;
        let total = slot.checked_mul(size as usize).ok_or_else(|| {
            ShmError::invalid("symmetricSize", symmetric, "times rankSize overflows")
        })?;
        let own = rank as usize * slot;
        let (window, fd) = match &fam.npu {
            Some(npu) => {
                if !slot.is_multiple_of(npu.granularity()) {
                    return Err(ShmError::invalid(
                        "symmetricSize",
                        symmetric,
                        &format!(
                            "not a multiple of the npu device's granularity ({} bytes)",
                            npu.granularity()
                        ),
                    ));
                }
                let w = DeviceWindow::new(npu, total, own, slot)
                    .map_err(|e| fail("this rank's slot in NPU memory", e.to_string()))?;
                (Window::Npu(w), None)
            }
            None => {
                let window = Reservation::new(total)
                    .map_err(|e| fail("reserving the window", e.to_string()))?;
                let fd = mapping::memfd(&format!("mf-shm-{id}"), slot)
                    .map_err(|e| fail("this rank's slot", e.to_string()))?;
                window
                    .map_file(own, &fd, 0, slot)
                    .map_err(|e| fail("mapping this rank's slot", e.to_string()))?;
                (Window::Host(window), Some(fd))
            }
        };
        let mut options = GroupOptions::new(size);
        options.member.rank = Some(rank);
        options.member.control_timeout = fam.control_timeout;
        options.connect_timeout = fam.init_timeout;
        options.timeout = fam.control_timeout;
        options.worker = Some(Arc::clone(&fam.worker));
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let member = format!("r{rank}-p{}-{nanos:x}", std::process::id());
        let group = Group::join(&fam.dial, &format!("mf-shm-{id}"), &member, options)
            .map_err(|e| group_err(id, "joining its ranks", e))?;
        if let Some(fd) = fd {
            // SAFETY: the slot maps `fd` whole from offset 0 in the window, which the object
            // keeps (and `fd` keeps its length) until the group is left.
            unsafe {
                group.register_fd(
                    "slot",
                    fd.as_fd(),
                    0,
                    (window.addr() + own) as *mut u8,
                    slot,
                )
            }
            .map_err(|e| group_err(id, "publishing this rank's slot", e))?;
        }
        let client = Client::connect_open(&fam.dial, fam.init_timeout)
            .map_err(|e| store_err(id, "connecting", e))?;
        let mut o = Object {
            id,
            rank,
            size,
            symmetric,
            timeout: fam.control_timeout,
            prefix: format!("mf/shm/{id}/"),
            dial: fam.dial.clone(),
            init_timeout: fam.init_timeout,
            group: RwLock::new(Some(group)),
            client,
            window,
            mapped: vec![false; size as usize],
            broken: Mutex::new(None),
            subgroups: Mutex::new(HashMap::new()),
            values: Mutex::new(BTreeSet::new()),
            exit: Mutex::new(None),
        };
        o.mapped[rank as usize] = true;
        let created = o.join_all().and_then(|()| o.map_peers());
        if let Err(e) = created {
            o.end();
            return Err(e);
        }
        Ok(o)
    }

    /// Waits until every rank joined; rank 0 clears what an earlier object of this id left in
    /// the store; then a barrier.
    fn join_all(&self) -> Result<()> {
        let deadline = Instant::now() + self.timeout;
        loop {
            self.check()?;
            let members = self
                .with_group(|g| g.members())?
                .map_err(|e| group_err(self.id, "reading its ranks", e))?;
            if members.len() == self.size as usize {
                break;
            }
            if Instant::now() >= deadline {
                let here: Vec<u32> = members.iter().map(|(r, _)| *r).collect();
                let missing: Vec<u32> = (0..self.size).filter(|r| !here.contains(r)).collect();
                return Err(ShmError::new(
                    ERROR,
                    format!(
                        "SHM object {}: {} of {} did not create it within \
                         controlOperationTimeout={}s",
                        self.id,
                        name_ranks(&missing),
                        self.size,
                        self.timeout.as_secs()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if self.rank == 0 {
            self.client
                .delete_prefix(&self.prefix)
                .map_err(|e| store_err(self.id, "clearing its keys", e))?;
        }
        self.barrier()
    }

    /// Maps the slots of the ranks of this node into the window, then a barrier (so no rank
    /// goes before every peer fetched its file).
    fn map_peers(&mut self) -> Result<()> {
        if matches!(self.window, Window::Npu(_)) {
            return self.map_device_peers();
        }
        let slot = self.symmetric as usize;
        for r in (0..self.size).filter(|&r| r != self.rank) {
            let file = match self.with_group(|g| g.shared_file(r, "slot"))? {
                Ok(file) => file,
                // A rank of another node, where UCX does not load: its slot is not mapped
                // either way.
                Err(GroupError::Transport { source, .. })
                    if matches!(*source, TransportError::NeedsUcx { .. }) =>
                {
                    None
                }
                Err(e) => return Err(group_err(self.id, &format!("rank {r}'s slot"), e)),
            };
            if let Some((fd, fd_offset, len)) = file {
                if len != self.symmetric {
                    return Err(ShmError::new(
                        ERROR,
                        format!(
                            "SHM object {}: rank {r}'s slot is {len} bytes, this rank's \
                             symmetricSize is {}: every rank must pass the same",
                            self.id, self.symmetric
                        ),
                    ));
                }
                let Window::Host(window) = &self.window else {
                    unreachable!("a device window maps its peers in map_device_peers");
                };
                window
                    .map_file(r as usize * slot, fd.as_fd(), fd_offset, slot)
                    .map_err(|e| {
                        ShmError::new(
                            ERROR,
                            format!(
                                "SHM object {}: mapping rank {r}'s slot (descriptor {}): {e}",
                                self.id,
                                fd.as_raw_fd()
                            ),
                        )
                    })?;
                self.mapped[r as usize] = true;
            }
        }
        self.barrier()
    }

    /// The NPU form of [`Object::map_peers`]: the ranks gather their process ids, devices and
    /// nodes; each exports its slot to the processes of the ranks of its node; they gather the
    /// handles, and each imports its node peers' slots at their places in its window; then a
    /// barrier.
    fn map_device_peers(&mut self) -> Result<()> {
        let Window::Npu(w) = &self.window else {
            return Ok(());
        };
        let (npu, own, id) = (w.npu.clone(), w.own, self.id);
        let fail = |what: String, e: crate::error::Error| {
            ShmError::new(ERROR, format!("SHM object {id}: {what}: {e}"))
        };
        let me = NpuPeer::this(&npu).map_err(|e| fail("this rank's node".into(), e))?;
        let all = self.gather(&me.encode())?;
        // Ranks of this node: (rank, pid, device).
        let mut peers = Vec::new();
        for (r, bytes) in all.iter().enumerate() {
            let r = r as u32;
            let Some(their) = NpuPeer::decode(bytes) else {
                return Err(ShmError::new(
                    ERROR,
                    format!(
                        "SHM object {}: rank {r}'s NPU process id is malformed (is \
                         SHMEM_DEVICE=npu set for every rank?)",
                        self.id
                    ),
                ));
            };
            if r != self.rank && their.same_node(&me) {
                peers.push((r, their.pid, their.device));
            }
        }
        let pids: Vec<i32> = peers.iter().map(|p| p.1).collect();
        let shareable = if pids.is_empty() {
            0
        } else {
            npu.share_handle(own, &pids)
                .map_err(|e| fail("exporting this rank's slot".into(), e))?
        };
        let mut mine = shareable.to_le_bytes().to_vec();
        mine.extend_from_slice(&self.symmetric.to_le_bytes());
        let handles = self.gather(&mine)?;
        let slot = self.symmetric as usize;
        for (r, _, device) in peers {
            let bytes = &handles[r as usize];
            let word = |at: usize| {
                bytes
                    .get(at..at + 8)
                    .and_then(|b| <[u8; 8]>::try_from(b).ok())
                    .map(u64::from_le_bytes)
            };
            let (Some(handle), Some(len)) = (word(0), word(8)) else {
                return Err(ShmError::new(
                    ERROR,
                    format!(
                        "SHM object {}: rank {r}'s slot handle is malformed",
                        self.id
                    ),
                ));
            };
            if len != self.symmetric {
                return Err(ShmError::new(
                    ERROR,
                    format!(
                        "SHM object {}: rank {r}'s slot is {len} bytes, this rank's \
                         symmetricSize is {}: every rank must pass the same",
                        self.id, self.symmetric
                    ),
                ));
            }
            if let Window::Npu(w) = &mut self.window {
                w.import(device, handle, r as usize * slot, slot)
                    .map_err(|e| fail(format!("mapping rank {r}'s slot (device {device})"), e))?;
            }
            self.mapped[r as usize] = true;
        }
        self.barrier()
    }

    /// `f` on the object's group; an error once the object ended (destroyed by another
    /// thread meanwhile).
    fn with_group<T>(&self, f: impl FnOnce(&Group) -> T) -> Result<T> {
        let g = self.group.read().unwrap_or_else(|e| e.into_inner());
        match g.as_ref() {
            Some(g) => Ok(f(g)),
            None => Err(ShmError::new(
                ERROR,
                format!("SHM object {} was destroyed meanwhile", self.id),
            )),
        }
    }

    /// Ok while every rank is there and the store answers; reads the group's events.
    fn check(&self) -> Result<()> {
        {
            let g = self.group.read().unwrap_or_else(|e| e.into_inner());
            if let Some(g) = g.as_ref() {
                while let Some(e) = g.next_event(Duration::ZERO) {
                    if let Some(why) = broken_by(&e) {
                        let mut b = lock(&self.broken);
                        if b.is_none() {
                            *b = Some(why);
                        }
                    }
                }
            }
        }
        match lock(&self.broken).as_ref() {
            None => Ok(()),
            Some(why) => Err(ShmError::new(
                ERROR,
                format!("SHM object {} no longer works: {why}", self.id),
            )),
        }
    }

    fn mark_broken(&self, why: String) -> ShmError {
        let mut b = lock(&self.broken);
        if b.is_none() {
            *b = Some(why);
        }
        ShmError::new(
            ERROR,
            format!(
                "SHM object {} no longer works: {}",
                self.id,
                b.as_deref().unwrap_or_default()
            ),
        )
    }

    /// This rank and the object's rank count.
    pub fn rank(&self) -> (u32, u32) {
        (self.rank, self.size)
    }

    /// `smem_shm_control_barrier`.
    pub fn barrier(&self) -> Result<()> {
        self.gather(&[]).map(drop)
    }

    /// `smem_shm_control_allgather`: `send` from every rank, by rank, into `recv`
    /// (`send.len() * rankSize` bytes).
    pub fn allgather(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        let want = send.len() * self.size as usize;
        if recv.len() != want {
            return Err(ShmError::invalid(
                "recvSize",
                recv.len(),
                &format!("not sendSize*rankSize={}*{}={want}", send.len(), self.size),
            ));
        }
        let data = self.gather(send)?;
        for (r, d) in data.iter().enumerate() {
            if d.len() != send.len() {
                return Err(ShmError::new(
                    ERROR,
                    format!(
                        "SHM object {}: allgather: rank {r} sent {} bytes, this rank {}: every \
                         rank must send the same size",
                        self.id,
                        d.len(),
                        send.len()
                    ),
                ));
            }
            recv[r * send.len()..(r + 1) * send.len()].copy_from_slice(d);
        }
        Ok(())
    }

    /// A round of the group's collective with every rank; their contributions by rank.
    fn gather(&self, send: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.check()?;
        let op = if send.is_empty() {
            "barrier"
        } else {
            "allgather"
        };
        let gathered = match self.with_group(|g| g.allgather(send))? {
            Ok(g) => g,
            Err(e @ GroupError::Timeout { .. }) => {
                return Err(ShmError::new(
                    ERROR,
                    format!("SHM object {}: {op}: {e}", self.id),
                ))
            }
            Err(e) => return Err(self.mark_broken(format!("{op}: {e}"))),
        };
        if !gathered.gone.is_empty() {
            return Err(self.mark_broken(format!(
                "{op}: {} went down or left",
                name_ranks(&gathered.gone)
            )));
        }
        let mut by_rank = vec![None; self.size as usize];
        for (r, d) in gathered.data {
            if let Some(at) = by_rank.get_mut(r as usize) {
                *at = Some(d);
            }
        }
        let missing: Vec<u32> = (0..self.size)
            .filter(|&r| by_rank[r as usize].is_none())
            .collect();
        if !missing.is_empty() {
            self.check()?;
            return Err(self.mark_broken(format!("{op}: {} left the object", name_ranks(&missing))));
        }
        Ok(by_rank.into_iter().map(Option::unwrap_or_default).collect())
    }

    /// `smem_shm_subgroup_barrier` (`send` empty) and `smem_shm_subgroup_allgather`: the
    /// `n`-th call of this process with `key`, among `size` ranks where this one is `rank`.
    pub fn subgroup(
        &self,
        key: &str,
        size: u32,
        rank: u32,
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<()> {
        if key.chars().count() >= MAX_KEY_CHARS {
            return Err(ShmError::invalid(
                "key",
                key,
                &format!("not below {MAX_KEY_CHARS} characters"),
            ));
        }
        if size == 0 || size > self.size {
            return Err(ShmError::invalid(
                "rankSize",
                size,
                &format!("not in 1..{} (the object's rankSize)", self.size),
            ));
        }
        if rank >= size {
            return Err(ShmError::invalid(
                "rankId",
                rank,
                &format!("not below rankSize={size}"),
            ));
        }
        let want = send.len() * size as usize;
        if recv.len() != want {
            return Err(ShmError::invalid(
                "recvSize",
                recv.len(),
                &format!("not sendSize*rankSize={}*{size}={want}", send.len()),
            ));
        }
        self.check()?;
        let n = {
            let mut counts = lock(&self.subgroups);
            let c = counts.entry(key.to_string()).or_insert(0);
            *c += 1;
            *c - 1
        };
        let round = format!("{}sg/{key}_{n}/", self.prefix);
        let store = |e| store_err(self.id, &format!("subgroup '{key}' call {n}"), e);
        self.client
            .set(&format!("{round}d/{rank}"), send)
            .map_err(store)?;
        let deadline = Instant::now() + self.timeout;
        for r in 0..size {
            let k = format!("{round}d/{r}");
            let d = loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.client.watch(&k, None, left.min(SLICE)) {
                    Ok(Some(d)) => break d,
                    Ok(None) | Err(BootstrapError::Timeout { .. }) => {}
                    Err(e) => return Err(self.mark_broken(store(e).message)),
                }
                self.check()?;
                if Instant::now() >= deadline {
                    return Err(ShmError::new(
                        ERROR,
                        format!(
                            "SHM object {}: subgroup '{key}' call {n}: subgroup rank {r} of \
                             {size} did not take part within controlOperationTimeout={}s",
                            self.id,
                            self.timeout.as_secs()
                        ),
                    ));
                }
            };
            if d.len() != send.len() {
                return Err(ShmError::new(
                    ERROR,
                    format!(
                        "SHM object {}: subgroup '{key}' call {n}: subgroup rank {r} sent {} \
                         bytes, this rank {}",
                        self.id,
                        d.len(),
                        send.len()
                    ),
                ));
            }
            let at = r as usize * send.len();
            recv[at..at + send.len()].copy_from_slice(&d);
        }
        // The last rank to finish reading removes the round's keys.
        if self.client.add(&format!("{round}fin"), 1).map_err(store)? == i64::from(size) {
            self.client.delete_prefix(&round).map_err(store)?;
        }
        Ok(())
    }

    /// `smem_shm_topology_can_reach`: MTE for a rank whose slot is mapped here (this node),
    /// RDMA otherwise.
    pub fn can_reach(&self, remote: u32) -> Result<u32> {
        if remote >= self.size {
            return Err(ShmError::invalid(
                "remoteRank",
                remote,
                &format!("not below rankSize={}", self.size),
            ));
        }
        Ok(if self.mapped[remote as usize] {
            DATA_OP_MTE
        } else {
            DATA_OP_RDMA
        })
    }

    fn atomic_key(&self) -> String {
        format!("{}atomic", self.prefix)
    }

    /// Applies `edit` to the allocator's map (1024 bits, absent: all clear) until the store
    /// takes the result by compare-and-swap; `edit`'s error ends it.
    fn edit_atomic_map<T>(&self, edit: impl Fn(&mut [u8]) -> Result<T>) -> Result<T> {
        self.check()?;
        let key = self.atomic_key();
        let broken = |e| self.mark_broken(store_err(self.id, "atomic values", e).message);
        let mut current = match self.client.watch(&key, None, Duration::ZERO) {
            Ok(v) => v,
            Err(BootstrapError::Timeout { .. }) => None,
            Err(e) => return Err(broken(e)),
        };
        loop {
            let mut map = current.clone().unwrap_or_default();
            map.resize(ATOMIC_VALUES as usize / 8, 0);
            let out = edit(&mut map)?;
            let (swapped, now) = self
                .client
                .cas(&key, current.as_deref(), &map)
                .map_err(broken)?;
            if swapped {
                return Ok(out);
            }
            current = now;
        }
    }

    /// `smem_shm_atomic_alloc_value`: the lowest value of the object's 1024 not taken by any
    /// rank, if it is below `limit`.
    pub fn atomic_alloc(&self, limit: u32) -> Result<u32> {
        if limit > ATOMIC_VALUES {
            return Err(ShmError::invalid("limit", limit, "above 1024"));
        }
        let v = self.edit_atomic_map(|map| {
            match (0..limit).find(|&v| map[v as usize / 8] & (1 << (v % 8)) == 0) {
                Some(v) => {
                    map[v as usize / 8] |= 1 << (v % 8);
                    Ok(v)
                }
                None => Err(ShmError::new(
                    ERROR,
                    format!(
                        "SHM object {}: no atomic value below limit={limit} is free",
                        self.id
                    ),
                )),
            }
        })?;
        lock(&self.values).insert(v);
        Ok(v)
    }

    /// `smem_shm_atomic_release_value`: gives back a value this process took; it may be
    /// taken again.
    pub fn atomic_release(&self, value: i32) -> Result<()> {
        let v = u32::try_from(value)
            .ok()
            .filter(|v| lock(&self.values).contains(v));
        let Some(v) = v else {
            return Err(ShmError::new(
                OBJECT_NOT_EXISTS,
                format!("invalid argument value={value}: not an atomic value this process holds"),
            ));
        };
        self.edit_atomic_map(|map| {
            map[v as usize / 8] &= !(1 << (v % 8));
            Ok(())
        })?;
        lock(&self.values).remove(&v);
        Ok(())
    }

    fn exit_key(&self) -> String {
        format!("{}exit", self.prefix)
    }

    /// `smem_shm_register_exit`: `handler` (a C function of one `int`) is called, on a thread
    /// of the object's, with the status of the first global exit of the object.
    pub fn register_exit(&self, handler: extern "C" fn(i32)) -> Result<()> {
        let mut exit = lock(&self.exit);
        if exit.is_some() {
            return Err(ShmError::new(
                ERROR,
                format!(
                    "SHM object {}: an exit handler is registered already",
                    self.id
                ),
            ));
        }
        let client = Client::connect_open(&self.dial, self.init_timeout)
            .map_err(|e| store_err(self.id, "watching the exit key", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let (s, key, id) = (Arc::clone(&stop), self.exit_key(), self.id);
        let t = std::thread::Builder::new()
            .name("mf-shm-exit".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                while !s.load(Ordering::SeqCst) {
                    match client.watch(&key, None, SLICE) {
                        Ok(Some(v)) => {
                            let status =
                                <[u8; 4]>::try_from(v.as_slice()).map_or(-1, i32::from_le_bytes);
                            handler(status);
                            return;
                        }
                        Ok(None) | Err(BootstrapError::Timeout { .. }) => {}
                        Err(e) => {
                            if !s.load(Ordering::SeqCst) {
                                tracing::warn!("SHM object {id}: exit handler's watch: {e}");
                            }
                            return;
                        }
                    }
                }
            })
            .map_err(|e| {
                ShmError::new(
                    ERROR,
                    format!("SHM object {}: exit handler's thread: {e}", self.id),
                )
            })?;
        *exit = Some((stop, t));
        Ok(())
    }

    /// `smem_shm_global_exit`: every rank's registered handler, this one's included, is
    /// called with `status`. Ends nothing itself.
    pub fn global_exit(&self, status: i32) -> Result<()> {
        self.client
            .set(&self.exit_key(), &status.to_le_bytes())
            .map_err(|e| self.mark_broken(store_err(self.id, "global exit", e).message))
    }

    /// `smem_shm_set_extra_context`: copies `context` into the object's kernel-side slot.
    pub fn set_extra_context(&self, context: &[u8]) -> Result<()> {
        if context.is_empty() || context.len() > MAX_CONTEXT {
            return Err(ShmError::invalid("size", context.len(), "not in 1..65536"));
        }
        let b = meta_block();
        // SAFETY: the block lives for the process; this object owns slot `id` while it lives
        // (ids are unique among live objects); kernels only read it.
        unsafe {
            let ctx = std::ptr::addr_of_mut!((*b).context[self.id as usize]) as *mut u8;
            std::ptr::copy_nonoverlapping(context.as_ptr(), ctx, context.len());
            (*b).slot[self.id as usize].context_size = context.len() as u32;
        }
        let at = std::mem::offset_of!(MetaBlock, context) + self.id as usize * MAX_CONTEXT;
        meta_sync(at, context.len())?;
        let (at, len) = meta_slot_range(self.id);
        meta_sync(at, len)
    }

    /// Fills the object's kernel-side slot (and its device copy).
    fn publish_meta(&self) -> Result<()> {
        let b = meta_block();
        // SAFETY: as in `set_extra_context`.
        unsafe {
            (*b).slot[self.id as usize] = MetaSlot {
                obj_id: self.id,
                rank: self.rank,
                rank_size: self.size,
                context_size: 0,
                symmetric_size: self.symmetric,
                qp_info: 0,
                reserved: [0; 96],
            };
        }
        let (at, len) = meta_slot_range(self.id);
        meta_sync(at, len)
    }

    /// Ends the object here: its kernel-side slot is cleared, its exit handler stopped, its
    /// group left (the others see it leave), its window unmapped (on drop).
    fn end(&self) {
        let b = meta_block();
        // SAFETY: as in `set_extra_context`; only this object's slot, and only when it is
        // this object's (a failed create never published it).
        unsafe {
            let s = &mut (*b).slot[self.id as usize];
            if s.rank_size == self.size && s.obj_id == self.id && s.rank == self.rank {
                s.rank_size = 0;
                s.context_size = 0;
            }
        }
        let (at, len) = meta_slot_range(self.id);
        if let Err(e) = meta_sync(at, len) {
            tracing::warn!("SHM object {}: {}", self.id, e.message);
        }
        if let Some((stop, t)) = lock(&self.exit).take() {
            stop.store(true, Ordering::SeqCst);
            // A handler that destroys its object runs on that thread: it ends by itself.
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
        let group = self.group.write().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(g) = group {
            if let Err(e) = g.leave() {
                tracing::debug!("SHM object {}: leaving its ranks: {e}", self.id);
            }
        }
        self.client.shutdown();
    }
}
