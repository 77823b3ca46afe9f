//! The job state: the one plain description of the running job that the facade's data path
//! (and later kernel-side code) reads. It is a `#[repr(C)]` mirror of `shmem_job_state` in
//! `device/include/shmem/job_state.h`; this module owns the one instance, fills it when the
//! runtime starts and clears it when the runtime ends. It must never hold anything but fixed-size
//! fields and pointers, and never change a field's place: fields are added at the end.
//!
//! The facade compares the C layout with [`layout`] at start-up, so a difference between the two
//! definitions stops the library with an error naming the field instead of running on garbage.

use std::cell::UnsafeCell;
use std::ffi::{c_char, CString};
use std::mem::{align_of, offset_of, size_of};

use crate::layout as control;
use crate::transport::table::TransportOps;

/// Fields this mirror knows (`SHMEM_JOB_STATE_VERSION`).
pub const VERSION: u32 = 4;

/// A peer whose memory this PE cannot reach (`SHMEM_JOB_REACH_NONE`). Mirrors the header;
/// nothing sets it while every PE of a job shares one node.
#[allow(dead_code)]
pub const REACH_NONE: u8 = 0;
/// A peer whose memory is mapped here (`SHMEM_JOB_REACH_MAPPED`).
pub const REACH_MAPPED: u8 = 1;
/// A peer reached through a transport (`SHMEM_JOB_REACH_TRANSPORT`).
pub const REACH_TRANSPORT: u8 = 2;

use crate::layout::{
    AREA_CALL, AREA_CENTRAL_COUNT, AREA_CENTRAL_RELEASE, AREA_ROUNDS, AREA_SYNC_EPOCH,
    TEAM_AREA_LINES, TEAM_AREA_LINE_BYTES,
};

/// One entry of the team table (`shmem_job_team`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobTeam {
    /// World PE of team PE 0.
    pub start: i32,
    /// World PEs between consecutive team PEs.
    pub stride: i32,
    /// PEs in the team; 0 when the slot holds no team.
    pub size: i32,
    /// The team's synchronisation slot.
    pub slot: i32,
}

/// The job as the data path sees it (`shmem_job_state`); see the C header for each field.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct JobState {
    /// Bytes the filler wrote.
    pub size: u32,
    /// Fields the filler knows.
    pub version: u32,
    /// This PE; -1 while not running.
    pub my_pe: i32,
    /// PEs in the job; 0 while not running.
    pub n_pes: i32,
    /// This PE's user heap.
    pub heap_base: usize,
    /// Usable bytes of each user heap.
    pub heap_size: u64,
    /// This PE's static data.
    pub data_base: usize,
    /// Bytes of static data.
    pub data_size: u64,
    /// `data_size` when static data is symmetric, else 0.
    pub data_span: u64,
    /// `2 * n_pes` entries: per PE, user heap base and static data base as mapped here.
    pub bases: *const usize,
    /// `n_pes` entries: how each PE is reached (`REACH_*`).
    pub reach: *const u8,
    /// Why static data cannot be a target (NUL-terminated).
    pub data_off_reason: *const c_char,
    /// Bytes before each user heap, for kernel-side synchronisation words.
    pub reserved: u64,
    /// Unused since version 3 (0).
    pub barrier_words: u64,
    /// Unused since version 3 (0).
    pub team_areas: u64,
    /// Bytes of one team area.
    pub team_area_size: u64,
    /// Entries of `teams`.
    pub team_slots: i32,
    /// Nonzero when barriers take the central shape.
    pub central_barrier: i32,
    /// The team table, indexed by slot.
    pub teams: *mut JobTeam,
    /// Version 2: the transport's table, or null when every PE is mapped here.
    pub transport: *const TransportOps,
    /// Version 2: every peer's memory as mapped here, laid out as `bases`.
    pub mapped_bases: *const usize,
    /// Version 2: `bases` without a transport, all 0 with one (AMOs and signal updates).
    pub amo_bases: *const usize,
    /// Version 3: `n_pes` entries: each PE's control segment as mapped here (0: not on this
    /// node).
    pub control_bases: *const usize,
    /// Version 3: bytes of each control segment.
    pub control_size: u64,
    /// Version 3: offset in a control segment of its PE's state line.
    pub control_state: u64,
    /// Version 3: offset in a control segment of the world barrier's area.
    pub control_barrier: u64,
    /// Version 3: offset in a control segment of team slot 0's area.
    pub control_teams: u64,
    /// Version 4: nonzero when the heap is device memory the CPU must not touch.
    pub heap_on_device: i32,
    /// Version 4: the device holding this PE's heap (-1: host memory).
    pub device_id: i32,
    /// Version 4: `n_pes` entries: each PE's user heap in this process's device address space
    /// (0: not on this node).
    pub heap_device_bases: *const usize,
    /// Version 4: offset in an AscendC core's unified buffer of the scratch area its copies
    /// are staged through (`aclshmemx_set_mte_config`, written by the facade).
    pub mte_ub_offset: u64,
    /// Version 4: bytes of that scratch area; 0 until set (the architecture's default).
    pub mte_ub_size: u32,
    /// Version 4: the MTE event id that orders the staged copies (0..7).
    pub mte_event_id: u32,
}

