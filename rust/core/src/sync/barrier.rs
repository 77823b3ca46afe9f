//! The barrier: one implementation for the world barrier (over all PEs, with call checks) and
//! for every team barrier the facade runs (`shmem_team_sync`, and the barriers inside team
//! collectives and splits). Its words are in the control segments ([`super::control`]), in an
//! area laid out as a team area (`shmem/job_state.h`'s `SHMEM_TEAM_AREA_*` lines): the world
//! barrier's own area, or the area of a team's slot. Two shapes, chosen at start-up for the job:
//!
//! - Dissemination (PEs have cores of their own): in round k, member i raises the round-k flag of
//!   member (i + 2^k) mod n to the barrier's epoch and waits until its own round-k flag reaches
//!   it; log2(n) rounds of one cache-line transfer each. A flag holds the epoch's low 32 bits (a
//!   flag is never more than one epoch away from its reader's, so they compare modulo 2^32),
//!   the sender's tag, and a mark; the receiver compares the tag with its own. A member that has
//!   seen a difference, itself or as a mark, marks its later flags. Every member's arrival
//!   reaches every other member through a chain of rounds, and a difference between two
//!   members' calls is a difference between two neighbours of that chain, so every member leaves
//!   a barrier whose calls differ knowing it. A flag already one epoch ahead comes from a member
//!   that left this barrier unmarked, which it cannot have done unless every call agreed.
//! - Central (more PEs than cores): every member ORs its tag, and above it its complement, into
//!   a word beside a counter on member 0, then adds 1 to the counter; the member that brings it
//!   to epoch * n finds a bit set in both halves if the tags differ, and raises member 0's
//!   release word to the epoch, marked if so, which everyone else waits for. Each member then
//!   needs the CPU twice per barrier, where dissemination needs it once per round, in an order
//!   the scheduler does not know.
//!
//! The world barrier carries a tag of the call each PE entered it with ([`Call::tag`]), so that
//! PEs whose calls over all PEs are out of step all find out at that barrier, rather than
//! corrupt data or wait for ever; its epoch lives here ([`Barrier`]) and every PE also records
//! in its state line the last epoch it entered and its whole call: after a barrier whose calls
//! differ (which no PE leaves for the next one) they say who called what. A team barrier
//! carries the tag of the team collective it belongs to (the facade's `team_enter` computes it
//! from the call) and counts its epoch in the member's own `SYNC_EPOCH` word of the team's
//! area, which a split zeroes with the rest of the area; each member records in its own `CALL`
//! line of that area how many team collectives it has entered on the team and the last one
//! (the facade's `team_enter` again). Members at the same number in different calls are out of
//! step whatever the calls' shapes: a member whose wait has come to napping looks for one
//! ([`team_differs`]), which finds the calls that never meet in one barrier (a broadcast's
//! flags against another collective's barrier).
//!
//! Epochs only grow and each word's meaning is "reached epoch e", so nothing is ever reset (but
//! the central tag word, by the last arrival, for the next epoch) and a member already in the
//! next barrier is harmless. A team's areas are reset only for the next team in the slot, each
//! member's once it has left the team's last barrier, and the team's id in every member's area
//! ([`TEAM_ID_WORD`]) changes first: a member still waiting for member 0's release then leaves
//! (the barrier was over), and [`team_entered`] no longer reads that member's line as this
//! team's. Release stores (or read-modify-writes) and acquire loads carry
//! every store made before the barrier to every member after it. This module never ends the
//! job: it says what it found.

use crate::layout::{
    AREA_CALL, AREA_CENTRAL_COUNT, AREA_CENTRAL_RELEASE, AREA_MAX_ROUNDS, AREA_ROUNDS,
    AREA_SYNC_EPOCH, TEAM_AREA_LINE_BYTES, TEAM_ID_WORD,
};
use crate::mapping::Mapping;
use crate::sync::call::{Call, TeamCall, TAG_BITS, TEAM_CALL_WORDS};
use crate::sync::control::{self, Control};
use crate::sync::view;
use crate::sync::wait;
use crate::transport::{self, Segment, TransportError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Per-PE state of the world barrier.
#[derive(Debug, Default)]
pub struct Barrier {
    epoch: AtomicU64,
    central: bool,
    /// Every PE's node (empty: one node), for the two-level shape.
    nodes: Vec<u32>,
}

/// Why [`Barrier::sync`] returned without the barrier completing normally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Every PE entered this barrier, but their calls do not agree ([`Call::agrees`]); every
    /// PE returns this, and none goes on to the next barrier, so [`entered`] reads each PE's
    /// call for this epoch.
    OutOfStep {
        /// The barrier's epoch (the number of barriers over all PEs so far, this one included).
        epoch: u64,
    },
    /// The caller's `give_up` said so before every PE had arrived.
    TimedOut {
        /// The barrier's epoch.
        epoch: u64,
    },
    /// A flag could not be raised or read through the transport (the transport's failure was
    /// logged where it happened); the caller ends the job.
    TransportFailed {
        /// The barrier's epoch.
        epoch: u64,
    },
}

/// What a PE last did at the barrier, from its state line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entered {
    /// The last epoch it entered (0: none yet).
    pub epoch: u64,
    /// The call it entered that epoch with (`None` before its first barrier).
    pub call: Option<Call>,
}

/// Asked with the barrier's epoch while a PE waits at it: true ends the wait ([`Stop::TimedOut`]).
pub type GiveUp<'a> = &'a mut dyn FnMut(u64) -> bool;

/// Checks of a flag made inline before the waiting policy starts: a member on another core
/// answers within them.
const INLINE_CHECKS: usize = 32;

/// Waits for `reached`, asking `give_up` (if any) between checks; false if it gave up.
fn wait_for(
    mut reached: impl FnMut() -> bool,
    give_up: &mut Option<GiveUp<'_>>,
    epoch: u64,
) -> bool {
    for _ in 0..INLINE_CHECKS {
        if reached() {
            return true;
        }
    }
    match give_up {
        None => {
            wait::until(reached);
            true
        }
        Some(give_up) => wait::until_or(reached, Some(&mut || give_up(epoch))),
    }
}

/// Where one word of a member's area is: mapped here, or on a PE reached through the
/// transport, at an offset of its control segment.
#[derive(Debug, Clone, Copy)]
pub enum Word<'a> {
    /// In this process's mapping of the member's control segment.
    Mapped(&'a AtomicU64),
    /// On world PE `pe`, `offset` bytes into its control segment.
    Remote {
        /// The world PE.
        pe: usize,
        /// The word's offset in its control segment.
        offset: usize,
    },
}

impl<'a> Word<'a> {
    /// Raises the word to `value` after every store this PE made before (a release store, or
    /// a put through the transport, which `shmem_barrier_all` precedes with quiet).
    fn raise(self, value: u64) -> Result<(), TransportError> {
        match self {
            Word::Mapped(w) => {
                w.store(value, Ordering::Release);
                Ok(())
            }
            Word::Remote { pe, offset } => {
                transport::put_word(remote(pe), pe, Segment::Control, offset, value)
            }
        }
    }

