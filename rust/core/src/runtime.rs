//! The running job as this PE sees it: configuration, control-store connection, heap and
//! barrier, created by [`init`] and torn down by [`finalize`]. The facade asks here once for
//! the addresses it needs and then runs the data path by itself.

use crate::bootstrap::{self, Bootstrap, BootstrapError, JobAttrs, Joining, Timeouts};
use crate::device::cuda::Cuda;
use crate::device::host::Host;
use crate::device::npu::{self, Npu};
use crate::device::{Accelerator, Device};
use crate::env::{self, Config};
use crate::error::{Error, Result};
use crate::heap::{self, Heap};
use crate::job_state;
use crate::log;
use crate::static_data::{self, StaticData};
use crate::sync::barrier::{self, Barrier, Stop};
use crate::sync::call::{Call, Step};
use crate::sync::control::Control;
use crate::sync::view;
use crate::sync::wait;
use crate::transport::devcopy::DeviceCopy;
use crate::transport::{self, LocalSegment, Segment};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, RwLock, RwLockWriteGuard};
use std::time::Duration;

/// Library version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// CANN's initialisation status: not initialised.
pub const STATUS_NOT_INITIALIZED: i32 = 0;
/// CANN's initialisation status: the symmetric heap exists, start-up not finished.
pub const STATUS_SHM_CREATED: i32 = 1;
/// CANN's initialisation status: initialised.
pub const STATUS_IS_INITIALIZED: i32 = 2;

static STATUS: AtomicI32 = AtomicI32::new(STATUS_NOT_INITIALIZED);

/// Where start-up is (`STATUS_*`), for `shmem_init_status`; safe to ask from any thread.
pub fn status() -> i32 {
    STATUS.load(Ordering::Acquire)
}

/// One initialised job.
#[derive(Debug)]
pub struct Runtime {
    /// Bounds on blocking steps.
    pub timeouts: Timeouts,
    /// This PE's number.
    pub my_pe: usize,
    /// Number of PEs.
    pub n_pes: usize,
    /// This PE's membership in the job: the store, the node map, abort and goodbye.
    bootstrap: Bootstrap,
    /// The symmetric heap and the peers' mappings.
    pub heap: Heap,
    /// The host API's synchronisation words: this PE's control segment and its peers'.
    control: Control,
    /// Global and static variables: this PE's range and the peers' mappings, or why not. Only
    /// held (the job state publishes what the facade reads); dropping it unmaps the peers.
    _static_data: StaticData,
    barrier: Barrier,
    /// What the published job state points at (`job_state::publish`); never read, only kept
    /// alive as long as the state is published (until finalize clears it).
    #[allow(dead_code)]
    job_state: job_state::Backing,
    /// The transport reaching the PEs that are not mapped here, when any is (its table is in
    /// the job state).
    transport: Option<transport::Started>,
    /// The accelerator holding the heap (npu or cuda device), when one was chosen.
    accel: Option<Arc<dyn Accelerator>>,
    /// Where the kernels' copy of the job state lives on the NPU, once asked for.
    device_state: std::sync::Mutex<Option<(usize, usize)>>,
}

#[derive(Debug)]
enum Phase {
    Uninitialized,
    Running(Arc<Runtime>),
    Finalized,
}

static STATE: RwLock<Phase> = RwLock::new(Phase::Uninitialized);

/// Whether the library is initialized now (the TLS settings may not change then).
pub fn is_running() -> bool {
    matches!(
        *STATE.read().unwrap_or_else(|p| p.into_inner()),
        Phase::Running(_)
    )
}

