//! The launcher's own key-value service, for what PEs must agree on before they can reach PE
//! 0's store: PMI-1 over the socket in `PMI_FD` (MPICH's Hydra, [`pmi1`](crate::bootstrap::launcher::pmi1)), or
//! PMIx, its client library loaded at run time (Open MPI 4's `mpirun`, Slurm,
//! [`pmix`](crate::bootstrap::launcher::pmix)). `SHMEM_BOOTSTRAP_KVS=auto|pmix|pmi1|off` picks one.
//!
//! Owns the choice of service ([`detect_in`]), opening it for the detected launcher ([`open`]),
//! the [`Kvs`] operations (put this PE's key, commit and fence, get a peer's key, finalize),
//! and what goes through it ([`through`]): the job id where the launcher gives none
//! ([`share_job_id`]; PE 0 makes a random one), and PE 0's store as a unique id for a job on
//! several nodes ([`share_store`]). Must never be used once the job's own
//! store is up (every call is a round trip to the launcher), never be opened twice in one
//! process (`PMI_FD` serves one client), and never wait past the caller's timeout.

use std::time::Duration;

use crate::bootstrap::launcher::launch::{self, Env};
use crate::bootstrap::launcher::pmi1::Pmi1;
use crate::bootstrap::launcher::pmix::Pmix;
use crate::bootstrap::launcher::uniqueid::{self, UniqueId};
use crate::error::{Error, LaunchError, Result};

/// Key under which PE 0 publishes the job id it made.
const JOB_ID_KEY: &str = "shmem.job_id";
/// Key under which PE 0 publishes its store's address.
const STORE_KEY: &str = "shmem.store";
/// Longest job id taken from PE 0.
const MAX_JOB_ID: usize = 64;
/// `PMIX_SERVER_URI*` variables some PMIx server sets (one per protocol version it speaks).
const PMIX_URIS: [&str; 6] = [
    "PMIX_SERVER_URI4",
    "PMIX_SERVER_URI41",
    "PMIX_SERVER_URI3",
    "PMIX_SERVER_URI21",
    "PMIX_SERVER_URI2",
    "PMIX_SERVER_URI",
];

/// `SHMEM_BOOTSTRAP_KVS`: which service to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice {
    /// PMI-1 when `PMI_FD` is set, else PMIx when a PMIx server is named and its library
    /// loads, else none; only used when the launcher gives no job id.
    Auto,
    /// PMIx, or a clear error; gives the job id even where the launcher has one.
    Pmix,
    /// PMI-1 over `PMI_FD`, or a clear error; gives the job id even where the launcher has one.
    Pmi1,
    /// None.
    Off,
}

impl Choice {
    /// The word of `SHMEM_BOOTSTRAP_KVS` (one of `env`'s list, lower case).
    pub fn from_word(word: &str) -> Choice {
        match word {
            "pmix" => Choice::Pmix,
            "pmi1" => Choice::Pmi1,
            "off" => Choice::Off,
            _ => Choice::Auto,
        }
    }

    /// The user named a service.
    pub fn explicit(self) -> bool {
        matches!(self, Choice::Pmix | Choice::Pmi1)
    }

    fn word(self) -> &'static str {
        match self {
            Choice::Auto => "auto",
            Choice::Pmix => "pmix",
            Choice::Pmi1 => "pmi1",
            Choice::Off => "off",
        }
    }
}

/// A service the environment names, not opened yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Service {
    /// PMI-1 over the inherited socket `fd` (`PMI_FD`).
    Pmi1 {
        /// The descriptor number.
        fd: i32,
    },
    /// The PMIx server named by `PMIX_*` variables.
    Pmix,
}

/// What a job takes through the launcher's key-value service at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FromKvs {
    /// The job id ([`share_job_id`]): the launcher gives none, or `SHMEM_BOOTSTRAP_KVS` names
    /// the service.
    JobId(Service),
    /// PE 0's store as a unique id ([`share_store`]): the job spans nodes and has no
    /// `SHMEM_BOOTSTRAP_ADDR`.
    Store(Service),
}

/// The launcher's key-value service, opened. Keys are per PE: each PE puts its own, and reads
/// a peer's after a fence.
pub(crate) trait Kvs: std::fmt::Debug + Send {
    /// The service, for messages ("PMI-1 server at PMI_FD=5", "PMIx").
    fn service(&self) -> String;
    /// Stores `value` under this PE's `key`; the others see it after the next [`Kvs::fence`].
    fn put(&mut self, key: &str, value: &[u8], timeout: Duration) -> Result<()>;
    /// Commits this PE's puts and waits for every PE of the job to get here (collective).
    fn fence(&mut self, timeout: Duration) -> Result<()>;
    /// The value PE `rank` put under `key` before the last fence; waits at most `timeout`.
    fn get(&mut self, rank: u32, key: &str, timeout: Duration) -> Result<Vec<u8>>;
    /// Ends this PE's use of the service.
    fn finalize(&mut self, timeout: Duration) -> Result<()>;
}

