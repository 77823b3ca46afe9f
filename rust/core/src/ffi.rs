//! The cxx bridge: the only door between the C++ facade and the runtime. Every function here
//! logs the error it returns (once, as one line), so the facade only decides what the public
//! routine returns or whether the job must end.

use crate::error::Error;
use crate::runtime;

#[cxx::bridge(namespace = "shmem::core")]
mod bridge {
    /// What the facade needs to run the data path without calling back into the runtime.
    struct Topology {
        my_pe: i32,
        n_pes: i32,
        /// Usable bytes of each PE's user heap.
        heap_size: usize,
        /// Address of every PE's user heap as mapped in this process, indexed by PE.
        heap_bases: Vec<usize>,
        /// The executable's symmetric static data (.data/.bss past RELRO) in this process:
        /// start and length; 0/0 when the executable has no such range.
        data_base: usize,
        data_size: usize,
        /// Where every PE's static data is mapped in this process, indexed by PE; empty when
        /// static data is not symmetric in this job (then `data_off_reason` says why).
        data_bases: Vec<usize>,
        /// Why a global or static variable cannot be a target, for the error message.
        data_off_reason: String,
        /// Bytes of each heap file before the user heap (the runtime's reserved words).
        reserved: usize,
        /// Offset in the reserved bytes of team slot 0's synchronisation area; slot s is at
        /// `team_areas + s * team_area_size`.
        team_areas: usize,
        team_area_size: usize,
        /// Team slots per PE.
        team_slots: usize,
        /// True when barriers should take the central shape (more PEs than cores, or
        /// `SHMEM_BARRIER=central`); the team barriers follow the same choice.
        central_barrier: bool,
    }

    /// Progress of one wait in the facade (see `sync::wait::Backoff`); start from zeros.
    struct WaitState {
        spins: u32,
        yielding_since_ns: u64,
        nap_ns: u64,
    }

    extern "Rust" {
        /// Starts the library on this PE (collective).
        fn init() -> Result<Topology>;
        /// Ends the library on this PE (collective).
        fn finalize() -> Result<()>;
        /// Ends the whole job with `status`; does not return.
        fn global_exit(status: i32);
        /// Barrier over all PEs (no completion of puts; the caller fences first if needed).
        fn sync_all() -> Result<()>;
        /// Collective symmetric allocation; returns the local address.
        fn heap_alloc(call: &str, len: usize, align: usize, zero: bool) -> Result<usize>;
        /// Collective free of a block from `heap_alloc`.
        fn heap_free(call: &str, addr: usize) -> Result<()>;
        /// Collective resize of a block from `heap_alloc`; returns the new local address.
        fn heap_realloc(call: &str, addr: usize, len: usize) -> Result<usize>;
        /// Waits a little, by the library's one waiting policy, before the facade checks its
        /// condition again.
        fn wait_snooze(state: &mut WaitState);
        /// Logs one error line (for errors the facade detects itself).
        fn log_error(message: &str);
        /// Makes global and static variables symmetric; called once by libshmem's constructor,
        /// before `main`. Never fails: a failure becomes the reason static targets are refused.
        fn static_data_prepare();
        /// TLS of a TCP store, before init: off (`enable` false), or on with the user's
        /// certificates described by CANN's TLS info string. Fails after init or on a bad
        /// string (logged, naming `call`).
        fn tls_set_store(call: &str, enable: bool, info: &str) -> Result<()>;
        /// The user's private key (PEM, possibly encrypted PKCS#8) and its password, before
        /// init. Fails after init (logged, naming `call`).
        fn tls_set_key(
            call: &str,
            key_pem: &[u8],
            password: &[u8],
            has_password: bool,
        ) -> Result<()>;
    }
}

use crate::sync::wait::Backoff;
use bridge::{Topology, WaitState};

/// Logs an error as `call: message` (once; messages that already name a routine keep theirs).
fn logged<T>(call: &str, r: Result<T, Error>) -> Result<T, Error> {
    if let Err(e) = &r {
        let msg = e.to_string();
        if msg.starts_with("shmem_") {
            tracing::error!("{msg}");
        } else {
            tracing::error!("{call}: {msg}");
        }
    }
    r
}

