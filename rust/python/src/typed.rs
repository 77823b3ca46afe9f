//! CANN's typed host routines, one Python function per type and operation:
//! `shmem_<T>_put(dst, src, nelems, pe)` and `_get`, their `_nbi` forms, `shmem_<T>_p(dst,
//! value, pe)`, `shmem_<T>_g(src, pe)`, and for the types CANN waits on
//! `shmem_<T>_wait_until(ivar, cmp, cmp_value)` and `shmem_<T>_test(ivar, cmp, cmp_value)`
//! (0 or 1). `T` is CANN's host type list: float, double, int8 .. int64, uint8 .. uint64, char
//! (a one-character str or an int). Comparisons are CANN's (`CMP_EQ` 0 .. `CMP_LE` 5).

use core::ffi::{c_char, c_int, c_void, CStr};
use std::ffi::CString;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict, PyTuple};
use shmem_sys as sys;

use crate::{addr_arg, bad, cann_cmp_arg, maybe_released, pe_arg, size_arg, SendPtr};

/// The arguments of a call by position or keyword, in the order `names` gives.
fn args<'py>(
    call: &str,
    names: &[&str],
    a: &Bound<'py, PyTuple>,
    kw: Option<&Bound<'py, PyDict>>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let mut out: Vec<Option<Bound<'py, PyAny>>> = vec![None; names.len()];
    if a.len() > names.len() {
        return Err(PyTypeError::new_err(format!(
            "{call}() takes {} arguments ({}), {} given",
            names.len(),
            names.join(", "),
            a.len()
        )));
    }
    for (i, v) in a.iter().enumerate() {
        out[i] = Some(v);
    }
    if let Some(kw) = kw {
        for (k, v) in kw.iter() {
            let k: String = k.extract()?;
            let Some(i) = names.iter().position(|n| *n == k) else {
                return Err(PyTypeError::new_err(format!(
                    "{call}() has no argument '{k}'"
                )));
            };
            if out[i].is_some() {
                return Err(PyTypeError::new_err(format!("{call}() got '{k}' twice")));
            }
            out[i] = Some(v);
        }
    }
    out.into_iter()
        .zip(names)
        .map(|(v, n)| v.ok_or_else(|| PyTypeError::new_err(format!("{call}() needs '{n}'"))))
        .collect()
}

/// An int argument, or `TypeError` naming it.
fn int(call: &str, name: &str, v: &Bound<'_, PyAny>) -> PyResult<i64> {
    v.extract::<i64>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{call}: {name}={} is not an int",
            v.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })
}

/// A Python value as an element of type `T`, and back.
trait Elem: Copy + Send + 'static {
    fn from_py(call: &str, name: &str, v: &Bound<'_, PyAny>) -> PyResult<Self>;
    fn to_py(self, py: Python<'_>) -> PyResult<PyObject>;
}

macro_rules! num_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            fn from_py(call: &str, name: &str, v: &Bound<'_, PyAny>) -> PyResult<Self> {
                v.extract::<$t>().map_err(|_| {
                    bad(call, format!("{name}={} is not a {}", v.repr().map(|r| r.to_string()).unwrap_or_default(), stringify!($t)))
                })
            }
            fn to_py(self, py: Python<'_>) -> PyResult<PyObject> {
                Ok(self.into_pyobject(py)?.into_any().unbind())
            }
        }
    )*};
}
num_elem!(f32, f64, i8, i16, i32, i64, u8, u16, u32, u64);

/// CANN's `char`: a one-character str (or bytes, or an int) in, a one-character str out.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct Char(c_char);

impl Elem for Char {
    fn from_py(call: &str, name: &str, v: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(i) = v.extract::<i64>() {
            return i8::try_from(i)
                .or_else(|_| u8::try_from(i).map(|u| u as i8))
                .map(|c| Char(c as c_char))
                .map_err(|_| bad(call, format!("{name}={i} is not a char")));
        }
        let s: Vec<u8> = if let Ok(s) = v.extract::<String>() {
            s.into_bytes()
        } else {
            v.extract::<Vec<u8>>().unwrap_or_default()
        };
        if s.len() != 1 {
            return Err(bad(
                call,
                format!("{name}={} is not one character", v.repr()?),
            ));
        }
        Ok(Char(s[0] as c_char))
    }
    fn to_py(self, py: Python<'_>) -> PyResult<PyObject> {
        let s = String::from_utf8_lossy(&[self.0 as u8]).into_owned();
        Ok(s.into_pyobject(py)?.into_any().unbind())
    }
}