impl Kvs for Pmi1 {
    fn service(&self) -> String {
        self.label().to_string()
    }
    fn put(&mut self, key: &str, value: &[u8], timeout: Duration) -> Result<()> {
        Pmi1::put(self, key, value, timeout)
    }
    fn fence(&mut self, timeout: Duration) -> Result<()> {
        self.barrier(timeout)
    }
    fn get(&mut self, rank: u32, key: &str, timeout: Duration) -> Result<Vec<u8>> {
        Pmi1::get(self, rank, key, timeout)
    }
    fn finalize(&mut self, timeout: Duration) -> Result<()> {
        Pmi1::finalize(self, timeout)
    }
}

impl Kvs for Pmix {
    fn service(&self) -> String {
        "PMIx".into()
    }
    fn put(&mut self, key: &str, value: &[u8], timeout: Duration) -> Result<()> {
        Pmix::put(self, key, value, timeout)
    }
    fn fence(&mut self, timeout: Duration) -> Result<()> {
        Pmix::fence(self, timeout)
    }
    fn get(&mut self, rank: u32, key: &str, timeout: Duration) -> Result<Vec<u8>> {
        Pmix::get(self, rank, key, timeout)
    }
    fn finalize(&mut self, timeout: Duration) -> Result<()> {
        Pmix::finalize(self, timeout)
    }
}

/// The service `choice` selects in the environment `env`. `pmix_loads` says whether the PMIx
/// library loads (asked only for `auto` with a PMIx server named). `Ok(None)`: none (`off`,
/// or `auto` finding none); an explicit choice that cannot be had is an error naming
/// `SHMEM_BOOTSTRAP_KVS` and why.
pub(crate) fn detect_in(
    env: Env<'_>,
    choice: Choice,
    pmix_loads: &dyn Fn() -> bool,
) -> Result<Option<Service>> {
    let refused = |reason: String| Error::BadEnv {
        name: crate::env::BOOTSTRAP_KVS,
        value: choice.word().into(),
        reason,
    };
    let pmi_fd = || -> Result<Option<Service>> {
        let Some(raw) = env("PMI_FD") else {
            return Ok(None);
        };
        let fd = raw
            .parse::<i32>()
            .ok()
            .filter(|fd| *fd >= 0)
            .ok_or_else(|| Error::BadEnv {
                name: "PMI_FD",
                value: raw.clone(),
                reason: "not a descriptor number (set by the PMI-1 launcher, e.g. Hydra's mpiexec)"
                    .into(),
            })?;
        Ok(Some(Service::Pmi1 { fd }))
    };
    let pmix_named = (env("PMIX_NAMESPACE").is_some() && env("PMIX_RANK").is_some())
        || PMIX_URIS.iter().any(|v| env(v).is_some());
    match choice {
        Choice::Off => Ok(None),
        Choice::Pmi1 => pmi_fd()?.map(Some).ok_or_else(|| {
            refused(
                "PMI_FD is not set: no PMI-1 server (such as MPICH's Hydra mpiexec) started \
                 this process"
                    .into(),
            )
        }),
        Choice::Pmix if pmix_named => Ok(Some(Service::Pmix)),
        Choice::Pmix => Err(refused(
            "no PMIx server started this process (neither PMIX_NAMESPACE with PMIX_RANK nor \
             PMIX_SERVER_URI* is set)"
                .into(),
        )),
        Choice::Auto => {
            if let Some(service) = pmi_fd()? {
                return Ok(Some(service));
            }
            Ok((pmix_named && pmix_loads()).then_some(Service::Pmix))
        }
    }
}

/// Opens `service` for PE `my_pe` of `n_pes` (the launcher's numbers, which the service must
/// agree with), bounded by `timeout`. `pmix_lib` is `SHMEM_PMIX_LIB`. Takes `PMI_FD` over
/// (close-on-exec), so call it once per process.
pub(crate) fn open(
    service: &Service,
    pmix_lib: Option<&str>,
    my_pe: u32,
    n_pes: u32,
    timeout: Duration,
) -> Result<Box<dyn Kvs>> {
    Ok(match service {
        Service::Pmi1 { fd } => {
            let socket = launch::take_inherited(*fd, "PMI_FD")?;
            Box::new(Pmi1::connect(
                socket,
                format!("PMI-1 server at PMI_FD={fd}"),
                my_pe,
                timeout,
            )?)
        }
        Service::Pmix => Box::new(Pmix::connect(pmix_lib, my_pe, n_pes, timeout)?),
    })
}

