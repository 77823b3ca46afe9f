//! The one table of every `SHMEM_*` environment variable: name, kind, default and help.
//! The same table parses the variables into [`Config`] and prints them (`SHMEM_INFO=1`).
//! Nothing else in the runtime reads the environment for `SHMEM_*` names.
//!
//! A variable may have a deprecated alias, the `SMA_*` name OpenSHMEM 1.5 still lists
//! (`SMA_SYMMETRIC_SIZE` for `SHMEM_SYMMETRIC_SIZE`, ...): it is read when the `SHMEM_*` name is
//! unset, and the `SHMEM_*` name wins when both are set.

use crate::error::{EnvError, PortRangeError};
use std::fmt::Write as _;
use std::time::Duration;

/// What the readers of the table return: the value, or why the variable was refused.
pub type Result<T> = std::result::Result<T, EnvError>;

/// How a variable's value is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A byte count with an optional K, M, G or T suffix (powers of 1024).
    Size,
    /// `1/y/yes/true/on` or `0/n/no/false/off`.
    Bool,
    /// A whole number of seconds.
    Seconds,
    /// One word from a fixed list.
    Word(&'static [&'static str]),
    /// Free text, taken as given (surrounding blanks trimmed).
    Text,
    /// Set by the launcher for its PEs; not for users.
    Internal,
}

/// One row of the table.
#[derive(Debug)]
pub struct Var {
    /// Full variable name.
    pub name: &'static str,
    /// Deprecated name read when `name` is unset (`SMA_*`), if any.
    pub alias: Option<&'static str>,
    /// How the value is read.
    pub kind: Kind,
    /// Value used when the variable is unset ("" for none).
    pub default: &'static str,
    /// One line for users.
    pub help: &'static str,
}

// The names, one constant each: the rest of the runtime and `shmemrun` refer to a variable only
// through these, so that the table below is the one place a name is spelled.
/// `SHMEM_SYMMETRIC_SIZE`: see its row of [`VARS`].
pub const SYMMETRIC_SIZE: &str = "SHMEM_SYMMETRIC_SIZE";
/// `SHMEM_VERSION`: see its row of [`VARS`].
pub const VERSION: &str = "SHMEM_VERSION";
/// `SHMEM_INFO`: see its row of [`VARS`].
pub const INFO: &str = "SHMEM_INFO";
/// `SHMEM_DEBUG`: see its row of [`VARS`].
pub const DEBUG: &str = "SHMEM_DEBUG";
/// `SHMEM_LOG_LEVEL`: see its row of [`VARS`].
pub const LOG_LEVEL: &str = "SHMEM_LOG_LEVEL";
/// `SHMEM_INIT_TIMEOUT`: see its row of [`VARS`].
pub const INIT_TIMEOUT: &str = "SHMEM_INIT_TIMEOUT";
/// `SHMEM_HEARTBEAT_TIMEOUT`: see its row of [`VARS`].
pub const HEARTBEAT_TIMEOUT: &str = "SHMEM_HEARTBEAT_TIMEOUT";
/// `SHMEM_TRANS_PEER_TIMEOUT`: see its row of [`VARS`].
pub const TRANS_PEER_TIMEOUT: &str = "SHMEM_TRANS_PEER_TIMEOUT";
/// `SHMEM_BARRIER`: see its row of [`VARS`].
pub const BARRIER: &str = "SHMEM_BARRIER";
/// `SHMEM_SYMMETRIC_DATA`: see its row of [`VARS`].
pub const SYMMETRIC_DATA: &str = "SHMEM_SYMMETRIC_DATA";
/// `SHMEM_JOB_ID`: see its row of [`VARS`].
pub const JOB_ID: &str = "SHMEM_JOB_ID";
/// `SHMEM_UID_SOCK_IFNAME`: see its row of [`VARS`].
pub const UID_SOCK_IFNAME: &str = "SHMEM_UID_SOCK_IFNAME";
/// `SHMEM_UID_SESSION_ID`: see its row of [`VARS`].
pub const UID_SESSION_ID: &str = "SHMEM_UID_SESSION_ID";
/// `SHMEM_BOOTSTRAP_ADDR`: see its row of [`VARS`].
pub const BOOTSTRAP_ADDR: &str = "SHMEM_BOOTSTRAP_ADDR";
/// `SHMEM_BOOTSTRAP_KVS`: see its row of [`VARS`].
pub const BOOTSTRAP_KVS: &str = "SHMEM_BOOTSTRAP_KVS";
/// `SHMEM_PMIX_LIB`: see its row of [`VARS`].
pub const PMIX_LIB: &str = "SHMEM_PMIX_LIB";
/// `SHMEM_INSTANCE_PORT_RANGE`: see its row of [`VARS`].
pub const INSTANCE_PORT_RANGE: &str = "SHMEM_INSTANCE_PORT_RANGE";
/// `SHMEM_TLS_DISABLE`: see its row of [`VARS`].
pub const TLS_DISABLE: &str = "SHMEM_TLS_DISABLE";
/// `SHMEM_DEVICE`: see its row of [`VARS`].
pub const DEVICE: &str = "SHMEM_DEVICE";
/// `SHMEM_ACL_LIBRARY`: see its row of [`VARS`].
pub const ACL_LIBRARY: &str = "SHMEM_ACL_LIBRARY";
/// `SHMEM_CUDA_LIBRARY`: see its row of [`VARS`].
pub const CUDA_LIBRARY: &str = "SHMEM_CUDA_LIBRARY";
/// `SHMEM_TEST_LOOPBACK`: see its row of [`VARS`].
pub const TEST_LOOPBACK: &str = "SHMEM_TEST_LOOPBACK";
/// `SHMEM_TEST_UCX`: see its row of [`VARS`].
pub const TEST_UCX: &str = "SHMEM_TEST_UCX";
/// `SHMEM_RUN_FD`: see its row of [`VARS`].
pub const RUN_FD: &str = "SHMEM_RUN_FD";
/// `SHMEM_RUN_RANK`: see its row of [`VARS`].
pub const RUN_RANK: &str = "SHMEM_RUN_RANK";
/// `SHMEM_RUN_SIZE`: see its row of [`VARS`].
pub const RUN_SIZE: &str = "SHMEM_RUN_SIZE";
/// `SHMEM_RUN_JOBID`: see its row of [`VARS`].
pub const RUN_JOBID: &str = "SHMEM_RUN_JOBID";
/// `SHMEM_RUN_STORE`: see its row of [`VARS`].
pub const RUN_STORE: &str = "SHMEM_RUN_STORE";
/// `SHMEM_RUN_TLS_FD`: see its row of [`VARS`].
pub const RUN_TLS_FD: &str = "SHMEM_RUN_TLS_FD";