    /// Reads the word (an acquire load, or a get through the transport).
    fn read(self) -> Result<u64, TransportError> {
        match self {
            Word::Mapped(w) => Ok(w.load(Ordering::Acquire)),
            Word::Remote { pe, offset } => {
                transport::get_word(remote(pe), pe, Segment::Control, offset)
            }
        }
    }

    /// The mapped word; only for words every member maps (this PE's own, and the central
    /// shape's, which runs only when no PE is reached through a transport).
    fn mapped(self) -> &'a AtomicU64 {
        match self {
            Word::Mapped(w) => w,
            Word::Remote { pe, .. } => {
                panic!("barrier: PE {pe}'s words are behind the transport, not mapped here")
            }
        }
    }
}

/// The job's transport, which reaches `pe`: a word is remote only in a job that has one.
fn remote(pe: usize) -> &'static dyn transport::Transport {
    match view::get().and_then(view::View::transport) {
        Some(t) => t,
        None => panic!("no transport reaches PE {pe}"),
    }
}

/// The members of one barrier and where their words are: member i's area, laid out as a team
/// area. Implemented over the runtime's mappings and over the barriers' view of the job.
pub trait Areas {
    /// Members of the barrier.
    fn size(&self) -> usize;
    /// This PE's member number.
    fn me(&self) -> usize;
    /// Word `index` (of 8) of line `line` of member `member`'s area.
    fn word(&self, member: usize, line: usize, index: usize) -> Word<'_>;
    /// This member's own word (always mapped here).
    fn mine(&self, line: usize, index: usize) -> &AtomicU64 {
        self.word(self.me(), line, index).mapped()
    }
    /// The node member `member` runs on (the same numbering on every PE); all 0 on one node.
    fn node(&self, member: usize) -> u32;
}

/// A team's members and the offset of their areas in the control segments. Team PE i is world
/// PE `start + i * stride` (a progression: nothing to allocate or look up), or `pes[i]` when
/// `pes` is not empty (a list team: any distinct world PEs, in the order its maker gave them;
/// the list is the facade's, borrowed for the call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Team<'p> {
    /// World PE of team PE 0.
    pub start: usize,
    /// World PEs between consecutive team PEs (negative for a team listed downwards); unused
    /// for a list team.
    pub stride: isize,
    /// Members.
    pub size: usize,
    /// This PE's team PE number.
    pub me: usize,
    /// Offset of the team's area in every member's control segment.
    pub area: usize,
    /// A list team's members as world PEs (`size` of them); empty for a progression.
    pub pes: &'p [i32],
}

impl<'p> Team<'p> {
    /// The team holding synchronisation slot `slot`.
    pub fn in_slot(start: usize, stride: isize, size: usize, me: usize, slot: usize) -> Team<'p> {
        Team {
            start,
            stride,
            size,
            me,
            area: control::TEAM_AREAS + slot * control::TEAM_AREA_SIZE,
            pes: &[],
        }
    }

    /// The same team's slot and member number with the members `pes` (team PE i is world PE
    /// `pes[i]`): start becomes `pes[0]`, size `pes.len()`.
    pub fn listed<'q>(self, pes: &'q [i32]) -> Team<'q> {
        Team {
            start: pes.first().map_or(self.start, |&p| p as usize),
            stride: 0,
            size: pes.len(),
            me: self.me,
            area: self.area,
            pes,
        }
    }

    /// All `n_pes` PEs on the world barrier's area.
    pub fn world(my_pe: usize, n_pes: usize) -> Team<'static> {
        Team {
            start: 0,
            stride: 1,
            size: n_pes,
            me: my_pe,
            area: control::BARRIER,
            pes: &[],
        }
    }

    /// World PE of member `member`.
    pub fn world_pe(&self, member: usize) -> usize {
        if self.pes.is_empty() {
            (self.start as isize + member as isize * self.stride) as usize
        } else {
            self.pes[member] as usize
        }
    }

    /// True when team PE numbers are world PE numbers (team PE i is world PE i).
    pub fn is_world(&self) -> bool {
        if self.pes.is_empty() {
            self.start == 0 && (self.stride == 1 || self.size == 1)
        } else {
            self.pes.iter().enumerate().all(|(i, &p)| p as usize == i)
        }
    }

    /// The team in messages: a predefined team by its name, another by its members.
    pub fn describe(&self) -> String {
        let slot = self
            .area
            .checked_sub(control::TEAM_AREAS)
            .map(|o| o / control::TEAM_AREA_SIZE);
        match slot {
            _ if self.area == control::BARRIER => "all PEs".to_string(),
            Some(0) => "SHMEM_TEAM_WORLD".to_string(),
            Some(1) => "SHMEM_TEAM_SHARED".to_string(),
            _ if !self.pes.is_empty() => format!(
                "a team of {} PEs (world PEs {})",
                self.size,
                describe_list(self.pes)
            ),
            _ => format!(
                "a team of {} PEs (world PE {} first, stride {})",
                self.size, self.start, self.stride
            ),
        }
    }

    fn offset(&self, line: usize, index: usize) -> usize {
        self.area + line * TEAM_AREA_LINE_BYTES + 8 * index
    }
}

/// A list team's members for messages: all of them up to 16, else the first 16 and a count.
fn describe_list(pes: &[i32]) -> String {
    const SHOWN: usize = 16;
    let shown: Vec<String> = pes.iter().take(SHOWN).map(i32::to_string).collect();
    if pes.len() > SHOWN {
        format!("{}, ... ({} more)", shown.join(", "), pes.len() - SHOWN)
    } else {
        shown.join(", ")
    }
}

/// A team's areas through this process's mappings of the control segments.
#[derive(Debug)]
pub struct MappedAreas<'c> {
    /// The control segments.
    pub control: &'c Control,
    /// The members.
    pub team: Team<'c>,
    /// Every world PE's node (empty: one node).
    pub nodes: &'c [u32],
}

impl Areas for MappedAreas<'_> {
    fn size(&self) -> usize {
        self.team.size
    }
    fn me(&self) -> usize {
        self.team.me
    }
    fn word(&self, member: usize, line: usize, index: usize) -> Word<'_> {
        let (pe, offset) = (self.team.world_pe(member), self.team.offset(line, index));
        if view::through_transport(pe) {
            return Word::Remote { pe, offset };
        }
        Word::Mapped(self.control.map(pe).atomic_u64(offset))
    }
    fn node(&self, member: usize) -> u32 {
        (self.nodes.get(self.team.world_pe(member))).map_or(0, |&n| n)
    }
}

/// A team's areas through the control bases of the job's [`view`]: what the facade's team
/// barriers use, without the runtime's lock.
#[derive(Debug)]
pub struct PublishedAreas<'p>(pub Team<'p>);

