//! `osh_dlpack_capsule`: a range of symmetric memory handed to a framework (torch) as a DLPack
//! capsule, the way a Python framework takes a pointer into a GPU's memory without copying it
//! (the buffer protocol only describes host memory). `shmem.torch` makes its CUDA tensors
//! with it when the heap is on a GPU.
//!
//! It owns the capsule's descriptor (the `DLManagedTensor`, freed by its deleter or by the
//! capsule when no framework took it), never the memory: `shmem.core` frees that.

use core::ffi::{c_char, c_void};

use pyo3::ffi;
use pyo3::prelude::*;

use crate::bad;

/// The capsule's name while no framework has taken it (DLPack's protocol).
const NAME: &[u8] = b"dltensor\0";

/// DLPack's `kDLCPU` and `kDLCUDA`, the devices a capsule may name here.
const DEVICE_CPU: i32 = 1;
const DEVICE_CUDA: i32 = 2;

/// `DLDevice`.
#[repr(C)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

/// `DLDataType`.
#[repr(C)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

/// `DLTensor`.
#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

/// `DLManagedTensor` (DLPack before 1.0, the form `torch.utils.dlpack.from_dlpack` takes from
/// a capsule named "dltensor").
#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

/// The descriptor with the one extent its `shape` points at; the managed tensor comes first,
/// so a pointer to it is a pointer to the whole.
#[repr(C)]
struct Managed {
    tensor: DlManagedTensor,
    shape: [i64; 1],
}

/// The deleter the framework calls when its tensor dies: frees the descriptor (no Python, so
/// it may run on any thread, with or without the GIL).
unsafe extern "C" fn delete(tensor: *mut DlManagedTensor) {
    if !tensor.is_null() {
        // SAFETY: every descriptor is a `Managed` leaked from a Box by `dlpack_capsule`, whose
        // first field is the managed tensor; DLPack calls the deleter once.
        drop(unsafe { Box::from_raw(tensor.cast::<Managed>()) });
    }
}

/// The capsule's destructor: a capsule no framework took (still named "dltensor") frees its
/// descriptor; one taken was renamed, and the framework's deleter frees it.
unsafe extern "C" fn destroy_capsule(capsule: *mut ffi::PyObject) {
    let name = NAME.as_ptr().cast::<c_char>();
    // SAFETY: Python calls this with the dying capsule; PyCapsule_IsValid sets no exception.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, name) == 1 {
            delete(ffi::PyCapsule_GetPointer(capsule, name).cast::<DlManagedTensor>());
        }
    }
}

/// A DLPack capsule of the `nbytes` bytes at `addr` as a one-dimensional uint8 tensor on
/// device `device_type` (DLPack's numbering: 1 the CPU, 2 a CUDA GPU) number `device_id`. The
/// memory is not owned: it must outlive every tensor made from the capsule.
#[pyfunction]
pub fn osh_dlpack_capsule(
    py: Python<'_>,
    addr: usize,
    nbytes: usize,
    device_type: i32,
    device_id: i32,
) -> PyResult<PyObject> {
    const CALL: &str = "osh_dlpack_capsule";
    if device_type != DEVICE_CPU && device_type != DEVICE_CUDA {
        return Err(bad(
            CALL,
            format!("device_type={device_type} is not 1 (CPU) or 2 (CUDA)"),
        ));
    }
    if device_id < 0 {
        return Err(bad(CALL, format!("device_id={device_id} is negative")));
    }
    let extent = i64::try_from(nbytes).map_err(|_| {
        bad(
            CALL,
            format!("nbytes={nbytes} does not fit an int64 extent"),
        )
    })?;
    let managed = Box::into_raw(Box::new(Managed {
        tensor: DlManagedTensor {
            dl_tensor: DlTensor {
                data: addr as *mut c_void,
                device: DlDevice {
                    device_type,
                    device_id,
                },
                ndim: 1,
                dtype: DlDataType {
                    code: 1, // kDLUInt
                    bits: 8,
                    lanes: 1,
                },
                shape: core::ptr::null_mut(),
                strides: core::ptr::null_mut(), // compact, row-major
                byte_offset: 0,
            },
            manager_ctx: core::ptr::null_mut(),
            deleter: Some(delete),
        },
        shape: [extent],
    }));
    // SAFETY: `managed` was just leaked from a Box and is not shared yet; its shape lives as
    // long as it does.
    unsafe {
        (*managed).tensor.dl_tensor.shape = (*managed).shape.as_mut_ptr();
    }
    // SAFETY: the name is a static C string; on failure the descriptor is still ours to free.
    let capsule = unsafe {
        ffi::PyCapsule_New(
            managed.cast::<c_void>(),
            NAME.as_ptr().cast::<c_char>(),
            Some(destroy_capsule),
        )
    };
    if capsule.is_null() {
        // SAFETY: the capsule was not made, so nothing else holds the descriptor.
        unsafe { delete(managed.cast::<DlManagedTensor>()) };
        return Err(PyErr::fetch(py));
    }
    // SAFETY: PyCapsule_New returned a new reference.
    Ok(unsafe { PyObject::from_owned_ptr(py, capsule) })
}
