//! Big Memory's device (HBM) pools, on the npu device (`SHMEM_DEVICE=npu`, or `auto` where ACL
//! loads and reports a device; init opens NPU `deviceId`, [`super::super::npu::open`]).
//!
//! - **Create** reserves `worldSize * maxHbmSize` bytes of the NPU's address space and maps
//!   `localHBMSize` bytes of new device memory at `base + rank * maxHbmSize`
//!   ([`DeviceWindow`]). The base is a device address of this process: ranks find each
//!   other's segments with `smem_bm_ptr_by_mem_type(SMEM_MEM_TYPE_DEVICE)`.
//! - **Join** exports this rank's segment as a shareable handle and publishes it with its
//!   process, device and node under the group's key `dev/<rank>`. Each pair of members of one
//!   node then runs the same exchange, from the joiner's `smem_bm_join` and, in each member
//!   already joined, from a thread its listener starts for the newcomer (nothing for them to
//!   call): each reads the other's key, lets the other's process import its own segment, says
//!   so under `ok/<rank>/<peer>`, waits for the other's word, and imports the other's segment
//!   at its place. The joiner tells every member before it waits for any, and no exchange
//!   waits for another, so members joining at once never wait for each other in a circle;
//!   the listener also looks for members it has not reached every second. A copy that
//!   reaches a member's segment before this rank's side of their exchange is done (a
//!   member's join returns once it mapped this rank's segment, not once this rank mapped
//!   its) waits for that exchange, or runs it, within the control timeout. Members of
//!   other nodes are recorded as such: their device segments are not reachable by this
//!   library's host transports, and copies to them are refused naming the rank.
//! - **Leave and death** (the group's events, read by the listener): a member that left or
//!   went down has its segment unmapped here; later copies to it fail naming its rank and why.
//!   `smem_bm_leave` stops the listener and unmaps every imported segment; destroy and uninit
//!   also free this rank's own.
//! - **Copies** of an object with a device pool run here: sides in this process (local
//!   memory, the own host segment, the own and imported device segments) are copied with
//!   ACL's `aclrtMemcpy` ([`Npu::copy`]), which tells host from device memory;
//!   a peer's host segment is reached through the group (device data through a host buffer,
//!   4 MiB at a time). Every copy is complete on return, with `ASYNC_COPY_FLAG` too
//!   (`smem_bm_wait` then has nothing left to wait for).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::classify::{self, Kind, Place, Pool};
use super::{lock, BmError, Membership, Object, Result, BOUNCE, SEGMENT};
use crate::device::npu::Npu;
use crate::group::{Group, GroupError, MemberEvent};
use crate::memfabric::npu::{DeviceWindow, NpuPeer};

/// Longest single wait of the exchange and the listener, between looks at their stop flag.
const SLICE: Duration = Duration::from_millis(100);

/// An object's device pool.
pub(super) struct DevicePool {
    pub pool: Pool,
    /// Bytes this rank backs at the start of its segment.
    pub local: u64,
    id: u32,
    rank: u32,
    /// This rank's export (0 until joined, or when it backs nothing).
    shareable: Mutex<u64>,
    npu: Npu,
    peers: RwLock<Peers>,
    /// Ranks an exchange runs with now (the listener's, each on a thread of its own, or a
    /// copy's, [`DevicePool::reach`]).
    in_flight: Mutex<HashSet<u32>>,
    /// The exchanges' bound (Big Memory's control timeout), set at join.
    timeout: Mutex<Duration>,
    stop: Arc<AtomicBool>,
    listener: Mutex<Option<JoinHandle<()>>>,
}

/// What this rank reaches of the others' segments.
struct Peers {
    window: DeviceWindow,
    /// Ranks whose segment is mapped here: their member id and the bytes they back.
    mapped: HashMap<u32, (String, u64)>,
    /// Ranks of other nodes, by member id.
    remote: HashMap<u32, String>,
    /// Why a rank's segment is not (or no longer) mapped here.
    gone: HashMap<u32, String>,
}

/// A member's published segment (`dev/<rank>`).
struct Published {
    member: String,
    shareable: u64,
    local: u64,
    max: u64,
    peer: NpuPeer,
}

