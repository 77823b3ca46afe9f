"""shmem.torch: PyTorch tensors whose storage is on the symmetric heap.

::

    import torch
    import shmem.core as sc
    import shmem.torch as st

    with sc.init():
        me, n = sc.my_pe(), sc.n_pes()
        t = st.empty((2, 3), dtype=torch.float32)   # collective, like shmem_malloc
        t.fill_(me)
        sc.barrier_all()
        right = st.get_peer_tensor(t, (me + 1) % n)  # PE me+1's t, loads and stores go there
        assert torch.equal(right, torch.full((2, 3), float((me + 1) % n)))
        sc.barrier_all()
        st.free(t)                                   # collective

This module owns the tensor view of ``shmem.core``'s allocations and nothing else: the memory
is a ``shmem.core.Buffer`` (allocated, tracked and freed by ``shmem.core``), and the tensor's
storage is that memory, not a copy. The storage holds a reference to the buffer, and
``shmem.core`` keeps every allocation until ``free`` or ``finalize``: dropping the tensor does
not free it (freeing is collective, so it never happens behind the program's back). A tensor
and its views must not be used after ``free`` or ``finalize``.

The tensors are on the device that holds the heap: CPU tensors in host memory (the host
device), ``cuda:<index>`` tensors when the heap is an NVIDIA GPU's memory (``SHMEM_DEVICE=cuda``;
the index is the GPU the library opened for this PE). A GPU tensor is made through DLPack over
the heap's device address (no copy, no allocation by torch); ``get_peer_tensor`` gives the
peer's memory as this PE's GPU maps it, for torch's kernels to load and store.

On the CPU, ``shmem.core``'s routines take buffer objects, and ``tensor.numpy()`` is a NumPy
array over the same memory (no copy), so ``sc.put(t.numpy(), src, pe)`` or
``sc.reduce(sc.TEAM_WORLD, t.numpy(), t.numpy())`` work on these tensors (for the dtypes NumPy
has; bfloat16 and float8 have none). On a GPU, torch's kernels run on torch's streams and
``shmem.core``'s calls on the host: complete the kernels (``torch.cuda.synchronize()``) before a
barrier that publishes what they wrote, as with any host-side synchronisation.

PyTorch is imported when this module is, never by ``import shmem``. Bad arguments raise
``ValueError`` or ``TypeError`` naming the call, the argument and its value.
"""

from __future__ import annotations

from typing import Any, Sequence, Tuple, Union

try:
    import torch
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(f"shmem.torch needs PyTorch ({e}): pip install torch") from e

from . import core as _core
from .core import _c

__all__ = ["empty", "zeros", "empty_like", "get_peer_tensor", "free"]

# shmemx_heap_device's kinds (<shmemx.h>) and DLPack's kDLCUDA.
_HEAP_HOST, _HEAP_CUDA = 0, 2
_DLPACK_CUDA = 2

_INTEGERS = frozenset(
    getattr(torch, name) for name in
    ("uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64")
    if hasattr(torch, name))


def _dtype(call: str, dtype: Any) -> "torch.dtype":
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"{call}: dtype={dtype!r} is not a torch.dtype")
    # Quantized and bit-packed dtypes have no plain memory layout for a tensor over raw bytes.
    if not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool
            or dtype in _INTEGERS):
        raise TypeError(f"{call}: dtype={dtype} cannot be a tensor over symmetric memory "
                        "(quantized and bit-packed dtypes are not supported)")
    return dtype


def _shape(call: str, shape: Any) -> Tuple[int, ...]:
    dims = (shape,) if isinstance(shape, int) and not isinstance(shape, bool) else shape
    try:
        dims = tuple(dims)
    except TypeError:
        raise TypeError(f"{call}: shape={shape!r} is not an int or a sequence of ints") from None
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int):
            raise TypeError(f"{call}: shape={shape!r} has {d!r}, which is not an int")
        if d < 0:
            raise ValueError(f"{call}: shape={shape!r} has a negative extent {d}")
    return dims


