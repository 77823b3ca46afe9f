//! Which launcher started this process and what it says about the job, read from the
//! environment in one documented order: `shmemrun`, Open MPI `mpirun`, MPICH/Hydra, Slurm,
//! torchrun, then none (a 1-PE job). The first launcher whose rank variable is set wins.
//!
//! Owns the reading of every launcher's variables (rank, size, PEs or nodes of the job, job id,
//! where the store is, which key-value service it offers: `kvs`) and the refusal of jobs this
//! build cannot bootstrap: PEs on several nodes with no store address they can all reach, or no
//! job id to meet under (the launcher gives none, nor `SHMEM_JOB_ID`, nor a key-value service
//! to take one from). Must never connect anywhere or start anything: `kvs`, `node` and the
//! store client do.

use crate::bootstrap::launcher::kvs::{self, Choice, FromKvs};
use crate::bootstrap::store::addr::StoreAddr;
use crate::error::{Error, LaunchError, Result};
use rustix::fd::{FromRawFd, OwnedFd};
use shmem_base::log;

/// How this PE joins its job.
#[derive(Debug)]
pub(crate) enum Launch {
    /// No launcher, or a launcher's job of one PE: no store at all.
    Alone,
    /// `shmemrun`: the store is the launcher's, reached through an inherited socket.
    Shmemrun {
        /// This PE.
        my_pe: u32,
        /// PEs in the job.
        n_pes: u32,
        /// The inherited socket, now owned and close-on-exec.
        socket: OwnedFd,
    },
    /// `shmemrun --store tcp://...`: the launcher's store, reached over TCP.
    ShmemrunTcp {
        /// This PE.
        my_pe: u32,
        /// PEs in the job.
        n_pes: u32,
        /// The store's address, port included (`SHMEM_RUN_STORE`).
        store: StoreAddr,
        /// The job's TLS bundle (`SHMEM_RUN_TLS_FD`), owned and close-on-exec; `None` when the
        /// launcher serves plain TCP.
        tls_bundle: Option<OwnedFd>,
        /// The launcher's job id.
        job_id: String,
    },
    /// Another launcher: PE 0 hosts the store and every PE of the node meets there (`node`).
    NodeLocal(NodeLocal),
}

impl Launch {
    /// This PE's number.
    pub fn my_pe(&self) -> u32 {
        match self {
            Launch::Alone => 0,
            Launch::Shmemrun { my_pe, .. } | Launch::ShmemrunTcp { my_pe, .. } => *my_pe,
            Launch::NodeLocal(plan) => plan.my_pe,
        }
    }

    /// Number of PEs in the job.
    pub fn n_pes(&self) -> u32 {
        match self {
            Launch::Alone => 1,
            Launch::Shmemrun { n_pes, .. } | Launch::ShmemrunTcp { n_pes, .. } => *n_pes,
            Launch::NodeLocal(plan) => plan.n_pes,
        }
    }
}

/// A job started by a launcher other than `shmemrun`, all of whose PEs are on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeLocal {
    /// The launcher, for messages ("Open MPI mpirun").
    pub launcher: &'static str,
    /// Short name of the launcher, part of the socket name ("ompi").
    pub tag: &'static str,
    /// This PE.
    pub my_pe: u32,
    /// PEs in the job (2 or more).
    pub n_pes: u32,
    /// Id shared by every PE of the job and by no other job on the node ("" when the store is
    /// on TCP and the launcher gives none: the address alone then names the job; "" until
    /// taken from `kvs`).
    pub job_id: String,
    /// What comes through the launcher's key-value service at start-up, if anything: the job
    /// id, or, for a job on several nodes with no store address, PE 0's store.
    pub kvs: Option<FromKvs>,
    /// `SHMEM_BOOTSTRAP_ADDR` (or its torchrun shorthand, resolved): PE 0 serves the store
    /// there, over TCP; `None`: at the node-local abstract socket.
    pub store: Option<StoreAddr>,
}

/// Reads one variable: `None` when unset or blank.
pub(crate) type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// This process's variable `name`, trimmed: `None` when unset or blank.
pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// One launcher's variables.
struct Launcher {
    name: &'static str,
    tag: &'static str,
    /// This process's rank; its presence means this launcher started us.
    rank: &'static str,
    size: &'static str,
    /// PEs of the job on this node (first one set counts).
    local_size: &'static [&'static str],
    /// Nodes of the job (first one set counts).
    nodes: &'static [&'static str],
    /// The launcher's own id of the job, if it gives one.
    job_id: fn(Env<'_>) -> Option<String>,
}