impl Published {
    fn encode(&self) -> Vec<u8> {
        let mut v = (self.member.len() as u32).to_le_bytes().to_vec();
        v.extend_from_slice(self.member.as_bytes());
        for w in [self.shareable, self.local, self.max] {
            v.extend_from_slice(&w.to_le_bytes());
        }
        v.extend_from_slice(&self.peer.encode());
        v
    }

    fn decode(v: &[u8]) -> Option<Published> {
        let n = u32::from_le_bytes(v.get(..4)?.try_into().ok()?) as usize;
        let member = std::str::from_utf8(v.get(4..4 + n)?).ok()?.to_string();
        let word = |i: usize| {
            let at = 4 + n + 8 * i;
            Some(u64::from_le_bytes(v.get(at..at + 8)?.try_into().ok()?))
        };
        Some(Published {
            member,
            shareable: word(0)?,
            local: word(1)?,
            max: word(2)?,
            peer: NpuPeer::decode(v.get(4 + n + 24..)?)?,
        })
    }
}

fn dev_key(rank: u32) -> String {
    format!("dev/{rank}")
}

fn ok_key(from: u32, to: u32) -> String {
    format!("ok/{from}/{to}")
}

impl DevicePool {
    /// Reserves the pool's device range and maps this rank's segment.
    pub fn create(
        npu: &Npu,
        id: u32,
        rank: u32,
        world: u32,
        max: u64,
        local: u64,
    ) -> Result<DevicePool> {
        let g = npu.granularity() as u64;
        for (arg, v) in [("maxHbmSize", max), ("localHBMSize", local)] {
            if v % g != 0 {
                return Err(BmError::invalid(format!(
                    "invalid argument {arg}={v}: not a multiple of the npu device's \
                     granularity ({g} bytes)"
                )));
            }
        }
        let total = (max as usize).checked_mul(world as usize).ok_or_else(|| {
            BmError::invalid(format!("maxHbmSize={max} * worldSize={world}: too large"))
        })?;
        let window = DeviceWindow::new(npu, total, rank as usize * max as usize, local as usize)
            .map_err(|e| {
                BmError::error(format!(
                    "object {id}: this rank's device segment (maxHbmSize={max}, \
                     localHBMSize={local}): {e}"
                ))
            })?;
        Ok(DevicePool {
            pool: Pool {
                base: window.base,
                max,
                world,
            },
            local,
            id,
            rank,
            shareable: Mutex::new(0),
            npu: npu.clone(),
            peers: RwLock::new(Peers {
                window,
                mapped: HashMap::new(),
                remote: HashMap::new(),
                gone: HashMap::new(),
            }),
            in_flight: Mutex::new(HashSet::new()),
            timeout: Mutex::new(Duration::ZERO),
            stop: Arc::new(AtomicBool::new(false)),
            listener: Mutex::new(None),
        })
    }

    fn failed(&self, what: &str, e: impl std::fmt::Display) -> BmError {
        BmError::error(format!(
            "object {}: rank {}'s device pool: {what}: {e}",
            self.id, self.rank
        ))
    }

    /// The join's part: exports and publishes this rank's segment, then runs the exchange
    /// with every member there.
    pub fn join(&self, group: &Group, timeout: Duration) -> Result<()> {
        *lock(&self.timeout) = timeout;
        let shareable = if self.local == 0 {
            0
        } else {
            let own = self
                .peers
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .window
                .own;
            self.npu
                .share_handle(own, &[])
                .map_err(|e| self.failed("exporting this rank's segment", e))?
        };
        *lock(&self.shareable) = shareable;
        let peer = NpuPeer::this(&self.npu).map_err(|e| self.failed("this rank's node", e))?;
        let mine = Published {
            member: group.id().to_string(),
            shareable,
            local: self.local,
            max: self.pool.max,
            peer,
        };
        group
            .set(&dev_key(self.rank), &mine.encode())
            .map_err(|e| self.failed("publishing this rank's segment", e))?;
        // Every member is told first, then waited for: a member that waits for this one
        // meanwhile is answered whatever the order.
        let mut told = Vec::new();
        for (r, member) in self.unknown(group)? {
            if let Some(theirs) = self.announce(group, r, &member, timeout)? {
                told.push((r, member, theirs));
            }
        }
        for (r, member, theirs) in told {
            self.complete(group, r, &member, theirs, timeout)?;
        }
        Ok(())
    }

