//! The OpenSHMEM routines under the Pythonic layer (`shmem.core`): team handles as addresses,
//! 64-bit signals with OpenSHMEM's operations and comparisons, the byte collectives and the
//! typed reductions. Their names start with `osh_`; they are the package's own plumbing, not
//! CANN's API, and check their arguments as the CANN routines do.

use core::ffi::c_int;

use pyo3::prelude::*;
use shmem_sys as sys;

use crate::{addr_arg, bad, int_arg, maybe_released, pe_arg, size_arg, SendPtr};

/// A team handle (`shmem_team_t`) from an int; 0 is `SHMEM_TEAM_INVALID`.
fn team(call: &str, t: i64) -> PyResult<sys::shmem_team_t> {
    if t <= 0 {
        return Err(bad(call, format!("team={t} is not a team")));
    }
    Ok(t as usize as sys::shmem_team_t)
}

/// A team handle that crosses `allow_threads`.
#[derive(Clone, Copy)]
struct SendTeam(sys::shmem_team_t);
// SAFETY: team handles may be used from any thread.
unsafe impl Send for SendTeam {}

/// `SHMEM_TEAM_WORLD`, as an int.
#[pyfunction]
fn osh_team_world() -> usize {
    sys::shmem_team_world() as usize
}

/// `SHMEM_TEAM_SHARED`, as an int.
#[pyfunction]
fn osh_team_shared() -> usize {
    sys::shmem_team_shared() as usize
}

/// `shmem_team_split_strided` (collective over `parent`): `(code, new team or 0)`.
#[pyfunction]
fn osh_team_split_strided(
    py: Python<'_>,
    parent: i64,
    start: i64,
    stride: i64,
    size: i64,
) -> PyResult<(i32, usize)> {
    let c = "team_split_strided";
    let p = SendTeam(team(c, parent)?);
    let (a, s, n) = (
        int_arg(c, "start", start)?,
        int_arg(c, "stride", stride)?,
        int_arg(c, "size", size)?,
    );
    let (rc, out) = py.allow_threads(move || {
        let p = p;
        let mut out = SendTeam(sys::SHMEM_TEAM_INVALID);
        // SAFETY: valid handle and out-parameter; no configuration.
        let rc = unsafe {
            sys::shmem_team_split_strided(p.0, a, s, n, core::ptr::null(), 0, &mut out.0)
        };
        (rc, out)
    });
    Ok((rc, out.0 as usize))
}

/// `shmem_team_destroy` (collective over the team).
#[pyfunction]
fn osh_team_destroy(py: Python<'_>, t: i64) -> PyResult<()> {
    let t = SendTeam(team("team_destroy", t)?);
    py.allow_threads(move || {
        let t = t;
        // SAFETY: the library checks the handle.
        unsafe { sys::shmem_team_destroy(t.0) }
    });
    Ok(())
}

/// `shmem_team_my_pe`.
#[pyfunction]
fn osh_team_my_pe(t: i64) -> PyResult<i32> {
    // SAFETY: the library checks the handle.
    Ok(unsafe { sys::shmem_team_my_pe(team("team_my_pe", t)?) })
}

/// `shmem_team_n_pes`.
#[pyfunction]
fn osh_team_n_pes(t: i64) -> PyResult<i32> {
    // SAFETY: the library checks the handle.
    Ok(unsafe { sys::shmem_team_n_pes(team("team_n_pes", t)?) })
}

/// `shmem_team_translate_pe`.
#[pyfunction]
fn osh_team_translate_pe(src: i64, pe: i64, dest: i64) -> PyResult<i32> {
    let c = "team_translate_pe";
    // SAFETY: the library checks the handles.
    Ok(unsafe {
        sys::shmem_team_translate_pe(team(c, src)?, int_arg(c, "pe", pe)?, team(c, dest)?)
    })
}

/// `shmem_quiet` then `shmem_team_sync`: a barrier over the team; 0 or nonzero.
#[pyfunction]
fn osh_team_barrier(py: Python<'_>, t: i64) -> PyResult<i32> {
    let t = SendTeam(team("barrier", t)?);
    Ok(py.allow_threads(move || {
        let t = t;
        // SAFETY: the library checks the handle.
        unsafe {
            sys::shmem_quiet();
            sys::shmem_team_sync(t.0)
        }
    }))
}

fn sig_op(call: &str, op: i64) -> PyResult<c_int> {
    if op != i64::from(sys::SHMEM_SIGNAL_SET) && op != i64::from(sys::SHMEM_SIGNAL_ADD) {
        return Err(bad(
            call,
            format!("sig_op={op} is neither SIGNAL_SET nor SIGNAL_ADD"),
        ));
    }
    Ok(op as c_int)
}