/// The C routines of one type, as plain function pointers over `*mut c_void`.
struct Rma<T> {
    put: unsafe extern "C" fn(*mut T, *mut T, usize, c_int),
    get: unsafe extern "C" fn(*mut T, *mut T, usize, c_int),
    put_nbi: unsafe extern "C" fn(*mut T, *mut T, usize, c_int),
    get_nbi: unsafe extern "C" fn(*mut T, *mut T, usize, c_int),
    p: unsafe extern "C" fn(*mut T, T, c_int),
    g: unsafe extern "C" fn(*mut T, i32) -> T,
}

struct P2p<T> {
    wait_until: unsafe extern "C" fn(*mut T, c_int, T),
    test: unsafe extern "C" fn(*mut T, c_int, T, *mut c_int),
}

fn name(s: String) -> &'static CStr {
    // The module's functions live as long as the process: their names may be leaked once.
    Box::leak(CString::new(s).unwrap_or_default().into_boxed_c_str())
}

fn add<F, R>(m: &Bound<'_, PyModule>, fname: String, doc: String, f: F) -> PyResult<()>
where
    F: Fn(&Bound<'_, PyTuple>, Option<&Bound<'_, PyDict>>) -> R + Send + 'static,
    for<'p> R: pyo3::impl_::callback::IntoPyCallbackOutput<'p, *mut pyo3::ffi::PyObject>,
{
    let func = PyCFunction::new_closure(m.py(), Some(name(fname.clone())), Some(name(doc)), f)?;
    m.add(fname.as_str(), func)
}

fn register_rma<T: Elem>(m: &Bound<'_, PyModule>, t: &'static str, c: Rma<T>) -> PyResult<()>
where
    Rma<T>: Send,
{
    let size = core::mem::size_of::<T>();
    for (op, f, what) in [
        (
            "put",
            c.put,
            "Copies `nelems` elements from local `src` to symmetric `dst` on PE `pe` (blocking).",
        ),
        (
            "get",
            c.get,
            "Copies `nelems` elements from symmetric `src` on PE `pe` to local `dst` (blocking).",
        ),
        ("put_nbi", c.put_nbi, "`put`, complete after `shmem_quiet`."),
        ("get_nbi", c.get_nbi, "`get`, complete after `shmem_quiet`."),
    ] {
        let fname = format!("shmem_{t}_{op}");
        let call = fname.clone();
        add(
            m,
            fname,
            format!("shmem_{t}_{op}(dst, src, nelems, pe)\n--\n\n{what}"),
            move |a, kw| -> PyResult<()> {
                let v = args(&call, &["dst", "src", "nelems", "pe"], a, kw)?;
                let d = SendPtr(addr_arg(&call, "dst", int(&call, "dst", &v[0])?)?);
                let s = SendPtr(addr_arg(&call, "src", int(&call, "src", &v[1])?)?);
                let n = size_arg(&call, "nelems", int(&call, "nelems", &v[2])?)?;
                let pe = pe_arg(&call, "pe", int(&call, "pe", &v[3])?)?;
                maybe_released(a.py(), n.saturating_mul(size), move || {
                    let (d, s) = (d, s);
                    // SAFETY: the library checks the symmetric range and ends the job naming the
                    // routine when it is outside symmetric memory; the local one is the caller's.
                    unsafe { f(d.0.cast::<T>(), s.0.cast::<T>(), n, pe) }
                });
                Ok(())
            },
        )?;
    }
    let (p, g) = (c.p, c.g);
    let call = format!("shmem_{t}_p");
    add(m, call.clone(), format!("shmem_{t}_p(dst, value, pe)\n--\n\nWrites one {t} `value` to symmetric `dst` on PE `pe`."), move |a, kw| -> PyResult<()> {
        let v = args(&call, &["dst", "value", "pe"], a, kw)?;
        let d = addr_arg(&call, "dst", int(&call, "dst", &v[0])?)?;
        let x = T::from_py(&call, "value", &v[1])?;
        let pe = pe_arg(&call, "pe", int(&call, "pe", &v[2])?)?;
        // SAFETY: as for put.
        unsafe { p(d.cast::<T>(), x, pe) };
        Ok(())
    })?;
    let call = format!("shmem_{t}_g");
    add(
        m,
        call.clone(),
        format!("shmem_{t}_g(src, pe)\n--\n\nReads one {t} of symmetric `src` on PE `pe`."),
        move |a, kw| -> PyResult<PyObject> {
            let v = args(&call, &["src", "pe"], a, kw)?;
            let s = addr_arg(&call, "src", int(&call, "src", &v[0])?)?;
            let pe = pe_arg(&call, "pe", int(&call, "pe", &v[1])?)?;
            // SAFETY: as for get.
            let x = unsafe { g(s.cast::<T>(), pe) };
            x.to_py(a.py())
        },
    )
}

fn register_p2p<T: Elem>(m: &Bound<'_, PyModule>, t: &'static str, c: P2p<T>) -> PyResult<()> {
    let (w, tst) = (c.wait_until, c.test);
    let call = format!("shmem_{t}_wait_until");
    add(m, call.clone(), format!("shmem_{t}_wait_until(ivar, cmp, cmp_value)\n--\n\nWaits until this PE's {t} at symmetric `ivar` compares true (`cmp`: CMP_EQ 0 .. CMP_LE 5) with `cmp_value`."), move |a, kw| -> PyResult<()> {
        let v = args(&call, &["ivar", "cmp", "cmp_value"], a, kw)?;
        let p = SendPtr(addr_arg(&call, "ivar", int(&call, "ivar", &v[0])?)?);
        let cmp = cann_cmp_arg(&call, int(&call, "cmp", &v[1])?)?;
        let x = T::from_py(&call, "cmp_value", &v[2])?;
        a.py().allow_threads(move || {
            let p = p;
            // SAFETY: the library checks the address.
            unsafe { w(p.0.cast::<T>(), cmp, x) }
        });
        Ok(())
    })?;
    let call = format!("shmem_{t}_test");
    add(m, call.clone(), format!("shmem_{t}_test(ivar, cmp, cmp_value)\n--\n\n1 when this PE's {t} at symmetric `ivar` compares true with `cmp_value`, else 0; never blocks."), move |a, kw| -> PyResult<i32> {
        let v = args(&call, &["ivar", "cmp", "cmp_value"], a, kw)?;
        let p: *mut c_void = addr_arg(&call, "ivar", int(&call, "ivar", &v[0])?)?;
        let cmp = cann_cmp_arg(&call, int(&call, "cmp", &v[1])?)?;
        let x = T::from_py(&call, "cmp_value", &v[2])?;
        let mut res: c_int = 0;
        // SAFETY: the library checks the address; `res` is a valid out-parameter.
        unsafe { tst(p.cast::<T>(), cmp, x, &mut res) };
        Ok(res)
    })
}

// SAFETY of the casts below: `Char` is `repr(transparent)` over `c_char`, so a routine on
// `c_char` is the same routine on `Char`.
macro_rules! rma_of {
    ($m:ident, $t:ty) => {
        Rma::<$t> {
            put: sys::rma::$m::put,
            get: sys::rma::$m::get,
            put_nbi: sys::rma::$m::put_nbi,
            get_nbi: sys::rma::$m::get_nbi,
            p: sys::rma::$m::p,
            g: sys::rma::$m::g,
        }
    };
}
macro_rules! p2p_of {
    ($m:ident, $t:ty) => {
        P2p::<$t> {
            wait_until: sys::p2p::$m::wait_until,
            test: sys::p2p::$m::test,
        }
    };
}

/// Registers one family's routine set for each type of a `name: RustType` list (given by
/// `sys::cann_types!`): `$register(m, "name", $of!(name, RustType))`, the `char` entry as its
/// Python-facing `Char` (see above: same ABI as `c_char`).
macro_rules! register_each {
    ($m:ident, $register:ident, $of:ident, $family:ident; $($name:ident: $t:ty,)*) => {
        $(register_each!(@one $m, $register, $of, $family, $name, $t);)*
    };
    (@one $m:ident, $register:ident, $of:ident, $family:ident, char, $t:ty) => {
        // SAFETY: see above: same ABI for `c_char` and `Char`.
        let c: $family<Char> = unsafe { core::mem::transmute($of!(char, $t)) };
        $register($m, "char", c)?;
    };
    (@one $m:ident, $register:ident, $of:ident, $family:ident, $name:ident, $t:ty) => {
        $register($m, stringify!($name), $of!($name, $t))?;
    };
}

/// Adds every typed routine to the module, over CANN's host type lists (`sys::cann_types!`,
/// the lists of `<shmem/cann_types.h>`), and the lists themselves as `_RMA_TYPES` and
/// `_WAIT_TYPES` (the package's `RMA_TYPES` and `WAIT_TYPES`).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    sys::cann_types!(rma => register_each! { m, register_rma, rma_of, Rma; });
    sys::cann_types!(p2p => register_each! { m, register_p2p, p2p_of, P2p; });
    let names = |types: &[(&'static str, &str)]| types.iter().map(|(n, _)| *n).collect::<Vec<_>>();
    m.add(
        "_RMA_TYPES",
        PyTuple::new(m.py(), names(sys::CANN_RMA_TYPES))?,
    )?;
    m.add(
        "_WAIT_TYPES",
        PyTuple::new(m.py(), names(sys::CANN_P2P_TYPES))?,
    )?;
    Ok(())
}