    /// The members not reached yet.
    fn unknown(&self, group: &Group) -> Result<Vec<(u32, String)>> {
        let members = group
            .members()
            .map_err(|e| self.failed("reading the members", e))?;
        Ok(members
            .into_iter()
            .filter(|(r, member)| *r != self.rank && !self.knows(*r, member))
            .collect())
    }

    /// Whether member `member` of rank `r` is reached (mapped here, or known on another node).
    fn knows(&self, r: u32, member: &str) -> bool {
        let p = self.peers.read().unwrap_or_else(|e| e.into_inner());
        let known = p.mapped.get(&r).map(|m| &m.0).or_else(|| p.remote.get(&r));
        known.is_some_and(|m| m == member)
    }

    /// Waits until the group's `key` holds a value `accept` takes, at most `timeout`.
    fn wait_for<T>(
        &self,
        group: &Group,
        key: &str,
        timeout: Duration,
        accept: impl Fn(&[u8]) -> Option<T>,
    ) -> Result<T> {
        let deadline = Instant::now() + timeout;
        let mut seen: Option<Vec<u8>> = None;
        loop {
            if self.stop.load(Ordering::SeqCst) {
                return Err(self.failed(key, "stopped (the object left or went)"));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.failed(
                    key,
                    format!(
                        "no answer within controlOperationTimeout={}s",
                        timeout.as_secs()
                    ),
                ));
            }
            match group.watch(key, seen.as_deref(), left.min(SLICE)) {
                Ok(Some(v)) => {
                    if let Some(t) = accept(&v) {
                        return Ok(t);
                    }
                    seen = Some(v);
                }
                Ok(None) => seen = None,
                Err(GroupError::Store { .. }) => {}
                Err(e) => return Err(self.failed(key, e)),
            }
        }
    }

    /// Whether rank `r` is settled here: its segment mapped, its member known on another node,
    /// or why it is not reachable recorded.
    fn settled(&self, r: u32) -> bool {
        let p = self.peers.read().unwrap_or_else(|e| e.into_inner());
        p.mapped.contains_key(&r) || p.remote.contains_key(&r) || p.gone.contains_key(&r)
    }

    /// Settles rank `r` before a copy reaches its segment, where `r` is a member: a member's
    /// join returns once it mapped this rank's segment, while this rank maps the member's in
    /// the listener's exchange, which may still run then (a program that copies right after
    /// every rank's join would otherwise find the segment not reachable). Waits for an
    /// exchange in flight, or runs it here, within the control timeout; a rank that is no
    /// member is left to the copy's error.
    fn reach(&self, group: &Group, r: u32) {
        let deadline = Instant::now() + *lock(&self.timeout);
        while !self.settled(r) && !self.stop.load(Ordering::SeqCst) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            if lock(&self.in_flight).contains(&r) {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            let Ok(members) = group.members() else {
                return;
            };
            let Some((_, member)) = members.into_iter().find(|(m, _)| *m == r) else {
                return;
            };
            if !lock(&self.in_flight).insert(r) {
                continue;
            }
            self.pair_or_record(group, r, &member, left);
            lock(&self.in_flight).remove(&r);
            return;
        }
    }

    /// [`DevicePool::pair`], its failure logged and recorded as why rank `r` is not reachable.
    fn pair_or_record(&self, group: &Group, r: u32, member: &str, timeout: Duration) {
        if let Err(e) = self.pair(group, r, member, timeout) {
            tracing::warn!("{}", e.message);
            let mut p = self.peers.write().unwrap_or_else(|e| e.into_inner());
            p.gone.insert(
                r,
                format!("its segment could not be mapped ({})", e.message),
            );
        }
    }

    /// The exchange with member `member` of rank `r` (see the module's documentation).
    fn pair(&self, group: &Group, r: u32, member: &str, timeout: Duration) -> Result<()> {
        if self.knows(r, member) {
            return Ok(());
        }
        match self.announce(group, r, member, timeout)? {
            Some(theirs) => self.complete(group, r, member, theirs, timeout),
            None => Ok(()),
        }
    }

    /// The exchange's first half: reads the member's segment, lets its process import this
    /// rank's and tells it so. `None`: it runs on another node (recorded as such).
    fn announce(
        &self,
        group: &Group,
        r: u32,
        member: &str,
        timeout: Duration,
    ) -> Result<Option<Published>> {
        let theirs = self.wait_for(group, &dev_key(r), timeout, |v| {
            Published::decode(v).filter(|p| p.member == member)
        })?;
        if theirs.max != self.pool.max {
            return Err(self.failed(
                &format!("rank {r}'s segment"),
                format!(
                    "its maxHbmSize is {}, this rank's {}: every rank must pass the same",
                    theirs.max, self.pool.max
                ),
            ));
        }
        let me = NpuPeer::this(&self.npu).map_err(|e| self.failed("this rank's node", e))?;
        if !theirs.peer.same_node(&me) {
            let mut p = self.peers.write().unwrap_or_else(|e| e.into_inner());
            p.remote.insert(r, member.to_string());
            p.gone.remove(&r);
            return Ok(None);
        }
        let shareable = *lock(&self.shareable);
        if shareable != 0 {
            self.npu
                .allow(shareable, &[theirs.peer.pid])
                .map_err(|e| self.failed(&format!("letting rank {r} import"), e))?;
        }
        group
            .set(&ok_key(self.rank, r), member.as_bytes())
            .map_err(|e| self.failed(&format!("telling rank {r}"), e))?;
        Ok(Some(theirs))
    }

    /// The exchange's second half: waits until the member let this rank import its segment,
    /// then maps it.
    fn complete(
        &self,
        group: &Group,
        r: u32,
        member: &str,
        theirs: Published,
        timeout: Duration,
    ) -> Result<()> {
        let my_id = group.id().as_bytes().to_vec();
        self.wait_for(group, &ok_key(r, self.rank), timeout, |v| {
            (v == my_id.as_slice()).then_some(())
        })?;
        let mut p = self.peers.write().unwrap_or_else(|e| e.into_inner());
        let offset = r as usize * self.pool.max as usize;
        p.window
            .unmap(offset)
            .map_err(|e| self.failed(&format!("unmapping rank {r}'s old segment"), e))?;
        p.mapped.remove(&r);
        if theirs.local != 0 {
            p.window
                .import(
                    theirs.peer.device,
                    theirs.shareable,
                    offset,
                    theirs.local as usize,
                )
                .map_err(|e| {
                    self.failed(
                        &format!("mapping rank {r}'s segment (device {})", theirs.peer.device),
                        e,
                    )
                })?;
        }
        p.mapped.insert(r, (member.to_string(), theirs.local));
        p.gone.remove(&r);
        p.remote.remove(&r);
        Ok(())
    }

    /// Forgets rank `r` (member `member`), which left or went down (`why`): its segment is
    /// unmapped here.
    fn drop_rank(&self, r: u32, member: &str, why: String) {
        let mut p = self.peers.write().unwrap_or_else(|e| e.into_inner());
        let ours = p.mapped.get(&r).map(|m| &m.0).or_else(|| p.remote.get(&r));
        if ours.is_some_and(|m| m != member) {
            return;
        }
        p.remote.remove(&r);
        if p.mapped.remove(&r).is_some() {
            let offset = r as usize * self.pool.max as usize;
            if let Err(e) = p.window.unmap(offset) {
                tracing::warn!(
                    "object {}: unmapping rank {r}'s device segment: {e}",
                    self.id
                );
            }
        }
        p.gone.insert(r, why);
    }

    /// Stops the listener; its exchanges in flight give up (waited for, a few slices at
    /// most, unless this is one of their threads).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = lock(&self.listener).take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
        let on_pair_thread = std::thread::current().name() == Some(PAIR_THREAD);
        let deadline = Instant::now() + 20 * SLICE;
        while !on_pair_thread && !lock(&self.in_flight).is_empty() && Instant::now() < deadline {
            std::thread::sleep(SLICE / 20);
        }
    }

    /// Unmaps every segment imported here (leave).
    pub fn unmap_peers(&self) {
        let mut p = self.peers.write().unwrap_or_else(|e| e.into_inner());
        let ranks: Vec<u32> = p.mapped.keys().copied().collect();
        for r in ranks {
            p.mapped.remove(&r);
            if let Err(e) = p.window.unmap(r as usize * self.pool.max as usize) {
                tracing::warn!(
                    "object {}: unmapping rank {r}'s device segment: {e}",
                    self.id
                );
            }
            p.gone.insert(r, "this rank left the object".into());
        }
    }
}

