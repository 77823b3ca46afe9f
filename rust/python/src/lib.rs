//! `shmem._shmem`, the compiled half of the `shmem` Python package: CANN SHMEM's Python API
//! (`_pyshmem`'s names, argument order and return conventions) and the few OpenSHMEM routines
//! the Pythonic layer (`shmem.core`, plain Python) builds on.
//!
//! It owns the conversion between Python values and the C ABI and nothing else: every call goes
//! to `libshmem.so` through `shmem-sys`, so the process holds the one runtime that C programs,
//! torch extensions and this module share. It must never keep state of the job itself.
//!
//! Conventions, as CANN's: routines return 0 or a negative `ACLSHMEM_*` code, addresses are
//! Python ints, and `None` stands where a pointer cannot be had (a failed allocation, a PE whose
//! memory cannot be mapped). A bad argument (a negative size, a PE outside the job, a wrong type)
//! raises `ValueError` or `TypeError` naming the call, the argument and its value. Calls that
//! block (start-up, collectives, waits) release the GIL; short puts and gets keep it, since
//! releasing it costs more than the copy.

use core::ffi::{c_char, c_int, c_void};
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use shmem_sys as sys;

mod buffer;
mod dlpack;
mod lowlevel;
mod rma;
mod typed;

/// Copies at least this large release the GIL while they run.
const GIL_RELEASE_BYTES: usize = 64 * 1024;

/// `ValueError("<call>: <what>")`.
pub(crate) fn bad(call: &str, what: String) -> PyErr {
    PyValueError::new_err(format!("{call}: {what}"))
}

/// A size or count argument: 0 or more.
pub(crate) fn size_arg(call: &str, name: &str, v: i64) -> PyResult<usize> {
    usize::try_from(v).map_err(|_| bad(call, format!("{name}={v} must be 0 or more")))
}

/// An address argument: a Python int from `shmem_malloc`, `shmem_ptr`, a NumPy array's data
/// pointer...; 0 is allowed (the routine then reports it as C does).
pub(crate) fn addr_arg(call: &str, name: &str, v: i64) -> PyResult<*mut c_void> {
    if v < 0 {
        return Err(bad(call, format!("{name}={v} is not an address")));
    }
    Ok(v as usize as *mut c_void)
}

/// A PE argument: a PE of the running job (any int before start-up: the C routine reports it).
pub(crate) fn pe_arg(call: &str, name: &str, pe: i64) -> PyResult<c_int> {
    // SAFETY: shmem_n_pes only reads the library's state; it answers -1 or 1 before start-up.
    let n = unsafe { sys::shmem_n_pes() };
    let ok = pe >= 0 && (n <= 0 || pe < i64::from(n));
    if !ok {
        return Err(bad(
            call,
            format!("{name}={pe} is not a PE of this job (0 to {})", n - 1),
        ));
    }
    Ok(pe as c_int)
}

/// An `int` argument of C.
pub(crate) fn int_arg(call: &str, name: &str, v: i64) -> PyResult<c_int> {
    c_int::try_from(v).map_err(|_| bad(call, format!("{name}={v} does not fit a C int")))
}

/// Runs `f` without the GIL when `bytes` is large enough to be worth it.
pub(crate) fn maybe_released<T: Send>(
    py: Python<'_>,
    bytes: usize,
    f: impl FnOnce() -> T + Send,
) -> T {
    if bytes >= GIL_RELEASE_BYTES {
        py.allow_threads(f)
    } else {
        f()
    }
}

/// A raw pointer that crosses `allow_threads` (the C routine it is handed to is thread-safe).
#[derive(Clone, Copy)]
pub(crate) struct SendPtr(pub *mut c_void);
// SAFETY: the pointer is only handed to libshmem's routines, which may run on any thread.
unsafe impl Send for SendPtr {}

// ---- Classes -----------------------------------------------------------------------------------

/// The data engine of a job (CANN's `data_op_engine_type_t`). This library moves data with the
/// host CPU, which plays MTE's part: only `MTE` is available; the others are refused with
/// `ACLSHMEM_NOT_SUPPORTED` (-100) by `shmem_set_data_op_engine_type`.
#[pyclass(eq, eq_int, module = "shmem._shmem")]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[allow(clippy::upper_case_acronyms)]
pub enum OpEngineType {
    /// The memory-transfer engine (here: the host CPU).
    MTE = 0x01,
    /// System DMA (not on the host device).
    SDMA = 0x02,
    /// RDMA over Converged Ethernet (not in this build).
    ROCE = 0x04,
    /// Unified DMA (not on the host device).
    UDMA = 0x08,
}

impl OpEngineType {
    fn from_raw(v: c_int) -> Option<Self> {
        match v {
            0x01 => Some(Self::MTE),
            0x02 => Some(Self::SDMA),
            0x04 => Some(Self::ROCE),
            0x08 => Some(Self::UDMA),
            _ => None,
        }
    }
}

#[pymethods]
impl OpEngineType {
    /// The C value.
    #[getter]
    fn value(&self) -> i32 {
        *self as i32
    }
    /// The member's name.
    #[getter]
    fn name(&self) -> String {
        format!("{self:?}")
    }
}

/// Where start-up is (`shmem_init_status`).
#[pyclass(eq, eq_int, module = "shmem._shmem")]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum InitStatus {
    /// Not started, or finalized.
    NOT_INITIALIZED = 0,
    /// The heap exists; start-up is not finished.
    SHM_CREATED = 1,
    /// Running.
    INITIALIZED = 2,
    /// A state the library does not name.
    INVALID = 0x7fff_ffff,
}

#[pymethods]
impl InitStatus {
    /// The C value.
    #[getter]
    fn value(&self) -> i32 {
        *self as i32
    }
    /// The member's name.
    #[getter]
    fn name(&self) -> String {
        format!("{self:?}")
    }
}

/// Optional start-up attributes (CANN's `aclshmem_init_optional_attr_t`): timeouts in seconds
/// (1 or more) and the data engine.
#[pyclass(module = "shmem._shmem")]
#[derive(Clone, Copy)]
pub struct OptionalAttr {
    raw: sys::aclshmem_init_optional_attr_t,
}