/// In detection order, after `shmemrun`.
static LAUNCHERS: [Launcher; 4] = [
    Launcher {
        name: "Open MPI mpirun",
        tag: "ompi",
        rank: "OMPI_COMM_WORLD_RANK",
        size: "OMPI_COMM_WORLD_SIZE",
        local_size: &["OMPI_COMM_WORLD_LOCAL_SIZE"],
        nodes: &[],
        // Open MPI 4 (ORTE) sets the first, older ORTE the second; Open MPI 5 (PRRTE) sets
        // neither, but names the job's PMIx namespace after the launcher's pid.
        job_id: |env| {
            env("OMPI_MCA_ess_base_jobid")
                .or_else(|| env("OMPI_MCA_orte_ess_jobid"))
                .or_else(|| env("PMIX_NAMESPACE"))
        },
    },
    Launcher {
        name: "MPICH/Hydra",
        tag: "pmi",
        rank: "PMI_RANK",
        size: "PMI_SIZE",
        local_size: &["MPI_LOCALNRANKS"],
        nodes: &[],
        job_id: |_| None,
    },
    Launcher {
        name: "Slurm",
        tag: "slurm",
        rank: "SLURM_PROCID",
        size: "SLURM_NTASKS",
        local_size: &[],
        nodes: &["SLURM_STEP_NUM_NODES", "SLURM_NNODES"],
        job_id: |env| {
            let job = env("SLURM_JOB_ID")?;
            Some(match env("SLURM_STEP_ID").or_else(|| env("SLURM_STEPID")) {
                Some(step) => format!("{job}.{step}"),
                None => job,
            })
        },
    },
    Launcher {
        name: "torchrun",
        tag: "torch",
        rank: "RANK",
        size: "WORLD_SIZE",
        local_size: &["LOCAL_WORLD_SIZE"],
        nodes: &[],
        // torchrun's run id defaults to "none" outside --standalone, so the store address
        // (a port bound on the master while the job runs) goes with it.
        job_id: |env| {
            let run = env("TORCHELASTIC_RUN_ID");
            let master = match (env("MASTER_ADDR"), env("MASTER_PORT")) {
                (Some(addr), Some(port)) => Some(format!("{addr}:{port}")),
                _ => None,
            };
            match (run, master) {
                (Some(run), Some(master)) => Some(format!("{run}@{master}")),
                (run, master) => run.or(master),
            }
        },
    },
];

/// What the environment says, before any descriptor is taken over.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    Alone,
    Shmemrun {
        my_pe: u32,
        n_pes: u32,
        fd: i32,
    },
    ShmemrunTcp {
        my_pe: u32,
        n_pes: u32,
        store: StoreAddr,
        tls_fd: Option<i32>,
        job_id: String,
    },
    NodeLocal(NodeLocal),
}

/// Offset from torchrun's `MASTER_PORT` of the port PE 0's store takes under
/// `SHMEM_BOOTSTRAP_ADDR=tcp` (torch's own store holds `MASTER_PORT`).
pub const TORCH_PORT_OFFSET: u16 = 1;

/// What the user said about the job, besides the launcher's variables: `SHMEM_JOB_ID`, which
/// gives or overrides the job id of launchers other than `shmemrun`; `SHMEM_BOOTSTRAP_ADDR`;
/// `SHMEM_BOOTSTRAP_KVS` and `SHMEM_PMIX_LIB`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hints<'a> {
    /// `SHMEM_JOB_ID`.
    pub job_id: Option<&'a str>,
    /// `SHMEM_BOOTSTRAP_ADDR`.
    pub store: Option<&'a str>,
    /// `SHMEM_BOOTSTRAP_KVS`.
    pub kvs: Choice,
    /// `SHMEM_PMIX_LIB`.
    pub pmix_lib: Option<&'a str>,
    /// `SHMEM_INSTANCE_PORT_RANGE`: the ports of a store address that names none.
    pub port_range: Option<(u16, u16)>,
}

impl Hints<'_> {
    /// Nothing said: what `shmemrun`'s own PEs go by.
    pub const NONE: Hints<'static> = Hints {
        job_id: None,
        store: None,
        kvs: Choice::Off,
        pmix_lib: None,
        port_range: None,
    };
}