impl Areas for PublishedAreas<'_> {
    fn size(&self) -> usize {
        self.0.size
    }
    fn me(&self) -> usize {
        self.0.me
    }
    fn word(&self, member: usize, line: usize, index: usize) -> Word<'_> {
        let (pe, offset) = (self.0.world_pe(member), self.0.offset(line, index));
        match view::get().and_then(|v| v.control_word(pe, offset)) {
            Some(w) => Word::Mapped(w),
            // Not mapped here: a live team's member is then reached through the transport.
            None => Word::Remote { pe, offset },
        }
    }
    fn node(&self, member: usize) -> u32 {
        view::get().map_or(0, |v| v.node(self.0.world_pe(member)))
    }
}

/// `pe`'s nap stamp: where it publishes its naps, and where peers read them.
pub fn nap_stamp(control: &Control, pe: usize) -> &AtomicU64 {
    control.map(pe).atomic_u64(control::NAP_STAMP)
}

/// Tells when a wait at the barrier cannot end: every PE that has not entered it has been
/// waiting in the library ([`wait::napping`]) for `patience` without a break. Nobody is then
/// computing who could release anybody, since the PEs at the barrier only wait too. A PE that
/// is merely late (computing, or blocked outside the library) is waited for as long as it
/// takes. Looks at the state lines at most every [`Hopeless::LOOK_EVERY`].
#[derive(Debug)]
pub struct Hopeless<'c> {
    control: &'c Control,
    n_pes: usize,
    patience: Duration,
    /// Per PE reached through the transport: its nap stamp at the last look. Another node's
    /// clock is not this one's, so such a PE counts as napping when its stamp moved since.
    remote_stamps: Vec<u64>,
    /// Since when every missing PE has been seen waiting.
    since: Option<Instant>,
    looked: Option<Instant>,
}

impl<'c> Hopeless<'c> {
    /// How often the state lines are read while waiting.
    pub const LOOK_EVERY: Duration = Duration::from_millis(50);

    /// A watch over the world barrier of an `n_pes` job.
    pub fn new(control: &'c Control, n_pes: usize, patience: Duration) -> Self {
        Hopeless {
            control,
            n_pes,
            patience,
            remote_stamps: vec![0; n_pes],
            since: None,
            looked: None,
        }
    }

    /// True once the barrier of `epoch` cannot complete (see [`Hopeless`]); an error when a
    /// PE reached through the transport cannot be read.
    pub fn check(&mut self, epoch: u64) -> Result<bool, TransportError> {
        let now = Instant::now();
        if self.looked.is_some_and(|t| now - t < Self::LOOK_EVERY) {
            return Ok(false);
        }
        self.looked = Some(now);
        let mut missing = Vec::new();
        for pe in 0..self.n_pes {
            if entered(self.control, pe)?.epoch < epoch {
                missing.push(pe);
            }
        }
        let mut stuck = !missing.is_empty();
        for &pe in &missing {
            let napping = if !view::through_transport(pe) {
                wait::napping(nap_stamp(self.control, pe))
            } else {
                let stamp = state_word(self.control, pe, control::NAP_STAMP)?;
                let last = std::mem::replace(&mut self.remote_stamps[pe], stamp);
                stamp != 0 && stamp != last
            };
            stuck &= napping;
            if !stuck {
                break;
            }
        }
        if !stuck {
            self.since = None;
            return Ok(false);
        }
        Ok(now - *self.since.get_or_insert(now) >= self.patience)
    }
}

/// Set in a flag or the release word, beside the epoch: the calls of this barrier differ.
const OUT_OF_STEP: u64 = 1 << 63;
const EPOCH_MASK: u64 = (1 << 32) - 1;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;

/// A dissemination flag: the epoch's low 32 bits, the sender's tag, the mark.
fn flag(epoch: u64, tag: u64, out_of_step: bool) -> u64 {
    let mark = if out_of_step { OUT_OF_STEP } else { 0 };
    (epoch & EPOCH_MASK) | tag << 32 | mark
}

/// How far a flag's epoch is ahead of `epoch`, modulo 2^32: 0 or 1 once reached, 2^32 - 1
/// before.
fn ahead(flag: u64, epoch: u64) -> u64 {
    (flag & EPOCH_MASK).wrapping_sub(epoch) & EPOCH_MASK
}

/// Index in the central count line of the tag word for `epoch` (one per epoch parity): the OR
/// of every member's tag in the low [`TAG_BITS`] bits, the OR of their complements above.
fn tag_word(epoch: u64) -> usize {
    1 + (epoch % 2) as usize
}

fn store_call(line: &Mapping, offset: usize, call: &Call) {
    for (i, w) in call.encode().into_iter().enumerate() {
        line.atomic_u64(offset + 8 * i).store(w, Ordering::Relaxed);
    }
}

/// The word at `offset` of `pe`'s control segment: through the mapping, or through the
/// transport for a PE reached by one.
fn state_word(control: &Control, pe: usize, offset: usize) -> Result<u64, TransportError> {
    let word = if view::through_transport(pe) {
        Word::Remote { pe, offset }
    } else {
        Word::Mapped(control.map(pe).atomic_u64(offset))
    };
    word.read()
}

/// `pe`'s last entry, from its state line. Exact for every PE once a barrier has stopped
/// [`Stop::OutOfStep`]; otherwise a snapshot of a PE that may be moving on. An error when `pe`
/// is reached through the transport and cannot be read.
pub fn entered(control: &Control, pe: usize) -> Result<Entered, TransportError> {
    let w = |i: usize| state_word(control, pe, control::STATE + 8 * i);
    Ok(Entered {
        epoch: w(0)?,
        call: Call::decode([w(1)?, w(2)?, w(3)?]),
    })
}

/// One barrier of `epoch` over `areas`' members, entered with `tag` when the calls are checked:
/// the algorithm both kinds of barrier share. Members on several nodes, some sharing one, take
/// two levels: a dissemination among the members of each node, one among the lowest member of
/// each node (the leaders, whose flags cross nodes), and a second one on each node that
/// releases its members; each on round lines of its own. A difference of calls anywhere reaches
/// every member: within a node through its first level, between nodes through the leaders (a
/// member agreeing with its leader, and the leaders with each other, agree with everyone), and
/// back through the second level, since every flag carries what its sender saw.
fn run(
    areas: &impl Areas,
    epoch: u64,
    tag: Option<u64>,
    central: bool,
    mut give_up: Option<GiveUp<'_>>,
) -> Result<(), Stop> {
    let (n, me) = (areas.size(), areas.me());
    if n <= 1 {
        return Ok(());
    }
    if central {
        return run_central(areas, epoch, tag, give_up);
    }
    let mut state = Rounds {
        epoch,
        tag: tag.unwrap_or(0),
        out_of_step: false,
        next_round: 0,
    };
    // Each level starts on the same round line on every member, whatever its node's size.
    let levels = match levels(areas) {
        Some(Levels {
            local,
            leaders,
            local_rounds,
        }) => {
            let release = local_rounds + rounds(leaders.len());
            vec![
                (local.clone(), 0),
                (leaders, local_rounds),
                (local, release),
            ]
        }
        None => vec![((0..n).collect(), 0)],
    };
    for (members, first_round) in &levels {
        if let Some(at) = members.iter().position(|&m| m == me) {
            state.next_round = *first_round;
            state.disseminate(areas, members, at, &mut give_up)?;
        }
    }
    if state.out_of_step {
        return Err(Stop::OutOfStep { epoch });
    }
    Ok(())
}