#[pymethods]
impl OptionalAttr {
    /// Defaults: this version, engine MTE, every timeout 120 s.
    #[new]
    fn new() -> Self {
        Self {
            raw: sys::aclshmem_init_optional_attr_t::default(),
        }
    }
    /// The struct's version word.
    #[getter]
    fn version(&self) -> i32 {
        self.raw.version
    }
    #[setter]
    fn set_version(&mut self, v: i32) {
        self.raw.version = v;
    }
    /// The data engine (`OpEngineType`; an int the enum does not name stays an int).
    #[getter]
    fn data_op_engine_type(&self, py: Python<'_>) -> PyResult<PyObject> {
        let v = self.raw.data_op_engine_type;
        Ok(match OpEngineType::from_raw(v) {
            Some(e) => Py::new(py, e)?.into_any(),
            None => v.into_pyobject(py)?.into_any().unbind(),
        })
    }
    #[setter]
    fn set_data_op_engine_type(&mut self, v: &Bound<'_, PyAny>) -> PyResult<()> {
        self.raw.data_op_engine_type = engine_arg("OptionalAttr.data_op_engine_type", v)?;
        Ok(())
    }
    /// Seconds allowed to join the job.
    #[getter]
    fn shm_init_timeout(&self) -> u32 {
        self.raw.shm_init_timeout
    }
    #[setter]
    fn set_shm_init_timeout(&mut self, v: u32) {
        self.raw.shm_init_timeout = v;
    }
    /// Seconds allowed to make and exchange the heap.
    #[getter]
    fn shm_create_timeout(&self) -> u32 {
        self.raw.shm_create_timeout
    }
    #[setter]
    fn set_shm_create_timeout(&mut self, v: u32) {
        self.raw.shm_create_timeout = v;
    }
    /// Seconds allowed to each control step of a running job.
    #[getter]
    fn control_operation_timeout(&self) -> u32 {
        self.raw.control_operation_timeout
    }
    #[setter]
    fn set_control_operation_timeout(&mut self, v: u32) {
        self.raw.control_operation_timeout = v;
    }
    fn __repr__(&self) -> String {
        format!(
            "OptionalAttr(version={:#x}, data_op_engine_type={}, shm_init_timeout={}, shm_create_timeout={}, control_operation_timeout={})",
            self.raw.version,
            self.raw.data_op_engine_type,
            self.raw.shm_init_timeout,
            self.raw.shm_create_timeout,
            self.raw.control_operation_timeout
        )
    }
}

/// An `OpEngineType` or its int value.
fn engine_arg(call: &str, v: &Bound<'_, PyAny>) -> PyResult<c_int> {
    if let Ok(e) = v.extract::<OpEngineType>() {
        return Ok(e as c_int);
    }
    match v.extract::<i64>() {
        Ok(i) => int_arg(call, "value", i),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{call}: value={} is neither an OpEngineType nor an int",
            v.repr()?
        ))),
    }
}

/// Start-up attributes (CANN's `aclshmemx_init_attr_t`): this PE, the PE count, the store
/// address `ip_port` (`tcp://ip:port` or `tcp6://[ip]:port`), the heap size per PE and the
/// optional attributes. `option_attr` is shared, as in CANN: `attr.option_attr.shm_init_timeout
/// = 5` changes these attributes.
#[pyclass(module = "shmem._shmem")]
pub struct InitAttr {
    /// This PE (`my_pe`).
    #[pyo3(get, set)]
    my_rank: i32,
    /// PEs in the job (`n_pes`).
    #[pyo3(get, set)]
    n_ranks: i32,
    ip_port: String,
    /// Bytes of symmetric heap per PE.
    #[pyo3(get, set)]
    local_mem_size: u64,
    /// The optional attributes.
    #[pyo3(get, set)]
    option_attr: Py<OptionalAttr>,
}

#[pymethods]
impl InitAttr {
    /// Zeros, no address, default optional attributes.
    #[new]
    fn new(py: Python<'_>) -> PyResult<Self> {
        Ok(Self {
            my_rank: 0,
            n_ranks: 0,
            ip_port: String::new(),
            local_mem_size: 0,
            option_attr: Py::new(py, OptionalAttr::new())?,
        })
    }
    /// The store address (at most 63 bytes).
    #[getter]
    fn ip_port(&self) -> String {
        self.ip_port.clone()
    }
    #[setter]
    fn set_ip_port(&mut self, v: String) -> PyResult<()> {
        check_ip_port("InitAttr.ip_port", &v)?;
        self.ip_port = v;
        Ok(())
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "InitAttr(my_rank={}, n_ranks={}, ip_port={:?}, local_mem_size={}, option_attr={})",
            self.my_rank,
            self.n_ranks,
            self.ip_port,
            self.local_mem_size,
            self.option_attr.borrow(py).__repr__()
        )
    }
}

fn check_ip_port(call: &str, v: &str) -> PyResult<()> {
    if v.len() >= sys::ACLSHMEM_MAX_IP_PORT_LEN || v.contains('\0') {
        return Err(bad(
            call,
            format!(
                "ip_port={v:?} is longer than {} bytes or holds a NUL",
                sys::ACLSHMEM_MAX_IP_PORT_LEN - 1
            ),
        ));
    }
    Ok(())
}

impl InitAttr {
    /// The C struct these attributes describe.
    fn to_raw(&self, py: Python<'_>) -> sys::aclshmemx_init_attr_t {
        let mut raw = sys::aclshmemx_init_attr_t {
            my_pe: self.my_rank,
            n_pes: self.n_ranks,
            local_mem_size: self.local_mem_size,
            option_attr: self.option_attr.borrow(py).raw,
            ..Default::default()
        };
        for (d, s) in raw.ip_port.iter_mut().zip(self.ip_port.bytes()) {
            *d = s as c_char;
        }
        raw
    }
    /// Takes the fields of a C struct.
    fn set_from_raw(&mut self, py: Python<'_>, raw: &sys::aclshmemx_init_attr_t) {
        self.my_rank = raw.my_pe;
        self.n_ranks = raw.n_pes;
        self.local_mem_size = raw.local_mem_size;
        let bytes: Vec<u8> = raw
            .ip_port
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        self.ip_port = String::from_utf8_lossy(&bytes).into_owned();
        self.option_attr.borrow_mut(py).raw = raw.option_attr;
    }
}

/// A team's configuration (`num_contexts`), as `shmem_team_get_config` returns it.
#[pyclass(module = "shmem._shmem")]
#[derive(Clone)]
pub struct TeamConfig {
    /// Contexts the team was made for.
    #[pyo3(get, set)]
    num_contexts: i32,
}

#[pymethods]
impl TeamConfig {
    /// `TeamConfig()` or `TeamConfig(num_contexts)`.
    #[new]
    #[pyo3(signature = (num_contexts = 0))]
    fn new(num_contexts: i32) -> Self {
        Self { num_contexts }
    }
    fn __repr__(&self) -> String {
        format!("TeamConfig(num_contexts={})", self.num_contexts)
    }
}

// ---- Starting and ending ---------------------------------------------------------------------

/// Attributes that cross `allow_threads` (`comm_args` points at a unique id alive meanwhile).
struct SendAttr(sys::aclshmemx_init_attr_t);
// SAFETY: the struct is only read by aclshmemx_init_attr, on whichever thread runs it.
unsafe impl Send for SendAttr {}

fn init_attr_released(py: Python<'_>, flags: c_int, attr: sys::aclshmemx_init_attr_t) -> c_int {
    let mut a = SendAttr(attr);
    py.allow_threads(move || {
        let a = &mut a;
        // SAFETY: `a.0` is a complete attribute struct owned by this closure.
        unsafe { sys::aclshmemx_init_attr(flags, &mut a.0) }
    })
}

/// Set once `shmem_finalize` succeeded: the library cannot start again in this process (it
/// would end the process), so `shmem_init` answers with a code instead.
static FINALIZED: AtomicBool = AtomicBool::new(false);