/// This process's rank as the launcher's variables give it, before (or without) `shmem_init`:
/// the rank variable of the first launcher in detection order that set one, if it is a
/// number. Nothing else is checked; for naming the PE in messages only.
pub(crate) fn rank_hint() -> Option<u32> {
    rank_hint_in(&process_env)
}

fn rank_hint_in(env: Env<'_>) -> Option<u32> {
    std::iter::once(crate::env::RUN_RANK)
        .chain(LAUNCHERS.iter().map(|l| l.rank))
        .find_map(env)
        .and_then(|rank| rank.parse().ok())
}

/// Detects the launcher from this process's environment and the user's `hints`.
pub(crate) fn detect(hints: Hints<'_>) -> Result<Launch> {
    let pmix_loads = || crate::bootstrap::launcher::pmix::loads(hints.pmix_lib);
    Ok(match detect_in(&process_env, hints, &pmix_loads)? {
        Found::Alone => Launch::Alone,
        Found::NodeLocal(plan) => Launch::NodeLocal(plan),
        Found::Shmemrun { my_pe, n_pes, fd } => Launch::Shmemrun {
            my_pe,
            n_pes,
            socket: take_inherited(fd, crate::env::RUN_FD)?,
        },
        Found::ShmemrunTcp {
            my_pe,
            n_pes,
            store,
            tls_fd,
            job_id,
        } => Launch::ShmemrunTcp {
            my_pe,
            n_pes,
            store,
            tls_bundle: tls_fd
                .map(|fd| take_inherited(fd, crate::env::RUN_TLS_FD))
                .transpose()?,
            job_id,
        },
    })
}

/// The `shmemrun` job this process belongs to, if `shmemrun` started it (its socket or TLS
/// bundle taken over); other launchers are not looked at.
pub(crate) fn shmemrun() -> Result<Option<Launch>> {
    if std::env::var_os(crate::env::RUN_FD).is_none()
        && std::env::var_os(crate::env::RUN_STORE).is_none()
    {
        return Ok(None);
    }
    detect(Hints::NONE).map(Some)
}

/// The store address under torchrun's shorthand `tcp` / `tcp6`: MASTER_ADDR, at MASTER_PORT +
/// [`TORCH_PORT_OFFSET`].
fn torch_store(env: Env<'_>, scheme: &str) -> Result<String> {
    let (Some(host), Some(port)) = (env("MASTER_ADDR"), env("MASTER_PORT")) else {
        return Err(Error::BadEnv {
            name: crate::env::BOOTSTRAP_ADDR,
            value: scheme.into(),
            reason: "the shorthand needs torchrun's MASTER_ADDR and MASTER_PORT".into(),
        });
    };
    let port: u16 = port
        .parse()
        .ok()
        .and_then(|p: u16| p.checked_add(TORCH_PORT_OFFSET))
        .ok_or_else(|| Error::BadEnv {
            name: "MASTER_PORT",
            value: port.clone(),
            reason: format!("not a port below {}", u16::MAX - TORCH_PORT_OFFSET + 1),
        })?;
    Ok(if scheme == "tcp6" {
        format!("tcp6://[{}]:{port}", host.trim_matches(['[', ']']))
    } else {
        format!("tcp://{host}:{port}")
    })
}