impl JobState {
    /// The state of a library that is not running.
    pub const IDLE: JobState = JobState {
        size: size_of::<JobState>() as u32,
        version: VERSION,
        my_pe: -1,
        n_pes: 0,
        heap_base: 0,
        heap_size: 0,
        data_base: 0,
        data_size: 0,
        data_span: 0,
        bases: std::ptr::null(),
        reach: std::ptr::null(),
        data_off_reason: std::ptr::null(),
        reserved: 0,
        barrier_words: 0,
        team_areas: 0,
        team_area_size: 0,
        team_slots: 0,
        central_barrier: 0,
        teams: std::ptr::null_mut(),
        transport: std::ptr::null(),
        mapped_bases: std::ptr::null(),
        amo_bases: std::ptr::null(),
        control_bases: std::ptr::null(),
        control_size: 0,
        control_state: 0,
        control_barrier: 0,
        control_teams: 0,
        heap_on_device: 0,
        device_id: -1,
        heap_device_bases: std::ptr::null(),
        mte_ub_offset: 0,
        mte_ub_size: 0,
        mte_event_id: 0,
    };
}

/// The one instance, read by the facade under its C name (hidden in `libshmem.so`). It starts
/// a cache line, so what a put or get to a mapped peer reads (PE count, heap and static-data
/// ranges, `bases`: the first 64 bytes) is one line, whatever the link puts beside it.
#[repr(C, align(64))]
pub struct Published(UnsafeCell<JobState>);

// SAFETY: the state is written only by `publish` and `clear`, which the runtime calls from
// init and finalize while it holds its write lock; the specification forbids other library
// calls during those, so no reader runs concurrently with a write. The facade orders its
// readers after init with its own release/acquire on the library's phase.
unsafe impl Sync for Published {}

/// The instance the facade reads (`shmem_job_state_g` in C).
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static shmem_job_state_g: Published = Published(UnsafeCell::new(JobState::IDLE));

/// What a running job's state points at; lives as long as the runtime.
#[derive(Debug)]
pub struct Backing {
    bases: Vec<usize>,
    mapped_bases: Vec<usize>,
    amo_bases: Vec<usize>,
    control_bases: Vec<usize>,
    reach: Vec<u8>,
    data_off_reason: CString,
    teams: Vec<JobTeam>,
    heap_device_bases: Vec<usize>,
}

/// What a starting job knows, for [`publish`].
#[derive(Debug)]
pub struct Job<'a> {
    /// This PE.
    pub my_pe: usize,
    /// User heap base of every PE as mapped here.
    pub heap_bases: &'a [usize],
    /// Control segment base of every PE as mapped here (0: not on this node).
    pub control_bases: &'a [usize],
    /// Usable bytes of each user heap.
    pub heap_size: usize,
    /// This PE's static data.
    pub data_base: usize,
    /// Bytes of static data.
    pub data_size: usize,
    /// Static data base of every PE as mapped here; empty when not symmetric.
    pub data_bases: &'a [usize],
    /// Why static data cannot be a target ("" when it can).
    pub data_off_reason: &'a str,
    /// Whether barriers take the central shape.
    pub central_barrier: bool,
    /// How each PE is reached (`REACH_*`); empty: every PE is mapped.
    pub reach: &'a [u8],
    /// The transport's table (null when no PE is reached through one); must outlive the state.
    pub transport: *const TransportOps,
    /// The device holding the heap when the CPU must not touch it (its kind, the value of
    /// `heap_on_device`, and its id), else `None`: then no heap base is published for loads and
    /// stores, this PE's included, and `heap_bases` are device addresses.
    pub heap_device: Option<(i32, i32)>,
}