def _device(call: str) -> "torch.device":
    """The device of the heap's tensors: the CPU, or ``cuda:<index>`` for a GPU's memory."""
    where = _c.osh_heap_device()
    if where is None:
        raise _core.NotInitializedError(f"{call}: the library is not running "
                                        "(call shmem.core.init first)")
    kind, index = where
    if kind == _HEAP_HOST:
        return torch.device("cpu")
    if kind == _HEAP_CUDA:
        if not torch.backends.cuda.is_built():
            raise _core.ShmemError(f"{call}: the symmetric heap is GPU memory but this torch "
                                   f"{torch.__version__} has no CUDA: install a CUDA build")
        return torch.device("cuda", index)
    raise _core.ShmemError(f"{call}: the symmetric heap is on Ascend NPU {index} "
                           "(SHMEM_DEVICE=npu); shmem.torch makes CPU and CUDA tensors only")


def _contiguous_strides(dims: Tuple[int, ...]) -> Tuple[int, ...]:
    strides, step = [], 1
    for d in reversed(dims):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


def _over(addr: int, nbytes: int, dtype: "torch.dtype", device: "torch.device") -> "torch.Tensor":
    """A one-dimensional tensor of ``dtype`` over the ``nbytes`` bytes of GPU memory at
    ``addr`` (whole elements), through DLPack: torch takes the device as named. The memory is
    not owned; shapes are given with ``as_strided``, which asks nothing of the device."""
    flat = torch.utils.dlpack.from_dlpack(_c.osh_dlpack_capsule(addr, nbytes, _DLPACK_CUDA,
                                                            device.index))
    return flat.view(dtype)


def _empty(call: str, shape: Any, dtype: Any) -> "torch.Tensor":
    _core._require_init(call)
    dims, dt = _shape(call, shape), _dtype(call, dtype)
    device = _device(call)
    count = 1
    for d in dims:
        count *= d
    # At least one element, so a tensor of no elements still has a storage to view.
    buf = _core.buffer(max(count, 1) * dt.itemsize)
    if device.type == "cpu":
        return torch.frombuffer(buf, dtype=dt, count=max(count, 1))[:count].view(dims)
    return _over(buf.addr, max(count, 1) * dt.itemsize, dt, device).as_strided(
        dims, _contiguous_strides(dims), 0)


def empty(shape: Union[int, Sequence[int]], dtype: "torch.dtype" = torch.float32) -> "torch.Tensor":
    """A contiguous tensor of ``shape`` and ``dtype`` whose storage is symmetric memory, on the
    heap's device (the CPU, or ``cuda:<index>``; collective: every PE calls it in the same
    order with the same shape and dtype). Its contents are undefined until written. Raises
    ``shmem.core.AllocationError`` when the heap has no room,
    ``shmem.core.NotInitializedError`` before ``shmem.core.init``."""
    return _empty("empty", shape, dtype)


def zeros(shape: Union[int, Sequence[int]], dtype: "torch.dtype" = torch.float32) -> "torch.Tensor":
    """``empty(shape, dtype)`` filled with zeros (collective). Each PE zeroes its own copy
    after the allocation, complete on return (on a GPU, torch's current stream is synchronized):
    a barrier before other PEs write into it."""
    t = _empty("zeros", shape, dtype).zero_()
    if t.device.type == "cuda":
        torch.cuda.current_stream(t.device).synchronize()
    return t


