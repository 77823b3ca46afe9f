//! Job-control signals (SIGINT, SIGTERM, SIGHUP) as events of the launcher's main loop.
//!
//! Owns the launcher's signal mask: the signals are blocked in every thread and taken with
//! `sigwait` by one thread, so no handler ever runs at an arbitrary point. Must never let a PE
//! inherit the blocked mask (`job` clears it in the child) and never act on a signal itself.

use std::io;
use std::mem::MaybeUninit;

/// The blocked set of job-control signals, to be waited on by [`spawn_waiter`].
#[derive(Clone, Copy)]
pub struct JobSignals {
    set: libc::sigset_t,
}

/// Signals that stop the job.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread. Call it before any other thread
/// exists, so that all of them inherit the mask.
pub fn block_job_signals() -> JobSignals {
    let mut set = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises the set it is given; sigaddset only reads and writes
    // that initialised set; the signal numbers are valid constants.
    let set = unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        for sig in SIGNALS {
            libc::sigaddset(set.as_mut_ptr(), sig);
        }
        set.assume_init()
    };
    // SAFETY: `set` is an initialised sigset_t; the old mask is not asked for (null).
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        // Without the mask the signals keep their default action (terminate), and PDEATHSIG
        // still takes the PEs down with us; worth a word, not a refusal to run.
        eprintln!(
            "shmemrun: cannot block job signals: {}",
            io::Error::from_raw_os_error(rc)
        );
    }
    JobSignals { set }
}

/// An empty signal set, for the child to clear its inherited mask with.
pub fn empty_set() -> libc::sigset_t {
    let mut set = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises the whole set.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        set.assume_init()
    }
}

/// Starts the thread that waits for the job signals and calls `deliver` with each one;
/// it ends when `deliver` returns false.
pub fn spawn_waiter(
    signals: JobSignals,
    deliver: impl Fn(libc::c_int) -> bool + Send + 'static,
) -> io::Result<()> {
    std::thread::Builder::new()
        .name("signals".into())
        .stack_size(64 * 1024)
        .spawn(move || loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: the set is initialised and holds only signals blocked in every thread;
            // `sig` is a valid place for the result.
            let rc = unsafe { libc::sigwait(&signals.set, &mut sig) };
            if rc != 0 {
                continue;
            }
            if !deliver(sig) {
                return;
            }
        })
        .map(drop)
}

/// Short name of a signal (`SIGKILL`), or `signal N` for unusual ones.
pub fn name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}