/// `Some(code)` when start-up can no longer happen in this process.
fn refuse_restart(call: &str) -> Option<c_int> {
    if FINALIZED.load(Ordering::Relaxed) {
        eprintln!(
            "shmem: ERROR: {call}: called after shmem_finalize; the library cannot be restarted \
             in this process"
        );
        return Some(sys::ACLSHMEM_INNER_ERROR);
    }
    None
}

/// The launcher variables that name this process's rank, in the order the library checks them.
const LAUNCHER_RANKS: &[(&str, &str)] = &[
    ("SHMEM_RUN_RANK", "shmemrun"),
    ("OMPI_COMM_WORLD_RANK", "Open MPI's mpirun"),
    ("PMI_RANK", "MPICH's mpiexec"),
    ("SLURM_PROCID", "Slurm's srun"),
    ("RANK", "torchrun"),
];

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// `shmem_init(mype, npes, mem_size)`, or `shmem_init(attributes)` with an `InitAttr`.
///
/// Starts the library on this PE (collective over the job's PEs) with `mem_size` bytes of
/// symmetric heap, finding the other PEs the way the environment says, in this order:
///
/// 1. `SHMEM_MASTER_ADDR` and `SHMEM_MASTER_PORT` (CANN's variables): PE 0 serves the job's
///    store at `tcp://ADDR:PORT` and the others dial it (processes started by hand; TLS as for
///    `InitAttr.ip_port`, or `SHMEM_TLS_DISABLE=1`).
/// 2. A launcher's variables (shmemrun, Open MPI's mpirun, Slurm, MPICH, torchrun's `RANK`,
///    `WORLD_SIZE`, `MASTER_ADDR`): the library's own start-up, with `SHMEM_SYMMETRIC_SIZE` set
///    to `mem_size`; `mype` and `npes` must be what the launcher says.
/// 3. Nothing, and `npes` is 1: a job of this process alone.
///
/// Otherwise it says on stderr what it looked for and returns `ACLSHMEM_BOOTSTRAP_ERROR` (-6).
/// Returns 0, or CANN's negative code.
#[pyfunction]
#[pyo3(signature = (mype, npes = None, mem_size = None))]
fn shmem_init(
    py: Python<'_>,
    mype: &Bound<'_, PyAny>,
    npes: Option<i64>,
    mem_size: Option<i64>,
) -> PyResult<i32> {
    const CALL: &str = "shmem_init";
    if let Some(rc) = refuse_restart(CALL) {
        return Ok(rc);
    }
    if let Ok(attr) = mype.downcast::<InitAttr>() {
        if npes.is_some() || mem_size.is_some() {
            return Err(PyTypeError::new_err(
                "shmem_init: with an InitAttr, give no other argument",
            ));
        }
        let raw = attr.borrow().to_raw(py);
        return Ok(init_attr_released(
            py,
            sys::ACLSHMEMX_INIT_WITH_DEFAULT,
            raw,
        ));
    }
    let mype: i64 = mype.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "shmem_init: mype={} is neither an int nor an InitAttr",
            mype.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })?;
    let (Some(npes), Some(mem_size)) = (npes, mem_size) else {
        return Err(PyTypeError::new_err(
            "shmem_init: give (mype, npes, mem_size) or an InitAttr",
        ));
    };
    if npes < 1 || npes > i64::from(c_int::MAX) {
        return Err(bad(CALL, format!("npes={npes} must be 1 or more")));
    }
    if mype < 0 || mype >= npes {
        return Err(bad(
            CALL,
            format!("mype={mype} must be 0 to npes-1={}", npes - 1),
        ));
    }
    if mem_size <= 0 {
        return Err(bad(CALL, format!("mem_size={mem_size} must be 1 or more")));
    }
    let (mype, npes) = (mype as c_int, npes as c_int);
    let what = format!("shmem_init(mype={mype}, npes={npes}, mem_size={mem_size})");

    if let (Some(addr), Some(port)) = (env("SHMEM_MASTER_ADDR"), env("SHMEM_MASTER_PORT")) {
        let url = if addr.contains(':') {
            format!(
                "tcp6://[{}]:{port}",
                addr.trim_matches(|c| c == '[' || c == ']')
            )
        } else {
            format!("tcp://{addr}:{port}")
        };
        check_ip_port(CALL, &url)?;
        let ip =
            CString::new(url).map_err(|_| bad(CALL, "SHMEM_MASTER_ADDR holds a NUL".into()))?;
        let mut attr: *mut sys::aclshmemx_init_attr_t = core::ptr::null_mut();
        // SAFETY: every pointer is valid; the library fills its own struct and returns it.
        let rc =
            unsafe { sys::aclshmemx_set_attr(mype, npes, mem_size as u64, ip.as_ptr(), &mut attr) };
        if rc != 0 || attr.is_null() {
            return Ok(rc);
        }
        // SAFETY: on success `attr` points at the library's filled struct.
        let raw = unsafe { *attr };
        return Ok(init_attr_released(
            py,
            sys::ACLSHMEMX_INIT_WITH_DEFAULT,
            raw,
        ));
    }

    let launcher = LAUNCHER_RANKS.iter().find(|(var, _)| env(var).is_some());
    if launcher.is_none() && npes != 1 {
        eprintln!(
            "shmem: ERROR: {what}: nothing says where the other PEs are: start the program under \
             a launcher (shmemrun -n {npes}, mpirun -n {npes}, torchrun --nproc-per-node={npes}), \
             or set SHMEM_MASTER_ADDR and SHMEM_MASTER_PORT to the address PE 0 serves the job's \
             store at, or pass an InitAttr with ip_port"
        );
        return Ok(sys::ACLSHMEM_BOOTSTRAP_ERROR);
    }
    std::env::set_var("SHMEM_SYMMETRIC_SIZE", mem_size.to_string());
    // SAFETY: shmem_init reads the environment and starts the library; no pointer is passed.
    py.allow_threads(|| unsafe { sys::shmem_init() });
    // SAFETY: the library is running (shmem_init ends the process when it cannot start).
    let (me, n) = unsafe { (sys::shmem_my_pe(), sys::shmem_n_pes()) };
    if me != mype || n != npes {
        let by = launcher.map_or("no launcher", |(_, l)| l);
        eprintln!(
            "shmem: ERROR: {what}: {by} started this process as PE {me} of {n}, not PE {mype} of {npes}"
        );
        return Ok(sys::ACLSHMEM_INVALID_PARAM);
    }
    Ok(sys::ACLSHMEM_SUCCESS)
}

/// Ends the library on this PE (collective); 0 or CANN's code. It cannot be started again in
/// the same process: a later `shmem_init` returns `ACLSHMEM_INNER_ERROR` (-4).
#[pyfunction]
fn shmem_finalize(py: Python<'_>) -> i32 {
    // SAFETY: no arguments; the library checks its state.
    let rc = py.allow_threads(|| unsafe { sys::aclshmem_finalize() });
    if rc == 0 {
        FINALIZED.store(true, Ordering::Relaxed);
    }
    rc
}

