"""The torch classes, the handler and shmem.torch with the heap in GPU memory, over the CUDA
driver's stand-in (tests/cuda): no GPU here. ctest's torch.cuda_standin.np2 runs this file alone
with two stand-in devices (PE r's heap on cuda:r) and CUDA_STANDIN_STRICT=1, so a CPU load or
store of the heap is a crash; elsewhere it skips.

What needs no CUDA kernel is checked: the tensors' device and index, their addresses, shapes,
dtypes and strides, the device checks, and the classes' host-side data movement on GPU memory
(puts, gets, signals, waits, the barrier, the collectives). The tests seed and read the bytes
with the library's own copies (shmem_putmem and shmem_getmem on this PE, through the device's
copies), never with torch, whose ops on a CUDA tensor need a GPU: the torch suites themselves
run on one as ctest's torch.gpu.* (label gpu)."""

import ctypes
import os

import numpy as np
import pytest
import torch

if os.environ.get("SHMEM_DEVICE") != "cuda" or not os.environ.get("SHMEM_CUDA_LIBRARY"):
    pytest.skip("the CUDA stand-in runs only (SHMEM_DEVICE=cuda, SHMEM_CUDA_LIBRARY)",
                allow_module_level=True)

from conftest import one  # noqa: E402
from shmem_torch import TorchSymmetricMemoryHandler as H  # noqa: E402
from shmem_torch import _library  # noqa: E402

# Before the classes wait for torch's current stream, they ask torch how many GPUs it sees: its
# CUDA runtime then finds the stand-in (loaded as libcuda.so.1), takes it for a driver too old
# for it and warns once. That is the answer wanted (no GPU: nothing of torch's to wait for).
pytestmark = pytest.mark.filterwarnings("ignore:CUDA initialization")

# A CUDA tensor made through DLPack (shmem.torch's, and foreign() below) asks torch to start
# CUDA, which finds no GPU here: the start is skipped (only this file runs in this process, and
# nothing here runs a torch op on the device).
torch.cuda._lazy_init = lambda: None

# libshmem.so as libshmem_torch.so loaded it (its run path): then found by its name.
_library.load()
_lib = ctypes.CDLL("libshmem.so.0")
_lib.shmem_putmem.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_lib.shmem_getmem.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_lib.shmem_ptr.argtypes = [ctypes.c_void_p, ctypes.c_int]
_lib.shmem_ptr.restype = ctypes.c_void_p

NUMPY = {torch.float32: np.float32, torch.float64: np.float64, torch.int32: np.int32,
         torch.int64: np.int64, torch.int8: np.int8, torch.uint8: np.uint8}


@pytest.fixture
def manager():
    return _library.manager()


@pytest.fixture
def ops():
    return _library.ops()


def write(t, values, pe=None):
    """PE `pe`'s (this PE's) symmetric `t` := `values`, with the library's copy."""
    a = np.ascontiguousarray(values, dtype=NUMPY[t.dtype]).reshape(-1)
    assert a.size == t.numel()
    me = H.rank()
    _lib.shmem_putmem(t.data_ptr(), a.ctypes.data, a.nbytes, me if pe is None else pe)


def read(t, pe=None):
    """PE `pe`'s (this PE's) symmetric `t`, with the library's copy."""
    a = np.empty(t.numel(), dtype=NUMPY[t.dtype])
    _lib.shmem_getmem(a.ctypes.data, t.data_ptr(), a.nbytes, H.rank() if pe is None else pe)
    return a


def extension():
    """shmem._shmem, the shmem wheel's extension; the test skips where the wheel is not on the
    path (a build without SHMEM_BUILD_PYTHON)."""
    try:
        import shmem._shmem as ext
    except ImportError as e:
        pytest.skip(f"the shmem wheel is not on the path ({e})")
    return ext


def foreign(index, nbytes=64):
    """A cuda:<index> tensor off the heap (made through DLPack: nothing asks the device). Its
    memory is host memory nobody reads; the classes must refuse it before touching it."""
    shmem_c = extension()
    keep = ctypes.create_string_buffer(nbytes)
    capsule = shmem_c.osh_dlpack_capsule(ctypes.addressof(keep), nbytes, 2, index)
    t = torch.utils.dlpack.from_dlpack(capsule).view(torch.int32)
    t._keep = keep
    return t


def test_the_heap_is_on_this_pes_stand_in_gpu(device, rank):
    # Two stand-in devices, one PE each (local rank modulo the count).
    assert device == torch.device("cuda", rank % 2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int8, torch.bfloat16,
                                   torch.complex64, torch.bool])