const LOG_LEVELS: &[&str] = &["error", "warn", "info", "debug", "trace"];
const SYMMETRIC_DATA_WORDS: &[&str] = &["auto", "0", "1"];
const BARRIERS: &[&str] = &["auto", "dissemination", "central"];
const DEVICES: &[&str] = &["auto", "host", "npu", "cuda"];
const BOOTSTRAP_KVS_WORDS: &[&str] = &["auto", "pmix", "pmi1", "off"];

/// Every variable the library reads, in the order `SHMEM_INFO` prints them.
pub static VARS: &[Var] = &[
    Var {
        name: SYMMETRIC_SIZE,
        alias: Some("SMA_SYMMETRIC_SIZE"),
        kind: Kind::Size,
        default: "512M",
        help: "Bytes of symmetric heap per PE (K, M, G, T suffixes are powers of 1024)",
    },
    Var {
        name: VERSION,
        alias: Some("SMA_VERSION"),
        kind: Kind::Bool,
        default: "0",
        help: "Print the library version at start-up (PE 0)",
    },
    Var {
        name: INFO,
        alias: Some("SMA_INFO"),
        kind: Kind::Bool,
        default: "0",
        help: "Print this table with current values at start-up (PE 0)",
    },
    Var {
        name: DEBUG,
        alias: Some("SMA_DEBUG"),
        kind: Kind::Bool,
        default: "0",
        help: "Debug messages (log level debug unless SHMEM_LOG_LEVEL is set)",
    },
    Var {
        name: LOG_LEVEL,
        alias: None,
        kind: Kind::Word(LOG_LEVELS),
        default: "warn",
        help: "Least severe message printed: error, warn, info, debug or trace",
    },
    Var {
        name: INIT_TIMEOUT,
        alias: None,
        kind: Kind::Seconds,
        default: "120",
        help: "Seconds any start-up or control-plane step may take before the job fails",
    },
    Var {
        name: HEARTBEAT_TIMEOUT,
        alias: None,
        kind: Kind::Seconds,
        default: "15",
        help: "Seconds without a heartbeat after which a job across nodes takes a node for cut \
               off and ends (one heartbeat every third of it, from a thread of each PE)",
    },
    Var {
        name: TRANS_PEER_TIMEOUT,
        alias: None,
        kind: Kind::Seconds,
        default: "5",
        help: "Seconds a transfer of memfabric's transfer engine (smem_trans_*) waits for a \
               peer engine the store does not know yet before it fails",
    },
    Var {
        name: BARRIER,
        alias: None,
        kind: Kind::Word(BARRIERS),
        default: "auto",
        help: "Barrier shape: dissemination (log2 n rounds, when PEs have cores of their own), \
               central (one counter, when PEs outnumber cores) or auto",
    },
    Var {
        name: SYMMETRIC_DATA,
        alias: None,
        kind: Kind::Word(SYMMETRIC_DATA_WORDS),
        default: "auto",
        help: "Global and static variables symmetric: auto (when libshmem is linked at start), \
               1 (also under dlopen), 0 (never)",
    },
    Var {
        name: JOB_ID,
        alias: None,
        kind: Kind::Text,
        default: "",
        help: "Job id under launchers other than shmemrun (same on every PE, unique on the node); \
               overrides the launcher's own id; needed where the launcher gives none and offers \
               no key-value service (SHMEM_BOOTSTRAP_KVS)",
    },
    Var {
        name: UID_SOCK_IFNAME,
        alias: None,
        kind: Kind::Text,
        default: "",
        help: "Interface whose address shmem_get_uniqueid puts in the unique id: NAME, NAME:inet4 \
               or NAME:inet6 (default: the first non-loopback interface that is up, else loopback)",
    },
    Var {
        name: UID_SESSION_ID,
        alias: None,
        kind: Kind::Text,
        default: "",
        help: "Store address shmem_get_uniqueid binds and puts in the unique id, IP:PORT or \
               [IPv6]:PORT (port 0: any free port); wins over SHMEM_UID_SOCK_IFNAME",
    },
    Var {
        name: BOOTSTRAP_ADDR,
        alias: None,
        kind: Kind::Text,
        default: "",
        help: "Under launchers other than shmemrun, PE 0 serves the job's store over TCP here: \
               tcp://ip[:port] or tcp6://[ip][:port] (port 8666 by default, or the first free \
               one of SHMEM_INSTANCE_PORT_RANGE); under torchrun `tcp` (or `tcp6`) means \
               MASTER_ADDR at MASTER_PORT+1. TLS 1.3 is on: give certificates with \
               shmem_set_conf_store_tls, or set SHMEM_TLS_DISABLE=1",
    },
    Var {
        name: BOOTSTRAP_KVS,
        alias: None,
        kind: Kind::Word(BOOTSTRAP_KVS_WORDS),
        default: "auto",
        help: "The launcher's key-value service, through which PE 0 gives the others a job id \
               where the launcher has none, or its store's address (as a unique id) when the \
               PEs span nodes and SHMEM_BOOTSTRAP_ADDR is unset: pmi1 (PMI_FD, MPICH's Hydra), pmix (Open MPI 4, \
               Slurm; libpmix loaded at run time), off, or auto (PMI-1 when PMI_FD is set, \
               else PMIx when a PMIx server is named and its library loads). An explicit \
               choice is used even where the launcher gives an id",
    },
    Var {
        name: PMIX_LIB,
        alias: None,
        kind: Kind::Text,
        default: "",
        help: "Path or name of the PMIx client library to load (default: libpmix.so.2, then \
               libpmix.so)",
    },
    Var {
        name: INSTANCE_PORT_RANGE,
        alias: None,
        kind: Kind::Text,
        default: "",
        help: "lo-hi: a TCP store whose address names no port (shmemrun --store, \
               SHMEM_BOOTSTRAP_ADDR, shmem_get_uniqueid without SHMEM_UID_SESSION_ID) takes the \
               first free port of this range; the other PEs try the range's ports in order",
    },
    Var {
        name: TLS_DISABLE,
        alias: None,
        kind: Kind::Bool,
        default: "0",
        help: "Run a TCP store without TLS (logged as a warning): any process that reaches the \
               port can then read and write the job's store. Set it for shmemrun and every PE \
               alike",
    },
    Var {
        name: DEVICE,
        alias: None,
        kind: Kind::Word(DEVICES),
        default: "auto",
        help: "Where the symmetric heap lives: host (shared host memory), npu (an Ascend NPU's \
               memory through ACL), cuda (an NVIDIA GPU's memory through the CUDA driver) or \
               auto (npu when libascendcl.so loads and reports a device, else host: a GPU heap \
               is asked for by name); npu and cuda stop start-up when their library or a device \
               is missing. Set it for every PE alike",
    },
    Var {
        name: ACL_LIBRARY,
        alias: None,
        kind: Kind::Text,
        default: "libascendcl.so",
        help: "The ACL runtime library the npu device loads (a name the dynamic loader finds \
               through LD_LIBRARY_PATH, as CANN's set_env.sh sets it, or a path)",
    },
    Var {
        name: CUDA_LIBRARY,
        alias: None,
        kind: Kind::Text,
        default: "libcuda.so.1",
        help: "The CUDA driver library the cuda device loads (a name the dynamic loader finds, \
               as NVIDIA's driver installs it, or a path)",
    },
    Var {
        name: TEST_LOOPBACK,
        alias: None,
        kind: Kind::Text,
        default: "",
        help: "For testing only: reach these PEs through the loopback test transport (the \
               transport table, copying through the mapping) instead of directly: odd, all, or a \
               comma list of PE numbers; every AMO then goes through it. Set it for every PE alike",
    },
    Var {
        name: TEST_UCX,
        alias: None,
        kind: Kind::Text,
        default: "",
        help: "For testing only: reach these PEs of a one-node job through the UCX transport \
               instead of directly: odd, all, or a comma list of PE numbers; every AMO then goes \
               through UCX. Set it for every PE alike",
    },
    Var {
        name: RUN_FD,
        alias: None,
        kind: Kind::Internal,
        default: "",
        help: "Set by shmemrun: inherited control socket of this PE",
    },
    Var {
        name: RUN_RANK,
        alias: None,
        kind: Kind::Internal,
        default: "",
        help: "Set by shmemrun: this PE's number",
    },
    Var {
        name: RUN_SIZE,
        alias: None,
        kind: Kind::Internal,
        default: "",
        help: "Set by shmemrun: number of PEs in the job",
    },
    Var {
        name: RUN_JOBID,
        alias: None,
        kind: Kind::Internal,
        default: "",
        help: "Set by shmemrun: identifier of the job",
    },
    Var {
        name: RUN_STORE,
        alias: None,
        kind: Kind::Internal,
        default: "",
        help: "Set by shmemrun --store: the TCP address of the job's store",
    },
    Var {
        name: RUN_TLS_FD,
        alias: None,
        kind: Kind::Internal,
        default: "",
        help: "Set by shmemrun --store: inherited memfd holding the job's CA and client \
               certificate and key (never a file)",
    },
];

