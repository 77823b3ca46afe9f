//! The launcher's PMIx server (Open MPI 4's `mpirun`, Slurm's `srun --mpi=pmix`, PRRTE), reached
//! through the PMIx client library loaded at run time (`libpmix.so.2`, `libpmix.so`, or the
//! path in `SHMEM_PMIX_LIB`), so the library builds and runs where PMIx is not installed.
//!
//! Owns the few PMIx 4 C types the calls need, declared here as `pmix_common.h` lays them out
//! (a unit test pins sizes and offsets), and the calls: `PMIx_Init`, `PMIx_Put` +
//! `PMIx_Commit`, `PMIx_Fence` (collecting data), `PMIx_Get`, `PMIx_Finalize`. Must never
//! unload the library (PMIx runs a progress thread of its own) and never wait on the server
//! without a deadline: each call runs on a helper thread this PE waits for at most the
//! caller's timeout, besides the `PMIX_TIMEOUT` the server is given.

use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::Duration;

use crate::bootstrap::error::NotLoaded;
use crate::error::{Error, LaunchError, Result};

const PMIX_MAX_NSLEN: usize = 255;
const PMIX_MAX_KEYLEN: usize = 511;
const PMIX_SUCCESS: c_int = 0;
const PMIX_RANK_WILDCARD: u32 = u32::MAX - 1;
/// `pmix_data_type_t` values.
const PMIX_BOOL: u16 = 1;
const PMIX_INT: u16 = 6;
const PMIX_UINT32: u16 = 14;
const PMIX_BYTE_OBJECT: u16 = 27;
/// `pmix_scope_t`: share with every process of the job, on this node and others.
const PMIX_GLOBAL: u8 = 3;
/// Attribute keys.
const PMIX_COLLECT_DATA: &str = "pmix.collect";
const PMIX_TIMEOUT: &str = "pmix.timeout";
const PMIX_JOB_SIZE: &str = "pmix.job.size";

/// `pmix_proc_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Proc {
    nspace: [c_char; PMIX_MAX_NSLEN + 1],
    rank: u32,
}

/// `pmix_byte_object_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct ByteObject {
    bytes: *mut c_char,
    size: usize,
}

/// The union of `pmix_value_t`: the members used here, and room for its largest
/// (`pmix_envar_t`: two pointers and a char).
#[repr(C)]
#[derive(Clone, Copy)]
union Data {
    flag: bool,
    integer: c_int,
    uint32: u32,
    bo: ByteObject,
    _largest: [u64; 3],
}

/// `pmix_value_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Value {
    kind: u16,
    data: Data,
}

/// `pmix_info_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Info {
    key: [c_char; PMIX_MAX_KEYLEN + 1],
    flags: u32,
    value: Value,
}

impl Info {
    fn new(key: &str, value: Value) -> Info {
        let mut info = Info {
            key: [0; PMIX_MAX_KEYLEN + 1],
            flags: 0,
            value,
        };
        for (dst, src) in info.key.iter_mut().zip(key.bytes().take(PMIX_MAX_KEYLEN)) {
            *dst = src as c_char;
        }
        info
    }

    fn flag(key: &str, on: bool) -> Info {
        Info::new(
            key,
            Value {
                kind: PMIX_BOOL,
                data: Data { flag: on },
            },
        )
    }

    /// `PMIX_TIMEOUT` in whole seconds, at least 1 (0 means forever to PMIx).
    fn timeout(t: Duration) -> Info {
        let secs = t.as_secs().clamp(1, c_int::MAX as u64) as c_int;
        Info::new(
            PMIX_TIMEOUT,
            Value {
                kind: PMIX_INT,
                data: Data { integer: secs },
            },
        )
    }
}

// SAFETY: the pointers inside (byte objects) are only ever handed to the PMIx calls made on
// the helper thread that owns the structure at that time; nothing aliases them.
unsafe impl Send for Info {}

type InitFn = unsafe extern "C" fn(*mut Proc, *mut Info, usize) -> c_int;
type FinalizeFn = unsafe extern "C" fn(*const Info, usize) -> c_int;
type PutFn = unsafe extern "C" fn(u8, *const c_char, *mut Value) -> c_int;
type CommitFn = unsafe extern "C" fn() -> c_int;
type FenceFn = unsafe extern "C" fn(*const Proc, usize, *const Info, usize) -> c_int;
type GetFn =
    unsafe extern "C" fn(*const Proc, *const c_char, *const Info, usize, *mut *mut Value) -> c_int;
type ValueDestructFn = unsafe extern "C" fn(*mut Value);
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;

