//! Symmetric global and static variables (OpenSHMEM requires them to be remotely accessible).
//!
//! Owns three things. [`prepare`], run by a library constructor before `main` and before any
//! user thread, moves the executable's writable data past `PT_GNU_RELRO` (its `.data`, `.bss`
//! and the libc objects copy-relocated there: `environ`, `stdout`, ...) into a memfd mapped
//! shared at the very same addresses, so every global keeps its address and value. Fork
//! handlers (`pthread_atfork`) give a forked child a private copy of that range again, taken at
//! the fork, or the child's writes (its `setenv` included) would change the parent. At init,
//! [`exchange()`] hands the memfd to every peer, maps theirs, and decides for the whole job
//! whether static targets are symmetric: only if every PE moved its data and all run the same
//! executable.
//!
//! One file per concern: `elf` reads what the loader tells about the executable (program
//! headers, `PT_GNU_RELRO`, build-id, the span to move), `remap` moves that span in place and
//! holds the fork handlers, `exchange` compares the PEs' binaries and maps the peers' spans.
//! This file decides, in the constructor, whether to move and keeps what it found for init.
//!
//! The range is a segment of the host device whatever device holds the heap: the program's
//! globals are in host memory, and they stay at the addresses the loader gave them, so this
//! module maps its own range in place itself and only the export and the peers' imports go
//! through [`crate::device::host`].
//!
//! It must never move anything once user code may run concurrently (so never from `init`, and
//! by default not when libshmem arrives by `dlopen`), never fail loudly in the constructor (a
//! failure becomes the reason static targets are refused), and never allocate, lock or log in
//! the fork handlers (they run inside fork, the child's in a child of a threaded process).

mod elf;
mod exchange;
mod remap;

pub use exchange::{exchange, StaticData};

use elf::Range;
use rustix::fd::OwnedFd;
use std::sync::OnceLock;

/// Why static targets are refused when `SHMEM_SYMMETRIC_DATA=0`.
const OFF_BY_ENV: &str = "symmetric static data is off (SHMEM_SYMMETRIC_DATA=0)";
/// Why static targets are refused when libshmem was not loaded at program start.
const OFF_BY_DLOPEN: &str = "libshmem was loaded with dlopen, so global and static variables \
                             are not symmetric; use shmem_malloc'ed memory \
                             (SHMEM_SYMMETRIC_DATA=1 forces them symmetric)";

/// Why this PE's global and static variables stayed private (not moved into shared memory).
/// Text, since the PEs tell each other in their announcements and the job state shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct NotMoved(String);

impl From<String> for NotMoved {
    fn from(why: String) -> Self {
        NotMoved(why)
    }
}

impl std::fmt::Display for NotMoved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for NotMoved {
    fn from(why: &str) -> Self {
        NotMoved(why.to_string())
    }
}

/// What [`prepare`] found and did, kept for [`exchange()`].
#[derive(Debug)]
struct Prepared {
    /// The executable's symmetric range, moved or not (`None` when it has none).
    range: Option<Range>,
    /// The memfd now behind `range`, or why nothing was moved.
    moved: std::result::Result<OwnedFd, NotMoved>,
    identity: String,
    /// Things worth a debug line at init (the constructor does not log).
    notes: Vec<String>,
}

static PREPARED: OnceLock<Prepared> = OnceLock::new();

/// Moves the executable's static data into shared memory at the same addresses, or records why
/// not. Called once, from libshmem's constructor, before `main` and before user threads; never
/// panics, aborts or logs (notes wait for init's log).
pub fn prepare() {
    PREPARED.get_or_init(prepare_now);
}

fn prepare_now() -> Prepared {
    let mut notes = Vec::new();
    let mode = crate::env::symmetric_data().map_err(|e| e.to_string());
    let objects = elf::loaded_objects();
    let Some(exe) = objects.first() else {
        return Prepared {
            range: None,
            moved: Err("dl_iterate_phdr reported no executable".into()),
            identity: "unknown executable".into(),
            notes,
        };
    };
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096);
    let range = elf::symmetric_range(&exe.segments, exe.bias, page).map(|(range, note)| {
        notes.extend(note);
        range
    });
    let identity = elf::identity(exe);
    let moved = match (&range, mode) {
        (Err(e), _) => Err(NotMoved(e.clone())),
        (_, Err(e)) => Err(NotMoved(e)),
        (Ok(_), Ok("0")) => Err(OFF_BY_ENV.into()),
        (Ok(_), Ok("auto")) if !elf::loaded_at_start(&objects, &elf::preload_names()) => {
            Err(OFF_BY_DLOPEN.into())
        }
        (Ok(range), Ok(_)) => {
            remap::move_to_memfd(*range, page).map_err(|e| NotMoved(e.to_string()))
        }
    };
    if let (Ok(range), Ok(_)) = (&range, &moved) {
        notes.push(format!(
            "moved {} bytes of global and static variables at {:#x} into shared memory",
            range.len, range.start
        ));
    }
    Prepared {
        range: range.ok(),
        moved,
        identity,
        notes,
    }
}
