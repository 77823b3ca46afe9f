//! The cxx bridge: the only door between the C++ facade and the runtime. Every function here
//! logs the error it returns (once, as one line), so the facade only decides what the public
//! routine returns or whether the job must end.

use crate::bootstrap::uniqueid;
use crate::bootstrap::{JobAttrs as Job, Meet, Timeouts};
use crate::error::Error;
use crate::memfabric::shm;
use crate::runtime;
use std::time::Duration;

#[cxx::bridge(namespace = "shmem::core")]
mod bridge {
    /// Progress of one wait in the facade (see `sync::wait::Backoff`); start from zeros.
    struct WaitState {
        spins: u32,
        yielding_since_ns: u64,
        nap_ns: u64,
    }

    /// A job described by CANN's attributes (`shmem_init_attr`, unique id), already checked by
    /// the facade argument by argument.
    /// `smem_shm_init`'s device and `smem_shm_config_t`'s fields the runtime uses.
    struct MfShmConfig {
        /// `deviceId`: the NPU, on the npu device.
        device_id: u16,
        init_timeout_s: u32,
        control_timeout_s: u32,
        start_store: bool,
    }

    struct JobAttrs {
        my_pe: i32,
        n_pes: i32,
        local_mem_size: u64,
        /// `tcp://ip:port` or `tcp6://[ip]:port`; empty when the unique id is used.
        ip_port: String,
        /// The bytes of CANN's `internal[]` from `shmem_get_uniqueid`; empty with `ip_port`.
        uniqueid: Vec<u8>,
        init_timeout_s: u32,
        create_timeout_s: u32,
        control_timeout_s: u32,
    }

    /// A team as world PEs `start`, `start + stride`, ... (`size` of them).
    struct TeamShape {
        start: i32,
        stride: i32,
        size: i32,
    }

