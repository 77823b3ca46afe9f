//! One job: starts the PEs, serves their control store, and decides how the job ends.
//!
//! Owns the PE processes (one process group, PDEATHSIG, an inherited store socket each, or with
//! `--store` the store's TCP address and a sealed memfd of the job's TLS credentials) and the
//! event loop that merges child exits, store events, job signals and the `--timeout` deadline.
//! The first failure decides the exit status; the rest of the job is then stopped with SIGTERM
//! and, after a grace period, SIGKILL. Must never wait without a bound, never sleep to poll, and
//! never leave a PE running when it returns.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustix::io::{fcntl_dupfd_cloexec, fcntl_setfd, Errno, FdFlags};
use rustix::process::{
    getpid, getppid, getrlimit, kill_process, kill_process_group, set_parent_process_death_signal,
    setrlimit, wait, Pid, Resource, Rlimit, Signal, WaitOptions, WaitStatus,
};
use shmem_store::addr::{url, StoreAddr};
use shmem_store::tls;
use shmem_store::{liveness, PeerStatus, Server, StoreEvent};

use crate::output::{self, Source};
use crate::signals::{self, JobSignals};

/// Time between SIGTERM and SIGKILL when the job is stopped.
const TERM_GRACE: Duration = Duration::from_secs(2);
/// How long to wait for the last PEs after SIGKILL before giving up on them.
const KILL_GRACE: Duration = Duration::from_secs(5);
/// How long a PE's exit waits for its store connection to be seen closed, so that a last
/// ABORT or BYE still in the socket is read before the exit is judged. The kernel closes the
/// socket before the exit is reported, so this only matters when a child process of the PE
/// holds the socket open.
const VERDICT_GRACE: Duration = Duration::from_secs(1);
/// How long the other PEs may go on after a PE failed without joining the job's store (before
/// or early in `shmem_init`): they are likely failing the same way, and each says why itself
/// before the rest is stopped.
const SETTLE_GRACE: Duration = Duration::from_secs(1);
/// How long to wait, after the last PE exited, for its output to drain (`--tag-output`),
/// in case a background child of a PE still holds a pipe.
const OUTPUT_GRACE: Duration = Duration::from_secs(2);

/// What to run, from the command line.
pub struct Plan {
    /// Number of PEs.
    pub n_pes: u32,
    /// Program of every PE.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// `--timeout`, if given.
    pub timeout: Option<Duration>,
    /// `--timeout` as the user wrote it, for the message.
    pub timeout_text: String,
    /// `--tag-output`.
    pub tag_output: bool,
    /// `--store`: serve the store over TCP there.
    pub store: Option<String>,
}

/// How the PEs reach the store.
enum Reach {
    /// A socket pair per PE.
    Inherited,
    /// TCP at this address (port included), with the TLS bundle memfd unless TLS is off.
    Tcp {
        addr: String,
        bundle: Option<OwnedFd>,
    },
}

/// Everything the main loop waits for.
enum Event {
    Exited(Pid, WaitStatus),
    Store(StoreEvent),
    /// The heartbeats of PEs stopped (a node cut off): the line naming them.
    Silent(String),
    Signal(i32),
    OutputDone,
}

struct Pe {
    pid: Pid,
    exit: Option<WaitStatus>,
}

/// Where the stop sequence stands.
enum Stopping {
    No,
    /// The job failed (its status is set) by a PE that never joined the store; the others are
    /// stopped at this instant, unless they are all gone by then.
    Settle(Instant),
    /// SIGTERM sent; SIGKILL at this instant.
    Term(Instant),
    /// SIGKILL sent; stop waiting at this instant.
    Kill(Instant),
}

struct Job {
    pes: Vec<Pe>,
    by_pid: HashMap<i32, u32>,
    pgid: Option<Pid>,
    /// PEs whose exit has not been seen yet.
    running: usize,
    /// Exited PEs not judged yet, in the order they exited, each with the instant it must be
    /// judged by even if its store connection still looks open.
    unjudged: VecDeque<(u32, Instant)>,
    /// Exit status of the job, set by the first failure.
    status: Option<i32>,
    /// Why the job failed, while [`Stopping::Settle`] holds it back.
    settling: Option<String>,
    stopping: Stopping,
}