/// Fills `attributes` (an `InitAttr`) for PE `my_rank` of `n_ranks` with `local_mem_size` bytes
/// of heap and the store address `ip_port`; default timeouts and engine. 0 or CANN's code.
#[pyfunction]
fn shmem_set_attributes(
    py: Python<'_>,
    my_rank: i64,
    n_ranks: i64,
    local_mem_size: i64,
    ip_port: &str,
    attributes: &Bound<'_, InitAttr>,
) -> PyResult<i32> {
    const CALL: &str = "shmem_set_attributes";
    let my = int_arg(CALL, "my_rank", my_rank)?;
    let n = int_arg(CALL, "n_ranks", n_ranks)?;
    let size = size_arg(CALL, "local_mem_size", local_mem_size)?;
    check_ip_port(CALL, ip_port)?;
    let ip =
        CString::new(ip_port).map_err(|_| bad(CALL, format!("ip_port={ip_port:?} holds a NUL")))?;
    let mut attr: *mut sys::aclshmemx_init_attr_t = core::ptr::null_mut();
    // SAFETY: valid pointers; the library fills its own struct.
    let rc = unsafe { sys::aclshmemx_set_attr(my, n, size as u64, ip.as_ptr(), &mut attr) };
    if rc == 0 && !attr.is_null() {
        // SAFETY: on success `attr` points at the library's filled struct.
        let raw = unsafe { *attr };
        attributes.borrow_mut().set_from_raw(py, &raw);
    }
    Ok(rc)
}

/// Where start-up is, as an `InitStatus`.
#[pyfunction]
fn shmem_init_status() -> InitStatus {
    // SAFETY: no arguments.
    match unsafe { sys::aclshmemx_init_status() } {
        0 => InitStatus::NOT_INITIALIZED,
        1 => InitStatus::SHM_CREATED,
        2 => InitStatus::INITIALIZED,
        _ => InitStatus::INVALID,
    }
}

/// Sets the data engine of `attributes`: only `OpEngineType.MTE` is available here (others:
/// `ACLSHMEM_NOT_SUPPORTED`, -100; a value outside the enum: `ACLSHMEM_INVALID_VALUE`, -2).
#[pyfunction]
fn shmem_set_data_op_engine_type(
    py: Python<'_>,
    attributes: &Bound<'_, InitAttr>,
    value: &Bound<'_, PyAny>,
) -> PyResult<i32> {
    let v = engine_arg("shmem_set_data_op_engine_type", value)?;
    let mut raw = attributes.borrow().to_raw(py);
    // SAFETY: `raw` is a complete attribute struct.
    let rc = unsafe { sys::aclshmemx_set_data_op_engine_type(&mut raw, v) };
    if rc == 0 {
        attributes.borrow_mut().set_from_raw(py, &raw);
    }
    Ok(rc)
}

/// Sets all three timeouts of `attributes` to `value` seconds (1 or more). 0 or CANN's code.
#[pyfunction]
fn shmem_set_timeout(
    py: Python<'_>,
    attributes: &Bound<'_, InitAttr>,
    value: i64,
) -> PyResult<i32> {
    let v = u32::try_from(value).map_err(|_| {
        bad(
            "shmem_set_timeout",
            format!("value={value} is not a number of seconds"),
        )
    })?;
    let mut raw = attributes.borrow().to_raw(py);
    // SAFETY: `raw` is a complete attribute struct.
    let rc = unsafe { sys::aclshmemx_set_timeout(&mut raw, v) };
    if rc == 0 {
        attributes.borrow_mut().set_from_raw(py, &raw);
    }
    Ok(rc)
}

/// Makes a unique id for a new job (this process must be its PE 0): 136 bytes to hand to the
/// other PEs privately, or `None` when it cannot be made (the reason is logged).
#[pyfunction]
fn shmem_get_unique_id(py: Python<'_>) -> Option<Py<PyBytes>> {
    let mut uid = sys::aclshmemx_uniqueid_t::default();
    // SAFETY: `uid` is a valid, initialised id.
    let rc = unsafe { sys::aclshmemx_get_uniqueid(&mut uid) };
    if rc != 0 {
        return None;
    }
    // SAFETY: the id is plain old data of its size.
    let bytes = unsafe {
        core::slice::from_raw_parts(
            (&uid as *const sys::aclshmemx_uniqueid_t).cast::<u8>(),
            core::mem::size_of::<sys::aclshmemx_uniqueid_t>(),
        )
    };
    Some(PyBytes::new(py, bytes).unbind())
}

/// Starts PE `mype` of `npes` with `mem_size` bytes of heap, joining the job through `uid`
/// (from `shmem_get_unique_id` on PE 0). 0 or CANN's code.
#[pyfunction]
fn shmem_init_using_unique_id(
    py: Python<'_>,
    mype: i64,
    npes: i64,
    mem_size: i64,
    uid: &[u8],
) -> PyResult<i32> {
    const CALL: &str = "shmem_init_using_unique_id";
    if let Some(rc) = refuse_restart(CALL) {
        return Ok(rc);
    }
    let size = core::mem::size_of::<sys::aclshmemx_uniqueid_t>();
    if uid.len() != size {
        return Err(bad(
            CALL,
            format!("uid is {} bytes, not the {size} of a unique id", uid.len()),
        ));
    }
    let my = int_arg(CALL, "mype", mype)?;
    let n = int_arg(CALL, "npes", npes)?;
    let mut id = sys::aclshmemx_uniqueid_t::default();
    // SAFETY: `uid` holds exactly one id's bytes; the id is plain old data.
    unsafe {
        core::ptr::copy_nonoverlapping(
            uid.as_ptr(),
            (&mut id as *mut sys::aclshmemx_uniqueid_t).cast::<u8>(),
            size,
        );
    }
    let mut attr = sys::aclshmemx_init_attr_t::default();
    // SAFETY: valid pointers; `id` outlives the init below, which reads it through comm_args.
    let rc = unsafe { sys::aclshmemx_set_attr_uniqueid_args(my, n, mem_size, &mut id, &mut attr) };
    if rc != 0 {
        return Ok(rc);
    }
    Ok(init_attr_released(
        py,
        sys::ACLSHMEMX_INIT_WITH_UNIQUEID,
        attr,
    ))
}

// ---- TLS of the store, logging ----------------------------------------------------------------

/// The Python decryptor of private-key passwords (`register_decrypt_handler`).
static DECRYPT: Mutex<Option<PyObject>> = Mutex::new(None);
/// The Python logger (`set_extern_logger`).
static LOGGER: Mutex<Option<PyObject>> = Mutex::new(None);

/// The C side of the decryptor: calls the Python function with the cipher text (str) and copies
/// its str result, NUL-terminated, into `plain`.
unsafe extern "C" fn decrypt_trampoline(
    cipher: *const c_char,
    cipher_len: usize,
    plain: *mut c_char,
    plain_len: *mut usize,
) -> c_int {
    if cipher.is_null() || plain.is_null() || plain_len.is_null() {
        return -1;
    }
    Python::with_gil(|py| {
        let f = match DECRYPT.lock() {
            Ok(g) => g.as_ref().map(|f| f.clone_ref(py)),
            Err(_) => None,
        };
        let Some(f) = f else { return -1 };
        // SAFETY: the library passes `cipher_len` readable bytes.
        let text = unsafe { core::slice::from_raw_parts(cipher.cast::<u8>(), cipher_len) };
        let text = String::from_utf8_lossy(text).into_owned();
        let Ok(out) = f.call1(py, (text,)).and_then(|o| o.extract::<String>(py)) else {
            return -1;
        };
        // SAFETY: `plain_len` holds the buffer's size on entry.
        let cap = unsafe { *plain_len };
        if out.len() >= cap {
            return -1;
        }
        // SAFETY: `plain` has room for `cap` bytes, more than the result and its NUL.
        unsafe {
            core::ptr::copy_nonoverlapping(out.as_ptr().cast::<c_char>(), plain, out.len());
            *plain.add(out.len()) = 0;
            *plain_len = out.len();
        }
        0
    })
}