/// `pmix_loads` says whether the PMIx library loads (asked only when it matters).
fn detect_in(env: Env<'_>, hints: Hints<'_>, pmix_loads: &dyn Fn() -> bool) -> Result<Found> {
    if let Some(addr) = env(crate::env::RUN_STORE) {
        let (my_pe, n_pes) =
            rank_and_size(env, crate::env::RUN_RANK, crate::env::RUN_SIZE, "shmemrun")?;
        let tls_fd = match env(crate::env::RUN_TLS_FD) {
            None => None,
            Some(_) => Some(
                i32::try_from(number(env, crate::env::RUN_TLS_FD, "shmemrun")?).map_err(|_| {
                    Error::BadEnv {
                        name: crate::env::RUN_TLS_FD,
                        value: env(crate::env::RUN_TLS_FD).unwrap_or_default(),
                        reason: "not a descriptor number".into(),
                    }
                })?,
            ),
        };
        let store = StoreAddr::parse(&addr, None).map_err(|source| Error::BadAddress {
            name: crate::env::RUN_STORE,
            value: addr.clone(),
            source: source.into(),
        })?;
        return Ok(Found::ShmemrunTcp {
            my_pe,
            n_pes,
            store,
            tls_fd,
            job_id: env(crate::env::RUN_JOBID).unwrap_or_default(),
        });
    }
    if env(crate::env::RUN_FD).is_some() {
        let fd = number(env, crate::env::RUN_FD, "shmemrun")?;
        let (my_pe, n_pes) =
            rank_and_size(env, crate::env::RUN_RANK, crate::env::RUN_SIZE, "shmemrun")?;
        let fd = i32::try_from(fd).map_err(|_| Error::BadEnv {
            name: crate::env::RUN_FD,
            value: fd.to_string(),
            reason: "not a descriptor number".into(),
        })?;
        return Ok(Found::Shmemrun { my_pe, n_pes, fd });
    }
    let Some(l) = LAUNCHERS.iter().find(|l| env(l.rank).is_some()) else {
        return Ok(Found::Alone);
    };
    let (my_pe, n_pes) = rank_and_size(env, l.rank, l.size, l.name)?;
    if n_pes == 1 {
        return Ok(Found::Alone);
    }
    let text = match hints.store {
        Some(scheme @ ("tcp" | "tcp6")) if l.tag == "torch" => Some(torch_store(env, scheme)?),
        Some(addr) => Some(addr.to_string()),
        None => None,
    };
    let store =
        match text {
            Some(text) => Some(StoreAddr::parse(&text, hints.port_range).map_err(|source| {
                Error::BadAddress {
                    name: crate::env::BOOTSTRAP_ADDR,
                    value: text.clone(),
                    source: source.into(),
                }
            })?),
            None => None,
        };
    if store.is_none() {
        if let Some(how) = several_nodes(env, l, n_pes)? {
            // PE 0 serves the store over TCP and gives its address through the service.
            if let Some(service) = kvs::detect_in(env, hints.kvs, pmix_loads)? {
                return Ok(Found::NodeLocal(NodeLocal {
                    launcher: l.name,
                    tag: l.tag,
                    my_pe,
                    n_pes,
                    job_id: String::new(),
                    kvs: Some(FromKvs::Store(service)),
                    store,
                }));
            }
            return Err(Error::Launch(LaunchError::SeveralNodesNoTransport {
                launcher: l.name,
                how,
                torch: l.tag == "torch",
            }));
        }
    }
    let (job_id, kvs) = job_id(env, l, hints, store.is_some(), pmix_loads)?;
    Ok(Found::NodeLocal(NodeLocal {
        launcher: l.name,
        tag: l.tag,
        my_pe,
        n_pes,
        job_id,
        kvs,
        store,
    }))
}

/// The job id, in this order: `SHMEM_JOB_ID`; the key-value service `SHMEM_BOOTSTRAP_KVS`
/// names; the launcher's own id; none when the store is on TCP (`tcp_store`); the service
/// `auto` finds. With none of these the job cannot meet: a refusal naming the ways out.
fn job_id(
    env: Env<'_>,
    l: &Launcher,
    hints: Hints<'_>,
    tcp_store: bool,
    pmix_loads: &dyn Fn() -> bool,
) -> Result<(String, Option<FromKvs>)> {
    if let Some(id) = hints.job_id {
        return Ok((id.to_string(), None));
    }
    if hints.kvs.explicit() {
        let service = kvs::detect_in(env, hints.kvs, pmix_loads)?;
        return Ok((String::new(), service.map(FromKvs::JobId)));
    }
    if let Some(id) = (l.job_id)(env) {
        return Ok((id, None));
    }
    // Over TCP the address names the job; the id only tells jobs on one port range apart.
    if tcp_store {
        return Ok((String::new(), None));
    }
    if let Some(service) = kvs::detect_in(env, hints.kvs, pmix_loads)? {
        return Ok((String::new(), Some(FromKvs::JobId(service))));
    }
    let why = if hints.kvs == Choice::Off {
        "SHMEM_BOOTSTRAP_KVS=off"
    } else {
        "no PMI_FD, no PMIx server with a library that loads"
    };
    Err(Error::Launch(LaunchError::NoJobId {
        launcher: l.name,
        why,
    }))
}