/// The PMIx calls, from a library loaded once and never unloaded.
struct Api {
    /// Which file was loaded, for messages.
    path: String,
    init: InitFn,
    finalize: FinalizeFn,
    put: PutFn,
    commit: CommitFn,
    fence: FenceFn,
    get: GetFn,
    value_destruct: ValueDestructFn,
    error_string: ErrorStringFn,
}

/// Library names tried in order when `SHMEM_PMIX_LIB` is unset.
const LIBRARIES: [&str; 2] = ["libpmix.so.2", "libpmix.so"];

static API: OnceLock<std::result::Result<Api, NotLoaded>> = OnceLock::new();

/// Loads the PMIx library (once per process): `path` (`SHMEM_PMIX_LIB`) if given, else the
/// first of [`LIBRARIES`] the dynamic loader finds. The error says what was tried and why
/// each failed.
fn api(path: Option<&str>) -> std::result::Result<&'static Api, NotLoaded> {
    API.get_or_init(|| load(path))
        .as_ref()
        .map_err(Clone::clone)
}

fn load(path: Option<&str>) -> std::result::Result<Api, NotLoaded> {
    let candidates: Vec<&str> = match path {
        Some(p) => vec![p],
        None => LIBRARIES.to_vec(),
    };
    let mut why = Vec::new();
    for name in candidates {
        // RTLD_GLOBAL: PMIx's own plugins, opened later by PMIx itself, resolve its symbols.
        let flags = libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL;
        // SAFETY: loading runs the library's initialisers; libpmix's only set up its own
        // globals. The library is never unloaded (leaked below), so the function pointers
        // taken from it stay valid for the life of the process.
        let lib = match unsafe { libloading::os::unix::Library::open(Some(name), flags) } {
            Ok(lib) => lib,
            Err(e) => {
                // The loader's message names the file.
                why.push(e.to_string());
                continue;
            }
        };
        let lib: &'static libloading::os::unix::Library = Box::leak(Box::new(lib));
        macro_rules! symbol {
            ($name:literal) => {
                // SAFETY: the symbol is PMIx's C function of that name; its signature is the
                // one `pmix.h` declares for PMIx 4 (the type of the field it is stored in).
                match unsafe { lib.get(concat!($name, "\0").as_bytes()) } {
                    Ok(f) => *f,
                    Err(e) => {
                        why.push(format!("{name}: {}: {e}", $name));
                        continue;
                    }
                }
            };
        }
        return Ok(Api {
            path: name.to_string(),
            init: symbol!("PMIx_Init"),
            finalize: symbol!("PMIx_Finalize"),
            put: symbol!("PMIx_Put"),
            commit: symbol!("PMIx_Commit"),
            fence: symbol!("PMIx_Fence"),
            get: symbol!("PMIx_Get"),
            value_destruct: symbol!("PMIx_Value_destruct"),
            error_string: symbol!("PMIx_Error_string"),
        });
    }
    Err(NotLoaded { tried: why })
}

/// Whether the PMIx library loads (`lib`: `SHMEM_PMIX_LIB`), and has the calls used here.
pub(crate) fn loads(lib: Option<&str>) -> bool {
    match api(lib) {
        Ok(_) => true,
        Err(why) => {
            tracing::debug!("PMIx not used: {why}");
            false
        }
    }
}

impl Api {
    fn describe(&self, status: c_int) -> String {
        // SAFETY: PMIx_Error_string returns a pointer to a static string for any status.
        let text = unsafe { (self.error_string)(status) };
        if text.is_null() {
            return format!("status {status}");
        }
        // SAFETY: non-null, NUL-terminated, static (above).
        let text = unsafe { CStr::from_ptr(text) }.to_string_lossy();
        format!("{text} ({status})")
    }
}

/// Runs `f` on a helper thread and waits at most `timeout` for it. A call still blocked then
/// is left behind on its thread (PMIx cannot cancel it); the caller fails the job's start.
fn bounded<T: Send + 'static>(
    what: &str,
    timeout: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("shmem-pmix".into())
        .stack_size(256 * 1024)
        .spawn(move || {
            let _ = tx.send(f());
        })
        .map_err(|e| Error::os(format!("PMIx: {what}: starting a thread"), e))?;
    rx.recv_timeout(timeout).map_err(|_| {
        Error::Launch(LaunchError::Service {
            service: "PMIx",
            what: format!(
                "PMIx: {what}: no answer from the launcher's PMIx server within {timeout:?}"
            ),
        })
    })
}

/// A PMIx client of the launcher's server, initialised.
#[derive(Debug)]
pub(crate) struct Pmix {
    /// This process: the job's namespace and its rank in it.
    me: ProcName,
    finalized: bool,
}

