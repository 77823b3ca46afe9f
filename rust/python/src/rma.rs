//! `shmem.core.put` and `shmem.core.get`: RMA between any two C-contiguous buffer objects
//! (NumPy arrays, `shmem.core.Buffer`, `bytearray`...), one of them symmetric. They live here,
//! not in Python, because a call from Python should cost little more than the C call: the
//! buffer protocol gives the addresses and sizes without building Python objects, and
//! `shmem_addr_accessible` checks the symmetric side in the library's own tables.
//!
//! A transfer copies bytes, so two buffers that declare different element types (a float32
//! array into an int64 one) are refused rather than reinterpreted; raw bytes (`Buffer`,
//! `bytearray`, `bytes`, uint8 arrays: format `B`) go with any type.

use core::ffi::{c_int, c_void, CStr};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use shmem_sys as sys;

use crate::{maybe_released, pe_arg, SendPtr};

/// A buffer view, released when dropped.
struct View(ffi::Py_buffer);

impl View {
    fn of(call: &str, name: &str, obj: &Bound<'_, PyAny>, writable: bool) -> PyResult<Self> {
        let mut flags = ffi::PyBUF_C_CONTIGUOUS | ffi::PyBUF_FORMAT;
        if writable {
            flags |= ffi::PyBUF_WRITABLE;
        }
        let mut raw = core::mem::MaybeUninit::<ffi::Py_buffer>::zeroed();
        // SAFETY: `raw` is a writable Py_buffer; on success it is filled and must be released.
        let rc = unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), raw.as_mut_ptr(), flags) };
        if rc != 0 {
            let py = obj.py();
            let err = PyErr::take(py);
            // Not a buffer at all: TypeError; a buffer of the wrong layout: ValueError.
            let type_error = err
                .as_ref()
                .is_none_or(|e| e.is_instance_of::<PyTypeError>(py));
            let err = err.map(|e| e.to_string()).unwrap_or_default();
            let kind = obj
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default();
            let what = format!(
                "{call}: {name} (a {kind}) is not a C-contiguous{} buffer: {err}",
                if writable { ", writable" } else { "" }
            );
            return Err(if type_error {
                PyTypeError::new_err(what)
            } else {
                PyValueError::new_err(what)
            });
        }
        // SAFETY: filled by the successful call above.
        Ok(View(unsafe { raw.assume_init() }))
    }
    fn addr(&self) -> *mut c_void {
        self.0.buf
    }
    fn len(&self) -> usize {
        self.0.len as usize
    }
    /// The element type the buffer declares (its struct-module format and item size).
    fn element(&self) -> Element<'_> {
        if self.0.format.is_null() {
            return Element::Bytes;
        }
        // SAFETY: a non-null format is a NUL-terminated string the exporter keeps alive while
        // the view is held.
        let format = unsafe { CStr::from_ptr(self.0.format) }.to_bytes();
        let native_big = cfg!(target_endian = "big");
        let (big, code) = match format {
            [b'>' | b'!', rest @ ..] => (true, rest),
            [b'<', rest @ ..] => (false, rest),
            [b'@' | b'=', rest @ ..] => (native_big, rest),
            _ => (native_big, format),
        };
        let kind = match code {
            b"B" | b"c" => return Element::Bytes,
            [c] if b"bhilqn".contains(c) => b'i',
            [c] if b"BHILQN".contains(c) => b'u',
            [c] if b"efdg".contains(c) => b'f',
            b"?" => b'?',
            [b'Z', c] if b"efdg".contains(c) => b'c',
            _ => return Element::Other(format),
        };
        let size = usize::try_from(self.0.itemsize).unwrap_or(0);
        // One byte has no order: `<b` and `b` are the same type.
        let big = big != native_big && size > 1;
        Element::Typed { kind, size, big }
    }
}

/// What a buffer's elements are, as far as a copy between two buffers cares: C's names for
/// one type (`l` and `q` for int64) compare equal.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Element<'a> {
    /// Raw bytes: no format, `B` or `c`.
    Bytes,
    /// A number or bool: `kind` `i`, `u`, `f`, `c` (complex) or `?`, `size` bytes, `big` when
    /// its byte order is not this machine's.
    Typed { kind: u8, size: usize, big: bool },
    /// Any other format (structures, arrays of items), compared as written.
    Other(&'a [u8]),
}

impl Element<'_> {
    /// NumPy's name of the type, for messages.
    fn name(&self) -> String {
        match *self {
            Element::Bytes => "bytes".into(),
            Element::Typed { kind, size, big } => {
                let name = match kind {
                    b'i' => format!("int{}", size * 8),
                    b'u' => format!("uint{}", size * 8),
                    b'f' => format!("float{}", size * 8),
                    b'c' => format!("complex{}", size * 8),
                    _ => "bool".into(),
                };
                if big {
                    format!("{name} (non-native byte order)")
                } else {
                    name
                }
            }
            Element::Other(format) => format!("format {:?}", String::from_utf8_lossy(format)),
        }
    }
}

/// Both buffers must hold the same element type, unless one is raw bytes.
fn check_same_type(call: &str, d: &View, s: &View) -> PyResult<()> {
    let (de, se) = (d.element(), s.element());
    if de == se || de == Element::Bytes || se == Element::Bytes {
        return Ok(());
    }
    Err(PyTypeError::new_err(format!(
        "{call}: dst holds {} and src {}: {call} copies bytes, so both must hold the same type \
         (view one as the other's dtype, or as uint8, to copy the bytes as they are)",
        de.name(),
        se.name()
    )))
}