/// Settings read from the environment once, at initialisation.
#[derive(Clone, Debug)]
pub struct Config {
    /// Usable bytes of symmetric heap per PE.
    pub symmetric_size: usize,
    /// Print the version at start-up.
    pub print_version: bool,
    /// Print the variable table at start-up.
    pub print_info: bool,
    /// `SHMEM_DEBUG`: debug messages (the log level is read from it earlier, by
    /// [`early_log_level`]).
    pub debug: bool,
    /// Log level word, one of `error..trace`.
    pub log_level: &'static str,
    /// Bound on every blocking start-up and control step.
    pub init_timeout: Duration,
    /// `SHMEM_HEARTBEAT_TIMEOUT`: silence after which a job across nodes takes a PE's node for
    /// cut off.
    pub heartbeat_timeout: Duration,
    /// `SHMEM_SYMMETRIC_DATA`: `auto`, `0` or `1` (acted on by the library constructor; read
    /// here again so that a bad value fails init).
    pub symmetric_data: &'static str,
    /// `SHMEM_BARRIER`: `auto`, `dissemination` or `central`.
    pub barrier: &'static str,
    /// `SHMEM_JOB_ID`, if set: the job id for PEs of other launchers to meet under.
    pub job_id: Option<String>,
    /// `SHMEM_BOOTSTRAP_ADDR`, if set: where PE 0 serves a TCP store.
    pub bootstrap_addr: Option<String>,
    /// `SHMEM_BOOTSTRAP_KVS`: `auto`, `pmix`, `pmi1` or `off`.
    pub bootstrap_kvs: &'static str,
    /// `SHMEM_PMIX_LIB`, if set: the PMIx library to load.
    pub pmix_lib: Option<String>,
    /// `SHMEM_INSTANCE_PORT_RANGE`, if set.
    pub port_range: Option<(u16, u16)>,
    /// `SHMEM_TLS_DISABLE`.
    pub tls_disable: bool,
    /// `SHMEM_DEVICE`: `auto`, `host`, `npu` or `cuda`.
    pub device: &'static str,
}