/// PE 0: puts `value` under `key` and joins the fence after which the others read it.
pub(crate) fn publish(kvs: &mut dyn Kvs, key: &str, value: &[u8], timeout: Duration) -> Result<()> {
    kvs.put(key, value, timeout)?;
    fence_all(kvs, timeout)
}

/// PEs other than 0: joins the fence of [`publish`], then reads PE 0's `key`.
pub(crate) fn lookup(kvs: &mut dyn Kvs, key: &str, timeout: Duration) -> Result<Vec<u8>> {
    fence_all(kvs, timeout)?;
    kvs.get(0, key, timeout)
}

/// The service's fence, which every PE of the job reaches from `shmem_init`. One that fails
/// once the whole `timeout` has passed says so in terms of PEs: the service does not say which
/// PE is missing, only that not all came.
fn fence_all(kvs: &mut dyn Kvs, timeout: Duration) -> Result<()> {
    let started = std::time::Instant::now();
    kvs.fence(timeout).map_err(|e| {
        if started.elapsed() < timeout {
            return e;
        }
        Error::Timeout {
            step: format!(
                "not every PE reached shmem_init's fence at the launcher's {}",
                kvs.service()
            ),
            after: timeout,
            bound: "the start-up timeout, SHMEM_INIT_TIMEOUT".into(),
            why: format!(": a PE has not called shmem_init, or is stuck or died before it ({e})"),
        }
    })
}

/// What PE 0 publishes in place of a value it could not make, before its reason: the others
/// then stop with that reason instead of waiting out the timeout.
const FAILED: &[u8] = b"\0failed: ";
/// Longest reason PE 0 publishes after [`FAILED`].
const MAX_FAILURE: usize = 240;

/// Collective: PE 0 makes a value with `make` and publishes it under `key`; every PE returns
/// it (PE 0 too). When `make` fails, PE 0 publishes why, and every PE fails saying it.
fn share(
    kvs: &mut dyn Kvs,
    my_pe: u32,
    key: &str,
    make: impl FnOnce() -> Result<Vec<u8>>,
    timeout: Duration,
) -> Result<Vec<u8>> {
    if my_pe == 0 {
        return match make() {
            Ok(value) => publish(kvs, key, &value, timeout).map(|()| value),
            Err(e) => {
                // Short enough for any service's value limit (Hydra's: 1024 bytes, hex).
                let mut text = e.to_string();
                while text.len() > MAX_FAILURE {
                    text.pop();
                }
                let why = [FAILED, text.as_bytes()].concat();
                // The others are told at best; PE 0's own error is the one to report.
                let _ = publish(kvs, key, &why, timeout);
                Err(e)
            }
        };
    }
    let value = lookup(kvs, key, timeout)?;
    match value.strip_prefix(FAILED) {
        Some(why) => Err(Error::Launch(LaunchError::Pe0Failed {
            key: key.to_string(),
            service: kvs.service().to_string(),
            why: String::from_utf8_lossy(why).into_owned(),
        })),
        None => Ok(value),
    }
}

/// The job id through `kvs`: PE 0 makes a random one and publishes it, the others read it.
pub(crate) fn share_job_id(kvs: &mut dyn Kvs, my_pe: u32, timeout: Duration) -> Result<String> {
    let make = || random_job_id().map(String::into_bytes);
    match String::from_utf8(share(kvs, my_pe, JOB_ID_KEY, make, timeout)?) {
        Ok(id)
            if !id.is_empty()
                && id.len() <= MAX_JOB_ID
                && id.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            tracing::debug!("job id {id} through the launcher's {}", kvs.service());
            Ok(id)
        }
        other => Err(Error::Launch(LaunchError::ForeignBuild {
            what: format!(
                "{}: PE 0's job id is not one this library makes: {other:?}",
                kvs.service()
            ),
            who: "PE 0",
        })),
    }
}