@pytest.mark.parametrize("shape", [[3, 5], [7], [], [0], [2, 0, 3]])
def test_malloc_gives_a_cuda_tensor_over_the_heap(manager, device, rank, world, shape, dtype):
    t = manager.malloc(shape, dtype)
    assert t.device == device and t.dtype == dtype and list(t.shape) == shape
    assert t.is_contiguous() and not t.requires_grad
    assert manager.on_heap(t)
    # The storage's address (data_ptr() is 0 for a tensor of no elements) is a heap address of
    # this PE's GPU: shmem_ptr maps it to itself here and to each peer's heap as mapped here.
    addr = t.untyped_storage().data_ptr()
    assert addr != 0 and _lib.shmem_ptr(addr, rank) == addr
    assert t.data_ptr() == (addr if t.numel() else 0)
    for pe in range(world):
        peer = manager.peer_tensor(t, pe)
        assert peer.device == device and peer.dtype == dtype and list(peer.shape) == shape
        assert peer.untyped_storage().data_ptr() == _lib.shmem_ptr(addr, pe)
    manager.free(t)


def test_aligned_malloc_on_the_gpu(manager, device):
    t = manager.aligned_malloc([3], torch.float32, 1 << 16)
    assert t.device == device and t.data_ptr() % (1 << 16) == 0
    manager.free(t)


def test_host_tensors_are_refused_naming_call_argument_and_devices(manager, ops, device):
    target = manager.malloc([8], torch.int32)
    local = torch.zeros(8, dtype=torch.int32)
    heap = f"not on {device} where the symmetric heap is"
    with pytest.raises(RuntimeError, match=f"Ops.put_mem: src is on cpu, {heap}"):
        ops.put_mem(target, one(0), local, one(0), one(4), 0)
    with pytest.raises(RuntimeError, match=f"Ops.get_mem: target is on cpu, {heap}"):
        ops.get_mem(local, one(0), target, one(0), one(4), 0)
    with pytest.raises(RuntimeError, match=f"Ops.all_reduce: dest is on cpu, {heap}"):
        ops.all_reduce(local, target, "sum")
    with pytest.raises(RuntimeError, match=f"Manager.free: tensor is on cpu, {heap}"):
        manager.free(local)
    with pytest.raises(RuntimeError, match=f"Manager.peer_tensor: tensor is on cpu, {heap}"):
        manager.peer_tensor(local, 0)
    assert not manager.on_heap(local)
    manager.free(target)


def test_a_tensor_of_another_gpu_is_refused(manager, ops, device):
    other = foreign(device.index + 5)  # first: it may skip, and malloc is collective
    target = manager.malloc([8], torch.int32)
    heap = f"not on {device} where the symmetric heap is"
    with pytest.raises(RuntimeError, match=rf"src is on cuda:{device.index + 5}, {heap}"):
        ops.put_mem(target, one(0), other, one(0), one(4), 0)
    assert not manager.on_heap(other)
    manager.free(target)


def test_put_and_get_move_gpu_memory_between_pes(manager, ops, rank, world):
    n = 16
    target = manager.malloc([2 * n], torch.int32)
    src = manager.malloc([n], torch.int32)
    write(target, np.full(2 * n, -1))
    write(src, np.arange(n) + 100 * rank)
    ops.barrier()
    right, left = (rank + 1) % world, (rank - 1) % world
    ops.put_mem(target, one(n + 2), src, one(4), one(8), right)
    ops.barrier()
    expect = np.full(2 * n, -1)
    expect[n + 2:n + 10] = np.arange(4, 12) + 100 * left
    assert (read(target) == expect).all()
    for pe in range(world):
        ops.get_mem(target, one(1), src, one(2), one(3), pe)
        assert (read(target)[1:4] == np.arange(2, 5) + 100 * pe).all()
    ops.barrier()
    manager.free(src)
    manager.free(target)


def test_signals_and_waits_on_gpu_memory(manager, ops, rank, world):
    data = manager.malloc([world, 4], torch.int64)
    signal = manager.malloc([world + 1], torch.int32)
    src = manager.malloc([4], torch.int64)
    write(data, np.zeros(world * 4))
    write(signal, np.zeros(world + 1))
    write(src, np.full(4, 10 + rank))
    ops.barrier()
    for pe in range(world):
        ops.put_mem_signal(data, one(rank * 4), src, one(0), one(4), signal, one(rank),
                           one(1, torch.int32), 0, pe)
    for pe in range(world):
        ops.signal_wait_until(data, signal, one(pe), one(1, torch.int32), 0)
        assert (read(data).reshape(world, 4)[pe] == 10 + pe).all()
    for pe in range(world):
        ops.signal_op(signal, one(world), one(rank + 1, torch.int32), 1, pe)
    total = world * (world + 1) // 2
    ops.signal_wait_until(signal, signal, one(world), one(total, torch.int32), 0)
    ops.quiet()
    ops.barrier()
    manager.free(src)
    manager.free(signal)
    manager.free(data)