impl Drop for DevicePool {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How often the listener, without events, looks for members it has not reached (a member
/// whose join it saw no event for, an exchange that failed).
const RESCAN: Duration = Duration::from_secs(1);

/// The name of the threads that run the listener's exchanges.
const PAIR_THREAD: &str = "smem-bm-pair";

/// Runs the exchange with member `member` of rank `r` on a thread of its own (none when one
/// runs with that rank already), so that exchanges waiting for their members do not wait for
/// each other.
fn spawn_pair(weak: &Weak<Object>, d: &DevicePool, r: u32, member: String, timeout: Duration) {
    if !lock(&d.in_flight).insert(r) {
        return;
    }
    let weak = Weak::clone(weak);
    let spawned = std::thread::Builder::new()
        .name(PAIR_THREAD.into())
        .stack_size(256 * 1024)
        .spawn(move || {
            let Some(o) = weak.upgrade() else {
                return;
            };
            let Some(d) = &o.device else {
                return;
            };
            {
                let m = o.membership.read().unwrap_or_else(|e| e.into_inner());
                if let Membership::Joined(g) = &*m {
                    d.pair_or_record(g, r, &member, timeout);
                }
            }
            lock(&d.in_flight).remove(&r);
        });
    if let Err(e) = spawned {
        tracing::warn!("object's device pool: an exchange's thread: {e}");
        lock(&d.in_flight).remove(&r);
    }
}

/// Starts `o`'s listener, once it joined: the group's events make it run the exchange with a
/// member that joins, and unmap a member that leaves or goes down; between events it runs the
/// exchange with any member not reached yet.
pub(super) fn listen(o: &Arc<Object>, timeout: Duration) -> Result<()> {
    let Some(d) = &o.device else {
        return Ok(());
    };
    let weak: Weak<Object> = Arc::downgrade(o);
    let stop = Arc::clone(&d.stop);
    let t = std::thread::Builder::new()
        .name(format!("smem-bm-{}-dev", o.id))
        .stack_size(256 * 1024)
        .spawn(move || {
            let mut scanned = Instant::now();
            while !stop.load(Ordering::SeqCst) {
                let Some(o) = weak.upgrade() else {
                    return;
                };
                let Some(d) = &o.device else {
                    return;
                };
                let m = o.membership.read().unwrap_or_else(|e| e.into_inner());
                let Membership::Joined(g) = &*m else {
                    return;
                };
                match g.next_event(SLICE) {
                    Some(MemberEvent::Joined { rank, member }) => {
                        spawn_pair(&weak, d, rank, member, timeout)
                    }
                    Some(MemberEvent::Left { rank, member }) => {
                        d.drop_rank(rank, &member, "it left the object".into())
                    }
                    Some(MemberEvent::Down {
                        rank,
                        member,
                        reason,
                    }) => d.drop_rank(rank, &member, format!("it is down ({reason})")),
                    Some(_) => {}
                    None if scanned.elapsed() >= RESCAN => {
                        scanned = Instant::now();
                        match d.unknown(g) {
                            Ok(members) => {
                                for (r, member) in members {
                                    spawn_pair(&weak, d, r, member, timeout);
                                }
                            }
                            Err(e) => tracing::debug!("{}", e.message),
                        }
                    }
                    None => {}
                }
            }
        })
        .map_err(|e| BmError::error(format!("object {}: the device pool's listener: {e}", o.id)))?;
    *lock(&d.listener) = Some(t);
    Ok(())
}

/// Where a copy reaches one of its sides.
#[derive(Clone, Copy)]
enum At {
    /// An address of this process; `device`: device memory.
    Here { addr: usize, device: bool },
    /// (rank, offset) of a peer's host segment.
    HostPeer(u32, u64),
}

/// What a copy on an object with a device pool needs.
struct DeviceCopy<'a> {
    o: &'a Object,
    d: &'a DevicePool,
    peers: &'a Peers,
    group: Option<&'a Group>,
}

impl DeviceCopy<'_> {
    fn beyond(
        &self,
        what: classify::Param,
        pool: &str,
        r: u32,
        offset: u64,
        len: usize,
        backed: u64,
    ) -> BmError {
        BmError::invalid(format!(
            "invalid argument {what}: [{offset}, +{len}) of rank {r}'s {pool} segment is beyond \
             the {backed} bytes it backs"
        ))
    }