/// Rounds of a dissemination over `n` members: ceil(log2 n).
fn rounds(n: usize) -> usize {
    n.next_power_of_two().trailing_zeros() as usize
}

/// The two levels of a barrier over several nodes.
struct Levels {
    /// The members on this member's node, in order.
    local: Vec<usize>,
    /// Each node's lowest member, in order.
    leaders: Vec<usize>,
    /// Round lines of the node level: enough for the largest node.
    local_rounds: usize,
}

/// The two levels, when the members span several nodes and some node has several of them
/// (otherwise one level is as good) and the rounds of all three steps fit the round lines.
fn levels(areas: &impl Areas) -> Option<Levels> {
    let (n, me) = (areas.size(), areas.me());
    let nodes: Vec<u32> = (0..n).map(|m| areas.node(m)).collect();
    let local: Vec<usize> = (0..n).filter(|&m| nodes[m] == nodes[me]).collect();
    let leaders: Vec<usize> = (0..n)
        .filter(|&m| !nodes[..m].contains(&nodes[m]))
        .collect();
    let largest = (leaders.iter())
        .map(|&l| nodes.iter().filter(|&&x| x == nodes[l]).count())
        .max()
        .unwrap_or(1);
    let local_rounds = rounds(largest);
    let fits = 2 * local_rounds + rounds(leaders.len()) <= AREA_MAX_ROUNDS;
    (leaders.len() > 1 && leaders.len() < n && fits).then_some(Levels {
        local,
        leaders,
        local_rounds,
    })
}

/// A dissemination barrier in progress: its epoch and tag, what it has seen, and the next
/// round line to use.
struct Rounds {
    epoch: u64,
    tag: u64,
    out_of_step: bool,
    next_round: usize,
}

impl Rounds {
    /// One dissemination over `members` (member numbers), this PE being `members[at]`: in round
    /// k, raise the flag of the member 2^k places on and wait for one's own.
    fn disseminate(
        &mut self,
        areas: &impl Areas,
        members: &[usize],
        at: usize,
        give_up: &mut Option<GiveUp<'_>>,
    ) -> Result<(), Stop> {
        let (n, epoch) = (members.len(), self.epoch);
        let mut dist = 1usize;
        while dist < n {
            let round = self.next_round;
            debug_assert!(round < AREA_MAX_ROUNDS);
            areas
                .word(members[(at + dist) % n], AREA_ROUNDS + round, 0)
                .raise(flag(epoch, self.tag, self.out_of_step))
                .map_err(|_| Stop::TransportFailed { epoch })?;
            let mine: &AtomicU64 = areas.mine(AREA_ROUNDS + round, 0);
            let reached = || ahead(mine.load(Ordering::Acquire), epoch) <= 1;
            if !wait_for(reached, give_up, epoch) {
                return Err(Stop::TimedOut { epoch });
            }
            let got = mine.load(Ordering::Acquire);
            if ahead(got, epoch) == 0 {
                self.out_of_step |= got & OUT_OF_STEP != 0 || (got >> 32) & TAG_MASK != self.tag;
            }
            dist <<= 1;
            self.next_round += 1;
        }
        Ok(())
    }
}

fn run_central(
    areas: &impl Areas,
    epoch: u64,
    tag: Option<u64>,
    mut give_up: Option<GiveUp<'_>>,
) -> Result<(), Stop> {
    let n = areas.size();
    // Read-modify-writes on member 0's words: only when every member maps them (no transport
    // in the job, see `Barrier::new`).
    let release = areas.word(0, AREA_CENTRAL_RELEASE, 0).mapped();
    let counter = areas.word(0, AREA_CENTRAL_COUNT, 0).mapped();
    let tags = areas.word(0, AREA_CENTRAL_COUNT, tag_word(epoch)).mapped();
    if let Some(tag) = tag {
        tags.fetch_or(tag | (!tag & TAG_MASK) << TAG_BITS, Ordering::Relaxed);
    }
    let arrived = counter.fetch_add(1, Ordering::AcqRel) + 1;
    if arrived == epoch * n as u64 {
        // The counter's read-modify-writes form one release sequence: every member's OR, made
        // before its increment, is visible here. A bit set both in some tag and in some
        // complement is a bit where two tags differ (a team barrier ORs nothing).
        let seen = tags.load(Ordering::Relaxed);
        let differ = seen & (seen >> TAG_BITS) & TAG_MASK != 0;
        // The other word last served the previous epoch, which every member has left; it
        // serves the next one only after the release below.
        if tag.is_some() {
            areas
                .word(0, AREA_CENTRAL_COUNT, tag_word(epoch + 1))
                .mapped()
                .store(0, Ordering::Relaxed);
        }
        let mark = if differ { OUT_OF_STEP } else { 0 };
        release.store(epoch | mark, Ordering::Release);
        return if differ {
            Err(Stop::OutOfStep { epoch })
        } else {
            Ok(())
        };
    }
    // Member 0 leaves once the release is stored, and may then destroy the team and zero its
    // area for another team in the slot (its id changes first) while a member has still to see
    // the release: the barrier was complete then.
    let id = areas
        .mine(AREA_CENTRAL_RELEASE, TEAM_ID_WORD)
        .load(Ordering::Relaxed);
    let id0 = areas.word(0, AREA_CENTRAL_RELEASE, TEAM_ID_WORD).mapped();
    let reached = || {
        release.load(Ordering::Acquire) & !OUT_OF_STEP >= epoch || id0.load(Ordering::Acquire) != id
    };
    if !wait_for(reached, &mut give_up, epoch) {
        return Err(Stop::TimedOut { epoch });
    }
    if release.load(Ordering::Acquire) == epoch | OUT_OF_STEP {
        return Err(Stop::OutOfStep { epoch });
    }
    Ok(())
}