/// [`Proc`] in Rust terms.
#[derive(Debug, Clone)]
struct ProcName {
    nspace: String,
    rank: u32,
}

impl ProcName {
    fn to_c(&self, rank: u32) -> Proc {
        let mut p = Proc {
            nspace: [0; PMIX_MAX_NSLEN + 1],
            rank,
        };
        for (dst, src) in p
            .nspace
            .iter_mut()
            .zip(self.nspace.bytes().take(PMIX_MAX_NSLEN))
        {
            *dst = src as c_char;
        }
        p
    }
}

impl Pmix {
    /// Loads the library (`lib`: `SHMEM_PMIX_LIB`) and initialises PMIx, bounded by `timeout`.
    /// Checks that PMIx's rank and job size are the launcher's `my_pe` and `n_pes`.
    pub fn connect(lib: Option<&str>, my_pe: u32, n_pes: u32, timeout: Duration) -> Result<Pmix> {
        let api = api(lib).map_err(|source| Error::Launch(LaunchError::PmixLibrary { source }))?;
        let (status, proc_) = bounded("PMIx_Init", timeout, move || {
            let mut p = Proc {
                nspace: [0; PMIX_MAX_NSLEN + 1],
                rank: 0,
            };
            // SAFETY: `p` is a valid pmix_proc_t PMIx fills in; no info array.
            let status = unsafe { (api.init)(&mut p, std::ptr::null_mut(), 0) };
            (status, p)
        })?;
        if status != PMIX_SUCCESS {
            return Err(Error::Launch(LaunchError::Service {
                service: "PMIx",
                what: format!("PMIx_Init (library {}): {}", api.path, api.describe(status)),
            }));
        }
        // SAFETY: PMIx wrote a NUL-terminated namespace into the array, whose last byte the
        // length limit keeps 0.
        let nspace = unsafe { CStr::from_ptr(proc_.nspace.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let mut pmix = Pmix {
            me: ProcName {
                nspace,
                rank: proc_.rank,
            },
            finalized: false,
        };
        tracing::debug!(
            "PMIx ({}): namespace {}, rank {}",
            api.path,
            pmix.me.nspace,
            pmix.me.rank
        );
        if pmix.me.rank != my_pe {
            let _ = pmix.finalize(timeout);
            return Err(Error::Launch(LaunchError::Service {
                service: "PMIx",
                what: format!(
                "PMIx says this process is rank {} of namespace {}, the launcher's environment \
                 says PE {my_pe}",
                proc_.rank, pmix.me.nspace
            ),
            }));
        }
        let size = pmix.job_size(timeout)?;
        if size != n_pes {
            let _ = pmix.finalize(timeout);
            return Err(Error::Launch(LaunchError::Service {
                service: "PMIx",
                what: format!(
                    "PMIx says namespace {} has {size} processes, the launcher's environment says \
                 {n_pes} PEs",
                    pmix.me.nspace
                ),
            }));
        }
        Ok(pmix)
    }

    fn api() -> &'static Api {
        // Only reached after `connect` loaded it.
        match API.get() {
            Some(Ok(api)) => api,
            _ => unreachable!("PMIx calls before the library was loaded"),
        }
    }

    /// `PMIX_JOB_SIZE` of this job.
    fn job_size(&self, timeout: Duration) -> Result<u32> {
        let value = self.get_value(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, timeout, |v| {
            if v.kind != PMIX_UINT32 {
                return None;
            }
            // SAFETY: `kind` says the uint32 member of the union is set.
            Some(unsafe { v.data.uint32 })
        })?;
        value.ok_or_else(|| {
            Error::Launch(LaunchError::Service {
                service: "PMIx",
                what: format!(
                    "PMIx_Get({}, {PMIX_JOB_SIZE}): not a uint32",
                    self.me.nspace
                ),
            })
        })
    }

    /// Stores `value` under this process's `key` and commits it; seen by the others after
    /// the next fence.
    pub fn put(&mut self, key: &str, value: &[u8], timeout: Duration) -> Result<()> {
        check_own_key(key)?;
        let api = Self::api();
        let ckey = c_key(key)?;
        let mut bytes = value.to_vec();
        let what = format!("PMIx_Put({key})");
        let status = bounded(&what, timeout, move || {
            let mut v = Value {
                kind: PMIX_BYTE_OBJECT,
                data: Data {
                    bo: ByteObject {
                        bytes: bytes.as_mut_ptr().cast(),
                        size: bytes.len(),
                    },
                },
            };
            // SAFETY: `v` describes `bytes`, alive for the call; PMIx_Put copies the value.
            let status = unsafe { (api.put)(PMIX_GLOBAL, ckey.as_ptr(), &mut v) };
            if status != PMIX_SUCCESS {
                return (status, "PMIx_Put");
            }
            // SAFETY: no arguments.
            (unsafe { (api.commit)() }, "PMIx_Commit")
        })?;
        match status {
            (PMIX_SUCCESS, _) => Ok(()),
            (status, call) => Err(Error::Launch(LaunchError::Service {
                service: "PMIx",
                what: format!(
                    "{call}(key {key}, {} bytes): {}",
                    value.len(),
                    api.describe(status)
                ),
            })),
        }
    }

    /// Waits until every process of the job reached the fence, data collected (collective).
    pub fn fence(&mut self, timeout: Duration) -> Result<()> {
        let api = Self::api();
        let all = self.me.to_c(PMIX_RANK_WILDCARD);
        let info = [Info::flag(PMIX_COLLECT_DATA, true), Info::timeout(timeout)];
        let status = bounded("PMIx_Fence", timeout, move || {
            // SAFETY: one valid proc and two valid info structures, alive for the call.
            unsafe { (api.fence)(&all, 1, info.as_ptr(), info.len()) }
        })?;
        if status != PMIX_SUCCESS {
            return Err(Error::Launch(LaunchError::Service {
                service: "PMIx",
                what: format!(
                    "PMIx_Fence(namespace {}, all ranks): {}",
                    self.me.nspace,
                    api.describe(status)
                ),
            }));
        }
        Ok(())
    }

    /// The bytes rank `rank` put under `key`.
    pub fn get(&mut self, rank: u32, key: &str, timeout: Duration) -> Result<Vec<u8>> {
        check_own_key(key)?;
        let value = self.get_value(rank, key, timeout, |v| {
            (v.kind == PMIX_BYTE_OBJECT).then(|| {
                // SAFETY: `kind` says the byte object is set; PMIx gives `size` bytes at
                // `bytes` (or none).
                let bo = unsafe { v.data.bo };
                if bo.bytes.is_null() || bo.size == 0 {
                    Vec::new()
                } else {
                    // SAFETY: as above.
                    unsafe { std::slice::from_raw_parts(bo.bytes.cast::<u8>(), bo.size) }.to_vec()
                }
            })
        })?;
        value.ok_or_else(|| {
            Error::Launch(LaunchError::Service {
                service: "PMIx",
                what: format!("PMIx_Get(rank {rank}, key {key}): the value is not a byte object"),
            })
        })
    }

    /// `PMIx_Get` of (`rank`, `key`), read by `read` before PMIx's copy is freed.
    fn get_value<T: Send + 'static>(
        &self,
        rank: u32,
        key: &str,
        timeout: Duration,
        read: fn(&Value) -> Option<T>,
    ) -> Result<Option<T>> {
        let api = Self::api();
        let ckey = c_key(key)?;
        let who = self.me.to_c(rank);
        let info = [Info::timeout(timeout)];
        let what = format!("PMIx_Get(rank {rank}, key {key})");
        let (status, value) = bounded(&what, timeout, move || {
            let mut out: *mut Value = std::ptr::null_mut();
            // SAFETY: valid proc, key and info, alive for the call; PMIx allocates `*out`.
            let status =
                unsafe { (api.get)(&who, ckey.as_ptr(), info.as_ptr(), info.len(), &mut out) };
            if status != PMIX_SUCCESS || out.is_null() {
                return (status, None);
            }
            // SAFETY: PMIx returned a valid value it allocated (PMIX_VALUE_CREATE: malloc);
            // it is read, then released as PMIX_VALUE_RELEASE does: destruct, then free.
            let value = unsafe {
                let value = read(&*out);
                (api.value_destruct)(out);
                libc::free(out.cast());
                value
            };
            (status, value)
        })?;
        if status != PMIX_SUCCESS {
            return Err(Error::Launch(LaunchError::Service {
                service: "PMIx",
                what: format!(
                    "{what} in namespace {}: {}",
                    self.me.nspace,
                    api.describe(status)
                ),
            }));
        }
        Ok(value)
    }