    fn at(&self, p: Place, len: usize, what: classify::Param) -> Result<At> {
        let (o, d) = (self.o, self.d);
        Ok(match p {
            Place::Local { addr, device } => At::Here { addr, device },
            Place::Pool {
                kind: Kind::Host,
                rank,
                offset,
            } if rank == o.rank => {
                if offset + len as u64 > o.local {
                    return Err(self.beyond(what, "host", rank, offset, len, o.local));
                }
                At::Here {
                    addr: super::seg_ptr(o) + offset as usize,
                    device: false,
                }
            }
            Place::Pool {
                kind: Kind::Host,
                rank,
                offset,
            } => At::HostPeer(rank, offset),
            Place::Pool {
                kind: Kind::Device,
                rank,
                offset,
            } => {
                let backed = if rank == o.rank {
                    d.local
                } else if let Some((_, backed)) = self.peers.mapped.get(&rank) {
                    *backed
                } else {
                    let why = if self.peers.remote.contains_key(&rank) {
                        "it runs on another node: device pools are reached between ranks of one \
                         node only"
                            .to_string()
                    } else if let Some(why) = self.peers.gone.get(&rank) {
                        why.clone()
                    } else {
                        "it has not joined the object (or this rank has not: call smem_bm_join)"
                            .to_string()
                    };
                    return Err(BmError::error(format!(
                        "rank {rank}'s device segment of object {} is not reachable from rank \
                         {}: {why}",
                        o.id, o.rank
                    )));
                };
                if offset + len as u64 > backed {
                    return Err(self.beyond(what, "device", rank, offset, len, backed));
                }
                At::Here {
                    addr: d.pool.base + rank as usize * d.pool.max as usize + offset as usize,
                    device: true,
                }
            }
        })
    }