fn var(name: &str) -> &'static Var {
    // The names passed here are literals of this module, all present in VARS.
    VARS.iter()
        .find(|v| v.name == name)
        .expect("variable missing from env::VARS")
}

/// The value of an environment variable as given, trimmed: `None` when unset (or not UTF-8),
/// `Some("")` when set but blank.
fn given(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|s| s.trim().to_string())
}

/// The value of an environment variable, when set and not blank.
fn set_value(name: &str) -> Option<String> {
    given(name).filter(|s| !s.is_empty())
}

/// The name a variable's value comes from: its own when set (blank too, so that a blank value
/// is refused rather than passed over), else its deprecated alias when that is set, else its
/// own (the default applies).
fn source(v: &Var) -> &'static str {
    match v.alias {
        Some(alias) if given(v.name).is_none() && given(alias).is_some() => alias,
        _ => v.name,
    }
}

/// Whether a blank value says nothing: every kind but free text whose default is itself empty
/// (an empty job id or interface is "none", as unset). A blank one of these is refused, since
/// `SHMEM_SYMMETRIC_SIZE=$SIZE` with `SIZE` unset more likely lost a value than asked for the
/// default.
fn blank_is_meaningless(v: &Var) -> bool {
    match v.kind {
        Kind::Size | Kind::Bool | Kind::Seconds | Kind::Word(_) => true,
        Kind::Text => !v.default.is_empty(),
        Kind::Internal => false,
    }
}

/// What a variable takes, for the message refusing a blank one.
fn expected(v: &Var) -> String {
    match v.kind {
        Kind::Size => "bytes with optional K/M/G/T suffix".into(),
        Kind::Bool => "1/0, yes/no, true/false or on/off".into(),
        Kind::Seconds => "a positive number of seconds".into(),
        Kind::Word(words) => format!("one of {}", words.join(", ")),
        Kind::Text | Kind::Internal => "a value".into(),
    }
}

/// The value of a variable (from its alias when only that is set), or its default when unset
/// (or blank, where a blank value means none).
fn raw(v: &Var) -> Result<String> {
    match given(source(v)) {
        None => Ok(v.default.to_string()),
        Some(s) if s.is_empty() && blank_is_meaningless(v) => Err(bad(
            v,
            &s,
            format!(
                "set but empty: unset it for the default ({}), or give {}",
                v.default,
                expected(v)
            ),
        )),
        Some(s) if s.is_empty() => Ok(v.default.to_string()),
        Some(s) => Ok(s),
    }
}

/// Refuses a blank value of every variable where a blank one says nothing, including those
/// read later than [`load`] (the device libraries) or only on one path.
fn refuse_blanks() -> Result<()> {
    for v in VARS.iter().filter(|v| blank_is_meaningless(v)) {
        raw(v)?;
    }
    Ok(())
}