/// A rank and a size below which it lies. Sets the log's PE number as soon as it is known, so
/// that later refusals name it.
fn rank_and_size(
    env: Env<'_>,
    rank: &'static str,
    size: &'static str,
    launcher: &str,
) -> Result<(u32, u32)> {
    let my_pe = number(env, rank, launcher)?;
    log::set_pe(my_pe as i32);
    let n_pes = number(env, size, launcher)?;
    if n_pes == 0 || my_pe >= n_pes {
        return Err(Error::BadEnv {
            name: rank,
            value: my_pe.to_string(),
            reason: format!("not below {size}={n_pes} (set by {launcher})"),
        });
    }
    Ok((my_pe, n_pes))
}

/// Why the job is on several nodes, if it is.
fn several_nodes(env: Env<'_>, l: &Launcher, n_pes: u32) -> Result<Option<String>> {
    if let Some(var) = l.local_size.iter().copied().find(|v| env(v).is_some()) {
        let local = number(env, var, l.name)?;
        if local < n_pes {
            return Ok(Some(format!("{var}={local} < {}={n_pes}", l.size)));
        }
    }
    if let Some(var) = l.nodes.iter().copied().find(|v| env(v).is_some()) {
        let nodes = number(env, var, l.name)?;
        if nodes > 1 {
            return Ok(Some(format!("{var}={nodes}")));
        }
    }
    Ok(None)
}

fn number(env: Env<'_>, name: &'static str, launcher: &str) -> Result<u32> {
    let raw = env(name).unwrap_or_default();
    raw.parse().map_err(|_| Error::BadEnv {
        name,
        reason: if raw.is_empty() {
            format!("not set, though {launcher}'s other variables are")
        } else {
            format!("expected a non-negative whole number (set by {launcher})")
        },
        value: raw,
    })
}