    fn group(&self, rank: u32) -> Result<&Group> {
        self.group.ok_or_else(|| {
            BmError::error(format!(
                "rank {rank}'s host segment of object {} is reached once this rank joined (call \
                 smem_bm_join)",
                self.o.id
            ))
        })
    }

    fn peer_failed(&self, rank: u32, e: GroupError) -> BmError {
        BmError::error(format!(
            "copy with rank {rank}'s host segment of object {} failed: {e}",
            self.o.id
        ))
    }

    /// Copies `len` bytes between two addresses of this process.
    fn here(&self, src: usize, dest: usize, len: usize, device: bool) -> Result<()> {
        if !device {
            // SAFETY: host memory: the user's buffers, or the own host segment checked against
            // what this rank backs.
            unsafe { std::ptr::copy(src as *const u8, dest as *mut u8, len) };
            return Ok(());
        }
        // SAFETY: as above; device sides are this rank's or imported segments, checked
        // against what they back, or the user's device buffers.
        unsafe { self.d.npu.copy(dest, src, len) }
            .map_err(|e| BmError::error(format!("object {}: copy: {e}", self.o.id)))
    }

    fn run(&self, src: At, dest: At, len: usize) -> Result<()> {
        match (src, dest) {
            (At::Here { addr: s, device: a }, At::Here { addr: d, device: b }) => {
                self.here(s, d, len, a || b)
            }
            (At::Here { addr, device }, At::HostPeer(rank, offset)) => {
                self.peer(true, rank, offset, addr, device, len)
            }
            (At::HostPeer(rank, offset), At::Here { addr, device }) => {
                self.peer(false, rank, offset, addr, device, len)
            }
            (At::HostPeer(a, oa), At::HostPeer(b, ob)) => {
                // Between two peers: through a buffer of this process, a piece at a time.
                let mut bounce = vec![0u8; len.min(BOUNCE)];
                let at = bounce.as_mut_ptr() as usize;
                let mut done = 0;
                while done < len {
                    let n = bounce.len().min(len - done);
                    self.peer(false, a, oa + done as u64, at, false, n)?;
                    self.peer(true, b, ob + done as u64, at, false, n)?;
                    done += n;
                }
                Ok(())
            }
        }
    }