    /// Ends this process's use of PMIx (reference-counted by PMIx: an MPI library in the
    /// same process keeps its own).
    pub fn finalize(&mut self, timeout: Duration) -> Result<()> {
        if self.finalized {
            return Ok(());
        }
        self.finalized = true;
        let api = Self::api();
        let status = bounded("PMIx_Finalize", timeout, move || {
            // SAFETY: no info array.
            unsafe { (api.finalize)(std::ptr::null(), 0) }
        })?;
        if status != PMIX_SUCCESS {
            return Err(Error::Launch(LaunchError::Service {
                service: "PMIx",
                what: format!("PMIx_Finalize: {}", api.describe(status)),
            }));
        }
        Ok(())
    }
}

impl Drop for Pmix {
    fn drop(&mut self) {
        if !self.finalized {
            let _ = self.finalize(Duration::from_secs(5));
        }
    }
}

fn c_key(key: &str) -> Result<CString> {
    if key.is_empty() || key.len() > PMIX_MAX_KEYLEN {
        return Err(Error::Launch(LaunchError::Service {
            service: "PMIx",
            what: format!("PMIx key '{key}': must be 1 to {PMIX_MAX_KEYLEN} bytes"),
        }));
    }
    CString::new(key).map_err(|_| {
        Error::Launch(LaunchError::Service {
            service: "PMIx",
            what: format!("PMIx key '{key}' holds a NUL byte"),
        })
    })
}