/// Takes over a descriptor that the launcher (`shmemrun`, or a PMI-1 server for `PMI_FD`) left
/// open at `fd` (named by variable `var`).
pub(crate) fn take_inherited(fd: i32, var: &str) -> Result<OwnedFd> {
    rustix::io::fcntl_getfd(
        // SAFETY: only borrowed for the duration of the check.
        unsafe { rustix::fd::BorrowedFd::borrow_raw(fd) },
    )
    .map_err(|e| Error::os(format!("{var}={fd} is not an open descriptor"), e))?;
    // SAFETY: the launcher passed this descriptor to this process alone and we checked it is
    // open; init runs once per process (the runtime's state lock and phase check ensure it) and
    // takes each launcher descriptor at most once, so nothing else here takes ownership of it.
    // It is made close-on-exec so programs this PE starts do not inherit the job's control
    // connection.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    rustix::io::fcntl_setfd(&socket, rustix::io::FdFlags::CLOEXEC)
        .map_err(|e| Error::os(format!("marking {var} close-on-exec"), e))?;
    Ok(socket)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::launcher::kvs::Service;
    use std::collections::HashMap;

    fn hints<'a>(job_id: Option<&'a str>, store: Option<&'a str>) -> Hints<'a> {
        Hints {
            job_id,
            store,
            kvs: Choice::Auto,
            pmix_lib: None,
            port_range: None,
        }
    }

    /// [`detect_in`] on the variables `vars`, the PMIx library loading if `pmix_loads`.
    fn detect_with(vars: &[(&str, &str)], hints: Hints<'_>, pmix_loads: bool) -> Result<Found> {
        let map: HashMap<&str, &str> = vars.iter().copied().collect();
        detect_in(&|name| map.get(name).map(|v| v.to_string()), hints, &|| {
            pmix_loads
        })
    }

    fn found(vars: &[(&str, &str)], job_id: Option<&str>) -> Result<Found> {
        detect_with(vars, hints(job_id, None), false)
    }

    fn plan(vars: &[(&str, &str)], job_id: Option<&str>) -> NodeLocal {
        match found(vars, job_id) {
            Ok(Found::NodeLocal(plan)) => plan,
            other => panic!("not a node-local job: {other:?}"),
        }
    }

    fn refusal(vars: &[(&str, &str)], job_id: Option<&str>) -> String {
        match found(vars, job_id) {
            Err(e) => e.to_string(),
            Ok(other) => panic!("accepted: {other:?}"),
        }
    }

    #[test]
    fn rank_hint_follows_the_detection_order() {
        let hint = |vars: &[(&str, &str)]| {
            let map: std::collections::HashMap<String, String> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            rank_hint_in(&|name| map.get(name).cloned())
        };
        assert_eq!(hint(&[]), None);
        assert_eq!(hint(&[("SHMEM_RUN_RANK", "3"), ("RANK", "1")]), Some(3));
        assert_eq!(hint(&[("PMI_RANK", "2"), ("RANK", "1")]), Some(2));
        assert_eq!(hint(&[("SLURM_PROCID", "5")]), Some(5));
        assert_eq!(hint(&[("OMPI_COMM_WORLD_RANK", "x"), ("RANK", "1")]), None);
    }

    #[test]
    fn nothing_set_is_a_one_pe_job() {
        assert_eq!(found(&[], None).unwrap(), Found::Alone);
        assert_eq!(found(&[], Some("x")).unwrap(), Found::Alone);
    }

    #[test]
    fn shmemrun_comes_first() {
        let vars = [
            ("SHMEM_RUN_FD", "5"),
            ("SHMEM_RUN_RANK", "1"),
            ("SHMEM_RUN_SIZE", "4"),
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
        ];
        assert_eq!(
            found(&vars, None).unwrap(),
            Found::Shmemrun {
                my_pe: 1,
                n_pes: 4,
                fd: 5
            }
        );
    }

    #[test]
    fn open_mpi() {
        let p = plan(
            &[
                ("OMPI_COMM_WORLD_RANK", "1"),
                ("OMPI_COMM_WORLD_SIZE", "2"),
                ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
                ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
                ("OMPI_MCA_ess_base_jobid", "1327235073"),
                // Lower in the order: ignored.
                ("PMI_RANK", "0"),
                ("SLURM_PROCID", "0"),
                ("RANK", "0"),
            ],
            None,
        );
        assert_eq!(
            p,
            NodeLocal {
                launcher: "Open MPI mpirun",
                tag: "ompi",
                my_pe: 1,
                n_pes: 2,
                job_id: "1327235073".into(),
                kvs: None,
                store: None,
            }
        );
        let older = plan(
            &[
                ("OMPI_COMM_WORLD_RANK", "0"),
                ("OMPI_COMM_WORLD_SIZE", "3"),
                ("OMPI_MCA_orte_ess_jobid", "77"),
            ],
            None,
        );
        assert_eq!(older.job_id, "77");
        let prrte = plan(
            &[
                ("OMPI_COMM_WORLD_RANK", "0"),
                ("OMPI_COMM_WORLD_SIZE", "3"),
                ("PMIX_NAMESPACE", "prterun-vm-4242@1"),
            ],
            None,
        );
        assert_eq!(prrte.job_id, "prterun-vm-4242@1");
    }

    #[test]
    fn shmem_job_id_overrides() {
        let vars = [
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("OMPI_MCA_ess_base_jobid", "1"),
        ];
        assert_eq!(plan(&vars, Some("mine")).job_id, "mine");
    }

    #[test]
    fn hydra_needs_shmem_job_id() {
        let vars = [
            ("PMI_RANK", "2"),
            ("PMI_SIZE", "4"),
            ("MPI_LOCALNRANKS", "4"),
        ];
        let msg = refusal(&vars, None);
        assert!(
            msg.contains("SHMEM_JOB_ID") && msg.contains("MPICH/Hydra"),
            "{msg}"
        );
        let p = plan(&vars, Some("j1"));
        assert_eq!(
            (p.tag, p.my_pe, p.n_pes, p.job_id.as_str()),
            ("pmi", 2, 4, "j1")
        );
    }

    fn with_kvs(vars: &[(&str, &str)], kvs: Choice, pmix_loads: bool) -> Result<Found> {
        let hints = Hints {
            kvs,
            ..hints(None, None)
        };
        detect_with(vars, hints, pmix_loads)
    }

    #[test]
    fn the_job_id_comes_through_the_launchers_service() {
        let hydra = [("PMI_RANK", "1"), ("PMI_SIZE", "2"), ("PMI_FD", "6")];
        let Found::NodeLocal(p) = with_kvs(&hydra, Choice::Auto, false).unwrap() else {
            panic!("not a node-local job")
        };
        assert_eq!(
            (p.job_id.as_str(), p.kvs),
            ("", Some(FromKvs::JobId(Service::Pmi1 { fd: 6 })))
        );
        // SHMEM_JOB_ID wins over the service.
        assert_eq!(plan(&hydra, Some("j")).kvs, None);
        // Off: refused as before, saying why.
        let msg = with_kvs(&hydra, Choice::Off, true).unwrap_err().to_string();
        assert!(
            msg.contains("MPICH/Hydra gives no job id") && msg.contains("SHMEM_BOOTSTRAP_KVS=off"),
            "{msg}"
        );
        // Open MPI gives an id: auto keeps it, an explicit choice takes the service's.
        let ompi = [
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("OMPI_MCA_ess_base_jobid", "77"),
            ("PMIX_NAMESPACE", "77"),
            ("PMIX_RANK", "0"),
        ];
        let Found::NodeLocal(p) = with_kvs(&ompi, Choice::Auto, true).unwrap() else {
            panic!("not a node-local job")
        };
        assert_eq!((p.job_id.as_str(), p.kvs), ("77", None));
        let Found::NodeLocal(p) = with_kvs(&ompi, Choice::Pmix, true).unwrap() else {
            panic!("not a node-local job")
        };
        assert_eq!(
            (p.job_id.as_str(), p.kvs),
            ("", Some(FromKvs::JobId(Service::Pmix)))
        );
        // Slurm without an id, under a PMIx server whose library loads (or not).
        let slurm = [
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("PMIX_SERVER_URI41", "x"),
        ];
        let Found::NodeLocal(p) = with_kvs(&slurm, Choice::Auto, true).unwrap() else {
            panic!("not a node-local job")
        };
        assert_eq!(p.kvs, Some(FromKvs::JobId(Service::Pmix)));
        let msg = with_kvs(&slurm, Choice::Auto, false)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("Slurm gives no job id") && msg.contains("no PMI_FD"),
            "{msg}"
        );
        // An explicit choice that cannot be had.
        let msg = with_kvs(&slurm, Choice::Pmi1, true)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("SHMEM_BOOTSTRAP_KVS=\"pmi1\": PMI_FD is not set"),
            "{msg}"
        );
    }

    #[test]
    fn slurm() {
        let p = plan(
            &[
                ("SLURM_PROCID", "3"),
                ("SLURM_NTASKS", "4"),
                ("SLURM_LOCALID", "3"),
                ("SLURM_JOB_ID", "981"),
                ("SLURM_STEP_ID", "2"),
                ("SLURM_STEP_NUM_NODES", "1"),
                ("SLURM_NNODES", "3"),
            ],
            None,
        );
        assert_eq!(
            (p.tag, p.my_pe, p.n_pes, p.job_id.as_str()),
            ("slurm", 3, 4, "981.2")
        );
        let no_step = plan(
            &[
                ("SLURM_PROCID", "0"),
                ("SLURM_NTASKS", "2"),
                ("SLURM_JOB_ID", "5"),
            ],
            None,
        );
        assert_eq!(no_step.job_id, "5");
    }

    #[test]
    fn torchrun() {
        let base = [
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("LOCAL_RANK", "1"),
            ("LOCAL_WORLD_SIZE", "2"),
        ];
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut v = base.to_vec();
            v.extend_from_slice(extra);
            v
        };
        let p = plan(
            &with(&[
                ("TORCHELASTIC_RUN_ID", "none"),
                ("MASTER_ADDR", "127.0.0.1"),
                ("MASTER_PORT", "29500"),
            ]),
            None,
        );
        assert_eq!(
            (p.tag, p.job_id.as_str()),
            ("torch", "none@127.0.0.1:29500")
        );
        let p = plan(&with(&[("TORCHELASTIC_RUN_ID", "abc")]), None);
        assert_eq!(p.job_id, "abc");
        let p = plan(&with(&[("MASTER_ADDR", "h"), ("MASTER_PORT", "1")]), None);
        assert_eq!(p.job_id, "h:1");
        let msg = refusal(&with(&[("MASTER_ADDR", "h")]), None);
        assert!(
            msg.contains("SHMEM_JOB_ID") && msg.contains("torchrun"),
            "{msg}"
        );
    }

    #[test]
    fn several_nodes_meet_at_the_given_address() {
        let vars = [
            ("SLURM_PROCID", "3"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_STEP_NUM_NODES", "2"),
            ("SLURM_JOB_ID", "7"),
        ];
        match detect_with(&vars, hints(None, Some("tcp://10.0.0.1:9000")), false).unwrap() {
            Found::NodeLocal(p) => {
                assert_eq!((p.my_pe, p.n_pes), (3, 4));
                assert_eq!(
                    p.store.map(|a| a.text).as_deref(),
                    Some("tcp://10.0.0.1:9000")
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn several_nodes_without_an_address_are_refused() {
        let msg = refusal(
            &[
                ("OMPI_COMM_WORLD_RANK", "0"),
                ("OMPI_COMM_WORLD_SIZE", "4"),
                ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
                ("OMPI_MCA_ess_base_jobid", "1"),
            ],
            None,
        );
        assert!(
            msg.starts_with(
                "PEs span several nodes (OMPI_COMM_WORLD_LOCAL_SIZE=2 < OMPI_COMM_WORLD_SIZE=4"
            ) && msg.contains("set SHMEM_BOOTSTRAP_ADDR=tcp://HOST:PORT"),
            "{msg}"
        );
        let msg = refusal(
            &[
                ("SLURM_PROCID", "0"),
                ("SLURM_NTASKS", "4"),
                ("SLURM_NNODES", "2"),
                ("SLURM_JOB_ID", "1"),
            ],
            None,
        );
        assert!(msg.contains("SLURM_NNODES=2"), "{msg}");
        let msg = refusal(
            &[
                ("RANK", "0"),
                ("WORLD_SIZE", "8"),
                ("LOCAL_WORLD_SIZE", "4"),
            ],
            Some("x"),
        );
        assert!(
            msg.contains("LOCAL_WORLD_SIZE=4 < WORLD_SIZE=8")
                && msg.contains("SHMEM_BOOTSTRAP_ADDR=tcp: MASTER_ADDR"),
            "{msg}"
        );
    }

    #[test]
    fn shmemrun_over_tcp() {
        let vars = [
            ("SHMEM_RUN_STORE", "tcp://127.0.0.1:4000"),
            ("SHMEM_RUN_TLS_FD", "7"),
            ("SHMEM_RUN_RANK", "1"),
            ("SHMEM_RUN_SIZE", "2"),
            ("SHMEM_RUN_JOBID", "j"),
        ];
        assert_eq!(
            detect_with(&vars, Hints::NONE, false).unwrap(),
            Found::ShmemrunTcp {
                my_pe: 1,
                n_pes: 2,
                store: StoreAddr::parse("tcp://127.0.0.1:4000", None).unwrap(),
                tls_fd: Some(7),
                job_id: "j".into()
            }
        );
    }

    #[test]
    fn bootstrap_address_and_the_torchrun_shorthand() {
        let vars = [
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("MASTER_ADDR", "10.1.2.3"),
            ("MASTER_PORT", "29500"),
        ];
        let plan = |store| match detect_with(&vars, hints(None, store), false).unwrap() {
            Found::NodeLocal(p) => p,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            plan(Some("tcp")).store.map(|a| a.text).as_deref(),
            Some("tcp://10.1.2.3:29501")
        );
        assert_eq!(
            plan(Some("tcp://1.1.1.1:5"))
                .store
                .map(|a| a.text)
                .as_deref(),
            Some("tcp://1.1.1.1:5")
        );
        // Hydra gives no job id; with an address none is needed.
        let hydra = [("PMI_RANK", "0"), ("PMI_SIZE", "2")];
        match detect_with(&hydra, hints(None, Some("tcp://127.0.0.1:9")), false).unwrap() {
            Found::NodeLocal(p) => assert_eq!(p.job_id, ""),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn one_pe_under_a_launcher_needs_no_store() {
        let vars = [("PMI_RANK", "0"), ("PMI_SIZE", "1")];
        assert_eq!(found(&vars, None).unwrap(), Found::Alone);
    }

    #[test]
    fn bad_numbers_name_the_variable() {
        let msg = refusal(&[("OMPI_COMM_WORLD_RANK", "x")], None);
        assert!(msg.contains("OMPI_COMM_WORLD_RANK"), "{msg}");
        let msg = refusal(&[("SLURM_PROCID", "0")], None);
        assert!(
            msg.contains("SLURM_NTASKS") && msg.contains("not set"),
            "{msg}"
        );
        let msg = refusal(&[("RANK", "2"), ("WORLD_SIZE", "2")], None);
        assert!(
            msg.contains("RANK") && msg.contains("WORLD_SIZE=2"),
            "{msg}"
        );
        let msg = refusal(
            &[
                ("SHMEM_RUN_FD", "3"),
                ("SHMEM_RUN_RANK", "4"),
                ("SHMEM_RUN_SIZE", "4"),
            ],
            None,
        );
        assert!(msg.contains("SHMEM_RUN_RANK"), "{msg}");
    }
}