fn lock_uninitialized(call: &'static str) -> Result<RwLockWriteGuard<'static, Phase>> {
    let state = STATE.write().unwrap_or_else(|p| p.into_inner());
    match *state {
        Phase::Uninitialized => Ok(state),
        Phase::Running(_) => Err(Error::State {
            call,
            reason: "called again while the library is initialized",
        }),
        Phase::Finalized => Err(Error::State {
            call,
            reason: "called after finalize; the library cannot be restarted",
        }),
    }
}

/// Starts the library on this PE: reads the environment, joins the job, builds and exchanges
/// the heap, and waits for every PE to get there.
pub fn init() -> Result<Arc<Runtime>> {
    reset_status_on_error((|| {
        log::install(env::early_log_level());
        let state = lock_uninitialized("shmem_init")?;
        let config = env::load()?;
        let timeouts = Timeouts::all(config.init_timeout);
        bootstrap::ending::install(job_over);
        let bootstrap = bootstrap::join(&config, Joining::Environment, timeouts)?;
        start(state, config, bootstrap, None, timeouts)
    })())
}

/// Starts the library on this PE for the job `job` describes (`shmem_init_attr` and the unique
/// id form): as [`init`], but PE, size, heap size, rendezvous and timeouts come from the
/// attributes; every PE checks that all were given the same job. On failure after joining,
/// this PE leaves the job without ending it for the others, so each reports its own error.
pub fn init_attrs(job: JobAttrs, timeouts: Timeouts) -> Result<Arc<Runtime>> {
    reset_status_on_error((|| {
        log::install(env::early_log_level());
        let state = lock_uninitialized(job.call)?;
        let config = env::load()?;
        log::set_pe(job.my_pe as i32);
        let heap_size = job.heap_size;
        bootstrap::ending::install(job_over);
        let bootstrap = bootstrap::join(&config, Joining::Attributes(job), timeouts)?;
        start(state, config, bootstrap, Some(heap_size), timeouts)
    })())
}

fn reset_status_on_error(r: Result<Arc<Runtime>>) -> Result<Arc<Runtime>> {
    if r.is_err() && !matches!(r, Err(Error::State { .. })) {
        STATUS.store(STATUS_NOT_INITIALIZED, Ordering::Release);
    }
    r
}

fn start(
    mut state: RwLockWriteGuard<'static, Phase>,
    config: Config,
    bootstrap: Bootstrap,
    heap_size: Option<usize>,
    timeouts: Timeouts,
) -> Result<Arc<Runtime>> {
    let (my_pe, n_pes) = (bootstrap.rank(), bootstrap.size());
    wait::configure(bootstrap.nodes().local_pes().len());
    let heap_size = heap_size.unwrap_or(config.symmetric_size);
    let accel = open_accelerator(&config, &bootstrap, timeouts)?;
    let device: Box<dyn Device> = match &accel {
        Some(a) => a.as_device(),
        None => Box::new(Host),
    };
    let heap = Heap::create(device, heap_size, &bootstrap, timeouts.create)?;
    if accel.is_none() {
        heap.check_host_data_path()?;
    }
    let control = Control::create(&bootstrap, timeouts.create)?;
    STATUS.store(STATUS_SHM_CREATED, Ordering::Release);
    let static_data = static_data::exchange(&bootstrap, timeouts.create)?;
    let transport = start_transport(
        &bootstrap,
        &heap,
        &static_data,
        &control,
        accel.as_deref(),
        timeouts,
    )
    .and_then(|t| reaches_other_nodes(&bootstrap, t))
    .map_err(|e| stop_across_nodes(&bootstrap, e))?;
    bootstrap.barrier(timeouts.create).map_err(|e| match e {
        BootstrapError::Timeout { after, .. } => Error::Timeout {
            step: "not every PE reached the end of start-up".into(),
            after,
            bound: "the start-up timeout, SHMEM_INIT_TIMEOUT".into(),
            why: ", though every PE had published its heap and static data: one is stuck or \
                      died since"
                .into(),
        },
        e => e.into(),
    })?;
    if my_pe == 0 {
        if config.print_version {
            println!("shmem {VERSION} (OpenSHMEM 1.5)");
        }
        if config.print_info {
            print!("{}", env::describe());
            if let Some(t) = &transport {
                println!(
                    "PE {my_pe}: {}",
                    transport::describe_reach(t.transport(), n_pes)
                );
            }
        }
    }
    let nodes = bootstrap.nodes();
    tracing::debug!(
        "initialized: {n_pes} PEs, {} bytes of symmetric heap; node {}, local rank {} of {}",
        heap.size(),
        nodes.node_of(my_pe),
        nodes.local_rank(),
        nodes.local_pes().len()
    );
    // The central shape's read-modify-writes on member 0's words need every member to map
    // them: with a transport in the job (a PE not mapped somewhere) it is dissemination,
    // whose flags a PE reached through the transport gets by puts.
    let central_barrier = transport.is_none()
        && match config.barrier {
            "central" => true,
            "dissemination" => false,
            _ => wait::oversubscribed(n_pes),
        };
    let heap_bases: Vec<usize> = (0..n_pes).map(|pe| heap.user_base(pe)).collect();
    let node_numbers: Vec<u32> = (0..n_pes).map(|pe| nodes.node_of(pe)).collect();
    let reach: Vec<u8> = match &transport {
        Some(t) => (0..n_pes)
            .map(|pe| {
                if t.transport().can_reach(pe) {
                    job_state::REACH_TRANSPORT
                } else {
                    job_state::REACH_MAPPED
                }
            })
            .collect(),
        None => Vec::new(),
    };
    let job_state = job_state::publish(&job_state::Job {
        my_pe,
        heap_bases: &heap_bases,
        control_bases: &control.bases(),
        heap_size: heap.size(),
        data_base: static_data.base,
        data_size: static_data.size,
        data_bases: &static_data.bases,
        data_off_reason: &static_data.off_reason,
        central_barrier,
        reach: &reach,
        transport: transport.as_ref().map_or(std::ptr::null(), |t| t.ops()),
        heap_device: accel.as_ref().map(|a| (a.kind() as i32, a.device_id())),
    });
    bootstrap.start_heartbeat(config.heartbeat_timeout)?;
    let rt = Arc::new(Runtime {
        timeouts,
        my_pe,
        n_pes,
        bootstrap,
        heap,
        control,
        _static_data: static_data,
        barrier: Barrier::new(central_barrier).on_nodes(node_numbers.clone()),
        job_state,
        transport,
        accel,
        device_state: std::sync::Mutex::new(None),
    });
    let through: Vec<bool> = match (&rt.transport, &rt.accel) {
        // A device heap's transport reaches heaps only: control words stay mapped.
        (Some(t), None) => (0..n_pes)
            .map(|pe| pe != my_pe && t.transport().can_reach(pe))
            .collect(),
        _ => Vec::new(),
    };
    let control_bases: Vec<usize> = (rt.control.bases().into_iter().enumerate())
        .map(|(pe, b)| if through.get(pe) == Some(&true) { 0 } else { b })
        .collect();
    // SAFETY: the control segments and the transport are the runtime's, which outlives the
    // view: finalize clears it before the runtime goes.
    view::install(unsafe {
        view::View::new(
            my_pe,
            crate::sync::control::SIZE,
            control_bases,
            through,
            node_numbers,
            central_barrier,
            rt.transport.as_ref().map(|t| t.transport()),
        )
    });
    wait::publish_naps(Some(barrier::nap_stamp(&rt.control, my_pe)));
    *state = Phase::Running(rt.clone());
    STATUS.store(STATUS_IS_INITIALIZED, Ordering::Release);
    rt.bootstrap.started();
    Ok(rt)
}

/// The accelerator `SHMEM_DEVICE` chooses: `npu`, `cuda`, or for `auto` the npu where ACL loads and
/// reports a device; `None` for host memory. `auto` never picks the GPU: GPU machines are
/// common, and an OpenSHMEM program that loads and stores its heap from the CPU would break on a
/// heap in GPU memory, so that is asked for by name. Collective: every PE of the job must choose
/// alike, which the heap's exchange checks.
fn open_accelerator(
    config: &Config,
    bootstrap: &Bootstrap,
    timeouts: Timeouts,
) -> Result<Option<Arc<dyn Accelerator>>> {
    let acl = env::text(env::ACL_LIBRARY).unwrap_or_else(|| ascend_sys::LIBRARY.into());
    let driver = env::text(env::CUDA_LIBRARY).unwrap_or_else(|| "libcuda.so.1".into());
    let choice = match config.device {
        "auto" if npu::present(&acl) => "npu",
        other => other,
    };
    Ok(match choice {
        "npu" => Some(Arc::new(Npu::open(bootstrap, &acl, timeouts.create)?)),
        "cuda" => Some(Arc::new(Cuda::open(bootstrap, &driver)?)),
        _ => None,
    })
}

/// The transport chosen for this job, connected and with the heap, the static data and the
/// control segment registered (collective), or `None` when every PE is mapped here. A job whose
/// PEs span nodes uses UCX for the PEs of other nodes; on one node, UCX or the loopback test
/// transport reach the PEs `SHMEM_TEST_UCX` or `SHMEM_TEST_LOOPBACK` choose (for testing only).
fn start_transport(
    bootstrap: &Bootstrap,
    heap: &Heap,
    static_data: &StaticData,
    control: &Control,
    accel: Option<&dyn Accelerator>,
    timeouts: Timeouts,
) -> Result<Option<transport::Started>> {
    let (my_pe, n_pes) = (bootstrap.rank(), bootstrap.size());
    let heap_bases: Vec<usize> = (0..n_pes).map(|pe| heap.user_base(pe)).collect();
    let nodes = bootstrap.nodes();
    let test = (env::test_ucx(n_pes)?, env::test_loopback(n_pes)?);
    let other_node: Vec<bool> = (0..n_pes)
        .map(|pe| nodes.node_of(pe) != nodes.node_of(my_pe))
        .collect();
    let ucx = |reach: Vec<bool>| -> Result<Box<dyn transport::Transport>> {
        Ok(Box::new(transport::ucx::Ucx::open(
            my_pe,
            reach,
            other_node.clone(),
            timeouts.control,
        )?))
    };
    let chosen: Box<dyn transport::Transport> = match test {
        _ if accel.is_some() && other_node.contains(&true) => {
            return Err(Error::State {
                call: "shmem_init",
                reason: "the npu and cuda devices reach the PEs of one node only: a job \
                         across nodes needs a network transport for device memory, which this \
                         library does not have yet (set SHMEM_DEVICE=host for host memory)",
            })
        }
        (None, None) if accel.is_some() => Box::new(DeviceCopy::new(
            accel.map(|a| a.as_memory()).expect("accel is some"),
            &heap_bases,
            &static_data.bases,
            &control.bases(),
            timeouts.control,
        )),
        _ if accel.is_some() => {
            return Err(Error::State {
                call: "shmem_init",
                reason: "SHMEM_TEST_UCX and SHMEM_TEST_LOOPBACK do not apply to the npu and \
                         cuda devices, whose heaps every PE reaches through the device's \
                         copies",
            })
        }
        _ if other_node.contains(&true) => ucx(other_node.clone())?,
        (Some(_), Some(_)) => {
            return Err(Error::State {
                call: "shmem_init",
                reason: "SHMEM_TEST_UCX and SHMEM_TEST_LOOPBACK are both set; set one",
            })
        }
        (Some(pes), None) => ucx(pes)?,
        (None, Some(pes)) => Box::new(transport::loopback::Loopback::new(
            pes,
            &heap_bases,
            &static_data.bases,
            &control.bases(),
        )),
        (None, None) => Box::new(transport::none::NoTransport),
    };
    // Every PE is mapped here and reached directly: no table, and the data path never
    // looks for one.
    if !(0..n_pes).any(|pe| chosen.can_reach(pe)) {
        return Ok(None);
    }
    let mut segments = vec![LocalSegment {
        segment: Segment::Heap,
        base: heap.user_base(my_pe),
        len: heap.size(),
    }];
    if !static_data.bases.is_empty() {
        segments.push(LocalSegment {
            segment: Segment::Data,
            base: static_data.base,
            len: static_data.size,
        });
    }
    segments.push(LocalSegment {
        segment: Segment::Control,
        base: control.local().addr(),
        len: crate::sync::control::SIZE,
    });
    let timeout = timeouts.create;
    let mut allgather =
        |data: &[u8]| -> Result<Vec<Vec<u8>>> { Ok(bootstrap.allgather(data, timeout)?) };
    transport::start(chosen, &segments, &mut allgather).map(Some)
}

/// `transport` when it reaches every PE of another node (their memory is not mapped here);
/// otherwise the refusal naming the first such PE and both nodes.
fn reaches_other_nodes(
    bootstrap: &Bootstrap,
    transport: Option<transport::Started>,
) -> Result<Option<transport::Started>> {
    let (my_pe, nodes) = (bootstrap.rank(), bootstrap.nodes());
    let reaches = |pe| {
        transport
            .as_ref()
            .is_some_and(|t| t.transport().can_reach(pe))
    };
    let Some(pe) = (0..bootstrap.size()).find(|&pe| !nodes.is_local(pe) && !reaches(pe)) else {
        return Ok(transport);
    };
    let by = transport.as_ref().map_or("none", |t| t.transport().name());
    Err(Error::Unreachable {
        pe: pe as u32,
        why: format!(
            "PE {pe} on {} is not reachable from PE {my_pe} on {}: the job spans {} nodes, and \
             the transport of this job ({by}) does not reach PEs on other nodes",
            nodes.describe(pe),
            nodes.describe(my_pe),
            nodes.count()
        ),
    })
}

/// A start-up error of a job that spans nodes, after the PEs met: logged here, then the whole
/// job is ended (every node, not only the PEs that watch this one), and the error comes back
/// marked logged for the caller to return. A job on one node returns `e` as it is.
fn stop_across_nodes(bootstrap: &Bootstrap, e: Error) -> Error {
    if bootstrap.nodes().count() < 2 {
        return e;
    }
    if e.names_call() {
        tracing::error!("{e}");
    } else {
        tracing::error!("shmem_init: {e}");
    }
    bootstrap.abort(1, true);
    e.logged()
}

/// The device address of the job state as kernels on this PE's NPU read it, refreshed from the
/// host's now (teams made since, the scratch settings); `None` when the heap is not on an NPU.
pub fn device_job_state(call: &'static str) -> Result<Option<usize>> {
    let rt = get(call)?;
    let Some(npu) = &rt.accel else {
        return Ok(None);
    };
    let mut held = rt.device_state.lock().unwrap_or_else(|p| p.into_inner());
    // The image's size is fixed for a job (PE count, team slots): one block, rewritten.
    let at = match *held {
        Some((at, _)) => at,
        None => {
            let len = job_state::device_image(0).map_or(0, |i| i.len());
            let at = npu.malloc(len)?;
            *held = Some((at, len));
            at
        }
    };
    let image = job_state::device_image(at).ok_or(Error::State {
        call,
        reason: "the library is not running",
    })?;
    // SAFETY: `image` is readable; the block at `at` was allocated for an image of this size.
    unsafe { npu.write(at, image.as_ptr(), image.len())? };
    Ok(Some(at))
}

/// The accelerator holding the heap of the running job, or `None` (host memory, or not running).
pub fn accelerator() -> Option<Arc<dyn Accelerator>> {
    match &*STATE.read().unwrap_or_else(|p| p.into_inner()) {
        Phase::Running(rt) => rt.accel.clone(),
        _ => None,
    }
}

/// `SHMEM_TEAM_SHARED` on this PE as (start, stride, size) over world PEs: the PEs of its node
/// ([`bootstrap::Nodes::shared_team`]); (0, 1, 0) when the library is not running.
pub fn shared_team() -> (usize, usize, usize) {
    match &*STATE.read().unwrap_or_else(|p| p.into_inner()) {
        Phase::Running(rt) => rt.bootstrap.nodes().shared_team(),
        _ => (0, 1, 0),
    }
}

/// The running job, or a state error naming `call`.
pub fn get(call: &'static str) -> Result<Arc<Runtime>> {
    match &*STATE.read().unwrap_or_else(|p| p.into_inner()) {
        Phase::Running(rt) => Ok(rt.clone()),
        Phase::Uninitialized => Err(Error::State {
            call,
            reason: "the library is not initialized (call shmem_init first)",
        }),
        Phase::Finalized => Err(Error::State {
            call,
            reason: "called after shmem_finalize",
        }),
    }
}

/// Ends the library on this PE: waits for every PE (as long as it takes, unless the PEs it
/// waits for are stuck in other library calls: see [`Runtime::enter`]), says goodbye to the store (PE 0 of
/// a job without `shmemrun` then waits for every PE's goodbye) and unmaps the heaps.
pub fn finalize() -> Result<()> {
    let rt = get("shmem_finalize")?;
    rt.enter(Call::new("shmem_finalize", Step::Finalize));
    if let Some(accel) = &rt.accel {
        accel.drain(rt.timeouts.control);
    }
    wait::publish_naps(None);
    if let Some(t) = &rt.transport {
        t.transport().finalize()?;
        // Every PE has closed its side of the transport before any tears it down (when the
        // runtime goes, below): a peer still closing toward this PE needs this PE's side.
        rt.bootstrap.barrier(rt.timeouts.control)?;
    }
    rt.bootstrap.goodbye(rt.timeouts.control)?;
    if let (Some(npu), Some((at, _))) = (
        &rt.accel,
        *rt.device_state.lock().unwrap_or_else(|p| p.into_inner()),
    ) {
        if let Err(e) = npu.free_plain(at) {
            tracing::warn!("freeing the device copy of the job state: {e}");
        }
    }
    // The state points into this runtime, which goes with the phase change below.
    job_state::clear();
    view::clear();
    *STATE.write().unwrap_or_else(|p| p.into_inner()) = Phase::Finalized;
    STATUS.store(STATUS_NOT_INITIALIZED, Ordering::Release);
    Ok(())
}

/// Ends the whole job with `status` for the program's `shmem_global_exit`: tells the store's
/// host (`shmemrun`, or PE 0, which then ends every other PE), then exits this process.
pub fn global_exit(status: i32) -> ! {
    end_job(status, false)
}

/// Ends the whole job with `status` after an error the library reported on this PE (a bad
/// argument, an asymmetric allocation): as [`global_exit`], but the job's end is reported as
/// the library's stop, not as a call of `shmem_global_exit`.
pub fn stop_after_error(status: i32) -> ! {
    end_job(status, true)
}

/// Ends this process after the bootstrap's watchers found the job over: the launcher gone,
/// PE 0's store closed, or another PE ended the job (they logged what they saw). Installed
/// into the bootstrap at init.
fn job_over(status: i32) -> ! {
    log::exit_process(status)
}

fn end_job(status: i32, after_error: bool) -> ! {
    if let Ok(Phase::Running(rt)) = STATE.try_read().as_deref() {
        rt.bootstrap.abort(status, after_error);
    }
    log::exit_process(status)
}

/// Ends the job after this member of `team` found its team collective calls out of step with
/// another member's ([`barrier::team_sync`]'s stop, [`barrier::team_differs`], or a flag whose
/// tag differs): names the first member at this member's team collective number whose call
/// differs from the lowest such member's, both calls, and the team. That member says it at once;
/// the others wait the control timeout for it first, as in [`Runtime::out_of_step`].
pub fn team_out_of_step(team: barrier::Team<'_>) -> ! {
    let areas = barrier::PublishedAreas(team);
    let entered =
        |m: usize| barrier::team_entered(&areas, m).unwrap_or_else(|_| stop_after_error(1));
    let (number, mine) = entered(team.me);
    let at: Vec<(usize, Option<crate::sync::call::TeamCall>)> = (0..team.size)
        .filter_map(|m| {
            let (k, call) = entered(m);
            (k == number).then_some((m, call))
        })
        .collect();
    let (first, first_call) = at.first().copied().unwrap_or((team.me, mine));
    let (other, other_call) = at
        .iter()
        .copied()
        .find(|(_, call)| *call != first_call)
        .unwrap_or((team.me, mine));
    if other != team.me {
        let patience =
            get("a team collective").map_or(Duration::from_secs(10), |rt| rt.timeouts.control);
        std::thread::sleep(patience);
    }
    let pe = |m: usize| {
        let world = team.world_pe(m);
        if team.is_world() {
            format!("PE {world}")
        } else {
            format!("PE {world} (team PE {m})")
        }
    };
    let describe = |c: Option<crate::sync::call::TeamCall>| {
        c.map_or("an unknown call".to_string(), |c| c.to_string())
    };
    tracing::error!(
        "{}: team collective calls out of step on {}: {} called {} while {} called {} \
         (call #{number} on this team); ending the job",
        mine.as_ref().map_or("a team collective", |c| c.routine()),
        team.describe(),
        pe(first),
        describe(first_call),
        pe(other),
        describe(other_call),
    );
    stop_after_error(1)
}

impl Runtime {
    /// Barrier over all PEs without the completion of outstanding puts, for
    /// `shmem_barrier_all` (`barrier_all`) or `shmem_sync_all`, which agree with each other.
    pub fn sync_all(&self, barrier_all: bool) {
        let call = if barrier_all {
            Call::BARRIER_ALL
        } else {
            Call::SYNC_ALL
        };
        self.enter(call);
    }

    /// The barrier over all PEs for `call`. Returns only when every PE entered it with a call
    /// that agrees with this one; otherwise the job ends here: the same address would name
    /// different blocks from now on. It also ends when the barrier cannot complete: every PE
    /// that has not entered it has waited in another library call for the control timeout
    /// ([`barrier::Hopeless`]); a PE that is only late is waited for.
    fn enter(&self, call: Call) {
        let patience = self.timeouts.control;
        let mut hopeless = barrier::Hopeless::new(&self.control, self.n_pes, patience);
        let mut give_up = |epoch| match hopeless.check(epoch) {
            Ok(hopeless) => hopeless,
            Err(_) => stop_after_error(1),
        };
        match self.barrier.sync(
            &self.control,
            self.my_pe,
            self.n_pes,
            call,
            Some(&mut give_up),
        ) {
            Ok(()) => {}
            Err(Stop::OutOfStep { epoch }) => self.out_of_step(&call, epoch),
            Err(Stop::TimedOut { epoch }) => self.deadlocked(&call, epoch),
            Err(Stop::TransportFailed { .. }) => stop_after_error(1),
        }
    }

    /// `pe`'s last entry at the world barrier ([`barrier::entered`]); ends the job when `pe` is
    /// reached through the transport and cannot be read (the transport logged why).
    fn entered(&self, pe: usize) -> barrier::Entered {
        barrier::entered(&self.control, pe).unwrap_or_else(|_| stop_after_error(1))
    }

    /// Ends the job after a barrier whose calls differ. Every PE knows; the first PE whose
    /// call differs from PE 0's says so, in one line naming both PEs and both calls, and ends
    /// the job; the others wait for that, and say it themselves if the job has not ended
    /// within the control timeout.
    fn out_of_step(&self, mine: &Call, epoch: u64) -> ! {
        let calls: Vec<Option<Call>> = (0..self.n_pes).map(|pe| self.entered(pe).call).collect();
        let first = calls[0];
        let differs = (1..self.n_pes)
            .find(|&pe| match (&first, &calls[pe]) {
                (Some(a), Some(b)) => !a.agrees(b),
                _ => true,
            })
            .unwrap_or(self.my_pe);
        if differs != self.my_pe {
            std::thread::sleep(self.timeouts.control);
        }
        let describe =
            |c: &Option<Call>| c.map_or("an unknown call".to_string(), |c| c.to_string());
        tracing::error!(
            "{}: collective calls out of step: PE 0 called {} while PE {differs} called {} \
             (call #{epoch} over all PEs); ending the job",
            mine.routine(),
            describe(&first),
            describe(&calls[differs]),
        );
        stop_after_error(1)
    }

    /// Ends the job when the barrier for `mine` cannot complete: the PEs that have not entered
    /// it have all waited in other library calls for the control timeout. Names them and the
    /// last call over all PEs each one made. The first PE that did enter says so; the others
    /// wait for that as in [`Runtime::out_of_step`].
    fn deadlocked(&self, mine: &Call, epoch: u64) -> ! {
        const NAMED: usize = 4;
        let entries: Vec<barrier::Entered> = (0..self.n_pes).map(|pe| self.entered(pe)).collect();
        let first_in = entries.iter().position(|e| e.epoch >= epoch);
        if first_in.is_some_and(|pe| pe != self.my_pe) {
            std::thread::sleep(self.timeouts.control);
        }
        let missing: Vec<(usize, &barrier::Entered)> = entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.epoch < epoch)
            .collect();
        let mut who: Vec<String> = missing
            .iter()
            .take(NAMED)
            .map(|(pe, e)| match e.call {
                Some(c) if e.epoch > 0 => {
                    format!("PE {pe} (its last was {c}, call #{} over all PEs)", e.epoch)
                }
                _ => format!("PE {pe} (no call over all PEs yet)"),
            })
            .collect();
        if missing.len() > NAMED {
            who.push(format!("{} more", missing.len() - NAMED));
        }
        let secs = self.timeouts.control.as_secs_f64();
        tracing::error!(
            "{}: PE {} waits in {mine} (call #{epoch} over all PEs) for {}, which {} waited {secs} s \
             in another library call: collective calls out of step, the job cannot go on; \
             ending it (SHMEM_INIT_TIMEOUT sets this wait)",
            mine.routine(),
            self.my_pe,
            who.join(", "),
            if missing.len() == 1 { "has" } else { "have all" },
        );
        stop_after_error(1)
    }

    /// Collective symmetric allocation (`shmem_malloc` and friends): `len` > 0 bytes aligned to
    /// `align`, zeroed if asked. Every PE must call it with the same arguments, which the
    /// closing barrier checks; all PEs get the same offset. Returns the local address once
    /// every PE has its block.
    pub fn alloc(&self, call: &str, len: usize, align: usize, zero: bool) -> Result<usize> {
        let result = self.alloc_local(call, len, align, zero);
        let step = Step::Alloc {
            size: len as u64,
            align: align as u64,
        };
        self.enter(Call::new(call, step));
        result
    }

    /// This PE's half of an allocation, without the closing barrier.
    fn alloc_local(&self, call: &str, len: usize, align: usize, zero: bool) -> Result<usize> {
        if align > heap::USER_BASE_ALIGN {
            return Err(Error::Alignment {
                call: call.to_string(),
                align,
                max: heap::USER_BASE_ALIGN,
            });
        }
        let off = self
            .heap
            .with_allocator(|a| a.alloc(len, align))
            .map_err(|e| heap::alloc_error(call, None, &e, self.heap.size()))?;
        if zero {
            self.heap.zero(off, len)?;
        }
        Ok(self.heap.user_base(self.my_pe) + off)
    }

    /// Collective free; `addr` must be a block start returned by [`Runtime::alloc`]. Waits for
    /// every PE first (each freeing the same block), so no peer is still using the block.
    pub fn free(&self, call: &str, addr: usize) -> Result<()> {
        let offset = Call::offset_word(self.heap.offset_of(addr));
        self.enter(Call::new(call, Step::Free { offset }));
        let off = self.user_offset(call, addr)?;
        self.heap
            .with_allocator(|a| a.free(off))
            .map_err(|e| self.bad_block(call, addr, &e))
    }

    /// Collective reallocation keeping the first `min(old, new)` bytes. Returns once every PE
    /// has its resized block with the old contents copied in.
    pub fn realloc(&self, call: &str, addr: usize, len: usize) -> Result<usize> {
        let offset = Call::offset_word(self.heap.offset_of(addr));
        let result = self.realloc_local(call, addr, len);
        let step = Step::Realloc {
            offset,
            size: len as u64,
        };
        self.enter(Call::new(call, step));
        result
    }

    fn realloc_local(&self, call: &str, addr: usize, len: usize) -> Result<usize> {
        let off = self.user_offset(call, addr)?;
        let resized = self
            .heap
            .with_allocator(|a| a.resize_in_place(off, len))
            .map_err(|e| self.bad_block(call, addr, &e))?;
        if resized {
            return Ok(addr);
        }
        let old_len = self.heap.with_allocator(|a| a.block_len(off)).unwrap_or(0);
        let new_addr = self.alloc_local(call, len, alloc_align(off), false)?;
        let new_off = new_addr - self.heap.user_base(self.my_pe);
        self.heap.copy(off, new_off, old_len.min(len))?;
        self.heap
            .with_allocator(|a| a.free(off))
            .map_err(|e| self.bad_block(call, addr, &e))?;
        Ok(new_addr)
    }

    fn user_offset(&self, call: &str, addr: usize) -> Result<usize> {
        self.heap.offset_of(addr).ok_or_else(|| Error::NoSuchBlock {
            call: call.to_string(),
            addr,
            offset: None,
        })
    }

    fn bad_block(&self, call: &str, addr: usize, e: &heap::alloc::AllocError) -> Error {
        heap::alloc_error(call, Some(addr), e, self.heap.size())
    }
}

/// Alignment a block at `off` already has, so a moved block keeps it.
fn alloc_align(off: usize) -> usize {
    if off == 0 {
        heap::alloc::MIN_ALIGN
    } else {
        1 << off.trailing_zeros().min(12)
    }
}