    extern "Rust" {
        /// The PEs of `SHMEM_TEAM_SHARED` on this PE: the PEs of its node (see
        /// `Nodes::shared_team`); the whole job when the library is not running.
        fn shared_team() -> TeamShape;
        /// Starts the library on this PE (collective) and fills the job state
        /// (`shmem/job_state.h`) the data path reads.
        fn init() -> Result<()>;
        /// Starts the library for the job `attrs` describes (collective), fills the job state
        /// and returns 0, or returns CANN's error code (the error is logged).
        fn init_attrs(call: &str, attrs: &JobAttrs) -> i32;
        /// The job state's layout as the runtime defines it (`job_state::layout`), for the
        /// facade to compare with the C header's before it starts anything.
        fn job_state_layout() -> Vec<usize>;
        /// Makes a unique id: fills `internal` with CANN's `internal[]` bytes and returns 0, or
        /// returns CANN's error code (logged).
        fn uniqueid_create(call: &str, internal: &mut Vec<u8>) -> i32;
        /// Says why `internal` is not a unique id of this library ("" when it is one).
        fn uniqueid_check(internal: &[u8]) -> String;
        /// CANN's initialisation status (0 not initialised, 1 heap created, 2 initialised).
        fn init_status() -> i32;
        /// Ends the library on this PE (collective).
        fn finalize() -> Result<()>;
        /// Ends the whole job with `status` (the program's `shmem_global_exit`); does not
        /// return.
        fn global_exit(status: i32);
        /// Ends the whole job with `status` after an error the facade logged on this PE; does
        /// not return. The job's end names the library's stop, not `shmem_global_exit`.
        fn stop_after_error(status: i32);
        /// Barrier over all PEs for `shmem_barrier_all` (`barrier_all`) or `shmem_sync_all`
        /// (no completion of puts: the caller fences first if needed).
        fn sync_all(barrier_all: bool) -> Result<()>;
        /// Barrier over the team of world PEs start, start + stride, ... (`size`; this PE is
        /// team PE `me`), or `pes` (team PE i is world PE pes[i]) when not empty, whose area is
        /// in `slot`, for the team collective tagged `tag` (the facade's team_enter, which
        /// recorded the call in this PE's `CALL` line); ends the job when the members' calls
        /// differ.
        fn team_sync(start: i32, stride: i32, size: i32, me: i32, slot: i32, pes: &[i32], tag: u64);
        /// For the facade's team waits once they nap: ends the job when a member of the team
        /// (as for `team_sync`) is at this PE's team collective number in a different call (a
        /// look every 50 ms at most; between looks it returns at once).
        fn team_watch(start: i32, stride: i32, size: i32, me: i32, slot: i32, pes: &[i32]);
        /// Ends the job: the facade found a team flag whose tag differs from its own call's.
        fn team_out_of_step(start: i32, stride: i32, size: i32, me: i32, slot: i32, pes: &[i32]);
        /// Collective symmetric allocation; returns the local address.
        fn heap_alloc(call: &str, len: usize, align: usize, zero: bool) -> Result<usize>;
        /// Collective free of a block from `heap_alloc`.
        fn heap_free(call: &str, addr: usize) -> Result<()>;
        /// Collective resize of a block from `heap_alloc`; returns the new local address.
        fn heap_realloc(call: &str, addr: usize, len: usize) -> Result<usize>;
        /// Waits a little, by the library's one waiting policy, before the facade checks its
        /// condition again.
        fn wait_snooze(state: &mut WaitState);
        /// Enqueues a device-to-device copy of `len` bytes on the stream `stream` of the
        /// accelerator holding the heap (an ACL or CUDA stream; 0: the default stream) for
        /// `call`; 0, or CANN's code (logged): ACLSHMEM_NOT_SUPPORTED when the heap is not on
        /// an accelerator.
        fn stream_copy(call: &str, dst: usize, src: usize, len: usize, stream: usize) -> i32;
        /// Enqueues the host function `func(arg)` (a `void (*)(void *)`) on `stream` for
        /// `call`; 0 or CANN's code (logged), as `stream_copy`.
        fn stream_call(call: &str, stream: usize, func: usize, arg: usize) -> i32;
        /// Enqueues a signal on `stream`: the 32-bit word at the device address `at` set to
        /// `value` (`add` false) or increased by it (`add` true); 0 or CANN's code (logged),
        /// ACLSHMEM_NOT_SUPPORTED where the device cannot do it on a stream.
        fn stream_signal32(call: &str, stream: usize, at: usize, value: u32, add: bool) -> i32;
        /// Enqueues a wait on `stream` until the 32-bit word at `at` compares with `value` as
        /// CANN's `cmp` (ACLSHMEM_CMP_EQ..LE) says; as `stream_signal32`.
        fn stream_wait32(call: &str, stream: usize, at: usize, value: u32, cmp: i32) -> i32;
        /// The device address of the kernels' copy of the job state, refreshed now; 0 when the
        /// heap is not on an NPU, or on failure (logged).
        fn device_job_state() -> usize;
        /// Logs one error line (for errors the facade detects itself).
        fn log_error(message: &str);
        /// Shows log lines up to `level` (a `SHMEM_LOG_LEVEL` word) from now on, before or
        /// after init (CANN's `aclshmemx_set_log_level`).
        fn log_set_level(level: &str);
        /// Makes global and static variables symmetric; called once by libshmem's constructor,
        /// before `main`. Never fails: a failure becomes the reason static targets are refused.
        fn static_data_prepare();
        /// TLS of a TCP store, before init: off (`enable` false), or on with the user's
        /// certificates described by CANN's TLS info string. Fails after init or on a bad
        /// string (logged, naming `call`).
        fn tls_set_store(call: &str, enable: bool, info: &str) -> i32;
        /// The user's private key (PEM, possibly encrypted PKCS#8) and its password, before
        /// init. Fails after init (logged, naming `call`).
        fn tls_set_key(call: &str, key_pem: &[u8], password: &[u8], has_password: bool) -> i32;
        /// memfabric's `smem_create_config_store`: serves a config store at `url` in this
        /// process (`memfabric::config_store_open`); 0, or memfabric's code (-2000 for the
        /// URL, -1 for the start) with the reason in `why`. Not logged here: `libmf_smem.so`
        /// logs it to memfabric's logger and keeps it as the last error.
        fn mf_config_store_open(url: &str, why: &mut String) -> i32;

        // memfabric Share Memory (`memfabric::shm`, `smem_shm_*`): each returns 0 or
        // memfabric's code with the reason in `why`, which libmf_smem.so logs and keeps as the
        // last error. `handle` is an object's handle from `mf_shm_create`.
        /// `smem_shm_init`: 0, or 1 when the family was initialised already (nothing changed).
        fn mf_shm_init(
            url: &str,
            world_size: u32,
            rank: u32,
            config: &MfShmConfig,
            why: &mut String,
        ) -> i32;
        /// `smem_shm_uninit`: false when the family was not initialised.
        fn mf_shm_uninit() -> bool;
        /// `smem_shm_create`: collective; the handle and the window's base.
        fn mf_shm_create(
            id: u32,
            rank_size: u32,
            rank: u32,
            symmetric_size: u64,
            handle: &mut u64,
            gva: &mut usize,
            why: &mut String,
        ) -> i32;
        /// `smem_shm_destroy`: local.
        fn mf_shm_destroy(handle: u64, why: &mut String) -> i32;
        /// `smem_shm_set_extra_context`.
        fn mf_shm_set_extra_context(handle: u64, context: &[u8], why: &mut String) -> i32;
        /// `smem_shm_get_global_rank` and `_rank_size`.
        fn mf_shm_rank(handle: u64, rank: &mut u32, size: &mut u32, why: &mut String) -> i32;
        /// `smem_shm_control_barrier` (`send` empty) and `smem_shm_control_allgather`.
        fn mf_shm_allgather(handle: u64, send: &[u8], recv: &mut [u8], why: &mut String) -> i32;
        /// `smem_shm_subgroup_barrier` (`send` empty) and `smem_shm_subgroup_allgather`.
        fn mf_shm_subgroup(
            handle: u64,
            key: &str,
            rank_size: u32,
            rank: u32,
            send: &[u8],
            recv: &mut [u8],
            why: &mut String,
        ) -> i32;
        /// `smem_shm_topology_can_reach`.
        fn mf_shm_can_reach(handle: u64, remote: u32, reach: &mut u32, why: &mut String) -> i32;
        /// `smem_shm_atomic_alloc_value`.
        fn mf_shm_atomic_alloc(handle: u64, limit: u32, value: &mut u32, why: &mut String) -> i32;
        /// `smem_shm_atomic_release_value`.
        fn mf_shm_atomic_release(handle: u64, value: i32, why: &mut String) -> i32;
        /// `smem_shm_register_exit`: `handler` is a `void (*)(int)`.
        fn mf_shm_register_exit(handle: u64, handler: usize, why: &mut String) -> i32;
        /// `smem_shm_global_exit`.
        fn mf_shm_global_exit(handle: u64, status: i32, why: &mut String) -> i32;
        /// The kernel-side block (`smem_shm_meta_block`) the getters of
        /// `shmem/memfabric_shm.h` read on the CPU.
        fn mf_shm_meta() -> usize;
        /// The block kernels read: its device copy while Share Memory's windows are on the
        /// npu device, else the host block (`smemx_shm_meta_block`).
        fn mf_shm_meta_kernels() -> usize;
    }