/// Registers `py_decrypt_func(cipher_text: str) -> str`, which turns an encrypted private-key
/// password into the password when the store's TLS key is given (`set_conf_store_tls_key`).
/// Returns 0.
#[pyfunction]
fn register_decrypt_handler(py_decrypt_func: &Bound<'_, PyAny>) -> PyResult<i32> {
    if !py_decrypt_func.is_callable() {
        return Err(PyTypeError::new_err(format!(
            "register_decrypt_handler: py_decrypt_func={} is not callable",
            py_decrypt_func.repr()?
        )));
    }
    if let Ok(mut g) = DECRYPT.lock() {
        *g = Some(py_decrypt_func.clone().unbind());
    }
    Ok(0)
}

/// Turns the job store's TLS off (`enable` False) or on with the certificates `info` describes
/// (`tlsCert: ...; tlsCaPath: ...; ...`, see SECURITY.md); before `shmem_init`. 0 or CANN's code.
#[pyfunction]
#[pyo3(signature = (enable, info = ""))]
fn set_conf_store_tls(enable: bool, info: &str) -> PyResult<i32> {
    let len = u32::try_from(info.len())
        .map_err(|_| bad("set_conf_store_tls", "info is too long".into()))?;
    // SAFETY: `info` is valid for `len` bytes during the call.
    Ok(unsafe { sys::shmem_set_conf_store_tls(enable, info.as_ptr().cast::<c_char>(), len) })
}

/// Gives the store's private key `tls_pk` and its password `tls_pk_pw` (encrypted when a
/// decryptor is given here or registered with `register_decrypt_handler`). 0 or CANN's code.
#[pyfunction]
#[pyo3(signature = (tls_pk, tls_pk_pw, py_decrypt_func = None))]
fn set_conf_store_tls_key(
    tls_pk: &str,
    tls_pk_pw: &str,
    py_decrypt_func: Option<&Bound<'_, PyAny>>,
) -> PyResult<i32> {
    if let Some(f) = py_decrypt_func.filter(|f| !f.is_none()) {
        register_decrypt_handler(f)?;
    }
    let has = DECRYPT.lock().map(|g| g.is_some()).unwrap_or(false);
    let handler: sys::aclshmem_decrypt_handler = if has { Some(decrypt_trampoline) } else { None };
    let call = "set_conf_store_tls_key";
    let pk_len = u32::try_from(tls_pk.len()).map_err(|_| bad(call, "tls_pk is too long".into()))?;
    let pw_len =
        u32::try_from(tls_pk_pw.len()).map_err(|_| bad(call, "tls_pk_pw is too long".into()))?;
    // SAFETY: both strings are valid for their lengths during the call.
    Ok(unsafe {
        sys::shmem_set_config_store_tls_key(
            tls_pk.as_ptr().cast::<c_char>(),
            pk_len,
            tls_pk_pw.as_ptr().cast::<c_char>(),
            pw_len,
            handler,
        )
    })
}

unsafe extern "C" fn logger_trampoline(level: c_int, msg: *const c_char) {
    if msg.is_null() {
        return;
    }
    // SAFETY: the library passes a NUL-terminated line valid for the call.
    let text = unsafe { core::ffi::CStr::from_ptr(msg) }
        .to_string_lossy()
        .into_owned();
    Python::with_gil(|py| {
        let f = LOGGER
            .lock()
            .ok()
            .and_then(|g| g.as_ref().map(|f| f.clone_ref(py)));
        if let Some(f) = f {
            if let Err(e) = f.call1(py, (level, text)) {
                e.print(py);
            }
        }
    });
}

/// Hands every following log line of the library to `log_fn(level: int, message: str)`
/// (CANN's levels: 0 debug, 1 info, 2 warn, 3 error); `None` sends them to stderr again. The
/// function must not call this package. Returns 0.
#[pyfunction]
fn set_extern_logger(log_fn: &Bound<'_, PyAny>) -> PyResult<i32> {
    if log_fn.is_none() {
        if let Ok(mut g) = LOGGER.lock() {
            *g = None;
        }
        // SAFETY: null restores stderr.
        return Ok(unsafe { sys::aclshmemx_set_extern_logger(None) });
    }
    if !log_fn.is_callable() {
        return Err(PyTypeError::new_err(format!(
            "set_extern_logger: log_fn={} is not callable",
            log_fn.repr()?
        )));
    }
    if let Ok(mut g) = LOGGER.lock() {
        *g = Some(log_fn.clone().unbind());
    }
    // SAFETY: the trampoline stays valid for the life of the process.
    Ok(unsafe { sys::aclshmemx_set_extern_logger(Some(logger_trampoline)) })
}

/// Shows the library's log lines of `level` (0 debug .. 4 fatal) and above. 0, or
/// `ACLSHMEM_INVALID_VALUE` (-2) for another level.
#[pyfunction]
fn set_log_level(level: i64) -> PyResult<i32> {
    let l = int_arg("set_log_level", "level", level)?;
    // SAFETY: plain value.
    Ok(unsafe { sys::aclshmemx_set_log_level(l) })
}

// ---- Symmetric memory ------------------------------------------------------------------------

fn ptr_or_none(p: *mut c_void) -> Option<usize> {
    (!p.is_null()).then_some(p as usize)
}

/// `size` bytes of symmetric memory (collective): its address, or `None` (size 0, before
/// start-up, heap full).
#[pyfunction]
fn shmem_malloc(py: Python<'_>, size: i64) -> PyResult<Option<usize>> {
    let n = size_arg("shmem_malloc", "size", size)?;
    // SAFETY: plain value; collective, hence without the GIL.
    Ok(ptr_or_none(
        py.allow_threads(|| SendPtr(unsafe { sys::aclshmem_malloc(n) }))
            .0,
    ))
}

/// `nmemb * size` zeroed bytes of symmetric memory (collective), or `None`.
#[pyfunction]
fn shmem_calloc(py: Python<'_>, nmemb: i64, size: i64) -> PyResult<Option<usize>> {
    let a = size_arg("shmem_calloc", "nmemb", nmemb)?;
    let b = size_arg("shmem_calloc", "size", size)?;
    // SAFETY: plain values.
    Ok(ptr_or_none(
        py.allow_threads(|| SendPtr(unsafe { sys::aclshmem_calloc(a, b) }))
            .0,
    ))
}