/// PE 0's store through `kvs`: PE 0 makes a unique id (binding its store's listening socket at
/// the address `shmem_get_uniqueid` would pick, with `port_range`) and publishes it, the others
/// read it.
pub(crate) fn share_store(
    kvs: &mut dyn Kvs,
    my_pe: u32,
    port_range: Option<(u16, u16)>,
    timeout: Duration,
) -> Result<UniqueId> {
    let make = || uniqueid::create(port_range).map(|id| id.encode().to_vec());
    let bytes = share(kvs, my_pe, STORE_KEY, make, timeout)?;
    let id = UniqueId::decode(&bytes).map_err(|why| {
        Error::Launch(LaunchError::ForeignBuild {
            what: format!(
                "{}: PE 0's store address is not one this library makes: {why}",
                kvs.service()
            ),
            who: "PE 0",
        })
    })?;
    tracing::debug!(
        "PE 0's store at {} through the launcher's {}",
        id.addr,
        kvs.service()
    );
    Ok(id)
}

/// Opens `service` for PE `my_pe` of `n_pes`, runs `step` on it and finalizes it (also when
/// `step` failed): the whole of a job's use of the service, before it meets at PE 0's store.
pub(crate) fn through<T>(
    service: &Service,
    pmix_lib: Option<&str>,
    (my_pe, n_pes): (u32, u32),
    timeout: Duration,
    step: impl FnOnce(&mut dyn Kvs) -> Result<T>,
) -> Result<T> {
    let mut kvs = open(service, pmix_lib, my_pe, n_pes, timeout)?;
    let got = step(kvs.as_mut());
    let finalized = kvs.finalize(timeout);
    let got = got?;
    finalized?;
    Ok(got)
}