    // memfabric Big Memory: `smem_bm_*` of `libmf_smem.so` through the facade's
    // `shmemi_mf_bm_*` (`cpp/src/memfabric_bm.cpp`), over `memfabric::bm`. Each returns 0 or
    // memfabric's code with the reason in `why`; not logged here (`libmf_smem.so` logs it to
    // memfabric's logger and keeps it as the last error).
    extern "Rust" {
        /// `smem_bm_init`; `plain` set when the store connection is plain TCP, `repeat` when
        /// Big Memory was initialised already (nothing changed).
        #[allow(clippy::too_many_arguments)]
        fn mf_bm_init(
            url: &str,
            world: u32,
            device_id: u16,
            timeouts: [u32; 2],
            start_server: bool,
            auto_ranking: bool,
            rank_id: u16,
            hcom_url: &str,
            tls: [&str; 5],
            tls_enable: bool,
            plain: &mut bool,
            repeat: &mut bool,
            why: &mut String,
        ) -> i32;
        /// `smem_bm_uninit`: false when Big Memory was not initialised.
        fn mf_bm_uninit() -> bool;
        /// `smem_bm_get_rank_id`.
        fn mf_bm_rank() -> u32;
        /// `smem_bm_create2`: sizes `[maxDram, maxHbm, localDram, localHbm]`; the handle in
        /// `handle`.
        fn mf_bm_create(
            id: u32,
            sizes: [u64; 4],
            data_op: u32,
            flags: u32,
            shm_fd: i32,
            handle: &mut usize,
            why: &mut String,
        ) -> i32;
        /// `smem_bm_destroy`, `smem_bm_join`, `smem_bm_leave`, `smem_bm_wait`, by `what`
        /// (0, 1, 2, 3).
        fn mf_bm_handle_call(what: u32, handle: usize, why: &mut String) -> i32;
        /// `smem_bm_get_local_mem_size_by_mem_type` (`what` 0), `smem_bm_ptr_by_mem_type` (1,
        /// of `peer`), `smem_bm_get_rank_id_by_gva` (2, of the address `arg`; `u32::MAX`
        /// outside the pool); the answer in `out`.
        fn mf_bm_query(
            what: u32,
            handle: usize,
            mem_type: u32,
            arg: u64,
            out: &mut u64,
            why: &mut String,
        ) -> i32;
        /// `smem_bm_copy` (`batch` false, one element) and `smem_bm_copy_batch`.
        #[allow(clippy::too_many_arguments)]
        fn mf_bm_copy(
            handle: usize,
            srcs: &[usize],
            dests: &[usize],
            sizes: &[u64],
            t: u32,
            flags: u32,
            batch: bool,
            why: &mut String,
        ) -> i32;
        /// `smem_bm_copy` of one element: 0, or the code, the reason kept for
        /// `mf_bm_copy_why` (no string made on success).
        fn mf_bm_copy_one(
            handle: usize,
            src: usize,
            dest: usize,
            size: u64,
            t: u32,
            flags: u32,
        ) -> i32;
        /// The reason of this thread's last failed `mf_bm_copy_one`, taken.
        fn mf_bm_copy_why(why: &mut String);
        /// `smem_bm_register_user_mem` (`add` true) and `smem_bm_unregister_user_mem`.
        fn mf_bm_user_mem(handle: usize, add: bool, addr: u64, size: u64, why: &mut String) -> i32;
    }
}

use crate::sync::wait::Backoff;
use bridge::{JobAttrs, WaitState};

/// Logs an error as `call: message` (once; messages that already name a routine keep theirs;
/// an error logged where it was detected is not logged again).
fn logged<T>(call: &str, r: Result<T, Error>) -> Result<T, Error> {
    match r {
        Err(e) if !e.is_logged() => {
            if e.names_call() {
                tracing::error!("{e}");
            } else {
                tracing::error!("{call}: {e}");
            }
            Err(e.logged())
        }
        r => r,
    }
}

fn init() -> Result<(), Error> {
    logged("shmem_init", runtime::init().map(|_| ()))
}

fn job_state_layout() -> Vec<usize> {
    crate::job_state::layout()
}

/// The public names CANN programs start the library with (the runtime keeps `'static` names).
fn attrs_call(call: &str) -> &'static str {
    match call {
        "aclshmemx_init_attr" => "aclshmemx_init_attr",
        _ => "shmem_init_attr",
    }
}