/// Keys this library puts and gets leave PMIx's own (`pmix*`) alone.
fn check_own_key(key: &str) -> Result<()> {
    if key.starts_with("pmix") {
        return Err(Error::Launch(LaunchError::Service {
            service: "PMIx",
            what: format!("PMIx key '{key}': names starting with 'pmix' are PMIx's own"),
        }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, size_of, MaybeUninit};

    /// Offset of `$field` in `$ty` (`offset_of!` is newer than this crate's minimum Rust).
    macro_rules! offset {
        ($ty:ty, $field:ident) => {{
            let x = MaybeUninit::<$ty>::uninit();
            let base = x.as_ptr();
            // SAFETY: only the field's address is taken, nothing is read.
            let field = unsafe { std::ptr::addr_of!((*base).$field) };
            field as usize - base as usize
        }};
    }

    /// The numbers `pmix_common.h` of PMIx 4.2.2 (Debian 12's libpmix-dev) gives on x86_64
    /// and aarch64 (LP64): sizeof, _Alignof and offsetof of the types declared above.
    #[test]
    fn layouts_match_pmix_common_h() {
        assert_eq!(size_of::<Proc>(), 260);
        assert_eq!(align_of::<Proc>(), 4);
        assert_eq!(offset!(Proc, rank), 256);
        assert_eq!(size_of::<ByteObject>(), 16);
        assert_eq!(offset!(ByteObject, size), 8);
        assert_eq!(size_of::<Value>(), 32);
        assert_eq!(align_of::<Value>(), 8);
        assert_eq!(offset!(Value, data), 8);
        assert_eq!(size_of::<Info>(), 552);
        assert_eq!(align_of::<Info>(), 8);
        assert_eq!(offset!(Info, flags), 512);
        assert_eq!(offset!(Info, value), 520);
        assert_eq!(PMIX_RANK_WILDCARD, 4_294_967_294);
    }

    #[test]
    fn info_keys_and_timeouts() {
        let info = Info::timeout(Duration::from_millis(300));
        // SAFETY: the key is NUL-terminated (zeroed array, shorter key).
        let key = unsafe { CStr::from_ptr(info.key.as_ptr()) };
        assert_eq!(key.to_str().unwrap(), "pmix.timeout");
        assert_eq!(info.value.kind, PMIX_INT);
        // SAFETY: integer is the member set.
        assert_eq!(unsafe { info.value.data.integer }, 1);
        let info = Info::timeout(Duration::from_secs(120));
        // SAFETY: as above.
        assert_eq!(unsafe { info.value.data.integer }, 120);
    }

    #[test]
    fn bad_keys_are_refused() {
        assert!(c_key("shmem.job_id").is_ok() && check_own_key("shmem.job_id").is_ok());
        assert!(c_key(PMIX_JOB_SIZE).is_ok());
        assert!(check_own_key("pmix.mine").is_err());
        for bad in ["", "a\0b"] {
            assert!(c_key(bad).is_err(), "{bad:?}");
        }
        assert!(c_key(&"k".repeat(512)).is_err());
    }

    #[test]
    fn a_missing_library_is_named() {
        let why = load(Some("/nonexistent/libpmix-test.so"))
            .err()
            .unwrap()
            .to_string();
        assert!(why.contains("/nonexistent/libpmix-test.so"), "{why}");
    }

    #[test]
    fn a_call_that_never_returns_is_bounded() {
        let msg = bounded("PMIx_Fence", Duration::from_millis(50), || {
            std::thread::sleep(Duration::from_secs(2))
        })
        .unwrap_err()
        .to_string();
        assert!(msg.contains("PMIx: PMIx_Fence: no answer"), "{msg}");
    }
}
