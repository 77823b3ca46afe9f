//! What the bootstrap can fail with before the store is met: the launchers' environments, their
//! key-value services, unique ids and the meeting of the PEs. Composed into the runtime's
//! error type as its `Launch` variant; this file imports nothing of the
//! crate but the store's address types, so the runtime's error type holds these without
//! depending on the bootstrap's code.

use super::store::addr::{AddrError, StoreAddr};

/// What a launcher's environment or the meeting of the PEs can get wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// The PEs run on several nodes, no store address was given and the launcher offers no
    /// key-value service to pass PE 0's.
    #[error(
        "PEs span several nodes ({how}, under {launcher}), a node-local socket cannot reach PE 0 \
         from the others, and the launcher offers no key-value service to give them PE 0's \
         address (SHMEM_BOOTSTRAP_KVS): set SHMEM_BOOTSTRAP_ADDR=tcp://HOST:PORT to an address \
         of PE 0's node that every PE can reach{}",
        if *.torch { " (or SHMEM_BOOTSTRAP_ADDR=tcp: MASTER_ADDR, at MASTER_PORT+1)" } else { "" }
    )]
    SeveralNodesNoTransport {
        /// The launcher.
        launcher: &'static str,
        /// How the launcher's variables show it.
        how: String,
        /// Whether torchrun's shorthand applies.
        torch: bool,
    },
    /// The launcher gives no job id to meet under and no key-value service is used.
    #[error(
        "{launcher} gives no job id for the PEs to meet under, and no key-value service of the \
         launcher is used ({why}): set SHMEM_JOB_ID to one value, the same for every PE of \
         the job and unique on this node (e.g. SHMEM_JOB_ID=$(date +%s%N))"
    )]
    NoJobId {
        /// The launcher.
        launcher: &'static str,
        /// Why no service was used.
        why: &'static str,
    },
    /// Another job with the same id already holds the node-local meeting place.
    #[error(
        "cannot open the job's store at {socket}: a job with the same id ({job_id}, from \
         {launcher}) runs on this node already; give each job its own SHMEM_JOB_ID"
    )]
    JobIdInUse {
        /// The abstract socket's name, printed.
        socket: String,
        /// The job id.
        job_id: String,
        /// The launcher.
        launcher: &'static str,
    },
    /// A TCP store with TLS on by default, and no certificates given.
    #[error(
        "the job's store at {addr} is on TCP, where TLS is on by default, but no certificates \
         were given: call shmem_set_conf_store_tls(true, info, len) (and \
         shmem_set_config_store_tls_key for an encrypted key) before shmem_init (or \
         shmem_init_attr), or set SHMEM_TLS_DISABLE=1 to run the store without TLS"
    )]
    NoCertificates {
        /// The store.
        addr: StoreAddr,
    },
    /// PE 0 could not open its TCP store.
    #[error("PE 0 cannot open the job's store: {source}")]
    StoreNotOpened {
        /// The failure.
        source: AddrError,
    },
    /// The process that makes a unique id could not open the id's store.
    #[error("shmem_get_uniqueid: the unique id's store {source}")]
    UniqueIdStore {
        /// The failure.
        source: AddrError,
    },
    /// A peer sent start-up data only another build of the library writes.
    #[error("{what}: {} runs another build of the library", .who)]
    ForeignBuild {
        /// What could not be read.
        what: String,
        /// Who sent it ("it", "PE 0").
        who: &'static str,
    },
    /// The launcher's key-value service (PMI-1, PMIx) failed, or answered what it should not.
    #[error("{what}")]
    Service {
        /// The service: "PMIx", "PMI-1".
        service: &'static str,
        /// The call and its failure.
        what: String,
    },
    /// The launcher's key-value service is PMIx but its library does not load.
    #[error(
        "the launcher's key-value service is PMIx (SHMEM_BOOTSTRAP_KVS), but its library does \
         not load ({source}): set SHMEM_PMIX_LIB to its path, or SHMEM_BOOTSTRAP_KVS=off and \
         SHMEM_JOB_ID"
    )]
    PmixLibrary {
        /// Why it does not load.
        source: NotLoaded,
    },
    /// PE 0 reported through the service that it could not start the job.
    #[error("PE 0 could not start the job ({key} through the launcher's {service}): {why}")]
    Pe0Failed {
        /// The key it reported under.
        key: String,
        /// The service.
        service: String,
        /// PE 0's reason.
        why: String,
    },
    /// A unique id was used by the wrong process (PE 0 must be the one that made it).
    #[error(
        "{call}: {}",
        if *.pe == 0 {
            format!(
                "this process is PE 0, but did not make the unique id it was given (unique id \
                 {tag}, store {store}): PE 0 must be the process that called shmem_get_uniqueid \
                 (aclshmemx_get_uniqueid) for this id"
            )
        } else {
            format!(
                "this process made the unique id it was given (unique id {tag}, store {store}) \
                 but is PE {pe}: the process that calls shmem_get_uniqueid \
                 (aclshmemx_get_uniqueid) must be PE 0, which serves the job's store"
            )
        }
    )]
    UniqueIdOwner {
        /// The public routine.
        call: String,
        /// This PE.
        pe: u32,
        /// The id's tag.
        tag: String,
        /// The id's store.
        store: std::net::SocketAddr,
    },
    /// No address could be picked for a unique id's store.
    #[error("{call}: {source}")]
    UniqueId {
        /// The public routine.
        call: &'static str,
        /// Why.
        source: NoAddress,
    },
    /// The system's random generator failed.
    #[error("the system's random generator failed ({what})")]
    NoRandom {
        /// What the bits were for.
        what: &'static str,
    },
    /// The node-local descriptor store of a TCP job cannot be reached.
    #[error(
        "cannot reach the descriptor store of this node @{socket}, hosted by PE {host}: \
         {source} (PE {pe} and PE {host} said they run on one node, in one network namespace)"
    )]
    NoDescriptorStore {
        /// Its abstract socket name.
        socket: String,
        /// This PE.
        pe: u32,
        /// The PE that hosts it (the node's lowest).
        host: u32,
        /// The system's error.
        source: std::io::Error,
    },
}

/// Why no address could be picked for a unique id's store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NoAddress {
    /// `SHMEM_UID_SESSION_ID` is not an IP address and port.
    #[error("expected IP:PORT or [IPv6]:PORT, e.g. 127.0.0.1:8666")]
    Session,
    /// `SHMEM_UID_SOCK_IFNAME` asks for an unknown family.
    #[error("unknown family '{0}': expected NAME, NAME:inet4 or NAME:inet6")]
    Family(String),
    /// `SHMEM_UID_SOCK_IFNAME` names no interface.
    #[error("no interface name")]
    NoName,
    /// The interface is down.
    #[error("interface {0} is down")]
    Down(String),
    /// No interface of that name with an address of that family.
    #[error("no interface {name} with an {family} address (interfaces: {all})")]
    NoSuchInterface {
        /// The name asked for.
        name: String,
        /// "IP", "IPv4" or "IPv6".
        family: &'static str,
        /// The interfaces there are.
        all: String,
    },
    /// No interface is up.
    #[error("no network interface is up (interfaces: {0})")]
    NoneUp(String),
}

/// Why the PMIx library was not used: each library tried, and why it did not load or lacked
/// a call (the dynamic loader's messages, kept as text since the library is loaded once per
/// process and its answer shared).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", .tried.join("; "))]
pub struct NotLoaded {
    /// One line per library tried.
    pub tried: Vec<String>,
}