fn init_attrs(call: &str, attrs: &JobAttrs) -> i32 {
    let call = attrs_call(call);
    let meet = if attrs.uniqueid.is_empty() {
        Meet::Address(attrs.ip_port.clone())
    } else {
        match uniqueid::UniqueId::decode(&attrs.uniqueid) {
            Ok(id) => Meet::UniqueId(id),
            Err(why) => {
                crate::log::install(crate::env::early_log_level());
                tracing::error!("{call}: invalid argument attributes->comm_args: {why}");
                return -1;
            }
        }
    };
    let job = Job {
        call,
        my_pe: attrs.my_pe as u32,
        n_pes: attrs.n_pes as u32,
        heap_size: attrs.local_mem_size as usize,
        meet,
    };
    let timeouts = Timeouts {
        init: Duration::from_secs(attrs.init_timeout_s.into()),
        create: Duration::from_secs(attrs.create_timeout_s.into()),
        control: Duration::from_secs(attrs.control_timeout_s.into()),
    };
    match runtime::init_attrs(job, timeouts) {
        Ok(_) => 0,
        Err(e) => {
            let code = e.code();
            let _ = logged(call, Err::<(), _>(e));
            code
        }
    }
}

fn uniqueid_create(call: &str, internal: &mut Vec<u8>) -> i32 {
    crate::log::install(crate::env::early_log_level());
    match crate::env::port_range()
        .map_err(Error::from)
        .and_then(uniqueid::create)
    {
        Ok(id) => {
            *internal = id.encode().to_vec();
            0
        }
        Err(e) => {
            tracing::error!("{call}: {e}");
            e.code()
        }
    }
}

fn uniqueid_check(internal: &[u8]) -> String {
    uniqueid::UniqueId::decode(internal)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

fn init_status() -> i32 {
    runtime::status()
}

fn shared_team() -> bridge::TeamShape {
    let (start, stride, size) = runtime::shared_team();
    bridge::TeamShape {
        start: start as i32,
        stride: stride as i32,
        size: size as i32,
    }
}

fn finalize() -> Result<(), Error> {
    logged("shmem_finalize", runtime::finalize())
}

fn global_exit(status: i32) {
    runtime::global_exit(status)
}

fn stop_after_error(status: i32) {
    runtime::stop_after_error(status)
}

fn sync_all(barrier_all: bool) -> Result<(), Error> {
    let call = if barrier_all {
        "shmem_barrier_all"
    } else {
        "shmem_sync_all"
    };
    logged(call, runtime::get(call).map(|rt| rt.sync_all(barrier_all)))
}

fn team_of(
    start: i32,
    stride: i32,
    size: i32,
    me: i32,
    slot: i32,
    pes: &[i32],
) -> crate::sync::barrier::Team<'_> {
    let team = crate::sync::barrier::Team::in_slot(
        start as usize,
        stride as isize,
        size as usize,
        me as usize,
        slot as usize,
    );
    if pes.is_empty() {
        team
    } else {
        team.listed(pes)
    }
}

// The team functions read the barriers' view of the job (`sync::view`), not the runtime, so
// they take no lock; the facade passes only live teams of a running job.

fn team_sync(start: i32, stride: i32, size: i32, me: i32, slot: i32, pes: &[i32], tag: u64) {
    let team = team_of(start, stride, size, me, slot, pes);
    use crate::sync::barrier::{team_sync_published, Stop};
    match team_sync_published(team, tag) {
        Ok(()) => {}
        Err(Stop::TransportFailed { .. }) => runtime::stop_after_error(1),
        Err(Stop::OutOfStep { .. } | Stop::TimedOut { .. }) => runtime::team_out_of_step(team),
    }
}

fn team_watch(start: i32, stride: i32, size: i32, me: i32, slot: i32, pes: &[i32]) {
    use crate::sync::barrier::{self, Hopeless, PublishedAreas};
    use std::cell::Cell;
    use std::time::Instant;
    thread_local! {
        static LOOKED: Cell<Option<Instant>> = const { Cell::new(None) };
    }
    let now = Instant::now();
    if LOOKED.get().is_some_and(|t| now - t < Hopeless::LOOK_EVERY) {
        return;
    }
    LOOKED.set(Some(now));
    let team = team_of(start, stride, size, me, slot, pes);
    match barrier::team_differs(&PublishedAreas(team)) {
        Ok(None) => {}
        Ok(Some(_)) => runtime::team_out_of_step(team),
        Err(_) => runtime::stop_after_error(1),
    }
}

fn team_out_of_step(start: i32, stride: i32, size: i32, me: i32, slot: i32, pes: &[i32]) {
    runtime::team_out_of_step(team_of(start, stride, size, me, slot, pes))
}

// Calls whose PEs are out of step never return from these: the runtime ends the job.

fn heap_alloc(call: &str, len: usize, align: usize, zero: bool) -> Result<usize, Error> {
    logged(
        call,
        runtime::get("shmem_malloc").and_then(|rt| rt.alloc(call, len, align, zero)),
    )
}

fn heap_free(call: &str, addr: usize) -> Result<(), Error> {
    logged(
        call,
        runtime::get("shmem_free").and_then(|rt| rt.free(call, addr)),
    )
}