impl Drop for View {
    fn drop(&mut self) {
        // SAFETY: the view was filled by PyObject_GetBuffer and is released once; the GIL is
        // held wherever a View lives.
        unsafe { ffi::PyBuffer_Release(&mut self.0) }
    }
}

/// The range must lie in symmetric memory that `pe` can reach.
fn check_symmetric(call: &str, name: &str, v: &View, pe: c_int) -> PyResult<()> {
    let (a, n) = (v.addr(), v.len());
    // SAFETY: the library only looks the addresses up in its tables.
    let ok = unsafe {
        sys::shmem_addr_accessible(a, pe) == 1
            && (n <= 1 || sys::shmem_addr_accessible(a.cast::<u8>().add(n - 1).cast(), pe) == 1)
    };
    if !ok {
        return Err(PyValueError::new_err(format!(
            "{call}: {name} at {:#x} ({n} bytes) is not symmetric: make it with shmem.core.array or shmem.core.buffer",
            a as usize
        )));
    }
    Ok(())
}

fn pe_of(call: &str, pe: &Bound<'_, PyAny>) -> PyResult<c_int> {
    if pe.is_instance_of::<pyo3::types::PyBool>() || pe.is_instance_of::<pyo3::types::PyFloat>() {
        return Err(PyTypeError::new_err(format!(
            "{call}: pe={} is not an int",
            pe.repr()?
        )));
    }
    let v: i64 = pe.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "{call}: pe={} is not an int",
            pe.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })?;
    pe_arg(call, "pe", v).map_err(|_| {
        // SAFETY: shmem_n_pes only reads the library's state.
        let n = unsafe { sys::shmem_n_pes() };
        PyValueError::new_err(format!(
            "{call}: pe={v} is not a PE of the job (0 to {})",
            n - 1
        ))
    })
}

/// Which way a transfer copies: to the symmetric `dst` on `pe` (put) or from the symmetric `src`
/// on `pe` (get).
#[derive(Clone, Copy, PartialEq)]
enum Way {
    Put,
    Get,
}

/// put and get: checks both buffers (the local one must hold no more bytes than the symmetric
/// one; for a get the local one is written), then copies the local buffer's length.
fn transfer(
    py: Python<'_>,
    way: Way,
    dst: &Bound<'_, PyAny>,
    src: &Bound<'_, PyAny>,
    pe: &Bound<'_, PyAny>,
    nbi: bool,
) -> PyResult<()> {
    let call = if way == Way::Put { "put" } else { "get" };
    let pe = pe_of(call, pe)?;
    let d = View::of(call, "dst", dst, way == Way::Get)?;
    let s = View::of(call, "src", src, false)?;
    check_same_type(call, &d, &s)?;
    let (local, local_name, remote, remote_name) = match way {
        Way::Put => (&s, "src", &d, "dst"),
        Way::Get => (&d, "dst", &s, "src"),
    };
    if local.len() > remote.len() {
        return Err(PyValueError::new_err(format!(
            "{call}: {local_name} has {} bytes, more than {remote_name}'s {}",
            local.len(),
            remote.len()
        )));
    }
    check_symmetric(call, remote_name, remote, pe)?;
    let (dp, sp, n) = (SendPtr(d.addr()), SendPtr(s.addr()), local.len());
    maybe_released(py, n, move || {
        let (dp, sp) = (dp, sp);
        // SAFETY: the remote buffer is symmetric (checked); the local one is a live buffer of
        // at least n bytes held by its view (writable for a get).
        unsafe {
            match (way, nbi) {
                (Way::Put, false) => sys::shmem_putmem(dp.0, sp.0, n, pe),
                (Way::Put, true) => sys::shmem_putmem_nbi(dp.0, sp.0, n, pe),
                (Way::Get, false) => sys::shmem_getmem(dp.0, sp.0, n, pe),
                (Way::Get, true) => sys::shmem_getmem_nbi(dp.0, sp.0, n, pe),
            }
        }
    });
    Ok(())
}

/// put(dst, src, pe, *, nbi=False)
/// --
///
/// Copies local `src` (any C-contiguous buffer: a NumPy array, a Buffer) into the symmetric
/// `dst` on PE `pe`: `src`'s bytes, at most `dst`'s. Both hold the same element type, unless
/// one is raw bytes (TypeError naming both otherwise). Complete on return; with `nbi=True`
/// after `quiet()`.
#[pyfunction]
#[pyo3(signature = (dst, src, pe, *, nbi = false))]
pub(crate) fn put(
    py: Python<'_>,
    dst: &Bound<'_, PyAny>,
    src: &Bound<'_, PyAny>,
    pe: &Bound<'_, PyAny>,
    nbi: bool,
) -> PyResult<()> {
    transfer(py, Way::Put, dst, src, pe, nbi)
}

/// get(dst, src, pe, *, nbi=False)
/// --
///
/// Copies the symmetric `src` of PE `pe` into local `dst` (a writable C-contiguous buffer):
/// `dst`'s bytes, at most `src`'s. Both hold the same element type, unless one is raw bytes
/// (TypeError naming both otherwise). Complete on return; with `nbi=True` after `quiet()`.
#[pyfunction]
#[pyo3(signature = (dst, src, pe, *, nbi = false))]
pub(crate) fn get(
    py: Python<'_>,
    dst: &Bound<'_, PyAny>,
    src: &Bound<'_, PyAny>,
    pe: &Bound<'_, PyAny>,
    nbi: bool,
) -> PyResult<()> {
    transfer(py, Way::Get, dst, src, pe, nbi)
}

/// Adds `put` and `get` (as `core_put`, `core_get`; shmem.core names them).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("core_put", wrap_pyfunction!(put, m)?)?;
    m.add("core_get", wrap_pyfunction!(get, m)?)?;
    Ok(())
}