/// Fills the state for a started job; the returned backing must outlive it (until [`clear`]).
/// Called once per job, from init, before the facade reads anything.
pub fn publish(job: &Job<'_>) -> Backing {
    let n_pes = job.heap_bases.len();
    let symmetric = !job.data_bases.is_empty();
    let reach = if job.reach.is_empty() {
        vec![REACH_MAPPED; n_pes]
    } else {
        job.reach.to_vec()
    };
    // A PE reached through the transport is never touched through a mapping, by the facade or
    // the runtime: no base of any kind is published for it (this PE keeps its own: its words
    // are read here, whoever writes them). The loopback test transport keeps its own view of
    // the mappings, so the one-node tests take exactly the path a PE on another node takes.
    // A heap in device memory sends only heap accesses through the transport (the device's
    // copies): static data and control words stay in host memory, mapped by the node's PEs.
    let unmapped =
        |pe: usize| reach[pe] != REACH_MAPPED && pe != job.my_pe && job.heap_device.is_none();
    let mut mapped_bases = Vec::with_capacity(2 * n_pes);
    for (pe, &heap) in job.heap_bases.iter().enumerate() {
        let data = if symmetric { job.data_bases[pe] } else { 0 };
        let (heap, data) = if unmapped(pe) { (0, 0) } else { (heap, data) };
        // A heap in device memory is never loaded or stored by the CPU, this PE's own neither.
        let heap = if job.heap_device.is_some() { 0 } else { heap };
        mapped_bases.push(heap);
        mapped_bases.push(data);
    }
    let control_bases: Vec<usize> = (job.control_bases.iter().enumerate())
        .map(|(pe, &b)| if unmapped(pe) { 0 } else { b })
        .collect();
    // The data path's view: a PE reached through the transport has no base, so its puts and
    // gets miss the mapping and take the cold path to the transport (also under the loopback
    // test transport, which keeps its own view of the mappings).
    let bases: Vec<usize> = mapped_bases
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            let static_data = i % 2 == 1;
            if reach[i / 2] == REACH_MAPPED || (static_data && job.heap_device.is_some()) {
                b
            } else {
                0
            }
        })
        .collect();
    // With a transport every AMO goes through it: no AMO finds a base.
    let amo_bases = if job.transport.is_null() {
        bases.clone()
    } else {
        vec![0; 2 * n_pes]
    };
    // A reason never holds a NUL; one that did would lose its tail, not its meaning.
    let reason: Vec<u8> = job
        .data_off_reason
        .bytes()
        .take_while(|&b| b != 0)
        .collect();
    let data_off_reason = CString::new(reason).unwrap_or_default();
    let mut teams = vec![JobTeam::default(); control::TEAM_SLOTS];
    let mut backing = Backing {
        bases,
        mapped_bases,
        amo_bases,
        control_bases,
        reach,
        data_off_reason,
        teams: Vec::new(),
        heap_device_bases: job.heap_bases.to_vec(),
    };
    let state = JobState {
        size: size_of::<JobState>() as u32,
        version: VERSION,
        my_pe: job.my_pe as i32,
        n_pes: n_pes as i32,
        heap_base: job.heap_bases[job.my_pe],
        heap_size: job.heap_size as u64,
        data_base: job.data_base,
        data_size: job.data_size as u64,
        data_span: if symmetric { job.data_size as u64 } else { 0 },
        bases: backing.bases.as_ptr(),
        reach: backing.reach.as_ptr(),
        data_off_reason: backing.data_off_reason.as_ptr(),
        reserved: crate::heap::RESERVED as u64,
        barrier_words: 0,
        team_areas: 0,
        team_area_size: control::TEAM_AREA_SIZE as u64,
        team_slots: control::TEAM_SLOTS as i32,
        central_barrier: i32::from(job.central_barrier),
        teams: teams.as_mut_ptr(),
        transport: job.transport,
        mapped_bases: backing.mapped_bases.as_ptr(),
        amo_bases: backing.amo_bases.as_ptr(),
        control_bases: backing.control_bases.as_ptr(),
        control_size: control::SIZE as u64,
        control_state: control::STATE as u64,
        control_barrier: control::BARRIER as u64,
        control_teams: control::TEAM_AREAS as u64,
        heap_on_device: job.heap_device.map_or(0, |(kind, _)| kind),
        device_id: job.heap_device.map_or(-1, |(_, id)| id),
        heap_device_bases: backing.heap_device_bases.as_ptr(),
        mte_ub_offset: 0,
        mte_ub_size: 0,
        mte_event_id: 0,
    };
    backing.teams = teams;
    // SAFETY: see `Published`: no reader runs while init writes.
    unsafe { *shmem_job_state_g.0.get() = state };
    backing
}