/// `size` bytes of symmetric memory aligned to `alignment` (a power of two; collective), or
/// `None`.
#[pyfunction]
fn shmem_align(py: Python<'_>, alignment: i64, size: i64) -> PyResult<Option<usize>> {
    let a = size_arg("shmem_align", "alignment", alignment)?;
    if !a.is_power_of_two() {
        return Err(bad(
            "shmem_align",
            format!("alignment={alignment} is not a power of two"),
        ));
    }
    let n = size_arg("shmem_align", "size", size)?;
    // SAFETY: plain values.
    Ok(ptr_or_none(
        py.allow_threads(|| SendPtr(unsafe { sys::aclshmem_align(a, n) }))
            .0,
    ))
}

/// Frees symmetric memory from `shmem_malloc`, `shmem_calloc` or `shmem_align` (collective).
#[pyfunction]
fn shmem_free(py: Python<'_>, ptr: i64) -> PyResult<()> {
    let p = SendPtr(addr_arg("shmem_free", "ptr", ptr)?);
    py.allow_threads(move || {
        let p = p;
        // SAFETY: the library checks that `p` is one of its blocks (null does nothing).
        unsafe { sys::aclshmem_free(p.0) }
    });
    Ok(())
}

/// Where this process can load and store the symmetric `ptr` of PE `peer` (an address), or
/// `None` when it cannot.
#[pyfunction]
fn shmem_ptr(ptr: i64, peer: i64) -> PyResult<Option<usize>> {
    let p = addr_arg("shmem_ptr", "ptr", ptr)?;
    let pe = pe_arg("shmem_ptr", "peer", peer)?;
    // SAFETY: the library checks the address; nothing is dereferenced here.
    Ok(ptr_or_none(unsafe { sys::aclshmem_ptr(p, pe) }))
}

/// Where this PE's symmetric heap lives: `(kind, device)`, kind 0 host memory, 1 an Ascend
/// NPU, 2 an NVIDIA GPU (`shmemx_heap_device`), device the accelerator's index (-1 for host
/// memory); `None` when the library is not running.
#[pyfunction]
fn osh_heap_device() -> Option<(i32, i32)> {
    let mut device: c_int = -1;
    // SAFETY: `device` is a valid int the call writes at most once.
    let kind = unsafe { sys::shmemx_heap_device(&mut device) };
    (kind >= 0).then_some((kind, device))
}

// ---- Job and teams ---------------------------------------------------------------------------

/// This PE's number.
#[pyfunction]
fn get_my_pe() -> i32 {
    // SAFETY: no arguments.
    unsafe { sys::aclshmem_my_pe() }
}

/// The number of PEs of the job.
#[pyfunction]
fn get_pe_count() -> i32 {
    // SAFETY: no arguments.
    unsafe { sys::aclshmem_n_pes() }
}

fn team_arg(call: &str, team: i64) -> PyResult<c_int> {
    int_arg(call, "team", team)
}

/// This PE's number in team `team_id`, or -1 (a bad handle).
#[pyfunction]
fn team_my_pe(team_id: i64) -> PyResult<i32> {
    let t = team_arg("team_my_pe", team_id)?;
    // SAFETY: the library checks the handle.
    Ok(unsafe { sys::aclshmem_team_my_pe(t) })
}

/// The number of PEs of team `team_id`, or -1 (a bad handle).
#[pyfunction]
fn team_n_pes(team_id: i64) -> PyResult<i32> {
    let t = team_arg("team_n_pes", team_id)?;
    // SAFETY: the library checks the handle.
    Ok(unsafe { sys::aclshmem_team_n_pes(t) })
}

/// Collective over `parent`: a team of its PEs `start`, `start + stride`, ... (`size` of them).
/// Returns the new team's handle (`ACLSHMEM_TEAM_INVALID`, -1, on the parent's PEs left out),
/// or CANN's negative code.
#[pyfunction]
fn team_split_strided(
    py: Python<'_>,
    parent: i64,
    start: i64,
    stride: i64,
    size: i64,
) -> PyResult<i32> {
    let c = "team_split_strided";
    let (p, a, s, n) = (
        team_arg(c, parent)?,
        int_arg(c, "start", start)?,
        int_arg(c, "stride", stride)?,
        int_arg(c, "size", size)?,
    );
    let mut t = sys::ACLSHMEM_TEAM_INVALID;
    let rc = py.allow_threads(|| {
        let t = &mut t;
        // SAFETY: `t` is a valid out-parameter.
        unsafe { sys::aclshmem_team_split_strided(p, a, s, n, t) }
    });
    Ok(if rc != 0 { rc } else { t })
}

/// Collective over `parent`: a grid `x_range` PEs wide. Returns `(x_team, y_team)`, this PE's
/// row and column; `(code, code)` on failure.
#[pyfunction]
fn team_split_2d(py: Python<'_>, parent: i64, x_range: i64) -> PyResult<(i32, i32)> {
    let c = "team_split_2d";
    let (p, x) = (team_arg(c, parent)?, int_arg(c, "x_range", x_range)?);
    let (mut xt, mut yt) = (sys::ACLSHMEM_TEAM_INVALID, sys::ACLSHMEM_TEAM_INVALID);
    let rc = py.allow_threads(|| {
        let (xt, yt) = (&mut xt, &mut yt);
        // SAFETY: valid out-parameters.
        unsafe { sys::aclshmem_team_split_2d(p, x, xt, yt) }
    });
    Ok(if rc != 0 { (rc, rc) } else { (xt, yt) })
}

/// The configuration of `team` (a `TeamConfig`), or `None` for a bad handle.
#[pyfunction]
fn shmem_team_get_config(team: i64) -> PyResult<Option<TeamConfig>> {
    let t = team_arg("shmem_team_get_config", team)?;
    let mut cfg = sys::aclshmem_team_config_t::default();
    // SAFETY: `cfg` is a valid out-parameter.
    let rc = unsafe { sys::aclshmem_team_get_config(t, &mut cfg) };
    Ok((rc == 0).then_some(TeamConfig {
        num_contexts: cfg.num_contexts,
    }))
}

/// The number in `dest_team` of PE `src_pe` of `src_team`, or -1.
#[pyfunction]
fn team_translate_pe(src_team: i64, src_pe: i64, dest_team: i64) -> PyResult<i32> {
    let c = "team_translate_pe";
    let (s, p, d) = (
        team_arg(c, src_team)?,
        int_arg(c, "src_pe", src_pe)?,
        team_arg(c, dest_team)?,
    );
    // SAFETY: plain values; the library checks the handles.
    Ok(unsafe { sys::aclshmem_team_translate_pe(s, p, d) })
}

/// Collective over `team`: ends a team made by a split.
#[pyfunction]
fn team_destroy(py: Python<'_>, team: i64) -> PyResult<()> {
    let t = team_arg("team_destroy", team)?;
    // SAFETY: plain value; the library checks the handle.
    py.allow_threads(|| unsafe { sys::aclshmem_team_destroy(t) });
    Ok(())
}

// ---- RMA -------------------------------------------------------------------------------------