/// `shmem_putmem_signal` (`nbi` true: `shmem_putmem_signal_nbi`) with a 64-bit signal.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn osh_putmem_signal(
    py: Python<'_>,
    dst: i64,
    src: i64,
    n: i64,
    sig: i64,
    signal: u64,
    op: i64,
    pe: i64,
    nbi: bool,
) -> PyResult<()> {
    let c = "put_signal";
    let d = SendPtr(addr_arg(c, "dst", dst)?);
    let s = SendPtr(addr_arg(c, "src", src)?);
    let g = SendPtr(addr_arg(c, "signal_var", sig)?);
    let n = size_arg(c, "nbytes", n)?;
    let op = sig_op(c, op)?;
    let pe = pe_arg(c, "pe", pe)?;
    maybe_released(py, n, move || {
        let (d, s, g) = (d, s, g);
        // SAFETY: the library checks both symmetric ranges.
        unsafe {
            if nbi {
                sys::shmem_putmem_signal_nbi(d.0, s.0, n, g.0.cast::<u64>(), signal, op, pe)
            } else {
                sys::shmem_putmem_signal(d.0, s.0, n, g.0.cast::<u64>(), signal, op, pe)
            }
        }
    });
    Ok(())
}

/// Updates the 64-bit signal at symmetric `sig` on `pe` atomically: set or add `value`.
#[pyfunction]
fn osh_signal_op(sig: i64, value: u64, op: i64, pe: i64) -> PyResult<()> {
    let c = "signal_op";
    let g = addr_arg(c, "signal_var", sig)?.cast::<u64>();
    let op = sig_op(c, op)?;
    let pe = pe_arg(c, "pe", pe)?;
    // SAFETY: the library checks the symmetric address.
    unsafe {
        if op == sys::SHMEM_SIGNAL_SET {
            sys::typed::uint64::atomic_set(g, value, pe)
        } else {
            sys::typed::uint64::atomic_add(g, value, pe)
        }
    }
    Ok(())
}

/// `shmem_signal_wait_until` (OpenSHMEM comparisons 1..6): the signal's value.
#[pyfunction]
fn osh_signal_wait_until(py: Python<'_>, sig: i64, cmp: i64, value: u64) -> PyResult<u64> {
    let c = "signal_wait";
    let g = SendPtr(addr_arg(c, "signal_var", sig)?);
    if !(1..=6).contains(&cmp) {
        return Err(bad(c, format!("cmp={cmp} is not a comparison")));
    }
    Ok(py.allow_threads(move || {
        let g = g;
        // SAFETY: the library checks the address.
        unsafe { sys::shmem_signal_wait_until(g.0.cast::<u64>(), cmp as c_int, value) }
    }))
}

/// `shmem_signal_fetch`.
#[pyfunction]
fn osh_signal_fetch(sig: i64) -> PyResult<u64> {
    let g = addr_arg("signal_fetch", "signal_var", sig)?;
    // SAFETY: the library checks the address.
    Ok(unsafe { sys::shmem_signal_fetch(g.cast::<u64>()) })
}

/// The byte collectives on a team: `kind` is broadcast (with `root`), fcollect or alltoall; 0 or
/// nonzero.
#[pyfunction]
fn osh_collective(
    py: Python<'_>,
    kind: &str,
    t: i64,
    dest: i64,
    src: i64,
    nbytes: i64,
    root: i64,
) -> PyResult<i32> {
    let tm = SendTeam(team(kind, t)?);
    let d = SendPtr(addr_arg(kind, "dest", dest)?);
    let s = SendPtr(addr_arg(kind, "source", src)?);
    let n = size_arg(kind, "nbytes", nbytes)?;
    let root = int_arg(kind, "root", root)?;
    let f: unsafe extern "C" fn(
        sys::shmem_team_t,
        *mut core::ffi::c_void,
        *const core::ffi::c_void,
        usize,
    ) -> c_int = match kind {
        "broadcast" => {
            return Ok(py.allow_threads(move || {
                let (tm, d, s) = (tm, d, s);
                // SAFETY: the library checks the team and the symmetric ranges.
                unsafe { sys::shmem_broadcastmem(tm.0, d.0, s.0, n, root) }
            }));
        }
        "fcollect" => sys::shmem_fcollectmem,
        "alltoall" => sys::shmem_alltoallmem,
        _ => {
            return Err(bad(
                "collective",
                format!("kind={kind:?} is not a collective"),
            ))
        }
    };
    Ok(py.allow_threads(move || {
        let (tm, d, s) = (tm, d, s);
        // SAFETY: as above.
        unsafe { f(tm.0, d.0, s.0, n) }
    }))
}