fn bad(v: &Var, value: &str, reason: impl Into<String>) -> EnvError {
    EnvError::BadValue {
        name: source(v),
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// Largest symmetric heap a PE may ask for: 128 TiB (`128T`), the whole user address space of
/// a process on x86-64 and AArch64 Linux (48-bit addresses). Every PE maps every PE's heap, so
/// a job needs far less per PE in practice; this bound only separates "too large for any
/// machine" from the address-space limits that mapping the heaps runs into.
pub const MAX_SYMMETRIC_SIZE: usize = 1 << 47;

/// Why [`parse_size`] refused a byte count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeError {
    /// Not a number with an optional K, M, G or T suffix.
    Malformed,
    /// A number, but above [`MAX_SYMMETRIC_SIZE`].
    TooLarge,
}

/// Parses a byte count such as `64M`, `2g`, `4096` or `1.5G`, at most [`MAX_SYMMETRIC_SIZE`].
pub fn parse_size(s: &str) -> std::result::Result<usize, SizeError> {
    use std::num::IntErrorKind;
    let s = s.trim();
    let (digits, shift) = match s.char_indices().last() {
        None => return Err(SizeError::Malformed),
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => return Err(SizeError::Malformed),
            };
            (&s[..i], shift)
        }
        Some(_) => (s, 0),
    };
    let bytes: f64 = if digits.contains('.') {
        let x: f64 = digits.parse().map_err(|_| SizeError::Malformed)?;
        if !(x.is_finite() && x >= 0.0) {
            return Err(SizeError::Malformed);
        }
        x * (1u64 << shift) as f64
    } else {
        // Whole numbers are exact: parsed wide enough that any shifted value in range fits.
        let n: u128 = digits.parse().map_err(|e: std::num::ParseIntError| {
            if *e.kind() == IntErrorKind::PosOverflow {
                SizeError::TooLarge
            } else {
                SizeError::Malformed
            }
        })?;
        let n = n.checked_shl(shift).filter(|b| b >> shift == n);
        return match n {
            Some(b) if b <= MAX_SYMMETRIC_SIZE as u128 => Ok(b as usize),
            _ => Err(SizeError::TooLarge),
        };
    };
    if bytes > MAX_SYMMETRIC_SIZE as f64 {
        return Err(SizeError::TooLarge);
    }
    Ok(bytes as usize)
}

fn parse_bool(v: &Var) -> Result<bool> {
    let s = raw(v)?;
    match s.to_ascii_lowercase().as_str() {
        "1" | "y" | "yes" | "true" | "on" => Ok(true),
        "0" | "n" | "no" | "false" | "off" => Ok(false),
        _ => Err(bad(v, &s, "expected 1/0, yes/no, true/false or on/off")),
    }
}

fn parse_word(v: &Var) -> Result<&'static str> {
    let s = raw(v)?.to_ascii_lowercase();
    match v.kind {
        Kind::Word(words) => words
            .iter()
            .find(|w| **w == s)
            .copied()
            .ok_or_else(|| bad(v, &s, format!("expected one of {}", words.join(", ")))),
        _ => Err(bad(v, &s, "not a word variable")),
    }
}

/// Reads every user variable; the first bad one is the error.
pub fn load() -> Result<Config> {
    refuse_blanks()?;
    let size_var = var(SYMMETRIC_SIZE);
    let size_raw = raw(size_var)?;
    let symmetric_size = parse_size(&size_raw).map_err(|e| {
        bad(
            size_var,
            &size_raw,
            match e {
                SizeError::Malformed => "expected bytes with optional K/M/G/T suffix",
                SizeError::TooLarge => {
                    "too large: at most 128T (the address space of a process), and every PE \
                     maps every PE's heap"
                }
            },
        )
    })?;
    if symmetric_size == 0 {
        return Err(bad(size_var, &size_raw, "the heap cannot be empty"));
    }
    let secs = parse_seconds(var(INIT_TIMEOUT))?;
    Ok(Config {
        symmetric_size,
        print_version: parse_bool(var(VERSION))?,
        print_info: parse_bool(var(INFO))?,
        debug: parse_bool(var(DEBUG))?,
        log_level: parse_word(var(LOG_LEVEL))?,
        init_timeout: Duration::from_secs(secs),
        heartbeat_timeout: heartbeat_timeout()?,
        symmetric_data: symmetric_data()?,
        barrier: parse_word(var(BARRIER))?,
        device: parse_word(var(DEVICE))?,
        job_id: text(JOB_ID),
        bootstrap_addr: text(BOOTSTRAP_ADDR),
        bootstrap_kvs: parse_word(var(BOOTSTRAP_KVS))?,
        pmix_lib: text(PMIX_LIB),
        port_range: port_range()?,
        tls_disable: tls_disable()?,
    })
}

/// A positive whole number of seconds.
fn parse_seconds(v: &Var) -> Result<u64> {
    let s = raw(v)?;
    s.parse()
        .ok()
        .filter(|s| *s > 0)
        .ok_or_else(|| bad(v, &s, "expected a positive number of seconds"))
}

/// `SHMEM_HEARTBEAT_TIMEOUT` (also read by `shmemrun`, whose store watches the heartbeats).
pub fn heartbeat_timeout() -> Result<Duration> {
    parse_seconds(var(HEARTBEAT_TIMEOUT)).map(Duration::from_secs)
}

/// `SHMEM_TRANS_PEER_TIMEOUT`: how long memfabric's transfer engine waits for an unknown peer.
pub fn trans_peer_timeout() -> Result<Duration> {
    parse_seconds(var(TRANS_PEER_TIMEOUT)).map(Duration::from_secs)
}