fn heap_realloc(call: &str, addr: usize, len: usize) -> Result<usize, Error> {
    logged(
        call,
        runtime::get("shmem_realloc").and_then(|rt| rt.realloc(call, addr, len)),
    )
}

fn static_data_prepare() {
    crate::static_data::prepare()
}

/// The TLS settings may change only before init.
fn before_init(call: &'static str) -> Result<(), Error> {
    if runtime::is_running() {
        return Err(Error::State {
            call,
            reason: "called after shmem_init; the store's TLS settings are fixed once the \
                     library is initialized",
        });
    }
    Ok(())
}

/// The `'static` name of a TLS setting routine `call` the facade names.
fn tls_call(call: &str) -> &'static str {
    match call {
        "aclshmemx_set_conf_store_tls" => "aclshmemx_set_conf_store_tls",
        "shmem_set_config_store_tls_key" => "shmem_set_config_store_tls_key",
        "aclshmemx_set_config_store_tls_key" => "aclshmemx_set_config_store_tls_key",
        _ => "shmem_set_conf_store_tls",
    }
}

fn tls_set_store(call: &str, enable: bool, info: &str) -> i32 {
    crate::log::install(crate::env::early_log_level());
    let r = before_init(tls_call(call)).and_then(|()| {
        crate::bootstrap::tls::set_store_tls(enable, enable.then_some(info)).map_err(|source| {
            Error::TlsArgument {
                arg: "tls_info",
                source,
            }
        })
    });
    if r.is_ok() && !enable {
        tracing::debug!("{call}: TLS of a TCP store turned off");
    }
    code(call, r)
}

/// 0, or the public code of the error (logged here, naming `call`).
fn code(call: &str, r: Result<(), Error>) -> i32 {
    logged(call, r).map_or_else(|e| e.code(), |()| 0)
}

fn tls_set_key(call: &str, key_pem: &[u8], password: &[u8], has_password: bool) -> i32 {
    crate::log::install(crate::env::early_log_level());
    let r = before_init(tls_call(call)).and_then(|()| {
        crate::bootstrap::tls::set_store_tls_key(key_pem, has_password.then_some(password)).map_err(
            |source| Error::TlsArgument {
                arg: "tls_pk",
                source,
            },
        )
    });
    code(call, r)
}

fn log_error(message: &str) {
    crate::log::install(crate::env::early_log_level());
    tracing::error!("{message}");
}

fn log_set_level(level: &str) {
    crate::log::set_level(level);
}

fn wait_snooze(state: &mut WaitState) {
    let mut b = Backoff {
        spins: state.spins,
        yielding_since_ns: state.yielding_since_ns,
        nap_ns: state.nap_ns,
    };
    b.snooze();
    *state = WaitState {
        spins: b.spins,
        yielding_since_ns: b.yielding_since_ns,
        nap_ns: b.nap_ns,
    };
}

/// The accelerator of the running job, or the logged not-supported answer naming `call`.
fn accel_for(call: &str) -> Result<std::sync::Arc<dyn crate::device::Accelerator>, i32> {
    runtime::accelerator().ok_or_else(|| {
        tracing::error!(
            "{call}: not supported (code {}, ACLSHMEM_NOT_SUPPORTED): the symmetric heap is in \
             host memory; on-stream calls need the npu or cuda device (SHMEM_DEVICE)",
            crate::error::NOT_SUPPORTED
        );
        crate::error::NOT_SUPPORTED
    })
}

fn stream_copy(call: &str, dst: usize, src: usize, len: usize, stream: usize) -> i32 {
    match accel_for(call) {
        Ok(a) => code(call, a.copy_on_stream(dst, src, len, stream)),
        Err(code) => code,
    }
}

fn stream_call(call: &str, stream: usize, func: usize, arg: usize) -> i32 {
    match accel_for(call) {
        Ok(a) => {
            // SAFETY: the facade passes the address of one of its `void (*)(void *)` functions.
            let f = unsafe {
                std::mem::transmute::<usize, unsafe extern "C" fn(*mut std::ffi::c_void)>(func)
            };
            code(call, a.call_on_stream(stream, f, arg))
        }
        Err(code) => code,
    }
}

fn stream_signal32(call: &str, stream: usize, at: usize, value: u32, add: bool) -> i32 {
    use crate::device::StreamSignal;
    let op = if add {
        StreamSignal::Add
    } else {
        StreamSignal::Set
    };
    match accel_for(call) {
        Ok(a) => code(call, a.signal_on_stream(stream, at, value, op)),
        Err(code) => code,
    }
}

fn stream_wait32(call: &str, stream: usize, at: usize, value: u32, cmp: i32) -> i32 {
    let Some(cmp) = crate::device::StreamCmp::from_cann(cmp) else {
        // The facade checks `cmp` first; this is the only caller.
        let e = Error::InvalidArgument {
            call: "aclshmemx_signal_wait_until_on_stream",
            arg: "cmp",
            value: cmp.to_string(),
            reason: "not ACLSHMEM_CMP_EQ..ACLSHMEM_CMP_LE (0..5)",
        };
        return code(call, Err(e));
    };
    match accel_for(call) {
        Ok(a) => code(call, a.wait_on_stream(stream, at, value, cmp)),
        Err(code) => code,
    }
}