/// Runs the job and returns the launcher's exit status.
pub fn run(plan: Plan, signals: JobSignals) -> i32 {
    let (tx, rx) = mpsc::channel();
    let job_id = job_id(getpid());
    let (server, store_events) = Server::for_job(plan.n_pes, &job_id);
    let reach = match &plan.store {
        None => Reach::Inherited,
        Some(text) => match serve_tcp(&server, text) {
            Ok(reach) => reach,
            Err(message) => {
                eprintln!("shmemrun: --store {text}: {message}");
                return 1;
            }
        },
    };
    let mut job = Job {
        pes: Vec::with_capacity(plan.n_pes as usize),
        by_pid: HashMap::new(),
        pgid: None,
        running: 0,
        unjudged: VecDeque::new(),
        status: None,
        settling: None,
        stopping: Stopping::No,
    };

    // PEs over TCP may run on other nodes: they send heartbeats when they do
    // (shmem-store's liveness), and a node that goes silent ends the job. A bad
    // SHMEM_HEARTBEAT_TIMEOUT is the PEs' to refuse, at their init.
    if let (Reach::Tcp { .. }, Ok(bound)) = (&reach, shmem_base::env::heartbeat_timeout()) {
        let silent_tx = tx.clone();
        let watched = liveness::watch(&server, bound, move |line| {
            let _ = silent_tx.send(Event::Silent(line));
        });
        if let Err(e) = watched {
            eprintln!("shmemrun: cannot start the heartbeat watch thread: {e}");
            return 1;
        }
    }
    let signal_tx = tx.clone();
    if let Err(e) = signals::spawn_waiter(signals, move |sig| {
        signal_tx.send(Event::Signal(sig)).is_ok()
    }) {
        eprintln!("shmemrun: cannot start the signal thread: {e}");
        return 1;
    }

    let mut outputs = Vec::new();
    let launch = spawn_all(&plan, &server, &reach, &job_id, &mut job, &mut outputs);

    // Threads that feed the loop; started after the spawns (the waiter reaps any child, and
    // must not find "no children" before the first one exists).
    let started = start_feeders(&tx, store_events, outputs, plan.tag_output);
    let mut output_open = plan.tag_output;
    if let Err(e) = launch.and(started) {
        job.fail(e.status, &e.message, "");
    }
    drop(tx);

    let deadline = plan.timeout.and_then(|t| Instant::now().checked_add(t));
    loop {
        job.judge_exits(&server);
        if job.running == 0 && job.unjudged.is_empty() {
            break;
        }
        let wake = [
            deadline.filter(|_| job.status.is_none()),
            match job.stopping {
                Stopping::No => None,
                Stopping::Settle(t) | Stopping::Term(t) | Stopping::Kill(t) => Some(t),
            },
            job.unjudged.front().map(|&(_, due)| due),
        ]
        .into_iter()
        .flatten()
        .min();
        let event = match wake {
            Some(wake) => rx.recv_timeout(wake.saturating_duration_since(Instant::now())),
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match event {
            Ok(event) => job.handle(event, &mut output_open),
            Err(RecvTimeoutError::Timeout) => {
                let now = Instant::now();
                if job.status.is_none() && deadline.is_some_and(|d| now >= d) {
                    let message = format!("job timed out after {} s", plan.timeout_text);
                    job.fail(124, &message, "");
                }
                match job.stopping {
                    Stopping::Settle(t) if now >= t => job.settled(),
                    Stopping::Term(t) if now >= t => job.escalate(),
                    Stopping::Kill(t) if now >= t => {
                        eprintln!(
                            "shmemrun: {} PE(s) still not gone {} s after SIGKILL; giving up",
                            job.running,
                            KILL_GRACE.as_secs()
                        );
                        break;
                    }
                    _ => {}
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                // Every feeder is gone, the waiter included: no exit can be learnt any more.
                eprintln!("shmemrun: lost track of the PEs (internal error); stopping them");
                job.fail(1, "internal error", "");
                job.signal_all(Signal::KILL);
                break;
            }
        }
    }

    // Every PE is gone before the settle ended: the failure is still to be told.
    job.settled();
    // Let the relay print what the PEs wrote last.
    let output_deadline = Instant::now() + OUTPUT_GRACE;
    while output_open {
        match rx.recv_timeout(output_deadline.saturating_duration_since(Instant::now())) {
            Ok(event) => job.handle(event, &mut output_open),
            Err(_) => break,
        }
    }
    server.close();
    shmem_base::log::exit_code(job.status.unwrap_or(0))
}

/// A failure to start the job.
struct LaunchError {
    status: i32,
    message: String,
}

impl LaunchError {
    fn new(status: i32, message: String) -> Self {
        LaunchError { status, message }
    }
}

/// Why the store could not be opened on TCP (`--store`).
#[derive(Debug, thiserror::Error)]
enum StoreSetupError {
    /// A variable of the table (`shmem_base::env`: `SHMEM_INSTANCE_PORT_RANGE`,
    /// `SHMEM_TLS_DISABLE`) does not parse.
    #[error("{0}")]
    Env(#[from] shmem_base::EnvError),
    /// The address does not parse.
    #[error("{0}")]
    Addr(#[from] shmem_store::addr::AddrError),
    /// No listening socket at the address.
    #[error("{0} (or port 0 for any free one)")]
    Bind(shmem_store::addr::AddrError),
    /// The job's certificates or TLS configuration.
    #[error("{0}")]
    Tls(#[from] tls::TlsError),
    /// A system call failed while doing `what`.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The system's error.
        source: io::Error,
    },
    /// The sealed file holding the job's TLS bundle could not be made.
    #[error("the job's TLS bundle: {what}: {source}")]
    Bundle {
        /// The step.
        what: &'static str,
        /// The system's error.
        source: Errno,
    },
}

/// Listens at `text` (TLS 1.3 with a fresh per-job CA unless `SHMEM_TLS_DISABLE=1`) and
/// serves the store there; returns what the PEs are told.
fn serve_tcp(server: &Server, text: &str) -> Result<Reach, StoreSetupError> {
    let range = shmem_base::env::port_range()?;
    let addr = StoreAddr::parse(text, range)?;
    let tls_off = shmem_base::env::tls_disable()?;
    // The PEs learn the port from shmemrun, so any free one will do.
    let listener = addr.bind().map_err(StoreSetupError::Bind)?;
    let port = listener
        .local_addr()
        .map_err(|source| StoreSetupError::Io {
            what: "the bound address",
            source,
        })?
        .port();
    let dial = addr.dial_ip();
    let (config, bundle) = if tls_off {
        eprintln!(
            "shmemrun: warning: TLS of the job's store is off (SHMEM_TLS_DISABLE=1): any process \
            that can reach {} can read and write the store",
            url(addr.ip, port)
        );
        (None, None)
    } else {
        let mut ips = vec![dial];
        if addr.ip != dial {
            ips.push(addr.ip);
        }
        let creds = tls::job_credentials(&ips, tls::Validity::for_a_job())?;
        let config = creds.server.server_config()?;
        (
            Some(config),
            Some(sealed_memfd(creds.client_bundle.as_bytes())?),
        )
    };
    server
        .serve_tcp(listener, config)
        .map_err(|source| StoreSetupError::Io {
            what: "cannot start the store's acceptor",
            source,
        })?;
    Ok(Reach::Tcp {
        addr: url(dial, port),
        bundle,
    })
}

/// An anonymous file holding `bytes`, sealed against any change, close-on-exec (the PEs get it
/// through `child_setup`). Nothing reaches a file system.
fn sealed_memfd(bytes: &[u8]) -> Result<OwnedFd, StoreSetupError> {
    use rustix::fs::{fcntl_add_seals, memfd_create, MemfdFlags, SealFlags};
    let err = |what, source| StoreSetupError::Bundle { what, source };
    let fd = memfd_create(
        "shmem-job-tls",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )
    .map_err(|e| err("memfd_create", e))?;
    let mut written = 0;
    while written < bytes.len() {
        written += rustix::io::write(&fd, &bytes[written..]).map_err(|e| err("write", e))?;
    }
    fcntl_add_seals(
        &fd,
        SealFlags::WRITE | SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL,
    )
    .map_err(|e| err("seal", e))?;
    Ok(fd)
}

/// Starts every PE (stops at the first that cannot be started).
fn spawn_all(
    plan: &Plan,
    server: &Server,
    reach: &Reach,
    job_id: &str,
    job: &mut Job,
    outputs: &mut Vec<Source>,
) -> Result<(), LaunchError> {
    let launcher = getpid();
    let empty_mask = signals::empty_set();
    let fd_limit = raise_fd_limit();
    for rank in 0..plan.n_pes {
        let internal = |what: &str, e: io::Error| {
            LaunchError::new(1, format!("cannot set up PE {rank}: {what}: {e}"))
        };
        let mut cmd = Command::new(&plan.program);
        cmd.args(&plan.args)
            .env(shmem_base::env::RUN_RANK, rank.to_string())
            .env(shmem_base::env::RUN_SIZE, plan.n_pes.to_string())
            .env(shmem_base::env::RUN_JOBID, job_id)
            .process_group(job.pgid.map_or(0, |p| p.as_raw_nonzero().get()));
        // The descriptor the child must inherit, and our end of its socket pair.
        let (inherit, ours) = match reach {
            Reach::Inherited => {
                let (ours, theirs) = UnixStream::pair().map_err(|e| internal("socketpair", e))?;
                // Above 0-2, so that the child's stdio setup cannot overwrite it;
                // close-on-exec here, so that only this PE inherits it.
                let theirs: OwnedFd =
                    fcntl_dupfd_cloexec(&theirs, 3).map_err(|e| internal("dup", e.into()))?;
                cmd.env(shmem_base::env::RUN_FD, theirs.as_raw_fd().to_string());
                (Some(theirs), Some(ours))
            }
            Reach::Tcp { addr, bundle } => {
                cmd.env(shmem_base::env::RUN_STORE, addr)
                    .env_remove(shmem_base::env::RUN_FD);
                let copy = match bundle {
                    Some(b) => {
                        let copy: OwnedFd =
                            fcntl_dupfd_cloexec(b, 3).map_err(|e| internal("dup", e.into()))?;
                        cmd.env(shmem_base::env::RUN_TLS_FD, copy.as_raw_fd().to_string());
                        Some(copy)
                    }
                    None => {
                        cmd.env_remove(shmem_base::env::RUN_TLS_FD);
                        None
                    }
                };
                (copy, None)
            }
        };
        let raw = inherit.as_ref().map(|fd| fd.as_raw_fd());
        if plan.tag_output {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        // SAFETY: `child_setup` only makes async-signal-safe system calls (sigprocmask,
        // signal, prlimit, prctl, getppid, fcntl, _exit) and allocates nothing, as required
        // between fork and exec.
        unsafe {
            cmd.pre_exec(move || child_setup(raw, launcher, &empty_mask, fd_limit));
        }
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => {
                // As a shell does: 127 when there is no such program, 126 when it cannot be
                // executed; anything else (out of processes, descriptors) is our failure.
                let status = match e.raw_os_error() {
                    Some(libc::ENOENT | libc::ENOTDIR) => 127,
                    Some(libc::EACCES | libc::ENOEXEC | libc::EISDIR | libc::EPERM) => 126,
                    _ => 1,
                };
                return Err(LaunchError::new(
                    status,
                    format!(
                        "cannot start PE {rank}: '{}': {e}",
                        plan.program.to_string_lossy()
                    ),
                ));
            }
        };
        // Fits: pids are positive i32 on Linux; std hands them out as u32.
        let pid = Pid::from_raw(child.id() as i32)
            .ok_or_else(|| internal("spawn", io::Error::other("child has no pid")))?;
        job.by_pid.insert(pid.as_raw_nonzero().get(), rank);
        job.pes.push(Pe { pid, exit: None });
        job.running += 1;
        job.pgid.get_or_insert(pid);
        if let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) {
            outputs.push(Source::new(rank, out.into(), false));
            outputs.push(Source::new(rank, err.into(), true));
        }
        if let Some(ours) = ours {
            server
                .serve_unix(rank, ours)
                .map_err(|e| internal("store connection", e))?;
        }
        // `inherit` is closed here: from now on only the PE holds its end, so the PE's exit is
        // EOF on ours.
        drop(inherit);
    }
    Ok(())
}

/// Raises our open-file limit to the hard limit, since the launcher holds one to three
/// descriptors per PE; returns the limit to give back to the PEs, if it was changed.
fn raise_fd_limit() -> Option<Rlimit> {
    let original = getrlimit(Resource::Nofile);
    let raised = Rlimit {
        current: original.maximum,
        maximum: original.maximum,
    };
    if raised == original {
        return None;
    }
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => Some(original),
        Err(_) => None,
    }
}

/// Runs in the child between fork and exec.
fn child_setup(
    fd: Option<RawFd>,
    launcher: Pid,
    empty_mask: &libc::sigset_t,
    fd_limit: Option<Rlimit>,
) -> io::Result<()> {
    // SAFETY: sigprocmask and signal are async-signal-safe; the mask is an initialised,
    // empty set. The launcher blocks its job signals and ignores SIGPIPE; a PE starts clean.
    unsafe {
        libc::sigprocmask(libc::SIG_SETMASK, empty_mask, std::ptr::null_mut());
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    if let Some(limit) = fd_limit {
        setrlimit(Resource::Nofile, limit)?;
    }
    set_parent_process_death_signal(Some(Signal::KILL))?;
    if getppid() != Some(launcher) {
        // The launcher died before PDEATHSIG was armed: nobody would ever reap or stop us.
        // SAFETY: _exit is async-signal-safe and ends the child at once.
        unsafe { libc::_exit(1) };
    }
    if let Some(fd) = fd {
        // SAFETY: `fd` is the PE's socket end (or its copy of the TLS bundle), open in the
        // launcher (which keeps it open until spawn returns) and so open in this forked child.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        fcntl_setfd(fd, FdFlags::empty())?;
    }
    Ok(())
}

/// A job id unique on this machine: launcher pid, start time, and a random part.
fn job_id(launcher: Pid) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    // RandomState is seeded from the OS's random source once per process.
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    format!("{:x}-{:x}-{random:016x}", launcher.as_raw_nonzero(), nanos)
}

/// Starts the threads that turn child exits, store events and output EOF into [`Event`]s.
fn start_feeders(
    tx: &Sender<Event>,
    store_events: Receiver<StoreEvent>,
    outputs: Vec<Source>,
    tag_output: bool,
) -> Result<(), LaunchError> {
    let thread_error = |what: &str, e: io::Error| {
        LaunchError::new(1, format!("cannot start the {what} thread: {e}"))
    };
    let waiter_tx = tx.clone();
    std::thread::Builder::new()
        .name("waiter".into())
        .stack_size(64 * 1024)
        .spawn(move || loop {
            match wait(WaitOptions::empty()) {
                Ok(Some((pid, status))) => {
                    if waiter_tx.send(Event::Exited(pid, status)).is_err() {
                        return;
                    }
                }
                Ok(None) | Err(Errno::INTR) => {}
                // ECHILD: every child has been reaped.
                Err(_) => return,
            }
        })
        .map_err(|e| thread_error("waiter", e))?;

    let store_tx = tx.clone();
    std::thread::Builder::new()
        .name("store-events".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            for event in store_events {
                if store_tx.send(Event::Store(event)).is_err() {
                    return;
                }
            }
        })
        .map_err(|e| thread_error("store event", e))?;

    if tag_output {
        let output_tx = tx.clone();
        output::spawn_relay(outputs, move || {
            let _ = output_tx.send(Event::OutputDone);
        })
        .map_err(|e| thread_error("output", e))?;
    }
    Ok(())
}

impl Job {
    fn handle(&mut self, event: Event, output_open: &mut bool) {
        match event {
            Event::Exited(pid, status) => {
                let Some(&rank) = self.by_pid.get(&pid.as_raw_nonzero().get()) else {
                    return;
                };
                let pe = &mut self.pes[rank as usize];
                if pe.exit.is_some() {
                    return;
                }
                pe.exit = Some(status);
                self.running -= 1;
                if self.status.is_none() {
                    self.unjudged
                        .push_back((rank, Instant::now() + VERDICT_GRACE));
                }
            }
            Event::Store(StoreEvent::Abort {
                rank,
                status,
                after_error,
            }) => self.global_exit(rank, status, after_error),
            // Exits are judged from the store's final state in judge_exits; these only wake
            // the loop up so that it looks. The store logs protocol errors itself.
            Event::Store(_) => {}
            Event::Silent(line) => self.fail(1, &line, ""),
            Event::Signal(sig) => {
                if self.status.is_none() {
                    let message = format!("caught {}", signals::name(sig));
                    self.fail(128 + sig, &message, "");
                } else if matches!(self.stopping, Stopping::Settle(_)) {
                    // Asked to stop: no more waiting for the others to finish.
                    self.settled();
                } else if matches!(self.stopping, Stopping::Term(_)) {
                    // Asked twice: no more grace.
                    self.escalate();
                }
            }
            Event::OutputDone => *output_open = false,
        }
    }

    /// Judges exited PEs in the order they exited, each once its store connection has closed
    /// (or its grace is over), so that "the first failure" is the first to happen.
    fn judge_exits(&mut self, server: &Server) {
        let now = Instant::now();
        while let Some(&(rank, due)) = self.unjudged.front() {
            let peer = server.peer_status(rank).unwrap_or_default();
            if !peer.closed && now < due {
                return;
            }
            self.unjudged.pop_front();
            if let Some(exit) = self.pes[rank as usize].exit {
                self.judge(rank, exit, peer);
            }
        }
    }

    fn judge(&mut self, rank: u32, exit: WaitStatus, peer: PeerStatus) {
        let pid = self.pes[rank as usize].pid.as_raw_nonzero();
        if let Some(status) = peer.abort_status {
            self.global_exit(rank, status, peer.abort_after_error);
        } else if let Some(sig) = exit.terminating_signal() {
            let message = format!(
                "PE {rank} (pid {pid}) was killed by signal {sig} ({})",
                signals::name(sig)
            );
            self.fail_pe(peer, 128 + sig, message);
        } else if let Some(code) = exit.exit_status().filter(|&c| c != 0) {
            let message = format!("PE {rank} (pid {pid}) exited with status {code}");
            self.fail_pe(peer, code, message);
        } else if peer.connected && !peer.said_goodbye && self.running > 0 {
            let message = format!("PE {rank} (pid {pid}) exited without calling shmem_finalize");
            self.fail(1, &message, "the remaining ");
        }
    }

    /// PE `rank` ended the job: its program called `shmem_global_exit(status)`, or
    /// (`after_error`) the library stopped the job after an error it reported there.
    fn global_exit(&mut self, rank: u32, status: i32, after_error: bool) {
        if self.status.is_none() {
            let message = if after_error {
                format!("PE {rank} stopped the job after an error (status {status})")
            } else {
                format!("PE {rank} called shmem_global_exit({status})")
            };
            // The caller may still be running; it is stopped with the rest but not counted
            // among the PEs the job's end stops.
            let caller = self.pes[rank as usize].exit.is_none();
            self.fail_by(status, &message, "", caller);
        }
    }

    /// A PE's failure. One that never joined the store failed before or early in
    /// `shmem_init`, as the others probably do too (a call before `shmem_init`, a bad
    /// variable): they get [`SETTLE_GRACE`] to say so themselves, one line each, before the
    /// rest is stopped.
    fn fail_pe(&mut self, peer: PeerStatus, status: i32, message: String) {
        if peer.connected {
            self.fail(status, &message, "the remaining ");
        } else if self.status.is_none() {
            self.status = Some(status);
            self.unjudged.clear();
            self.settling = Some(message);
            self.stopping = Stopping::Settle(Instant::now() + SETTLE_GRACE);
        }
    }

    /// Ends a [`Stopping::Settle`]: says why the job failed and stops what still runs.
    fn settled(&mut self) {
        if let Some(message) = self.settling.take() {
            self.stopping = Stopping::No;
            self.stop(&message, "the remaining ");
        }
    }

    /// Records the job's status (first failure only), says why, and starts stopping the rest.
    fn fail(&mut self, status: i32, message: &str, remaining: &str) {
        self.fail_by(status, message, remaining, false);
    }

    /// [`Job::fail`] for a failure that a still running PE reported itself (`caller`): that
    /// PE is not counted among those the job's end stops.
    fn fail_by(&mut self, status: i32, message: &str, remaining: &str, caller: bool) {
        if self.status.is_some() {
            return;
        }
        self.status = Some(status);
        self.unjudged.clear();
        self.stop_by(message, remaining, caller);
    }

    /// Says why the job failed and, if PEs still run, sends them SIGTERM (SIGKILL follows).
    fn stop(&mut self, message: &str, remaining: &str) {
        self.stop_by(message, remaining, false);
    }

    fn stop_by(&mut self, message: &str, remaining: &str, caller: bool) {
        if self.running == 0 {
            eprintln!("shmemrun: {message}");
            return;
        }
        let others = self.running - usize::from(caller);
        if others == 0 {
            eprintln!("shmemrun: {message}");
        } else {
            let plural = if others == 1 { "" } else { "s" };
            eprintln!("shmemrun: {message}; stopping {remaining}{others} PE{plural}");
        }
        self.signal_all(Signal::TERM);
        self.stopping = Stopping::Term(Instant::now() + TERM_GRACE);
    }

    /// SIGKILL for whatever is left.
    fn escalate(&mut self) {
        self.signal_all(Signal::KILL);
        self.stopping = Stopping::Kill(Instant::now() + KILL_GRACE);
    }

    /// Signals the process group (PEs and their children) and every PE not yet reaped (in case
    /// one left the group).
    fn signal_all(&self, sig: Signal) {
        if self.running == 0 {
            // Everyone is reaped; the group id may already belong to someone else.
            return;
        }
        if let Some(pgid) = self.pgid {
            let _ = kill_process_group(pgid, sig);
        }
        for pe in self.pes.iter().filter(|pe| pe.exit.is_none()) {
            let _ = kill_process(pe.pid, sig);
        }
    }
}