/// `SHMEM_INSTANCE_PORT_RANGE`, parsed (also read by `shmemrun`).
pub fn port_range() -> Result<Option<(u16, u16)>> {
    let v = var(INSTANCE_PORT_RANGE);
    let s = raw(v)?;
    if s.is_empty() {
        return Ok(None);
    }
    parse_port_range(&s)
        .map(Some)
        .map_err(|e| EnvError::BadPortRange {
            name: source(v),
            value: s.to_string(),
            source: e,
        })
}

/// Parses `lo-hi` (`SHMEM_INSTANCE_PORT_RANGE`): two ports from 1 to 65535, the first not
/// above the second.
pub fn parse_port_range(s: &str) -> std::result::Result<(u16, u16), PortRangeError> {
    let (lo, hi) = s
        .split_once('-')
        .ok_or_else(|| PortRangeError::NotARange(s.to_string()))?;
    let port = |p: &str| -> std::result::Result<u16, PortRangeError> {
        p.trim()
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| PortRangeError::NotAPort(p.trim().to_string(), 1))
    };
    let (lo, hi) = (port(lo)?, port(hi)?);
    if lo > hi {
        return Err(PortRangeError::EmptyRange(lo, hi));
    }
    Ok((lo, hi))
}

/// `SHMEM_TEST_LOOPBACK` for a job of `n_pes` PEs: per PE, whether the loopback test
/// transport reaches it; `None` when unset.
pub fn test_loopback(n_pes: usize) -> Result<Option<Vec<bool>>> {
    let v = var(TEST_LOOPBACK);
    let s = raw(v)?;
    parse_loopback(&s, n_pes).map_err(|why| bad(v, &s, why))
}

/// `SHMEM_TEST_UCX` for a job of `n_pes` PEs: per PE, whether the UCX transport reaches it;
/// `None` when unset.
pub fn test_ucx(n_pes: usize) -> Result<Option<Vec<bool>>> {
    let v = var(TEST_UCX);
    let s = raw(v)?;
    parse_loopback(&s, n_pes).map_err(|why| bad(v, &s, why))
}

fn parse_loopback(s: &str, n_pes: usize) -> std::result::Result<Option<Vec<bool>>, String> {
    match s {
        "" => return Ok(None),
        "all" => return Ok(Some(vec![true; n_pes])),
        "odd" => return Ok(Some((0..n_pes).map(|pe| pe % 2 == 1).collect())),
        _ => {}
    }
    let mut chosen = vec![false; n_pes];
    for word in s.split(',').map(str::trim) {
        let pe: usize = word.parse().map_err(|_| {
            format!("{word:?} is not a PE number (expected odd, all, or a comma list of PEs)")
        })?;
        if pe >= n_pes {
            return Err(format!("PE {pe} is not in this job of {n_pes} PEs"));
        }
        chosen[pe] = true;
    }
    Ok(Some(chosen))
}

/// `SHMEM_TLS_DISABLE` (also read by `shmemrun`).
pub fn tls_disable() -> Result<bool> {
    parse_bool(var(TLS_DISABLE))
}

/// `SHMEM_SYMMETRIC_DATA` alone (`auto`, `0` or `1`), for the library constructor, which runs
/// before [`load`].
pub fn symmetric_data() -> Result<&'static str> {
    parse_word(var(SYMMETRIC_DATA))
}

/// `SHMEM_DEVICE` alone (`auto`, `host`, `npu` or `cuda`), for a process without a SHMEM job
/// (memfabric's Share Memory), which does not run [`load`].
pub fn device() -> Result<&'static str> {
    parse_word(var(DEVICE))
}

/// The log level to use before [`load`] ran (e.g. for its own errors): the variable if valid,
/// `debug` when `SHMEM_DEBUG` is on, else the default.
pub fn early_log_level() -> &'static str {
    let level = parse_word(var(LOG_LEVEL)).unwrap_or("warn");
    if set_value(LOG_LEVEL).is_none() && matches!(parse_bool(var(DEBUG)), Ok(true)) {
        "debug"
    } else {
        level
    }
}

/// A text variable read on its own (before or without [`load`]): `None` when unset or blank
/// (a blank one whose default is not empty is refused by [`load`]; here it means the default).
pub fn text(name: &str) -> Option<String> {
    let v = var(name);
    Some(raw(v).unwrap_or_else(|_| v.default.to_string())).filter(|s| !s.is_empty())
}

/// One printed row of the `SHMEM_INFO` table.
struct InfoRow {
    name: &'static str,
    value: String,
    default: &'static str,
    help: &'static str,
    /// Where the value came from, for a variable with a deprecated alias.
    note: Option<String>,
}

/// Renders the table with current values, for `SHMEM_INFO=1`. A variable with a deprecated
/// alias says so, and which of the two names its value came from.
pub fn describe() -> String {
    let rows: Vec<InfoRow> = VARS
        .iter()
        .filter(|v| v.kind != Kind::Internal)
        .map(|v| InfoRow {
            name: v.name,
            value: set_value(source(v)).unwrap_or_else(|| "(unset)".into()),
            default: v.default,
            help: v.help,
            note: v
                .alias
                .map(|alias| match (set_value(v.name), set_value(alias)) {
                    (Some(_), Some(_)) => {
                        format!("{alias} is set too and ignored: {} wins", v.name)
                    }
                    (None, Some(_)) => {
                        format!("value from {alias} (deprecated name of {})", v.name)
                    }
                    _ => format!("deprecated alias {alias} is read when {} is unset", v.name),
                }),
        })
        .collect();
    render_info(&rows)
}