fn init() -> Result<Topology, Error> {
    logged(
        "shmem_init",
        runtime::init().map(|rt| Topology {
            my_pe: rt.my_pe as i32,
            n_pes: rt.n_pes as i32,
            heap_size: rt.heap.size(),
            heap_bases: (0..rt.n_pes).map(|pe| rt.heap.user_base(pe)).collect(),
            data_base: rt.static_data.base,
            data_size: rt.static_data.size,
            data_bases: rt.static_data.bases.clone(),
            data_off_reason: rt.static_data.off_reason.clone(),
            reserved: crate::heap::RESERVED,
            team_areas: crate::heap::TEAM_AREAS,
            team_area_size: crate::heap::TEAM_AREA_SIZE,
            team_slots: crate::heap::TEAM_SLOTS,
            central_barrier: rt.central_barrier(),
        }),
    )
}

fn finalize() -> Result<(), Error> {
    logged("shmem_finalize", runtime::finalize())
}

fn global_exit(status: i32) {
    runtime::global_exit(status)
}

fn sync_all() -> Result<(), Error> {
    logged(
        "shmem_sync_all",
        runtime::get("shmem_sync_all").map(|rt| rt.sync_all()),
    )
}

/// An allocation sequence that differs between PEs (found under `SHMEM_DEBUG`) means every
/// later symmetric address may be wrong: the job ends here rather than corrupt data.
fn end_job_on_mismatch<T>(r: Result<T, Error>) -> Result<T, Error> {
    if let Err(Error::Mismatch { .. }) = &r {
        runtime::global_exit(1);
    }
    r
}

fn heap_alloc(call: &str, len: usize, align: usize, zero: bool) -> Result<usize, Error> {
    end_job_on_mismatch(logged(
        call,
        runtime::get("shmem_malloc").and_then(|rt| rt.alloc(call, len, align, zero)),
    ))
}

fn heap_free(call: &str, addr: usize) -> Result<(), Error> {
    end_job_on_mismatch(logged(
        call,
        runtime::get("shmem_free").and_then(|rt| rt.free(call, addr)),
    ))
}

fn heap_realloc(call: &str, addr: usize, len: usize) -> Result<usize, Error> {
    end_job_on_mismatch(logged(
        call,
        runtime::get("shmem_realloc").and_then(|rt| rt.realloc(call, addr, len)),
    ))
}

fn static_data_prepare() {
    crate::static_data::prepare()
}

/// The TLS settings may change only before init.
fn before_init() -> Result<(), Error> {
    if runtime::is_running() {
        return Err(Error::Launch(
            "called after shmem_init; the store's TLS settings are fixed once the library is \
             initialized"
                .into(),
        ));
    }
    Ok(())
}

fn tls_set_store(call: &str, enable: bool, info: &str) -> Result<(), Error> {
    crate::log::install(crate::env::early_log_level());
    let r = before_init().and_then(|()| {
        crate::bootstrap::tls::set_store_tls(enable, enable.then_some(info))
            .map_err(|why| Error::Launch(format!("invalid argument tls_info: {why}")))
    });
    if r.is_ok() && !enable {
        tracing::debug!("{call}: TLS of a TCP store turned off");
    }
    logged(call, r)
}

fn tls_set_key(
    call: &str,
    key_pem: &[u8],
    password: &[u8],
    has_password: bool,
) -> Result<(), Error> {
    crate::log::install(crate::env::early_log_level());
    let r = before_init().and_then(|()| {
        crate::bootstrap::tls::set_store_tls_key(key_pem, has_password.then_some(password))
            .map_err(|why| Error::Launch(format!("invalid argument tls_pk: {why}")))
    });
    logged(call, r)
}

fn log_error(message: &str) {
    crate::log::install(crate::env::early_log_level());
    tracing::error!("{message}");
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