/// A team barrier (no completion of puts) of the team collective whose tag is `tag`: waits
/// until every member of `areas` has entered as many barriers on the team as this PE. Its epoch
/// is this member's `SYNC_EPOCH` word; a team of one PE has nothing to wait for and counts
/// nothing. Returns [`Stop::OutOfStep`] when the members' tags differ (every member learns it
/// at this barrier, and none goes on), and [`Stop::TimedOut`] when, while it waited, a member
/// turned out to be at this member's team collective number in a different call
/// ([`team_differs`]), and [`Stop::TransportFailed`] when a member's words could not be reached
/// through the transport.
pub fn team_sync(areas: &impl Areas, central: bool, tag: u64) -> Result<(), Stop> {
    if areas.size() <= 1 {
        return Ok(());
    }
    let mine = areas.mine(AREA_SYNC_EPOCH, 0);
    // Only this member writes its epoch word (a team's barriers are called by one thread of
    // each member at a time).
    let epoch = mine.load(Ordering::Relaxed) + 1;
    mine.store(epoch, Ordering::Relaxed);
    let mut looked: Option<Instant> = None;
    let mut lost = false;
    let mut differs = |_| {
        let now = Instant::now();
        if looked.is_some_and(|t| now - t < Hopeless::LOOK_EVERY) {
            return false;
        }
        looked = Some(now);
        // A member that cannot be read ends the wait too, as a transport failure.
        team_differs(areas).map_or_else(
            |_| {
                lost = true;
                true
            },
            |m| m.is_some(),
        )
    };
    match run(areas, epoch, Some(tag), central, Some(&mut differs)) {
        Err(Stop::TimedOut { epoch }) if lost => Err(Stop::TransportFailed { epoch }),
        r => r,
    }
}

pub(crate) use crate::layout::CALL_BUSY;

/// Records that this member enters team collective `call` on `areas`' team; returns its number
/// on the team (1 for the first). The facade's `team_enter` (`cpp/src/team.cpp`) writes the same
/// line the same way on every team collective: the words as plain stores, the number last,
/// marked busy meanwhile.
#[cfg(test)]
pub fn team_enter(areas: &impl Areas, call: &TeamCall) -> u64 {
    let number = areas.mine(AREA_CALL, 0);
    let n = (number.load(Ordering::Relaxed) & !CALL_BUSY) + 1;
    number.store(n | CALL_BUSY, Ordering::Relaxed);
    std::sync::atomic::fence(Ordering::Release);
    for (i, w) in call.encode().into_iter().enumerate() {
        areas.mine(AREA_CALL, 1 + i).store(w, Ordering::Relaxed);
    }
    number.store(n, Ordering::Release);
    n
}

/// Member `member`'s team collective number and call (0 and `None` before its first, or once
/// it has left the team: its id is not this member's), as one consistent snapshot of its line:
/// a read that overlaps the member's rewrite is made again. An error when the member is reached
/// through the transport and cannot be read.
pub fn team_entered(
    areas: &impl Areas,
    member: usize,
) -> Result<(u64, Option<TeamCall>), TransportError> {
    let word = |i: usize| areas.word(member, AREA_CALL, i);
    // A rewrite takes a few stores: a line still busy after this many reads belongs to a
    // member that stopped in the middle, whose call is then unknown.
    for _ in 0..1000 {
        let before = word(0).read()?;
        if before & CALL_BUSY != 0 {
            std::thread::yield_now();
            continue;
        }
        let mut w = [0u64; TEAM_CALL_WORDS];
        for (i, x) in w.iter_mut().enumerate() {
            *x = word(1 + i).read()?;
        }
        std::sync::atomic::fence(Ordering::Acquire);
        if word(0).read()? != before {
            continue;
        }
        // Read after the line: a member that zeroed its area for another team changed its id
        // before it wrote anything there.
        let id = |m: usize| areas.word(m, AREA_CENTRAL_RELEASE, TEAM_ID_WORD).read();
        if member != areas.me() && id(member)? != id(areas.me())? {
            return Ok((0, None));
        }
        return Ok((before, TeamCall::decode(w)));
    }
    Ok((0, None))
}

/// A member at this member's team collective number whose call differs from this member's, if
/// any: the team's collective calls are then out of step, since every member makes the same
/// calls on a team in the same order.
pub fn team_differs(areas: &impl Areas) -> Result<Option<usize>, TransportError> {
    let (n, mine) = team_entered(areas, areas.me())?;
    for m in 0..areas.size() {
        if m == areas.me() {
            continue;
        }
        let (k, call) = team_entered(areas, m)?;
        if k == n && call != mine {
            return Ok(Some(m));
        }
    }
    Ok(None)
}

/// The facade's team barrier: the team's members and slot as the facade holds them, its words
/// through the job's [`view`].
pub fn team_sync_published(team: Team<'_>, tag: u64) -> Result<(), Stop> {
    let central = view::get().is_some_and(|v| v.central);
    team_sync(&PublishedAreas(team), central, tag)
}

impl Barrier {
    /// A barrier whose first epoch is 1 (words in a fresh control segment are 0); `central`
    /// when the node runs more PEs than it has cores.
    pub fn new(central: bool) -> Self {
        Barrier {
            epoch: AtomicU64::new(0),
            central,
            nodes: Vec::new(),
        }
    }

    /// The same barrier over PEs on the nodes `nodes` gives (`nodes[pe]`, the same numbering
    /// on every PE): two levels when they span several.
    pub fn on_nodes(mut self, nodes: Vec<u32>) -> Self {
        self.nodes = nodes;
        self
    }