/// Returns the state to that of a library that is not running; called from finalize before
/// the backing of the ended job is dropped.
pub fn clear() {
    // SAFETY: see `Published`: no reader runs while finalize writes.
    unsafe { *shmem_job_state_g.0.get() = JobState::IDLE };
}

/// A copy of the state as it is now.
pub fn snapshot() -> JobState {
    // SAFETY: see `Published`; a plain copy of plain data.
    unsafe { *shmem_job_state_g.0.get() }
}

/// The published state as a kernel on this PE's device reads it, laid out to be copied to the
/// device address `at` (the state, then its arrays, every pointer an address inside the copy):
/// peers' heaps at their device addresses (`heap_device_bases`), static data and control
/// segments absent (the device does not reach host memory), no transport (a kernel's AMOs are
/// the device's own). `None` when no job is published.
pub fn device_image(at: usize) -> Option<Vec<u8>> {
    let s = snapshot();
    if s.n_pes <= 0 || s.heap_device_bases.is_null() {
        return None;
    }
    let n = s.n_pes as usize;
    let slots = s.team_slots.max(0) as usize;
    // SAFETY: a published job's arrays have these lengths (`publish`) and live until finalize,
    // which no caller overlaps.
    let (devices, teams) = unsafe {
        (
            std::slice::from_raw_parts(s.heap_device_bases, n),
            std::slice::from_raw_parts(s.teams, slots),
        )
    };
    let bases: Vec<usize> = devices.iter().flat_map(|&d| [d, 0]).collect();
    let reach: Vec<u8> = (devices.iter())
        .map(|&d| if d != 0 { REACH_MAPPED } else { 0 })
        .collect();
    let mut image = vec![0u8; size_of::<JobState>()];
    let mut put = |bytes: &[u8]| -> usize {
        let off = image.len().next_multiple_of(8);
        image.resize(off, 0);
        image.extend_from_slice(bytes);
        at + off
    };
    let as_bytes = |v: &[usize]| -> Vec<u8> { v.iter().flat_map(|x| x.to_ne_bytes()).collect() };
    let bases_at = put(&as_bytes(&bases));
    let reach_at = put(&reach);
    let reason_at = put(&[0]);
    let control_at = put(&as_bytes(&vec![0; n]));
    let devices_at = put(&as_bytes(devices));
    let team_bytes: Vec<u8> = (teams.iter())
        .flat_map(|t| [t.start, t.stride, t.size, t.slot])
        .flat_map(i32::to_ne_bytes)
        .collect();
    let teams_at = put(&team_bytes);
    let state = JobState {
        data_base: 0,
        data_size: 0,
        data_span: 0,
        bases: bases_at as *const usize,
        reach: reach_at as *const u8,
        data_off_reason: reason_at as *const std::ffi::c_char,
        teams: teams_at as *mut JobTeam,
        transport: std::ptr::null(),
        mapped_bases: bases_at as *const usize,
        amo_bases: bases_at as *const usize,
        control_bases: control_at as *const usize,
        heap_device_bases: devices_at as *const usize,
        ..s
    };
    // SAFETY: JobState is plain #[repr(C)] data; its bytes are copied as they are.
    let head = unsafe {
        std::slice::from_raw_parts(
            (&state as *const JobState).cast::<u8>(),
            size_of::<JobState>(),
        )
    };
    image[..head.len()].copy_from_slice(head);
    Some(image)
}