/// Lays the rows out in columns as wide as their widest entry, so that every meaning starts in
/// the same column whatever the names and values; a row's note sits under its meaning.
fn render_info(rows: &[InfoRow]) -> String {
    let width = |column: fn(&InfoRow) -> usize| rows.iter().map(column).max().unwrap_or(0);
    let name_w = width(|r| r.name.chars().count());
    let value_w = width(|r| r.value.chars().count());
    let default_w = width(|r| r.default.chars().count());

    let mut out = String::from("shmem environment variables (name, value, default, meaning):\n");
    for row in rows {
        // Writing to a String cannot fail.
        let _ = writeln!(
            out,
            "  {:<name_w$} {:<value_w$} {:<default_w$} {}",
            row.name, row.value, row.default, row.help
        );
        if let Some(note) = &row.note {
            let _ = writeln!(
                out,
                "  {:<name_w$} {:<value_w$} {:<default_w$} {note}",
                "", "", ""
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_size_accepts_suffixes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("128T"), Ok(MAX_SYMMETRIC_SIZE));
    }

    #[test]
    fn parse_size_says_too_large_apart_from_malformed() {
        for big in [
            "99999999T",
            "129T",
            "128.5T",
            "140737488355329",
            "99999999999999999999999T",
            "999999999999999999999999999999999999999999",
            "1e300",
        ] {
            let want = if big == "1e300" {
                SizeError::Malformed
            } else {
                SizeError::TooLarge
            };
            assert_eq!(parse_size(big), Err(want), "{big}");
        }
    }

    #[test]
    fn parse_size_refuses_garbage() {
        for bad in [
            "", "M", "12Q", "-5M", "1e3", "-1.5G", "NaNK", "infT", "1.2.3",
        ] {
            assert_eq!(parse_size(bad), Err(SizeError::Malformed), "{bad}");
        }
    }

    #[test]
    fn aliases_are_sma_names_of_the_same_variable() {
        for v in VARS {
            if let Some(alias) = v.alias {
                assert_eq!(alias.strip_prefix("SMA_"), v.name.strip_prefix("SHMEM_"));
            }
        }
        let aliased: Vec<_> = VARS.iter().filter_map(|v| v.alias).collect();
        assert_eq!(
            aliased,
            ["SMA_SYMMETRIC_SIZE", "SMA_VERSION", "SMA_INFO", "SMA_DEBUG"]
        );
    }

    #[test]
    fn table_names_are_unique_and_prefixed() {
        for (i, v) in VARS.iter().enumerate() {
            assert!(v.name.starts_with("SHMEM_"), "{}", v.name);
            assert!(VARS[i + 1..].iter().all(|w| w.name != v.name), "{}", v.name);
        }
    }

    #[test]
    fn defaults_parse() {
        for v in VARS {
            match v.kind {
                Kind::Size => assert!(parse_size(v.default).is_ok(), "{}", v.name),
                Kind::Seconds => assert!(v.default.parse::<u64>().is_ok(), "{}", v.name),
                Kind::Word(w) => assert!(w.contains(&v.default), "{}", v.name),
                Kind::Bool => assert!(v.default == "0" || v.default == "1", "{}", v.name),
                Kind::Text | Kind::Internal => {}
            }
        }
    }

    /// The column (in characters) where `needle` starts on `line`.
    fn column_of(line: &str, needle: &str) -> usize {
        let at = line
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in {line:?}"));
        line[..at].chars().count()
    }

    #[test]
    fn info_table_meanings_start_in_one_column() {
        let table = describe();
        let lines: Vec<&str> = table.lines().skip(1).collect();
        let shown: Vec<&Var> = VARS.iter().filter(|v| v.kind != Kind::Internal).collect();
        // A note's line has a blank name column.
        let is_note = |l: &&str| l.starts_with("   ");
        let rows: Vec<&str> = lines.iter().copied().filter(|l| !is_note(l)).collect();
        assert_eq!(rows.len(), shown.len(), "{table}");
        let column = column_of(rows[0], shown[0].help);
        for (line, v) in rows.iter().zip(&shown) {
            assert!(line.starts_with(&format!("  {} ", v.name)), "{line}");
            assert_eq!(column_of(line, v.help), column, "{table}");
        }
        let notes: Vec<&str> = lines.iter().copied().filter(is_note).collect();
        assert_eq!(
            notes.len(),
            shown.iter().filter(|v| v.alias.is_some()).count()
        );
        for note in notes {
            assert_eq!(note.len() - note.trim_start().len(), column, "{table}");
        }
    }

    #[test]
    fn info_columns_grow_with_long_values() {
        let row = |name, value: &str, default, help| InfoRow {
            name,
            value: value.to_string(),
            default,
            help,
            note: None,
        };
        let table = render_info(&[
            row("SHMEM_A", "(unset)", "512M", "first"),
            row(
                "SHMEM_A_MUCH_LONGER_NAME_THAN_USUAL",
                "/opt/some/long/path/libpmix.so.2",
                "",
                "second",
            ),
            row("SHMEM_B", "1", "a-long-default", "third"),
        ]);
        let lines: Vec<&str> = table.lines().skip(1).collect();
        let column = column_of(lines[0], "first");
        assert_eq!(column_of(lines[1], "second"), column, "{table}");
        assert_eq!(column_of(lines[2], "third"), column, "{table}");
        assert_eq!(
            column_of(lines[2], "a-long-default"),
            column_of(lines[0], "512M"),
            "{table}"
        );
        assert_eq!(
            column_of(lines[2], "1"),
            column_of(lines[0], "(unset)"),
            "{table}"
        );
    }

    /// Names of the public API (not environment variables) that messages spell out.
    const API_NAMES: &[&str] = &["SHMEM_TEAM_WORLD", "SHMEM_TEAM_SHARED"];

    /// The names of variables a source file spells as whole string literals, with their line
    /// numbers; a file's `mod tests` at its end is skipped (tests may set variables for a
    /// child by name), and so are the API's own names (`API_NAMES`).
    fn spelled_names(text: &str) -> Vec<(usize, String)> {
        let code = match text.find("\n#[cfg(test)]\nmod tests") {
            Some(at) => &text[..at],
            None => text,
        };
        let mut found = Vec::new();
        for (i, line) in code.lines().enumerate() {
            for (at, _) in line.match_indices("\"SHMEM_") {
                let rest = &line[at + 1..];
                let end = rest
                    .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                    .unwrap_or(rest.len());
                if rest[end..].starts_with('"') && !API_NAMES.contains(&&rest[..end]) {
                    found.push((i + 1, rest[..end].to_string()));
                }
            }
        }
        found
    }

    #[test]
    fn variable_names_are_spelled_only_in_this_table() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut dirs: Vec<_> = ["src", "../core/src", "../store/src", "../shmemrun/src"]
            .iter()
            .map(|dir| root.join(dir))
            .collect();
        let mut offenders = Vec::new();
        let mut seen = 0;
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("source folder readable") {
                let path = entry.expect("folder entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs")
                    && !path.ends_with("src/env.rs")
                {
                    seen += 1;
                    let text = std::fs::read_to_string(&path).expect("source file readable");
                    for (line, name) in spelled_names(&text) {
                        offenders.push(format!("{}:{line}: {name}", path.display()));
                    }
                }
            }
        }
        assert!(
            seen > 10,
            "found only {seen} source files under {}",
            root.display()
        );
        assert!(
            offenders.is_empty(),
            "use the env module's constant, not the literal name:\n{}",
            offenders.join("\n")
        );
    }

    #[test]
    fn spelled_names_finds_whole_literals_outside_tests() {
        let text = "let a = \"SHMEM_RUN_FD\";\nlet b = \"SHMEM_X=1 in prose\";\n\
                    #[cfg(test)]\nmod tests { \"SHMEM_RUN_RANK\" }\n";
        assert_eq!(spelled_names(text), [(1, "SHMEM_RUN_FD".to_string())]);
    }

    #[test]
    fn the_heartbeat_bound_is_15_s_unless_set() {
        let v = var(HEARTBEAT_TIMEOUT);
        assert_eq!(v.default, "15");
        assert_eq!(
            v.default.parse::<u64>().map(Duration::from_secs),
            Ok(Duration::from_secs(15))
        );
    }

    #[test]
    fn every_row_has_its_constant() {
        let constants = [
            SYMMETRIC_SIZE,
            VERSION,
            INFO,
            DEBUG,
            LOG_LEVEL,
            INIT_TIMEOUT,
            HEARTBEAT_TIMEOUT,
            TRANS_PEER_TIMEOUT,
            BARRIER,
            SYMMETRIC_DATA,
            JOB_ID,
            UID_SOCK_IFNAME,
            UID_SESSION_ID,
            BOOTSTRAP_ADDR,
            BOOTSTRAP_KVS,
            PMIX_LIB,
            INSTANCE_PORT_RANGE,
            TLS_DISABLE,
            DEVICE,
            ACL_LIBRARY,
            CUDA_LIBRARY,
            TEST_LOOPBACK,
            TEST_UCX,
            RUN_FD,
            RUN_RANK,
            RUN_SIZE,
            RUN_JOBID,
            RUN_STORE,
            RUN_TLS_FD,
        ];
        let names: Vec<&str> = VARS.iter().map(|v| v.name).collect();
        assert_eq!(names, constants);
    }

    #[test]
    fn port_ranges_parse() {
        assert_eq!(parse_port_range("9000-9010").unwrap(), (9000, 9010));
        assert_eq!(parse_port_range(" 5 - 5 ").unwrap(), (5, 5));
        assert!(parse_port_range("9010-9000").is_err());
        assert!(parse_port_range("0-5").is_err());
        assert!(parse_port_range("5").is_err());
    }

    #[test]
    fn loopback_choices_parse_and_bad_ones_say_why() {
        assert_eq!(parse_loopback("", 3), Ok(None));
        assert_eq!(parse_loopback("odd", 3), Ok(Some(vec![false, true, false])));
        assert_eq!(parse_loopback("all", 2), Ok(Some(vec![true, true])));
        assert_eq!(parse_loopback("0, 2", 3), Ok(Some(vec![true, false, true])));
        assert_eq!(
            parse_loopback("3", 3),
            Err("PE 3 is not in this job of 3 PEs".to_string())
        );
        assert!(parse_loopback("some", 3).unwrap_err().contains("\"some\""));
    }
}