    /// Waits until every PE has called `sync` as many times as this one, and checks that
    /// their calls agree with `call`; gives up when `give_up(epoch)` says so (asked now and
    /// then once the wait has stopped spinning).
    pub fn sync(
        &self,
        control: &Control,
        my_pe: usize,
        n_pes: usize,
        call: Call,
        give_up: Option<GiveUp<'_>>,
    ) -> Result<(), Stop> {
        let epoch = self.epoch.fetch_add(1, Ordering::Relaxed) + 1;
        let state = control.local();
        store_call(state, control::STATE + 8, &call);
        state
            .atomic_u64(control::STATE)
            .store(epoch, Ordering::Release);
        let areas = MappedAreas {
            control,
            team: Team::world(my_pe, n_pes),
            nodes: &self.nodes,
        };
        run(&areas, epoch, Some(call.tag()), self.central, give_up)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::call::Step;

    fn malloc(size: u64) -> Call {
        Call::new("shmem_malloc", Step::Alloc { size, align: 64 })
    }

    /// Runs one barrier per entry of `rounds` on `n` PEs (threads), PE i entering barrier k
    /// with `rounds[k](i)`, and returns each PE's outcomes (a PE stops at its first error).
    fn run(
        n: usize,
        central: bool,
        rounds: &[&(dyn Fn(usize) -> Call + Sync)],
        deadline: Option<Duration>,
    ) -> Vec<Vec<Result<(), Stop>>> {
        run_on(n, central, &[], rounds, deadline)
    }

    /// [`run`] with PE i on node `nodes[i]` (empty: one node).
    fn run_on(
        n: usize,
        central: bool,
        nodes: &[u32],
        rounds: &[&(dyn Fn(usize) -> Call + Sync)],
        deadline: Option<Duration>,
    ) -> Vec<Vec<Result<(), Stop>>> {
        let controls = Control::in_process(n);
        std::thread::scope(|scope| {
            let handles: Vec<_> = controls
                .iter()
                .enumerate()
                .map(|(pe, control)| {
                    scope.spawn(move || {
                        let barrier = Barrier::new(central).on_nodes(nodes.to_vec());
                        let mut outcomes = Vec::new();
                        for call in rounds {
                            let deadline = deadline.map(|d| Instant::now() + d);
                            let mut past = |_| deadline.is_some_and(|d| Instant::now() >= d);
                            let give_up: Option<GiveUp<'_>> = Some(&mut past);
                            let r = barrier.sync(control, pe, n, call(pe), give_up);
                            outcomes.push(r);
                            if r.is_err() {
                                break;
                            }
                        }
                        outcomes
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    /// Node layouts for `n` PEs: pairs, alternating (a node's PEs are not contiguous), one PE
    /// alone beside the rest.
    fn layouts(n: usize) -> Vec<Vec<u32>> {
        let pairs = (0..n).map(|pe| (pe / 2) as u32).collect();
        let alternating = (0..n).map(|pe| (pe % 2) as u32).collect();
        let alone = (0..n).map(|pe| u32::from(pe + 1 == n)).collect();
        vec![pairs, alternating, alone]
    }

    #[test]
    fn two_levels_pick_node_leaders_and_fit_the_rounds() {
        let team = Team::world(0, 6);
        let controls = Control::in_process(6);
        let at = |me: usize, nodes: &'static [u32]| MappedAreas {
            control: &controls[me],
            team: Team { me, ..team },
            nodes,
        };
        let l = levels(&at(4, &[0, 1, 0, 1, 1, 2])).expect("two levels");
        assert_eq!(
            (l.local, l.leaders, l.local_rounds),
            (vec![1, 3, 4], vec![0, 1, 5], 2)
        );
        // One PE per node, or one node: a single level.
        assert!(levels(&at(0, &[0, 1, 2, 3, 4, 5])).is_none());
        assert!(levels(&at(0, &[])).is_none());
        assert_eq!(
            (rounds(1), rounds(2), rounds(3), rounds(4), rounds(5)),
            (0, 1, 2, 2, 3)
        );
    }

    /// Two levels complete, repeatedly, and every PE learns of a difference between any two
    /// PEs' calls, on the same node or not.
    #[test]
    fn two_levels_agree_and_find_differences() {
        for n in 3..=6usize {
            for nodes in layouts(n) {
                let same: &(dyn Fn(usize) -> Call + Sync) = &|_| malloc(8);
                let out = run_on(n, false, &nodes, &[same; 20], None);
                assert!(out
                    .iter()
                    .all(|o| o.len() == 20 && o.iter().all(|r| r.is_ok())));
                for pattern in 1..(1u32 << n) - 1 {
                    let call = |pe: usize| malloc(if pattern >> pe & 1 == 1 { 128 } else { 64 });
                    let out = run_on(n, false, &nodes, &[&|_| malloc(8), &call], None);
                    for (pe, o) in out.iter().enumerate() {
                        assert_eq!(
                            o,
                            &vec![Ok(()), Err(Stop::OutOfStep { epoch: 2 })],
                            "n={n} nodes={nodes:?} pattern={pattern:b} PE {pe}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn flags_compare_modulo_two_to_the_32() {
        let tag = malloc(64).tag();
        for epoch in [
            1u64,
            2,
            (1 << 32) - 1,
            1 << 32,
            (1 << 32) + 1,
            5 << 32,
            u64::MAX >> 2,
        ] {
            let before = flag(epoch - 1, tag, false);
            assert_eq!(ahead(before, epoch), EPOCH_MASK, "epoch {epoch}");
            assert_eq!(ahead(flag(epoch, tag, true), epoch), 0, "epoch {epoch}");
            assert_eq!(
                ahead(flag(epoch + 1, tag, false), epoch),
                1,
                "epoch {epoch}"
            );
            let word = flag(epoch, tag, true);
            assert_eq!((word >> 32) & TAG_MASK, tag);
            assert_ne!(word & OUT_OF_STEP, 0);
        }
        // A fresh control segment's 0 has not reached the first epoch.
        assert_eq!(ahead(0, 1), EPOCH_MASK);
    }

    #[test]
    fn calls_that_agree_pass_and_are_recorded() {
        let barrier_or_sync = |pe: usize| {
            let routine = ["shmem_barrier_all", "shmem_sync_all"][pe % 2];
            Call::new(routine, Step::Sync)
        };
        let same_malloc = |_: usize| malloc(64);
        for central in [false, true] {
            for n in 1..=5 {
                let out = run(
                    n,
                    central,
                    &[&barrier_or_sync, &same_malloc, &barrier_or_sync],
                    None,
                );
                for (pe, o) in out.iter().enumerate() {
                    assert_eq!(o, &vec![Ok(()); 3], "n={n} central={central} PE {pe}");
                }
            }
        }
        let controls = Control::in_process(2);
        assert_eq!(
            entered(&controls[0], 1).unwrap(),
            Entered {
                epoch: 0,
                call: None
            }
        );
    }

    /// Every pattern of two different calls over 2..=6 PEs: every PE returns `OutOfStep` from
    /// that barrier, none goes on (with 4 PEs or more, some PEs see only calls that agree with
    /// their own: they learn it from the marked flags).
    #[test]
    fn every_pe_learns_that_calls_differ() {
        for central in [false, true] {
            for n in 2..=6usize {
                for pattern in 1..(1u32 << n) - 1 {
                    let call = |pe: usize| malloc(if pattern >> pe & 1 == 1 { 128 } else { 64 });
                    let out = run(n, central, &[&|_| malloc(8), &call], None);
                    for (pe, o) in out.iter().enumerate() {
                        assert_eq!(
                            o,
                            &vec![Ok(()), Err(Stop::OutOfStep { epoch: 2 })],
                            "n={n} central={central} pattern={pattern:b} PE {pe}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn state_lines_say_who_called_what() {
        for central in [false, true] {
            let n = 3;
            let controls = Control::in_process(n);
            let calls = [
                malloc(64),
                Call::new("shmem_finalize", Step::Finalize),
                malloc(64),
            ];
            std::thread::scope(|scope| {
                for (pe, control) in controls.iter().enumerate() {
                    let call = calls[pe];
                    scope.spawn(move || {
                        let barrier = Barrier::new(central);
                        let r = barrier.sync(control, pe, n, call, None);
                        assert_eq!(r, Err(Stop::OutOfStep { epoch: 1 }));
                    });
                }
            });
            for (pe, call) in calls.iter().enumerate() {
                for view in &controls {
                    let e = entered(view, pe).unwrap();
                    assert_eq!((e.epoch, e.call), (1, Some(*call)), "central={central}");
                }
            }
        }
    }

    #[test]
    fn a_pe_that_never_comes_times_the_others_out() {
        for central in [false, true] {
            let n = 3;
            let controls = Control::in_process(n);
            std::thread::scope(|scope| {
                // PE 2 never enters the barrier.
                for (pe, control) in controls.iter().enumerate().take(2) {
                    scope.spawn(move || {
                        let barrier = Barrier::new(central);
                        let deadline = Instant::now() + Duration::from_millis(100);
                        let fin = Call::new("shmem_finalize", Step::Finalize);
                        let mut past = |_| Instant::now() >= deadline;
                        let r = barrier.sync(control, pe, n, fin, Some(&mut past));
                        assert_eq!(r, Err(Stop::TimedOut { epoch: 1 }), "central={central}");
                    });
                }
            });
            assert_eq!(entered(&controls[0], 2).unwrap().epoch, 0);
            assert_eq!(entered(&controls[2], 0).unwrap().epoch, 1);
        }
    }

    /// A missing PE that computes is waited for; one that waits in the library for the
    /// whole patience is not.
    #[test]
    fn only_missing_pes_that_wait_in_the_library_make_a_barrier_hopeless() {
        let controls = Control::in_process(3);
        let patience = Duration::from_millis(300);
        let mut watch = Hopeless::new(&controls[0], 3, patience);
        // PEs 0 and 1 entered epoch 1; PE 2 did not, and does not nap: it computes.
        for control in &controls[..2] {
            control
                .local()
                .atomic_u64(control::STATE)
                .store(1, Ordering::Release);
        }
        let start = Instant::now();
        while start.elapsed() < 2 * patience {
            assert!(!watch.check(1).unwrap(), "a computing PE is waited for");
            std::thread::sleep(Duration::from_millis(10));
        }
        // PE 2 now naps in a library wait: hopeless once the patience has passed.
        let stamp = nap_stamp(&controls[2], 2);
        let start = Instant::now();
        let gave_up = loop {
            stamp.store(crate::clock::node_clock_ns(), Ordering::Relaxed);
            if watch.check(1).unwrap() {
                break start.elapsed();
            }
            assert!(start.elapsed() < 20 * patience, "never gave up");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(gave_up >= patience, "gave up after {gave_up:?}");
        // Everyone arrived: nothing is missing, nothing is hopeless.
        controls[2]
            .local()
            .atomic_u64(control::STATE)
            .store(1, Ordering::Release);
        let mut watch = Hopeless::new(&controls[0], 3, Duration::ZERO);
        assert!(!watch.check(1).unwrap());
    }

    /// Team barriers over strided teams, in both shapes, two disjoint teams at once on their
    /// own slots while the world barrier runs between them: every member sees every other
    /// member's store made before each barrier, and the epochs count in the members' own words.
    #[test]
    fn team_barriers_over_strided_teams_order_stores() {
        // Team A: PEs 6, 4, 2, 0 (listed downwards) on slot 2; team B: PEs 1, 3, 5 on slot 3.
        team_barriers_order_stores(7, |pe| {
            if pe.is_multiple_of(2) {
                Team::in_slot(6, -2, 4, (6 - pe) / 2, 2)
            } else {
                Team::in_slot(1, 2, 3, pe / 2, 3)
            }
        });
    }

    /// The same with teams whose members are lists: PEs 5, 0, 3, 6 on slot 2, PEs 1, 4, 2 on
    /// slot 3 (neither a progression nor sorted).
    #[test]
    fn team_barriers_over_list_teams_order_stores() {
        const A: [i32; 4] = [5, 0, 3, 6];
        const B: [i32; 3] = [1, 4, 2];
        team_barriers_order_stores(7, |pe| {
            let (list, slot): (&'static [i32], usize) = if A.contains(&(pe as i32)) {
                (&A, 2)
            } else {
                (&B, 3)
            };
            let me = list.iter().position(|&p| p as usize == pe).unwrap();
            Team::in_slot(0, 1, list.len(), me, slot).listed(list)
        });
    }

    #[test]
    fn a_list_team_numbers_its_members_as_listed() {
        let team = Team::in_slot(0, 1, 3, 1, 4).listed(&[3, 0, 2]);
        assert_eq!((team.start, team.size, team.me), (3, 3, 1));
        let world: Vec<usize> = (0..3).map(|m| team.world_pe(m)).collect();
        assert_eq!(world, [3, 0, 2]);
        assert!(!team.is_world());
        assert!(Team::in_slot(0, 1, 3, 0, 4).listed(&[0, 1, 2]).is_world());
        assert_eq!(team.describe(), "a team of 3 PEs (world PEs 3, 0, 2)");
        let long: Vec<i32> = (0..20).rev().collect();
        let team = Team::in_slot(0, 1, 20, 0, 4).listed(&long);
        assert_eq!(
            team.describe(),
            "a team of 20 PEs (world PEs 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, \
             5, 4, ... (4 more))"
        );
    }

    /// Every PE of an in-process job of `n` PEs in its team (`team_of(pe)`; teams on distinct
    /// slots) publishes a value per round; after each team barrier it reads every member's.
    fn team_barriers_order_stores(n: usize, team_of: impl Fn(usize) -> Team<'static> + Sync) {
        const ROUNDS: u64 = 200;
        for central in [false, true] {
            let controls = Control::in_process(n);
            let team_of = &team_of;
            std::thread::scope(|scope| {
                for (pe, control) in controls.iter().enumerate() {
                    scope.spawn(move || {
                        let team = team_of(pe);
                        let areas = MappedAreas {
                            control,
                            team,
                            nodes: &[],
                        };
                        let world = Barrier::new(central);
                        let value = |member: usize| {
                            areas
                                .word(member, crate::layout::TEAM_AREA_LINES - 1, 7)
                                .mapped()
                        };
                        for k in 1..=ROUNDS {
                            value(team.me).store(k * 100 + team.me as u64, Ordering::Relaxed);
                            assert_eq!(team_sync(&areas, central, 0), Ok(()));
                            for m in 0..team.size {
                                let got = value(m).load(Ordering::Relaxed);
                                assert_eq!(got, k * 100 + m as u64, "PE {pe} member {m} round {k}");
                            }
                            assert_eq!(team_sync(&areas, central, 0), Ok(()));
                            if k % 50 == 0 {
                                let call = Call::new("shmem_barrier_all", Step::Sync);
                                assert_eq!(world.sync(control, pe, n, call, None), Ok(()));
                            }
                        }
                        let epoch = areas.mine(AREA_SYNC_EPOCH, 0);
                        assert_eq!(epoch.load(Ordering::Relaxed), 2 * ROUNDS);
                    });
                }
            });
        }
    }

    /// The world barrier and the team barrier of slot 0 (the world team) use different words:
    /// one PE's world barriers do not release another PE's team barrier.
    #[test]
    fn the_world_barrier_and_team_slots_use_their_own_words() {
        let world = Team::world(0, 4);
        let slot0 = Team::in_slot(0, 1, 4, 0, 0);
        let words: Vec<usize> = [world, slot0]
            .iter()
            .map(|t| t.offset(AREA_ROUNDS, 0))
            .collect();
        assert_ne!(words[0], words[1]);
        let last = Team::in_slot(0, 1, 4, 0, crate::layout::TEAM_SLOTS - 1);
        assert!(last.offset(crate::layout::TEAM_AREA_LINES - 1, 7) + 8 <= control::SIZE);
        assert!(control::NAP_STAMP + 8 <= world.offset(0, 0));
    }

    /// Team barriers carry their collective's tag: members whose calls differ all return
    /// `OutOfStep` from that barrier, in both shapes, over strided teams, and their call lines
    /// say who called what.
    #[test]
    fn team_barriers_find_calls_that_differ() {
        use crate::sync::call::{TEAM_COUNT, TEAM_ROOT};
        let reduce = |n| TeamCall::new("shmem_float_sum_reduce", TEAM_COUNT, n, 0);
        for central in [false, true] {
            for n in 2..=5usize {
                for pattern in 1..(1u32 << n) - 1 {
                    let controls = Control::in_process(n);
                    let outs: Vec<_> = std::thread::scope(|scope| {
                        let hs: Vec<_> = (0..n)
                            .map(|pe| {
                                let control = &controls[pe];
                                scope.spawn(move || {
                                    // Listed downwards: team PE i is world PE n - 1 - i.
                                    let team = Team::in_slot(n - 1, -1, n, n - 1 - pe, 4);
                                    let areas = MappedAreas {
                                        control,
                                        team,
                                        nodes: &[],
                                    };
                                    let first = reduce(8);
                                    team_enter(&areas, &first);
                                    let a = team_sync(&areas, central, first.tag());
                                    let call = if pattern >> pe & 1 == 1 {
                                        reduce(4)
                                    } else {
                                        TeamCall::new(
                                            "shmem_broadcastmem",
                                            TEAM_COUNT | TEAM_ROOT,
                                            4,
                                            0,
                                        )
                                    };
                                    assert_eq!(team_enter(&areas, &call), 2);
                                    let b = team_sync(&areas, central, call.tag());
                                    (a, b, team_differs(&areas).unwrap().is_some())
                                })
                            })
                            .collect();
                        hs.into_iter().map(|h| h.join().unwrap()).collect()
                    });
                    for (pe, o) in outs.iter().enumerate() {
                        assert_eq!(
                            (o.0, o.1),
                            (Ok(()), Err(Stop::OutOfStep { epoch: 2 })),
                            "n={n} central={central} pattern={pattern:b} PE {pe}"
                        );
                        assert!(o.2, "PE {pe} finds a member in another call");
                    }
                }
            }
        }
    }

    /// PE `pe`'s view of the two-PE team (world PEs 0 and 1) in slot `slot` of `controls`.
    fn pair_areas(controls: &[Control], pe: usize, slot: usize) -> MappedAreas<'_> {
        MappedAreas {
            control: &controls[pe],
            team: Team::in_slot(0, 1, 2, pe, slot),
            nodes: &[],
        }
    }

    /// A member waiting at a team barrier gives up once another member is at the same team
    /// collective number in a call that never reaches the barrier (a broadcast waiting on its
    /// root's flag); a member that is only late, or already in its next call, is waited for.
    #[test]
    fn a_team_barrier_gives_up_on_a_member_in_another_call() {
        use crate::sync::call::{TEAM_COUNT, TEAM_ROOT};
        let controls = Control::in_process(2);
        let areas = |pe: usize| pair_areas(&controls, pe, 3);
        let reduce = TeamCall::new("shmem_float_sum_reduce", TEAM_COUNT, 4, 0);
        let bcast = TeamCall::new("shmem_broadcastmem", TEAM_COUNT | TEAM_ROOT, 16, 0);
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| {
                let a = areas(0);
                team_enter(&a, &reduce);
                team_sync(&a, false, reduce.tag())
            });
            let b = areas(1);
            // PE 1 computes first, then is at the same number in another call.
            std::thread::sleep(Duration::from_millis(300));
            assert!(!waiter.is_finished(), "a late member is waited for");
            team_enter(&b, &bcast);
            let r = waiter.join().unwrap();
            assert_eq!(r, Err(Stop::TimedOut { epoch: 1 }));
            assert_eq!(team_differs(&b).unwrap(), Some(0));
            assert_eq!(team_entered(&b, 0).unwrap(), (1, Some(reduce)));
            assert_eq!(team_entered(&areas(0), 1).unwrap(), (1, Some(bcast)));
        });
        // A member that already entered its next call does not count.
        let controls = Control::in_process(2);
        let areas = |pe: usize| pair_areas(&controls, pe, 3);
        team_enter(&areas(0), &reduce);
        team_enter(&areas(1), &reduce);
        team_enter(&areas(1), &bcast);
        assert_eq!(team_differs(&areas(0)).unwrap(), None);
        assert_eq!(team_differs(&areas(1)).unwrap(), None);
    }

    /// Member 0 may destroy a team and use its slot for another team (a new id in its area,
    /// every other word zeroed) before a member has seen the release of the destroy's central
    /// barrier: that member leaves the barrier all the same, and no longer takes member 0's
    /// words for its team's.
    #[test]
    fn a_member_leaves_a_team_whose_slot_member_0_reused() {
        use crate::sync::call::TEAM_COUNT;
        let controls = Control::in_process(2);
        let areas = |pe: usize| pair_areas(&controls, pe, 5);
        for pe in 0..2 {
            let a = areas(pe);
            a.mine(AREA_CENTRAL_RELEASE, TEAM_ID_WORD)
                .store(0x5eed, Ordering::Relaxed);
        }
        let destroy = TeamCall::new("shmem_team_destroy", 0, 0, 0);
        let reduce = TeamCall::new("shmem_float_sum_reduce", TEAM_COUNT, 4, 0);
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| {
                let a = areas(1);
                team_enter(&a, &destroy);
                team_sync(&a, true, destroy.tag())
            });
            std::thread::sleep(Duration::from_millis(200));
            assert!(!waiter.is_finished(), "member 1 waits for member 0");
            // Member 0 arrived and released (unseen), left, and readied its area for another
            // team, whose first collective is another call at the same number.
            let zero = areas(0);
            zero.mine(AREA_CENTRAL_RELEASE, TEAM_ID_WORD)
                .store(0x0dd, Ordering::Release);
            for line in 0..crate::layout::TEAM_AREA_LINES {
                for w in 0..8 {
                    if (line, w) != (AREA_CENTRAL_RELEASE, TEAM_ID_WORD) {
                        zero.mine(line, w).store(0, Ordering::Relaxed);
                    }
                }
            }
            team_enter(&zero, &reduce);
            let until = Instant::now() + Duration::from_secs(10);
            while !waiter.is_finished() {
                if Instant::now() > until {
                    // Let it go, so that the test fails rather than hangs.
                    zero.mine(AREA_CENTRAL_RELEASE, 0)
                        .store(1, Ordering::Release);
                    panic!("member 1 still waits for a release member 0's reset erased");
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            assert_eq!(waiter.join().unwrap(), Ok(()));
            assert_eq!(team_entered(&areas(1), 0).unwrap(), (0, None));
            assert_eq!(team_differs(&areas(1)).unwrap(), None);
        });
    }
}
