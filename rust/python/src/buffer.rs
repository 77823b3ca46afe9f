//! `RawBuffer`: a range of symmetric memory seen through Python's buffer protocol (writable
//! bytes, format `B`), so `memoryview`, `numpy.frombuffer` and `bytes` read and write it in
//! place. It does not own the memory: `shmem.core` frees it and drops the views first.

use core::ffi::{c_int, c_void};
use std::ffi::CString;

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;

/// `size` bytes at `addr`, exported through the buffer protocol.
#[pyclass(subclass, module = "shmem._shmem")]
pub struct RawBuffer {
    addr: usize,
    size: usize,
    format: CString,
}

#[pymethods]
impl RawBuffer {
    /// A view of `size` bytes at `addr` (symmetric memory this package allocated).
    #[new]
    fn new(addr: usize, size: usize) -> Self {
        Self {
            addr,
            size,
            format: CString::from(c"B"),
        }
    }
    /// The first byte's address.
    #[getter]
    fn addr(&self) -> usize {
        self.addr
    }
    /// Its length in bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.size
    }
    fn __len__(&self) -> usize {
        self.size
    }

    /// The buffer protocol: one writable, contiguous dimension of unsigned bytes.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("RawBuffer: no view to fill"));
        }
        let me = slf.borrow();
        if me.addr == 0 {
            return Err(PyBufferError::new_err("RawBuffer: the memory was freed"));
        }
        // SAFETY: `view` is the interpreter's struct to fill; the owner reference keeps the
        // object (and its format string) alive until the view is released.
        unsafe {
            (*view).obj = slf.clone().into_any().into_ptr();
            (*view).buf = me.addr as *mut c_void;
            (*view).len = me.size as isize;
            (*view).readonly = 0;
            (*view).itemsize = 1;
            (*view).format = if flags & ffi::PyBUF_FORMAT != 0 {
                me.format.as_ptr().cast_mut()
            } else {
                core::ptr::null_mut()
            };
            (*view).ndim = 1;
            (*view).shape = if flags & ffi::PyBUF_ND != 0 {
                &mut (*view).len
            } else {
                core::ptr::null_mut()
            };
            (*view).strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES {
                &mut (*view).itemsize
            } else {
                core::ptr::null_mut()
            };
            (*view).suboffsets = core::ptr::null_mut();
            (*view).internal = core::ptr::null_mut();
        }
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}

    /// Forgets the memory (after it is freed): new views are refused.
    fn _detach(&mut self) {
        self.addr = 0;
    }
}

/// Adds `RawBuffer` to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RawBuffer>()
}