    /// Moves `len` bytes between `addr` of this process (device memory when `device`) and
    /// `offset` of `rank`'s host segment: `put` writes the segment (complete at the peer on
    /// return), else reads it. Device memory goes through a buffer of this process, a piece
    /// at a time.
    fn peer(
        &self,
        put: bool,
        rank: u32,
        offset: u64,
        addr: usize,
        device: bool,
        len: usize,
    ) -> Result<()> {
        let g = self.group(rank)?;
        let mut bounce = if device {
            vec![0u8; len.min(BOUNCE)]
        } else {
            Vec::new()
        };
        let piece = if device { BOUNCE } else { len };
        let mut done = 0;
        while done < len {
            let n = piece.min(len - done);
            let at = offset + done as u64;
            let local = if device {
                bounce.as_mut_ptr() as usize
            } else {
                addr + done
            };
            if put && device {
                self.here(addr + done, local, n, true)?;
            }
            let moved = if put {
                // SAFETY: `local` is `n` readable bytes: the user's buffer or the bounce buffer.
                let src = unsafe { std::slice::from_raw_parts(local as *const u8, n) };
                g.put(rank, SEGMENT, at, src)
            } else {
                // SAFETY: `local` is `n` writable bytes no one else uses during the call.
                let dst = unsafe { std::slice::from_raw_parts_mut(local as *mut u8, n) };
                g.get(rank, SEGMENT, at, dst)
            };
            moved.map_err(|e| self.peer_failed(rank, e))?;
            if !put && device {
                self.here(local, addr + done, n, true)?;
            }
            done += n;
        }
        if put {
            g.flush(rank).map_err(|e| self.peer_failed(rank, e))?;
        }
        Ok(())
    }
}

/// `smem_bm_copy` and `smem_bm_copy_batch` on an object with a device pool (see the module's
/// documentation); every copy is complete on return.
pub(super) fn copy(
    o: &Object,
    d: &DevicePool,
    elements: &[(usize, usize, u64)],
    t: u32,
    batch: bool,
) -> Result<()> {
    let mut pools = Vec::with_capacity(2);
    if o.pool.max != 0 {
        pools.push((Kind::Host, o.pool));
    }
    pools.push((Kind::Device, d.pool));
    let ops = classify::resolve_places(&pools, elements, t, batch)?;
    let m = o.membership.read().unwrap_or_else(|e| e.into_inner());
    let group = match &*m {
        Membership::Joined(g) => Some(g),
        _ => None,
    };
    if let Some(g) = group {
        for &(src, dest, _) in &ops {
            for p in [src, dest] {
                if let Place::Pool {
                    kind: Kind::Device,
                    rank,
                    ..
                } = p
                {
                    if rank != o.rank && !d.settled(rank) {
                        d.reach(g, rank);
                    }
                }
            }
        }
    }
    let peers = d.peers.read().unwrap_or_else(|e| e.into_inner());
    let c = DeviceCopy {
        o,
        d,
        peers: &peers,
        group,
    };
    for (i, &(src, dest, len)) in ops.iter().enumerate() {
        let what = classify::Param { batch, i };
        let (s, t) = (c.at(src, len, what)?, c.at(dest, len, what)?);
        c.run(s, t, len)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::node::locality::NodeId;

    #[test]
    fn a_published_segment_round_trips() {
        let p = Published {
            member: "host-42".into(),
            shareable: 0x1234_5678_9abc,
            local: 2 << 20,
            max: 4 << 20,
            peer: NpuPeer {
                pid: 42,
                device: 3,
                node: NodeId::this().unwrap(),
            },
        };
        let back = Published::decode(&p.encode()).unwrap();
        assert_eq!(back.member, p.member);
        assert_eq!(
            (back.shareable, back.local, back.max),
            (p.shareable, p.local, p.max)
        );
        assert_eq!((back.peer.pid, back.peer.device), (42, 3));
        assert!(back.peer.same_node(&p.peer));
        // Cut short before the node's host name: not a segment.
        let bytes = p.encode();
        for n in [0, 3, 10, 30, 45] {
            assert!(Published::decode(&bytes[..n]).is_none(), "{n}");
        }
    }
}