/// The four byte-RMA routines share their argument checks.
fn mem_args(
    call: &str,
    dst: i64,
    src: i64,
    elem_size: i64,
    pe: i64,
) -> PyResult<(SendPtr, SendPtr, usize, c_int)> {
    Ok((
        SendPtr(addr_arg(call, "dst", dst)?),
        SendPtr(addr_arg(call, "src", src)?),
        size_arg(call, "elem_size", elem_size)?,
        pe_arg(call, "pe", pe)?,
    ))
}

macro_rules! mem_routine {
    ($(#[$doc:meta])* $name:ident => $c:ident) => {
        $(#[$doc])*
        #[pyfunction]
        fn $name(py: Python<'_>, dst: i64, src: i64, elem_size: i64, pe: i64) -> PyResult<()> {
            let (d, s, n, pe) = mem_args(stringify!($name), dst, src, elem_size, pe)?;
            maybe_released(py, n, move || {
                let (d, s) = (d, s);
                // SAFETY: the library checks the symmetric address and ends the job naming the
                // routine when a range is outside symmetric memory; the local one is the caller's.
                unsafe { sys::$c(d.0, s.0, n, pe) }
            });
            Ok(())
        }
    };
}

mem_routine!(
    /// Copies `elem_size` bytes from local `src` to symmetric `dst` on PE `pe` (blocking).
    shmem_putmem => aclshmem_putmem);
mem_routine!(
    /// Copies `elem_size` bytes from symmetric `src` on PE `pe` to local `dst` (blocking).
    shmem_getmem => aclshmem_getmem);
mem_routine!(
    /// `shmem_putmem`, complete after `shmem_quiet`.
    shmem_putmem_nbi => aclshmem_putmem_nbi);
mem_routine!(
    /// `shmem_getmem`, complete after `shmem_quiet`.
    shmem_getmem_nbi => aclshmem_getmem_nbi);

macro_rules! signal_routine {
    ($(#[$doc:meta])* $name:ident => $c:ident) => {
        $(#[$doc])*
        #[pyfunction]
        #[allow(clippy::too_many_arguments)]
        fn $name(py: Python<'_>, dst: i64, src: i64, elem_size: i64, sig: i64, signal: i64, sig_op: i64, pe: i64) -> PyResult<()> {
            let call = stringify!($name);
            let (d, s, n, pe) = mem_args(call, dst, src, elem_size, pe)?;
            let g = SendPtr(addr_arg(call, "sig", sig)?);
            let v = i32::try_from(signal).map_err(|_| bad(call, format!("signal={signal} does not fit an int32")))?;
            if sig_op != i64::from(sys::ACLSHMEM_SIGNAL_SET) && sig_op != i64::from(sys::ACLSHMEM_SIGNAL_ADD) {
                return Err(bad(call, format!("sig_op={sig_op} is neither SIGNAL_SET (0) nor SIGNAL_ADD (1)")));
            }
            maybe_released(py, n, move || {
                let (d, s, g) = (d, s, g);
                // SAFETY: as for shmem_putmem; the signal address is checked the same way.
                unsafe { sys::$c(d.0, s.0, n, g.0, v, sig_op as c_int, pe) }
            });
            Ok(())
        }
    };
}

signal_routine!(
    /// Puts `elem_size` bytes, then updates the int32 signal at symmetric `sig` on PE `pe` by
    /// `sig_op` (0 SET, 1 ADD) with `signal`: a PE that sees the signal sees the data.
    shmem_putmem_signal => aclshmemx_putmem_signal);
signal_routine!(
    /// `shmem_putmem_signal`, complete after `shmem_quiet`.
    shmem_putmem_signal_nbi => aclshmemx_putmem_signal_nbi);

/// CANN's comparison codes (`CMP_EQ` 0 .. `CMP_LE` 5).
pub(crate) fn cann_cmp_arg(call: &str, cmp: i64) -> PyResult<c_int> {
    if !(0..=5).contains(&cmp) {
        return Err(bad(
            call,
            format!("cmp={cmp} is not one of CMP_EQ (0) .. CMP_LE (5)"),
        ));
    }
    Ok(cmp as c_int)
}

/// Waits until this PE's int32 signal at `sig_addr` compares true (`cmp`: CMP_EQ 0, NE 1,
/// GT 2, GE 3, LT 4, LE 5) with `cmp_val`.
#[pyfunction]
fn shmem_signal_wait_until(py: Python<'_>, sig_addr: i64, cmp: i64, cmp_val: i64) -> PyResult<()> {
    let call = "shmem_signal_wait_until";
    let p = SendPtr(addr_arg(call, "sig_addr", sig_addr)?);
    let c = cann_cmp_arg(call, cmp)?;
    let v = i32::try_from(cmp_val)
        .map_err(|_| bad(call, format!("cmp_val={cmp_val} does not fit an int32")))?;
    py.allow_threads(move || {
        let p = p;
        // SAFETY: the library checks the address.
        unsafe { sys::aclshmem_signal_wait_until(p.0.cast::<i32>(), c, v) }
    });
    Ok(())
}

// ---- Synchronisation -------------------------------------------------------------------------

/// Completes this PE's puts, then waits for every PE.
#[pyfunction]
fn shmem_barrier_all(py: Python<'_>) {
    // SAFETY: no arguments.
    py.allow_threads(|| unsafe { sys::aclshmem_barrier_all() });
}

/// Completes this PE's puts, then waits for every PE of `team`.
#[pyfunction]
fn shmem_barrier(py: Python<'_>, team: i64) -> PyResult<()> {
    let t = team_arg("shmem_barrier", team)?;
    // SAFETY: plain value; the library checks the handle.
    py.allow_threads(|| unsafe { sys::aclshmem_barrier(t) });
    Ok(())
}

/// Waits for every PE, completing nothing.
#[pyfunction]
fn shmem_sync_all(py: Python<'_>) {
    // SAFETY: no arguments.
    py.allow_threads(|| unsafe { sys::aclshmem_sync_all() });
}

/// Waits for every PE of `team`, completing nothing.
#[pyfunction]
fn shmem_sync(py: Python<'_>, team: i64) -> PyResult<()> {
    let t = team_arg("shmem_sync", team)?;
    // SAFETY: plain value; the library checks the handle.
    py.allow_threads(|| unsafe { sys::aclshmem_sync(t) });
    Ok(())
}

/// Completes every put, get and signal this PE issued. It keeps the GIL: towards PEs whose
/// memory is mapped (every PE of a job on one node) it is a memory fence, far cheaper than
/// releasing and taking the GIL again.
#[pyfunction]
fn shmem_quiet() {
    // SAFETY: no arguments.
    unsafe { sys::shmem_quiet() }
}

/// Orders this PE's puts to each PE.
#[pyfunction]
fn shmem_fence() {
    // SAFETY: no arguments.
    unsafe { sys::shmem_fence() }
}

// ---- Information, exit, routines of the NPU --------------------------------------------------

/// CANN's version of the API: `(major, minor)`.
#[pyfunction]
fn shmem_info_get_version() -> (i32, i32) {
    let (mut a, mut b) = (0, 0);
    // SAFETY: valid out-parameters.
    unsafe { sys::aclshmem_info_get_version(&mut a, &mut b) };
    (a, b)
}

/// The library's name.
#[pyfunction]
fn shmem_info_get_name() -> String {
    let mut buf = [0 as c_char; sys::SHMEM_MAX_NAME_LEN];
    // SAFETY: the buffer holds SHMEM_MAX_NAME_LEN bytes, as the routine needs.
    unsafe { sys::aclshmem_info_get_name(buf.as_mut_ptr()) };
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Ends the whole job with `status` from any PE; does not return.
#[pyfunction]
fn shmem_global_exit(py: Python<'_>, status: i64) -> PyResult<()> {
    let s = int_arg("shmem_global_exit", "status", status)?;
    // SAFETY: plain value; the routine does not return.
    py.allow_threads(|| unsafe { sys::aclshmem_global_exit(s) });
    Ok(())
}

/// Sets the unified-buffer (UB) scratch area through which AscendC kernels stage their puts and
/// gets: `offset` and `size` in bytes (multiples of 32, `size` at least 32), `event` the MTE
/// event id (0..7). Returns 0, or `ACLSHMEM_INVALID_PARAM` (-1) after a line naming the bad
/// argument; kernels of the CPU architecture ignore the area.
#[pyfunction]
fn mte_set_ub_params(offset: i64, size: i64, event: i64) -> PyResult<i32> {
    let c = "mte_set_ub_params";
    let o =
        u64::try_from(offset).map_err(|_| bad(c, format!("offset={offset} must be 0 or more")))?;
    let s =
        u32::try_from(size).map_err(|_| bad(c, format!("size={size} does not fit a uint32")))?;
    let e =
        u32::try_from(event).map_err(|_| bad(c, format!("event={event} does not fit a uint32")))?;
    // SAFETY: plain values.
    Ok(unsafe { sys::aclshmemx_set_mte_config(o, s, e) })
}

/// The NPU's FFTS (task scheduler) configuration word that mixed kernels take. The host device
/// has no FFTS: returns `ACLSHMEM_NOT_SUPPORTED` (-100) rather than a made-up word.
#[pyfunction]
fn get_ffts_config() -> i64 {
    i64::from(sys::ACLSHMEM_NOT_SUPPORTED)
}

// ---- The module --------------------------------------------------------------------------------

/// `shmem._shmem`: CANN SHMEM's Python API over libshmem.so (see the package's docstring).
#[pymodule]
fn _shmem(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<OpEngineType>()?;
    m.add_class::<InitStatus>()?;
    m.add_class::<OptionalAttr>()?;
    m.add_class::<InitAttr>()?;
    m.add_class::<TeamConfig>()?;
    m.add_function(wrap_pyfunction!(shmem_init, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_finalize, m)?)?;
    m.add("shmem_finialize", m.getattr("shmem_finalize")?)?;
    m.add_function(wrap_pyfunction!(shmem_set_attributes, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_init_status, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_set_data_op_engine_type, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_set_timeout, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_get_unique_id, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_init_using_unique_id, m)?)?;
    m.add_function(wrap_pyfunction!(register_decrypt_handler, m)?)?;
    m.add_function(wrap_pyfunction!(set_conf_store_tls, m)?)?;
    m.add_function(wrap_pyfunction!(set_conf_store_tls_key, m)?)?;
    m.add_function(wrap_pyfunction!(set_extern_logger, m)?)?;
    m.add_function(wrap_pyfunction!(set_log_level, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_malloc, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_calloc, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_align, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_free, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_ptr, m)?)?;
    m.add_function(wrap_pyfunction!(osh_heap_device, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::osh_dlpack_capsule, m)?)?;
    m.add_function(wrap_pyfunction!(get_my_pe, m)?)?;
    m.add_function(wrap_pyfunction!(get_pe_count, m)?)?;
    m.add("my_pe", m.getattr("get_my_pe")?)?;
    m.add("pe_count", m.getattr("get_pe_count")?)?;
    m.add_function(wrap_pyfunction!(team_my_pe, m)?)?;
    m.add_function(wrap_pyfunction!(team_n_pes, m)?)?;
    m.add("get_team_my_pe", m.getattr("team_my_pe")?)?;
    m.add("get_team_pe_count", m.getattr("team_n_pes")?)?;
    m.add_function(wrap_pyfunction!(team_split_strided, m)?)?;
    m.add_function(wrap_pyfunction!(team_split_2d, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_team_get_config, m)?)?;
    m.add_function(wrap_pyfunction!(team_translate_pe, m)?)?;
    m.add_function(wrap_pyfunction!(team_destroy, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_putmem, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_getmem, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_putmem_nbi, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_getmem_nbi, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_putmem_signal, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_putmem_signal_nbi, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_signal_wait_until, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_barrier_all, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_barrier, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_sync_all, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_sync, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_quiet, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_fence, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_info_get_version, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_info_get_name, m)?)?;
    m.add_function(wrap_pyfunction!(shmem_global_exit, m)?)?;
    m.add_function(wrap_pyfunction!(mte_set_ub_params, m)?)?;
    m.add_function(wrap_pyfunction!(get_ffts_config, m)?)?;
    for (name, value) in [
        ("ACLSHMEM_SUCCESS", sys::ACLSHMEM_SUCCESS),
        ("ACLSHMEM_INVALID_PARAM", sys::ACLSHMEM_INVALID_PARAM),
        ("ACLSHMEM_INVALID_VALUE", sys::ACLSHMEM_INVALID_VALUE),
        ("ACLSHMEM_INNER_ERROR", sys::ACLSHMEM_INNER_ERROR),
        ("ACLSHMEM_NOT_INITED", sys::ACLSHMEM_NOT_INITED),
        ("ACLSHMEM_BOOTSTRAP_ERROR", sys::ACLSHMEM_BOOTSTRAP_ERROR),
        ("ACLSHMEM_TIMEOUT_ERROR", sys::ACLSHMEM_TIMEOUT_ERROR),
        ("ACLSHMEM_MALLOC_FAILED", sys::ACLSHMEM_MALLOC_FAILED),
        ("ACLSHMEM_NOT_SUPPORTED", sys::ACLSHMEM_NOT_SUPPORTED),
        ("ACLSHMEM_TEAM_WORLD", sys::ACLSHMEM_TEAM_WORLD),
        ("ACLSHMEM_TEAM_INVALID", sys::ACLSHMEM_TEAM_INVALID),
        ("SIGNAL_SET", sys::ACLSHMEM_SIGNAL_SET),
        ("SIGNAL_ADD", sys::ACLSHMEM_SIGNAL_ADD),
        ("CMP_EQ", sys::ACLSHMEM_CMP_EQ),
        ("CMP_NE", sys::ACLSHMEM_CMP_NE),
        ("CMP_GT", sys::ACLSHMEM_CMP_GT),
        ("CMP_GE", sys::ACLSHMEM_CMP_GE),
        ("CMP_LT", sys::ACLSHMEM_CMP_LT),
        ("CMP_LE", sys::ACLSHMEM_CMP_LE),
    ] {
        m.add(name, value)?;
    }
    typed::register(m)?;
    lowlevel::register(m)?;
    buffer::register(m)?;
    rma::register(m)?;
    Ok(())
}