def empty_like(tensor: "torch.Tensor") -> "torch.Tensor":
    """``empty(tensor.shape, tensor.dtype)`` (collective); ``tensor`` may be any tensor, on any
    device."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"empty_like: tensor is a {type(tensor).__name__}, not a torch.Tensor")
    return _empty("empty_like", tuple(tensor.shape), tensor.dtype)


def _tensor(call: str, tensor: Any) -> "torch.device":
    """Checks that ``tensor`` is a tensor on the heap's device; returns that device."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{call}: tensor is a {type(tensor).__name__}, not a torch.Tensor")
    device = _device(call)
    if tensor.device != device:
        where = "host memory" if device.type == "cpu" else "GPU memory, SHMEM_DEVICE=cuda"
        raise ValueError(f"{call}: tensor is on device {tensor.device}, not on {device} where "
                         f"the symmetric heap is ({where})")
    return device


def _allocation(call: str, tensor: "torch.Tensor") -> Tuple[int, int]:
    """(address, bytes) of ``tensor``'s storage, checked to lie in one live allocation."""
    storage = tensor.untyped_storage()
    addr, nbytes = storage.data_ptr(), storage.nbytes()
    for base, buf in _core._allocations.items():
        if base <= addr and addr + nbytes <= base + max(buf.nbytes, 1):
            return addr, nbytes
    raise ValueError(f"{call}: tensor (storage at {addr:#x}, {nbytes} bytes) is not on the "
                     "symmetric heap: make it with shmem.torch.empty (or it was freed)")


def get_peer_tensor(tensor: "torch.Tensor", pe: int) -> "torch.Tensor":
    """PE ``pe``'s copy of the symmetric ``tensor``: a tensor of the same shape, strides and
    dtype whose loads and stores go to PE ``pe``'s memory directly (no copy): the CPU's on the
    host device, torch's kernels on this PE's GPU on a GPU heap. Not collective.
    ``tensor`` may be a view of a tensor of ``empty``. Raises ``shmem.core.ShmemError`` when
    this PE does not map PE ``pe``'s memory (``shmem_ptr`` gives no address)."""
    call = "get_peer_tensor"
    _core._require_init(call)
    device = _tensor(call, tensor)
    addr, nbytes = _allocation(call, tensor)
    pe = _core._pe(call, pe)
    peer = _c.shmem_ptr(addr, pe)
    if peer is None:
        raise _core.ShmemError(f"{call}: PE {pe}'s memory is not mapped by PE {_c.get_my_pe()} "
                               "(shmem_ptr gives no address): use shmem.core.put/get")
    dt = tensor.dtype
    if device.type == "cuda":
        # The peer's memory as this PE's GPU maps it: for this PE's kernels.
        flat = _over(peer, max(nbytes, dt.itemsize), dt, device)
        return flat.as_strided(tensor.shape, tensor.stride(), tensor.storage_offset())
    # The storage holds whole elements (it was made with this dtype or a view of one).
    flat = torch.frombuffer(_core.Buffer(peer, nbytes), dtype=dt,
                            count=max(nbytes // dt.itemsize, 1))
    return flat.as_strided(tensor.shape, tensor.stride(), tensor.storage_offset())


def free(tensor: "torch.Tensor") -> None:
    """Frees the symmetric memory of a tensor of ``empty`` (collective: every PE frees the same
    tensors in the same order). ``tensor`` itself becomes an empty tensor; other views of the
    memory (slices, peer tensors, ``.numpy()`` arrays) must not be used afterwards."""
    call = "free"
    _core._require_init(call)
    device = _tensor(call, tensor)
    addr = tensor.untyped_storage().data_ptr()
    buf = _core._allocations.get(addr)
    if buf is None:
        raise ValueError(f"free: tensor (storage at {addr:#x}) is not a tensor of "
                         "shmem.torch.empty (or was freed already)")
    if device.type == "cuda" and torch.cuda.is_initialized():
        # No kernel queued on torch's current stream may still use the memory (without CUDA
        # initialized, torch has queued none).
        torch.cuda.current_stream(device).synchronize()
    _core.free(buf)
    with torch.no_grad():
        if device.type == "cpu":
            tensor.set_()
        else:  # an empty storage of the device, made without asking the device for one
            tensor.set_(_over(0, 0, torch.uint8, device).untyped_storage(), 0, (0,))