/// The NumPy dtype of a C type name of the reduction table: `float` and `double` are
/// `float32` and `float64`, the fixed-width types keep their names.
fn numpy_name(c_name: &str) -> &str {
    match c_name {
        "float" => "float32",
        "double" => "float64",
        other => other,
    }
}

/// A reduction of `nreduce` elements of type `dtype` (a NumPy kind: int8 .. uint64, float32,
/// float64) with `op` (sum, prod, min, max, and, or, xor) over a team; 0 or nonzero.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn osh_reduce(
    py: Python<'_>,
    op: &str,
    dtype: &str,
    t: i64,
    dest: i64,
    src: i64,
    nreduce: i64,
) -> PyResult<i32> {
    let c = "reduce";
    let tm = SendTeam(team(c, t)?);
    let d = SendPtr(addr_arg(c, "dest", dest)?);
    let s = SendPtr(addr_arg(c, "source", src)?);
    let n = size_arg(c, "nreduce", nreduce)?;
    macro_rules! pick {
        ($m:ident, $ty:ty, [$($o:ident),*]) => {
            match op {
                $(stringify!($o) => {
                    let f: unsafe extern "C" fn(sys::shmem_team_t, *mut $ty, *const $ty, usize) -> c_int = sys::reduce::$m::$o;
                    return Ok(py.allow_threads(move || {
                        let (tm, d, s) = (tm, d, s);
                        // SAFETY: the library checks the team and the symmetric ranges.
                        unsafe { f(tm.0, d.0.cast::<$ty>(), s.0.cast::<$ty>(), n) }
                    }));
                })*
                _ => {}
            }
        };
    }
    // One arm per type of shmem-sys's reduction table, under its NumPy name.
    macro_rules! by_dtype {
        ($($m:ident: $ty:ty => [$($o:ident),*];)*) => {
            match dtype {
                $(d if d == numpy_name(stringify!($m)) => pick!($m, $ty, [$($o),*]),)*
                _ => {
                    return Err(bad(
                        c,
                        format!("dtype={dtype} has no reductions (int8 .. uint64, float32, float64)"),
                    ))
                }
            }
        };
    }
    sys::reduction_types!(by_dtype! {});
    Err(bad(c, format!("op={op:?} is not a reduction of {dtype}")))
}

/// Adds the `osh_*` routines to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(osh_team_world, m)?)?;
    m.add_function(wrap_pyfunction!(osh_team_shared, m)?)?;
    m.add_function(wrap_pyfunction!(osh_team_split_strided, m)?)?;
    m.add_function(wrap_pyfunction!(osh_team_destroy, m)?)?;
    m.add_function(wrap_pyfunction!(osh_team_my_pe, m)?)?;
    m.add_function(wrap_pyfunction!(osh_team_n_pes, m)?)?;
    m.add_function(wrap_pyfunction!(osh_team_translate_pe, m)?)?;
    m.add_function(wrap_pyfunction!(osh_team_barrier, m)?)?;
    m.add_function(wrap_pyfunction!(osh_putmem_signal, m)?)?;
    m.add_function(wrap_pyfunction!(osh_signal_op, m)?)?;
    m.add_function(wrap_pyfunction!(osh_signal_wait_until, m)?)?;
    m.add_function(wrap_pyfunction!(osh_signal_fetch, m)?)?;
    m.add_function(wrap_pyfunction!(osh_collective, m)?)?;
    m.add_function(wrap_pyfunction!(osh_reduce, m)?)?;
    m.add("OSH_SIGNAL_SET", sys::SHMEM_SIGNAL_SET)?;
    m.add("OSH_SIGNAL_ADD", sys::SHMEM_SIGNAL_ADD)?;
    for (n, v) in [
        ("EQ", sys::SHMEM_CMP_EQ),
        ("NE", sys::SHMEM_CMP_NE),
        ("GT", sys::SHMEM_CMP_GT),
        ("GE", sys::SHMEM_CMP_GE),
        ("LT", sys::SHMEM_CMP_LT),
        ("LE", sys::SHMEM_CMP_LE),
    ] {
        m.add(format!("OSH_CMP_{n}").as_str(), v)?;
    }
    Ok(())
}
