//! Where the synchronisation words lie: the control segment's parts and the lines of a team
//! area (`shmem/job_state.h`'s `SHMEM_TEAM_AREA_*`), and the record of a team collective in a
//! member's `CALL` line. One list that the job state publishes to the facade and kernels
//! (`job_state`) and the barriers use (`sync`); it holds numbers only and
//! imports nothing, so both can read it without depending on each other.
//!
//! Layout of every PE's control segment (offsets published in the job state as `control_*`):
//! - [`STATE`]: one line the PE writes about itself: the last barrier over all PEs it entered,
//!   the call it entered it with, and its nap stamp;
//! - [`BARRIER`]: the world barrier's area, laid out as a team area (one layout for every
//!   barrier);
//! - [`TEAM_AREAS`]: [`TEAM_SLOTS`] team areas of [`TEAM_AREA_SIZE`] bytes, slot `s` used by the
//!   team holding that slot on every member;
//! - [`DEVICE_LOCKS`]: [`DEVICE_LOCK_STRIPES`] lock words guarding the host's AMOs on this PE's
//!   heap when it lives in device memory the CPU cannot reach (`transport::devcopy`).

/// Bytes of one line of a team area (`SHMEM_TEAM_AREA_LINE_BYTES`).
pub const TEAM_AREA_LINE_BYTES: usize = 64;
/// Lines of a team area in use (`SHMEM_TEAM_AREA_LINES`): the layout of team areas is the C
/// header's; the control segment reserves room for it.
pub const TEAM_AREA_LINES: usize = 40;
/// Line of the central barrier's arrivals and call check (`SHMEM_TEAM_AREA_CENTRAL_COUNT`).
pub const AREA_CENTRAL_COUNT: usize = 2;
/// Line of the central barrier's release word (`SHMEM_TEAM_AREA_CENTRAL_RELEASE`), word 0.
pub const AREA_CENTRAL_RELEASE: usize = 3;
/// Word of the [`AREA_CENTRAL_RELEASE`] line holding the team's id (`SHMEM_TEAM_AREA_ID_WORD`):
/// written by every member into its own area when the team is made, the same on every member
/// and different from the id of any team that used the slot before on that member. A member
/// whose id is not this member's has left the team (destroyed it, and may use the slot for
/// another team): its words no longer speak of this team.
pub const TEAM_ID_WORD: usize = 1;
/// Line of the team barriers a member has entered (`SHMEM_TEAM_AREA_SYNC_EPOCH`).
pub const AREA_SYNC_EPOCH: usize = 6;
/// Line of the team collective a member last entered: its number on the team and the call
/// (`SHMEM_TEAM_AREA_CALL`).
pub const AREA_CALL: usize = 7;
/// First line of the dissemination flags, one per round (`SHMEM_TEAM_AREA_ROUNDS`).
pub const AREA_ROUNDS: usize = 8;
/// Most dissemination rounds (enough for 2^32 PEs).
pub const AREA_MAX_ROUNDS: usize = TEAM_AREA_LINES - AREA_ROUNDS;

/// Bytes of a team collective's routine name a record keeps (the longest public name has 28).
pub const TEAM_NAME_BYTES: usize = 32;
/// Words of a team collective's record in the `CALL` line, after its number.
pub const TEAM_CALL_WORDS: usize = 3 + TEAM_NAME_BYTES / 8;
/// Set in the call line's number word while its member rewrites the line.
pub const CALL_BUSY: u64 = 1 << 63;

/// Offset of a PE's state line.
pub const STATE: usize = 0;
/// Offset in the state line of the PE's nap stamp, after its last epoch and call.
pub const NAP_STAMP: usize = STATE + 32;
/// Offset of the world barrier's area.
pub const BARRIER: usize = STATE + TEAM_AREA_LINE_BYTES;
/// Bytes of one team area: the lines of the one layout, nothing more.
pub const TEAM_AREA_SIZE: usize = TEAM_AREA_LINES * TEAM_AREA_LINE_BYTES;
/// Offset of team slot 0's area.
pub const TEAM_AREAS: usize = BARRIER + TEAM_AREA_SIZE;
/// Team slots per PE (the limit on simultaneous teams). Slots 0 and 1 belong to the
/// predefined teams (world and shared), so a PE can be a member of at most `TEAM_SLOTS - 2`
/// teams made by splits.
pub const TEAM_SLOTS: usize = 64;
/// Offset of the lock words of the host's AMOs on a device heap (4 bytes each).
pub const DEVICE_LOCKS: usize = TEAM_AREAS + TEAM_SLOTS * TEAM_AREA_SIZE;
/// Lock words there: a heap word's lock is stripe (offset / 8) mod this.
pub const DEVICE_LOCK_STRIPES: usize = 64;
/// Bytes of a control segment.
pub const SIZE: usize = (DEVICE_LOCKS + 4 * DEVICE_LOCK_STRIPES + PAGE - 1) & !(PAGE - 1);

const PAGE: usize = 4096;

const _: () = assert!(NAP_STAMP + 8 <= BARRIER);
// Sized by what it holds: 41 pages per PE, most never touched.
const _: () = assert!(TEAM_AREA_SIZE == 40 * 64 && SIZE.is_multiple_of(PAGE) && SIZE <= 41 * PAGE);
const _: () = assert!(DEVICE_LOCKS + 4 * DEVICE_LOCK_STRIPES <= SIZE);