fn device_job_state() -> usize {
    let call = "shmemx_job_state_device";
    logged(call, runtime::device_job_state(call)).map_or(0, |at| at.unwrap_or(0))
}

fn mf_config_store_open(url: &str, why: &mut String) -> i32 {
    match crate::memfabric::config_store_open(url) {
        Ok(()) => 0,
        Err(e) => {
            *why = e.message().to_string();
            e.code()
        }
    }
}

// memfabric Big Memory: the bridge's functions over `memfabric::bm`.

/// 0 and the value, or memfabric's code with the reason in `why`.
fn mf_bm_code<T>(
    r: Result<T, crate::memfabric::bm::BmError>,
    why: &mut String,
) -> (i32, Option<T>) {
    match r {
        Ok(v) => (0, Some(v)),
        Err(e) => {
            *why = e.message;
            (e.code, None)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn mf_bm_init(
    url: &str,
    world: u32,
    device_id: u16,
    timeouts: [u32; 2],
    start_server: bool,
    auto_ranking: bool,
    rank_id: u16,
    hcom_url: &str,
    tls: [&str; 5],
    tls_enable: bool,
    plain: &mut bool,
    repeat: &mut bool,
    why: &mut String,
) -> i32 {
    use crate::memfabric::bm;
    let [ca, crl, cert, key, key_pass] = tls.map(String::from);
    let args = bm::InitArgs {
        url: url.into(),
        world,
        device_id,
        init_timeout_s: timeouts[0],
        control_timeout_s: timeouts[1],
        start_server,
        auto_ranking,
        rank_id,
        hcom_url: hcom_url.into(),
        tls: bm::TlsFiles {
            enable: tls_enable,
            ca,
            crl,
            cert,
            key,
            key_pass,
        },
    };
    let (rc, done) = mf_bm_code(bm::init(&args), why);
    match done {
        Some(bm::Inited::Now { plain: p }) => *plain = p,
        Some(bm::Inited::Already) => *repeat = true,
        None => {}
    }
    rc
}

fn mf_bm_uninit() -> bool {
    crate::memfabric::bm::uninit()
}

fn mf_bm_rank() -> u32 {
    crate::memfabric::bm::rank()
}

fn mf_bm_create(
    id: u32,
    sizes: [u64; 4],
    data_op: u32,
    flags: u32,
    shm_fd: i32,
    handle: &mut usize,
    why: &mut String,
) -> i32 {
    let [max_dram, max_hbm, local_dram, local_hbm] = sizes;
    let args = crate::memfabric::bm::CreateArgs {
        max_dram,
        max_hbm,
        local_dram,
        local_hbm,
        data_op,
        flags,
        shm_fd,
    };
    let (rc, h) = mf_bm_code(crate::memfabric::bm::create(id, &args), why);
    if let Some(h) = h {
        *handle = h;
    }
    rc
}

fn mf_bm_handle_call(what: u32, handle: usize, why: &mut String) -> i32 {
    use crate::memfabric::bm;
    let r = match what {
        0 => bm::destroy(handle),
        1 => bm::join(handle),
        2 => bm::leave(handle),
        _ => bm::wait(handle),
    };
    mf_bm_code(r, why).0
}

fn mf_bm_query(
    what: u32,
    handle: usize,
    mem_type: u32,
    arg: u64,
    out: &mut u64,
    why: &mut String,
) -> i32 {
    use crate::memfabric::bm;
    let r = match what {
        0 => bm::local_size(handle, mem_type),
        1 => bm::ptr(handle, mem_type, u32::try_from(arg).unwrap_or(u32::MAX)).map(|p| p as u64),
        _ => bm::rank_by_gva(handle, arg as usize).map(|r| u64::from(r.unwrap_or(u32::MAX))),
    };
    let (rc, v) = mf_bm_code(r, why);
    if let Some(v) = v {
        *out = v;
    }
    rc
}

#[allow(clippy::too_many_arguments)]
fn mf_bm_copy(
    handle: usize,
    srcs: &[usize],
    dests: &[usize],
    sizes: &[u64],
    t: u32,
    flags: u32,
    batch: bool,
    why: &mut String,
) -> i32 {
    let element = |i: usize| (srcs[i], dests[i], sizes[i]);
    let n = srcs.len().min(dests.len()).min(sizes.len());
    let r = if n == 1 {
        // One element (every smem_bm_copy): on the stack.
        crate::memfabric::bm::copy(handle, &[element(0)], t, flags, batch)
    } else {
        let elements: Vec<(usize, usize, u64)> = (0..n).map(element).collect();
        crate::memfabric::bm::copy(handle, &elements, t, flags, batch)
    };
    mf_bm_code(r, why).0
}

thread_local! {
    /// The reason of this thread's last failed `mf_bm_copy_one`.
    static MF_BM_COPY_WHY: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

fn mf_bm_copy_one(handle: usize, src: usize, dest: usize, size: u64, t: u32, flags: u32) -> i32 {
    match crate::memfabric::bm::copy(handle, &[(src, dest, size)], t, flags, false) {
        Ok(()) => 0,
        Err(e) => {
            MF_BM_COPY_WHY.with(|w| *w.borrow_mut() = e.message);
            e.code
        }
    }
}

fn mf_bm_copy_why(why: &mut String) {
    *why = MF_BM_COPY_WHY.with(|w| std::mem::take(&mut *w.borrow_mut()));
}

fn mf_bm_user_mem(handle: usize, add: bool, addr: u64, size: u64, why: &mut String) -> i32 {
    use crate::memfabric::bm;
    let r = if add {
        bm::register_user_mem(handle, addr, size)
    } else {
        bm::unregister_user_mem(handle, addr)
    };
    mf_bm_code(r, why).0
}

// memfabric Share Memory: the bridge's functions over `memfabric::shm`.

/// 0, or the error's code with its message in `why`.
fn mf_code(r: Result<(), shm::ShmError>, why: &mut String) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => {
            *why = e.message;
            e.code
        }
    }
}

fn mf_shm_init(
    url: &str,
    world_size: u32,
    rank: u32,
    config: &bridge::MfShmConfig,
    why: &mut String,
) -> i32 {
    let shm_config = shm::Config {
        init_timeout_s: config.init_timeout_s,
        control_timeout_s: config.control_timeout_s,
        start_store: config.start_store,
    };
    match shm::init(url, world_size, rank, config.device_id, shm_config) {
        Ok(done) => i32::from(!done),
        Err(e) => {
            *why = e.message;
            e.code
        }
    }
}

fn mf_shm_uninit() -> bool {
    shm::uninit()
}

fn mf_shm_create(
    id: u32,
    rank_size: u32,
    rank: u32,
    symmetric_size: u64,
    handle: &mut u64,
    gva: &mut usize,
    why: &mut String,
) -> i32 {
    let r = shm::create(id, rank_size, rank, symmetric_size).map(|(h, g)| {
        *handle = h;
        *gva = g;
    });
    mf_code(r, why)
}

fn mf_shm_destroy(handle: u64, why: &mut String) -> i32 {
    mf_code(shm::destroy(handle), why)
}

fn mf_shm_set_extra_context(handle: u64, context: &[u8], why: &mut String) -> i32 {
    mf_code(shm::with(handle, |o| o.set_extra_context(context)), why)
}

fn mf_shm_rank(handle: u64, rank: &mut u32, size: &mut u32, why: &mut String) -> i32 {
    let r = shm::with(handle, |o| {
        (*rank, *size) = o.rank();
        Ok(())
    });
    mf_code(r, why)
}

fn mf_shm_allgather(handle: u64, send: &[u8], recv: &mut [u8], why: &mut String) -> i32 {
    let r = shm::with(handle, |o| {
        if send.is_empty() {
            o.barrier()
        } else {
            o.allgather(send, recv)
        }
    });
    mf_code(r, why)
}

fn mf_shm_subgroup(
    handle: u64,
    key: &str,
    rank_size: u32,
    rank: u32,
    send: &[u8],
    recv: &mut [u8],
    why: &mut String,
) -> i32 {
    let r = shm::with(handle, |o| o.subgroup(key, rank_size, rank, send, recv));
    mf_code(r, why)
}

fn mf_shm_can_reach(handle: u64, remote: u32, reach: &mut u32, why: &mut String) -> i32 {
    let r = shm::with(handle, |o| o.can_reach(remote)).map(|v| *reach = v);
    mf_code(r, why)
}

fn mf_shm_atomic_alloc(handle: u64, limit: u32, value: &mut u32, why: &mut String) -> i32 {
    let r = shm::with(handle, |o| o.atomic_alloc(limit)).map(|v| *value = v);
    mf_code(r, why)
}

fn mf_shm_atomic_release(handle: u64, value: i32, why: &mut String) -> i32 {
    mf_code(shm::with(handle, |o| o.atomic_release(value)), why)
}

fn mf_shm_register_exit(handle: u64, handler: usize, why: &mut String) -> i32 {
    if handler == 0 {
        *why = "invalid argument exit=NULL".into();
        return crate::memfabric::INVALID_PARAM;
    }
    // SAFETY: libmf_smem.so passes the address of the user's `void (*)(int)`, non-null
    // (checked above); a C `int` is an `i32` on every target this library builds for.
    let f = unsafe { std::mem::transmute::<usize, extern "C" fn(i32)>(handler) };
    mf_code(shm::with(handle, |o| o.register_exit(f)), why)
}

fn mf_shm_global_exit(handle: u64, status: i32, why: &mut String) -> i32 {
    mf_code(shm::with(handle, |o| o.global_exit(status)), why)
}

fn mf_shm_meta() -> usize {
    shm::meta_block() as usize
}

fn mf_shm_meta_kernels() -> usize {
    shm::meta_for_kernels()
}

// memfabric's transfer engine: `smem_trans_*` of `libmf_smem.so` through the facade's
// `shmemi_mf_trans_*` (`cpp/src/memfabric_trans.cpp`), over `memfabric::trans`. Each returns 0
// or memfabric's code with the reason in `why`; not logged here (`libmf_smem.so` logs it to
// memfabric's logger and keeps it as the last error).
#[cxx::bridge(namespace = "shmem::core")]
mod trans_bridge {
    extern "Rust" {
        /// `smem_trans_init`: 1 initialised now, 0 initialised already (nothing changed), or
        /// memfabric's code with the reason in `why` (the npu device could not be opened).
        fn mf_trans_init(device_id: u32, why: &mut String) -> i32;
        /// `smem_trans_uninit`: false when it was not initialised.
        fn mf_trans_uninit() -> bool;
        /// `smem_trans_create`; the handle in `handle`.
        #[allow(clippy::too_many_arguments)]
        fn mf_trans_create(
            url: &str,
            unique_id: &str,
            role: u32,
            init_timeout: u32,
            start_server: bool,
            handle: &mut usize,
            why: &mut String,
        ) -> i32;
        /// `smem_trans_destroy`.
        fn mf_trans_destroy(handle: usize, why: &mut String) -> i32;
        /// `smem_trans_malloc`; the address in `addr`.
        fn mf_trans_malloc(handle: usize, size: u64, addr: &mut u64, why: &mut String) -> i32;
        /// `smem_trans_free`.
        fn mf_trans_free(handle: usize, addr: u64, why: &mut String) -> i32;
        /// `smem_trans_register_mem` (one range) and `smem_trans_batch_register_mem`.
        fn mf_trans_register(handle: usize, addrs: &[u64], sizes: &[u64], why: &mut String) -> i32;
        /// `smem_trans_deregister_mem`.
        fn mf_trans_deregister(handle: usize, addr: u64, why: &mut String) -> i32;
        /// `smem_trans_write` (`write`) and `smem_trans_read`, their batches and submits. On
        /// success `why` may hold a line for memfabric's log at warning level.
        #[allow(clippy::too_many_arguments)]
        fn mf_trans_transfer(
            handle: usize,
            write: bool,
            peer: &str,
            locals: &[usize],
            remotes: &[usize],
            sizes: &[u64],
            flags: u32,
            stream: usize,
            why: &mut String,
        ) -> i32;
    }
}

/// 0 and the value, or memfabric's code with the reason in `why`.
fn mf_trans_code<T>(
    r: Result<T, crate::memfabric::trans::TransError>,
    why: &mut String,
) -> (i32, Option<T>) {
    match r {
        Ok(v) => (0, Some(v)),
        Err(e) => {
            *why = e.message;
            (e.code, None)
        }
    }
}

fn mf_trans_init(device_id: u32, why: &mut String) -> i32 {
    match mf_trans_code(crate::memfabric::trans::init(device_id), why) {
        (0, Some(now)) => i32::from(now),
        (rc, _) => rc,
    }
}

fn mf_trans_uninit() -> bool {
    crate::memfabric::trans::uninit()
}

fn mf_trans_create(
    url: &str,
    unique_id: &str,
    role: u32,
    init_timeout: u32,
    start_server: bool,
    handle: &mut usize,
    why: &mut String,
) -> i32 {
    let r = crate::memfabric::trans::create(url, unique_id, role, init_timeout, start_server);
    let (rc, h) = mf_trans_code(r, why);
    if let Some(h) = h {
        *handle = h;
    }
    rc
}

fn mf_trans_destroy(handle: usize, why: &mut String) -> i32 {
    mf_trans_code(crate::memfabric::trans::destroy(handle), why).0
}

fn mf_trans_malloc(handle: usize, size: u64, addr: &mut u64, why: &mut String) -> i32 {
    let r = crate::memfabric::trans::with(handle, |e| e.malloc(size));
    let (rc, a) = mf_trans_code(r, why);
    if let Some(a) = a {
        *addr = a;
    }
    rc
}

fn mf_trans_free(handle: usize, addr: u64, why: &mut String) -> i32 {
    mf_trans_code(crate::memfabric::trans::with(handle, |e| e.free(addr)), why).0
}

fn mf_trans_register(handle: usize, addrs: &[u64], sizes: &[u64], why: &mut String) -> i32 {
    let ranges: Vec<(u64, u64)> = addrs.iter().copied().zip(sizes.iter().copied()).collect();
    mf_trans_code(
        crate::memfabric::trans::with(handle, |e| e.register(&ranges)),
        why,
    )
    .0
}

fn mf_trans_deregister(handle: usize, addr: u64, why: &mut String) -> i32 {
    mf_trans_code(
        crate::memfabric::trans::with(handle, |e| e.deregister(addr)),
        why,
    )
    .0
}

#[allow(clippy::too_many_arguments)]
fn mf_trans_transfer(
    handle: usize,
    write: bool,
    peer: &str,
    locals: &[usize],
    remotes: &[usize],
    sizes: &[u64],
    flags: u32,
    stream: usize,
    why: &mut String,
) -> i32 {
    let n = locals.len().min(remotes.len()).min(sizes.len());
    let t = crate::memfabric::trans::Transfer {
        write,
        peer,
        locals: &locals[..n],
        remotes: &remotes[..n],
        sizes: &sizes[..n],
        flags,
        stream,
    };
    let rc = mf_trans_code(
        crate::memfabric::trans::with(handle, |e| e.transfer(&t)),
        why,
    )
    .0;
    if rc == 0 {
        if let Some(note) = crate::memfabric::trans::take_note() {
            *why = note;
        }
    }
    rc
}