/// `kvs-` and 128 random bits in hex: unique on the node, the same length everywhere.
fn random_job_id() -> Result<String> {
    let bits = crate::bootstrap::bits::random_bits("the job id")?;
    Ok(format!("kvs-{}", crate::bootstrap::bits::hex(&bits)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::{Arc, Barrier, Mutex};

    fn detect_with(vars: &[(&str, &str)], choice: Choice, loads: bool) -> Result<Option<Service>> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        detect_in(&|n| map.get(n).cloned(), choice, &|| loads)
    }

    #[test]
    fn choices() {
        for word in ["auto", "pmix", "pmi1", "off"] {
            assert_eq!(Choice::from_word(word).word(), word);
        }
        let pmi = [("PMI_FD", "5")];
        let pmix = [("PMIX_NAMESPACE", "1234"), ("PMIX_RANK", "0")];
        let both = [("PMI_FD", "5"), ("PMIX_SERVER_URI41", "x")];
        assert_eq!(
            detect_with(&pmi, Choice::Auto, true).unwrap(),
            Some(Service::Pmi1 { fd: 5 })
        );
        assert_eq!(
            detect_with(&both, Choice::Auto, true).unwrap(),
            Some(Service::Pmi1 { fd: 5 })
        );
        assert_eq!(
            detect_with(&both, Choice::Pmix, false).unwrap(),
            Some(Service::Pmix)
        );
        assert_eq!(
            detect_with(&pmix, Choice::Auto, true).unwrap(),
            Some(Service::Pmix)
        );
        // The library does not load: no service under auto.
        assert_eq!(detect_with(&pmix, Choice::Auto, false).unwrap(), None);
        assert_eq!(
            detect_with(&[("PMIX_RANK", "0")], Choice::Auto, true).unwrap(),
            None
        );
        assert_eq!(detect_with(&both, Choice::Off, true).unwrap(), None);
        assert_eq!(detect_with(&[], Choice::Auto, true).unwrap(), None);
    }

    #[test]
    fn an_explicit_choice_that_cannot_be_had_says_why() {
        let msg = detect_with(&[], Choice::Pmi1, true)
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("environment variable SHMEM_BOOTSTRAP_KVS=\"pmi1\": PMI_FD is not set"),
            "{msg}"
        );
        let msg = detect_with(&[("PMI_FD", "5")], Choice::Pmix, true)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("SHMEM_BOOTSTRAP_KVS=\"pmix\": no PMIx server"),
            "{msg}"
        );
        let msg = detect_with(&[("PMI_FD", "x")], Choice::Auto, true)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("PMI_FD=\"x\": not a descriptor number"),
            "{msg}"
        );
    }

    /// Every PE's puts, by (rank, key).
    type Puts = Mutex<HashMap<(u32, String), Vec<u8>>>;

    /// Every PE's puts in one map; fences on a barrier.
    #[derive(Debug)]
    struct Fake {
        rank: u32,
        shared: Arc<(Puts, Barrier)>,
    }

    impl Kvs for Fake {
        fn service(&self) -> String {
            "fake".into()
        }
        fn put(&mut self, key: &str, value: &[u8], _: Duration) -> Result<()> {
            self.shared
                .0
                .lock()
                .unwrap()
                .insert((self.rank, key.into()), value.to_vec());
            Ok(())
        }
        fn fence(&mut self, _: Duration) -> Result<()> {
            self.shared.1.wait();
            Ok(())
        }
        fn get(&mut self, rank: u32, key: &str, _: Duration) -> Result<Vec<u8>> {
            let map = self.shared.0.lock().unwrap();
            map.get(&(rank, key.to_string())).cloned().ok_or_else(|| {
                Error::Launch(LaunchError::Service {
                    service: "fake",
                    what: format!("no key {key} of rank {rank}"),
                })
            })
        }
        fn finalize(&mut self, _: Duration) -> Result<()> {
            Ok(())
        }
    }

    fn job(n: u32) -> Vec<Fake> {
        let shared = Arc::new((Mutex::new(HashMap::new()), Barrier::new(n as usize)));
        (0..n)
            .map(|rank| Fake {
                rank,
                shared: shared.clone(),
            })
            .collect()
    }

    const T: Duration = Duration::from_secs(5);

    #[test]
    fn every_pe_gets_pe0s_job_id_and_store() {
        let handles: Vec<_> = job(4)
            .into_iter()
            .map(|mut kvs| {
                std::thread::spawn(move || {
                    let rank = kvs.rank;
                    let id = share_job_id(&mut kvs, rank, T).unwrap();
                    let store = share_store(&mut kvs, rank, None, T).unwrap();
                    (id, store.encode())
                })
            })
            .collect();
        let got: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let id = &got[0].0;
        assert!(id.starts_with("kvs-") && id.len() == 36, "{id}");
        for (their_id, store) in &got {
            assert_eq!(their_id, id);
            assert_eq!(store, &got[0].1);
        }
        assert_ne!(random_job_id().unwrap(), random_job_id().unwrap());
        uniqueid::release_all();
    }

    #[test]
    fn pe0s_failure_reaches_the_others_at_once() {
        let mut pes = job(2);
        let mut pe1 = pes.pop().unwrap();
        let mut pe0 = pes.pop().unwrap();
        let make = || {
            Err(Error::Launch(LaunchError::Service {
                service: "fake",
                what: "no address to listen at".into(),
            }))
        };
        let t = std::thread::spawn(move || share(&mut pe0, 0, STORE_KEY, make, T));
        let msg = share(&mut pe1, 1, STORE_KEY, || unreachable!(), T)
            .unwrap_err()
            .to_string();
        let own = t.join().unwrap().unwrap_err().to_string();
        assert!(own.contains("no address to listen at"), "{own}");
        assert!(
            msg.contains(
                "PE 0 could not start the job (shmem.store through the launcher's fake): "
            ) && msg.ends_with("no address to listen at"),
            "{msg}"
        );
    }

    /// A service whose fence never completes: some PE never came.
    #[derive(Debug)]
    struct NobodyElseCame;

    impl Kvs for NobodyElseCame {
        fn service(&self) -> String {
            "fake".into()
        }
        fn put(&mut self, _: &str, _: &[u8], _: Duration) -> Result<()> {
            Ok(())
        }
        fn fence(&mut self, timeout: Duration) -> Result<()> {
            std::thread::sleep(timeout);
            Err(Error::Launch(LaunchError::Service {
                service: "fake",
                what: "fence: timed out".into(),
            }))
        }
        fn get(&mut self, _: u32, _: &str, _: Duration) -> Result<Vec<u8>> {
            unreachable!("read only after a fence")
        }
        fn finalize(&mut self, _: Duration) -> Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_fence_that_times_out_says_a_pe_did_not_come() {
        let t = Duration::from_millis(50);
        for pe in [0, 1] {
            let msg = share_job_id(&mut NobodyElseCame, pe, t)
                .unwrap_err()
                .to_string();
            assert!(
                msg.starts_with(
                    "not every PE reached shmem_init's fence at the launcher's fake within 0.1 s"
                ) && msg.contains("a PE has not called shmem_init")
                    && msg.ends_with("(fence: timed out)"),
                "{msg}"
            );
        }
    }

    #[test]
    fn a_strange_job_id_from_pe0_is_refused() {
        let mut pes = job(2);
        let mut pe1 = pes.pop().unwrap();
        let mut pe0 = pes.pop().unwrap();
        let t = std::thread::spawn(move || publish(&mut pe0, JOB_ID_KEY, b"a b", T));
        let msg = share_job_id(&mut pe1, 1, T).unwrap_err().to_string();
        t.join().unwrap().unwrap();
        assert!(
            msg.contains("fake: PE 0's job id is not one this library makes"),
            "{msg}"
        );
    }
}
