//! How the bootstrap's own threads end this process when they learn that the job is over
//! (`shmemrun` gone, PE 0's store closed, another PE ended the job): they log what they saw and
//! hand the status to the end the runtime installed ([`install`]), which alone ends a job.

use std::sync::OnceLock;

/// The runtime's end of the process.
static END: OnceLock<fn(i32) -> !> = OnceLock::new();

/// Installs `end` as what ends this process when the bootstrap learns that the job is over
/// (from the runtime, before it joins a job; later calls keep the first).
pub(crate) fn install(end: fn(i32) -> !) {
    let _ = END.set(end);
}

/// Ends this process with `status` through the installed end. A bootstrap used without the
/// runtime (its own tests) has none and exits plainly.
pub(crate) fn end_process(status: i32) -> ! {
    match END.get() {
        Some(end) => end(status),
        None => std::process::exit(status),
    }
}