/// The mirror's layout: its size and alignment, then each field's offset in declaration
/// order, then the team entry's size and offsets, then the team area's lines (with the layout
/// of its `CALL` line, which the facade writes), then the transport table's size and offsets. The facade compares it with the C
/// headers' at start-up.
pub fn layout() -> Vec<usize> {
    let mut l = vec![
        size_of::<JobState>(),
        align_of::<JobState>(),
        offset_of!(JobState, size),
        offset_of!(JobState, version),
        offset_of!(JobState, my_pe),
        offset_of!(JobState, n_pes),
        offset_of!(JobState, heap_base),
        offset_of!(JobState, heap_size),
        offset_of!(JobState, data_base),
        offset_of!(JobState, data_size),
        offset_of!(JobState, data_span),
        offset_of!(JobState, bases),
        offset_of!(JobState, reach),
        offset_of!(JobState, data_off_reason),
        offset_of!(JobState, reserved),
        offset_of!(JobState, barrier_words),
        offset_of!(JobState, team_areas),
        offset_of!(JobState, team_area_size),
        offset_of!(JobState, team_slots),
        offset_of!(JobState, central_barrier),
        offset_of!(JobState, teams),
        offset_of!(JobState, transport),
        offset_of!(JobState, mapped_bases),
        offset_of!(JobState, amo_bases),
        offset_of!(JobState, control_bases),
        offset_of!(JobState, control_size),
        offset_of!(JobState, control_state),
        offset_of!(JobState, control_barrier),
        offset_of!(JobState, control_teams),
        offset_of!(JobState, heap_on_device),
        offset_of!(JobState, device_id),
        offset_of!(JobState, heap_device_bases),
        offset_of!(JobState, mte_ub_offset),
        offset_of!(JobState, mte_ub_size),
        offset_of!(JobState, mte_event_id),
        size_of::<JobTeam>(),
        offset_of!(JobTeam, start),
        offset_of!(JobTeam, stride),
        offset_of!(JobTeam, size),
        offset_of!(JobTeam, slot),
        TEAM_AREA_LINE_BYTES,
        TEAM_AREA_LINES,
        AREA_CENTRAL_COUNT,
        AREA_CENTRAL_RELEASE,
        crate::layout::TEAM_ID_WORD,
        AREA_SYNC_EPOCH,
        AREA_CALL,
        crate::layout::TEAM_CALL_WORDS,
        crate::layout::TEAM_NAME_BYTES,
        crate::layout::CALL_BUSY as usize,
        AREA_ROUNDS,
    ];
    l.extend(crate::transport::table::layout());
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_fills_every_pe_and_clear_empties() {
        let heaps = [0x1000_0000, 0x2000_0000, 0x3000_0000];
        let datas = [0x10, 0x20, 0x30];
        let backing = publish(&Job {
            my_pe: 1,
            heap_bases: &heaps,
            control_bases: &[0x100_0000, 0x200_0000, 0x300_0000],
            heap_size: 4096,
            data_base: 0x20,
            data_size: 8,
            data_bases: &datas,
            data_off_reason: "",
            central_barrier: true,
            reach: &[],
            transport: std::ptr::null(),
            heap_device: None,
        });
        let s = snapshot();
        assert_eq!((s.my_pe, s.n_pes, s.heap_base), (1, 3, 0x2000_0000));
        assert_eq!((s.data_span, s.central_barrier), (8, 1));
        // SAFETY: `backing` keeps the arrays alive; 2 * n_pes and n_pes entries.
        let (bases, reach) = unsafe {
            (
                std::slice::from_raw_parts(s.bases, 6),
                std::slice::from_raw_parts(s.reach, 3),
            )
        };
        assert_eq!(
            bases,
            [0x1000_0000, 0x10, 0x2000_0000, 0x20, 0x3000_0000, 0x30]
        );
        assert_eq!(reach, [REACH_MAPPED; 3]);
        assert_eq!(s.team_slots as usize, backing.teams.len());
        // SAFETY: as above; n_pes entries.
        let control = unsafe { std::slice::from_raw_parts(s.control_bases, 3) };
        assert_eq!(control, [0x100_0000, 0x200_0000, 0x300_0000]);
        assert_eq!(s.control_size as usize, control::SIZE);
        clear();
        let s = snapshot();
        assert_eq!((s.my_pe, s.n_pes), (-1, 0));
        assert!(s.bases.is_null());
        drop(backing);
    }

    #[test]
    fn layout_lists_every_field_in_order() {
        let l = layout();
        assert_eq!(l[0], size_of::<JobState>());
        // Offsets grow: fields are listed in declaration order, none forgotten in between.
        let fields = &l[2..32];
        assert!(fields.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(l[0], offset_of!(JobState, mte_event_id) + size_of::<u32>());
    }
}