def test_a_timed_out_wait_reads_the_signal_through_the_library(manager, ops):
    # Strict stand-in: reading the GPU word with the CPU would crash, not fail.
    signal = manager.malloc([1], torch.int32)
    write(signal, [3])
    before = ops.get_wait_timeout()
    ops.set_wait_timeout(0.2)
    try:
        with pytest.raises(RuntimeError, match=r"signal\[0\] is 3 after 0.2 s, still not EQ 5"):
            ops.signal_wait_until(signal, signal, one(0), one(5, torch.int32), 0)
    finally:
        ops.set_wait_timeout(before)
    manager.free(signal)


def test_collectives_on_gpu_memory(manager, ops, rank, world):
    t = manager.malloc([5], torch.float32)
    write(t, np.arange(5) + rank)
    ops.all_reduce(t, t, "sum")
    assert (read(t) == sum(np.arange(5) + r for r in range(world))).all()
    src = manager.malloc([3], torch.int64)
    out = manager.malloc([world * 3], torch.int64)
    write(src, np.full(3, rank))
    assert ops.all_gather(out, src)
    assert (read(out) == np.repeat(np.arange(world), 3)).all()
    inp = manager.malloc([world * 2], torch.int64)
    dst = manager.malloc([world * 2], torch.int64)
    write(inp, np.arange(world * 2) + 100 * rank)
    assert ops.all_to_all(dst, inp)
    expect = np.concatenate([np.array([2 * rank, 2 * rank + 1]) + 100 * s for s in range(world)])
    assert (read(dst) == expect).all()
    ops.barrier()
    for x in (dst, inp, out, src, t):
        manager.free(x)


def test_the_handler_makes_and_moves_gpu_tensors(device, rank, world):
    target = H.empty([world * 2], torch.float32)
    signal = H.empty([world], torch.int32)
    src = H.empty(2, torch.float32)
    assert target.device == device and signal.device == device
    write(signal, np.zeros(world))
    write(src, [rank + 0.5, rank + 0.25])
    H.barrier()
    for pe in range(world):
        H.shmem_put_with_signal(target, one(2 * rank), src, one(0), one(2), signal, one(rank),
                                one(1, torch.int32), 0, pe)
    for pe in range(world):
        H.shmem_wait_for_signal(target, signal, one(pe), one(1, torch.int32), 0)
        assert read(target)[2 * pe:2 * pe + 2].tolist() == [pe + 0.5, pe + 0.25]
    H.barrier()
    right = (rank + 1) % world
    H.shmem_get(src, one(0), target, one(2 * right), one(2), right)
    assert read(src).tolist() == [right + 0.5, right + 0.25]
    handle = H.rendezvous(target)
    assert handle.rank == rank and handle.buffer_size == world * 2 * 4
    H.barrier()
    for t in (src, signal, target):
        H.free(t)


def test_shmem_torch_makes_cuda_tensors_over_the_heap(device, rank, world):
    shmem_c = extension()
    import shmem.core as sc
    import shmem.torch as st

    assert shmem_c.osh_heap_device() == (2, device.index)
    for shape, dtype in [((2, 3), torch.float32), ((), torch.int64), ((0,), torch.bfloat16),
                         ((4, 0, 2), torch.bool), ((5,), torch.complex64)]:
        t = st.empty(shape, dtype)
        assert t.device == device and t.dtype == dtype and tuple(t.shape) == shape
        assert t.is_contiguous()
        addr = t.untyped_storage().data_ptr()
        assert t.data_ptr() == (addr if t.numel() else 0) and addr in sc._allocations
        for pe in range(world):
            peer = st.get_peer_tensor(t, pe)
            assert peer.device == device and tuple(peer.shape) == shape
            assert peer.untyped_storage().data_ptr() == shmem_c.shmem_ptr(addr, pe)
        st.free(t)
        assert t.numel() == 0 and t.device == device
    t = st.empty((4,), torch.int32)
    write(t, np.arange(4) + rank)
    sc.barrier_all()
    assert (read(t, (rank + 1) % world) == np.arange(4) + (rank + 1) % world).all()
    with pytest.raises(ValueError, match=f"get_peer_tensor: tensor is on device cpu, not on "
                                         f"{device} where the symmetric heap is"):
        st.get_peer_tensor(torch.zeros(4), 0)
    with pytest.raises(ValueError, match=f"free: tensor is on device cpu, not on {device}"):
        st.free(torch.zeros(4))
    sc.barrier_all()
    st.free(t)
